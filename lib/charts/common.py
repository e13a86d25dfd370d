"""Shared look of every chart: a colour-blind-safe palette for sense labels and a readable layout.

The palette is Okabe & Ito's (2008) qualitative set, which stays distinguishable for the common forms of
colour blindness and on a washed-out projector. Sense colours are assigned in order of first appearance, so
the same sense keeps its colour on every chart of a page.
"""

from __future__ import annotations

from collections.abc import Sequence

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
CONTEXT_COLOR = "#BBBBBB"
# Sequential scale for similarities and attention weights (perceptually uniform, colour-blind safe).
SEQUENTIAL = "Viridis"
# Diverging scale centred on 0 for adjusted similarities.
DIVERGING = "RdBu_r"

BASE_FONT = 14
PRESENTER_FONT = 22


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
    """Scale a figure for a projector: larger fonts everywhere, thicker lines. Returns a copy."""
    big = go.Figure(fig)
    big.update_layout(font={"size": PRESENTER_FONT}, hoverlabel={"font_size": PRESENTER_FONT})
    big.update_annotations(font_size=PRESENTER_FONT - 2)
    big.update_traces(selector={"type": "scatter"}, line_width=4)
    if big.layout.height:
        big.update_layout(height=int(big.layout.height * 1.25))
    return big
