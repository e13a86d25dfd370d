"""Shared look of every chart: a colour-blind-safe palette for sense labels and a readable layout.

The palette is Okabe & Ito's (2008) qualitative set, which stays distinguishable for the common forms of
colour blindness and on a washed-out projector. Sense colours are assigned in order of first appearance, so
the same sense keeps its colour on every chart of a page.

Also here: ``esc`` and ``finite``, the layout helpers (``base_layout``, ``merged``, ``vline``/``hline``,
``subplot_grid``), :func:`figure` (the one way a chart is built), :func:`presenter_layout`, and what a heatmap of
every pair of sentences does at size (``heatmap_hover``, ``cell_numbers``, ``thin``). The figure
objects it builds are in :mod:`lib.charts.figures`; sizing the numbers in heatmap cells to the screen is in
:mod:`lib.charts.fitting`.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.figures import Figure, LazyFigure, figure_dict, subplots_as_plotly

# Okabe-Ito, reordered so the first colours are the most distinct on a projector.
SENSE_COLORS = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
NO_SENSE_COLOR = "#7F7F7F"
# Pairs of sentences: the same two colours on every chart that compares same- and different-sense pairs.
SAME_COLOR = SENSE_COLORS[2]  # bluish green
DIFFERENT_COLOR = SENSE_COLORS[4]  # vermillion
CONTEXT_COLOR = "#BBBBBB"
X_LABEL_LINE = 16  # px each further line of a 12-px tick label broken with <br> adds (plotly's 1.3 line spacing)
# Sequential scale for similarities and attention weights (perceptually uniform, colour-blind safe).
SEQUENTIAL = "Viridis"
# Diverging scale centred on 0 for adjusted similarities.
DIVERGING = "RdBu_r"

BASE_FONT = 14
PRESENTER_FONT = 22
PRESENTER_TEXT = "#111111"  # the theme's text colour (.streamlit/config.toml)


MAX_SENSES = len(SENSE_COLORS)  # distinct sense colours on one chart; more senses are grouped as "other"


def group_senses(senses: Sequence[str | None], max_senses: int = MAX_SENSES) -> list[str | None]:
    """The senses with at most ``max_senses`` distinct names: when there are more, the ``max_senses - 1``
    most frequent keep their names and the rest become one group, "other (k senses)", which the legend
    and tick labels then say. None (no label) stays None. Keeps charts fast and readable whatever the set.
    """
    counts: dict[str, int] = {}
    for s in senses:
        if s:
            counts[s] = counts.get(s, 0) + 1
    if len(counts) <= max_senses:
        return list(senses)
    first = {s: k for k, s in enumerate(counts)}
    keep = set(sorted(counts, key=lambda s: (-counts[s], first[s]))[: max_senses - 1])
    other = f"other ({len(counts) - len(keep)} senses)"
    return [s if (not s or s in keep) else other for s in senses]


def layer_dtick(n_hidden_states: int) -> int:
    """The tick step of a layer axis: every layer up to 13 hidden states (BERT-base's 12 layers and the
    embeddings), every 5th beyond (a decoder's 31 ticks ran into each other on a 390-px phone)."""
    return 1 if int(n_hidden_states) <= 13 else 5


def layer_labels(names: Sequence[str]) -> list[str]:
    """Tick labels for a layer axis whose ``tickvals`` list every layer: each name, or past 13 hidden states only
    every :func:`layer_dtick`-th (the others blank: a decoder's 31 ran into each other on a phone)."""
    step = layer_dtick(len(names))
    return [name if i % step == 0 else "" for i, name in enumerate(names)]


def layer_ticktext(n_hidden_states: int) -> list[str]:
    """:func:`layer_labels` for layers named by their numbers 0..n-1."""
    return layer_labels([str(i) for i in range(int(n_hidden_states))])


def esc(text: object) -> str:
    """User text made safe for plotly, whose titles, ticks, legends and hovers read a little HTML.

    The one escape for every chart module (``<``, ``>`` and ``&`` become entities; quotes stay).
    """
    return html.escape(str(text), quote=False)


def finite(values) -> np.ndarray:
    """Values as float64 with NaN and ±inf replaced by 0: a chart never shows NaN."""
    return np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)


def sense_color_map(senses: Sequence[str | None]) -> dict[str | None, str]:
    """A colour for each distinct sense, in order of first appearance; None (no label) is grey."""
    colors: dict[str | None, str] = {}
    for s in senses:
        if s is None:
            colors[None] = NO_SENSE_COLOR
        elif s not in colors:
            named = [k for k in colors if k is not None]
            colors[s] = SENSE_COLORS[len(named) % len(SENSE_COLORS)]
    return colors


def sense_ticks(
    labels: Sequence[str],
    senses: Sequence[str | None],
    *,
    order: Sequence[int] | None = None,
    names: bool = True,
) -> list[str]:
    """Tick labels (escaped) that start with a bar in their sentence's sense colour, for heatmap axes.

    labels, senses: one per sentence; order: which sentences to label, in axis order (default all, as
    given); colours are assigned over the full ``senses`` in order of first appearance, so a sense keeps
    its colour whatever the order. ``names=False`` draws the bar without the sense name. A sentence
    without a sense gets its plain label.
    """
    colors = sense_color_map(senses)
    out = []
    for i in range(len(labels)) if order is None else order:
        s, lab = senses[i], esc(labels[i])
        name = f"{esc(s)} " if names else ""
        out.append(f"<span style='color:{colors[s]}'>{name}▍</span>{lab}" if s else lab)
    return out


def band_from_zero(
    top: Sequence[float],
    *,
    name: str,
    fillcolor: str = "rgba(120,120,120,0.18)",
    line: dict | None = None,
) -> go.Scatter:
    """A filled band from 0 up to ``top`` (K,) over layers 0..K-1: a chance or control band (shuffled
    labels up to their 95th percentile), drawn behind the curves and skipped by hover."""
    t = [float(v) for v in top]
    x = list(range(len(t)))
    return go.Scatter(
        x=x + x[::-1],
        y=t + [0.0] * len(t),
        fill="toself",
        fillcolor=fillcolor,
        line=line if line is not None else {"width": 0},
        name=name,
        hoverinfo="skip",
    )


# Figures are built from plain dicts in one constructor call, without plotly's per-property validation:
# each `update_layout`/`add_*` call walks and validates the figure's property tree, and that was most of a
# rerun's server CPU. Validation is switched back on by CONTEXT_LENS_VALIDATE_FIGURES=1, which the
# test suite sets, so every figure a test builds is still checked property by property.
VALIDATE_ENV = "CONTEXT_LENS_VALIDATE_FIGURES"


def validating() -> bool:
    """True when figures are validated as they are built (the tests; see VALIDATE_ENV)."""
    return os.environ.get(VALIDATE_ENV, "") not in ("", "0")


def base_layout(*, title: str | None = None, height: int | None = None) -> dict:
    """The readable defaults of every chart as a layout dict (font, margins, hover label, legend, title),
    for figures built with :func:`figure`."""
    layout: dict = {
        "font": {"size": BASE_FONT},
        "margin": {"l": 10, "r": 10, "t": 60 if title else 30, "b": 10},
        "hoverlabel": {"font": {"size": BASE_FONT}},
        "legend": {"title": {"text": ""}},
    }
    if title is not None:
        layout["title"] = {"text": title, "x": 0.0, "xanchor": "left"}
    if height is not None:
        layout["height"] = height
    return layout


def figure(data: Sequence[dict | go.Figure], layout: dict | None = None) -> go.Figure:
    """A figure from trace dicts (``{"type": "scatter", ...}``) and a layout dict, built in one step.

    Use nested dicts (``{"title": {"text": ...}}``), not plotly's ``title_text`` shorthand: unvalidated
    figures keep keys as given. Trace objects (``go.Scatter(...)``) are accepted too. Validated (the tests),
    the figure is a :class:`Figure`, whose ``to_dict`` (Streamlit's per-rerun copy) does not copy every
    value; otherwise a :class:`LazyFigure`, which is a Figure built only when plotly's API is used. The
    top-level dicts are copied (properties set to None left out, as plotly does); the values in them are
    shared with the caller, who must not change them.
    """
    traces = [t.to_plotly_json() if hasattr(t, "to_plotly_json") else t for t in data]
    if validating():
        return Figure(data=traces, layout=layout or {}, _validate=True)
    # plotly's constructor leaves out properties given as None
    traces = [{k: v for k, v in t.items() if v is not None} for t in traces]
    return LazyFigure(traces, subplots_as_plotly({k: v for k, v in (layout or {}).items() if v is not None}))


def merged(base: dict, **changes) -> dict:
    """``base`` (a layout dict) with ``changes`` merged in, nested dicts key by key (as update_layout
    merges them); ``base`` is not changed."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict):  # merged into a copy: the caller's dicts are never shared or changed
            old = out.get(key)
            out[key] = merged(old if isinstance(old, dict) else {}, **value)
        else:
            out[key] = value
    return out


def vline(x: float, line: dict, *, axis: str = "x") -> dict:
    """A vertical line across the plot at ``x`` as a layout shape (what add_vline adds, in one dict)."""
    y = axis.replace("x", "y", 1)
    return {"type": "line", "xref": axis, "x0": x, "x1": x, "yref": f"{y} domain", "y0": 0, "y1": 1, "line": line}


LAYER_MARK = {"color": "black", "width": 1}  # the chosen layer's line, on every chart over the layers


def layer_mark(x: float) -> dict:
    """The chosen layer's mark on a chart over the layers: a thin black line across the plot at ``x``.

    >>> layer_mark(3)["x0"], layer_mark(3)["line"]
    (3, {'color': 'black', 'width': 1})
    """
    return vline(x, LAYER_MARK)


def layer_positions(spec: dict) -> list[float]:
    """Where the layers (and a pooled representation) sit on a chart over the layers: its x axis's tick values.

    Every chart over the layers lists them (``tickvals``), so the chosen one can be marked by its place in that
    list (ui.widgets.layer_chart).

    >>> layer_positions({"layout": {"xaxis": {"tickvals": [0, 1, 2, 2.6]}}})
    [0, 1, 2, 2.6]
    """
    return list((spec.get("layout") or {}).get("xaxis", {}).get("tickvals") or [])


def hline(y: float, line: dict, *, axis: str = "y") -> dict:
    """A horizontal line across the plot at ``y`` as a layout shape (what add_hline adds, in one dict)."""
    x = axis.replace("y", "x", 1)
    return {"type": "line", "yref": axis, "y0": y, "y1": y, "xref": f"{x} domain", "x0": 0, "x1": 1, "line": line}


def _axes(layout: dict, data: list[dict], kind: str) -> list[str]:
    """Names of the layout's ``kind`` axes ("xaxis", "yaxis", "coloraxis"): those set in the layout and those
    the traces draw on (the first always, as plotly's update_xaxes has it; colour axes only when used)."""
    names = {k for k in layout if re.fullmatch(rf"{kind}\d*", k)}
    ref = {"xaxis": "x", "yaxis": "y", "coloraxis": "coloraxis"}[kind]
    for trace in data:
        used = trace.get(kind if kind == "coloraxis" else ref + "axis")
        if used:
            names.add(used.replace(ref, kind, 1))
    if kind != "coloraxis":
        names.add(kind)
    return sorted(names)


def presenter_layout(fig: go.Figure | dict) -> go.Figure:
    """Scale a figure for a projector and return a copy (the original is not changed).

    Larger fonts everywhere (titles, axis ticks and titles, legend, subplot titles, colour bars, the
    numbers written in heatmap cells), near-black text instead of the theme's grey (grey fades on a
    washed-out projector), thicker lines and larger markers, and 25% more height. Lines drawn with
    width 0 (the edges of shaded bands) stay invisible. Built from dicts (:func:`figure_dict`) in one step.
    """
    spec = figure_dict(fig)
    data, lay = spec["data"], spec["layout"]
    tick = PRESENTER_FONT - 4
    lay = merged(
        lay,
        font={"size": PRESENTER_FONT, "color": PRESENTER_TEXT},
        hoverlabel={"font": {"size": PRESENTER_FONT}},
        legend={"font": {"size": PRESENTER_FONT - 2}},
    )
    title = lay.get("title")
    title_text = title.get("text") if isinstance(title, dict) else title
    if isinstance(title, str):
        lay["title"] = {"text": title}
    if title_text:
        lay = merged(lay, title={"font": {"size": PRESENTER_FONT + 4}})
    annotations = lay.get("annotations") or []
    top = (lay.get("margin") or {}).get("t")
    if top is not None and (title_text or annotations):
        # the larger title and subplot titles need a taller top margin, or the plot covers them
        lay = merged(lay, margin={"t": int(top * 1.4)})
    axis_fonts = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title": {"font": {"size": PRESENTER_FONT, "color": PRESENTER_TEXT}},
    }
    for name in _axes(lay, data, "xaxis") + _axes(lay, data, "yaxis"):
        axis = lay.get(name) or {}
        if isinstance(axis.get("title"), str):
            axis = {**axis, "title": {"text": axis["title"]}}
        lay[name] = merged(axis, **axis_fonts)
    for ann in annotations:  # subplot titles and labels; a colour set on purpose is kept
        ann["font"] = merged(ann.get("font") or {}, size=PRESENTER_FONT - 2)
        ann["font"].setdefault("color", PRESENTER_TEXT)
    colorbar = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title": {"font": {"size": PRESENTER_FONT - 2, "color": PRESENTER_TEXT}},
    }
    for name in _axes(lay, data, "coloraxis"):
        lay[name] = merged(lay.get(name) or {}, colorbar=_colorbar(lay.get(name) or {}, colorbar))
    for trace in data:
        kind = trace.get("type", "scatter")
        if kind == "heatmap":
            # cell numbers keep plotly's automatic size: it fits the drawn cell, capped at the (larger)
            # layout font, so they grow on a projector and never overlap (see fit_cell_text)
            if not trace.get("coloraxis"):
                trace["colorbar"] = _colorbar(trace, colorbar)
        elif kind in ("scatter", "scattergl"):
            line = trace.get("line") or {}
            width = line.get("width")
            if width is None or width > 0:
                trace["line"] = {**line, "width": max(4.0, 1.5 * (width or 2))}
            size = (trace.get("marker") or {}).get("size")
            if isinstance(size, (int, float)):
                trace["marker"] = {**trace["marker"], "size": size * 1.3}
            if (trace.get("textfont") or {}).get("size") is not None or "text" in (trace.get("mode") or ""):
                trace["textfont"] = {**(trace.get("textfont") or {}), "size": tick}
        elif kind == "bar" and (trace.get("text") is not None or trace.get("texttemplate")):
            trace["textfont"] = {**(trace.get("textfont") or {}), "size": tick}
    if lay.get("height"):
        lay["height"] = int(lay["height"] * 1.25)
    return figure(data, lay)


def _colorbar(owner: dict, big: dict) -> dict:
    """``owner``'s colour bar with the presenter's fonts merged in (a title given as a string kept)."""
    bar = dict(owner.get("colorbar") or {})
    if isinstance(bar.get("title"), str):
        bar["title"] = {"text": bar["title"]}
    return merged(bar, **big)


def sentence_ticks(senses: Sequence[str | None]) -> list[str]:
    """Short y tick labels S1…Sn, each after its sense label in the sense's colour (HTML for plotly).

    Long sentence labels squeeze a chart to a strip on a phone; the full sentences go in the hover label and
    in a table under the chart. Sense names are escaped here.
    """
    colors = sense_color_map(senses)
    if not any(senses):
        return [f"S{i + 1}" for i in range(len(senses))]
    return [
        f"<span style='color:{colors[s]}'>{esc(s or '–')} ▍</span>S{i + 1}" for i, s in enumerate(senses)
    ]


# Heatmaps of every pair of sentences: at 500 sentences, n x n hover strings and cell numbers were 15 s of CPU
# and 65 MB sent to the browser on every rerun, so a large set gets neither, and its tick labels are thinned.
MAX_TICK_LABELS = 40  # tick labels on one axis, at most
CELL_TEXT_MAX = 14  # write the cosine into each cell up to this many sentences
HOVER_MAX = 120  # above this many sentences a cell's hover names its row and column, not both sentences


def thin(values: list, max_labels: int) -> list:
    """Every k-th of ``values``, the first included, k as small as leaves at most ``max_labels`` of them."""
    if len(values) <= max_labels:
        return values
    step = int(np.ceil(len(values) / max_labels))
    return values[::step]


def heatmap_hover(n: int, names: Sequence[str], what: str) -> dict:
    """Hover of an (n, n) cosine heatmap whose cells are ``names[row]`` x ``names[column]`` (escaped): both
    names up to HOVER_MAX sentences, the row and column numbers beyond (n x n strings are costly to send)."""
    if n > HOVER_MAX:
        return {"hovertemplate": f"row %{{y}}, column %{{x}}<br>{what} %{{z:.3f}}<extra></extra>"}
    return {
        "customdata": [[[names[r], names[c]] for c in range(n)] for r in range(n)],
        "hovertemplate": f"%{{customdata[0]}}<br>%{{customdata[1]}}<br>{what} %{{z:.3f}}<extra></extra>",
    }


def cell_numbers(m: np.ndarray, max_rows: int = CELL_TEXT_MAX) -> dict:
    """Each cell's value written in it (two decimals) up to ``max_rows`` rows, else nothing."""
    if len(m) > max_rows:
        return {}
    return {"text": [[f"{v:.2f}" for v in row] for row in m], "texttemplate": "%{text}"}


def subplot_grid(
    rows: int,
    cols: int,
    *,
    h_space: float | None = None,
    v_space: float | None = None,
    col_widths: Sequence[float] | None = None,
    row_heights: Sequence[float] | None = None,
    titles: Sequence[str] = (),
    shared_x: bool = False,
    shared_y: bool = False,
) -> dict:
    """The axes of a ``rows`` x ``cols`` grid of panels as a layout dict, laid out as plotly's make_subplots
    does (row 1 at the top; spacing, widths and heights as fractions of the figure), without its cost.

    Panel k = r * cols + c (0-based, row-major) draws on axes ``grid_axes(k)``: "x"/"y", "x2"/"y2", ….
    ``titles`` (one per panel, in that order; empty = none) become annotations above the panels;
    ``shared_x`` ties each column's x axes to its bottom panel (tick labels only there), ``shared_y`` each
    row's y axes to its first panel (tick labels only there). Merge axis settings into the returned dicts.
    """
    h = 0.2 / cols if h_space is None else h_space
    v = 0.3 / rows if v_space is None else v_space
    cw = list(col_widths) if col_widths is not None else [1.0] * cols
    rh = list(row_heights) if row_heights is not None else [1.0] * rows
    widths = [(1 - h * (cols - 1)) * w / sum(cw) for w in cw]
    heights = [(1 - v * (rows - 1)) * w / sum(rh) for w in rh]
    layout: dict = {}
    annotations = []
    for r in range(rows):
        y1 = 1 - sum(heights[:r]) - r * v
        for c in range(cols):
            k = r * cols + c
            xa, ya = grid_axes(k)
            x0 = sum(widths[:c]) + c * h
            xaxis: dict = {"domain": _domain(x0, x0 + widths[c]), "anchor": ya}
            yaxis: dict = {"domain": _domain(y1 - heights[r], y1), "anchor": xa}
            if shared_x and r < rows - 1:
                xaxis |= {"matches": grid_axes((rows - 1) * cols + c)[0], "showticklabels": False}
            if shared_y and c > 0:
                yaxis |= {"matches": grid_axes(r * cols)[1], "showticklabels": False}
            layout[f"xaxis{xa[1:]}"] = xaxis
            layout[f"yaxis{ya[1:]}"] = yaxis
            if k < len(titles) and titles[k]:
                annotations.append(
                    {"text": titles[k], "x": sum(xaxis["domain"]) / 2, "y": yaxis["domain"][1], "xref": "paper", "yref": "paper",
                     "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 16}}  # fmt: skip
                )
    if annotations:
        layout["annotations"] = annotations
    return layout


def _domain(lo: float, hi: float) -> list[float]:
    """An axis domain inside [0, 1] (sums of fractions can miss 0 or 1 by a rounding error)."""
    return [min(max(round(lo, 12), 0.0), 1.0), min(max(round(hi, 12), 0.0), 1.0)]


def grid_axes(k: int) -> tuple[str, str]:
    """The x and y axis references ("x", "y"; "x2", "y2"; …) of panel k (0-based) of :func:`subplot_grid`."""
    suffix = "" if k == 0 else str(k + 1)
    return f"x{suffix}", f"y{suffix}"


def labelled_line(x, y, *, text: list[str], name: str, hovertemplate: str, color: str, width: float = 3) -> dict:
    """A thick line with markers and each value written above its point (``text``), as a trace dict."""
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "lines+markers+text",
        "text": text,
        "textposition": "top center",
        "cliponaxis": False,  # the first label, half outside the plot on a phone, is not cut
        "line": {"color": color, "width": width},
        "name": name,
        "hovertemplate": hovertemplate,
    }


def level_line(x0: float, x1: float, y: float, *, name: str, hovertemplate: str, color: str, width: float = 1.5,
               dash: str = "dot", showlegend: bool = True) -> dict:  # fmt: skip
    """A floor drawn level from ``x0`` to ``x1`` at ``y`` (an even spread, the commonest sense's share), as a
    trace dict: unlike a shape, the legend names it and it has a hover."""
    return {
        "type": "scatter",
        "x": [x0, x1],
        "y": [y, y],
        "mode": "lines",
        "name": name,
        "line": {"color": color, "width": width, "dash": dash},
        "hovertemplate": hovertemplate,
        **({} if showlegend else {"showlegend": False}),
    }
