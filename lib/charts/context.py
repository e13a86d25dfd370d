"""Figures for "What moves the word": ranked shifts, a words x layers strip, attention vs effect, an edit.

Builders take plain arrays and labels (from :mod:`lib.context`) and return a ``plotly.graph_objects.Figure``.
Word labels carry their position ("4 · the"), so a word that occurs twice gets two bars.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import CONTEXT_COLOR, SENSE_COLORS, SEQUENTIAL, apply_layout, sense_color_map

__all__ = ["attention_vs_effect", "edit_by_layer", "shift_bars", "shift_strip", "word_bars", "word_labels"]

BAR_COLOR = SENSE_COLORS[0]
ATTENTION_COLOR = SENSE_COLORS[1]
TARGET_COLOR = SENSE_COLORS[4]


def _esc(text: object) -> str:
    """Plotly reads a little HTML in labels and hover text: show user words literally."""
    return html.escape(str(text), quote=False)


def word_labels(words: Sequence[str]) -> list[str]:
    """Unique, escaped labels: '1 · We', '2 · sat', … (position in the list of context words)."""
    return [f"{j + 1} · {_esc(w)}" for j, w in enumerate(words)]


def _finite(a) -> np.ndarray:
    return np.nan_to_num(np.asarray(a, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)


def shift_bars(
    words: Sequence[str],
    shift: np.ndarray,
    attention: np.ndarray | None = None,
    *,
    title: str = "",
) -> go.Figure:
    """Horizontal bars of how far masking each word moves the target (largest on top); when ``attention``
    is given, a second panel on the right shows the target's attention to the same words, in the same rows.

    shift: (n_words,) 1 - cosine at one layer; attention: (n_words,) at the same layer, or None.
    """
    s = _finite(shift)
    labels = word_labels(words)
    order = list(np.argsort(-s, kind="stable"))
    y = [labels[j] for j in order]
    cols = 1 if attention is None else 2
    fig = make_subplots(
        rows=1,
        cols=cols,
        shared_yaxes=True,
        column_widths=[0.62, 0.38] if cols == 2 else [1.0],
        horizontal_spacing=0.04,
    )
    fig.add_trace(
        go.Bar(
            x=s[order],
            y=y,
            orientation="h",
            name="shift when masked",
            marker_color=BAR_COLOR,
            text=[f"{v:.3f}" for v in s[order]],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="masking <b>%{y}</b><br>shift %{x:.4f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    top_s = float(max(s.max(initial=0.0), 1e-6))
    fig.update_xaxes(title_text="shift (1 − cos)", range=[0, top_s * 1.2], row=1, col=1)
    if attention is not None:
        a = _finite(attention)
        fig.add_trace(
            go.Bar(
                x=a[order],
                y=y,
                orientation="h",
                name="target's attention",
                marker_color=ATTENTION_COLOR,
                text=[f"{v:.2f}" for v in a[order]],
                textposition="outside",
                cliponaxis=False,
                hovertemplate="attention to <b>%{y}</b>: %{x:.3f}<extra></extra>",
                showlegend=False,
            ),
            row=1,
            col=2,
        )
        top_a = float(max(a.max(initial=0.0), 1e-6))
        fig.update_xaxes(
            title_text="attention", range=[0, top_a * 1.3], row=1, col=2
        )
    fig.update_yaxes(autorange="reversed", type="category")
    return apply_layout(fig, title=title, height=int(min(900, max(320, 26 * len(words) + 160))))


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
    labels = word_labels(words)
    fig = go.Figure(
        go.Bar(
            x=v,
            y=labels,
            orientation="h",
            marker_color=color,
            text=[f"{x:.3f}" for x in v],
            textposition="outside",
            hovertemplate="<b>%{y}</b>: %{x:.4f}<extra></extra>",
        )
    )
    top = float(max(v.max(initial=0.0), 1e-6))
    fig.update_layout(
        xaxis={"title": axis_title, "range": [0, top * 1.25]},
        yaxis={"autorange": "reversed", "type": "category"},
    )
    return apply_layout(fig, title=title, height=int(min(900, max(300, 26 * len(words) + 140))))


def shift_strip(
    words: Sequence[str], shift: np.ndarray, layer_names: Sequence[str], *, title: str = ""
) -> go.Figure:
    """Words (in sentence order) x layers heatmap of the shift: where each word starts to matter.

    shift: (num_layers + 1, n_words).
    """
    z = _finite(shift)
    labels = word_labels(words)
    fig = go.Figure(
        go.Heatmap(
            z=z.astype(np.float32),
            x=labels,
            y=list(layer_names),
            colorscale=SEQUENTIAL,
            zmin=0.0,
            colorbar={"title": {"text": "shift"}},
            hovertemplate="masking <b>%{x}</b><br>%{y}: shift %{z:.4f}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(xaxis={"type": "category", "tickangle": -45}, yaxis={"type": "category"})
    return apply_layout(fig, title=title, height=int(120 + 38 * z.shape[0] + 60))


def attention_vs_effect(
    words: Sequence[str],
    attention: np.ndarray,
    shift: np.ndarray,
    correlation: np.ndarray,
    *,
    layer: int,
    title: str = "",
) -> go.Figure:
    """Left: each word's attention from the target (x) against the shift its masking causes (y) at
    ``layer`` (1..L). Right: Spearman's rank correlation of the two, layer by layer (-1..1).

    attention, shift: (n_words,) at ``layer``; correlation: (num_layers,) for layers 1..L (NaN = undefined).
    """
    a, s = _finite(attention), _finite(shift)
    labels = word_labels(words)
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        horizontal_spacing=0.12,
        subplot_titles=(f"Layer {layer}: attention vs shift", "Rank correlation per layer"),
    )
    fig.add_trace(
        go.Scatter(
            x=a,
            y=s,
            mode="markers+text",
            text=[_esc(w) for w in words],
            textposition="top center",
            customdata=labels,
            marker={"size": 10, "color": BAR_COLOR},
            hovertemplate="<b>%{customdata}</b><br>attention %{x:.3f}<br>shift %{y:.4f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    rho = np.asarray(correlation, dtype=np.float64)
    layers = np.arange(1, len(rho) + 1)
    fig.add_trace(
        go.Scatter(
            x=layers,
            y=[None if not np.isfinite(r) else float(r) for r in rho],
            mode="lines+markers",
            line={"color": ATTENTION_COLOR, "width": 3},
            marker={"size": [14 if k == layer else 8 for k in layers]},
            hovertemplate="layer %{x}: Spearman ρ = %{y:.2f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.add_hline(y=0, line={"color": CONTEXT_COLOR, "dash": "dot"}, row=1, col=2)
    fig.update_xaxes(title_text="target's attention to the word (mean over heads)", row=1, col=1)
    fig.update_yaxes(title_text="shift when masked (1 − cosine)", row=1, col=1)
    fig.update_xaxes(title_text="layer", dtick=1, row=1, col=2)
    fig.update_yaxes(title_text="Spearman ρ", range=[-1.05, 1.05], row=1, col=2)
    return apply_layout(fig, title=title, height=460)


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
    fig = make_subplots(
        rows=2 if with_senses else 1,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.65, 0.35] if with_senses else [1.0],
        vertical_spacing=0.08,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=c,
            mode="lines+markers+text",
            text=[f"{v:.3f}" for v in c],
            textposition="top center",
            line={"color": BAR_COLOR, "width": 3},
            name="cosine(edited, original)",
            hovertemplate="%{x}: cosine %{y:.4f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    low = float(min(c.min(initial=1.0), 0.9))
    fig.update_yaxes(title_text="cosine with the original", range=[low - 0.05, 1.03], row=1, col=1)
    if with_senses:
        colors = sense_color_map(list(sense_names))
        rows = (("original", nearest_before), ("edited", nearest_after))
        for name in sense_names:
            xs, ys = [], []
            for row_name, nearest in rows:
                for k, sense in enumerate(nearest):
                    if sense == name:
                        xs.append(x[k])
                        ys.append(row_name)
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="markers",
                    marker={"size": 22, "symbol": "square", "color": colors.get(name, CONTEXT_COLOR)},
                    name=f"nearest sense: {_esc(name)}",
                    hovertemplate="%{y} sentence, %{x}: nearest to " + _esc(name) + "<extra></extra>",
                ),
                row=2,
                col=1,
            )
        fig.update_yaxes(
            type="category", categoryorder="array", categoryarray=["edited", "original"], row=2, col=1
        )
        fig.update_layout(legend={"orientation": "h", "y": -0.15})
    fig.update_xaxes(type="category")
    return apply_layout(fig, title=title, height=480 if with_senses else 360)
