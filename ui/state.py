"""The shared sentence set, model choice and presenter mode: in session state, in the sidebar and in the URL.

Over 600 lines and still one concept: what a session remembers and how it travels in a link (the set, the
model, presenter mode and every page's controls share one read and one write of the URL).

Every page works on the same current set. The set, the target, the model and each page's main controls are
written into the URL's query parameters after every run, so a teacher can copy the address bar and a class
opens the same view. A link is read once, when a session starts; a garbled or oversized value gives a clear
message and the default instead.

Page controls, declared once each:
    CONTROLS = [Control("layers_layer", "int", L, lo=0, hi=L), ...]
    init_controls(CONTROLS)                      # before the widgets: session state, else the link, else default
    layer = st.slider("Layer", 0, L, key="layers_layer")   # widget keyed the same, no value=
    sync_controls(CONTROLS)                      # at the end: the same keys into the URL

Tests: seed(at, preset=..., **controls) before at.run(); url_written(at) and url_notes(at) after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from lib.errors import ContextLensError
from lib.inputs.presets import default_preset, load_presets, preset_by_id
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
    Encoder,
    ModelLoadError,
    TargetError,
    TargetVectors,
    model_key,
    model_label,
    split_model_key,
)
from lib.serving import budget
from ui import cache, work
from ui.widgets import escape_md

K_PRESET, K_TARGET, K_TEXT, K_MODEL, K_PRESENTER = "cl_preset", "cl_target", "cl_text", "cl_model", "cl_presenter"
K_ACTIVE_MODEL = "cl_model_active"  # the model key in use (lib.models.encoder.model_key: id + "#random-<seed>")
K_WEIGHTS, K_SEED = "cl_weights", "cl_seed"  # the Model panel's weights choice and initialiser seed
MAX_SEED_UI = MAX_SEED  # one bound for the seed box, the link's seed and a model key's #random-<seed>
CUSTOM = "custom"
MAX_URL_VALUE = 12_000  # characters; a longer value in a link is ignored with a message
MAX_PACKED_IN_URL = 6_000  # a set whose packed text is longer is not put in the URL (too long to share)
SHARED_KEYS = ("preset", "target", "text", "model", "weights", "seed", "presenter", "toolong")
K_OWN = "_cl_own"  # (text, target) of the learner's own set, kept when a preset replaces it
K_INITIALISED = "_cl_initialised"  # the link's shared keys have been read (once per session)
K_PAGE_URL = "_cl_page_url"  # this run's page controls for the URL (sync_url), written by finish_run
K_MODELS_PER_SET = "_cl_models_per_set"  # models this run sends the set through (models_per_set)
K_URL_NOTES = "_cl_url_notes"  # what was wrong with the link's values, for the sidebar


# --------------------------------------------------------------------------- the URL, read once
def _url0() -> dict[str, str]:
    """The query parameters the session was opened with (a snapshot taken on the first run)."""
    shell_guard()  # every page reads the link through here, so every page gets the app shell
    if "_cl_url0" not in st.session_state:
        snap: dict[str, str] = {}
        try:
            for k in st.query_params:
                v = st.query_params.get(k)
                if isinstance(k, str) and isinstance(v, str):
                    snap[k[:100]] = v
        except Exception:  # a malformed query string must never break the app
            snap = {}
        st.session_state["_cl_url0"] = snap
        st.session_state[K_URL_NOTES] = []
    return st.session_state["_cl_url0"]


def _url_note(message: str) -> None:
    notes = st.session_state.setdefault(K_URL_NOTES, [])
    if message not in notes:
        notes.append(message)
        box = st.session_state.get("_cl_notes_box")  # the sidebar's slot, when app.py drew it this run
        if box is not None:
            box.warning(escape_md(message))


def _url_value(key: str) -> str | None:
    raw = _url0().get(key)
    if raw is None:
        return None
    if len(raw) > MAX_URL_VALUE:
        _url_note(f"The link's “{key}” value is too long ({len(raw):,} characters) and was ignored.")
        return None
    return raw


def url_has(key: str) -> bool:
    """Whether the link the session was opened with carries ``key`` (pages never read st.query_params)."""
    return key in _url0()


def _first_value(key: str, default, parse, problem: str):
    """Session state's value of ``key``, set on first use from the link (``parse(raw)``) or ``default``.

    A link value ``parse`` refuses (ValueError) gives ``default`` and the note "The link's “key” value
    ``problem``; the default is used."
    """
    if key not in st.session_state:
        value = default
        raw = _url_value(key)
        if raw is not None:
            try:
                value = parse(raw)
            except ValueError:
                _url_note(f"The link's “{key}” value {problem}; the default is used.")
        st.session_state[key] = value
    return st.session_state[key]


def _finite_float(raw: str) -> float:
    value = float(raw)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(raw)
    return value


def url_int(key: str, default: int, lo: int, hi: int) -> int:
    """Initial value of an integer control: session state, else the link, else ``default``; clamped."""
    value = _first_value(key, default, int, "is not a whole number")
    if not isinstance(value, int) or isinstance(value, bool):
        value = default
    clamped = min(max(value, lo), hi)
    st.session_state[key] = clamped
    return clamped


def url_float(key: str, default: float, lo: float, hi: float) -> float:
    """Like :func:`url_int` for a float control."""
    value = float(_first_value(key, default, _finite_float, "is not a number"))
    clamped = min(max(value, lo), hi)
    st.session_state[key] = clamped
    return clamped


def url_choice(key: str, default: str, choices: Sequence[str]) -> str:
    """Initial value of a choice control (selectbox/radio with string options)."""

    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(raw)
        return raw

    if _first_value(key, default, parse, "is not one of the choices") not in choices:
        st.session_state[key] = default if default in choices else choices[0]
    return st.session_state[key]


def _bool(raw: str) -> bool:
    if raw not in ("1", "true", "0", "false"):
        raise ValueError(raw)
    return raw in ("1", "true")


def url_bool(key: str, default: bool) -> bool:
    """Initial value of a checkbox/toggle ('1'/'0' in the link)."""
    return bool(_first_value(key, default, _bool, "should be 1 or 0"))


def url_text(key: str, default: str = "", max_chars: int = 300) -> str:
    """Initial value of a short text control (e.g. a typed sentence); a longer value in the link is cut."""
    if key not in st.session_state:
        raw = _url_value(key)
        value = default if raw is None else raw
        if len(value) > max_chars:
            _url_note(f"The link's “{key}” value is longer than {max_chars} characters and was cut.")
            value = value[:max_chars]
        st.session_state[key] = value
    if not isinstance(st.session_state[key], str):
        st.session_state[key] = default
    return st.session_state[key]


@dataclass(frozen=True)
class Control:
    """One page control declared once: its key, kind, default and bounds, and whether the link carries it.

    :meth:`init` gives the widget its initial value (session state, else the link, else the default;
    clamped or checked like :func:`url_int` and friends) and :func:`sync_controls` writes the URL from the
    same list, so a key read from a link is always written back. Build the list where the bounds are
    known (they often depend on the model or the set), e.g.
    ``Control("layers_layer", "int", L, lo=0, hi=L)``.
    kind: "int" / "float" (lo, hi), "choice" (choices), "bool", "text" (max_chars).
    in_url: False for a control the link never carries (still clamped / checked).
    omit_default: the link leaves the control out while it is at its default (keeps links short).
    """

    key: str
    kind: str
    default: object
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    max_chars: int = 300
    in_url: bool = True
    omit_default: bool = False

    def init(self) -> object:
        """Set the widget's initial value in session state (from the link when ``in_url``) and return it."""
        if not self.in_url:  # never read from the link: start from the default, then clamp/check like the rest
            now = st.session_state.get(self.key)
            if self.kind == "int" and isinstance(now, int) and not (self.lo <= now <= self.hi):
                del st.session_state[self.key]  # its range moved away from it (fewer tokens): the default again
            st.session_state.setdefault(self.key, self.default)
        if self.kind == "int":
            return url_int(self.key, int(self.default), int(self.lo), int(self.hi))
        if self.kind == "float":
            return url_float(self.key, float(self.default), float(self.lo), float(self.hi))
        if self.kind == "choice":
            return url_choice(self.key, str(self.default), list(self.choices))
        if self.kind == "bool":
            return url_bool(self.key, bool(self.default))
        if self.kind == "text":
            return url_text(self.key, str(self.default), self.max_chars)
        raise ValueError(f"unknown control kind {self.kind!r} for {self.key!r}")


def init_controls(controls: Sequence[Control]) -> None:
    """:meth:`Control.init` for every control of a page (call before the widgets are drawn)."""
    for c in controls:
        c.init()


def sync_controls(controls: Sequence[Control], values: dict[str, object] | None = None) -> None:
    """Write every ``in_url`` control into the URL: its value from ``values``, else from session state.

    A control with ``omit_default`` stays out of the link while at its default (a link without it opens the
    same view), e.g. an empty text box.
    """
    values = values or {}
    params = {}
    for c in controls:
        if c.in_url:
            value = values.get(c.key, st.session_state.get(c.key, c.default))
            if not (c.omit_default and value == c.default):
                params[c.key] = value
    sync_url(params)


def sync_url(params: dict[str, object]) -> None:
    """Put this page's main controls into the URL (written at the end of the run by :func:`finish_run`)."""
    page = st.session_state.setdefault(K_PAGE_URL, {})
    for k, v in params.items():
        page[k] = ("1" if v else "0") if isinstance(v, bool) else str(v)


def begin_run() -> None:
    """Called by app.py at the start of every run."""
    st.session_state[K_PAGE_URL] = {}
    st.session_state[K_MODELS_PER_SET] = 1


def models_per_set(n: int) -> None:
    """This run sends the sentence set through ``n`` models (a page comparing two: 2). Call it before the page
    reads its set: each model then reads 1/n of the word-piece budget, so a comparison holds what one set
    alone holds, and the run's lease (ui.work) covers every model's vectors at once."""
    n = max(1, int(n))
    st.session_state[K_MODELS_PER_SET] = n
    work.models_per_set(n)


def view_params() -> dict[str, str]:
    """The query parameters that reopen the current view: the shared set and model, and this page's controls."""
    desired = dict(_shared_params())
    desired.update(st.session_state.get(K_PAGE_URL, {}))
    return desired


def finish_run() -> None:
    """Called by app.py at the end of every run (also after st.stop): write the URL once."""
    desired = view_params()
    try:
        current = st.query_params.to_dict()
    except Exception:
        current = {}
    if current != desired:
        st.query_params.from_dict(desired)


def _packed_text() -> str | None:
    """The current text packed for the URL, or None when it is too long for a link (memoised per text)."""
    text = st.session_state.get(K_TEXT, "")
    memo = st.session_state.get("_cl_packed")
    if memo is None or memo[0] != text:
        packed = pack_text(text)
        memo = (text, packed if len(packed) <= MAX_PACKED_IN_URL else None)
        st.session_state["_cl_packed"] = memo
    return memo[1]


def _shared_params() -> dict[str, str]:
    out: dict[str, str] = {}
    preset = st.session_state.get(K_PRESET, default_preset().id)
    if preset != CUSTOM:
        out["preset"] = preset
    else:
        out["target"] = st.session_state.get(K_TARGET, "")
        packed = _packed_text()
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
    if weights != "trained":
        out["weights"] = weights
        out["seed"] = str(seed)
    if st.session_state.get(K_PRESENTER):
        out["presenter"] = "1"
    return out


# --------------------------------------------------------------------------- session start
def shell_guard() -> None:
    """Make sure a page runs inside app.py's shell (sidebar, navigation, page config).

    Streamlit treats an app with a ``pages/`` folder as an old-style multipage app until some script calls
    ``st.navigation``. So on a fresh server, a shared link straight to ``/attention`` would run
    ``pages/attention.py`` on its own, without app.py. When that happens, switch the old mode off and rerun:
    the rerun goes through app.py, whose navigation resolves the same page.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def init_session() -> None:
    """Fill the shared widgets' state from the link on a session's first run."""
    shell_guard()
    if st.session_state.get(K_INITIALISED):
        return
    url = _url0()
    preset = default_preset()
    target, text, preset_id = preset.target, preset.text, preset.id
    raw_text = _url_value("text") if "text" in url else None
    if raw_text is not None:
        try:
            text = text_from_link(raw_text)
            target = (_url_value("target") or "")[:100]
            preset_id = CUSTOM
        except ContextLensError as err:  # a garbled or cut-off link
            _url_note(f"{err} The “{preset.target}” preset is shown instead.")
            target, text, preset_id = preset.target, preset.text, preset.id
    elif "toolong" in url:
        _url_note(
            "Whoever shared this link had their own set of sentences, too long to travel in a link, so it "
            f"could not come along; the “{preset.target}” preset is shown instead. Ask them for the sentences "
            "as a file (upload it on the Layer by layer page) or paste them into the sidebar."
        )
    elif "preset" in url:
        found = preset_by_id(url["preset"][:50])
        if found is None:
            _url_note("The link names a preset that does not exist; the “bank” preset is shown instead.")
        else:
            target, text, preset_id = found.target, found.text, found.id
    st.session_state[K_PRESET] = preset_id
    st.session_state[K_TARGET] = target
    st.session_state[K_TEXT] = text
    model = (_url_value("model") or DEFAULT_MODEL).strip()[:200]
    st.session_state[K_MODEL] = model
    st.session_state[K_ACTIVE_MODEL] = DEFAULT_MODEL
    st.session_state[K_WEIGHTS] = "trained"  # the link's key is "weights", the widget's "cl_weights"
    if "weights" in url:
        raw = _url_value("weights")
        if raw in WEIGHTS:
            st.session_state[K_WEIGHTS] = raw
        else:
            _url_note(
                "The link's “weights” value should be “trained”, “shuffled” or “random”; the trained weights are used."
            )
    seed = 0
    raw_seed = _url_value("seed")
    if raw_seed is not None:
        try:
            seed = int(raw_seed)
            if not 0 <= seed <= MAX_SEED_UI:
                raise ValueError
        except ValueError:
            seed = 0
            _url_note(f"The link's “seed” value should be a whole number from 0 to {MAX_SEED_UI}; 0 is used.")
    st.session_state[K_SEED] = seed
    st.session_state[K_PRESENTER] = url_bool("presenter", False)
    st.session_state[K_INITIALISED] = True


# --------------------------------------------------------------------------- for tests
def _session(at):
    return getattr(at, "session_state", at)  # an AppTest, or its session_state


def seed(
    at,
    *,
    preset: str | None = None,
    text: str | None = None,
    target: str | None = None,
    model: str | None = None,
    presenter: bool | None = None,
    **controls: object,
) -> None:
    """For tests: start an AppTest's session (before ``at.run()``) as if the learner had already set it up.

    ``preset`` (an id) or ``text`` (+ ``target``: the learner's own set) chooses the sentence set; ``model``
    (a model key that loads) and ``presenter`` the other shared settings. Any of these marks the session as
    started, so the link's shared keys are not read (the default preset unless a set is given); ``target``
    alone changes the target word of a session already started (between runs). ``controls``
    are page controls by their key (``seed(at, ctx_own="The [bank] ...")``), used as the session's values,
    before the link's.
    """
    session = _session(at)
    if preset is not None or text is not None or model is not None or presenter is not None:
        if text is not None:
            session[K_PRESET], session[K_TEXT], session[K_TARGET] = CUSTOM, text, target or ""
        else:
            p = preset_by_id(preset) if preset is not None else default_preset()
            if p is None:
                raise ValueError(f"no preset {preset!r}")
            session[K_PRESET], session[K_TEXT], session[K_TARGET] = p.id, p.text, p.target
        session[K_MODEL] = session[K_ACTIVE_MODEL] = model or DEFAULT_MODEL
        session[K_PRESENTER] = bool(presenter)
        session[K_INITIALISED] = True
    elif target is not None:
        session[K_TARGET] = target
    for key, value in controls.items():
        session[key] = value


def url_written(at) -> dict[str, str]:
    """For tests: the page controls the last run put into the URL (key -> value as a link carries it)."""
    session = _session(at)
    return dict(session[K_PAGE_URL]) if K_PAGE_URL in session else {}


def url_notes(at) -> list[str]:
    """For tests: what the session's link had wrong (the notes the sidebar shows)."""
    session = _session(at)
    return list(session[K_URL_NOTES]) if K_URL_NOTES in session else []


# --------------------------------------------------------------------------- sidebar
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


def render_sidebar() -> None:
    """The one place to choose a preset, edit the target and sentences, pick a model, go presenter."""
    presets = load_presets()
    titles = {p.id: p.title for p in presets}
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
    active = st.session_state.get(K_ACTIVE_MODEL)
    wanted = (st.session_state.get(K_MODEL) or "").strip() or DEFAULT_MODEL
    # open when another model is in use, or when the one asked for (e.g. by a link) was refused: say why
    with sb.expander("Model", expanded=active != DEFAULT_MODEL or wanted != active):
        st.text_input(
            "Hugging Face id or local folder",
            key=K_MODEL,
            max_chars=200,
            help=f"Default: {DEFAULT_MODEL} (bundled, offline). Any BERT-family encoder on this machine works.",
        )
        st.radio(
            "Weights",
            list(WEIGHTS),
            key=K_WEIGHTS,
            horizontal=True,
            format_func=lambda w: {"trained": "trained", "shuffled": "shuffled (control)", "random": "random"}[w],
            help="Shuffled: the trained weights, each matrix's entries put in random places: the same "
            "architecture and each matrix's scale, nothing learned (its attention need not be as sharp, nor its "
            "words take in as much context: Layer by layer measures both). Random: fresh weights from BERT's "
            "initialiser (std 0.02), which take in almost no context.",
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
        _resolve_model(st)
    sb.toggle("Presenter mode (projector)", key=K_PRESENTER, help="Large type, wide charts, sidebar collapsed.")
    box = sb.container()  # link notes; a page's own controls add theirs here later in the run
    st.session_state["_cl_notes_box"] = box
    for note in st.session_state.get(K_URL_NOTES, []):
        box.warning(escape_md(note))
    if st.session_state.get(K_PRESET) == CUSTOM and _packed_text() is None:
        sb.caption("This set is too long to put in a link; the link keeps the other settings.")


def _show_set_messages(container, ss: SentenceSet) -> None:
    if ss.problems:
        shown = ss.problems[:8]
        more = ss.left_out - len(shown)
        lines = "\n".join(f"- {escape_md(str(p))}" for p in shown)
        if more:
            lines += f"\n- … and {more:,} more line(s)."
        container.warning(f"Left out {ss.left_out:,} line(s):\n{lines}")
    for note in ss.notes:
        container.info(escape_md(note))
    n = len(ss)
    if n:
        container.caption(
            f"{n} sentence(s) with “{escape_md(ss.target or 'bracketed targets')}”"
            + (f", senses: {escape_md(', '.join(ss.sense_names))}" if ss.sense_names else ", no sense labels")
        )


def _resolve_model(container) -> None:
    name = (st.session_state.get(K_MODEL) or "").strip() or DEFAULT_MODEL
    weights = st.session_state.get(K_WEIGHTS, "trained")
    try:
        seed = int(st.session_state.get(K_SEED) or 0)
        wanted = model_key(name, weights if weights in WEIGHTS else "trained", seed)
    except (ModelLoadError, TypeError, ValueError) as err:
        container.error(escape_md(str(err)) + "  \nStill using the previous model.")
        return
    if wanted != st.session_state.get(K_ACTIVE_MODEL):
        enc, err = cache.try_encoder(wanted)
        if enc is None:
            container.error(escape_md(err or "The model could not be loaded.") + "  \nStill using the previous model.")
            return
        st.session_state[K_ACTIVE_MODEL] = enc.name
    _, weights, seed = split_model_key(st.session_state[K_ACTIVE_MODEL])
    if weights == "shuffled":
        container.warning(
            f"Shuffled weights (seed {seed}): every page now shows an encoder that learned nothing; its "
            "matrices hold the trained numbers in random places. Chart titles say so."
        )
    elif weights == "random":
        container.warning(
            f"Random weights (seed {seed}): fresh weights from BERT's initialiser (std 0.02). Every page now shows "
            "an encoder that learned nothing and takes in almost no context (its attention is nearly uniform); "
            "to ask what training added, choose the shuffled control. Chart titles say so."
        )


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
    """What the word-piece budget cut from the current set ("" when nothing); analysis() shows it."""
    sentence_set()
    return st.session_state["_cl_set_memo"][2]


def within_budget(ss: SentenceSet, model: str, models: int = 1) -> tuple[SentenceSet, str]:
    """The set cut to the word-piece budget (lib.serving.budget): the first sentences that fit, and what was cut.

    ``models``: how many models read the set in this run; each reads 1/``models`` of the budget."""
    if not ss.sentences:
        return ss, ""
    clean = list(clean_sentences(ss.sentences, ss.target, bad="keep"))
    per_set = budget.MAX_SET_PIECES // max(1, models)  # fit_to_budget keeps at least one sentence anyway
    cut = budget.fit_to_budget(cache.encoder(model).piece_counts(clean), per_set=per_set)
    if not cut.dropped_note:  # shortened sentences are said by analysis() (Encoding.truncated)
        return ss, ""
    note = cut.dropped_note
    if models > 1:  # the same facts, with the reason this run's budget is smaller
        share = "half" if models == 2 else f"1/{models}"
        note = (
            f"With {'a second model' if models == 2 else f'{models} models'} on, each model reads at most "
            f"{per_set:,} word pieces of the set ({share} of the "
            f"{budget.MAX_SET_PIECES:,} one model may read), so only its first {cut.kept} of {len(clean)} "
            f"sentences are used; the other {len(clean) - cut.kept} were left out. Switch the comparison off to "
            "use more of the set."
        )
    return ss.subset(range(cut.kept)), note


def set_sentences(text: str, target: str) -> None:
    """Replace the current set (e.g. from an upload) and switch the preset selector to 'your own'."""
    if len(text) > MAX_TEXT_CHARS:  # the sentence box's max_chars: keep whole lines, and say so
        kept = text[:MAX_TEXT_CHARS].rsplit("\n", 1)[0]
        n_all, n_kept = text.count("\n") + 1, kept.count("\n") + 1
        st.session_state["_cl_text_cut"] = (
            kept,
            f"The sentences were {len(text):,} characters long, more than the {MAX_TEXT_CHARS:,} the sentence box "
            f"holds: only the first {n_kept} of {n_all} lines were kept.",
        )
        text = kept
    st.session_state[K_TEXT] = text
    st.session_state[K_TARGET] = target
    st.session_state[K_PRESET] = CUSTOM


def model_name() -> str:
    """The model in use (the default until another one has loaded successfully)."""
    init_session()
    return st.session_state.get(K_ACTIVE_MODEL, DEFAULT_MODEL)


def model_display(model: str | None = None) -> str:
    """The plain name of a model key for text and titles, e.g. "… (random weights, seed 0)"."""
    return model_label(model if model is not None else model_name())


def presenter() -> bool:
    return bool(st.session_state.get(K_PRESENTER, False))


@dataclass(frozen=True)
class Analysis:
    """What most pages need: the usable set (aligned with ``vectors``) and the target's vectors."""

    set: SentenceSet
    vectors: TargetVectors
    model: str

    @property
    def encoder(self) -> Encoder:
        """The loaded model (cached once per server)."""
        return cache.encoder(self.model)


def analysis(min_sentences: int = 1) -> Analysis:
    """The current set's target vectors from the cache; shows a clear message and stops the page otherwise."""
    ss = sentence_set()
    if len(ss) < min_sentences:
        if len(ss) == 0:
            st.info(
                "There are no usable sentences yet. Pick a preset in the sidebar, or type sentences that "
                "contain the target word (one per line)."
            )
        else:
            st.info(
                f"This view compares sentences, so it needs at least {min_sentences}; the set has {len(ss)}. "
                "Add sentences in the sidebar or pick a preset."
            )
        st.stop()
    model = model_name()
    cut = st.session_state.get("_cl_text_cut")
    if cut is not None and cut[0] == st.session_state.get(K_TEXT):
        st.warning(escape_md(cut[1]))
    note = budget_note()
    if note:
        st.warning(escape_md(note))
    if len(ss) > cache.CHUNK:
        # said before the model starts (the budget's message above, then this bar), so a large set shows at
        # once what happens to it; the bar shows 0 of n before the model runs and moves after each batch
        bar = st.empty()

        def show(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Running the model: {done} of {total} sentences…")

        cache.encode_in_chunks(model, ss.sentences, ss.target, show)
        bar.empty()
    try:
        tv = cache.target_vectors(model, ss.sentences, ss.target)
    except TargetError as err:
        st.error(escape_md(str(err)))
        st.stop()
    if len(tv.kept) < len(ss):
        for msg in tv.problems:
            st.warning(escape_md(msg))
        ss = ss.subset(tv.kept)
        if len(ss) < min_sentences:
            st.info(f"Too few usable sentences remain ({len(ss)}); this view needs {min_sentences}.")
            st.stop()
    if tv.encoding.any_truncated:
        n = sum(tv.encoding.truncated)
        limit = min(cache.encoder(model).max_tokens, budget.MAX_PIECES_PER_SENTENCE)
        st.warning(
            f"{n} sentence(s) are longer than {limit} word pieces, the most the model reads of one sentence "
            "here: the model never saw the end of them."
        )
    return Analysis(set=ss, vectors=tv, model=model)


# Presenter mode: large type for a projector, and every page's main chart in the upper half of a 1280 x 720
# screen (tests/browser/test_browser_screens.py measures it). Sizes are in px on Streamlit's own 16-px root, so
# its rem-based gaps and paddings stay compact; the title and its "About this page" share one row (so do a
# section heading and the expander right after it: the heading leaves the expander's 360 px free), and
# radio options sit side by side.
_PRESENTER_CSS = """
<style>
[data-testid="stHeader"] { height: 40px !important; min-height: 40px !important; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding: 44px 2rem 4rem 2rem !important; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 8px !important; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 22px !important; line-height: 1.45 !important; }
h1 { font-size: 34px !important; line-height: 44px !important; padding: 0 !important; }
h2 { font-size: 28px !important; line-height: 32px !important; padding: 0 !important; }
[data-testid="stHeading"] [data-testid="stMarkdownContainer"] { margin-bottom: 0 !important; }
h3 { font-size: 24px !important; padding: 4px 0 0 0 !important; }
/* captions: larger and dark (Streamlit draws them at 60% opacity, which fades away on a projector) */
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 18px !important; color: #222 !important; opacity: 1 !important; }
/* widgets: labels, chosen values, dropdown options, radio options, buttons, expanders */
[data-testid="stWidgetLabel"] p { font-size: 18px !important; }
[data-testid="stSelectbox"] input, [data-testid="stNumberInputField"],
[data-testid="stTextInput"] input, [data-testid="stTextArea"] textarea { font-size: 19px !important; }
[role="listbox"] [role="option"] { font-size: 19px !important; }
[data-testid="stRadio"] label p { font-size: 20px !important; }
[data-testid="stRadio"] [role="radiogroup"] { flex-direction: row !important; flex-wrap: wrap !important; column-gap: 18px !important; }
button p { font-size: 19px !important; }
[data-testid="stMain"] button { min-height: 36px !important; }
[data-testid="stElementContainer"]:has([data-testid="stCheckbox"]) + [data-testid="stElementContainer"]:has([data-testid="stCheckbox"]) { margin-top: -8px !important; }
[data-testid="stExpander"] summary { padding-top: 6px !important; padding-bottom: 6px !important; }
[data-testid="stExpander"] summary p { font-size: 19px !important; }
[data-testid="stProgress"] p { font-size: 18px !important; }
[data-testid="stTableStyledTable"] td, [data-testid="stTableStyledTable"] th { font-size: 18px !important; }
[data-testid="stElementContainer"]:has(h1, h2):has(+ [data-testid="stLayoutWrapper"] > [data-testid="stExpander"]) :is(h1, h2) { padding-right: 360px !important; }
[data-testid="stElementContainer"]:has(h1, h2) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { width: 340px !important; margin-left: auto !important; }
[data-testid="stElementContainer"]:has(h1) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { margin-top: -52px !important; }
[data-testid="stElementContainer"]:has(h2) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { margin-top: -40px !important; }
</style>
"""


# Always: numbers in heatmap cells that plotly shrank below 9 px to fit a narrow screen are hidden (hover
# still shows each value; lib.charts.fitting.fit_cell_text does the same on the server for the assumed width).
_TINY_CELL_TEXT = ",\n".join(
    f'.js-plotly-plot .heatmap-label text[style*="font-size: {px}px;"]' for px in range(1, 9)
)
_BASE_CSS = f"""
<style>
{_TINY_CELL_TEXT} {{ display: none; }}
/* a disabled control's label: dimmed, but still readable (4.5:1 on white; Streamlit draws it at 2.6:1) */
label[data-testid="stWidgetLabel"][disabled] p {{ color: #595959 !important; }}
/* display formulas: no scroll region of their own (keyboard users could not scroll it); smaller on phones */
.katex-display {{ overflow: visible !important; }}
@media (max-width: 640px) {{ .katex-display {{ font-size: 0.85em; }} }}
</style>
"""


def apply_presenter_style() -> None:
    """Large type for a projector, and the rules every screen needs (static CSS of ours, no user text)."""
    st.html(_BASE_CSS + (_PRESENTER_CSS if presenter() else ""))
