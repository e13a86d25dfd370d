"""The home page's first picture: one word's similarity across sentences, before and after context."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import (
    CELL_TEXT_MAX,
    HOVER_MAX,
    MAX_TICK_LABELS,
    SEQUENTIAL,
    base_layout,
    cell_numbers,
    esc,
    figure,
    grid_axes,
    group_senses,
    heatmap_hover,
    merged,
    sense_ticks,
    sentence_ticks,
    subplot_grid,
    thin,
)


def paired_cosine_heatmaps(
    matrices: Sequence[np.ndarray],
    *,
    titles: Sequence[str],
    zrange: tuple[float, float],
    row_ticks: Sequence[str],
    hover: dict,
    text_max: int,
    first: int = 0,
    height: int,
) -> go.Figure:
    """Cosine matrices side by side on ONE colour scale (a colour means the same cosine in each), with one
    y axis of sentence labels on the left.

    matrices: (n, n) each; titles: one per matrix (escaped by the caller); zrange: the shared scale;
    row_ticks: n y tick labels; hover: the traces' hover properties (hovertemplate, and customdata if any);
    text_max: the cell values are written in the cells up to this many sentences; first: the number of
    the first sentence on the axes (0 or 1). At most MAX_TICK_LABELS tick labels per axis.
    """
    n = len(row_ticks)
    layout = subplot_grid(1, len(matrices), titles=titles, h_space=0.04, shared_y=True)
    traces = []
    for k, m in enumerate(matrices):
        z = np.asarray(m, dtype=np.float32)  # float32 halves what the browser receives
        trace = {
            "type": "heatmap",
            "z": z,
            "x": list(range(first, n + first)),
            "y": list(range(first, n + first)),
            "coloraxis": "coloraxis",
            "xaxis": grid_axes(k)[0],
            "yaxis": grid_axes(k)[1],
            **hover,
            **cell_numbers(z, text_max),
        }
        traces.append(trace)
    shown = thin(list(range(n)), MAX_TICK_LABELS)
    for name, axis in layout.items():
        if name.startswith("xaxis"):
            axis.update(
                tickvals=[i + first for i in shown], ticktext=[str(i + 1) for i in shown], title={"text": "sentence"}
            )
        elif name.startswith("yaxis"):
            axis["autorange"] = "reversed"
    layout["yaxis"].update(tickvals=[i + first for i in shown], ticktext=[row_ticks[i] for i in shown])
    layout = merged(
        base_layout(height=height),
        **layout,
        coloraxis={
            "colorscale": SEQUENTIAL,
            "cmin": zrange[0],
            "cmax": zrange[1],
            "colorbar": {"title": {"text": "cosine"}},
        },
    )
    return figure(traces, layout)


def before_after_heatmaps(
    first: np.ndarray,
    last: np.ndarray,
    labels: Sequence[str],
    senses: Sequence[str | None],
    titles: tuple[str, str],
) -> go.Figure:
    """Two cosine matrices side by side on one colour scale.

    first, last: (n, n) cosine matrices (e.g. the embedding layer and the last layer).
    labels: n short sentence labels (escaped here for plotly); senses: n sense labels or None.
    Tick labels are coloured by sense so blocks of one sense are visible.
    """
    n = len(labels)
    senses = group_senses(senses)
    # n × n hover strings and cell text only for a small set (the Layers page's rule): at 500 sentences
    # they were 15 s of CPU and 65 MB sent to the browser on every rerun
    hover = heatmap_hover(n, [esc(x) for x in labels], "cosine")
    return paired_cosine_heatmaps(
        (first, last),
        titles=titles,
        zrange=(shared_floor(first, last), 1.0),
        row_ticks=sense_ticks(labels, senses),
        hover=hover,
        text_max=CELL_TEXT_MAX,
        height=int(min(900, max(380, 34 * n + 120))),
    )


def similarity_heatmap(
    m: np.ndarray,
    sentences: Sequence[str],
    senses: Sequence[str | None],
    title: str | None,
    *,
    zmin: float,
    zmax: float = 1.0,
    show_scale: bool = True,
) -> go.Figure:
    """One cosine matrix with short row labels, for a chart that must fit a phone as well as a projector.

    m: (n, n) cosine matrix; sentences: the n sentences (escaped here), shown in the hover label (and, on the
    page, in a table under the chart); senses: n sense labels or None. Rows are labelled S1…Sn after their
    sense in the sense's colour (common.sentence_ticks); columns 1…n. Two of these side by side share
    ``zmin`` and ``zmax`` (1.0 unless given) so their colours compare; ``show_scale`` draws the colour bar. Large sets follow the
    Layers page's rules: cell text up to CELL_TEXT_MAX sentences, hover sentences up to HOVER_MAX, thinned
    tick labels, at most 900 px tall.
    """
    m = np.asarray(m, dtype=float)
    n = len(sentences)
    senses = group_senses(senses)
    safe = [esc(s) for s in sentences]
    ticks = sentence_ticks(senses)
    trace = {
        "type": "heatmap",
        "z": m.astype(np.float32),  # float32 halves what the browser receives (500 sentences: 1.3 MB, not 2.7)
        "x": list(range(n)),
        "y": list(range(n)),
        **cell_numbers(m),
        "zmin": zmin,
        "zmax": zmax,
        "colorscale": SEQUENTIAL,
        "showscale": show_scale,
        "colorbar": {"title": {"text": "cosine"}, "thickness": 14},
    }
    if n <= HOVER_MAX:
        trace["customdata"] = [[[f"S{i + 1}", safe[i], f"S{j + 1}", safe[j]] for j in range(n)] for i in range(n)]
        trace["hovertemplate"] = (
            "%{customdata[0]} %{customdata[1]}<br>%{customdata[2]} %{customdata[3]}<br>cosine %{z:.3f}<extra></extra>"
        )
    else:
        trace["hovertemplate"] = "row %{y}, column %{x}<br>cosine %{z:.3f}<extra></extra>"
    shown = thin(list(range(n)), MAX_TICK_LABELS)
    layout = merged(
        base_layout(title=title, height=int(min(900, max(340, 30 * n + 130)))),
        xaxis={"tickvals": shown, "ticktext": [str(i + 1) for i in shown], "title": {"text": "sentence"}},
        yaxis={"tickvals": shown, "ticktext": [ticks[i] for i in shown], "autorange": "reversed"},
    )
    return figure([trace], layout)


def shared_floor(*matrices: np.ndarray) -> float:
    """The lower end of a colour scale shared by several cosine matrices: a tenth below their minimum, at most 0.9."""
    both = np.concatenate([np.asarray(m, dtype=float).ravel() for m in matrices])
    lo = float(np.floor(both.min() * 10) / 10) if both.size else 0.0
    return min(lo, 0.9)
