"""What ui.widgets.chart sends to the browser: a figure that plotly.js draws once, with Streamlit's look.

Why (issue 16, measured with benchmarks/browser_profile.py): Streamlit 1.67 hashes a chart's spec into its
element id, so every chart whose figure changes is mounted anew in the browser (Plotly.purge + newPlot).
With ``st.plotly_chart(theme="streamlit")`` (the default) each new chart was then drawn **three** times:

1. ``newPlot``;
2. again from plotly's automargin, because Streamlit's theme turns ``automargin`` on for every axis over
   margins of 0-10 px, so the tick labels always push the margins out after the first draw;
3. again after mounting: Streamlit's PlotlyChart re-applies its theme in an effect, a JSON copy of the
   figure, and ``Plotly.react`` finds the new ``layout.template`` object and every base64 array
   (``{"dtype", "bdata"}``, compared by identity) "changed", so it recalculates and redraws everything.

On Anisotropy's layer slider (4 charts) that was 12 full draws per step and ~1 s of plotly.js; on Layer
by layer's pooling switch 15. Sent as built here, a changed chart is drawn once:

* ``theme=None``, and Streamlit's theme for this app written into the layout instead (:data:`LOOK`,
  :data:`AXIS_LOOK`; the values Streamlit 1.67 computes from .streamlit/config.toml, read from a drawn
  chart). Our own layout values win, as they did over the theme's template;
* no ``layout.template`` (nothing for the effect's copy to change) and ``layout.datarevision`` set, so
  ``Plotly.react`` compares no data arrays; arrays go as JSON lists (base64 specs are compared by
  identity), except large ones (over :data:`LIST_MAX` numbers), which stay base64 to keep the message small
  and cost that chart the third draw;
* axes keep ``automargin`` (labels are never cut), so the automargin redraw (2.) stays: 2 draws, not 3.
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import LazyFigure, figure_dict, typed_array

# Streamlit 1.67's plotly theme for this app's .streamlit/config.toml (light base, text #111111): the
# template layout its front end builds (PlotlyChart's theme code), read from a chart drawn in Chromium.
# Change these with the theme.
# Tick labels, axis titles, legends and hover text. Streamlit's own theme fades them to #808495, 3.7:1 on
# white, under WCAG AA's 4.5:1 for text this small and hard to read on a washed-out projector; this grey is
# 8:1 and still lighter than the page's text (#111111), so titles and numbers keep their weight.
_TEXT = "#4D5061"
_GRID = "#e6eaf1"
_FONT = '"Source Sans", sans-serif'
LOOK: dict = {
    "font": {"color": _TEXT, "family": _FONT, "size": 12, "weight": 400},
    # Streamlit writes the title in <b>…</b>; a bold font looks the same and leaves the title's text alone
    "title": {"font": {"family": _FONT, "size": 16, "color": "#111111", "weight": "bold"}, "pad": {"l": 4},
              "xanchor": "left", "x": 0},
    "legend": {"title": {"font": {"size": 12, "color": _TEXT}, "side": "top"}, "valign": "top",
               "bordercolor": "rgba(0,0,0,0)", "borderwidth": 0, "font": {"size": 12, "color": "#262730"}},
    "paper_bgcolor": "#FFFFFF",
    "plot_bgcolor": "#FFFFFF",
    "margin": {"pad": 8, "r": 0, "l": 0},
    "hoverlabel": {"bgcolor": "#FFFFFF", "bordercolor": "#8A8F98",
                   "font": {"color": _TEXT, "family": _FONT, "size": 12}},
    # theme.chartCategoricalColors (Okabe-Ito) and Streamlit's sequential / diverging scales
    "colorway": ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"],
}  # fmt: skip
SEQUENTIAL = ["#e4f5ff", "#c7ebff", "#a6dcff", "#83c9ff", "#60b4ff", "#3d9df3", "#1c83e1", "#0068c9", "#0054a3",
              "#004280"]  # fmt: skip
DIVERGING = ["#7d353b", "#bd4043", "#ff4b4b", "#ff8c8c", "#ffc7c7", "#a6dcff", "#60b4ff", "#1c83e1", "#0054a3",
             "#004280"]  # fmt: skip


def _scale(colors: list[str]) -> list:
    return [[i / (len(colors) - 1), c] for i, c in enumerate(colors)]


LOOK["colorscale"] = {"sequential": _scale(SEQUENTIAL), "sequentialminus": _scale(SEQUENTIAL),
                      "diverging": _scale(DIVERGING)}  # fmt: skip
_LOOK_UNTITLED = {k: v for k, v in LOOK.items() if k != "title"}
_AXIS = {
    # (not the theme's minor.gridcolor: a "minor" set in the layout, unlike one in a template, turns minor
    # ticks and grid lines on)
    "zerolinecolor": _GRID, "gridcolor": _GRID, "tickcolor": _GRID,
    "tickfont": {"color": _TEXT, "size": 12}, "automargin": True,
}  # fmt: skip
AXIS_LOOK = {
    "xaxis": {**_AXIS, "showgrid": False, "zeroline": False, "title": {"font": {"color": _TEXT, "size": 14},
              "standoff": 20}},
    "yaxis": {**_AXIS, "ticklabelposition": "outside", "title": {"font": {"color": _TEXT, "size": 14},
              "standoff": 24}},
}  # fmt: skip
COLORBAR_LOOK = {
    "thickness": 16, "xpad": 24, "ticklabelposition": "outside", "outlinecolor": "rgba(0,0,0,0)",
    "outlinewidth": 8, "len": 0.75, "y": 0.5745, "title": {"font": {"color": _TEXT, "size": 14}},
    "tickfont": {"color": _TEXT, "size": 12},
}  # fmt: skip
# trace types drawn on x/y axes (the others, e.g. scatter3d or pie, get no cartesian axis look)
CARTESIAN = {"scatter", "scattergl", "bar", "heatmap", "histogram", "box", "violin", "contour", "histogram2d"}
# the theme's defaults for colour-scaled traces without a scale of their own (its template's data part)
SCALED = {"heatmap", "contour", "histogram2d", "histogram2dcontour"}
DATAREVISION = "context-lens"  # constant: a chart whose figure changes is a new chart (new element id)
LIST_MAX = 2_000  # numbers per array sent as a JSON list (at most ~40 kB); larger arrays stay base64


def under(base: dict, ours: dict) -> dict:
    """``ours`` with ``base``'s values where ours has none (nested dicts merged; ours wins)."""
    out = dict(base)
    for k, v in ours.items():
        b = out.get(k)
        out[k] = under(b, v) if isinstance(b, dict) and isinstance(v, dict) else v
    return out


def _plain_arrays(obj):
    """``obj`` (a trace or part of one) with small numpy arrays left as arrays (JSON lists when sent) and
    large ones as plotly's base64 specs. Returns a new container; arrays are not copied."""
    if isinstance(obj, dict):
        return {k: _plain_arrays(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain_arrays(v) for v in obj]
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "iuf" and obj.size > LIST_MAX:
        return typed_array(obj)
    return obj


def _axis_names(layout: dict, data: list[dict], kind: str) -> set[str]:
    """The layout's ``kind`` axes ("xaxis"/"yaxis"): those it sets and those its cartesian traces use."""
    names = {k for k in layout if re.fullmatch(rf"{kind}\d*", k)}
    letter = kind[0]
    for trace in data:
        if trace.get("type", "scatter") in CARTESIAN:
            names.add((trace.get(f"{letter}axis") or letter).replace(letter, kind, 1))
    return names


def themed_spec(fig: go.Figure | dict) -> dict:
    """``{"data", "layout"}`` of ``fig`` as sent to the browser: Streamlit's look in the layout, no
    template, a constant ``datarevision``, small arrays as lists (see the module's docstring)."""
    spec = figure_dict(fig)  # new dicts and lists, values shared; the default template left out
    layout = spec["layout"]
    layout.pop("template", None)
    data = [_plain_arrays(t) for t in spec["data"]]
    for trace in data:
        kind = trace.get("type", "scatter")
        if kind in SCALED and "colorscale" not in trace and "coloraxis" not in trace:
            trace["colorscale"] = LOOK["colorscale"]["sequential"]
    # the title's look only for a chart with a title: an empty title object is still a "title" to readers
    # of the figure (tests/browser read layout.title)
    out = under(LOOK if layout.get("title") else _LOOK_UNTITLED, layout)
    for kind in ("xaxis", "yaxis"):
        for name in _axis_names(layout, data, kind):
            out[name] = under(AXIS_LOOK[kind], layout.get(name) or {})
    for name in [k for k in layout if re.fullmatch(r"coloraxis\d*", k)]:
        axis = out[name]
        axis["colorbar"] = under(COLORBAR_LOOK, axis.get("colorbar") or {})
        axis.setdefault("colorscale", LOOK["colorscale"]["sequential"])
    out["datarevision"] = DATAREVISION
    spec = {"data": data, "layout": out}
    # (a LazyFigure has no frames, and reading plotly's attributes of one would build its plotly objects)
    if isinstance(fig, go.Figure) and not isinstance(fig, LazyFigure) and fig._frame_objs:
        spec["frames"] = [f.to_plotly_json() for f in fig._frame_objs]
    return spec


class SentFigure(go.Figure):
    """A figure for ``st.plotly_chart`` whose ``to_dict`` is a prepared spec (:func:`themed_spec`), sent as is.

    Streamlit reads a figure with ``to_dict()`` and writes it with ``plotly.io.to_json``; the empty figure
    underneath is never drawn.
    """

    def __init__(self, spec: dict):
        super().__init__()
        self._sent = spec

    def to_dict(self) -> dict:
        return self._sent
