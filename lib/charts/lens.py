"""Logit lens chart (pages/lens.py): the probability of the words a learner names, as the next token, per layer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import SENSE_COLORS, base_layout, esc, figure

__all__ = ["lens_word_chart"]

FLOOR = 1e-7  # probabilities below this are drawn at it (a log axis has no 0)


def lens_word_chart(word_probs: np.ndarray, words: Sequence[str], top_probs: np.ndarray, *, title: str) -> go.Figure:
    """Lines per layer on a log axis: each named word's probability as the next token, and the top token's.

    word_probs: (K, w) from ``LogitLens.word_probs``; words: the w labels; top_probs: (K,) the most probable
    token's probability after each layer (grey, for scale). K = num_hidden_states (x = 0..K-1).
    """
    K = int(np.asarray(top_probs).shape[0])
    x = list(range(K))
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": np.maximum(np.asarray(top_probs, dtype=float), FLOOR),
            "mode": "lines",
            "name": "the top guess",
            "line": {"color": "#7F7F7F", "width": 2, "dash": "dot"},
            "hovertemplate": "layer %{x}: top guess %{y:.2%}<extra></extra>",
        }
    ]
    for k, word in enumerate(words):
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": np.maximum(np.asarray(word_probs[:, k], dtype=float), FLOOR),
                "mode": "lines+markers",
                "name": esc(word),
                "line": {"color": SENSE_COLORS[k % len(SENSE_COLORS)], "width": 3},
                "hovertemplate": f"layer %{{x}}: “{esc(word)}” %{{y:.2e}}<extra></extra>",
            }
        )
    layout = base_layout(title=esc(title), height=420)
    layout |= {
        "xaxis": {"title": {"text": "layer (0 = input)"}},
        "yaxis": {"type": "log", "title": {"text": "probability as the next word"}, "exponentformat": "power"},
        "legend": {"orientation": "h", "y": -0.25, "x": 0},
    }
    return figure(traces, layout)
