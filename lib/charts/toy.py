"""Figures for the toy attention calculator: 2-D vectors as arrows from the origin.

`vector_arrows` draws every token's input row (thin arrow, open circle) and its row after attention (thick
arrow, filled circle, label with a prime: cat′), joined by a dotted line, so the learner sees how far context
pulled each vector and towards whom. `warmup_arrows` draws the course lesson's "base vector + context shift".
Both use equal axis scales, so lengths and angles on screen are the true ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import CONTEXT_COLOR, SENSE_COLORS, base_layout, figure
from lib.charts.common import esc as _safe

__all__ = ["token_colors", "vector_arrows", "warmup_arrows"]

_BASE_COLOR = "#555555"


def token_colors(n: int) -> list[str]:
    """One colour per token, in order (the shared colour-blind-safe palette, repeating after 8)."""
    return [SENSE_COLORS[i % len(SENSE_COLORS)] for i in range(n)]


def _fmt(v: Sequence[float]) -> str:
    return "[" + ", ".join(f"{x:.3g}" for x in v) + "]"


_POSITIONS = {  # angle of the label seen from its point (degrees) -> plotly textposition
    0: "middle right", 45: "top right", 90: "top center", 135: "top left",
    180: "middle left", 225: "bottom left", 270: "bottom center", 315: "bottom right",
}


def _free_side(point: np.ndarray, avoid: Sequence[np.ndarray]) -> int:
    """The label angle (a key of _POSITIONS) around `point` farthest from the directions in `avoid`.

    A tip's label should not sit on its own arrow shaft (direction -point) nor on the dotted line to its
    partner, so both are passed as directions to avoid.
    """
    dirs = [float(np.degrees(np.arctan2(v[1], v[0]))) for v in avoid if float(np.hypot(v[0], v[1])) > 1e-9]
    if not dirs:
        return 45

    def gap(angle: float) -> float:
        return min(abs((angle - d + 180) % 360 - 180) for d in dirs)

    return max(_POSITIONS, key=lambda a: (gap(a), -a))


def _neighbours(point: np.ndarray, tips: np.ndarray, span: float) -> list[np.ndarray]:
    """Directions from `point` to other tips closer than a quarter of the plot, for labels to avoid."""
    deltas = tips - point
    dist = np.hypot(deltas[:, 0], deltas[:, 1])
    return [d for d, r in zip(deltas, dist, strict=True) if 1e-9 < r < 0.25 * span]


def _arrow(tip: Sequence[float], color: str, width: float, start: Sequence[float] = (0.0, 0.0)) -> dict:
    return {
        "x": float(tip[0]),
        "y": float(tip[1]),
        "ax": float(start[0]),
        "ay": float(start[1]),
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "text": "",
        "showarrow": True,
        "arrowhead": 2,
        "arrowsize": 1.1,
        "arrowwidth": width,
        "arrowcolor": color,
    }


def _equal_axes(points: np.ndarray, x_title: str, y_title: str, pad: float = 0.18) -> dict:
    """Square ranges that include the origin and every point, with room for labels; 1 unit = 1 unit.

    Returns the layout's ``xaxis`` and ``yaxis`` (light grid on a white plot).
    """
    pts = np.vstack([points.reshape(-1, 2), [[0.0, 0.0]]])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = float(max((hi - lo).max(), 1e-9))
    pad = pad * span
    center = (lo + hi) / 2
    half = span / 2 + pad
    (x0, y0), (x1, y1) = (center - half).tolist(), (center + half).tolist()
    common = {"zeroline": True, "zerolinecolor": "#999", "zerolinewidth": 1.5, "constrain": "domain",
              "gridcolor": "#e5e5e5"}  # fmt: skip
    return {
        "xaxis": {"range": [x0, x1], "title": {"text": x_title}, **common},
        "yaxis": {"range": [y0, y1], "title": {"text": y_title}, **common,
                  "scaleanchor": "x", "scaleratio": 1},  # fmt: skip
        "plot_bgcolor": "white",
    }


# A label beside a point must fit the plot on a 390-px phone, where the arrows' plot is 264-273 px wide (measured)
PHONE_PLOT_PX = 264
LABEL_PX_PER_CHAR = 6.8  # 14-px labels in Source Sans (its lower-case letters average ~6.6 px)
LABEL_GAP_PX = 12  # from the point's centre to the label's near end
MAX_WIDENING = 1.5  # the range grows to at most this times its width (labels that need more are long words)


def _room_for_labels(x0: float, x1: float, right: Sequence[tuple[float, int]], left: Sequence[tuple[float, int]]):
    """An x range ``(x0, x1)`` widened until each label fits beside its point on a phone's plot.

    ``right`` / ``left``: (x of the point, characters of its label) for labels drawn to its right / left. A label
    needs the share ``f`` of the plot's width that its pixels are of :data:`PHONE_PLOT_PX`: x1 - x >= f (x1 - x0).
    Labels on both sides depend on each other through the range's width; the range grows by at most
    :data:`MAX_WIDENING` (two long labels facing each other could otherwise need any width).
    """
    lo, hi = x0, x1
    for _ in range(50):  # converges when the labels' shares add up to less than 1; else stopped by the limit
        before = (x0, x1)
        for x, chars in right:
            f = min(0.95, (chars * LABEL_PX_PER_CHAR + LABEL_GAP_PX) / PHONE_PLOT_PX)
            x1 = max(x1, (x - f * x0) / (1 - f))
        for x, chars in left:
            f = min(0.95, (chars * LABEL_PX_PER_CHAR + LABEL_GAP_PX) / PHONE_PLOT_PX)
            x0 = min(x0, (x - f * x1) / (1 - f))
        if x1 - x0 > MAX_WIDENING * (hi - lo) or max(before[0] - x0, x1 - before[1]) <= 1e-9 * (x1 - x0):
            break
    if x1 - x0 > MAX_WIDENING * (hi - lo):  # each side keeps its share of the growth the limit allows
        s = (MAX_WIDENING - 1) * (hi - lo) / ((x1 - x0) - (hi - lo))
        x0, x1 = lo - s * (lo - x0), hi + s * (x1 - hi)
    return x0, x1


def _point(x: Sequence[float], y: Sequence[float], **kw) -> dict:
    """A scatter trace dict whose hover shows its ``hovertext`` only."""
    return {"type": "scatter", "x": [float(v) for v in x], "y": [float(v) for v in y], "hoverinfo": "text", **kw}


ARROWS_MARGIN = (80, 74)  # px left and below: tick labels such as "0.5" and the titles "dimension 1", "dimension 2"


def vector_arrows(
    inputs: np.ndarray,
    outputs: np.ndarray,
    labels: Sequence[str],
    *,
    input_name: str = "input X",
    output_name: str = "after attention",
    dims: tuple[int, int] = (0, 1),
    title: str = "",
    height: int = 560,
) -> go.Figure:
    """Each token's input and output vector as arrows from the origin, in the plane of two dimensions.

    inputs, outputs: (n, d) with d >= 2; only columns `dims` are drawn. labels: n token labels.
    """
    inputs = np.asarray(inputs, dtype=float)
    outputs = np.asarray(outputs, dtype=float)
    n = inputs.shape[0]
    if inputs.ndim != 2 or outputs.shape[0] != n or len(labels) != n or min(inputs.shape[1], outputs.shape[1]) < 2:
        raise ValueError(f"need two (n, d >= 2) arrays and n labels; got {inputs.shape}, {outputs.shape}, {len(labels)}")
    a, b = dims
    xin, xout = inputs[:, [a, b]], outputs[:, [a, b]]
    colors = token_colors(n)
    traces = []
    annotations = []
    span = float(np.ptp(np.vstack([xin, xout, [[0.0, 0.0]]]), axis=0).max()) or 1.0
    tips = np.vstack([xin, xout])
    for i, label in enumerate(labels):
        lab, col = _safe(label), colors[i]
        if np.linalg.norm(xin[i]) > 1e-12:
            annotations.append(_arrow(xin[i], col, 1.5) | {"opacity": 0.55})
        if np.linalg.norm(xout[i]) > 1e-12:
            annotations.append(_arrow(xout[i], col, 3.5))
        # each label away from its own arrow shaft and from the dotted line to its partner
        move = xout[i] - xin[i]
        in_angle = _free_side(xin[i], [-xin[i], move, *_neighbours(xin[i], tips, span)])
        avoid_out = [-xout[i], -move, *_neighbours(xout[i], tips, span)]
        if np.linalg.norm(move) < 0.08 * span:  # the two tips (nearly) coincide: keep the labels apart
            rad = np.radians(in_angle)
            avoid_out.append(np.array([np.cos(rad), np.sin(rad)]))
        out_angle = _free_side(xout[i], avoid_out)
        traces.append(
            _point(
                [xin[i, 0], xout[i, 0]],
                [xin[i, 1], xout[i, 1]],
                mode="lines+markers+text",
                line={"color": col, "width": 1.5, "dash": "dot"},
                marker={"symbol": ["circle-open", "circle"], "size": [11, 12], "color": col, "line": {"width": 2}},
                text=[lab, lab + "′"],
                textposition=[_POSITIONS[in_angle], _POSITIONS[out_angle]],
                textfont={"color": col, "size": 15},
                hovertext=[f"{lab} · {input_name} {_fmt(xin[i])}", f"{lab}′ · {output_name} {_fmt(xout[i])}"],
                name=lab,
                showlegend=False,
            )
        )
    # Legend entries for the two kinds of arrow (the token is told by colour and label).
    for name, symbol in ((f"{input_name} (thin arrow, open circle)", "circle-open"),
                         (f"{output_name} (thick arrow, filled circle, label′)", "circle")):  # fmt: skip
        traces.append(
            {"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": name,
             "marker": {"symbol": symbol, "size": 11, "color": _BASE_COLOR, "line": {"width": 2}}}  # fmt: skip
        )
    layout = base_layout(title=_safe(title) if title else None, height=height)
    layout |= _equal_axes(np.vstack([xin, xout]), f"dimension {a + 1}", f"dimension {b + 1}")
    layout |= {
        "annotations": annotations,
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0.0,
                   "title": {"text": ""}},  # fmt: skip
        # room for the axes' labels and titles from the start: plotly's automargin, left to find it, drew this
        # chart four times each time the calculator changed (ui.plotly_look sizes other charts' margins, not equal
        # axes'). Wider tick labels (large numbers) still push the margin: one more draw, never a cut label.
        "margin": {**layout["margin"], "l": ARROWS_MARGIN[0], "b": ARROWS_MARGIN[1]},
    }
    return figure(traces, layout)


def warmup_arrows(
    words: Sequence[str],
    contexts: Sequence[str],
    bases: np.ndarray,
    results: np.ndarray | None,
    *,
    references: dict[str, Sequence[float]] | None = None,
    height: int = 520,
) -> go.Figure:
    """The lesson's "base vector + context shift": grey base arrows, coloured contextual arrows.

    words, contexts: m row labels; bases: (m, 2) base vectors; results: (m, 2) base + shift, with NaN rows
    where the shift is not filled in yet (only the base arrow is drawn). references: fixed words drawn as
    grey diamonds (e.g. money, river) so the learner sees which way a context pushes.
    """
    bases = np.asarray(bases, dtype=float).reshape(-1, 2)
    m = bases.shape[0]
    results = np.full((m, 2), np.nan) if results is None else np.asarray(results, dtype=float).reshape(-1, 2)
    colors = token_colors(m)
    traces = []
    annotations = []
    seen_bases: set[tuple[str, float, float]] = set()
    beside: dict[str, list[tuple[float, int]]] = {"right": [], "left": []}  # labels beside their tips
    for i in range(m):
        word, ctx = _safe(words[i]), _safe(contexts[i])
        key = (word, float(bases[i, 0]), float(bases[i, 1]))
        if key not in seen_bases:
            seen_bases.add(key)
            annotations.append(_arrow(bases[i], _BASE_COLOR, 1.5) | {"opacity": 0.6})
            traces.append(
                _point(
                    [bases[i, 0]], [bases[i, 1]], mode="markers+text", text=[word], textposition="top right",
                    marker={"symbol": "circle-open", "size": 11, "color": _BASE_COLOR, "line": {"width": 2}},
                    textfont={"color": _BASE_COLOR, "size": 14}, hovertext=[f"{word} (base) {_fmt(bases[i])}"],
                    showlegend=False,
                )  # fmt: skip
            )
        if np.isfinite(results[i]).all():
            col = colors[i]
            side = "left" if results[i, 0] < bases[i, 0] else "right"
            beside[side].append((float(results[i, 0]), len(str(words[i])) + len(str(contexts[i])) + 3))
            annotations.append(_arrow(results[i], col, 3))
            traces.append(
                _point(
                    [bases[i, 0], results[i, 0]], [bases[i, 1], results[i, 1]], mode="lines+markers+text",
                    line={"color": col, "dash": "dot", "width": 1.5},
                    marker={"size": [1, 12], "color": col},
                    text=["", f"{word} | {ctx}"],
                    textposition=["top center", f"middle {side}"],
                    textfont={"color": col, "size": 14},
                    hovertext=["", f"{word} in a {ctx} context {_fmt(results[i])}"],
                    name=f"{word} | {ctx}", showlegend=False,
                )  # fmt: skip
            )
    ref_pts = []
    for name, vec in (references or {}).items():
        v = np.asarray(vec, dtype=float)
        ref_pts.append(v)
        traces.append(
            _point(
                [v[0]], [v[1]], mode="markers+text", text=[_safe(name)], textposition="top center",
                marker={"symbol": "diamond", "size": 12, "color": CONTEXT_COLOR, "line": {"width": 1, "color": "#777"}},
                textfont={"color": "#555", "size": 13}, hovertext=[f"{_safe(name)} {_fmt(v)}"], showlegend=False,
            )  # fmt: skip
        )
    finite = results[np.isfinite(results).all(axis=1)]
    layout = base_layout(height=height)
    # room for a tip's label beside it ("bank | finance", ~95 px): on a phone the plot is ~250 px wide
    layout |= _equal_axes(np.vstack([bases, finite, *ref_pts]), "dimension 1", "dimension 2", pad=0.42)
    layout["xaxis"]["range"] = list(_room_for_labels(*layout["xaxis"]["range"], beside["right"], beside["left"]))
    layout |= {"annotations": annotations, "showlegend": False}
    return figure(traces, layout)
