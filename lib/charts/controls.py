"""Figures for the controls: a probe against its shuffled-label control, and two models on one axis.

Builders take arrays and names and return a ``plotly.graph_objects.Figure``; titles and names are
escaped here (model names can be typed by a learner).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import SENSE_COLORS, apply_layout, band_from_zero, esc

PROBE_COLOR = SENSE_COLORS[0]
CONTROL_COLOR = "#7F7F7F"
CHANCE_COLOR = "#444444"
MODEL_COLORS = (SENSE_COLORS[0], SENSE_COLORS[4])  # blue: first model, vermillion: second


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
    acc = np.asarray(accuracy, dtype=float)
    fig = go.Figure()
    fig.add_trace(
        band_from_zero(
            np.asarray(shuffled_high, dtype=float),
            name="control band (shuffled labels, up to 95th percentile)",
            fillcolor="rgba(127,127,127,0.18)",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=shuffled,
            mode="lines+markers",
            line={"color": CONTROL_COLOR, "dash": "dot", "width": 2},
            name="control: same probe, shuffled labels (mean)",
            hovertemplate="layer %{x}: shuffled labels %{y:.1%}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=acc,
            mode="lines+markers+text",
            text=[f"{v:.0%}" for v in acc],
            textposition="top center",
            line={"color": PROBE_COLOR, "width": 3},
            name="probe: logistic regression (cross-validated)",
            hovertemplate="layer %{x}: probe accuracy %{y:.1%}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[-0.3, len(x) - 0.7],
            y=[chance, chance],
            mode="lines",
            line={"color": CHANCE_COLOR, "dash": "dash", "width": 1.5},
            name=f"always the most common sense: {chance:.0%}",
            hoverinfo="skip",
        )
    )
    apply_layout(fig, title=esc(title), height=420)
    fig.update_layout(
        xaxis={"title": {"text": "layer"}, "tickvals": x, "ticktext": list(names)},
        yaxis={"title": {"text": "share of held-out sentences right"}, "range": [0, 1.08], "tickformat": ".0%"},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def two_model_chart(
    curves: Sequence[tuple[str, np.ndarray, str]],
    *,
    title: str,
    y_title: str,
    relative: bool,
    zero_line: bool = False,
) -> go.Figure:
    """Curves of two (or more) models on one axis. curves: (model label, values (L_m + 1,), dash) per
    line; with ``relative`` the x axis is layer / number of layers (for models of different depths).
    Lines of the same model share a colour; ``dash`` tells curves of one model apart."""
    fig = go.Figure()
    models: list[str] = []
    for label, values, dash in curves:
        if label.split(" · ")[0] not in models:
            models.append(label.split(" · ")[0])
        color = MODEL_COLORS[models.index(label.split(" · ")[0]) % len(MODEL_COLORS)]
        v = np.asarray(values, dtype=float)
        L = len(v) - 1
        x = (np.arange(L + 1) / max(L, 1)).tolist() if relative else list(range(L + 1))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=v,
                mode="lines+markers",
                line={"color": color, "dash": dash, "width": 3},
                name=esc(label),
                customdata=np.arange(L + 1),
                hovertemplate=f"{esc(label)}<br>layer %{{customdata}}: %{{y:.3f}}<extra></extra>",
            )
        )
    if zero_line:
        fig.add_hline(y=0, line={"color": "#999999", "width": 1})
    apply_layout(fig, title=esc(title), height=440)
    fig.update_layout(
        xaxis={
            "title": {"text": "relative depth (layer / number of layers)" if relative else "layer"},
            **({"tickformat": ".0%"} if relative else {"dtick": 1}),
        },
        yaxis={"title": {"text": y_title}},
        legend={"orientation": "h", "y": -0.22},
    )
    return fig
