"""Figures for the controls: a probe against its shuffled-label control, and two models on one axis.

Builders take arrays and names and return a ``plotly.graph_objects.Figure``; titles and names are
escaped here (model names can be typed by a learner).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    SENSE_COLORS,
    band_from_zero,
    base_layout,
    esc,
    figure,
    hline,
    layer_dtick,
    layer_labels,
    merged,
)
from lib.charts.layers import accuracy_line, majority_line

PROBE_COLOR = SENSE_COLORS[0]
CONTROL_COLOR = "#7F7F7F"
CHANCE_COLOR = "#444444"
# blue: first model (or curve), vermillion: second, grey: a third (a null drawn beside two curves)
MODEL_COLORS = (SENSE_COLORS[0], SENSE_COLORS[4], CONTROL_COLOR)


def probe_chart(
    names: Sequence[str],
    accuracy: np.ndarray,
    shuffled: np.ndarray,
    shuffled_high: np.ndarray,
    chance: float,
    *,
    title: str,
) -> go.Figure:
    """Probe accuracy per layer, the shuffled-label control (mean line and band up to its 95th
    percentile) and the majority-sense rate. names: K layer names; arrays: (K,) in [0, 1]."""
    x = list(range(len(names)))
    traces = [
        band_from_zero(
            np.asarray(shuffled_high, dtype=float),
            name="null band (shuffled labels, up to 95th percentile)",
            fillcolor="rgba(127,127,127,0.18)",
        ),
        {
            "type": "scatter",
            "x": x,
            "y": np.asarray(shuffled, dtype=float),
            "mode": "lines+markers",
            "line": {"color": CONTROL_COLOR, "dash": "dot", "width": 2},
            "name": "null: same probe, shuffled labels (mean)",
            "hovertemplate": "layer %{x}: shuffled labels %{y:.1%}<extra></extra>",
        },
        accuracy_line(
            x, accuracy, name="probe: logistic regression (cross-validated)", what="probe accuracy", color=PROBE_COLOR
        ),
        majority_line(chance, len(x) - 0.7, color=CHANCE_COLOR, width=1.5),
    ]
    layout = merged(
        base_layout(title=esc(title), height=420),
        xaxis={"title": {"text": "layer"}, "tickvals": x, "ticktext": layer_labels(names)},
        yaxis={"title": {"text": "share of held-out sentences right"}, "range": [0, 1.08], "tickformat": ".0%"},
        legend={"orientation": "h", "y": -0.2},
    )
    return figure(traces, layout)


def two_model_chart(
    curves: Sequence[tuple[str, np.ndarray, str]],
    *,
    title: str,
    y_title: str,
    relative: bool,
    zero_line: bool = False,
    y_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Curves of two (or more) models on one axis. curves: (model label, values (L_m + 1,), dash) per
    line; with ``relative`` the x axis is layer / number of layers (for models of different depths).
    Lines of the same model share a colour; ``dash`` tells curves of one model apart."""
    traces = []
    models: list[str] = []
    for label, values, dash in curves:
        model = label.split(" · ")[0]
        if model not in models:
            models.append(model)
        color = MODEL_COLORS[models.index(model) % len(MODEL_COLORS)]
        v = np.asarray(values, dtype=float)
        L = len(v) - 1
        traces.append(
            {
                "type": "scatter",
                "x": (np.arange(L + 1) / max(L, 1)).tolist() if relative else list(range(L + 1)),
                "y": v,
                "mode": "lines+markers",
                "line": {"color": color, "dash": dash, "width": 3},
                "name": esc(label),
                "customdata": np.arange(L + 1),
                "hovertemplate": f"{esc(label)}<br>layer %{{customdata}}: %{{y:.3f}}<extra></extra>",
            }
        )
    max_layer = max((len(v) - 1 for _, v, _ in curves), default=0)
    layout = merged(
        base_layout(title=esc(title), height=440),
        xaxis={
            "title": {"text": "relative depth (layer / number of layers)" if relative else "layer"},
            **({"tickformat": ".0%"} if relative else {"dtick": layer_dtick(max_layer + 1)}),
        },
        yaxis={"title": {"text": y_title}, **({"range": list(y_range)} if y_range is not None else {})},
        legend={"orientation": "h", "y": -0.22},
        shapes=[hline(0, {"color": "#999999", "width": 1})] if zero_line else [],
    )
    return figure(traces, layout)
