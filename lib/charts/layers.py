"""Figures for the "Layer by layer" page: one word's vectors across sentences, layer by layer.

Every builder takes plain arrays (from :mod:`lib.similarity`) and labels, and returns a
``plotly.graph_objects.Figure``. Layers are numbered as the model's hidden states: 0 is the embedding
output (word piece + position), 1..L the transformer layers. Pooled representations (mean of the last
four layers, mean of all layers) are drawn as separate points to the right of the layers, never joined
to the layer lines, because they are not a further layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import (
    CONTEXT_COLOR,
    DIFFERENT_COLOR,
    DIVERGING,
    NO_SENSE_COLOR,
    SAME_COLOR,
    SENSE_COLORS,
    SEQUENTIAL,
    apply_layout,
    band_from_zero,
    group_senses,
    sense_ticks,
)
from lib.charts.common import esc as _esc
from lib.similarity import LayerReference

__all__ = [
    "SAME_COLOR",
    "DIFFERENT_COLOR",
    "PairLine",
    "PooledPoint",
    "layer_names",
    "sense_order",
    "subsample",
    "similarity_heatmap",
    "layer_small_multiples",
    "trajectory_chart",
    "static_contextual_chart",
    "ethayarajh_chart",
    "readout_chart",
]

ALL_PAIRS_COLOR = SENSE_COLORS[0]  # blue
BASELINE_COLOR = NO_SENSE_COLOR
REFERENCE_COLOR = "#555555"
BLOCK_LINE = "#222222"  # lines between sense blocks
MAX_TICK_LABELS = 40
CELL_TEXT_MAX = 14  # write the cosine into each cell up to this many sentences
HOVER_MAX = 120  # above this many sentences a cell's hover names its row and column, not both sentences


def layer_names(num_layers: int) -> list[str]:
    """Axis names of the hidden states: '0 emb.', '1', ..., 'L'."""
    return ["0 emb."] + [str(i) for i in range(1, num_layers + 1)]


def sense_order(senses: Sequence[str | None]) -> list[int]:
    """Sentence indices grouped by sense (senses in order of first appearance; unlabelled last)."""
    names = list(dict.fromkeys(s for s in senses if s))
    rank = {s: k for k, s in enumerate(names)}
    return sorted(range(len(senses)), key=lambda i: (rank.get(senses[i], len(names)), i))


def subsample(order: Sequence[int], max_items: int) -> list[int]:
    """At most ``max_items`` of ``order``, evenly spaced (keeps the sense blocks' proportions)."""
    order = list(order)
    if len(order) <= max_items:
        return order
    pick = np.linspace(0, len(order) - 1, max_items).round().astype(int)
    return [order[i] for i in sorted(set(pick.tolist()))]


def _sense_ticks(labels: Sequence[str], senses: Sequence[str | None], order: Sequence[int]) -> list[str]:
    # "S3" only: a phone has no room for the sentence (it is in the hover)
    return sense_ticks([lab.split(" ·")[0] for lab in labels], senses, order=order)


def _thin(values: list, max_labels: int) -> list:
    if len(values) <= max_labels:
        return values
    step = int(np.ceil(len(values) / max_labels))
    return values[::step]


def block_lines(edges: Sequence[float], *, subplot: int = 1, width: int = 2) -> list[dict]:
    """Shapes for the lines between sense blocks of one heatmap (subplot 1, 2, ... of a figure): a
    horizontal and a vertical line across the plot at each edge. Set them all with one
    ``fig.update_layout(shapes=...)``: adding them one by one (add_hline) re-validates the figure each
    time (498 lines took 135 s)."""
    suffix = "" if subplot == 1 else str(subplot)
    x, y = f"x{suffix}", f"y{suffix}"
    line = {"color": BLOCK_LINE, "width": width}
    out = []
    for e in edges:
        out.append({"type": "line", "xref": f"{x} domain", "x0": 0, "x1": 1, "yref": y, "y0": e, "y1": e, "line": line})
        out.append({"type": "line", "yref": f"{y} domain", "y0": 0, "y1": 1, "xref": x, "x0": e, "x1": e, "line": line})
    return out


def _block_edges(senses: Sequence[str | None], order: Sequence[int]) -> list[float]:
    """Positions (between cells) where the sense changes along ``order``."""
    edges = []
    for k in range(1, len(order)):
        if senses[order[k]] != senses[order[k - 1]]:
            edges.append(k - 0.5)
    return edges


def similarity_heatmap(
    cosines: np.ndarray,
    labels: Sequence[str],
    senses: Sequence[str | None],
    *,
    title: str,
    zrange: tuple[float, float] = (0.0, 1.0),
    adjusted: bool = False,
    order: Sequence[int] | None = None,
) -> go.Figure:
    """The cosine matrix of one word's vectors across sentences.

    cosines: (n, n); labels: n unique short labels ('S3 · We sat on…'); senses: n labels or None.
    Rows are labelled by their number only (S3), the label is in the hover. Sentences are grouped by sense (``order``, default :func:`sense_order`) with thin dark lines
    between the sense blocks; tick labels carry the sense in its colour. ``zrange`` fixes the colour
    scale so that several layers can be compared; ``adjusted`` switches to a diverging scale centred
    on 0 (cosine minus the baseline).
    """
    m = np.asarray(cosines, dtype=float)
    n = m.shape[0]
    senses = group_senses(senses)
    order = list(order) if order is not None else sense_order(senses)
    sub = m[np.ix_(order, order)].astype(np.float32)  # float32 halves what the browser receives
    ticks = _sense_ticks(labels, senses, order)
    # categories must be unique: the labels are; positions keep the hover exact
    names = [_esc(labels[i]) for i in order]
    fig = go.Figure(
        go.Heatmap(
            z=sub,
            x=list(range(n)),
            y=list(range(n)),
            customdata=None if n > HOVER_MAX else [[[names[r], names[c]] for c in range(n)] for r in range(n)],
            hovertemplate=(
                "%{customdata[0]}<br>%{customdata[1]}<br>" if n <= HOVER_MAX else "row %{y}, column %{x}<br>"
            )
            + ("cosine − baseline" if adjusted else "cosine")
            + " %{z:.3f}<extra></extra>",
            text=[[f"{v:.2f}" for v in row] for row in sub] if n <= CELL_TEXT_MAX else None,
            texttemplate="%{text}" if n <= CELL_TEXT_MAX else None,
            zmin=zrange[0],
            zmax=zrange[1],
            zmid=0.0 if adjusted else None,
            colorscale=DIVERGING if adjusted else SEQUENTIAL,
            colorbar={"title": {"text": "cos − base" if adjusted else "cosine"}},
            xgap=1 if n <= 40 else 0,
            ygap=1 if n <= 40 else 0,
        )
    )
    shown = _thin(list(range(n)), MAX_TICK_LABELS)
    fig.update_yaxes(
        tickmode="array", tickvals=shown, ticktext=[ticks[k] for k in shown], autorange="reversed"
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=shown,
        ticktext=[names[k].split(" ·")[0] for k in shown],
        title_text="sentence",
        side="bottom",
    )
    fig.update_layout(shapes=block_lines(_block_edges(senses, order)))
    return apply_layout(fig, title=title, height=int(min(900, max(420, 18 * n + 160))))


def layer_small_multiples(
    cosines: np.ndarray,
    senses: Sequence[str | None],
    names: Sequence[str],
    *,
    selected: int | None = None,
    zrange: tuple[float, float] = (0.0, 1.0),
    adjusted: bool = False,
    order: Sequence[int] | None = None,
    columns: int = 4,
) -> go.Figure:
    """Several cosine matrices side by side on one colour scale (e.g. every layer at once).

    cosines: (k, n, n); names: k panel titles; ``selected``: index of a panel to outline.
    Sentences are grouped by sense as in :func:`similarity_heatmap`; pass a shorter ``order`` (see
    :func:`subsample`) to draw a sample of a large set.
    """
    m = np.asarray(cosines, dtype=float)
    k = m.shape[0]
    senses = group_senses(senses)
    order = list(order) if order is not None else sense_order(senses)
    n = len(order)
    cols = min(columns, k)
    rows = int(np.ceil(k / cols))
    titles = [f"<b>{_esc(t)}</b>" if i == selected else _esc(t) for i, t in enumerate(names)]
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.08
    )
    edges = _block_edges(senses, order)
    shapes: list[dict] = []
    for i in range(k):
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(
            go.Heatmap(
                z=m[i][np.ix_(order, order)].astype(np.float32),
                coloraxis="coloraxis",
                hovertemplate=f"{_esc(names[i])}<br>row %{{y}}, column %{{x}}<br>%{{z:.3f}}<extra></extra>",
            ),
            row=r,
            col=c,
        )
        shapes += block_lines(edges, subplot=i + 1, width=1)
        if i == selected:
            suffix = "" if i == 0 else str(i + 1)
            shapes.append(
                {
                    "type": "rect",
                    "xref": f"x{suffix}",
                    "yref": f"y{suffix}",
                    "x0": -0.5,
                    "x1": n - 0.5,
                    "y0": -0.5,
                    "y1": n - 0.5,
                    "line": {"color": "black", "width": 3},
                }
            )
    fig.update_layout(shapes=shapes)  # one call: adding shapes one by one re-validates the figure each time
    fig.update_xaxes(showticklabels=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, autorange="reversed", scaleanchor=None)
    fig.update_layout(
        coloraxis={
            "colorscale": DIVERGING if adjusted else SEQUENTIAL,
            "cmin": zrange[0],
            "cmax": zrange[1],
            **({"cmid": 0.0} if adjusted else {}),
            "colorbar": {"title": {"text": "cos − base" if adjusted else "cosine"}},
        }
    )
    return apply_layout(fig, height=260 * rows + 80)


@dataclass(frozen=True)
class PairLine:
    """One sentence pair's cosine across the layers, for :func:`trajectory_chart`.

    values: (K,) one value per layer; same_sense: True/False, or None without labels.
    """

    name: str
    values: np.ndarray
    same_sense: bool | None


@dataclass(frozen=True)
class PooledPoint:
    """Values of the pooled representation drawn to the right of the layers (None = not drawn)."""

    name: str
    same: float | None = None
    different: float | None = None
    all_pairs: float | None = None
    baseline: float | None = None


def _x_axis(fig: go.Figure, names: Sequence[str], pooled: PooledPoint | None, **kw) -> None:
    k = len(names)
    vals, text = list(range(k)), list(names)
    if pooled is not None:
        vals.append(k + 0.6)
        text.append(pooled.name)
    fig.update_xaxes(
        tickmode="array", tickvals=vals, ticktext=text, title_text="layer", range=[-0.3, vals[-1] + 0.4], **kw
    )


def trajectory_chart(
    names: Sequence[str],
    *,
    same: np.ndarray | None = None,
    different: np.ndarray | None = None,
    all_pairs: np.ndarray | None = None,
    baseline: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    pairs: Sequence[PairLine] = (),
    pooled: PooledPoint | None = None,
    selected: int | None = None,
    adjusted: bool = False,
    title: str | None = None,
) -> go.Figure:
    """Mean cosine of same-sense and different-sense pairs per layer, the gap between them shaded.

    names: K layer names; same/different/all_pairs: (K,) means (any may be None);
    baseline: (mean, low, high) each (K,), the random other-token band; pairs: individual pairs as thin
    lines; pooled: the pooled representation's values as separate points; selected: a layer to mark;
    adjusted: the values are cosine minus the baseline (the y-axis says so).
    """
    k = len(names)
    x = list(range(k))
    fig = go.Figure()
    if baseline is not None:
        mean, low, high = (np.asarray(a, dtype=float) for a in baseline)
        fig.add_trace(
            go.Scatter(x=x, y=high, mode="lines", line={"width": 0}, hoverinfo="skip", showlegend=False)
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=low,
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor="rgba(127,127,127,0.18)",
                name="random other-token pairs (10th–90th percentile)",
                hoverinfo="skip",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=mean,
                mode="lines",
                line={"color": BASELINE_COLOR, "dash": "dash", "width": 2},
                name="random other-token pairs (mean)",
                hovertemplate="layer %{x}: baseline %{y:.3f}<extra></extra>",
            )
        )
    for p in pairs:
        color = ALL_PAIRS_COLOR if p.same_sense is None else (SAME_COLOR if p.same_sense else DIFFERENT_COLOR)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(p.values, dtype=float),
                mode="lines",
                line={"color": color, "width": 1},
                opacity=0.45,
                name=_esc(p.name),
                showlegend=False,
                hovertemplate=f"{_esc(p.name)}<br>layer %{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
    if same is not None and different is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(different, dtype=float),
                mode="lines+markers",
                line={"color": DIFFERENT_COLOR, "width": 3},
                name="different-sense pairs (mean)",
                hovertemplate="layer %{x}: different sense %{y:.3f}<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(same, dtype=float),
                mode="lines+markers",
                line={"color": SAME_COLOR, "width": 3},
                fill="tonexty",
                fillcolor="rgba(0,158,115,0.15)",
                name="same-sense pairs (mean); shaded: the gap",
                hovertemplate="layer %{x}: same sense %{y:.3f}<extra></extra>",
            )
        )
    else:
        for values, color, label in (
            (same, SAME_COLOR, "same-sense pairs (mean)"),
            (different, DIFFERENT_COLOR, "different-sense pairs (mean)"),
        ):
            if values is not None:
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=np.asarray(values, dtype=float),
                        mode="lines+markers",
                        line={"color": color, "width": 3},
                        name=label,
                    )
                )
    if all_pairs is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(all_pairs, dtype=float),
                mode="lines+markers",
                line={"color": ALL_PAIRS_COLOR, "width": 3},
                name="all pairs (mean)",
                hovertemplate="layer %{x}: all pairs %{y:.3f}<extra></extra>",
            )
        )
    if pooled is not None:
        px = k + 0.6
        for value, color, label in (
            (pooled.same, SAME_COLOR, "same sense"),
            (pooled.different, DIFFERENT_COLOR, "different sense"),
            (pooled.all_pairs, ALL_PAIRS_COLOR, "all pairs"),
            (pooled.baseline, BASELINE_COLOR, "baseline"),
        ):
            if value is not None:
                fig.add_trace(
                    go.Scatter(
                        x=[px],
                        y=[float(value)],
                        mode="markers",
                        marker={"color": color, "size": 13, "symbol": "diamond"},
                        showlegend=False,
                        hovertemplate=f"{_esc(pooled.name)}: {label} %{{y:.3f}}<extra></extra>",
                    )
                )
        fig.add_vline(x=k - 0.2, line={"color": CONTEXT_COLOR, "width": 1, "dash": "dot"})
    if selected is not None:
        xs = selected if selected < k else k + 0.6
        fig.add_vline(x=xs, line={"color": "black", "width": 1})
    _x_axis(fig, names, pooled)
    if adjusted:
        fig.add_hline(y=0, line={"color": "black", "width": 1, "dash": "dot"})
    fig.update_yaxes(title_text="cosine − baseline" if adjusted else "mean cosine")
    fig.update_layout(legend={"orientation": "h", "y": -0.22, "x": 0})
    return apply_layout(fig, title=title, height=460)


def static_contextual_chart(groups: Sequence[str], values: dict[str, Sequence[float | None]]) -> go.Figure:
    """Grouped bars: mean cosine between the sentences for each representation.

    groups: names of the representations (e.g. 'static word piece', 'layer 0', 'layer 6');
    values: {pair kind: one value per group}, kinds like 'all pairs', 'same sense', 'different sense'.
    """
    colors = {"all pairs": ALL_PAIRS_COLOR, "same sense": SAME_COLOR, "different sense": DIFFERENT_COLOR}
    fig = go.Figure()
    for kind, vals in values.items():
        ys = [np.nan if v is None else float(v) for v in vals]
        fig.add_trace(
            go.Bar(
                x=list(groups),
                y=ys,
                name=kind,
                marker_color=colors.get(kind, NO_SENSE_COLOR),
                text=["" if v is None else f"{v:.2f}" for v in vals],
                textposition="outside",
                hovertemplate=f"{kind}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_yaxes(title_text="mean cosine between sentences", range=[min(0.0, _min(values)) - 0.05, 1.12])
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.15, "x": 0})
    return apply_layout(fig, height=400)


def _min(values: dict[str, Sequence[float | None]]) -> float:
    vals = [float(v) for vs in values.values() for v in vs if v is not None]
    return min(vals) if vals else 0.0


def ethayarajh_chart(
    names: Sequence[str],
    *,
    self_similarity: np.ndarray | None,
    intra_sentence: np.ndarray,
    baseline: np.ndarray | None,
    reference: LayerReference | None = None,
    selected: int | None = None,
) -> go.Figure:
    """Self-similarity and intra-sentence similarity per layer (Ethayarajh 2019) with the baseline.

    names: K layer names; the three arrays are (K,). ``reference``: published curves drawn dashed
    against a second x-axis on top (their own layer numbers), stretched to the same depth.
    """
    k = len(names)
    x = list(range(k))
    fig = go.Figure()
    if self_similarity is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=self_similarity,
                mode="lines+markers",
                name="self-similarity of the target (this set)",
                line={"color": ALL_PAIRS_COLOR, "width": 3},
                hovertemplate="layer %{x}: self-similarity %{y:.3f}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=intra_sentence,
            mode="lines+markers",
            name="intra-sentence similarity (this set)",
            line={"color": SENSE_COLORS[1], "width": 3},
            hovertemplate="layer %{x}: intra-sentence %{y:.3f}<extra></extra>",
        )
    )
    if baseline is not None:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=baseline,
                mode="lines+markers",
                name="random other-token pairs (this set)",
                line={"color": BASELINE_COLOR, "width": 2, "dash": "dash"},
                hovertemplate="layer %{x}: baseline %{y:.3f}<extra></extra>",
            )
        )
    if reference is not None:
        rx = list(range(reference.num_layers + 1))
        for vals, label, dash in (
            (reference.anisotropy, "anisotropy", "dot"),
            (reference.intra_sentence, "intra-sentence", "dashdot"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=rx,
                    y=list(vals),
                    xaxis="x2",
                    mode="lines",
                    name=f"published {_esc(reference.model)}: {label}",
                    line={"color": REFERENCE_COLOR, "width": 2, "dash": dash},
                    hovertemplate=f"{_esc(reference.model)} layer %{{x}}: {label} %{{y:.3f}}<extra></extra>",
                )
            )
        scale = reference.num_layers / max(k - 1, 1)  # reference layers per layer of ours: same depth
        fig.update_layout(
            xaxis2={
                "overlaying": "x",
                "side": "top",
                "range": [-0.3 * scale, reference.num_layers + 0.3 * scale],
                "tickmode": "array",
                "tickvals": rx,
                "title": {"text": f"{_esc(reference.model)} layer (published, top axis)"},
                "showgrid": False,
            }
        )
    if selected is not None and selected < k:
        fig.add_vline(x=selected, line={"color": "black", "width": 1})
    fig.update_layout(  # only the bottom axis (update_xaxes would also change the reference axis)
        xaxis={
            "tickmode": "array",
            "tickvals": x,
            "ticktext": list(names),
            "title": {"text": "layer"},
            "range": [-0.3, k - 0.7],
        }
    )
    fig.update_yaxes(title_text="mean cosine", range=[-0.05, 1.05])
    fig.update_layout(legend={"orientation": "h", "y": -0.22, "x": 0})
    return apply_layout(fig, height=480 if reference is not None else 440)


def readout_chart(
    names: Sequence[str],
    accuracy: np.ndarray,
    majority: float,
    *,
    best: int,
    pooled: tuple[str, float] | None = None,
    selected: int | None = None,
    chance: tuple[np.ndarray, np.ndarray] | None = None,
) -> go.Figure:
    """Nearest-centroid accuracy per layer with the majority-sense baseline and the best layer marked.

    names: K layer names; accuracy: (K,) in [0, 1]; majority: the majority baseline; best: index of the
    best layer; pooled: (name, accuracy) of the pooled representation, drawn apart; chance: (mean, p95),
    each (K,), the readout on shuffled labels (lib.similarity.readout_chance), drawn as a grey band up to
    the 95th percentile with the mean dotted: a point inside the band is within chance.
    """
    k = len(names)
    x = list(range(k))
    acc = np.asarray(accuracy, dtype=float)
    fig = go.Figure()
    if chance is not None:
        c_mean = np.asarray(chance[0], dtype=float)[:k]
        c_top = np.asarray(chance[1], dtype=float)[:k]
        fig.add_trace(band_from_zero(c_top, name="chance band: shuffled labels, up to the 95th percentile"))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=c_mean,
                mode="lines",
                line={"color": BASELINE_COLOR, "dash": "dot", "width": 2},
                name="shuffled labels: mean",
                customdata=np.stack([c_mean, c_top], axis=1),
                hovertemplate="layer %{x}, shuffled labels: mean %{customdata[0]:.0%}, "
                "95th percentile %{customdata[1]:.0%}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=acc,
            mode="lines+markers+text",
            text=[f"{v:.0%}" for v in acc],
            textposition="top center",
            line={"color": ALL_PAIRS_COLOR, "width": 3},
            name="nearest-centroid accuracy (leave one out)",
            hovertemplate="layer %{x}: accuracy %{y:.1%}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[best],
            y=[acc[best]],
            mode="markers",
            marker={"size": 20, "symbol": "star", "color": SENSE_COLORS[1], "line": {"width": 1}},
            name=f"best layer: {names[best]}",
            hovertemplate="best layer %{x}: %{y:.1%}<extra></extra>",
        )
    )
    right = k + 1.0 if pooled is not None else k - 0.7
    fig.add_trace(
        go.Scatter(
            x=[-0.3, right],
            y=[majority, majority],
            mode="lines",
            line={"color": BASELINE_COLOR, "dash": "dash", "width": 2},
            name=f"always the most common sense: {majority:.0%}",
            hovertemplate=f"always the most common sense: {majority:.1%}<extra></extra>",
        )
    )
    if pooled is not None:
        fig.add_trace(
            go.Scatter(
                x=[k + 0.6],
                y=[pooled[1]],
                mode="markers+text",
                text=[f"{pooled[1]:.0%}"],
                textposition="top center",
                marker={"color": ALL_PAIRS_COLOR, "size": 13, "symbol": "diamond"},
                name=_esc(pooled[0]),
                hovertemplate=f"{_esc(pooled[0])}: %{{y:.1%}}<extra></extra>",
            )
        )
        fig.add_vline(x=k - 0.2, line={"color": CONTEXT_COLOR, "width": 1, "dash": "dot"})
    if selected is not None:
        fig.add_vline(x=selected if selected < k else k + 0.6, line={"color": "black", "width": 1})
    _x_axis(fig, names, PooledPoint(pooled[0]) if pooled is not None else None)
    fig.update_yaxes(
        title_text="accuracy", range=[0, 1.16], tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1.0], tickformat=".0%"
    )
    fig.update_layout(legend={"orientation": "h", "y": -0.22, "x": 0})
    return apply_layout(fig, height=420)
