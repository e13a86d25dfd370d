"""The home page's first picture: one word's similarity across sentences, before and after context."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lib.charts.common import SEQUENTIAL, apply_layout, sense_color_map


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
    safe = [escape(x) for x in labels]
    colors = sense_color_map(senses)
    if any(senses):
        ticks = [
            f"<span style='color:{colors[s]}'>{escape(s or '–')} ▍</span>{lab}" for s, lab in zip(senses, safe, strict=True)
        ]
    else:
        ticks = safe
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
                text=[[f"{v:.2f}" for v in row] for row in m],
                customdata=[[[safe[i], safe[j]] for j in range(n)] for i in range(n)],
                hovertemplate="%{customdata[0]}<br>%{customdata[1]}<br>cosine %{z:.3f}<extra></extra>",
                texttemplate="%{text}" if n <= 14 else None,
                zmin=lo,
                zmax=1.0,
                colorscale=SEQUENTIAL,
                coloraxis="coloraxis",
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(tickvals=list(range(n)), ticktext=[str(i + 1) for i in range(n)], title_text="sentence")
    fig.update_yaxes(tickvals=list(range(n)), ticktext=ticks, autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_layout(coloraxis={"colorscale": SEQUENTIAL, "cmin": lo, "cmax": 1.0, "colorbar": {"title": "cosine"}})
    return apply_layout(fig, height=max(380, 34 * n + 120))
