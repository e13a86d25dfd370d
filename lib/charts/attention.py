"""Figures for the Attention page: heatmaps, the all-heads overview, the target's attention, special tokens.

Every builder takes plain arrays and labels (from `lib.models.attention`) and returns a `plotly.graph_objects.Figure`.
Attention colours are fixed to the range 0–1 in every figure, so two heatmaps can be compared by eye.
Rows are queries (the token that looks), columns are keys (the token looked at).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    CONTEXT_COLOR,
    SENSE_COLORS,
    SEQUENTIAL,
    base_layout,
    esc,
    figure,
    grid_axes,
    level_line,
    subplot_grid,
)
from lib.models.attention import SpecialTokenShare, downsample_labels, pool_attention

__all__ = [
    "ATTENTION_COLORSCALE",
    "attention_heatmap",
    "attention_overview",
    "overview_grid",
    "special_token_share_chart",
    "first_position_chart",
    "target_attention_bars",
    "target_attention_by_layer",
]

# The app's sequential scale (perceptually uniform, colour-blind safe), always spanning 0–1.
ATTENTION_COLORSCALE = SEQUENTIAL
TARGET_COLOR = SENSE_COLORS[4]  # vermillion: the target word and the selected overview cell
OTHER_COLOR = SENSE_COLORS[0]
MAX_TICK_LABELS = 40
_CELL_TEXT_MAX_TOKENS = 14  # write the value into each cell up to this many tokens
_PHONE_PLOT_PX = 190  # a token axis's length on a 390-px phone, the row labels and the colour bar beside it
_CHAR_PX = 7  # a generous width per character of a 12-px tick label


def token_tickangle(labels: Sequence[str]) -> int:
    """The angle of a token axis's labels: level (0) only while every label fits its column on a phone, else
    turned by 60 degrees (the theme sizes the margin for it). More than 8 tokens always turn.

    >>> token_tickangle(["[CLS]·0", "bank·1", "[SEP]·2"]), token_tickangle(["[CLS]·0", "the·1", "raised·2", "x·3", "y·4"])
    (0, -60)
    """
    n = len(labels)
    widest = max((len(s) for s in labels), default=0) * _CHAR_PX
    return 0 if n <= 8 and widest + 6 <= _PHONE_PLOT_PX / max(n, 1) else -60


def _safe(labels: Sequence[str]) -> list[str]:
    """Labels as plotly shows them: its hover and tick text understand a little HTML, so escape it."""
    return [esc(s) for s in labels]


def _ticks(axis_labels: list[str], max_labels: int) -> dict:
    """Axis settings that print at most `max_labels` tick labels (every row/column stays in the data)."""
    pos, text = downsample_labels(axis_labels, max_labels)
    return {"tickmode": "array", "tickvals": [axis_labels[p] for p in pos], "ticktext": text}


def _heatmap_trace(weights: np.ndarray, x: list[str], y: list[str], *, show_text: bool, **kw) -> dict:
    """An attention heatmap trace (a dict for :func:`lib.charts.common.figure`), colours fixed to 0–1.

    Cell numbers get plotly's automatic size (they fit the drawn cell; see common.fit_cell_text).
    """
    trace = {
        "type": "heatmap",
        "z": np.asarray(weights, dtype=np.float32),  # float32: half the bytes sent to the browser
        "x": x,
        "y": y,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": ATTENTION_COLORSCALE,
        "hovertemplate": "query <b>%{y}</b> → key <b>%{x}</b><br>weight %{z:.4f}<extra></extra>",
        "xgap": 1 if len(x) <= 60 else 0,
        "ygap": 1 if len(y) <= 60 else 0,
        **kw,
    }
    if show_text:
        trace["texttemplate"] = "%{z:.2f}"
    return trace


def _coloraxis(thickness: int = 14) -> dict:
    """The shared 0–1 colour axis of figures with several attention heatmaps."""
    return {
        "colorscale": ATTENTION_COLORSCALE,
        "cmin": 0.0,
        "cmax": 1.0,
        "colorbar": {"title": {"text": "weight"}, "thickness": thickness},
    }


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
    labels:  n unique labels (see `lib.models.attention.token_labels`); at most `max_labels` are printed per axis.
    The colour scale is fixed to 0–1; the exact value is in the hover text (and in the cells when small).
    """
    weights = np.asarray(weights, dtype=float)
    n = weights.shape[0]
    if weights.shape != (n, n) or len(labels) != n:
        raise ValueError(f"need an (n, n) matrix and n labels, got {weights.shape} and {len(labels)} labels")
    lab = _safe(labels)
    ticks = _ticks(lab, max_labels)
    trace = _heatmap_trace(
        weights, lab, lab, show_text=n <= _CELL_TEXT_MAX_TOKENS, colorbar={"title": {"text": "weight"}, "thickness": 14}
    )
    thinned = n > max_labels
    layout = base_layout(height=height or heatmap_height(n))
    layout |= {
        "title": {"text": esc(title)},
        "xaxis": {
            "title": {"text": "key: the token looked at" + (" (some labels hidden)" if thinned else "")},
            "tickangle": token_tickangle(labels),
            "type": "category",
            **ticks,
        },
        "yaxis": {"title": {"text": "query: the token looking"}, "autorange": "reversed", "type": "category", **ticks},
    }
    return figure([trace], layout)


@dataclass(frozen=True)
class OverviewGrid:
    """Where each layer and head sits in :func:`attention_overview`'s one heatmap.

    Block (layer, col) (col = num_heads: the mean over heads) fills z rows ``row0(layer) .. row0(layer) + size``
    and columns ``col0(col) .. col0(col) + size``; the ``gap`` rows and columns between blocks are NaN (drawn
    empty, no hover).
    """

    num_layers: int
    cols: int  # heads + 1 (the mean)
    size: int  # tokens (or token blocks) per side of one square
    gap: int  # between squares; the mean column stands 3 gaps apart from the heads

    @property
    def step(self) -> int:
        return self.size + self.gap

    def row0(self, layer: int) -> int:
        return layer * self.step

    def col0(self, col: int) -> int:
        return col * self.step + (2 * self.gap if col == self.cols - 1 else 0)

    @property
    def shape(self) -> tuple[int, int]:
        return self.num_layers * self.step - self.gap, self.col0(self.cols - 1) + self.size


def overview_grid(num_layers: int, num_heads: int, size: int) -> OverviewGrid:
    """The block layout of the overview: a gap of about an eighth of a square (at least one cell)."""
    return OverviewGrid(num_layers, num_heads + 1, size, max(1, round(size / 8)))


def overview_outline(grid: OverviewGrid, layer: int, head: int | None) -> dict:
    """The rectangle that outlines one square of :func:`attention_overview` (head None = the mean column).

    A plain dict in the heatmap's cell coordinates, so a page can add it to a cached figure dict.
    """
    col = grid.cols - 1 if head is None else head
    pad = grid.gap / 2
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": grid.col0(col) - 0.5 - pad,
        "x1": grid.col0(col) + grid.size - 0.5 + pad,
        "y0": grid.row0(layer) - 0.5 - pad,
        "y1": grid.row0(layer) + grid.size - 0.5 + pad,
        "line": {"color": TARGET_COLOR, "width": 3},
    }


def attention_overview(
    attentions: np.ndarray,
    labels: Sequence[str],
    *,
    selected: tuple[int, int | None] | None = None,
    max_tokens: int = 40,
) -> go.Figure:
    """The "model view": a small square for every layer (rows) and head (columns), plus the mean over heads.

    attentions: (L, H, n, n) for one sentence. selected: (layer, head) to outline, head None = the mean column.
    Sentences longer than `max_tokens` are shown in blocks of neighbouring tokens (rows still sum to 1);
    the hover text names the tokens in each block.

    Drawn as ONE heatmap with empty (NaN) gaps between the squares (layout: :func:`overview_grid`): one
    subplot per head made the decoder's 30 x 10 grid ~60,000 elements in the browser, and every rerun of the
    page paid for them.
    """
    att = np.asarray(attentions, dtype=float)
    num_layers, num_heads, n, _ = att.shape
    mean = att.mean(axis=1, keepdims=True)  # (L, 1, n, n)
    pooled = pool_attention(np.concatenate([att, mean], axis=1), max_tokens)  # (L, H + 1, m, m)
    lab = _safe(pooled.block_labels(list(labels)))
    grid = overview_grid(num_layers, num_heads, len(lab))
    z = np.full(grid.shape, np.nan, dtype=np.float32)
    for layer in range(num_layers):
        for col in range(grid.cols):
            r, c = grid.row0(layer), grid.col0(col)
            z[r : r + grid.size, c : c + grid.size] = pooled.weights[layer, col]
    # Category names: one per row and column, unique (a gap's is never shown: no tick labels, no hover on NaN),
    # so the hover names the layer, the head and the two tokens without a string per cell.
    col_names = [f"head {h + 1}" for h in range(num_heads)] + ["mean over heads"]
    x, y = [], []
    for col, name in enumerate(col_names):
        x += [f"gap {len(x) + k}" for k in range(grid.col0(col) - len(x))]
        x += [f"{name} · key {t}" for t in lab]
    for layer in range(num_layers):
        y += [f"gap {len(y) + k}" for k in range(grid.row0(layer) - len(y))]
        y += [f"layer {layer + 1} · query {t}" for t in lab]
    trace = {
        "type": "heatmap",
        "z": z,
        "x": x,
        "y": y,
        "coloraxis": "coloraxis",
        "hoverongaps": False,
        "hovertemplate": "%{y}<br>%{x}<br>weight %{z:.3f}<extra></extra>",
    }
    axis = {"showticklabels": False, "ticks": "", "showgrid": False, "zeroline": False, "type": "category"}
    mid = (grid.size - 1) / 2
    # head numbers without "H", at 10 px: on a phone a column is ~20 px, and "H10 H11 H12 mean" overlapped
    annotations = [
        {"text": str(col + 1) if col < num_heads else "mean", "x": grid.col0(col) + mid, "y": 1.0, "xref": "x",
         "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 10}}
        for col in range(grid.cols)
    ] + [
        {"text": f"L{layer + 1}", "x": 1.0, "y": grid.row0(layer) + mid, "xref": "paper", "yref": "y",
         "xanchor": "left", "yanchor": "middle", "showarrow": False, "font": {"size": 11}}
        for layer in range(num_layers)
    ]  # fmt: skip
    layout = base_layout() | {
        "xaxis": axis | {"domain": [0.0, 0.97]},
        "yaxis": axis | {"autorange": "reversed"},
        "annotations": annotations,
        "coloraxis": _coloraxis(12),
        "height": int(70 * num_layers + 90),
        "margin": {"l": 20, "r": 40, "t": 50, "b": 20},
    }
    if selected is not None:
        layout["shapes"] = [overview_outline(grid, *selected)]
    return figure([trace], layout)


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
    layout = base_layout(height=560)
    layout |= subplot_grid(
        2, 1, v_space=0.12, shared_x=True, titles=("The target attends to …", "… and is attended to by")
    )
    layout |= {"title": {"text": esc(title)}, "bargap": 0.15}
    layout["margin"]["t"] = 100 if title else 50
    ticks = _ticks(lab, max_labels)
    traces = []
    for k, (values, hover) in enumerate(
        ((attends_to, "target → %{x}"), (attended_by, "%{x} → target"))
    ):
        xa, ya = grid_axes(k)
        traces.append(
            {"type": "bar", "x": lab, "y": np.asarray(values, dtype=float), "marker": {"color": colors},
             "hovertemplate": hover + "<br>weight %{y:.4f}<extra></extra>", "showlegend": False,
             "xaxis": xa, "yaxis": ya}  # fmt: skip
        )
        layout[f"xaxis{xa[1:]}"] |= {"type": "category", "tickangle": token_tickangle(labels), **ticks}
        layout[f"yaxis{ya[1:]}"] |= {"range": [0, 1], "title": {"text": "weight"}}
    return figure(traces, layout)


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
    layout = base_layout(height=int(2 * (28 * num_layers + 60) + 140))
    layout |= subplot_grid(
        2,
        1,
        v_space=0.1,
        shared_x=True,
        titles=("The target attends to … (mean over heads)", "… is attended to by (mean over heads)"),
    )
    layout["coloraxis"] = _coloraxis()
    ticks = _ticks(lab, max_labels)
    traces = []
    for k, (z, hover) in enumerate(
        (
            (attends_to_mean, "%{y}: target → %{x}<br>weight %{z:.4f}<extra></extra>"),
            (attended_by_mean, "%{y}: %{x} → target<br>weight %{z:.4f}<extra></extra>"),
        )
    ):
        xa, ya = grid_axes(k)
        traces.append(
            {"type": "heatmap", "z": np.asarray(z, dtype=np.float32), "x": lab, "y": layers,
             "coloraxis": "coloraxis", "hovertemplate": hover, "xgap": 1 if len(lab) <= 60 else 0, "ygap": 1,
             "xaxis": xa, "yaxis": ya}  # fmt: skip
        )
        layout[f"xaxis{xa[1:]}"] |= {"type": "category", "tickangle": -60, **ticks}
        layout[f"yaxis{ya[1:]}"] |= {"autorange": "reversed", "type": "category"}
    return figure(traces, layout)


def special_token_share_chart(share: SpecialTokenShare, *, head: int | None = None) -> go.Figure:
    """Stacked bars per layer: the share of attention going to [CLS], [SEP], punctuation and other tokens.

    head None = mean over heads; else that head only. Each bar adds up to 1. A kind of special token the
    sentence has none of (``closing_label`` "": a decoder's sentence has no closing token) gets no bar.
    """
    if head is None:
        parts = (share.cls_mean, share.sep_mean, share.punctuation_mean, share.other_mean)
    else:
        parts = (share.cls[:, head], share.sep[:, head], share.punctuation[:, head], share.other[:, head])
    names = (share.opening_label, share.closing_label, "punctuation", "other tokens")
    colors = (SENSE_COLORS[1], SENSE_COLORS[2], SENSE_COLORS[3], CONTEXT_COLOR)
    layers = [f"layer {layer + 1}" for layer in range(len(parts[0]))]
    traces = [
        {
            "type": "bar",
            "x": layers,
            "y": np.asarray(values, dtype=float),
            "name": name,
            "marker": {"color": color},
            "hovertemplate": f"%{{x}}: {esc(name)} gets %{{y:.1%}} of the attention<extra></extra>",
        }
        for name, values, color in zip(names, parts, colors, strict=True)
        if name  # a kind of special token the sentence does not have (a decoder's closing one) is left out
    ]
    layout = base_layout(height=380)
    layout |= {
        "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": "share of attention"}},
        "barmode": "stack",
        "legend": {"orientation": "h", "y": 1.12, "x": 0, "traceorder": "normal", "title": {"text": ""}},
    }
    return figure(traces, layout)


def first_position_chart(curves, *, title: str) -> go.Figure:
    """Lines by relative depth: the share of attention later positions give to position 0, one line per model.

    curves: (label, per_layer (L_m,), uniform) per model; layer l (1-based) sits at x = l / L_m, so models of
    different depths share one axis. A dotted line per model marks its even spread (``uniform``).
    """
    traces = []
    for k, (label, per_layer, uniform) in enumerate(curves):
        v = np.asarray(per_layer, dtype=float)
        L = len(v)
        x = (np.arange(1, L + 1) / L).tolist()
        color = SENSE_COLORS[k % len(SENSE_COLORS)]
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": v,
                "mode": "lines+markers",
                "name": esc(label),
                "line": {"color": color, "width": 3},
                "customdata": np.arange(1, L + 1),
                "hovertemplate": f"{esc(label)}<br>layer %{{customdata}}: %{{y:.1%}}<extra></extra>",
            }
        )
        traces.append(
            level_line(x[0], x[-1], uniform, name=esc(f"{label}: even spread"), color=color,
                       hovertemplate=f"even spread: {uniform:.1%}<extra></extra>")  # fmt: skip
        )
    layout = base_layout(title=esc(title), height=420)
    layout |= {
        "xaxis": {"title": {"text": "relative depth (layer / number of layers)"}, "tickformat": ".0%"},
        "yaxis": {"range": [0, 1], "tickformat": ".0%", "title": {"text": "attention to position 0"}},
        "legend": {"orientation": "h", "y": -0.3, "x": 0},
    }
    return figure(traces, layout)
