"""Figures only the guided lesson draws. The lesson reuses the other pages' figures where they fit
(`lib.charts.home`, `lib.charts.attention`, `lib.charts.layers`, `lib.charts.projection`); these are the
views made for one question each:

- `centroid_scatter`: each sentence's cosine with two sense averages (the "apple" exercise);
- `readout_lines`: sense-readout accuracy per layer for several presets ("deeper is always better");
- `pooling_panels`: same- vs different-topic cosine per layer for [CLS] and mean pooling;
- `pair_strip`: every sentence pair's cosine, same-sense and different-sense rows ("polysemy is solved").

Every builder takes plain arrays and labels and returns a `plotly.graph_objects.Figure`. Labels are
escaped here, because plotly reads a little HTML in hover and tick text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import (
    DIFFERENT_COLOR,
    NO_SENSE_COLOR,
    SAME_COLOR,
    SENSE_COLORS,
    apply_layout,
    band_from_zero,
    sense_color_map,
)
from lib.charts.common import esc as _esc
from lib.charts.common import finite as _finite

HIGHLIGHT_COLOR = "#000000"
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "hexagon")


def centroid_scatter(
    x: np.ndarray,
    y: np.ndarray,
    senses: Sequence[str],
    hover: Sequence[str],
    numbers: Sequence[str],
    sense_x: str,
    sense_y: str,
    *,
    highlight: Sequence[int] = (),
    title: str | None = None,
) -> go.Figure:
    """One point per sentence: cosine with ``sense_x``'s average (across) and ``sense_y``'s (up).

    x, y: (m,); senses, hover (the sentence), numbers (a short tag drawn by the point): length m.
    highlight: positions (0..m-1) to ring in black, e.g. sentences read as the other sense.
    The diagonal y = x is the border: below it a sentence is nearer ``sense_x``.
    """
    xs, ys = _finite(x), _finite(y)
    colors = sense_color_map(senses)
    fig = go.Figure()
    lo = float(min(xs.min(), ys.min()))
    hi = float(max(xs.max(), ys.max()))
    pad = 0.05 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line={"color": NO_SENSE_COLOR, "dash": "dash", "width": 2},
            name="equally close to both",
            hoverinfo="skip",
        )
    )
    for k, sense in enumerate(dict.fromkeys(senses)):
        idx = [i for i, s in enumerate(senses) if s == sense]
        fig.add_trace(
            go.Scatter(
                x=xs[idx],
                y=ys[idx],
                mode="markers+text",
                text=[_esc(numbers[i]) for i in idx],
                textposition="top center",
                marker={"color": colors[sense], "size": 14, "symbol": SYMBOLS[k % len(SYMBOLS)]},
                name=_esc(sense),
                customdata=[_esc(hover[i]) for i in idx],
                hovertemplate=(
                    "%{customdata}<br>"
                    + f"{_esc(sense_x)} average: %{{x:.3f}}<br>{_esc(sense_y)} average: %{{y:.3f}}<extra></extra>"
                ),
            )
        )
    if highlight:
        h = list(highlight)
        fig.add_trace(
            go.Scatter(
                x=xs[h],
                y=ys[h],
                mode="markers",
                marker={"size": 26, "color": "rgba(0,0,0,0)", "line": {"color": HIGHLIGHT_COLOR, "width": 3}},
                name="read as the other sense",
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(title_text=f"cosine with the average '{_esc(sense_x)}'", range=[lo, hi])
    fig.update_yaxes(title_text=f"cosine with the average '{_esc(sense_y)}'", range=[lo, hi], scaleanchor="x")
    fig.update_layout(legend={"orientation": "h", "y": -0.18, "x": 0})
    return apply_layout(fig, title=title, height=560)


def readout_lines(
    names: Sequence[str],
    accuracies: Sequence[np.ndarray],
    majority: Sequence[float],
    *,
    title: str | None = None,
    chance: Sequence[np.ndarray | None] | None = None,
) -> go.Figure:
    """Accuracy per layer for several presets, one line each (the best layer is left for the reader to find).

    names: one name per preset; accuracies: per preset (L+1,) in [0, 1]; majority: per preset the share of
    its commonest sense (drawn dashed in the same colour); chance: per preset (L+1,) the 95th percentile of
    the readout on shuffled labels (lib.similarity.readout_chance), shaded from 0 in the preset's colour.
    """
    if not (len(names) == len(accuracies) == len(majority)):
        raise ValueError("one name, one accuracy curve and one majority share per preset")
    fig = go.Figure()
    for k, top in enumerate(chance or []):
        if top is None:
            continue
        t = _finite(top)
        x = list(range(len(t)))
        color = SENSE_COLORS[k % len(SENSE_COLORS)]
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        fig.add_trace(
            band_from_zero(
                t,
                name=f"{_esc(names[k])}: chance band (shuffled labels, 95th percentile)",
                fillcolor=f"rgba({r},{g},{b},0.10)",
                line={"width": 1, "color": f"rgba({r},{g},{b},0.45)", "dash": "dash"},
            )
        )
    for k, (name, acc, maj) in enumerate(zip(names, accuracies, majority, strict=True)):
        a = _finite(acc)
        color = SENSE_COLORS[k % len(SENSE_COLORS)]
        x = list(range(len(a)))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=a,
                mode="lines+markers",
                line={"color": color, "width": 3},
                marker={"symbol": SYMBOLS[k % len(SYMBOLS)], "size": 10},
                name=_esc(name),
                hovertemplate=f"{_esc(name)}, layer %{{x}}: %{{y:.0%}} read correctly<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[x[0], x[-1]],
                y=[maj, maj],
                mode="lines",
                line={"color": color, "width": 1.5, "dash": "dot"},
                name=f"{_esc(name)}: always the commonest sense",
                showlegend=False,
                hovertemplate=f"{_esc(name)}: always the commonest sense, {maj:.0%}<extra></extra>",
            )
        )
    n_layers = max(len(a) for a in accuracies) if accuracies else 1
    fig.update_xaxes(title_text="layer (0 = input)", tickmode="linear", dtick=1, range=[-0.3, n_layers - 0.7])
    fig.update_yaxes(title_text="read correctly", tickformat=".0%", range=[0, 1.08])
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "x": 0})
    return apply_layout(fig, title=title, height=460)


def pooling_panels(
    cls_same: np.ndarray,
    cls_different: np.ndarray,
    mean_same: np.ndarray,
    mean_different: np.ndarray,
    *,
    title: str | None = None,
) -> go.Figure:
    """Two panels, [CLS] and mean pooling: mean cosine of same-topic and different-topic pairs per layer.

    Each argument is (L+1,). Both panels share the y-axis, so the gaps can be compared by eye.
    """
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=("[CLS] vector", "mean of the word pieces"),
    )
    for col, (same, diff) in enumerate(((cls_same, cls_different), (mean_same, mean_different)), start=1):
        s, d = _finite(same), _finite(diff)
        x = list(range(len(s)))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=d,
                mode="lines+markers",
                line={"color": DIFFERENT_COLOR, "width": 3, "dash": "dash"},
                marker={"symbol": "square", "size": 9},
                name="different-topic pairs",
                legendgroup="diff",
                showlegend=col == 1,
                hovertemplate="layer %{x}: different topics %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=s,
                mode="lines+markers",
                line={"color": SAME_COLOR, "width": 3},
                marker={"symbol": "circle", "size": 9},
                fill="tonexty",
                fillcolor="rgba(0,158,115,0.15)",
                name="same-topic pairs (shaded: the gap)",
                legendgroup="same",
                showlegend=col == 1,
                hovertemplate="layer %{x}: same topic %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text="layer", tickmode="linear", dtick=1, row=1, col=col)
    fig.update_yaxes(title_text="mean cosine", row=1, col=1)
    fig.update_layout(legend={"orientation": "h", "y": -0.22, "x": 0})
    apply_layout(fig, title=title, height=460)
    if title:  # room for the title above the two panel titles
        fig.update_layout(margin={"t": 110})
    return fig


def pair_strip(
    cosines: np.ndarray,
    same: np.ndarray,
    hover: Sequence[str],
    *,
    highlight: dict[int, str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Every pair's cosine as a dot, in two rows: same-sense pairs and different-sense pairs.

    cosines: (P,); same: (P,) bool; hover: P texts (the two sentences); highlight: {pair index: label}
    for pairs to ring and name on the chart. Dots are spread a little vertically (a fixed pattern, no
    randomness) so that equal values stay visible.
    """
    c = _finite(cosines)
    m = np.asarray(same, dtype=bool)
    if len(c) != len(m) or len(hover) != len(c):
        raise ValueError("one cosine, one same/different flag and one hover text per pair")
    rows = {True: 1.0, False: 0.0}
    offsets = ((np.arange(len(c)) * 7) % 9 - 4) / 40.0  # deterministic jitter in [-0.1, 0.1]
    y = np.array([rows[bool(s)] for s in m]) + offsets
    fig = go.Figure()
    for is_same, color, name, symbol in (
        (True, SAME_COLOR, "same-sense pairs", "circle"),
        (False, DIFFERENT_COLOR, "different-sense pairs", "square"),
    ):
        idx = np.flatnonzero(m == is_same)
        fig.add_trace(
            go.Scatter(
                x=c[idx],
                y=y[idx],
                mode="markers",
                marker={"color": color, "size": 11, "symbol": symbol, "opacity": 0.8},
                name=name,
                customdata=[_esc(hover[i]) for i in idx],
                hovertemplate="%{customdata}<br>cosine %{x:.3f}<extra></extra>",
            )
        )
    for i, label in (highlight or {}).items():
        fig.add_trace(
            go.Scatter(
                x=[c[i]],
                y=[y[i]],
                mode="markers+text",
                text=[_esc(label)],
                textposition="top center",
                marker={"size": 24, "color": "rgba(0,0,0,0)", "line": {"color": HIGHLIGHT_COLOR, "width": 3}},
                showlegend=False,
                hovertemplate=f"{_esc(label)}: cosine %{{x:.3f}}<extra></extra>",
            )
        )
    if m.any():
        fig.add_vline(
            x=float(c[m].min()),
            line={"color": SAME_COLOR, "dash": "dot", "width": 2},
            annotation_text="least similar same-sense pair",
            annotation_position="top left",
        )
    fig.update_yaxes(
        tickmode="array", tickvals=[0, 1], ticktext=["different sense", "same sense"], range=[-0.45, 1.6]
    )
    fig.update_xaxes(title_text="cosine")
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "x": 0})
    return apply_layout(fig, title=title, height=380)
