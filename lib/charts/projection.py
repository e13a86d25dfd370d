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
from plotly.subplots import make_subplots

from lib.charts.common import CONTEXT_COLOR, apply_layout, group_senses, sense_color_map
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
    fig = go.Figure()
    if context is not None and len(context):
        X = _finite(context)
        ch = [wrap_hover(t) for t in context_hover] if context_hover else [""] * len(X)
        common = {
            "mode": "markers",
            "name": "other word pieces",
            "hovertext": ch,
            "hovertemplate": "%{hovertext}<extra>context</extra>",
        }
        if dims == 3:
            fig.add_trace(
                go.Scatter3d(
                    x=X[:, 0],
                    y=X[:, 1],
                    z=X[:, 2],
                    marker={"size": 3, "color": CONTEXT_COLOR, "opacity": 0.6},
                    **common,
                )
            )
        else:
            fig.add_trace(
                go.Scatter(
                    x=X[:, 0], y=X[:, 1], marker={"size": 6, "color": CONTEXT_COLOR, "opacity": 0.6}, **common
                )
            )
    for g, (sense, idx) in enumerate(_groups(senses)):
        name = escape(sense) if sense else NO_LABEL
        hov = [wrap_hover(hover[i]) for i in idx]
        txt = [escape(str(point_text[i])) for i in idx]
        common = {
            "mode": "markers+text" if len(C) <= MAX_POINT_LABELS else "markers",
            "name": name,
            "text": txt,
            "hovertext": hov,
            "hovertemplate": f"<b>{name}</b> · sentence %{{text}}<br>%{{hovertext}}<extra></extra>",
        }
        if dims == 3:
            fig.add_trace(
                go.Scatter3d(
                    x=C[idx, 0],
                    y=C[idx, 1],
                    z=C[idx, 2],
                    marker={
                        "size": 7,
                        "color": colors[sense],
                        "symbol": SYMBOLS_3D[g % len(SYMBOLS_3D)],
                        "line": {"width": 1, "color": "white"},
                    },
                    textposition="top center",
                    **common,
                )
            )
        else:
            fig.add_trace(
                go.Scatter(
                    x=C[idx, 0],
                    y=C[idx, 1],
                    marker={
                        "size": 13,
                        "color": colors[sense],
                        "symbol": SYMBOLS_2D[g % len(SYMBOLS_2D)],
                        "line": {"width": 1, "color": "white"},
                    },
                    textposition="top center",
                    textfont={"size": 11, "color": "#333333"},
                    **common,
                )
            )
    titles = list(axis_titles) + [""] * (dims - len(axis_titles))
    if dims == 3:
        fig.update_layout(
            scene={
                "xaxis_title": escape(titles[0]),
                "yaxis_title": escape(titles[1]),
                "zaxis_title": escape(titles[2]),
                "aspectmode": "data" if equal_axes else "cube",
            }
        )
        height = 640
    else:
        fig.update_xaxes(title_text=escape(titles[0]), zeroline=False)
        fig.update_yaxes(title_text=escape(titles[1]), zeroline=False)
        if equal_axes:
            fig.update_yaxes(scaleanchor="x", scaleratio=1)
        height = 560
    # the legend under the plot: beside it, it would take a third of a phone's width
    legend_y = -0.14 if dims == 2 else 0.0
    fig.update_layout(
        legend={"title_text": "sense", "itemsizing": "constant", "orientation": "h", "yanchor": "top", "y": legend_y, "x": 0}
    )
    return apply_layout(fig, title=escape(title) if title else None, height=height)


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
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[escape(t) for t in panel_titles],
        horizontal_spacing=0.03,
        vertical_spacing=0.12 / max(1, rows - 1) if rows > 1 else 0.05,
    )
    senses = group_senses(senses)
    colors = sense_color_map(senses)
    groups = _groups(senses)
    for k, coords in enumerate(coords_per_layer):
        C = _finite(coords)
        r, c = divmod(k, cols)
        for g, (sense, idx) in enumerate(groups):
            name = escape(sense) if sense else NO_LABEL
            fig.add_trace(
                go.Scatter(
                    x=C[idx, 0],
                    y=C[idx, 1],
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    marker={
                        "size": 9,
                        "color": colors[sense],
                        "symbol": SYMBOLS_2D[g % len(SYMBOLS_2D)],
                        "line": {"width": 1, "color": "white"},
                    },
                    text=[escape(str(point_text[i])) for i in idx],
                    hovertext=[wrap_hover(hover[i]) for i in idx],
                    hovertemplate=f"<b>{name}</b> · sentence %{{text}}<br>%{{hovertext}}<extra></extra>",
                ),
                row=r + 1,
                col=c + 1,
            )
        # explicit ranges with a margin, so no marker is cut at a panel's edge
        for axis, vals in (("x", C[:, 0]), ("y", C[:, 1])):
            lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 1.0)
            pad = 0.12 * (hi - lo) if hi > lo else 1.0
            update = fig.update_xaxes if axis == "x" else fig.update_yaxes
            update(range=[lo - pad, hi + pad], row=r + 1, col=c + 1)
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    fig.update_layout(legend={"title_text": "sense", "orientation": "h", "y": -0.08, "x": 0})
    return apply_layout(fig, title=escape(title) if title else None, height=260 * rows + 110)


def explained_variance_titles(ratios: Sequence[float] | None, dims: int, prefix: str = "PC") -> list[str]:
    """Axis titles like 'PC1 (31% of variance)'; plain 'dimension 1' when there are no ratios."""
    if ratios is None:
        return [f"dimension {i + 1}" for i in range(dims)]
    r = _finite(ratios)
    return [f"{prefix}{i + 1} ({r[i]:.0%} of variance)" for i in range(dims)]
