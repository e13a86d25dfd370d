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

from lib.charts.common import (
    DIFFERENT_COLOR,
    NO_SENSE_COLOR,
    SAME_COLOR,
    SENSE_COLORS,
    band_from_zero,
    base_layout,
    figure,
    grid_axes,
    layer_dtick,
    level_line,
    sense_color_map,
    subplot_grid,
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
    lo = float(min(xs.min(), ys.min()))
    hi = float(max(xs.max(), ys.max()))
    pad = 0.05 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    traces = [
        {"type": "scatter", "x": [lo, hi], "y": [lo, hi], "mode": "lines", "name": "equally close to both",
         "line": {"color": NO_SENSE_COLOR, "dash": "dash", "width": 2}, "hoverinfo": "skip"}  # fmt: skip
    ]
    hover_xy = f"{_esc(sense_x)} average: %{{x:.3f}}<br>{_esc(sense_y)} average: %{{y:.3f}}<extra></extra>"
    for k, sense in enumerate(dict.fromkeys(senses)):
        idx = [i for i, s in enumerate(senses) if s == sense]
        traces.append(
            {
                "type": "scatter",
                "x": xs[idx],
                "y": ys[idx],
                "mode": "markers+text",
                "text": [_esc(numbers[i]) for i in idx],
                "textposition": "top center",
                "marker": {"color": colors[sense], "size": 14, "symbol": SYMBOLS[k % len(SYMBOLS)]},
                "name": _esc(sense),
                "customdata": [_esc(hover[i]) for i in idx],
                "hovertemplate": "%{customdata}<br>" + hover_xy,
            }
        )
    if highlight:
        h = list(highlight)
        traces.append(_ring(xs[h], ys[h], size=26, name="read as the other sense", hoverinfo="skip"))
    layout = base_layout(title=title, height=560)
    layout |= {
        "xaxis": {"title": {"text": f"cosine with the average '{_esc(sense_x)}'"}, "range": [lo, hi]},
        "yaxis": {"title": {"text": f"cosine with the average '{_esc(sense_y)}'"}, "range": [lo, hi],
                  "scaleanchor": "x"},  # fmt: skip
        "legend": {"orientation": "h", "y": -0.18, "x": 0, "title": {"text": ""}},
    }
    return figure(traces, layout)


def _ring(x, y, *, size: int, **kw) -> dict:
    """Black rings around points (a trace dict): the points a chart asks the learner to look at."""
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "markers",
        "marker": {"size": size, "color": "rgba(0,0,0,0)", "line": {"color": HIGHLIGHT_COLOR, "width": 3}},
        **kw,
    }


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
    the readout on shuffled labels (lib.stats.chance.readout_chance), shaded from 0 in the preset's colour.
    """
    if not (len(names) == len(accuracies) == len(majority)):
        raise ValueError("one name, one accuracy curve and one majority share per preset")
    traces: list = []
    for k, top in enumerate(chance or []):
        if top is None:
            continue
        color = SENSE_COLORS[k % len(SENSE_COLORS)]
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        traces.append(
            band_from_zero(
                _finite(top),
                name=f"{_esc(names[k])}: chance band (shuffled labels, 95th percentile)",
                fillcolor=f"rgba({r},{g},{b},0.10)",
                line={"width": 1, "color": f"rgba({r},{g},{b},0.45)", "dash": "dash"},
            )
        )
    for k, (name, acc, maj) in enumerate(zip(names, accuracies, majority, strict=True)):
        a = _finite(acc)
        color = SENSE_COLORS[k % len(SENSE_COLORS)]
        x = list(range(len(a)))
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": a,
                "mode": "lines+markers",
                "line": {"color": color, "width": 3},
                "marker": {"symbol": SYMBOLS[k % len(SYMBOLS)], "size": 10},
                "name": _esc(name),
                "hovertemplate": f"{_esc(name)}, layer %{{x}}: %{{y:.0%}} read correctly<extra></extra>",
            }
        )
        traces.append(
            level_line(x[0], x[-1], maj, name=f"{_esc(name)}: always the commonest sense", color=color,
                       hovertemplate=f"{_esc(name)}: always the commonest sense, {maj:.0%}<extra></extra>",
                       showlegend=False)  # fmt: skip
        )
    n_layers = max(len(a) for a in accuracies) if accuracies else 1
    layout = base_layout(title=title, height=460)
    layout |= {
        "xaxis": {"title": {"text": "layer (0 = input)"}, "tickmode": "linear", "dtick": layer_dtick(n_layers),
                  "range": [-0.3, n_layers - 0.7]},  # fmt: skip
        "yaxis": {"title": {"text": "read correctly"}, "tickformat": ".0%", "range": [0, 1.08]},
        "legend": {"orientation": "h", "y": -0.2, "x": 0, "title": {"text": ""}},
    }
    return figure(traces, layout)


def pooling_panels(
    cls_same: np.ndarray,
    cls_different: np.ndarray,
    mean_same: np.ndarray,
    mean_different: np.ndarray,
    *,
    title: str | None = None,
    single: str = "[CLS] vector",
) -> go.Figure:
    """Two panels, one word piece's vector and mean pooling: mean cosine of same-topic and different-topic pairs
    per layer.

    Each argument is (L+1,) (the ``cls_*`` ones: the single vector's, [CLS] or a left-to-right model's last
    word piece, named by ``single``). Both panels share the y-axis, so the gaps can be compared by eye.
    """
    layout = base_layout(title=title, height=460)
    layout |= subplot_grid(
        # short panel titles: on a phone each panel is ~150 px wide
        1, 2, shared_y=True, h_space=0.06, titles=(_esc(single), "mean of word pieces")
    )
    layout["legend"] |= {"orientation": "h", "y": -0.22, "x": 0}
    if title:  # room for the title above the two panel titles
        layout["margin"]["t"] = 110
    lines = (  # drawn in this order: the same-topic line fills down to the different-topic one
        ("diff", DIFFERENT_COLOR, "dash", "square", "different-topic pairs", "different topics", {}),
        ("same", SAME_COLOR, "solid", "circle", "same-topic pairs (shaded: the gap)", "same topic",
         {"fill": "tonexty", "fillcolor": "rgba(0,158,115,0.15)"}),
    )  # fmt: skip
    traces = []
    for k, pair in enumerate(((cls_same, cls_different), (mean_same, mean_different))):
        values = {"same": _finite(pair[0]), "diff": _finite(pair[1])}
        xa, ya = grid_axes(k)
        for group, color, dash, symbol, name, hover, extra in lines:
            v = values[group]
            traces.append(
                {
                    "type": "scatter",
                    "x": list(range(len(v))),
                    "y": v,
                    "mode": "lines+markers",
                    "line": {"color": color, "width": 3, "dash": dash},
                    "marker": {"symbol": symbol, "size": 9},
                    "name": name,
                    "legendgroup": group,
                    "showlegend": k == 0,
                    "hovertemplate": f"layer %{{x}}: {hover} %{{y:.3f}}<extra></extra>",
                    "xaxis": xa,
                    "yaxis": ya,
                    **extra,
                }
            )
        layout[f"xaxis{xa[1:]}"] |= {"title": {"text": "layer"}, "tickmode": "linear", "dtick": layer_dtick(len(v))}
    layout["yaxis"]["title"] = {"text": "mean cosine"}
    return figure(traces, layout)


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
    traces = []
    for is_same, color, name, symbol in (
        (True, SAME_COLOR, "same-sense pairs", "circle"),
        (False, DIFFERENT_COLOR, "different-sense pairs", "square"),
    ):
        idx = np.flatnonzero(m == is_same)
        traces.append(
            {
                "type": "scatter",
                "x": c[idx],
                "y": y[idx],
                "mode": "markers",
                "marker": {"color": color, "size": 11, "symbol": symbol, "opacity": 0.8},
                "name": name,
                "customdata": [_esc(hover[i]) for i in idx],
                "hovertemplate": "%{customdata}<br>cosine %{x:.3f}<extra></extra>",
            }
        )
    for i, label in (highlight or {}).items():
        traces.append(
            _ring([float(c[i])], [float(y[i])], size=24, mode="markers+text", text=[_esc(label)],
                  textposition="top center", showlegend=False,
                  hovertemplate=f"{_esc(label)}: cosine %{{x:.3f}}<extra></extra>")  # fmt: skip
        )
    layout = base_layout(title=title, height=380)
    layout |= {
        "yaxis": {"tickmode": "array", "tickvals": [0, 1], "ticktext": ["different sense", "same sense"],
                  "range": [-0.45, 1.6]},  # fmt: skip
        "xaxis": {"title": {"text": "cosine"}},
        "legend": {"orientation": "h", "y": -0.25, "x": 0, "title": {"text": ""}},
    }
    if m.any():  # a vertical line at the least similar same-sense pair, named at its top left
        low = float(c[m].min())
        layout["shapes"] = [
            {"type": "line", "xref": "x", "x0": low, "x1": low, "yref": "y domain", "y0": 0, "y1": 1,
             "line": {"color": SAME_COLOR, "dash": "dot", "width": 2}}  # fmt: skip
        ]
        layout["annotations"] = [
            {"text": "least similar same-sense pair", "showarrow": False, "xref": "x", "x": low,
             "xanchor": "right", "yref": "y domain", "y": 1, "yanchor": "top"}  # fmt: skip
        ]
    return figure(traces, layout)
