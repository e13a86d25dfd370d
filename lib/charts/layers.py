"""Figures for the "Layer by layer" page: one word's vectors across sentences, layer by layer.

Over 600 lines and still one concept: the charts of one page (one chart module per page, lib/charts/).

Every builder takes plain arrays (from :mod:`lib.stats.similarity`) and labels, and returns a
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

from lib.charts.common import (
    DIFFERENT_COLOR,
    DIVERGING,
    MAX_TICK_LABELS,
    NO_SENSE_COLOR,
    SAME_COLOR,
    SENSE_COLORS,
    SEQUENTIAL,
    band_from_zero,
    base_layout,
    cell_numbers,
    figure,
    grid_axes,
    group_senses,
    heatmap_hover,
    hline,
    labelled_line,
    layer_labels,
    level_line,
    merged,
    sense_ticks,
    subplot_grid,
    thin,
    vline,
)
from lib.charts.common import esc as _esc
from lib.charts.layer_axis import (
    layer_marks,
    pooled_gap,
    pooled_places,
    two_lines,
    x_axis,
)
from lib.stats.baseline import LayerReference

__all__ = [
    "SAME_COLOR",
    "DIFFERENT_COLOR",
    "PairLine",
    "PooledPoint",
    "pooled_places",
    "layer_labels",
    "layer_names",
    "sense_order",
    "subsample",
    "similarity_heatmap",
    "layer_small_multiples",
    "trajectory_chart",
    "static_contextual_chart",
    "ethayarajh_chart",
    "readout_chart",
    "block_lines",
    "accuracy_line",
    "majority_line",
]

ALL_PAIRS_COLOR = SENSE_COLORS[0]  # blue
BASELINE_COLOR = NO_SENSE_COLOR
REFERENCE_COLOR = "#555555"
BLOCK_LINE = "#222222"  # lines between sense blocks


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


def block_lines(edges: Sequence[float], *, subplot: int = 1, width: int = 2) -> list[dict]:
    """Shapes for the lines between sense blocks of one heatmap (subplot 1, 2, ... of a figure): a
    horizontal and a vertical line across the plot at each edge. Set them all in the layout at once:
    adding them one by one (add_hline) re-validates the figure each time (498 lines took 135 s)."""
    x, y = grid_axes(subplot - 1)
    line = {"color": BLOCK_LINE, "width": width}
    out = []
    for e in edges:
        out += [hline(e, line, axis=y), vline(e, line, axis=x)]
    return out


def _block_edges(senses: Sequence[str | None], order: Sequence[int]) -> list[float]:
    """Positions (between cells) where the sense changes along ``order``."""
    edges = []
    for k in range(1, len(order)):
        if senses[order[k]] != senses[order[k - 1]]:
            edges.append(k - 0.5)
    return edges


def _legend_below(y: float = -0.22) -> dict:
    return {"orientation": "h", "y": y, "x": 0}


# With a pooled point the x axis's labels take two lines ("mean of<br>last 4"): the legend goes lower, so that on
# a phone, where the legend's rows shrink the plot it is measured against, it stays clear of the axis title
LEGEND_Y_POOLED = -0.36


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
    trace = {
        "type": "heatmap",
        "z": sub,
        "x": list(range(n)),
        "y": list(range(n)),
        **heatmap_hover(n, names, "cosine − baseline" if adjusted else "cosine"),
        **cell_numbers(sub),
        "zmin": zrange[0],
        "zmax": zrange[1],
        **({"zmid": 0.0} if adjusted else {}),
        "colorscale": DIVERGING if adjusted else SEQUENTIAL,
        "colorbar": {"title": {"text": "cos − base" if adjusted else "cosine"}},
        "xgap": 1 if n <= 40 else 0,
        "ygap": 1 if n <= 40 else 0,
    }
    shown = thin(list(range(n)), MAX_TICK_LABELS)
    layout = merged(
        base_layout(title=title, height=int(min(900, max(420, 18 * n + 160)))),
        yaxis={"tickmode": "array", "tickvals": shown, "ticktext": [ticks[k] for k in shown], "autorange": "reversed"},
        xaxis={
            "tickmode": "array",
            "tickvals": shown,
            "ticktext": [names[k].split(" ·")[0] for k in shown],
            "title": {"text": "sentence"},
            "side": "bottom",
        },
        shapes=block_lines(_block_edges(senses, order)),
    )
    return figure([trace], layout)


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
    layout = subplot_grid(rows, cols, titles=titles, h_space=0.02, v_space=0.08)
    for name, axis in layout.items():
        if name.startswith("xaxis"):
            axis.update(showticklabels=False, constrain="domain")
        elif name.startswith("yaxis"):
            axis.update(showticklabels=False, autorange="reversed")
    edges = _block_edges(senses, order)
    traces, shapes = [], []
    for i in range(k):
        x, y = grid_axes(i)
        traces.append(
            {
                "type": "heatmap",
                "z": m[i][np.ix_(order, order)].astype(np.float32),
                "coloraxis": "coloraxis",
                "hovertemplate": f"{_esc(names[i])}<br>row %{{y}}, column %{{x}}<br>%{{z:.3f}}<extra></extra>",
                "xaxis": x,
                "yaxis": y,
            }
        )
        shapes += block_lines(edges, subplot=i + 1, width=1)
        if i == selected:
            shapes.append(
                {
                    "type": "rect",
                    "xref": x,
                    "yref": y,
                    "x0": -0.5,
                    "x1": n - 0.5,
                    "y0": -0.5,
                    "y1": n - 0.5,
                    "line": {"color": "black", "width": 3},
                }
            )
    layout = merged(
        base_layout(height=260 * rows + 80),
        **layout,
        shapes=shapes,
        coloraxis={
            "colorscale": DIVERGING if adjusted else SEQUENTIAL,
            "cmin": zrange[0],
            "cmax": zrange[1],
            **({"cmid": 0.0} if adjusted else {}),
            "colorbar": {"title": {"text": "cos − base" if adjusted else "cosine"}},
        },
    )
    return figure(traces, layout)


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


def _mean_line(x: list, values, color: str, name: str, what: str | None = None) -> dict:
    """A thick line with markers for a per-layer mean (hover "layer 3: <what> 0.812")."""
    trace = {
        "type": "scatter",
        "x": x,
        "y": np.asarray(values, dtype=float),
        "mode": "lines+markers",
        "line": {"color": color, "width": 3},
        "name": name,
    }
    if what is not None:
        trace["hovertemplate"] = f"layer %{{x}}: {what} %{{y:.3f}}<extra></extra>"
    return trace


def trajectory_chart(
    names: Sequence[str],
    *,
    same: np.ndarray | None = None,
    different: np.ndarray | None = None,
    all_pairs: np.ndarray | None = None,
    baseline: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    pairs: Sequence[PairLine] = (),
    pooled: Sequence[PooledPoint] | None = (),
    selected: int | None = None,
    adjusted: bool = False,
    title: str | None = None,
) -> go.Figure:
    """Mean cosine of same-sense and different-sense pairs per layer, the gap between them shaded.

    names: K layer names; same/different/all_pairs: (K,) means (any may be None);
    baseline: (mean, low, high) each (K,), the random other-token band; pairs: individual pairs as thin
    lines; pooled: pooled representations' values as separate points to the right of the layers, one place each
    (:func:`pooled_places`); selected: a layer (or ``K + i``, the pooled one ``i``) to mark; adjusted: the values
    are cosine minus the baseline (the y-axis says so).
    """
    pooled = list(pooled or ())
    k = len(names)
    x = list(range(k))
    traces: list[dict] = []
    if baseline is not None:
        mean, low, high = (np.asarray(a, dtype=float) for a in baseline)
        traces += [
            {
                "type": "scatter",
                "x": x,
                "y": high,
                "mode": "lines",
                "line": {"width": 0},
                "hoverinfo": "skip",
                "showlegend": False,
            },
            {
                "type": "scatter",
                "x": x,
                "y": low,
                "mode": "lines",
                "line": {"width": 0},
                "fill": "tonexty",
                "fillcolor": "rgba(127,127,127,0.18)",
                "name": "random other-token pairs (10th–90th percentile)",
                "hoverinfo": "skip",
            },
            {
                "type": "scatter",
                "x": x,
                "y": mean,
                "mode": "lines",
                "line": {"color": BASELINE_COLOR, "dash": "dash", "width": 2},
                "name": "random other-token pairs (mean)",
                "hovertemplate": "layer %{x}: baseline %{y:.3f}<extra></extra>",
            },
        ]
    for p in pairs:
        color = ALL_PAIRS_COLOR if p.same_sense is None else (SAME_COLOR if p.same_sense else DIFFERENT_COLOR)
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": np.asarray(p.values, dtype=float),
                "mode": "lines",
                "line": {"color": color, "width": 1},
                "opacity": 0.45,
                "name": _esc(p.name),
                "showlegend": False,
                "hovertemplate": f"{_esc(p.name)}<br>layer %{{x}}: %{{y:.3f}}<extra></extra>",
            }
        )
    if same is not None and different is not None:
        traces.append(_mean_line(x, different, DIFFERENT_COLOR, "different-sense pairs (mean)", "different sense"))
        gap = _mean_line(x, same, SAME_COLOR, "same-sense pairs (mean); shaded: the gap", "same sense")
        traces.append({**gap, "fill": "tonexty", "fillcolor": "rgba(0,158,115,0.15)"})
    else:
        if same is not None:
            traces.append(_mean_line(x, same, SAME_COLOR, "same-sense pairs (mean)"))
        if different is not None:
            traces.append(_mean_line(x, different, DIFFERENT_COLOR, "different-sense pairs (mean)"))
    if all_pairs is not None:
        traces.append(_mean_line(x, all_pairs, ALL_PAIRS_COLOR, "all pairs (mean)", "all pairs"))
    places = pooled_places(k, len(pooled))
    for kind, color, label in (
        ("same", SAME_COLOR, "same sense"),
        ("different", DIFFERENT_COLOR, "different sense"),
        ("all_pairs", ALL_PAIRS_COLOR, "all pairs"),
        ("baseline", BASELINE_COLOR, "baseline"),
    ):
        points = [(x_, p.name, getattr(p, kind)) for x_, p in zip(places, pooled, strict=True)]
        points = [pt for pt in points if pt[2] is not None]
        if points:  # one trace per kind, every pooled representation's point in it (the hover names which)
            traces.append(
                {
                    "type": "scatter",
                    "x": [pt[0] for pt in points],
                    "y": [float(pt[2]) for pt in points],
                    "customdata": [_esc(pt[1]) for pt in points],
                    "mode": "markers",
                    "marker": {"color": color, "size": 13, "symbol": "diamond"},
                    "showlegend": False,
                    "hovertemplate": f"%{{customdata}}: {label} %{{y:.3f}}<extra></extra>",
                }
            )
    shapes = layer_marks(k, pooled=len(pooled), selected=selected)
    if adjusted:
        shapes.append(hline(0, {"color": "black", "width": 1, "dash": "dot"}))
    layout = merged(
        base_layout(title=title, height=460),
        xaxis=x_axis(names, [p.name for p in pooled]),
        yaxis={"title": {"text": "cosine − baseline" if adjusted else "mean cosine"}},
        legend=_legend_below(LEGEND_Y_POOLED if pooled else -0.22),
        shapes=shapes,
    )
    return figure(traces, layout)


def static_contextual_chart(groups: Sequence[str], values: dict[str, Sequence[float | None]]) -> go.Figure:
    """Grouped bars: mean cosine between the sentences for each representation.

    groups: names of the representations (e.g. 'static word piece', 'layer 0', 'layer 6');
    values: {pair kind: one value per group}, kinds like 'all pairs', 'same sense', 'different sense'.
    """
    colors = {"all pairs": ALL_PAIRS_COLOR, "same sense": SAME_COLOR, "different sense": DIFFERENT_COLOR}
    traces = [
        {
            "type": "bar",
            "x": list(groups),
            "y": [np.nan if v is None else float(v) for v in vals],
            "name": kind,
            "marker": {"color": colors.get(kind, NO_SENSE_COLOR)},
            "text": ["" if v is None else f"{v:.2f}" for v in vals],
            "textposition": "outside",
            "hovertemplate": f"{kind}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
        }
        for kind, vals in values.items()
    ]
    layout = merged(
        base_layout(height=400),
        # each group's label on two lines ("layer 0:<br>+ position"): on one line they ran into each other, and
        # past the chart's edge, on a phone
        xaxis={"tickmode": "array", "tickvals": list(groups), "ticktext": [_group_tick(g) for g in groups]},
        yaxis={"title": {"text": "mean cosine between sentences"}, "range": [min(0.0, _min(values)) - 0.05, 1.12]},
        barmode="group",
        legend=_legend_below(-0.27),
    )
    return figure(traces, layout)


def _group_tick(name: str) -> str:
    """A representation's name as a tick label of two lines: before a bracket, after a colon, else at its middle."""
    if " (" in name:
        return name.replace(" (", "<br>(", 1)
    if ": " in name:
        return name.replace(": ", ":<br>", 1)
    return two_lines(name)


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
    traces = []
    if self_similarity is not None:
        traces.append(
            _mean_line(x, self_similarity, ALL_PAIRS_COLOR, "self-similarity of the target (this set)", "self-similarity")
        )
    traces.append(
        _mean_line(x, intra_sentence, SENSE_COLORS[1], "intra-sentence similarity (this set)", "intra-sentence")
    )
    if baseline is not None:
        line = _mean_line(x, baseline, BASELINE_COLOR, "random other-token pairs (this set)", "baseline")
        traces.append({**line, "line": {"color": BASELINE_COLOR, "width": 2, "dash": "dash"}})
    layout = merged(
        base_layout(height=480 if reference is not None else 440),
        # the bottom axis only (the reference has its own axis on top)
        xaxis={
            "tickmode": "array",
            "tickvals": x,
            "ticktext": layer_labels(names),
            "title": {"text": "layer"},
            "range": [-0.3, k - 0.7],
        },
        yaxis={"title": {"text": "mean cosine"}, "range": [-0.05, 1.05]},
        legend=_legend_below(),
        shapes=layer_marks(k, pooled=0, selected=selected if selected is not None and selected < k else None),
    )
    if reference is not None:
        rx = list(range(reference.num_layers + 1))
        for vals, label, dash in (
            (reference.anisotropy, "anisotropy", "dot"),
            (reference.intra_sentence, "intra-sentence", "dashdot"),
        ):
            traces.append(
                {
                    "type": "scatter",
                    "x": rx,
                    "y": list(vals),
                    "xaxis": "x2",
                    "mode": "lines",
                    "name": f"published {_esc(reference.model)}: {label}",
                    "line": {"color": REFERENCE_COLOR, "width": 2, "dash": dash},
                    "hovertemplate": f"{_esc(reference.model)} layer %{{x}}: {label} %{{y:.3f}}<extra></extra>",
                }
            )
        scale = reference.num_layers / max(k - 1, 1)  # reference layers per layer of ours: same depth
        layout["xaxis2"] = {
            "overlaying": "x",
            "side": "top",
            "range": [-0.3 * scale, reference.num_layers + 0.3 * scale],
            "tickmode": "array",
            "tickvals": rx,
            "title": {"text": f"{_esc(reference.model)} layer (published, top axis)"},
            "showgrid": False,
        }
    return figure(traces, layout)


def majority_line(majority: float, right: float, *, color: str = BASELINE_COLOR, width: float = 2) -> dict:
    """The rate of always answering the most common sense, as a dashed line from x = -0.3 to ``right``
    (a trace, so the legend names it)."""
    return level_line(-0.3, right, majority, name=f"always the most common sense: {majority:.0%}", color=color,
                      width=width, dash="dash",
                      hovertemplate=f"always the most common sense: {majority:.1%}<extra></extra>")  # fmt: skip


def readout_chart(
    names: Sequence[str],
    accuracy: np.ndarray,
    majority: float,
    *,
    best: int,
    pooled: Sequence[tuple[str, float]] | None = (),
    selected: int | None = None,
    chance: tuple[np.ndarray, np.ndarray] | None = None,
) -> go.Figure:
    """Nearest-centroid accuracy per layer with the majority-sense baseline and the best layer marked.

    names: K layer names; accuracy: (K,) in [0, 1]; majority: the majority baseline; best: index of the
    best layer; pooled: (name, accuracy) of each pooled representation, drawn apart to the right of the
    layers (:func:`pooled_places`); selected: a layer (or ``K + i``, the pooled one ``i``) to mark; chance: (mean, p95),
    each (K,), the readout on shuffled labels (lib.stats.chance.readout_chance), drawn as a grey band up to
    the 95th percentile with the mean dotted: a point inside the band is within chance.
    """
    k = len(names)
    x = list(range(k))
    acc = np.asarray(accuracy, dtype=float)
    traces: list = []
    if chance is not None:
        c_mean = np.asarray(chance[0], dtype=float)[:k]
        c_top = np.asarray(chance[1], dtype=float)[:k]
        traces.append(band_from_zero(c_top, name="chance band: shuffled labels, up to the 95th percentile"))
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": c_mean,
                "mode": "lines",
                "line": {"color": BASELINE_COLOR, "dash": "dot", "width": 2},
                "name": "shuffled labels: mean",
                "customdata": np.stack([c_mean, c_top], axis=1),
                "hovertemplate": "layer %{x}, shuffled labels: mean %{customdata[0]:.0%}, "
                "95th percentile %{customdata[1]:.0%}<extra></extra>",
            }
        )
    traces.append(accuracy_line(x, acc, name="nearest-centroid accuracy (leave one out)", what="accuracy"))
    traces.append(
        {
            "type": "scatter",
            "x": [best],
            "y": [acc[best]],
            "mode": "markers",
            "marker": {"size": 20, "symbol": "star", "color": SENSE_COLORS[1], "line": {"width": 1}},
            "name": f"best layer: {names[best]}",
            "hovertemplate": "best layer %{x}: %{y:.1%}<extra></extra>",
        }
    )
    pooled = list(pooled or ())
    places = pooled_places(k, len(pooled))
    traces.append(majority_line(majority, places[-1] + 0.5 * pooled_gap(k) if pooled else k - 0.7))
    if pooled:
        traces.append(
            {
                "type": "scatter",
                "x": places,
                "y": [acc_ for _, acc_ in pooled],
                "mode": "markers+text",
                "text": [f"{acc_:.0%}" for _, acc_ in pooled],
                "customdata": [_esc(name) for name, _ in pooled],
                "textposition": "top center",
                "cliponaxis": False,
                "marker": {"color": ALL_PAIRS_COLOR, "size": 13, "symbol": "diamond"},
                "name": "vectors averaged over layers" if len(pooled) > 1 else _esc(pooled[0][0]),
                "hovertemplate": "%{customdata}: %{y:.1%}<extra></extra>",
            }
        )
    layout = merged(
        base_layout(height=420),
        xaxis=x_axis(names, [name for name, _ in pooled]),
        yaxis={
            "title": {"text": "accuracy"},
            "range": [0, 1.16],
            "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1.0],
            "tickformat": ".0%",
        },
        legend=_legend_below(LEGEND_Y_POOLED if pooled else -0.22),
        shapes=layer_marks(k, pooled=len(pooled), selected=selected),
    )
    return figure(traces, layout)


LABEL_EVERY_POINT = 13  # layers up to which every point of an accuracy line carries its value


def _spaced_labels(text: list[str], gap: int) -> list[str]:
    """``text`` with a label kept at the first point, then only where it differs from the last one kept and lies at
    least ``gap`` points after it, and at the last point when it is ``gap`` after the last kept (else blank).

    >>> _spaced_labels(["42%", "25%", "42%", "83%", "83%", "83%", "92%", "92%", "92%", "92%"], gap=3)
    ['42%', '', '', '83%', '', '', '92%', '', '', '92%']
    """
    out = [""] * len(text)
    last = 0
    out[0] = text[0]
    for i in range(1, len(text)):
        if i - last < gap:
            continue
        if text[i] != out[last] or i == len(text) - 1:
            out[i], last = text[i], i
    return out


def accuracy_line(x: list, accuracy: np.ndarray, *, name: str, what: str, color: str = ALL_PAIRS_COLOR) -> dict:
    """An accuracy per layer as a thick line with each value written above its point ("83%"). With more than
    ``LABEL_EVERY_POINT`` layers (a 30-layer decoder) a value is written only where it differs from the last one
    written, at least a tenth of the layers after it, and at the last point if there is room: thirty "50%"s side
    by side would run into each other, and so did three changes in three layers on a phone ("42%25%42%")."""
    acc = np.asarray(accuracy, dtype=float)
    text = [f"{v:.0%}" for v in acc]
    if len(text) > LABEL_EVERY_POINT:
        text = _spaced_labels(text, gap=-(-len(text) // 10))
    return labelled_line(
        x,
        acc,
        text=text,
        name=name,
        hovertemplate=f"layer %{{x}}: {what} %{{y:.1%}}<extra></extra>",
        color=color,
    )
