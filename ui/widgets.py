"""Small shared widgets and helpers for pages (Streamlit side)."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from lib.charts.common import figure, layer_mark, layer_positions, merged, presenter_layout
from lib.charts.figures import figure_dict
from lib.charts.fitting import ASSUMED_WIDTH_PX, PRESENTER_WIDTH_PX, cell_text_changes, fit_cell_text
from lib.serving import lazy
from lib.serving.export import escape_markdown
from ui import page_export
from ui.cache.store import SharedFigure, frame, glossary_links, shared_figure
from ui.plotly_look import SentFigure, themed_spec, wrap_title

PAGE_FAILED = (
    "Something went wrong on this page. Your input is kept: change it or open another page. "
    "If it happens again, tell whoever runs the app what you did (the details are in the server's log)."
)


def guarded(run: Callable[[], object]) -> None:
    """Run a page (``run``) so that no traceback reaches a learner: a bug is logged with its traceback on the
    server and the page says :data:`PAGE_FAILED`. Streamlit's own stop and rerun pass through (they are not
    ``Exception``). ``CONTEXT_LENS_SHOW_ERRORS=1`` (the tests) lets the bug through, so a test sees it.
    """
    try:
        run()
    except Exception:
        if os.environ.get("CONTEXT_LENS_SHOW_ERRORS", "") == "1":
            raise
        logging.getLogger("context_lens").exception("a page failed")
        st.error(PAGE_FAILED)


def escape_md(text: str) -> str:
    """Escape text for st.markdown / st.warning so user input shows literally (no markdown, no HTML)."""
    return escape_markdown(text)


def sentence_picker(container, ss, key: str, label: str = "Sentence") -> int:
    """A select box of the set's sentences by number (1-based, the widget's value), each labelled as
    ``SentenceSet.option_label`` says; its labels are data (a dict's ``get``), never a function of the page."""
    labels = ss.option_labels
    return container.selectbox(label, options=list(labels), format_func=labels.get, key=key)


def set_state(**values: object) -> None:
    """A widget's callback that sets session state: ``on_click=set_state, kwargs={"ctx_word": 3}``.

    What a session keeps of its widgets (callbacks, format functions) must not point into a page's namespace,
    which would keep the page's results alive after its run (ui/work.py end_run): a page hands a widget data
    and functions of ui/ (this one, ``session.set_sentences``) or of the data (``labels.get``), never a
    function of its own.
    """
    for key, value in values.items():
        st.session_state[key] = value


def weights_note(model_key: str | None = None) -> str | None:
    """"shuffled weights, seed 0" / "random weights, seed 0" when the model in use (or ``model_key``) is a
    control, else None."""
    from lib.models.encoder import ModelLoadError, split_model_key, weights_label

    key = model_key if model_key is not None else st.session_state.get("cl_model_active")
    try:
        _, weights, seed = split_model_key(key) if key else ("", "trained", 0)
    except ModelLoadError:
        return None
    return weights_label(weights, seed) if weights != "trained" else None


def name_weights(fig: go.Figure | dict, note: str) -> go.Figure:
    """A copy of ``fig`` whose title ends with "(<note>)", so a control model is never mistaken for the real one.

    Built in one step from the figure's dicts (lib.charts.figures.figure_dict), not a validated copy.
    """
    spec = figure_dict(fig)
    layout = spec["layout"]
    title = layout.get("title")
    title = title if isinstance(title, dict) else {"text": title} if title else {}
    text = title.get("text")
    if not (text and note in text):
        # hung from the top of the chart, so a title broken into lines (ui.plotly_look.wrap_title, which raises
        # the top margin a line for each) grows down into its margin instead of up past the chart's edge
        layout["title"] = merged(
            title, text=f"{text} ({note})" if text else _model_called(note), automargin=True, y=1,
            yref="container", yanchor="top", pad={"t": 10},
        )  # fmt: skip
        if not text:  # a chart drawn without a title has the untitled top margin: make room for the new one
            margin = layout.get("margin") if isinstance(layout.get("margin"), dict) else {}
            layout["margin"] = merged(margin, t=max(60, int(margin.get("t", 0) or 0)))
    return figure(spec["data"], layout)


def _model_called(note: str) -> str:
    """An untitled chart's title from the note: "Model with random weights, seed 0", "Model fine-tuned on …"."""
    return f"Model {note}" if note.startswith("fine-tuned") else f"Model with {note}"


# plotly's toolbar only while the pointer is on the chart (a tap on a phone), without the plotly logo, and
# with two buttons (save as PNG, reset the axes) instead of ten, so it never spreads over a chart's title
PLOTLY_CONFIG = {
    "displayModeBar": "hover",
    "displaylogo": False,
    "modeBarButtonsToRemove": [
        "zoom2d", "pan2d", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d",
        "zoom3d", "pan3d", "orbitRotation", "tableRotation", "resetCameraLastSave3d",
    ],
}


def chart(
    fig: go.Figure | dict | SharedFigure,
    *,
    key: str | None = None,
    download: str | None = None,
    name_model: bool = True,
    share: float = 1.0,
    **kwargs,
) -> None:
    """Show a plotly figure full width, scaled up in presenter mode.

    ``fig``: a figure, or a ui.cache.SharedFigure (built once per input and shared), whose spec as sent for this
    screen is made once too: a rerun that draws it again costs Streamlit's own serialisation only.
    ``download``: a file name stem; adds a button that saves the figure as interactive HTML (made only
    when clicked, so reruns stay fast). With random weights in use, the title says so ("… (random
    weights, seed 0)"); ``name_model=False`` for a figure that names its models itself (two side by side).
    ``share``: the fraction of the page's width the chart gets (0.5 in one of two columns); numbers in
    heatmap cells are hidden when cells that narrow cannot hold them (lib.charts.fitting.fit_cell_text).
    A chart over the layers with the chosen layer marked: :func:`layer_chart`.
    """
    note = weights_note() if name_model else None
    presenting = bool(st.session_state.get("cl_presenter"))
    width = (PRESENTER_WIDTH_PX if presenting else ASSUMED_WIDTH_PX) * share
    # plotly's JSON encoder takes pandas from sys.modules as it finds it: on a cold server with a class arriving
    # at once, one learner's thread found it half-imported by another's and got a traceback ("partially
    # initialized module 'pandas' has no attribute 'NaT'", seen on a fresh replica behind nginx). Serialised here.
    lazy.load("pandas")
    if isinstance(fig, SharedFigure):
        shared = fig
        sent = shared.memo(("sent", note, presenting, width), lambda: SentFigure(_sent_spec(shared.fig, note, presenting, width)))
        fig = shared.fig
    else:
        sent = SentFigure(_sent_spec(fig, note, presenting, width))
    kwargs.setdefault("config", PLOTLY_CONFIG)
    # sent with Streamlit's look in the layout, theme=None and margins sized for this width, so the browser
    # draws a changed chart once instead of three times (ui/plotly_look.py says why)
    kwargs.setdefault("theme", None)
    st.plotly_chart(sent, key=key, **kwargs)
    if download:
        download_figure((lambda: name_weights(fig, note)) if note else fig, download, key=f"{key or download}_download")


def _sent_spec(fig: go.Figure | dict, note: str | None, presenting: bool, width: float) -> dict:
    """The spec :func:`chart` sends for ``fig``: titled with the weights' ``note``, scaled for a projector when
    ``presenting``, cell numbers fitted and margins sized for ``width`` px, the title wrapped for a phone."""
    if note:
        fig = name_weights(fig, note)
    if presenting:
        shown = fit_cell_text(presenter_layout(fig), width)
    elif isinstance(fig, go.Figure) and not cell_text_changes(fig, width):
        shown = fig  # nothing to adjust: drawn as it is (st.plotly_chart reads it, never changes it)
    else:
        shown = fit_cell_text(_copy(fig), width)
    spec = themed_spec(shown, width)
    if not presenting:  # a projector is wide; on a phone this chart is ~358 px wide, whatever its share here
        spec = wrap_title(spec)
    return spec


def matrix_pair(
    matrices: tuple, titles: tuple[str, str], keys: tuple[str, str], sentences, senses, *, zmin: float,
    zmax: float = 1.0, made_from: tuple | None = None,
) -> None:
    """Two (n, n) cosine matrices as two charts in two columns on one colour range (``zmin``..``zmax``), the colour
    bar on the second, then the table of sentences behind their S1…Sn labels.

    Side by side on a laptop or projector, one under the other on a phone (one figure of two panels squeezed both
    into a few pixels there). ``titles`` are plain text (escaped here); ``keys`` the two charts' keys.
    ``made_from``: what the matrices are made from (a set's key and the view), when they come from a cache: the
    two charts are then built once and shared (ui.cache.shared_figure).
    """
    from lib.charts.home import similarity_heatmap

    for col, m, title, key, scale in zip(st.columns(2, gap="medium"), matrices, titles, keys, (False, True), strict=True):
        with col:
            st.markdown(f"**{escape_md(title)}**")
            build = functools.partial(similarity_heatmap, m, sentences, senses, None, zmin=zmin, zmax=zmax,
                                      show_scale=scale)  # fmt: skip
            if made_from is not None:
                fig = shared_figure("matrix_pair", (*made_from, key, tuple(sentences), tuple(senses), zmin, zmax), build)
            else:
                fig = build()
            chart(fig, key=key, share=0.5)
    sentence_table(sentences, senses)


def layer_chart(
    fig: go.Figure | SharedFigure, *, key: str, at: int | None, download: str | None = None, name_model: bool = True,
    **kwargs,
) -> None:
    """A chart over the layers with the chosen one marked: drawn, recorded for the page's file, offered as a download.

    ``fig``: built without a mark (a figure, or a ui.cache.SharedFigure); its x axis lists the layers (and a pooled
    representation) as ``tickvals`` (lib.charts.common.layer_positions). ``at``: the place in that list to mark
    (lib.charts.common.layer_mark); None, or past the end (a pooled choice on a chart without one), marks nothing.
    ``download``: a file name stem for the chart's HTML, with its mark.

    The figure sent carries the mark at every place, all hidden, and a style rule shows the one at ``at``: the
    figure is then the same whatever layer is chosen, so the browser keeps the chart as drawn when only the
    layer moves (Streamlit re-creates a chart whose figure changed), and a shared figure's marked copy and spec
    are made once. The page's file (ui.page_export) and the download draw the chosen mark itself.
    """
    shared = fig if isinstance(fig, SharedFigure) else SharedFigure(fig)
    marked_all, positions, others = shared.memo(("layer marks",), lambda: _hidden_marks(shared.fig))
    index = at if at is not None and 0 <= at < len(positions) else None
    chart(marked_all, key=key, name_model=name_model, **kwargs)
    rule = f'.st-key-{key} .shape-group[data-index="{index}"] path {{ opacity: 1 !important; }}'
    st.html(f"<style>{rule if index is not None else ''}</style>")  # a few hundred bytes: what changes
    page_export.mark_layer(key, index)
    if download:
        note = weights_note() if name_model else None

        def marked():  # the chart with its chosen mark drawn, made when the button is pressed
            spec = figure_dict(shared.fig)
            mark = [layer_mark(positions[index])] if index is not None else []
            out = figure(spec["data"], {**spec["layout"], "shapes": mark + others})
            return name_weights(out, note) if note else out

        download_figure(marked, download, key=f"{key}_download")


def _hidden_marks(fig: go.Figure) -> tuple[SharedFigure, list, list]:
    """(``fig`` with a hidden mark at each of its layers, the layers' places, its own shapes) for :func:`layer_chart`."""
    spec = figure_dict(fig)
    layout, positions = spec["layout"], layer_positions(spec)
    others = list(layout.get("shapes") or ())
    hidden = [{**layer_mark(x), "opacity": 0} for x in positions]  # shape i marks place i
    return SharedFigure(figure(spec["data"], {**layout, "shapes": hidden + others})), positions, others


def _copy(fig: go.Figure | dict) -> go.Figure:
    """A copy of ``fig`` to adjust for this screen (the original may be shared between sessions).

    A go.Figure was validated when it was built (or built by lib.charts.common.figure): it is rebuilt from
    its dicts in one step without validating it again (a plotly copy of a figure costs tens of
    milliseconds, most of it the template). A dict is validated.
    """
    if isinstance(fig, go.Figure):
        spec = figure_dict(fig)
        return figure(spec["data"], spec["layout"])
    return go.Figure(fig)


def download_figure(
    fig: go.Figure | Callable[[], go.Figure], name: str, *, key: str, label: str = "Download chart (HTML)"
) -> None:
    """A download button with the figure as a standalone interactive HTML file (plotly.js from a CDN).

    ``fig``: the figure, or a function that makes it. The HTML (and the figure) is made only when the button
    is clicked.
    """

    def html() -> str:
        shown = fig() if callable(fig) and not isinstance(fig, go.Figure) else fig
        return shown.to_html(include_plotlyjs="cdn", full_html=True)

    st.download_button(
        label, data=html, file_name=f"{name}.html", mime="text/html", key=key, icon=":material/download:"
    )


INTRO_DIR = Path(__file__).resolve().parents[1] / "assets" / "intro"


@functools.cache
def intro_text(name: str) -> str:
    """A page's introduction from ``assets/intro/<name>.md`` (course text a lecturer can edit without touching
    code). Lines of a paragraph are joined with spaces; paragraphs are separated by a blank line."""
    raw = (INTRO_DIR / f"{name}.md").read_text(encoding="utf-8")
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in raw.strip().split("\n\n")]
    return "\n\n".join(paragraphs)


def page_intro(name: str, *, label: str = "About this page", first: bool = True, **values: object) -> None:
    """:func:`intro` of ``assets/intro/<name>.md``; ``values`` fill its ``{placeholders}`` (e.g. a number the
    page measures). ``first``: this is the page's first intro, so the glossary links start afresh (each
    term is linked where the page first uses it, see :func:`prose`)."""
    if first:
        st.session_state[_K_GLOSSARY] = set()
    text = intro_text(name)
    intro(text.format(**values) if values else text, label=label)


_K_GLOSSARY = "_cl_glossary_linked"  # the glossary anchors this run of the page has linked


def glossary_linked(text: str) -> str:
    """``text`` with the first use on this page of each glossary term linked to its entry (lib.teaching.glossary)."""
    already = st.session_state.setdefault(_K_GLOSSARY, set())
    out, linked = glossary_links(text, frozenset(already))  # found once per text and what was linked before
    already.update(linked)
    return out


def prose(text: str, *, caption: bool = False, container=None) -> None:
    """Page text (st.markdown, or st.caption with ``caption``) with glossary terms linked where first used."""
    where = container if container is not None else st
    (where.caption if caption else where.markdown)(glossary_linked(text))


def intro(text: str, *, label: str = "About this page") -> None:
    """A page's introduction: shown as is, or folded into an expander called ``label`` in presenter mode so
    that the page's main chart fits on a 1280x720 projector without scrolling. ``text`` is the page's own
    markdown."""
    text = glossary_linked(text)
    if st.session_state.get("cl_presenter"):
        with st.expander(label, icon=":material/info:"):
            st.markdown(text)
    else:
        st.markdown(text)


def expander_while_open(label: str, body: Callable[[], object], *, key: str, icon: str | None = None) -> None:
    """An expander whose ``body`` runs only while it is open: opening or closing it reruns the page
    (``on_change="rerun"``), so a page that shows it closed pays nothing for what it holds, and its text is not
    part of the page's prose until the learner opens it. ``key``: the expander's widget key (True while open)."""
    box = st.expander(label, icon=icon, key=key, on_change="rerun")
    with box:
        if box.open:
            body()


TABLE_MAX_ROWS = 50  # a longer sentence list is a scrolling data grid, not an HTML table


def sentence_table(sentences, senses, *, label: str = "The sentences (S1, S2, …)", expanded: bool = False) -> None:
    """The sentences behind a chart's S1…Sn labels, as a plain table (user text shown literally), in an
    expander: the chart's text alternative, and the full labels a phone has no room for.

    Up to TABLE_MAX_ROWS sentences: an HTML table (st.table, read in full by a screen reader). More: a data
    grid (st.dataframe) that draws only the rows in view; a 500-row HTML table is slow for the browser to lay
    out and for the server to build on every rerun.
    """
    grid = len(sentences) > TABLE_MAX_ROWS
    rows = frame("sentences", (tuple(sentences), tuple(senses)), functools.partial(_sentence_rows, sentences, senses))
    with st.expander(label, expanded=expanded):
        if grid:
            st.dataframe(rows, width="stretch", height=360)
        else:
            st.table(rows, hide_index=False)  # an Arrow table: say so, or Streamlit converts it back to look


def _sentence_rows(sentences, senses):
    """:func:`sentence_table`'s rows: S1…Sn, the senses if any, the sentences (escaped for st.table's Markdown)."""
    import pandas as pd

    grid = len(sentences) > TABLE_MAX_ROWS
    literal = (lambda s: s) if grid else escape_md  # st.table renders markdown; a grid shows text as it is
    rows = {"": [f"S{i + 1}" for i in range(len(sentences))]}
    if any(senses):
        rows["sense"] = [literal(s) if s else "–" for s in senses]
    rows["sentence"] = [literal(s) for s in sentences]
    return pd.DataFrame(rows).set_index("")
