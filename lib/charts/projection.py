"""Figures for the Projections page: one projection in 2-D or 3-D, and small multiples across layers.

Points are coloured AND shaped by sense (colour-blind safe), numbered like the sentences elsewhere, and
the hover shows the whole sentence (escaped: plotly's hover text understands a little HTML). Optional
context points (the other word pieces) are drawn small and grey underneath.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    CONTEXT_COLOR,
    base_layout,
    figure,
    grid_axes,
    group_senses,
    sense_color_map,
    subplot_grid,
)
from lib.charts.common import esc as escape
from lib.charts.common import finite as _finite

SYMBOLS_2D = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down")
SYMBOLS_3D = ("circle", "square", "diamond", "cross", "x", "circle-open", "square-open", "diamond-open")
NO_LABEL = "no label"
MAX_POINT_LABELS = 40  # above this many points the sentence numbers are left to the hover


def wrap_hover(text: str, width: int = 60, max_lines: int = 5) -> str:
    """Escape user text for a plotly hover and wrap it into short lines."""
    lines = textwrap.wrap(str(text), width=width) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] += " …"
    return "<br>".join(escape(line) for line in lines)


def _groups(senses: Sequence[str | None]) -> list[tuple[str | None, list[int]]]:
    """Indices per sense, in order of first appearance."""
    order: dict[str | None, list[int]] = {}
    for i, s in enumerate(senses):
        order.setdefault(s or None, []).append(i)
    return list(order.items())


def _points(C: np.ndarray, idx, **kw) -> dict:
    """A scatter trace dict of the rows ``idx`` of ``C`` (n, 2) or (n, 3): a 2-D or a 3-D scatter."""
    trace = {"type": "scatter3d" if C.shape[1] == 3 else "scatter", "x": C[idx, 0], "y": C[idx, 1]}
    if C.shape[1] == 3:
        trace["z"] = C[idx, 2]
    return trace | kw


def _sense_marker(color: str, g: int, size: int, *, dims: int = 2) -> dict:
    """Sense group g's marker: its colour and shape, with a white rim."""
    symbols = SYMBOLS_3D if dims == 3 else SYMBOLS_2D
    return {"size": size, "color": color, "symbol": symbols[g % len(symbols)], "line": {"width": 1, "color": "white"}}


def projection_scatter(
    coords: np.ndarray,
    senses: Sequence[str | None],
    hover: Sequence[str],
    point_text: Sequence[str],
    *,
    context: np.ndarray | None = None,
    context_hover: Sequence[str] = (),
    axis_titles: Sequence[str] = (),
    title: str | None = None,
    equal_axes: bool = True,
) -> go.Figure:
    """Scatter of the target's points in 2-D or 3-D.

    coords: (n, 2) or (n, 3); senses, hover, point_text: length n (hover = the sentence, point_text =
    its number). context: (m, same dims) grey points with `context_hover` (m texts), or None.
    axis_titles: e.g. ("PC1 (31% of variance)", "PC2 (12%)"). equal_axes keeps one unit the same length
    on every axis, so distances on screen are honest (matters for PCA).
    """
    C = _finite(coords)
    dims = C.shape[1]
    senses = group_senses(senses)
    colors = sense_color_map(senses)
    traces = []
    if context is not None and len(context):
        X = _finite(context)
        traces.append(
            _points(
                X,
                slice(None),
                mode="markers",
                name="other word pieces",
                hovertext=[wrap_hover(t) for t in context_hover] if context_hover else [""] * len(X),
                hovertemplate="%{hovertext}<extra>context</extra>",
                marker={"size": 3 if dims == 3 else 6, "color": CONTEXT_COLOR, "opacity": 0.6},
            )
        )
    for g, (sense, idx) in enumerate(_groups(senses)):
        name = escape(sense) if sense else NO_LABEL
        trace = _points(
            C,
            idx,
            mode="markers+text" if len(C) <= MAX_POINT_LABELS else "markers",
            name=name,
            text=[escape(str(point_text[i])) for i in idx],
            hovertext=[wrap_hover(hover[i]) for i in idx],
            hovertemplate=f"<b>{name}</b> · sentence %{{text}}<br>%{{hovertext}}<extra></extra>",
            marker=_sense_marker(colors[sense], g, 7 if dims == 3 else 13, dims=dims),
            textposition="top center",
        )
        if dims == 2:
            trace["textfont"] = {"size": 11, "color": "#333333"}
        traces.append(trace)
    titles = [escape(t) for t in axis_titles] + [""] * (dims - len(axis_titles))
    layout = base_layout(title=escape(title) if title else None, height=640 if dims == 3 else 560)
    if dims == 3:
        layout["scene"] = {
            "xaxis": {"title": {"text": titles[0]}},
            "yaxis": {"title": {"text": titles[1]}},
            "zaxis": {"title": {"text": titles[2]}},
            "aspectmode": "data" if equal_axes else "cube",
        }
    else:
        layout["xaxis"] = {"title": {"text": titles[0]}, "zeroline": False}
        layout["yaxis"] = {"title": {"text": titles[1]}, "zeroline": False}
        if equal_axes:
            layout["yaxis"] |= {"scaleanchor": "x", "scaleratio": 1}
    # the legend under the plot: beside it, it would take a third of a phone's width
    layout["legend"] = {"title": {"text": ""}, "itemsizing": "constant", "orientation": "h", "yanchor": "top",
                        "y": -0.14 if dims == 2 else 0.0, "x": 0}  # fmt: skip
    return figure(traces, layout)


PANEL_TITLE_SIZE = 12  # px; a line of a panel title should stay under ~80 px (a phone's panel, 4 in a row)


def projection_small_multiples(
    coords_per_layer: Sequence[np.ndarray],
    senses: Sequence[str | None],
    hover: Sequence[str],
    point_text: Sequence[str],
    panel_titles: Sequence[str],
    *,
    cols: int = 4,
    title: str | None = None,
) -> go.Figure:
    """One small 2-D panel per layer, same colours and shapes as `projection_scatter`.

    coords_per_layer: K arrays (n, 2) (first two columns are used). Each panel has its own scale
    (a layer's spread is not comparable across panels for UMAP/t-SNE); tick labels are hidden.
    """
    K = len(coords_per_layer)
    cols = max(1, min(cols, K))
    rows = math.ceil(K / cols)
    layout = base_layout(title=escape(title) if title else None, height=260 * rows + 110)
    # a title's lines ("\n") are drawn as lines, in a smaller font: on a phone a panel of four in a row is
    # ~80 px wide, and one line of 16-px text ran into the next panel's title
    lines = [[escape(part) for part in t.split("\n")] for t in panel_titles]
    top = max((len(t) for t in lines), default=1)
    layout |= subplot_grid(
        rows,
        cols,
        titles=["<br>".join(t) for t in lines],
        h_space=0.03,
        v_space=(0.12 + 0.03 * (top - 1)) / max(1, rows - 1) if rows > 1 else 0.05,
    )
    for note in layout["annotations"]:
        note["font"] = {"size": PANEL_TITLE_SIZE}
    layout["margin"]["t"] += 15 * (top - 1)
    layout["legend"] = {"title": {"text": ""}, "orientation": "h", "y": -0.08, "x": 0}
    for key in layout:
        if key.startswith(("xaxis", "yaxis")):
            layout[key] |= {"showticklabels": False, "zeroline": False}
    senses = group_senses(senses)
    colors = sense_color_map(senses)
    groups = _groups(senses)
    traces = []
    for k, coords in enumerate(coords_per_layer):
        C = _finite(coords)[:, :2]
        xa, ya = grid_axes(k)
        for g, (sense, idx) in enumerate(groups):
            name = escape(sense) if sense else NO_LABEL
            traces.append(
                _points(
                    C,
                    idx,
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    marker=_sense_marker(colors[sense], g, 9),
                    text=[escape(str(point_text[i])) for i in idx],
                    hovertext=[wrap_hover(hover[i]) for i in idx],
                    hovertemplate=f"<b>{name}</b> · sentence %{{text}}<br>%{{hovertext}}<extra></extra>",
                    xaxis=xa,
                    yaxis=ya,
                )
            )
        # explicit ranges with a margin, so no marker is cut at a panel's edge
        for axis, vals in ((f"xaxis{xa[1:]}", C[:, 0]), (f"yaxis{ya[1:]}", C[:, 1])):
            lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 1.0)
            pad = 0.12 * (hi - lo) if hi > lo else 1.0
            layout[axis]["range"] = [lo - pad, hi + pad]
    return figure(traces, layout)


def explained_variance_titles(ratios: Sequence[float] | None, dims: int, prefix: str = "PC") -> list[str]:
    """Axis titles like 'PC1 (31% of variance)'; plain 'dimension 1' when there are no ratios."""
    if ratios is None:
        return [f"dimension {i + 1}" for i in range(dims)]
    r = _finite(ratios)
    return [f"{prefix}{i + 1} ({r[i]:.0%} of variance)" for i in range(dims)]


def empty_map(note: str, *, height: int = 320) -> go.Figure:
    """A map with no points yet and ``note`` (plain text, escaped here) in its middle: the class board's map
    before it has the three sentences a projection needs, drawn so that it fills in place when they come."""
    trace = {"type": "scatter", "x": [], "y": [], "mode": "markers", "name": "no sentences yet", "hoverinfo": "skip",
             "showlegend": False}  # fmt: skip
    layout = base_layout(height=height)
    layout["xaxis"] = {"visible": False, "range": [-1, 1]}
    layout["yaxis"] = {"visible": False, "range": [-1, 1]}
    layout["annotations"] = [{"text": escape(note), "x": 0, "y": 0, "showarrow": False, "font": {"size": 16}}]
    return figure([trace], layout)
