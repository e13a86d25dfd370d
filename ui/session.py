"""The session's shared sentence set, model and presenter mode: how a session starts, and what pages read.

Every page works on the same current set. A session starts from its link (ui.link: a preset, the learner's own
sentences packed into the link, a model, its weights, presenter mode) or from the default preset; the sidebar
(ui.sidebar) changes them; pages read them here (:func:`sentence_set`, :func:`model_name`, :func:`presenter`),
cut to the server's word-piece budget. After every run :func:`finish_run` writes them into the URL together
with the page's own parameters, so the address bar always reopens the same view.
"""

from __future__ import annotations

import streamlit as st

from lib.errors import ContextLensError
from lib.inputs.presets import default_preset, is_data_preset, preset_by_id
from lib.inputs.sentences import (
    MAX_TEXT_CHARS,
    SentenceSet,
    clean_sentences,
    pack_text,
    parse_sentence_set,
    text_from_link,
)
from lib.models.encoder import (
    DEFAULT_MODEL,
    MAX_SEED,
    WEIGHTS,
    ModelLoadError,
    model_label,
    split_model_key,
)
from lib.serving import budget
from ui import cache, link, work

K_PRESET, K_TARGET, K_TEXT, K_MODEL, K_PRESENTER = "cl_preset", "cl_target", "cl_text", "cl_model", "cl_presenter"
K_ACTIVE_MODEL = "cl_model_active"  # the model key in use (lib.models.encoder.model_key: id + "#random-<seed>")
K_WEIGHTS, K_SEED = "cl_weights", "cl_seed"  # the Model panel's weights choice and initialiser seed
K_RECIPE = "cl_finetuned"  # the recipe key of the fine-tuned model in use on every page ("" = none)
MAX_SEED_UI = MAX_SEED  # one bound for the seed box, the link's seed and a model key's #random-<seed>
CUSTOM = "custom"
MAX_PACKED_IN_URL = 6_000  # a set whose packed text is longer is not put in the URL (too long to share)
SHARED_KEYS = ("preset", "target", "text", "model", "weights", "seed", "finetuned", "presenter", "toolong")
K_OWN = "_cl_own"  # (text, target) of the learner's own set, kept when a preset replaces it
K_INITIALISED = "_cl_initialised"  # the link's shared keys have been read (once per session)
K_MODELS_PER_SET = "_cl_models_per_set"  # models this run sends the set through (models_per_set)
K_TEXT_CUT = "_cl_text_cut"  # (text kept, message) when a set was cut to the sentence box's size
K_ORIGIN = "_cl_origin"  # (text, where it came from) of the last set_sentences


# --------------------------------------------------------------------------- session start
def init_session() -> None:
    """Fill the shared widgets' state from the link on a session's first run."""
    link.shell_guard()
    if st.session_state.get(K_INITIALISED):
        return
    url = link.opened_with()
    preset = default_preset()
    target, text, preset_id = preset.target, preset.text, preset.id
    raw_text = link.value("text") if "text" in url else None
    if raw_text is not None:
        try:
            text = text_from_link(raw_text)
            target = (link.value("target") or "")[:100]
            preset_id = CUSTOM
        except ContextLensError as err:  # a garbled or cut-off link
            link.note(f"{err} The “{preset.target}” preset is shown instead.")
            target, text, preset_id = preset.target, preset.text, preset.id
    elif "toolong" in url:
        link.note(
            "Whoever shared this link had their own set of sentences, too long to travel in a link, so it "
            f"could not come along; the “{preset.target}” preset is shown instead. Ask them for the sentences "
            "as a file (upload it on the Layer by layer page) or paste them into the sidebar."
        )
    elif "preset" in url:
        found = preset_by_id(url["preset"][:50])
        if found is None and is_data_preset(url["preset"]):
            link.note(
                "The link's sentences are real ones from CoarseWSD-20, which is not on this server; the “bank” "
                "preset is shown instead."
            )
        elif found is None:
            link.note("The link names a preset that does not exist; the “bank” preset is shown instead.")
        else:
            target, text, preset_id = found.target, found.text, found.id
    st.session_state[K_PRESET] = preset_id
    st.session_state[K_TARGET] = target
    st.session_state[K_TEXT] = text
    model = (link.value("model") or DEFAULT_MODEL).strip()[:200]
    st.session_state[K_MODEL] = model
    st.session_state[K_ACTIVE_MODEL] = DEFAULT_MODEL
    st.session_state[K_WEIGHTS] = "trained"  # the link's key is "weights", the widget's "cl_weights"
    if "weights" in url:
        raw = link.value("weights")
        if raw in WEIGHTS:
            st.session_state[K_WEIGHTS] = raw
        else:
            link.note(
                "The link's “weights” value should be “trained”, “shuffled” or “random”; the trained weights are used."
            )
    seed = 0
    raw_seed = link.value("seed")
    if raw_seed is not None:
        try:
            seed = int(raw_seed)
            if not 0 <= seed <= MAX_SEED_UI:
                raise ValueError
        except ValueError:
            seed = 0
            link.note(f"The link's “seed” value should be a whole number from 0 to {MAX_SEED_UI}; 0 is used.")
    st.session_state[K_SEED] = seed
    st.session_state[K_RECIPE] = ""
    raw_recipe = link.value("finetuned")
    if raw_recipe is not None:
        from lib.finetune.data import FineTuneError
        from lib.finetune.recipe import Recipe

        try:
            st.session_state[K_RECIPE] = Recipe.from_key(raw_recipe[:200]).key
        except FineTuneError:
            link.note("The link's fine-tuned model is not one this app made; the pretrained model is used.")
    st.session_state[K_PRESENTER] = link.url_bool("presenter", False)
    st.session_state[K_INITIALISED] = True


# --------------------------------------------------------------------------- a run
def begin_run() -> None:
    """Called by app.py at the start of every run."""
    link.begin_run()
    st.session_state[K_MODELS_PER_SET] = 1


def models_per_set(n: int) -> None:
    """This run sends the sentence set through ``n`` models (a page comparing two: 2). Call it before the page
    reads its set: each model then reads 1/n of the word-piece budget, so a comparison holds what one set
    alone holds, and the run's lease (ui.work) covers every model's vectors at once."""
    n = max(1, int(n))
    st.session_state[K_MODELS_PER_SET] = n
    work.models_per_set(n)


def view_params() -> dict[str, str]:
    """The query parameters that reopen the current view: the shared set and model, and this page's parameters."""
    desired = dict(shared_params())
    desired.update(link.page_params())
    return desired


def finish_run() -> None:
    """Called by app.py at the end of every run (also after st.stop): write the URL once."""
    link.write(view_params())


def packed_text() -> str | None:
    """The current text packed for the URL, or None when it is too long for a link (memoised per text)."""
    text = st.session_state.get(K_TEXT, "")
    memo = st.session_state.get("_cl_packed")
    if memo is None or memo[0] != text:
        packed = pack_text(text)
        memo = (text, packed if len(packed) <= MAX_PACKED_IN_URL else None)
        st.session_state["_cl_packed"] = memo
    return memo[1]


def shared_params() -> dict[str, str]:
    """The link's shared keys for the current set, model and presenter mode (defaults left out)."""
    out: dict[str, str] = {}
    preset = st.session_state.get(K_PRESET, default_preset().id)
    if preset != CUSTOM:
        out["preset"] = preset
    else:
        out["target"] = st.session_state.get(K_TARGET, "")
        packed = packed_text()
        if packed is not None:
            out["text"] = packed
        else:
            out["toolong"] = "1"  # tells whoever opens the link that the set could not come along
    try:
        model, weights, seed = split_model_key(st.session_state.get(K_ACTIVE_MODEL, DEFAULT_MODEL))
    except ModelLoadError:
        model, weights, seed = DEFAULT_MODEL, "trained", 0
    if model != DEFAULT_MODEL:
        out["model"] = model
    if weights == "finetuned":  # the recipe, not the weights: the set and the recipe make them again
        out["finetuned"] = str(seed)
    elif weights == "trained" and st.session_state.get(K_RECIPE):  # waiting for the click that trains it
        out["finetuned"] = st.session_state[K_RECIPE]
    elif weights != "trained":
        out["weights"] = weights
        out["seed"] = str(seed)
    if st.session_state.get(K_PRESENTER):
        out["presenter"] = "1"
    return out


# --------------------------------------------------------------------------- what pages read
def sentence_set() -> SentenceSet:
    """The current sentence set (only usable lines; problems listed in ``.problems``)."""
    init_session()  # a page run on its own (AppTest, notebook-style) still gets the default set
    text = st.session_state.get(K_TEXT, "")
    target = st.session_state.get(K_TARGET, "")
    preset = st.session_state.get(K_PRESET)
    model = st.session_state.get(K_ACTIVE_MODEL, DEFAULT_MODEL)
    models = st.session_state.get(K_MODELS_PER_SET, 1)
    key = (text, target, preset, model, models, budget.MAX_SET_PIECES)
    memo = st.session_state.get("_cl_set_memo")
    if memo is None or memo[0] != key:
        ss = parse_sentence_set(text, target, preset_id=None if preset == CUSTOM else preset)
        memo = (key, *within_budget(ss, model, models))
        st.session_state["_cl_set_memo"] = memo
    return memo[1]


def budget_note() -> str:
    """What the word-piece budget cut from the current set ("" when nothing); ui.analysis shows it."""
    sentence_set()
    return st.session_state["_cl_set_memo"][2]


def text_cut_note() -> str:
    """What :func:`set_sentences` cut from the current text to fit the sentence box ("" when nothing)."""
    cut = st.session_state.get(K_TEXT_CUT)
    return cut[1] if cut is not None and cut[0] == st.session_state.get(K_TEXT) else ""


def within_budget(ss: SentenceSet, model: str, models: int = 1) -> tuple[SentenceSet, str]:
    """The set cut to the word-piece budget (lib.serving.budget): the first sentences that fit, and what was cut.

    ``models``: how many models read the set in this run; each reads 1/``models`` of the budget."""
    if not ss.sentences:
        return ss, ""
    clean = list(clean_sentences(ss.sentences, ss.target, bad="keep"))
    enc = cache.encoder(model)
    # the budget is bytes of hidden states: a model keeping more numbers a word piece reads fewer word pieces
    one_model = budget.set_pieces_for(enc)
    per_set = budget.set_pieces_for(enc, models)  # fit_to_budget keeps at least one sentence anyway
    cut = budget.fit_to_budget(enc.piece_counts(clean), per_set=per_set)
    if not cut.dropped_note:  # shortened sentences are said by ui.analysis (Encoding.truncated)
        return ss, ""
    note = cut.dropped_note
    if one_model < budget.MAX_SET_PIECES:  # say why this model's budget is smaller than the encoder's
        note += (
            f" This model keeps {enc.num_hidden_states} × {enc.hidden_size} numbers for every word piece, so it "
            f"reads at most {one_model:,} word pieces where the default model reads {budget.MAX_SET_PIECES:,}."
        )
    if models > 1:  # the same facts, with the reason this run's budget is smaller
        share = "half" if models == 2 else f"1/{models}"
        note = (
            f"With {'a second model' if models == 2 else f'{models} models'} on, each model reads at most "
            f"{per_set:,} word pieces of the set ({share} of the "
            f"{one_model:,} one model may read), so only its first {cut.kept} of {len(clean)} "
            f"sentences are used; the other {len(clean) - cut.kept} were left out. Switch the comparison off to "
            "use more of the set."
        )
    return ss.subset(range(cut.kept)), note


def set_sentences(text: str, target: str, origin: str = "") -> None:
    """Replace the current set (e.g. from an upload) and switch the preset selector to 'your own'.

    A widget's callback as it is (``on_click=session.set_sentences, args=(text, target, origin)``). ``origin``:
    where the set came from, in plain text ("the 4 sentences uploaded from mine.csv"), :func:`origin` while
    the set is unchanged."""
    if len(text) > MAX_TEXT_CHARS:  # the sentence box's max_chars: keep whole lines, and say so
        kept = text[:MAX_TEXT_CHARS].rsplit("\n", 1)[0]
        n_all, n_kept = text.count("\n") + 1, kept.count("\n") + 1
        st.session_state[K_TEXT_CUT] = (
            kept,
            f"The sentences were {len(text):,} characters long, more than the {MAX_TEXT_CHARS:,} the sentence box "
            f"holds: only the first {n_kept} of {n_all} lines were kept.",
        )
        text = kept
    st.session_state[K_TEXT] = text
    st.session_state[K_TARGET] = target
    st.session_state[K_PRESET] = CUSTOM
    st.session_state[K_ORIGIN] = (text, origin)


def origin() -> str:
    """Where the current set came from (:func:`set_sentences`' ``origin``), "" once it has been edited."""
    text, said = st.session_state.get(K_ORIGIN, (None, ""))
    return said if text == st.session_state.get(K_TEXT) else ""


def model_name() -> str:
    """The model in use (the default until another one has loaded successfully)."""
    init_session()
    return st.session_state.get(K_ACTIVE_MODEL, DEFAULT_MODEL)


def model_display(model: str | None = None) -> str:
    """The plain name of a model key for text and titles, e.g. "… (random weights, seed 0)"."""
    return model_label(model if model is not None else model_name())


def use_finetuned(recipe_key: str, preset_id: str = "") -> None:
    """Open the fine-tuned model of ``recipe_key`` on every page ("" goes back to the pretrained weights);
    ``preset_id``: the preset it was trained on, made the set in use (the Fine-tune page's real sentences)."""
    st.session_state[K_RECIPE] = recipe_key
    if recipe_key:
        st.session_state[K_WEIGHTS] = "trained"
    preset = preset_by_id(preset_id) if preset_id else None
    if preset is not None:
        st.session_state[K_PRESET] = preset.id
        st.session_state[K_TEXT] = preset.text
        st.session_state[K_TARGET] = preset.target


def presenter() -> bool:
    return bool(st.session_state.get(K_PRESENTER, False))
