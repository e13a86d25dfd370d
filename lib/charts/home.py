"""The home page's first picture: one word's similarity across sentences, before and after context."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import SEQUENTIAL, apply_layout, esc, group_senses, sense_ticks, sentence_ticks
from lib.charts.layers import CELL_TEXT_MAX, HOVER_MAX, MAX_TICK_LABELS, _thin


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
    safe = [esc(x) for x in labels]
    ticks = sense_ticks(labels, senses)
    both = np.concatenate([np.asarray(first).ravel(), np.asarray(last).ravel()])
    lo = float(np.floor(both.min() * 10) / 10) if both.size else 0.0
    lo = min(lo, 0.9)
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.04, shared_yaxes=True)
    for col, m in ((1, first), (2, last)):
        m = np.asarray(m, dtype=float)
        fig.add_trace(
            go.Heatmap(
                z=m,
                x=list(range(n)),
                y=list(range(n)),
                # n × n hover strings and cell text only for a small set (the Layers page's rule): at 500
                # sentences they were 15 s of CPU and 65 MB sent to the browser on every rerun
                text=[[f"{v:.2f}" for v in row] for row in m] if n <= CELL_TEXT_MAX else None,
                customdata=[[[safe[i], safe[j]] for j in range(n)] for i in range(n)] if n <= HOVER_MAX else None,
                hovertemplate=(
                    "%{customdata[0]}<br>%{customdata[1]}<br>" if n <= HOVER_MAX else "row %{y}, column %{x}<br>"
                )
                + "cosine %{z:.3f}<extra></extra>",
                texttemplate="%{text}" if n <= CELL_TEXT_MAX else None,
                zmin=lo,
                zmax=1.0,
                colorscale=SEQUENTIAL,
                coloraxis="coloraxis",
            ),
            row=1,
            col=col,
        )
    shown = _thin(list(range(n)), MAX_TICK_LABELS)
    fig.update_xaxes(tickvals=shown, ticktext=[str(i + 1) for i in shown], title_text="sentence")
    fig.update_yaxes(tickvals=shown, ticktext=[ticks[i] for i in shown], autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_layout(coloraxis={"colorscale": SEQUENTIAL, "cmin": lo, "cmax": 1.0, "colorbar": {"title": "cosine"}})
    return apply_layout(fig, height=int(min(900, max(380, 34 * n + 120))))


def similarity_heatmap(
    m: np.ndarray,
    sentences: Sequence[str],
    senses: Sequence[str | None],
    title: str | None,
    *,
    zmin: float,
    show_scale: bool = True,
) -> go.Figure:
    """One cosine matrix with short row labels, for a chart that must fit a phone as well as a projector.

    m: (n, n) cosine matrix; sentences: the n sentences (escaped here), shown in the hover label (and, on the
    page, in a table under the chart); senses: n sense labels or None. Rows are labelled S1…Sn after their
    sense in the sense's colour (common.sentence_ticks); columns 1…n. Two of these side by side share
    ``zmin`` (and 1.0) so their colours compare; ``show_scale`` draws the colour bar. Large sets follow the
    Layers page's rules: cell text up to CELL_TEXT_MAX sentences, hover sentences up to HOVER_MAX, thinned
    tick labels, at most 900 px tall.
    """
    m = np.asarray(m, dtype=float)
    n = len(sentences)
    senses = group_senses(senses)
    safe = [esc(s) for s in sentences]
    ticks = sentence_ticks(senses)
    fig = go.Figure(
        go.Heatmap(
            z=m,
            x=list(range(n)),
            y=list(range(n)),
            text=[[f"{v:.2f}" for v in row] for row in m] if n <= CELL_TEXT_MAX else None,
            customdata=[[[f"S{i + 1}", safe[i], f"S{j + 1}", safe[j]] for j in range(n)] for i in range(n)]
            if n <= HOVER_MAX
            else None,
            hovertemplate=(
                "%{customdata[0]} %{customdata[1]}<br>%{customdata[2]} %{customdata[3]}<br>"
                if n <= HOVER_MAX
                else "row %{y}, column %{x}<br>"
            )
            + "cosine %{z:.3f}<extra></extra>",
            texttemplate="%{text}" if n <= CELL_TEXT_MAX else None,
            zmin=zmin,
            zmax=1.0,
            colorscale=SEQUENTIAL,
            showscale=show_scale,
            colorbar={"title": {"text": "cosine"}, "thickness": 14},
        )
    )
    shown = _thin(list(range(n)), MAX_TICK_LABELS)
    fig.update_xaxes(tickvals=shown, ticktext=[str(i + 1) for i in shown], title_text="sentence")
    fig.update_yaxes(tickvals=shown, ticktext=[ticks[i] for i in shown], autorange="reversed")
    return apply_layout(fig, title=title, height=int(min(900, max(340, 30 * n + 130))))


def shared_floor(*matrices: np.ndarray) -> float:
    """The lower end of a colour scale shared by several cosine matrices: a tenth below their minimum, at most 0.9."""
    both = np.concatenate([np.asarray(m, dtype=float).ravel() for m in matrices])
    lo = float(np.floor(both.min() * 10) / 10) if both.size else 0.0
    return min(lo, 0.9)
