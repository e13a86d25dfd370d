"""Figures for the Attention page: heatmaps, the all-heads overview, the target's attention, special tokens.

Every builder takes plain arrays and labels (from `lib.attention`) and returns a `plotly.graph_objects.Figure`.
Attention colours are fixed to the range 0–1 in every figure, so two heatmaps can be compared by eye.
Rows are queries (the token that looks), columns are keys (the token looked at).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.attention import SpecialTokenShare, downsample_labels, pool_attention
from lib.charts.common import CONTEXT_COLOR, SENSE_COLORS, SEQUENTIAL, apply_layout, esc

__all__ = [
    "ATTENTION_COLORSCALE",
    "attention_heatmap",
    "attention_overview",
    "side_by_side_heatmaps",
    "special_token_share_chart",
    "target_attention_bars",
    "target_attention_by_layer",
]

# The app's sequential scale (perceptually uniform, colour-blind safe), always spanning 0–1.
ATTENTION_COLORSCALE = SEQUENTIAL
TARGET_COLOR = SENSE_COLORS[4]  # vermillion: the target word and the selected overview cell
OTHER_COLOR = SENSE_COLORS[0]
MAX_TICK_LABELS = 40
_CELL_TEXT_MAX_TOKENS = 14  # write the value into each cell up to this many tokens


def _safe(labels: Sequence[str]) -> list[str]:
    """Labels as plotly shows them: its hover and tick text understand a little HTML, so escape it."""
    return [esc(s) for s in labels]


def _ticks(axis_labels: list[str], max_labels: int) -> dict:
    """Axis settings that print at most `max_labels` tick labels (every row/column stays in the data)."""
    pos, text = downsample_labels(axis_labels, max_labels)
    return {"tickmode": "array", "tickvals": [axis_labels[p] for p in pos], "ticktext": text}


def _heatmap_trace(weights: np.ndarray, x: list[str], y: list[str], *, show_text: bool, **kw) -> go.Heatmap:
    trace = go.Heatmap(
        z=np.asarray(weights, dtype=np.float32),  # float32: half the bytes sent to the browser
        x=x,
        y=y,
        zmin=0.0,
        zmax=1.0,
        colorscale=ATTENTION_COLORSCALE,
        hovertemplate="query <b>%{y}</b> → key <b>%{x}</b><br>weight %{z:.4f}<extra></extra>",
        xgap=1 if len(x) <= 60 else 0,
        ygap=1 if len(y) <= 60 else 0,
        **kw,
    )
    if show_text:
        trace.update(texttemplate="%{z:.2f}", textfont={"size": 11})
    return trace


def heatmap_height(n_tokens: int) -> int:
    """Pixel height that keeps rows readable: ~24 px per token, between 360 and 900."""
    return int(min(900, max(360, 24 * n_tokens + 170)))


def attention_heatmap(
    weights: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    max_labels: int = MAX_TICK_LABELS,
    height: int | None = None,
) -> go.Figure:
    """One attention matrix as a heatmap.

    weights: (n, n), rows = queries, columns = keys, each row sums to 1.
    labels:  n unique labels (see `lib.attention.token_labels`); at most `max_labels` are printed per axis.
    The colour scale is fixed to 0–1; the exact value is in the hover text (and in the cells when small).
    """
    weights = np.asarray(weights, dtype=float)
    n = weights.shape[0]
    if weights.shape != (n, n) or len(labels) != n:
        raise ValueError(f"need an (n, n) matrix and n labels, got {weights.shape} and {len(labels)} labels")
    lab = _safe(labels)
    fig = go.Figure(
        _heatmap_trace(
            weights,
            lab,
            lab,
            show_text=n <= _CELL_TEXT_MAX_TOKENS,
            colorbar={"title": {"text": "weight"}, "thickness": 14},
        )
    )
    thinned = n > max_labels
    fig.update_xaxes(
        title_text="key: the token looked at" + (" (some labels hidden)" if thinned else ""),
        tickangle=-60 if n > 8 else 0,
        type="category",
        **_ticks(lab, max_labels),
    )
    fig.update_yaxes(
        title_text="query: the token looking",
        autorange="reversed",
        type="category",
        **_ticks(lab, max_labels),
    )
    apply_layout(fig)
    fig.update_layout(title={"text": esc(title)}, height=height or heatmap_height(n))
    return fig


def side_by_side_heatmaps(
    weights_a: np.ndarray,
    labels_a: Sequence[str],
    weights_b: np.ndarray,
    labels_b: Sequence[str],
    *,
    title_a: str,
    title_b: str,
    max_labels: int = 14,
) -> go.Figure:
    """Two sentences' attention at the same layer and head, next to each other, one shared 0–1 colour bar.

    weights_a: (n_a, n_a), weights_b: (n_b, n_b); labels as in `attention_heatmap`.
    """
    la, lb = _safe(labels_a), _safe(labels_b)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(esc(title_a), esc(title_b)),
        horizontal_spacing=0.14,
    )
    small = max(len(la), len(lb)) <= 10
    fig.add_trace(_heatmap_trace(weights_a, la, la, show_text=small, coloraxis="coloraxis"), row=1, col=1)
    fig.add_trace(_heatmap_trace(weights_b, lb, lb, show_text=small, coloraxis="coloraxis"), row=1, col=2)
    for col, lab in ((1, la), (2, lb)):
        fig.update_xaxes(type="category", tickangle=-60, row=1, col=col, **_ticks(lab, max_labels))
        fig.update_yaxes(type="category", autorange="reversed", row=1, col=col, **_ticks(lab, max_labels))
    fig.update_xaxes(title_text="key", row=1, col=1)
    fig.update_xaxes(title_text="key", row=1, col=2)
    fig.update_yaxes(title_text="query", row=1, col=1)
    apply_layout(fig)
    fig.update_layout(
        coloraxis={
            "colorscale": ATTENTION_COLORSCALE,
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"title": {"text": "weight"}, "thickness": 14},
        },
        height=heatmap_height(max(len(la), len(lb))) - 60,
    )
    return fig


def overview_outline(num_heads: int, layer: int, head: int | None) -> dict:
    """The rectangle that outlines one cell of :func:`attention_overview` (head None = the mean column).

    A plain dict, so a page can add it to a cached figure dict without rebuilding the 78 subplots.
    """
    cols = num_heads + 1
    col = num_heads if head is None else head
    ref = (layer * cols + col) + 1
    suffix = "" if ref == 1 else str(ref)
    return {
        "type": "rect",
        "xref": f"x{suffix} domain",
        "yref": f"y{suffix} domain",
        "x0": -0.06,
        "x1": 1.06,
        "y0": -0.06,
        "y1": 1.06,
        "line": {"color": TARGET_COLOR, "width": 3},
    }


def attention_overview(
    attentions: np.ndarray,
    labels: Sequence[str],
    *,
    selected: tuple[int, int | None] | None = None,
    max_tokens: int = 40,
) -> go.Figure:
    """The "model view": a small heatmap for every layer (rows) and head (columns), plus the mean over heads.

    attentions: (L, H, n, n) for one sentence. selected: (layer, head) to outline, head None = the mean column.
    Sentences longer than `max_tokens` are shown in blocks of neighbouring tokens (rows still sum to 1);
    the hover text names the tokens in each block.
    """
    att = np.asarray(attentions, dtype=float)
    num_layers, num_heads, n, _ = att.shape
    cols = num_heads + 1
    mean = att.mean(axis=1, keepdims=True)  # (L, 1, n, n)
    grid = np.concatenate([att, mean], axis=1)  # (L, H + 1, n, n)
    pooled = pool_attention(grid, max_tokens)
    lab = _safe(pooled.block_labels(list(labels)))
    # The same grid make_subplots would lay out (row 1 at the top), written as plain dicts and validated once:
    # make_subplots plus 78 add_trace calls took ~0.8 s of CPU per sentence, this ~0.1 s.
    h_space, v_space = 0.006, 0.012
    width = (1 - h_space * (cols - 1)) / cols
    height = (1 - v_space * (num_layers - 1)) / num_layers
    axis = {"showticklabels": False, "ticks": "", "showgrid": False, "type": "category"}
    layout: dict = {"annotations": []}
    traces = []
    for layer in range(num_layers):
        y1 = 1 - layer * (height + v_space)
        for h in range(cols):
            k = layer * cols + h + 1
            suffix = "" if k == 1 else str(k)
            x0 = h * (width + h_space)
            layout[f"xaxis{suffix}"] = {**axis, "domain": [x0, x0 + width], "anchor": f"y{suffix}"}
            layout[f"yaxis{suffix}"] = {**axis, "domain": [y1 - height, y1], "anchor": f"x{suffix}",
                                        "autorange": "reversed"}  # fmt: skip
            name = f"layer {layer + 1}, " + (f"head {h + 1}" if h < num_heads else "mean over heads")
            traces.append(
                {
                    "type": "heatmap",
                    "z": pooled.weights[layer, h].astype(np.float32),
                    "x": lab,
                    "y": lab,
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                    "coloraxis": "coloraxis",
                    "hovertemplate": f"{name}<br>query %{{y}} → key %{{x}}<br>weight %{{z:.3f}}<extra></extra>",
                }
            )
            if layer == 0:
                layout["annotations"].append(
                    {"text": f"H{h + 1}" if h < num_heads else "mean", "x": x0 + width / 2, "y": 1.0,
                     "xref": "paper", "yref": "paper", "xanchor": "center", "yanchor": "bottom",
                     "showarrow": False, "font": {"size": 11}}  # fmt: skip
                )
        layout["annotations"].append(
            {"text": f"L{layer + 1}", "x": 1.0, "y": y1 - height / 2, "xref": "paper", "yref": "paper",
             "xanchor": "left", "yanchor": "middle", "showarrow": False, "font": {"size": 11}}  # fmt: skip
        )
    fig = go.Figure(data=traces, layout=layout)
    if selected is not None:
        fig.add_shape(overview_outline(num_heads, *selected))
    apply_layout(fig)
    fig.update_layout(
        coloraxis={
            "colorscale": ATTENTION_COLORSCALE,
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"title": {"text": "weight"}, "thickness": 12},
        },
        height=int(70 * num_layers + 90),
        margin={"l": 20, "r": 40, "t": 50, "b": 20},
    )
    return fig


def target_attention_bars(
    attends_to: np.ndarray,
    attended_by: np.ndarray,
    labels: Sequence[str],
    target_positions: Sequence[int],
    *,
    title: str = "",
    max_labels: int = MAX_TICK_LABELS,
) -> go.Figure:
    """Two bar charts for one layer: where the target looks (top) and how much each token looks at it.

    attends_to: (n,) sums to 1; attended_by: (n,) each in 0..1; target_positions are highlighted.
    """
    lab = _safe(labels)
    n = len(lab)
    is_target = np.zeros(n, dtype=bool)
    is_target[list(target_positions)] = True
    colors = [TARGET_COLOR if t else OTHER_COLOR for t in is_target]
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=("The target attends to …", "… and is attended to by"),
    )
    fig.add_trace(
        go.Bar(
            x=lab,
            y=np.asarray(attends_to, dtype=float),
            marker_color=colors,
            hovertemplate="target → %{x}<br>weight %{y:.4f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            x=lab,
            y=np.asarray(attended_by, dtype=float),
            marker_color=colors,
            hovertemplate="%{x} → target<br>weight %{y:.4f}<extra></extra>",
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    fig.update_yaxes(range=[0, 1], title_text="weight")
    fig.update_xaxes(type="category", tickangle=-60 if n > 8 else 0, **_ticks(lab, max_labels))
    apply_layout(fig)
    fig.update_layout(
        title={"text": esc(title)},
        height=560,
        bargap=0.15,
        margin={"t": 100 if title else 50},
    )
    return fig


def target_attention_by_layer(
    attends_to_mean: np.ndarray,
    attended_by_mean: np.ndarray,
    labels: Sequence[str],
    *,
    max_labels: int = MAX_TICK_LABELS,
) -> go.Figure:
    """The target's attention in every layer (mean over heads), as two layer × token heatmaps.

    attends_to_mean: (L, n), rows sum to 1; attended_by_mean: (L, n), each in 0..1.
    """
    lab = _safe(labels)
    num_layers = np.asarray(attends_to_mean).shape[0]
    layers = [f"layer {layer + 1}" for layer in range(num_layers)]
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=("The target attends to … (mean over heads)", "… is attended to by (mean over heads)"),
    )
    for row, z, hover in (
        (1, attends_to_mean, "%{y}: target → %{x}<br>weight %{z:.4f}<extra></extra>"),
        (2, attended_by_mean, "%{y}: %{x} → target<br>weight %{z:.4f}<extra></extra>"),
    ):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(z, dtype=np.float32),
                x=lab,
                y=layers,
                coloraxis="coloraxis",
                hovertemplate=hover,
                xgap=1 if len(lab) <= 60 else 0,
                ygap=1,
            ),
            row=row,
            col=1,
        )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-60, **_ticks(lab, max_labels))
    apply_layout(fig)
    fig.update_layout(
        coloraxis={
            "colorscale": ATTENTION_COLORSCALE,
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"title": {"text": "weight"}, "thickness": 14},
        },
        height=int(2 * (28 * num_layers + 60) + 140),
    )
    return fig


def special_token_share_chart(share: SpecialTokenShare, *, head: int | None = None) -> go.Figure:
    """Stacked bars per layer: the share of attention going to [CLS], [SEP], punctuation and other tokens.

    head None = mean over heads; else that head only. Each bar adds up to 1.
    """
    if head is None:
        parts = (share.cls_mean, share.sep_mean, share.punctuation_mean, share.other_mean)
    else:
        parts = (share.cls[:, head], share.sep[:, head], share.punctuation[:, head], share.other[:, head])
    names = ("[CLS]", "[SEP]", "punctuation", "other tokens")
    colors = (SENSE_COLORS[1], SENSE_COLORS[2], SENSE_COLORS[3], CONTEXT_COLOR)
    layers = [f"layer {layer + 1}" for layer in range(len(parts[0]))]
    fig = go.Figure()
    for name, values, color in zip(names, parts, colors, strict=True):
        fig.add_trace(
            go.Bar(
                x=layers,
                y=np.asarray(values, dtype=float),
                name=name,
                marker_color=color,
                hovertemplate=f"%{{x}}: {esc(name)} gets %{{y:.1%}} of the attention<extra></extra>",
            )
        )
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title_text="share of attention")
    apply_layout(fig)
    fig.update_layout(
        barmode="stack",
        height=380,
        legend={"orientation": "h", "y": 1.12, "x": 0, "traceorder": "normal"},
    )
    return fig
