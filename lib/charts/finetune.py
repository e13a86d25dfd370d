"""Figures for the Fine-tune page: the training curves, how far each layer moved, before vs after.

Builders take arrays and names and return a figure (lib.charts.common.figure); they compute nothing.
Layer axes are the app's: hidden state 0 is "emb", ℓ is "L<ℓ>" (lib.charts.layers.layer_names).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import SENSE_COLORS, base_layout, esc, figure, finite, hline, merged
from lib.charts.layers import layer_names

TRAIN_COLOR = SENSE_COLORS[0]  # blue: the training sentences
HELDOUT_COLOR = SENSE_COLORS[4]  # vermillion: the held-out sentences
BEFORE_COLOR = "#7F7F7F"  # grey: the pretrained model
AFTER_COLOR = SENSE_COLORS[2]  # bluish green: the fine-tuned model
CHANCE_COLOR = "#444444"


def _legend() -> dict:
    return {"orientation": "h", "x": 0, "y": -0.3, "xanchor": "left", "yanchor": "top", "title": {"text": ""}}


def _line(x, y, *, name: str, color: str, dash: str | None = None, fmt: str = ".3f") -> dict:
    return {
        "type": "scatter",
        "x": list(x),
        "y": finite(y).tolist(),
        "mode": "lines+markers",
        "name": name,
        "line": {"color": color, "width": 3, **({"dash": dash} if dash else {})},
        "hovertemplate": f"{name}: %{{y:{fmt}}}<extra>%{{x}}</extra>",
    }


def training_curves(
    epochs: Sequence[int],
    train: Sequence[float],
    heldout: Sequence[float],
    *,
    what: str,
    title: str,
    chance: float | None = None,
    best_epoch: int | None = None,
) -> go.Figure:
    """Per-epoch ``what`` ("loss" or "accuracy") on the training and the held-out sentences (epoch 0: the
    untrained head). ``chance``: a dashed line at the accuracy of always guessing the commonest sense;
    ``best_epoch``: a dotted line at the epoch whose weights were kept."""
    acc = what == "accuracy"
    fmt = ".0%" if acc else ".3f"
    data = [
        _line(epochs, train, name="training", color=TRAIN_COLOR, fmt=fmt),
        _line(epochs, heldout, name="held-out", color=HELDOUT_COLOR, fmt=fmt),
    ]
    shapes, notes = [], []
    if chance is not None:
        shapes.append(hline(chance, {"color": CHANCE_COLOR, "dash": "dash", "width": 1.5}))
        notes.append(
            {"x": 0, "xref": "paper", "xanchor": "left", "y": chance, "yanchor": "bottom", "showarrow": False,
             "text": "commonest sense", "font": {"size": 12, "color": CHANCE_COLOR}}  # fmt: skip
        )
    if best_epoch is not None:
        shapes.append({"type": "line", "x0": best_epoch, "x1": best_epoch, "y0": 0, "y1": 1, "yref": "paper",
                       "line": {"color": CHANCE_COLOR, "dash": "dot", "width": 1.5}})  # fmt: skip
    layout = merged(
        base_layout(title=esc(title), height=320),
        xaxis={"title": {"text": "epoch"}, "dtick": max(1, int(np.ceil(max(1, len(epochs) - 1) / 10)))},
        yaxis={"title": {"text": what}, "rangemode": "tozero",
               **({"tickformat": ".0%", "range": [0, 1.05]} if acc else {})},  # fmt: skip
        legend=_legend(),
        margin={"b": 10},
    )
    if shapes:
        layout["shapes"] = shapes
    if notes:
        layout["annotations"] = notes
    return figure(data, layout)


def layer_change_chart(cka: np.ndarray, weight_change: np.ndarray, *, title: str) -> go.Figure:
    """Per hidden state: linear CKA between the pretrained and fine-tuned vectors (1 = unchanged geometry) and
    the relative change of the layer's weights (0 = frozen). Both (L + 1,)."""
    names = layer_names(len(cka) - 1)
    data = [
        _line(names, cka, name="CKA, pretrained vs fine-tuned", color=AFTER_COLOR),
        {
            "type": "bar",
            "x": names,
            "y": finite(weight_change).tolist(),
            "name": "weight change ‖ΔW‖ / ‖W‖",
            "marker": {"color": SENSE_COLORS[1]},
            "yaxis": "y2",
            "hovertemplate": "weight change: %{y:.2e}<extra>%{x}</extra>",
        },
    ]
    top = float(np.nanmax(weight_change)) if np.size(weight_change) and np.nanmax(weight_change) > 0 else 1.0
    layout = merged(
        base_layout(title=esc(title), height=340),
        xaxis={"title": {"text": "layer"}, "type": "category"},
        yaxis={"title": {"text": "CKA"}, "range": [0, 1.05]},
        yaxis2={"title": {"text": "weight change"}, "overlaying": "y", "side": "right", "range": [0, 1.15 * top],
                "showgrid": False, "exponentformat": "e"},  # fmt: skip
        legend=_legend(),
    )
    return figure(data, layout)


def before_after_chart(
    before: np.ndarray,
    after: np.ndarray,
    *,
    title: str,
    what: str,
    percent: bool = False,
    chance: float | None = None,
) -> go.Figure:
    """One statistic per hidden state for the pretrained and the fine-tuned model (both (L + 1,))."""
    names = layer_names(len(before) - 1)
    fmt = ".0%" if percent else ".3f"
    data = [
        _line(names, before, name="pretrained", color=BEFORE_COLOR, dash="dash", fmt=fmt),
        _line(names, after, name="fine-tuned", color=AFTER_COLOR, fmt=fmt),
    ]
    layout = merged(
        base_layout(title=esc(title), height=320),
        xaxis={"title": {"text": "layer"}, "type": "category"},
        yaxis={"title": {"text": what}, **({"tickformat": ".0%", "range": [0, 1.05]} if percent else {})},
        legend=_legend(),
    )
    if chance is not None:
        layout["shapes"] = [hline(chance, {"color": CHANCE_COLOR, "dash": "dot", "width": 1.5})]
    return figure(data, layout)


def mix_weights_chart(weights: np.ndarray, gamma: float, *, title: str) -> go.Figure:
    """ELMo's learned layer mix: the softmax weight s_j of each hidden state ((L + 1,), summing to 1)."""
    names = layer_names(len(weights) - 1)
    w = finite(weights).tolist()
    data = [
        {
            "type": "bar",
            "x": names,
            "y": w,
            "text": [f"{x:.2f}" for x in w],
            "textposition": "outside",
            "cliponaxis": False,
            "marker": {"color": AFTER_COLOR},
            "name": "s_j",
            "hovertemplate": "s = %{y:.3f}<extra>%{x}</extra>",
        }
    ]
    layout = merged(
        base_layout(title=esc(f"{title} (γ = {gamma:.2f})"), height=300),
        xaxis={"title": {"text": "layer"}, "type": "category"},
        yaxis={"title": {"text": "weight s_j"}, "range": [0, max(w + [0.0]) * 1.25 + 1e-9]},
        showlegend=False,
    )
    return figure(data, layout)


def seed_chart(seeds: Sequence[int], train: Sequence[float], heldout: Sequence[float], *, title: str) -> go.Figure:
    """Training and held-out accuracy of the same recipe under each seed (bars side by side)."""
    x = [f"seed {s}" for s in seeds]
    data = [
        {"type": "bar", "x": x, "y": finite(train).tolist(), "name": "training", "marker": {"color": TRAIN_COLOR},
         "hovertemplate": "training: %{y:.0%}<extra>%{x}</extra>"},  # fmt: skip
        {"type": "bar", "x": x, "y": finite(heldout).tolist(), "name": "held-out",
         "marker": {"color": HELDOUT_COLOR}, "text": [f"{v:.0%}" for v in heldout], "textposition": "outside",
         "cliponaxis": False, "hovertemplate": "held-out: %{y:.0%}<extra>%{x}</extra>"},  # fmt: skip
    ]
    layout = merged(
        base_layout(title=esc(title), height=300),
        barmode="group",
        yaxis={"title": {"text": "accuracy"}, "tickformat": ".0%", "range": [0, 1.15]},
        legend=_legend(),
    )
    return figure(data, layout)
