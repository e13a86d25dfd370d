"""Figures for the Anisotropy page: mean cosine per layer under each treatment, a similarity matrix
before and after a treatment, per-dimension statistics (rogue dimensions) and vector lengths.

Builders take plain arrays and labels and return plotly Figures; user text is escaped here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    DIFFERENT_COLOR,
    SAME_COLOR,
    base_layout,
    figure,
    grid_axes,
    layer_dtick,
    layer_mark,
    layer_ticktext,
    merged,
    sense_ticks,
    subplot_grid,
)
from lib.charts.common import esc as escape
from lib.charts.common import finite as _finite
from lib.charts.home import paired_cosine_heatmaps

# One colour and dash per treatment, the same on every chart (Okabe-Ito colours).
TREATMENT_STYLE = {
    "none": ("#000000", "solid"),
    "zscore": ("#0072B2", "solid"),
    "whiten": ("#009E73", "dash"),
    "topk": ("#D55E00", "dot"),
}
REFERENCE_COLOR = "#999999"
DETAILED_HOVER_MAX = 60  # up to this many sentences the heatmap hover shows the sentences themselves
HIGHLIGHT = "#D55E00"  # a marked dimension or layer
PLAIN = "#0072B2"


def _title(title: str | None) -> str | None:
    return escape(title) if title else None


def anisotropy_by_layer(
    curves: Mapping[str, Sequence[float]],
    names: Mapping[str, str],
    *,
    layer: int | None = None,
    reference: Sequence[float] | None = None,
    reference_name: str = "BERT-base (Ethayarajh 2019)",
    title: str | None = None,
) -> go.Figure:
    """Mean cosine between random distinct tokens at each layer, one line per treatment.

    curves: treatment key -> (num_layers + 1,) values, layer 0 = embeddings.
    names:  treatment key -> legend text.
    layer:  a layer to mark (lib.charts.common.layer_mark).
    reference: published values for a model of possibly different depth, e.g. 13 values for BERT-base;
        drawn stretched to the same depth (its layer j at x = j · num_layers / (len - 1)), with the
        reference model's own layer number in the hover.
    """
    traces = []
    n_layers = None
    for key, values in curves.items():
        y = _finite(values)
        n_layers = len(y) - 1
        color, dash = TREATMENT_STYLE.get(key, ("#56B4E9", "solid"))
        name = escape(names.get(key, key))
        traces.append(
            {
                "type": "scatter",
                "x": list(range(len(y))),
                "y": y,
                "mode": "lines+markers",
                "name": name,
                "line": {"color": color, "dash": dash, "width": 3},
                "marker": {"size": 8},
                "hovertemplate": f"{name}<br>layer %{{x}}: mean cosine %{{y:.3f}}<extra></extra>",
            }
        )
    if reference is not None and n_layers:
        ref = _finite(reference)
        depth = len(ref) - 1
        traces.append(
            {
                "type": "scatter",
                "x": [j * n_layers / depth for j in range(len(ref))],
                "y": ref,
                "mode": "lines+markers",
                "name": escape(reference_name),
                "line": {"color": REFERENCE_COLOR, "dash": "dashdot", "width": 2},
                "marker": {"size": 6, "symbol": "diamond"},
                "customdata": list(range(len(ref))),
                "hovertemplate": (
                    f"{escape(reference_name)}<br>its layer %{{customdata}} of {depth}: "
                    "mean cosine %{y:.3f}<extra></extra>"
                ),
            }
        )
    ys = [_finite(v) for v in curves.values()]
    if reference is not None:
        ys.append(_finite(reference))
    lo = min(0.0, min((float(y.min()) for y in ys if y.size), default=0.0))
    hi = max(0.2, max((float(y.max()) for y in ys if y.size), default=0.2))
    layout = merged(
        base_layout(title=_title(title), height=430),
        xaxis={
            "title": {"text": "layer (0 = embeddings)"},
            "tickvals": list(range((n_layers or 0) + 1)),  # the layers (lib.charts.common.layer_positions)
            "ticktext": layer_ticktext((n_layers or 0) + 1),  # a decoder's 31 numbers do not fit a phone
            "range": [-0.3, (n_layers or 1) + 0.3],
        },
        yaxis={
            "title": {"text": "mean cosine of random token pairs"},
            "range": [lo - 0.03, hi + 0.05],
            "zeroline": True,
        },
        legend={"orientation": "h", "y": -0.22, "x": 0},
        shapes=[layer_mark(layer)] if layer is not None else [],
    )
    return figure(traces, layout)


def before_after_range(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """One colour range for two (n, n) cosine matrices: their off-diagonal values (the diagonal, always 1, would
    wash out the pairs) rounded out to 0.1, at least 0.2 wide, at most 1."""
    A, B = _finite(before), _finite(after)
    n = A.shape[0]
    off = ~np.eye(n, dtype=bool)
    both = np.concatenate([A[off], B[off]]) if n > 1 else np.zeros(1)
    lo = float(np.floor(both.min() * 10) / 10)
    hi = float(min(1.0, np.ceil(both.max() * 10) / 10))
    if hi - lo < 0.2:
        lo = hi - 0.2
    return lo, hi


def similarity_before_after(
    before: np.ndarray,
    after: np.ndarray,
    labels: Sequence[str],
    senses: Sequence[str | None],
    titles: tuple[str, str],
) -> go.Figure:
    """Two (n, n) cosine matrices side by side on ONE colour scale.

    The scale is sequential and spans the off-diagonal values of BOTH matrices (rounded out to 0.1),
    so a colour means the same cosine on both sides; a treatment such as z-scoring moves cosines toward
    0 or below, and the shared scale shows that shift. The diagonal (always 1) is left out of the range
    so it does not wash out the pairs. Tick labels carry a sense colour bar.
    """
    A, B = _finite(before), _finite(after)
    n = len(labels)
    lo, hi = before_after_range(A, B)
    detailed = n <= DETAILED_HOVER_MAX  # per-cell sentence hover; beyond that only numbers (payload size)
    if detailed:
        safe = [escape(x) for x in labels]
        sense_txt = [escape(s) if s else "no label" for s in senses]
        hover = {
            "customdata": [[[safe[i], safe[j], sense_txt[i], sense_txt[j]] for j in range(n)] for i in range(n)],
            "hovertemplate": "%{customdata[0]} (%{customdata[2]})<br>%{customdata[1]} (%{customdata[3]})"
            "<br>cosine %{z:.3f}<extra></extra>",
        }
        ticks = sense_ticks(labels, senses, names=False)
    else:
        hover = {"hovertemplate": "sentences %{y} and %{x}<br>cosine %{z:.3f}<extra></extra>"}
        ticks = [str(i + 1) for i in range(n)]
    return paired_cosine_heatmaps(
        (A, B),
        titles=[escape(t) for t in titles],
        zrange=(lo, hi),
        row_ticks=ticks,
        hover=hover,
        text_max=12,
        first=1,
        height=int(min(900, max(400, 30 * n + 140))),
    )


def dimension_profile(
    variance: np.ndarray,
    mean: np.ndarray,
    cosine_contribution: np.ndarray,
    *,
    label_top: int = 3,
    title: str | None = None,
) -> go.Figure:
    """Per-dimension variance, mean and part of the mean cosine, as three stacked bar charts.

    variance, mean, cosine_contribution: (hidden,). In each row the `label_top` most extreme dimensions
    (largest variance, largest |mean|, largest |part|) are labelled; every labelled dimension is drawn
    orange in all three rows, so one dimension can be followed from row to row. A "rogue" dimension is
    a spike far above the rest.

    Drawn light for the browser (a slider's redraw time): each row's d bars are one filled step line (plotly's "hvh"
    shape: a flat step one dimension wide centred on each dimension, i.e. bars with no gap, as they are
    drawn at this width anyway), one SVG path instead of d; the labelled dimensions are drawn over it as
    orange rectangles of the same width (one path per row), and their "dim j" labels are a text trace per row, not
    annotations (plotly measures and redraws every annotation of a figure when any one changes). Traces
    0-2 are the rows' profiles, 3-5 their orange rectangles, 6-8 their labels.
    """
    var, mu, contrib = _finite(variance), _finite(mean), _finite(cosine_contribution)
    d = var.shape[0]
    x = np.arange(d)
    rows_data = ((var, "variance"), (mu, "mean"), (contrib, "part of mean cosine"))
    tops = [
        [int(j) for j in np.argsort(-np.abs(vals), kind="stable")[: max(0, label_top)]]
        for vals, _ in rows_data
    ]
    hi = sorted(set().union(*tops))
    grid = subplot_grid(
        3,
        1,
        shared_x=True,
        v_space=0.07,
        titles=(
            "variance of each dimension",
            "mean of each dimension",
            "each dimension's part of the mean cosine",  # (they add up to it: the page says so; on a phone
            # the longer title ran past the chart's edge)
        ),
    )
    traces, marked, labels = [], [], []
    for k, ((vals, what), top) in enumerate(zip(rows_data, tops, strict=True)):
        xname, yname = grid_axes(k)
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": vals,
                "mode": "lines",
                "line": {"shape": "hvh", "color": PLAIN, "width": 1},
                "fill": "tozeroy",
                "fillcolor": PLAIN,
                "hoveron": "points",
                "hovertemplate": f"dimension %{{x}}<br>{what} %{{y:.4f}}<extra></extra>",
                "showlegend": False,
                "xaxis": xname,
                "yaxis": yname,
            }
        )
        # the labelled dimensions as orange rectangles, one dimension wide, in one filled path (a bar trace
        # would sit under the filled profile: plotly draws bars below scatter traces)
        rx, ry = [], []
        for j in hi:
            rx += [j - 0.5, j - 0.5, j + 0.5, j + 0.5, None]
            ry += [0.0, float(vals[j]), float(vals[j]), 0.0, None]
        marked.append(
            {
                "type": "scatter",
                "x": rx,
                "y": ry,
                "mode": "lines",
                "line": {"color": HIGHLIGHT, "width": 1},  # covers the profile's blue outline
                "fill": "toself",
                "fillcolor": HIGHLIGHT,
                "hoverinfo": "skip",  # the profile underneath gives the same numbers
                "showlegend": False,
                "xaxis": xname,
                "yaxis": yname,
            }
        )
        labels.append(
            {
                "type": "scatter",
                "mode": "text",
                "x": top,
                "y": [float(vals[j]) for j in top],
                "text": [f"dim {j}" for j in top],
                "textposition": ["top center" if vals[j] >= 0 else "bottom center" for j in top],
                "textfont": {"color": HIGHLIGHT, "size": 12},
                "cliponaxis": False,  # a label above the tallest bar stays whole
                "hoverinfo": "skip",
                "showlegend": False,
                "xaxis": xname,
                "yaxis": yname,
            }
        )
    grid["xaxis3"]["title"] = {"text": "dimension"}
    layout = merged(base_layout(title=_title(title), height=660), **grid, bargap=0)
    return figure(traces + marked + labels, layout)


def norms_by_layer(mean_norm: Sequence[float], *, layer: int | None = None, title: str | None = None) -> go.Figure:
    """Mean vector length per layer (bars), the chosen layer marked (lib.charts.common.layer_mark)."""
    y = _finite(mean_norm)
    trace = {
        "type": "bar",
        "x": list(range(len(y))),
        "y": y,
        "marker": {"color": PLAIN},
        # each value written up to 13 layers (BERT-base's); a decoder's 31 are left to the hover (see uniformtext)
        "text": [f"{v:.1f}" for v in y] if layer_dtick(len(y)) == 1 else None,
        "textposition": "outside",
        "hovertemplate": "layer %{x}: mean length %{y:.2f}<extra></extra>",
    }
    layout = merged(
        base_layout(title=_title(title), height=320),
        xaxis={
            "title": {"text": "layer (0 = embeddings)"},
            "tickvals": list(range(len(y))),
            "ticktext": layer_ticktext(len(y)),
        },
        yaxis={
            "title": {"text": "mean vector length"},
            "range": [0, float(y.max()) * 1.2 if y.size and y.max() > 0 else 1],
        },
        **({"shapes": [layer_mark(layer)]} if layer is not None else {}),  # no empty list: plotly drops it
        # plotly shrinks a value to its bar's width (a decoder's 31 bars on a phone printed 5-px numbers): a value
        # that does not fit at 10 px is left to the hover instead
        uniformtext={"minsize": 10, "mode": "hide"},
    )
    return figure([trace], layout)


def gap_bars(
    values: Mapping[str, tuple[float | None, float | None]],
    *,
    title: str | None = None,
) -> go.Figure:
    """Same-sense and different-sense mean cosine for each version (e.g. raw vs z-scored).

    values: version name -> (same-sense mean, different-sense mean); None bars are left out.
    """
    names = [escape(n) for n in values]
    traces = []
    for i, label, color in ((0, "same sense", SAME_COLOR), (1, "different sense", DIFFERENT_COLOR)):
        y = [float(_finite(v[i])) if v[i] is not None else None for v in values.values()]
        traces.append(
            {
                "type": "bar",
                "x": names,
                "y": y,
                "name": label,
                "marker": {"color": color},
                "text": [f"{v:.2f}" if v is not None else "" for v in y],
                "textposition": "outside",
                "hovertemplate": f"%{{x}}<br>{label}: mean cosine %{{y:.3f}}<extra></extra>",
            }
        )
    layout = merged(
        base_layout(title=_title(title), height=360),
        barmode="group",
        legend={"orientation": "h", "y": -0.15, "x": 0},
        yaxis={"title": {"text": "mean cosine"}},
    )
    return figure(traces, layout)
