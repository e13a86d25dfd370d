"""Fitting charts to the screen: the numbers written in heatmap cells are sized as plotly.js sizes them, and
hidden where they would be too small to read (:func:`fit_cell_text`, :func:`cell_text_changes`)."""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
from plotly.basedatatypes import BasePlotlyType

from lib.charts.figures import LAZY_LOCK, LazyFigure

# --------------------------------------------------------------------------- fitting charts to the screen
# Numbers written in heatmap cells. plotly.js sizes them itself when textfont.size is unset ("auto"): the
# largest font at which the widest text fits the drawn cell, capped at the layout font. A character is taken
# as CHAR_WIDTH font sizes wide and a line as LINE_HEIGHT font sizes tall (plotly's LINE_SPACING = 1.3).
CHAR_WIDTH = 0.65
LINE_HEIGHT = 1.3
MIN_CELL_FONT = 9  # px; numbers that would be drawn smaller are hidden (hover still gives them)
# The width (px) a full-width chart gets when the server cannot know the screen: a laptop's main column with
# the sidebar open (1366 - 300 - padding), and a 1280-px projector in presenter mode (sidebar closed,
# 2rem side padding at 22-px type). Narrower screens shrink the numbers further (plotly's automatic size),
# and the page's CSS hides any that end up below MIN_CELL_FONT (ui.style).
ASSUMED_WIDTH_PX = 980
PRESENTER_WIDTH_PX = 1190
_PLOTLY_DEFAULT_HEIGHT = 450
_PLOTLY_DEFAULT_MARGIN = 80
_COLORBAR_PX = 90  # a colour bar with its tick labels and title
_TAG = re.compile(r"<[^>]*>")


def cell_text_size(
    cell_w: float, cell_h: float, chars: int, *, lines: int = 1, max_size: int, min_size: int = MIN_CELL_FONT
) -> int | None:
    """Font size (px) for text of ``chars`` characters on ``lines`` lines in a ``cell_w`` x ``cell_h`` px
    heatmap cell, or None when it would be smaller than ``min_size`` (the text should then be hidden).

    The rule is plotly.js's own automatic heatmap text size, so the estimate agrees with what it draws:
    size = min(cell_w / chars / CHAR_WIDTH, cell_h / lines / LINE_HEIGHT, max_size), rounded down.
    """
    if chars <= 0 or lines <= 0 or cell_w <= 0 or cell_h <= 0:
        return None
    size = min(math.floor(cell_w / chars / CHAR_WIDTH), math.floor(cell_h / lines / LINE_HEIGHT), int(max_size))
    return size if size >= min_size else None


def _props(obj) -> dict:
    """The property dict of a plotly object (its figure's own storage, no copy) or of a dict."""
    props = obj._props if isinstance(obj, BasePlotlyType) else obj
    return props if isinstance(props, dict) else {}


def _get(d, *path):
    """``d[path[0]][path[1]]...`` through nested dicts, None where a step is missing."""
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _axis_domain(layout: dict, axis_ref: str | None, letter: str) -> tuple[float, float]:
    name = (axis_ref or letter).replace(letter, f"{letter}axis", 1)
    domain = _get(layout, name, "domain")
    domain = domain if domain is not None and len(domain) else (0.0, 1.0)
    return float(domain[0]), float(domain[1])


def _label_px(ticktext, font: float) -> float:
    """Rough width (px) of the widest tick label (HTML tags stripped)."""
    if ticktext is None or not len(ticktext):
        return 3 * font * CHAR_WIDTH
    return max(len(_TAG.sub("", str(t))) for t in ticktext) * font * CHAR_WIDTH + 8


def heatmap_cell_px(fig: go.Figure, trace: go.Heatmap | dict, width_px: float) -> tuple[float, float]:
    """Estimated width and height (px) of one cell of a heatmap trace when ``fig`` is drawn ``width_px`` wide.

    Uses the figure's height and margins, the trace's axis domain, the widest y tick label and a colour bar.
    Reads the figure's dicts (a :class:`LazyFigure` stays lazy); ``trace`` is one of ``fig.data`` or its dict.
    """
    trace = _props(trace)
    z = trace.get("z")
    z = z if z is not None else ()
    rows = len(z)
    cols = max((len(r) for r in z), default=0)
    if rows == 0 or cols == 0:
        return 0.0, 0.0
    lay = fig._layout
    font = float(_get(lay, "font", "size") or 12)
    margin = lay.get("margin") or {}
    left, right, top, bottom = (margin.get(k) for k in ("l", "r", "t", "b"))
    left = left if left is not None else _PLOTLY_DEFAULT_MARGIN
    right = right if right is not None else _PLOTLY_DEFAULT_MARGIN
    top = top if top is not None else _PLOTLY_DEFAULT_MARGIN
    bottom = bottom if bottom is not None else _PLOTLY_DEFAULT_MARGIN
    yname = (trace.get("yaxis") or "y").replace("y", "yaxis", 1)
    ticks = _get(lay, yname, "ticktext")
    if trace.get("coloraxis"):
        has_bar = _get(lay, trace["coloraxis"], "showscale") is not False
    else:
        has_bar = trace.get("showscale") is not False
    plot_w = width_px - left - right - _label_px(ticks, font) - (_COLORBAR_PX if has_bar else 0)
    plot_h = (
        (lay.get("height") or _PLOTLY_DEFAULT_HEIGHT) - top - bottom - 2.5 * font
    )  # minus the x tick labels
    x0, x1 = _axis_domain(lay, trace.get("xaxis"), "x")
    y0, y1 = _axis_domain(lay, trace.get("yaxis"), "y")
    return max(plot_w, 0.0) * (x1 - x0) / cols, max(plot_h, 0.0) * (y1 - y0) / rows


def _cell_chars(trace: dict) -> int:
    """Characters in the widest number a heatmap trace (its dict) writes in its cells (its text, else its z
    formatted with the template's format, e.g. ``%{z:.2f}``)."""
    texttemplate = trace.get("texttemplate") or ""
    text = trace.get("text")
    if "%{text" in texttemplate and text is not None:
        cells = (v for row in text if row is not None for v in row)
        return max((len(_TAG.sub("", str(v))) for v in cells), default=0)
    spec = re.search(r"%\{z:([^}]*)\}", texttemplate)
    z = trace.get("z")
    values = np.asarray(z if z is not None else [], dtype=float).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0
    try:
        fmt = (spec.group(1) if spec else ".3g").replace("~", "")
        return max(len(format(float(v), fmt)) for v in (values.min(), values.max()))
    except ValueError:  # a d3 format Python does not read: assume four characters ("0.97")
        return 4


def fit_cell_text(fig: go.Figure, width_px: float, *, min_size: int = MIN_CELL_FONT) -> go.Figure:
    """Numbers in heatmap cells that never overlap: changes ``fig`` in place and returns it.

    For every heatmap trace that writes its values (``texttemplate``), estimate the cell size at
    ``width_px`` (:func:`heatmap_cell_px`). If the widest number would be drawn below ``min_size`` px, the
    numbers are hidden (the hover label still shows each value); otherwise the font size is left to plotly,
    which fits it to the cell actually drawn (so it also shrinks on a narrower screen than assumed).
    A :class:`LazyFigure` is changed in its dicts (and stays lazy).
    """
    changes = cell_text_changes(fig, width_px, min_size=min_size)
    if type(fig) is LazyFigure:
        with LAZY_LOCK:
            if type(fig) is LazyFigure:
                for i, hide in changes:
                    trace = fig._data[i]
                    if hide:
                        trace["texttemplate"] = ""
                    else:  # a new dict: the old one may be shared with other traces
                        trace["textfont"] = {k: v for k, v in trace["textfont"].items() if k != "size"}
                return fig
    for i, hide in changes:
        trace = fig.data[i]
        if hide:
            trace.texttemplate = ""
        else:
            trace.textfont.size = None  # plotly's automatic size: fits the drawn cell
    return fig


def cell_text_changes(
    fig: go.Figure, width_px: float, *, min_size: int = MIN_CELL_FONT
) -> list[tuple[int, bool]]:
    """What :func:`fit_cell_text` would change, without changing ``fig``: (trace index, hide its numbers).

    Empty when nothing changes, so a caller can draw a shared figure as it is instead of copying it first
    (a copy of a figure costs plotly tens of milliseconds). Reads the figure's dicts, so a
    :class:`LazyFigure` stays lazy.
    """
    max_size = int(_get(fig._layout, "font", "size") or 12)
    out = []
    for i, trace in enumerate(fig._data):
        texttemplate = trace.get("texttemplate")
        if trace.get("type") != "heatmap" or not texttemplate:
            continue
        chars = _cell_chars(trace)
        lines = texttemplate.count("<br>") + 1
        w, h = heatmap_cell_px(fig, trace, width_px)
        if cell_text_size(w, h, chars, lines=lines, max_size=max_size, min_size=min_size) is None:
            out.append((i, True))
        elif _get(trace, "textfont", "size") is not None:
            out.append((i, False))
    return out
