"""The link: the URL's query parameters, read once when a session starts and written after every run.

A teacher copies the address bar and a class opens the same view, so every page's main widgets travel in the
link. A garbled or oversized value gives a clear message (shown in the sidebar) and the default instead.

A page declares its widgets kept in the link once, as :class:`Param` s:
    PARAMS = [link.Param("layers_layer", "int", L, lo=0, hi=L), ...]
    link.init_params(PARAMS)                    # before the widgets: session state, else the link, else default
    layer = st.slider("Layer", 0, L, key="layers_layer")   # widget keyed the same, no value=
    link.sync_params(PARAMS)                    # at the end: the same keys into the URL

The shared set, model and presenter mode travel in the same link (ui.session reads them when a session
starts and writes them back with the page's parameters: ui.session.finish_run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from lib.serving.export import escape_markdown as escape_md  # = ui.widgets.escape_md; link sits below widgets

MAX_URL_VALUE = 12_000  # characters; a longer value in a link is ignored with a message
K_URL0 = "_cl_url0"  # the query parameters the session was opened with
K_PAGE_URL = "_cl_page_url"  # this run's page parameters for the URL (sync_url), written by ui.session.finish_run
K_URL_NOTES = "_cl_url_notes"  # what was wrong with the link's values, for the sidebar
K_NOTES_BOX = "_cl_notes_box"  # the sidebar's slot for the notes, when app.py drew it this run


# --------------------------------------------------------------------------- the URL, read once
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


def opened_with() -> dict[str, str]:
    """The query parameters the session was opened with (a snapshot taken on the first run)."""
    shell_guard()  # every page reads the link through here, so every page gets the app shell
    if K_URL0 not in st.session_state:
        snap: dict[str, str] = {}
        try:
            for k in st.query_params:
                v = st.query_params.get(k)
                if isinstance(k, str) and isinstance(v, str):
                    snap[k[:100]] = v
        except Exception:  # a malformed query string must never break the app
            snap = {}
        st.session_state[K_URL0] = snap
        st.session_state[K_URL_NOTES] = []
    return st.session_state[K_URL0]


def note(message: str) -> None:
    """Say what was wrong with the link (once per message; the sidebar lists them)."""
    notes = st.session_state.setdefault(K_URL_NOTES, [])
    if message not in notes:
        notes.append(message)
        box = st.session_state.get(K_NOTES_BOX)
        if box is not None:
            box.warning(escape_md(message))


def show_notes_in(box) -> None:
    """Show the link's notes in ``box`` (the sidebar's container), and the ones found later in the run too."""
    st.session_state[K_NOTES_BOX] = box
    for message in st.session_state.get(K_URL_NOTES, []):
        box.warning(escape_md(message))


def value(key: str) -> str | None:
    """The link's raw value of ``key`` (None when absent, or too long: then with a note)."""
    raw = opened_with().get(key)
    if raw is None:
        return None
    if len(raw) > MAX_URL_VALUE:
        note(f"The link's “{key}” value is too long ({len(raw):,} characters) and was ignored.")
        return None
    return raw


def forget(key: str) -> None:
    """Take ``key`` out of the address bar now, not at the end of the run (a secret read once, such as the class
    board's teacher key: the browser's history and a reload then no longer hold it)."""
    try:
        if key in st.query_params:
            del st.query_params[key]
    except Exception:  # no address bar to change (a script run on its own)
        pass


def url_has(key: str) -> bool:
    """Whether the link the session was opened with carries ``key`` (pages never read st.query_params)."""
    return key in opened_with()


def _first_value(key: str, default, parse, problem: str):
    """Session state's value of ``key``, set on first use from the link (``parse(raw)``) or ``default``.

    A link value ``parse`` refuses (ValueError) gives ``default`` and the note "The link's “key” value
    ``problem``; the default is used."
    """
    if key not in st.session_state:
        chosen = default
        raw = value(key)
        if raw is not None:
            try:
                chosen = parse(raw)
            except ValueError:
                note(f"The link's “{key}” value {problem}; the default is used.")
        st.session_state[key] = chosen
    return st.session_state[key]


def _finite_float(raw: str) -> float:
    number = float(raw)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(raw)
    return number


def url_int(key: str, default: int, lo: int, hi: int) -> int:
    """Initial value of an integer widget: session state, else the link, else ``default``; clamped."""
    got = _first_value(key, default, int, "is not a whole number")
    if not isinstance(got, int) or isinstance(got, bool):
        got = default
    clamped = min(max(got, lo), hi)
    st.session_state[key] = clamped
    return clamped


def url_float(key: str, default: float, lo: float, hi: float) -> float:
    """Like :func:`url_int` for a float widget."""
    got = float(_first_value(key, default, _finite_float, "is not a number"))
    clamped = min(max(got, lo), hi)
    st.session_state[key] = clamped
    return clamped


def url_choice(key: str, default: str, choices: Sequence[str]) -> str:
    """Initial value of a choice widget (selectbox/radio with string options)."""

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
    """Initial value of a short text widget (e.g. a typed sentence); a longer value in the link is cut."""
    if key not in st.session_state:
        raw = value(key)
        got = default if raw is None else raw
        if len(got) > max_chars:
            note(f"The link's “{key}” value is longer than {max_chars} characters and was cut.")
            got = got[:max_chars]
        st.session_state[key] = got
    if not isinstance(st.session_state[key], str):
        st.session_state[key] = default
    return st.session_state[key]


# --------------------------------------------------------------------------- a page's parameters
@dataclass(frozen=True)
class Param:
    """One page widget declared once: its key, kind, default and bounds, and whether the link carries it.

    :meth:`init` gives the widget its initial value (session state, else the link, else the default;
    clamped or checked like :func:`url_int` and friends) and :func:`sync_params` writes the URL from the
    same list, so a key read from a link is always written back. Build the list where the bounds are
    known (they often depend on the model or the set), e.g.
    ``Param("layers_layer", "int", L, lo=0, hi=L)``.
    kind: "int" / "float" (lo, hi), "choice" (choices), "bool", "text" (max_chars).
    in_url: False for a widget the link never carries (still clamped / checked).
    omit_default: the link leaves the widget out while it is at its default (keeps links short).
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
        raise ValueError(f"unknown parameter kind {self.kind!r} for {self.key!r}")


def init_params(params: Sequence[Param]) -> None:
    """:meth:`Param.init` for every parameter of a page (call before the widgets are drawn)."""
    for p in params:
        p.init()


def sync_params(params: Sequence[Param], values: dict[str, object] | None = None) -> None:
    """Write every ``in_url`` parameter into the URL: its value from ``values``, else from session state.

    A parameter with ``omit_default`` stays out of the link while at its default (a link without it opens the
    same view), e.g. an empty text box.
    """
    values = values or {}
    out = {}
    for p in params:
        if p.in_url:
            now = values.get(p.key, st.session_state.get(p.key, p.default))
            if not (p.omit_default and now == p.default):
                out[p.key] = now
    sync_url(out)


def sync_url(params: dict[str, object]) -> None:
    """Put this page's main widgets into the URL (written at the end of the run by ui.session.finish_run)."""
    page = st.session_state.setdefault(K_PAGE_URL, {})
    for k, v in params.items():
        page[k] = ("1" if v else "0") if isinstance(v, bool) else str(v)


def begin_run() -> None:
    """A run starts with no page parameters for the URL (app.py, through ui.session.begin_run)."""
    st.session_state[K_PAGE_URL] = {}


def page_params() -> dict[str, str]:
    """The parameters this run's page put into the URL so far (key -> value as a link carries it)."""
    return dict(st.session_state.get(K_PAGE_URL, {}))


def write(desired: dict[str, str]) -> None:
    """Make the address bar's query parameters ``desired`` (nothing is sent when they already are)."""
    try:
        current = st.query_params.to_dict()
    except Exception:
        current = {}
    if current != desired:
        st.query_params.from_dict(desired)
