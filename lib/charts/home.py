"""The home page's first picture: one word's similarity across sentences, before and after context."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import SEQUENTIAL, apply_layout, esc, group_senses, sense_ticks
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
