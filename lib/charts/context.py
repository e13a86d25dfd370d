"""Figures for "What moves the word": ranked shifts, a words x layers strip, attention vs effect, an edit.

Builders take plain arrays and labels (from :mod:`lib.stats.context`) and return a ``plotly.graph_objects.Figure``.
Word labels carry their position ("4 · the"), so a word that occurs twice gets two bars.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    CONTEXT_COLOR,
    SENSE_COLORS,
    SEQUENTIAL,
    base_layout,
    figure,
    grid_axes,
    hline,
    labelled_line,
    layer_dtick,
    sense_color_map,
    subplot_grid,
)
from lib.charts.common import esc as _esc
from lib.charts.common import finite as _finite

__all__ = [
    "attention_vs_shift",
    "correlation_by_layer",
    "edit_by_layer",
    "shift_bars",
    "shift_strip",
    "word_bars",
    "word_labels",
]

BAR_COLOR = SENSE_COLORS[0]
ATTENTION_COLOR = SENSE_COLORS[1]
TARGET_COLOR = SENSE_COLORS[4]


def word_labels(words: Sequence[str]) -> list[str]:
    """Unique, escaped labels: '1 · We', '2 · sat', … (position in the list of context words)."""
    return [f"{j + 1} · {_esc(w)}" for j, w in enumerate(words)]


def _hbar(values: np.ndarray, y: list[str], *, name: str, color: str, fmt: str, hover: str, axes: int = 0) -> dict:
    """One horizontal bar per row label, its value written beside it (a trace dict on panel ``axes``)."""
    xa, ya = grid_axes(axes)
    return {
        "type": "bar",
        "x": values,
        "y": y,
        "orientation": "h",
        "name": name,
        "marker": {"color": color},
        "text": [format(v, fmt) for v in values],
        "textposition": "outside",
        "cliponaxis": False,
        "hovertemplate": hover,
        "showlegend": False,
        "xaxis": xa,
        "yaxis": ya,
    }


def shift_bars(
    words: Sequence[str],
    shift: np.ndarray,
    attention: np.ndarray | None = None,
    *,
    title: str = "",
    edit: str = "masked",
) -> go.Figure:
    """Horizontal bars of how far masking each word moves the target (largest on top); when ``attention``
    is given, a second panel on the right shows the target's attention to the same words, in the same rows.

    shift: (n_words,) 1 - cosine at one layer; attention: (n_words,) at the same layer, or None; edit: what was
    done to each word ("masked", "deleted", "replaced by [UNK]"), for the hover text.
    """
    s = _finite(shift)
    labels = word_labels(words)
    order = list(np.argsort(-s, kind="stable"))
    y = [labels[j] for j in order]
    cols = 1 if attention is None else 2
    layout = base_layout(title=title, height=int(min(900, max(320, 26 * len(words) + 160))))
    layout |= subplot_grid(
        1, cols, shared_y=True, col_widths=[0.62, 0.38] if cols == 2 else None, h_space=0.04
    )
    traces = [
        _hbar(s[order], y, name=f"shift when {_esc(edit)}", color=BAR_COLOR, fmt=".3f",
              hover=f"<b>%{{y}}</b> {_esc(edit)}<br>shift %{{x:.4f}}<extra></extra>")  # fmt: skip
    ]
    top_s = float(max(s.max(initial=0.0), 1e-6))
    layout["xaxis"] |= {"title": {"text": "shift (1 − cos)"}, "range": [0, top_s * 1.2]}
    if attention is not None:
        a = _finite(attention)
        traces.append(
            _hbar(a[order], y, name="target's attention", color=ATTENTION_COLOR, fmt=".2f",
                  hover="attention to <b>%{y}</b>: %{x:.3f}<extra></extra>", axes=1)  # fmt: skip
        )
        top_a = float(max(a.max(initial=0.0), 1e-6))
        layout["xaxis2"] |= {"title": {"text": "attention"}, "range": [0, top_a * 1.3]}
    for k in range(cols):
        layout[f"yaxis{grid_axes(k)[1][1:]}"] |= {"autorange": "reversed", "type": "category"}
    return figure(traces, layout)


def word_bars(
    words: Sequence[str],
    values: np.ndarray,
    *,
    axis_title: str,
    color: str = ATTENTION_COLOR,
    title: str = "",
) -> go.Figure:
    """One horizontal bar per context word, in sentence order (e.g. the target's attention to each word)."""
    v = _finite(values)
    trace = _hbar(v, word_labels(words), name="", color=color, fmt=".3f",
                  hover="<b>%{y}</b>: %{x:.4f}<extra></extra>")  # fmt: skip
    trace["cliponaxis"] = True
    top = float(max(v.max(initial=0.0), 1e-6))
    layout = base_layout(title=title, height=int(min(900, max(300, 26 * len(words) + 140))))
    layout |= {
        "xaxis": {"title": {"text": axis_title}, "range": [0, top * 1.25]},
        "yaxis": {"autorange": "reversed", "type": "category"},
    }
    return figure([trace], layout)


def shift_strip(
    words: Sequence[str], shift: np.ndarray, layer_names: Sequence[str], *, title: str = ""
) -> go.Figure:
    """Words (in sentence order) x layers heatmap of the shift: where each word starts to matter.

    shift: (num_layers + 1, n_words).
    """
    z = _finite(shift)
    trace = {
        "type": "heatmap",
        "z": z.astype(np.float32),
        "x": word_labels(words),
        "y": list(layer_names),
        "colorscale": SEQUENTIAL,
        "zmin": 0.0,
        "colorbar": {"title": {"text": "shift"}},
        "hovertemplate": "masking <b>%{x}</b><br>%{y}: shift %{z:.4f}<extra></extra>",
        "xgap": 1,
        "ygap": 1,
    }
    layout = base_layout(title=title, height=int(120 + 38 * z.shape[0] + 60))
    layout |= {"xaxis": {"type": "category", "tickangle": -45}, "yaxis": {"type": "category"}}
    return figure([trace], layout)


def attention_vs_shift(
    words: Sequence[str],
    attention: np.ndarray,
    shift: np.ndarray,
    *,
    layer: int,
    title: str = "",
    edit: str = "masked",
) -> go.Figure:
    """Each word's attention from the target (x) against the shift its masking causes (y) at ``layer`` (1..L).

    attention, shift: (n_words,) at ``layer``; edit: what was done to each word, for the axis title. Drawn
    beside :func:`correlation_by_layer` (two charts in two columns, stacked on a phone).
    """
    a, s = _finite(attention), _finite(shift)
    trace = {
        "type": "scatter",
        "x": a,
        "y": s,
        "mode": "markers+text",
        "text": [_esc(w) for w in words],
        "textposition": "top center",
        "cliponaxis": False,  # a word at the edge is not cut
        "customdata": word_labels(words),
        "marker": {"size": 10, "color": BAR_COLOR},
        "hovertemplate": "<b>%{customdata}</b><br>attention %{x:.3f}<br>shift %{y:.4f}<extra></extra>",
        "showlegend": False,
    }
    layout = base_layout(title=title or f"Layer {layer}: attention vs shift", height=420)
    layout["xaxis"] = {"title": {"text": "target's attention (mean over heads)"}}
    layout["yaxis"] = {"title": {"text": f"shift when {_esc(edit)} (1 − cosine)"}}
    return figure([trace], layout)


def correlation_by_layer(correlation: np.ndarray, *, layer: int, title: str = "") -> go.Figure:
    """Spearman's rank correlation of attention and shift, layer by layer (-1..1), ``layer`` (1..L) enlarged.

    correlation: (num_layers,) for layers 1..L (NaN = undefined).
    """
    rho = np.asarray(correlation, dtype=np.float64)
    layers = list(range(1, len(rho) + 1))
    trace = {
        "type": "scatter",
        "x": layers,
        "y": [None if not np.isfinite(r) else float(r) for r in rho],
        "mode": "lines+markers",
        "line": {"color": ATTENTION_COLOR, "width": 3},
        "marker": {"size": [14 if k == layer else 8 for k in layers]},
        "hovertemplate": "layer %{x}: Spearman ρ = %{y:.2f}<extra></extra>",
        "showlegend": False,
    }
    layout = base_layout(title=title or "Rank correlation per layer", height=420)
    layout["xaxis"] = {"title": {"text": "layer"}, "dtick": layer_dtick(len(layers) + 1)}
    layout["yaxis"] = {"title": {"text": "Spearman ρ"}, "range": [-1.05, 1.05]}
    layout["shapes"] = [hline(0, {"color": CONTEXT_COLOR, "dash": "dot"})]
    return figure([trace], layout)


def edit_by_layer(
    cosine: np.ndarray,
    layer_names: Sequence[str],
    nearest_before: Sequence[str] | None = None,
    nearest_after: Sequence[str] | None = None,
    sense_names: Sequence[str] = (),
    *,
    title: str = "",
) -> go.Figure:
    """The cosine between the edited and the original target vector, layer by layer (a line), and when a
    labelled set gives sense centroids, the nearest sense of each (two rows of coloured markers below).

    cosine: (num_layers + 1,); nearest_*: one sense name per layer.
    """
    c = _finite(cosine)
    x = list(layer_names)
    with_senses = nearest_before is not None and nearest_after is not None
    rows = 2 if with_senses else 1
    layout = base_layout(title=title, height=480 if with_senses else 360)
    layout |= subplot_grid(
        rows, 1, shared_x=True, row_heights=[0.65, 0.35] if with_senses else None, v_space=0.08
    )
    traces = [
        labelled_line(
            x,
            c,
            text=[f"{v:.3f}" for v in c],
            name="cosine(edited, original)",
            hovertemplate="%{x}: cosine %{y:.4f}<extra></extra>",
            color=BAR_COLOR,
        )
        | {"showlegend": False}
    ]
    low = float(min(c.min(initial=1.0), 0.9))
    layout["yaxis"] |= {"title": {"text": "cosine with the original"}, "range": [low - 0.05, 1.03]}
    if with_senses:
        colors = sense_color_map(list(sense_names))
        named = (("original", nearest_before), ("edited", nearest_after))
        for name in sense_names:
            points = [(x[k], row) for row, nearest in named for k, sense in enumerate(nearest) if sense == name]
            traces.append(
                {
                    "type": "scatter",
                    "x": [p[0] for p in points],
                    "y": [p[1] for p in points],
                    "mode": "markers",
                    "marker": {"size": 22, "symbol": "square", "color": colors.get(name, CONTEXT_COLOR)},
                    "name": f"nearest sense: {_esc(name)}",
                    "hovertemplate": "%{y} sentence, %{x}: nearest to " + _esc(name) + "<extra></extra>",
                    "xaxis": "x2",
                    "yaxis": "y2",
                }
            )
        layout["yaxis2"] |= {"type": "category", "categoryorder": "array", "categoryarray": ["edited", "original"]}
        layout["legend"] |= {"orientation": "h", "y": -0.15}
    for k in range(rows):
        layout[f"xaxis{grid_axes(k)[0][1:]}"]["type"] = "category"
    return figure(traces, layout)
