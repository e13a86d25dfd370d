"""Shared look of every chart: a colour-blind-safe palette for sense labels and a readable layout.

The palette is Okabe & Ito's (2008) qualitative set, which stays distinguishable for the common forms of
colour blindness and on a washed-out projector. Sense colours are assigned in order of first appearance, so
the same sense keeps its colour on every chart of a page.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

# Okabe-Ito, reordered so the first colours are the most distinct on a projector.
SENSE_COLORS = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
NO_SENSE_COLOR = "#7F7F7F"
# Pairs of sentences: the same two colours on every chart that compares same- and different-sense pairs.
SAME_COLOR = SENSE_COLORS[2]  # bluish green
DIFFERENT_COLOR = SENSE_COLORS[4]  # vermillion
CONTEXT_COLOR = "#BBBBBB"
# Sequential scale for similarities and attention weights (perceptually uniform, colour-blind safe).
SEQUENTIAL = "Viridis"
# Diverging scale centred on 0 for adjusted similarities.
DIVERGING = "RdBu_r"

BASE_FONT = 14
PRESENTER_FONT = 22
# Numbers written inside heatmap cells: larger, but still fitting a 12 x 12 grid at full width.
PRESENTER_CELL_FONT = 14
PRESENTER_TEXT = "#111111"  # the theme's text colour (.streamlit/config.toml)


MAX_SENSES = len(SENSE_COLORS)  # distinct sense colours on one chart; more senses are grouped as "other"


def group_senses(senses: Sequence[str | None], max_senses: int = MAX_SENSES) -> list[str | None]:
    """The senses with at most ``max_senses`` distinct names: when there are more, the ``max_senses - 1``
    most frequent keep their names and the rest become one group, "other (k senses)", which the legend
    and tick labels then say. None (no label) stays None. Keeps charts fast and readable whatever the set.
    """
    counts: dict[str, int] = {}
    for s in senses:
        if s:
            counts[s] = counts.get(s, 0) + 1
    if len(counts) <= max_senses:
        return list(senses)
    first = {s: k for k, s in enumerate(counts)}
    keep = set(sorted(counts, key=lambda s: (-counts[s], first[s]))[: max_senses - 1])
    other = f"other ({len(counts) - len(keep)} senses)"
    return [s if (not s or s in keep) else other for s in senses]


def esc(text: object) -> str:
    """User text made safe for plotly, whose titles, ticks, legends and hovers read a little HTML.

    The one escape for every chart module (``<``, ``>`` and ``&`` become entities; quotes stay).
    """
    return html.escape(str(text), quote=False)


def finite(values) -> np.ndarray:
    """Values as float64 with NaN and ±inf replaced by 0: a chart never shows NaN."""
    return np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)


def sense_color_map(senses: Sequence[str | None]) -> dict[str | None, str]:
    """A colour for each distinct sense, in order of first appearance; None (no label) is grey."""
    colors: dict[str | None, str] = {}
    for s in senses:
        if s is None:
            colors[None] = NO_SENSE_COLOR
        elif s not in colors:
            named = [k for k in colors if k is not None]
            colors[s] = SENSE_COLORS[len(named) % len(SENSE_COLORS)]
    return colors


def sense_ticks(
    labels: Sequence[str],
    senses: Sequence[str | None],
    *,
    order: Sequence[int] | None = None,
    names: bool = True,
) -> list[str]:
    """Tick labels (escaped) that start with a bar in their sentence's sense colour, for heatmap axes.

    labels, senses: one per sentence; order: which sentences to label, in axis order (default all, as
    given); colours are assigned over the full ``senses`` in order of first appearance, so a sense keeps
    its colour whatever the order. ``names=False`` draws the bar without the sense name. A sentence
    without a sense gets its plain label.
    """
    colors = sense_color_map(senses)
    out = []
    for i in range(len(labels)) if order is None else order:
        s, lab = senses[i], esc(labels[i])
        name = f"{esc(s)} " if names else ""
        out.append(f"<span style='color:{colors[s]}'>{name}▍</span>{lab}" if s else lab)
    return out


def apply_layout(fig: go.Figure, *, title: str | None = None, height: int | None = None) -> go.Figure:
    """Readable defaults: title, margins, font size, hover label; returns the same figure."""
    fig.update_layout(
        font={"size": BASE_FONT},
        margin={"l": 10, "r": 10, "t": 60 if title else 30, "b": 10},
        hoverlabel={"font_size": BASE_FONT},
        legend={"title_text": ""},
    )
    if title is not None:
        fig.update_layout(title={"text": title, "x": 0.0, "xanchor": "left"})
    if height is not None:
        fig.update_layout(height=height)
    return fig


def presenter_layout(fig: go.Figure) -> go.Figure:
    """Scale a figure for a projector and return a copy (the original is not changed).

    Larger fonts everywhere (titles, axis ticks and titles, legend, subplot titles, colour bars, the
    numbers written in heatmap cells), near-black text instead of the theme's grey (grey fades on a
    washed-out projector), thicker lines and larger markers, and 25% more height. Lines drawn with
    width 0 (the edges of shaded bands) stay invisible.
    """
    big = go.Figure(fig)
    tick = PRESENTER_FONT - 4
    big.update_layout(
        font={"size": PRESENTER_FONT, "color": PRESENTER_TEXT},
        hoverlabel={"font_size": PRESENTER_FONT},
        legend={"font": {"size": PRESENTER_FONT - 2}},
    )
    if big.layout.title.text:
        big.update_layout(title_font_size=PRESENTER_FONT + 4)
    if big.layout.margin.t is not None and (big.layout.title.text or big.layout.annotations):
        # the larger title and subplot titles need a taller top margin, or the plot covers them
        big.update_layout(margin_t=int(big.layout.margin.t * 1.4))
    axis_fonts = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title_font": {"size": PRESENTER_FONT, "color": PRESENTER_TEXT},
    }
    big.update_xaxes(**axis_fonts)
    big.update_yaxes(**axis_fonts)
    for ann in big.layout.annotations:  # subplot titles and labels; a colour set on purpose is kept
        ann.font.size = PRESENTER_FONT - 2
        if ann.font.color is None:
            ann.font.color = PRESENTER_TEXT
    colorbar = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title": {"font": {"size": PRESENTER_FONT - 2, "color": PRESENTER_TEXT}},
    }
    big.update_coloraxes(colorbar=colorbar)
    for trace in big.data:
        if trace.type == "heatmap":
            if trace.texttemplate or trace.text is not None:
                trace.textfont.size = PRESENTER_CELL_FONT
            if not trace.coloraxis:
                trace.colorbar.update(colorbar)
        elif trace.type in ("scatter", "scattergl"):
            width = trace.line.width
            if width is None or width > 0:
                trace.line.width = max(4.0, 1.5 * (width or 2))
            size = trace.marker.size
            if isinstance(size, (int, float)):
                trace.marker.size = size * 1.3
            if trace.textfont.size is not None or (trace.mode and "text" in trace.mode):
                trace.textfont.size = tick
        elif trace.type == "bar" and (trace.text is not None or trace.texttemplate):
            trace.textfont.size = tick
    if big.layout.height:
        big.update_layout(height=int(big.layout.height * 1.25))
    return big
