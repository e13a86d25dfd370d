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
HELDOUT_COLOR = SENSE_COLORS[4]  # vermillion: the validation sentences
TEST_COLOR = SENSE_COLORS[3]  # reddish purple: the test sentences, scored once
HEAD_COLOR = SENSE_COLORS[1]  # orange: the frozen head
BEFORE_COLOR = "#7F7F7F"  # grey: the pretrained model
AFTER_COLOR = SENSE_COLORS[2]  # bluish green: the fine-tuned model
CHANCE_COLOR = "#444444"


def _legend(n_layers: int = 0) -> dict:
    """A legend under the plot; lower under a layer axis of many (rotated) tick labels, clear of its title."""
    y = -0.45 if n_layers > 12 else -0.3
    return {"orientation": "h", "x": 0, "y": y, "xanchor": "left", "yanchor": "top", "title": {"text": ""}}


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
    validation: Sequence[float],
    *,
    what: str,
    title: str,
    chance: float | None = None,
    best_epoch: int | None = None,
    test: float | None = None,
    test_epoch: int | None = None,
    head_test: float | None = None,
) -> go.Figure:
    """Per-epoch ``what`` ("loss" or "accuracy") on the training and the validation sentences (epoch 0: the
    untrained head). ``chance``: a dashed line at the accuracy of always guessing the commonest sense;
    ``best_epoch``: a dotted line at the epoch whose weights were kept; ``test``: the kept weights' one test
    score, a single marker at ``test_epoch``; ``head_test``: the frozen head's test score, a line across."""
    acc = what == "accuracy"
    fmt = ".0%" if acc else ".3f"
    data = [
        _line(epochs, train, name="training", color=TRAIN_COLOR, fmt=fmt),
        _line(epochs, validation, name="validation", color=HELDOUT_COLOR, fmt=fmt),
    ]
    if test is not None and test_epoch is not None and np.isfinite(test):
        data.append({"type": "scatter", "x": [test_epoch], "y": [float(test)], "mode": "markers", "name": "test (once)",
                     "marker": {"color": TEST_COLOR, "size": 14, "symbol": "star"},
                     "hovertemplate": f"test: %{{y:{fmt}}}<extra>epoch %{{x}}</extra>"})  # fmt: skip
    shapes, notes = [], []
    for y, label, color, dash in ((chance, "commonest sense", CHANCE_COLOR, "dash"),
                                  (head_test, "frozen head, test", HEAD_COLOR, "dashdot")):  # fmt: skip
        if y is None or not np.isfinite(y):
            continue
        shapes.append(hline(y, {"color": color, "dash": dash, "width": 1.5}))
        notes.append(
            {"x": 0, "xref": "paper", "xanchor": "left", "y": y, "yanchor": "bottom", "showarrow": False,
             "text": label, "font": {"size": 12, "color": color}}  # fmt: skip
        )
    if len(notes) == 2 and abs(notes[0]["y"] - notes[1]["y"]) < 0.08:  # two labels at one height: one above, one below
        notes[0]["yanchor"] = "top"
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


def _gaps(values) -> list:
    """Values for a line, None (a gap) where a value is undefined: CKA of vectors that do not vary is no 0."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]


def layer_change_chart(cka: np.ndarray, weight_change: np.ndarray, *, title: str,
                       floor_low: np.ndarray | None = None, floor_high: np.ndarray | None = None) -> go.Figure:  # fmt: skip
    """Per hidden state: linear CKA between the pretrained and fine-tuned vectors (1 = unchanged geometry) and
    the relative change of the layer's weights (0 = frozen). Both (L + 1,). ``floor_low`` / ``floor_high``
    ((L + 1,)): CKA's floor band at this n and d (a random pairing of the sentences), drawn as a grey band. An
    undefined CKA (NaN) is a gap in the line."""
    names = layer_names(len(cka) - 1)
    data = []
    if floor_low is not None and floor_high is not None:
        lo, hi = _gaps(floor_low), _gaps(floor_high)
        data += [
            {"type": "scatter", "x": names, "y": lo, "mode": "lines", "line": {"width": 0, "color": BEFORE_COLOR},
             "showlegend": False, "hoverinfo": "skip"},  # fmt: skip
            {"type": "scatter", "x": names, "y": hi, "mode": "lines", "line": {"width": 0, "color": BEFORE_COLOR},
             "fill": "tonexty", "fillcolor": "rgba(127,127,127,0.25)", "name": "CKA floor (random pairing)",
             "hovertemplate": "floor up to %{y:.3f}<extra>%{x}</extra>"},  # fmt: skip
        ]
    data += [
        _line(names, cka, name="CKA, pretrained vs fine-tuned", color=AFTER_COLOR) | {"y": _gaps(cka)},
        {
            "type": "bar",
            "x": names,
            "y": finite(weight_change).tolist(),
            "name": "weight change ‖ΔW‖ / ‖W‖",
            "marker": {"color": SENSE_COLORS[1]},
            "opacity": 0.45,  # the CKA line stays visible through the bars
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
        legend=_legend(len(names)),
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
        legend=_legend(len(names)),
    )
    if chance is not None:
        layout["shapes"] = [hline(chance, {"color": CHANCE_COLOR, "dash": "dot", "width": 1.5})]
    return figure(data, layout)


def mix_weights_chart(weights: np.ndarray, gamma: float, *, title: str) -> go.Figure:
    """ELMo's learned layer mix: the softmax weight s_j of each hidden state ((L + 1,), summing to 1), with a
    dashed line at 1 / (L + 1), where the weights start (uniform)."""
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
    if w:
        layout["shapes"] = [hline(1 / len(w), {"color": CHANCE_COLOR, "dash": "dash", "width": 1.5})]
    return figure(data, layout)


def seed_chart(seeds: Sequence[int], train: Sequence[float], test: Sequence[float], *, title: str,
               head_test: Sequence[float] | None = None) -> go.Figure:  # fmt: skip
    """Training and test accuracy of the same recipe under each seed (bars side by side), and the frozen head's
    test accuracy under the same seeds (``head_test``)."""
    x = [f"seed {s}" for s in seeds]
    data = [
        {"type": "bar", "x": x, "y": finite(train).tolist(), "name": "training", "marker": {"color": TRAIN_COLOR},
         "hovertemplate": "training: %{y:.0%}<extra>%{x}</extra>"},  # fmt: skip
        {"type": "bar", "x": x, "y": finite(test).tolist(), "name": "test",
         "marker": {"color": TEST_COLOR}, "text": [f"{v:.0%}" for v in finite(test)], "textposition": "outside",
         "cliponaxis": False, "hovertemplate": "test: %{y:.0%}<extra>%{x}</extra>"},  # fmt: skip
    ]
    if head_test is not None:
        data.append({"type": "bar", "x": x, "y": finite(head_test).tolist(), "name": "frozen head, test",
                     "marker": {"color": HEAD_COLOR}, "text": [f"{v:.0%}" for v in finite(head_test)],
                     "textposition": "outside", "cliponaxis": False,
                     "hovertemplate": "frozen head, test: %{y:.0%}<extra>%{x}</extra>"})  # fmt: skip
    layout = merged(
        base_layout(title=esc(title), height=300),
        barmode="group",
        yaxis={"title": {"text": "accuracy"}, "tickformat": ".0%", "range": [0, 1.15]},
        legend=_legend(),
    )
    return figure(data, layout)
