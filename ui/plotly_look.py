"""What ui.widgets.chart sends to the browser: a figure that plotly.js draws once, with Streamlit's look.

Why (a chart's browser draw time, measured with benchmarks/browser_profile.py): Streamlit 1.67 hashes a chart's spec into its
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
* axes keep ``automargin`` (labels are never cut), and the margins the labels need are written into the layout
  in advance (:func:`presize_margins`, from the labels' widths in Source Sans), so the automargin redraw (2.)
  does not happen either: a chart is drawn once. Where the estimate cannot be made (a 3-D chart, labels on top,
  labels plotly will turn on a narrow screen) or falls short, plotly pushes the margin as before: one more
  draw, never a cut label.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from lib.charts.common import X_LABEL_LINE
from lib.charts.figures import LazyFigure, figure_dict, typed_array

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


def themed_spec(fig: go.Figure | dict, width: float | None = None) -> dict:
    """``{"data", "layout"}`` of ``fig`` as sent to the browser: Streamlit's look in the layout, no
    template, a constant ``datarevision``, small arrays as lists (see the module's docstring); with the chart's
    ``width`` (px), margins sized in advance for its axis labels (:func:`presize_margins`)."""
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
    if width is not None:
        spec = presize_margins(spec, width)
    # (a LazyFigure has no frames, and reading plotly's attributes of one would build its plotly objects)
    if isinstance(fig, go.Figure) and not isinstance(fig, LazyFigure) and fig._frame_objs:
        spec["frames"] = [f.to_plotly_json() for f in fig._frame_objs]
    return spec


class SentFigure(go.Figure):
    """A figure for ``st.plotly_chart`` whose ``to_dict`` is a prepared spec (:func:`themed_spec`), sent as is.

    Streamlit reads a figure with ``to_dict()`` and writes it with ``plotly.io.to_json``; nothing else of the
    figure is read, so plotly's own figure (its template, ~1 ms to set up) is never made. One can be drawn again
    and again (ui.widgets.chart keeps a shared figure's).
    """

    def __init__(self, spec: dict):  # no go.Figure.__init__: plotly's constructor and its template are skipped
        object.__setattr__(self, "_sent", spec)

    def to_dict(self) -> dict:
        return self._sent


# ------------------------------------------------------------------------------------------------------------
# Margins sized in advance (a chart's browser draw time): plotly's automargin draws a chart a second time when its axis labels push
# a margin out after the first draw. With the margins the labels need already in the layout, the first draw is
# the only one. ``automargin`` stays on, so a label whose estimate was short still gets its room (plotly then
# draws twice, as before): an estimate can cost a draw, never a cut label.

# Advance widths of Source Sans (Streamlit's chart font) in 1/1000 em, measured in Chromium with Streamlit's
# own font file: regular (400) and bold (700), kept as data in assets/. Characters not listed count as _WIDE.
_FONT_TABLE = json.loads((Path(__file__).resolve().parent.parent / "assets" / "source_sans_widths.json").read_text("utf-8"))
_WIDTHS = {w: dict(zip(_FONT_TABLE["glyphs"], _FONT_TABLE[str(w)], strict=True)) for w in (400, 700)}
_WIDE = 1000  # an unlisted character (a CJK ideograph is 1 em): too wide rather than too narrow
# plotly's geometry around an axis (px, measured in Chromium with plotly.js 4 and this module's look):
Y_LABEL_GAP = 27  # a left y axis: the margin is this + the widest tick label (then + the title)
X_LABELS_DEPTH = 42  # a bottom x axis with one line of 12-px tick labels
X_UPRIGHT_DEPTH = 32  # ... turned upright (90 degrees): this + the widest label
X_UPRIGHT_BELOW = 24  # px between tick labels under which plotly turns them upright (measured: 21.5 upright,
# 71 turned by 30 degrees; the 30-degree case is left to plotly)
X_UPRIGHT_RIGHT = 16  # upright labels reach this far right of the last one's tick
TITLE_CAP = 0.7  # an axis title with a standoff takes 0.7 of its font size + the standoff (plotly's approxTitleDepth)
LEGEND_LEFT = 16  # a legend at the left edge (x = 0) pushes the left margin to 15 px
_SLACK = 2  # px more than the estimate: rounding in the browser never pushes the margin
_TAG_RE = re.compile(r"<[^>]*>")
_BR_RE = re.compile(r"<br\s*/?>", re.IGNORECASE)


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """Width in px of one line of plotly text (its tags removed, entities read) in Source Sans at ``size`` px."""
    import html as _html

    plain = _html.unescape(_TAG_RE.sub("", str(text)))
    bold = bold or "<b>" in str(text)
    table = _WIDTHS[700 if bold else 400]
    return sum(table.get(ch, _WIDE) for ch in plain) * size / 1000.0


def _values(v) -> list[float] | None:
    """Numbers of a data array as sent (a list or numpy array), or None (base64 or not numeric)."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "iuf":
            return None
        a = v[np.isfinite(v)] if v.dtype.kind == "f" else v
        return [float(a.min()), float(a.max())] if a.size else []
    if isinstance(v, (list, tuple)):
        try:
            a = np.asarray(v, dtype=float).ravel()
        except (TypeError, ValueError):
            return None
        a = a[np.isfinite(a)]
        return [float(a.min()), float(a.max())] if a.size else []
    return None


def _auto_tick_labels(lo: float, hi: float, length: float, tickformat: str | None) -> list[str] | None:
    """The widest-looking tick labels plotly picks for a linear axis over [lo, hi] drawn ``length`` px long
    (its prepTicks/autoTicks: about one tick per 40 px, dtick rounded up to 2, 5 or 10 x a power of ten)."""
    if tickformat not in (None, "", ".0%"):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo or length <= 0:
        return None
    nt = min(max(length / 40.0, 4), 9) + 1
    rough = (hi - lo) / nt
    base = 10 ** math.floor(math.log10(rough))
    dtick = next(m for m in (2, 5, 10) if m * base >= rough * (1 - 1e-9)) * base
    scale = 100.0 if tickformat == ".0%" else 1.0
    decimals = 0 if tickformat == ".0%" else max(0, -math.floor(math.log10(dtick) + 1e-9))
    ticks = [k * dtick for k in range(math.ceil(lo / dtick - 1e-9), math.floor(hi / dtick + 1e-9) + 1)]
    out = []
    for t in ticks:
        s = f"{abs(t) * scale:.{decimals}f}"
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        out.append(("−" if t < 0 and s.strip("0.") else "") + s + ("%" if scale == 100.0 else ""))
    return out


_SIMPLE_TRACES = {"scatter", "bar", "heatmap"}


def _axis_traces(data: list[dict], name: str) -> list[dict]:
    """The traces drawn on axis ``name`` ("xaxis", "yaxis2", ...)."""
    letter = name[0]
    ref = letter + name[5:]  # "x", "y2", ...
    return [t for t in data if (t.get(f"{letter}axis") or letter) == ref]


def _axis_labels(spec: dict, name: str, length: float) -> list[str] | None:
    """The tick labels of one axis ("xaxis", "yaxis2", ...) as plotly will draw them, or None if not
    predictable."""
    axis = spec["layout"].get(name) or {}
    if axis.get("showticklabels") is False:
        return []
    angle = axis.get("tickangle")
    if axis.get("type") not in (None, "linear", "-", "category") or not (
        angle in (None, "auto", 0) or (name[0] == "x" and isinstance(angle, (int, float)) and -90 <= angle < 0)
    ):
        return None  # (an x axis's labels turned by a fixed angle down to the left are sized by _x_margin)
    if axis.get("tickmode") == "array" or (axis.get("tickmode") is None and axis.get("tickvals") is not None):
        text = axis.get("ticktext")
        vals = axis.get("tickvals")
        if vals is None:
            return None
        if text is not None:
            return [str(t) for t in text]
        return [_number_label(v, axis.get("tickformat")) for v in vals]
    letter = name[0]
    data = _axis_traces(spec["data"], name)
    raw = [t.get(letter) for t in data]
    if raw and all(isinstance(v, list) and v and all(isinstance(c, str) for c in v) for v in raw):
        return list(dict.fromkeys(c for v in raw for c in v))  # categories, in order
    lo, hi = math.inf, -math.inf
    rng = axis.get("range")
    if rng is not None and len(rng) == 2 and all(isinstance(r, (int, float)) for r in rng):
        lo, hi = sorted(float(r) for r in rng)
    else:
        for trace in data:
            kind = trace.get("type", "scatter")
            vals = _values(trace.get(letter))
            if vals is None:
                return None  # strings (categories), base64 or dates: not predicted
            if vals:
                lo, hi = min(lo, vals[0]), max(hi, vals[1])
            value_axis = "x" if trace.get("orientation") == "h" else "y"
            if (kind == "bar" and letter == value_axis) or trace.get("fill") in (f"tozero{letter}",):
                lo, hi = min(lo, 0.0), max(hi, 0.0)
        if not math.isfinite(lo):
            return None
        pad = 0.05 * (hi - lo) if hi > lo else 1.0  # autorange's padding, generously
        lo, hi = lo - pad, hi + pad
    return _auto_tick_labels(lo, hi, length, axis.get("tickformat"))


def _number_label(v, tickformat: str | None) -> str:
    """A tick value as plotly writes it (the formats this app uses: none, ".0%"); wide when unknown."""
    if not isinstance(v, (int, float)):
        return str(v)
    if tickformat == ".0%":
        return f"{v * 100:.0f}%"
    if tickformat:
        return "0" * 12  # an unknown format: wide, never too narrow
    s = f"{abs(v):.6g}"
    return ("−" if v < 0 else "") + s


def _domain(axis: dict) -> tuple[float, float]:
    d = axis.get("domain") or (0.0, 1.0)
    return float(d[0]), float(d[1])


def presize_margins(spec: dict, width: float) -> dict:
    """``spec`` with ``layout.margin`` l and b raised to what its axes' tick labels and titles will push them to
    (a chart ``width`` px wide), so plotly draws it once. Unchanged when a label cannot be predicted: traces
    other than :data:`_SIMPLE_TRACES`, axes on the top or right, overlaying axes, rotated labels, fonts other
    than the look's."""
    layout, data = spec["layout"], spec["data"]
    names = {k for k in layout if re.fullmatch(r"[xy]axis\d*", k)}
    for t in data:
        if t.get("type", "scatter") not in _SIMPLE_TRACES:
            return spec
        for letter in "xy":
            ref = t.get(f"{letter}axis") or letter
            names.add(f"{letter}axis{ref[1:]}")
    margin = dict(layout.get("margin") or {})
    height = float(layout.get("height") or 450)
    need_l = need_b = need_r = 0
    for name in sorted(names):
        axis = layout.get(name) or {}
        if axis.get("overlaying") or axis.get("anchor") == "free" or axis.get("constrain") == "domain":
            # (an axis constrained to its domain shrinks the plot inside it: the labels then sit away from the
            # edge and may push nothing, so a margin sized for them would only waste room)
            return spec
        anchor = axis.get("anchor") or ("y" if name[0] == "x" else "x") + name[5:]
        across = _domain(layout.get(f"{anchor[0]}axis{anchor[1:]}") or {})
        if across[0] > 0:
            continue  # away from the bottom / left edge: its labels push no margin
        along = _domain(axis)
        if name[0] == "y":
            if axis.get("side", "left") != "left":
                return spec
            length = (height - margin.get("t", 80) - max(margin.get("b", 80), X_LABELS_DEPTH)) * (along[1] - along[0])
            need = _y_margin(spec, name, length)
            if need is None:
                return spec
            need_l = max(need_l, need)
        else:
            if axis.get("side", "bottom") != "bottom":
                return spec
            need = _x_margin(spec, name, (width - 100) * (along[1] - along[0]))
            if need is None:
                return spec
            need_b, need_r = max(need_b, need[0]), max(need_r, need[1])
    if layout.get("showlegend") is not False and (layout.get("legend") or {}).get("x", 1.02) <= 0:
        need_l = max(need_l, LEGEND_LEFT)
    margin["l"] = max(margin.get("l", 80), need_l)
    margin["b"] = max(margin.get("b", 80), need_b)
    if need_r:
        margin["r"] = max(margin.get("r", 80), need_r)
    return {**spec, "layout": {**layout, "margin": margin}}


def _title(axis: dict) -> tuple[str, float, float] | None:
    title = axis.get("title") or {}
    text = title.get("text") if isinstance(title, dict) else title
    if not text:
        return None
    font = (title.get("font") or {}) if isinstance(title, dict) else {}
    return str(text), float(font.get("size", 14)), float(title.get("standoff", 0) if isinstance(title, dict) else 0)


def _title_depth(axis: dict) -> float | None:
    """What an axis title adds to the margin (0 without a title), or None (several lines: not predicted)."""
    title = _title(axis)
    if title is None:
        return 0.0
    text, size, standoff = title
    return None if "<br" in text else TITLE_CAP * size + standoff


def _plain_axis(axis: dict) -> bool:
    """An axis drawn as this module's look draws it: 12-px labels outside, no tick marks."""
    return (axis.get("tickfont") or {}).get("size", 12) == 12 and axis.get("ticks", "") == "" and axis.get(
        "ticklabelposition", "outside"
    ) == "outside"


def _y_margin(spec: dict, name: str, length: float) -> int | None:
    y = spec["layout"].get(name) or {}
    if y.get("visible") is False:
        return 0
    if not _plain_axis(y):
        return None
    labels = _axis_labels(spec, name, length)
    depth = _title_depth(y)
    if labels is None or depth is None or any("<br" in t for t in labels):
        return None
    need = (Y_LABEL_GAP + max(text_width(t, 12) for t in labels)) if labels else 0
    return math.ceil(need + depth) + _SLACK if need or depth else 0


def _x_margin(spec: dict, name: str, length: float) -> tuple[int, int] | None:
    """(bottom margin, right margin) an x axis at the bottom needs, or None if not predicted."""
    x = spec["layout"].get(name) or {}
    if x.get("visible") is False:
        return 0, 0
    if not _plain_axis(x):
        return None
    labels = _axis_labels(spec, name, length)
    depth = _title_depth(x)
    if labels is None or depth is None:
        return None
    lines = [_BR_RE.split(t) for t in labels]  # a label broken with <br> is drawn as several lines
    extra = max((len(parts) - 1 for parts in lines), default=0)
    need, right = (X_LABELS_DEPTH + extra * X_LABEL_LINE if labels else 0), 0
    angle = x.get("tickangle")
    if labels and isinstance(angle, (int, float)) and angle != 0:
        # turned by a fixed angle (the token axes: -60 degrees), each label's end at its tick: as deep as the
        # widest label's slanted length plus its height's share (measured in Chromium at -30 to -90 degrees)
        if extra:
            return None
        turn = math.radians(abs(angle))
        widest = max(text_width(t, 12) for t in labels)
        need = X_UPRIGHT_DEPTH + widest * math.sin(turn) + 12 * math.cos(turn)
    elif labels and x.get("tickangle") != 0:
        # labels wider than their share of the axis are turned by plotly: by 30 degrees while there is room
        # between them for that (not predicted here), else upright (90 degrees, then as deep as the widest label)
        widest = max(text_width(part, 12) for parts in lines for part in parts)
        spacing = length / len(labels)
        if widest + 8 > spacing:
            if spacing > X_UPRIGHT_BELOW or extra:
                return None  # turned by 30 degrees, or several lines turned: not predicted
            need, right = X_UPRIGHT_DEPTH + widest, X_UPRIGHT_RIGHT
    return (math.ceil(need + depth) + _SLACK if need or depth else 0), right


# ------------------------------------------------------------------------------------------------------------
# Titles on a phone. The server does not know the screen's width: charts are laid out for a laptop's 704 px, and
# Streamlit stacks columns on a phone, where a chart is ~358 px wide. plotly never wraps a title; one longer than
# that ran past the chart's edge and was cut. A title line wider than PHONE_TITLE_PX is broken at spaces here.
PHONE_TITLE_PX = 330  # a 390-px phone's chart (~358 px) less the title's left pad and a little slack
TITLE_LINE_PX = 21  # px each further title line takes at the title's 16 px (measured in Chromium)


def _wrap_line(line: str, size: float, limit: float) -> list[str]:
    """``line`` broken at spaces into lines no wider than ``limit`` (a single word stays whole); a line with
    tags or entities is left as it is (a break inside one would show)."""
    if "<" in line or "&" in line or text_width(line, size, bold=True) <= limit:
        return [line]
    out, current = [], ""
    for word in line.split(" "):
        trial = f"{current} {word}" if current else word
        if current and text_width(trial, size, bold=True) > limit:
            out.append(current)
            current = word
        else:
            current = trial
    out.append(current)
    if len(out) == 2:  # two lines: the break that makes the longer line shortest, not the first that fits
        words = line.split(" ")
        splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
        out = list(min(splits, key=lambda ab: max(text_width(x, size, bold=True) for x in ab)))
    return out


def wrap_title(spec: dict, limit: float = PHONE_TITLE_PX) -> dict:
    """``spec`` with its title broken into lines of at most ``limit`` px (one <br> per break), and the top
    margin raised by a line for each line added. Unchanged when the title fits."""
    layout = spec["layout"]
    title = layout.get("title")
    if not isinstance(title, dict) or not title.get("text"):
        return spec
    size = float((title.get("font") or {}).get("size") or LOOK["title"]["font"]["size"])
    lines = _BR_RE.split(str(title["text"]))
    wrapped = [part for line in lines for part in _wrap_line(line, size, limit)]
    if len(wrapped) == len(lines):
        return spec
    margin = dict(layout.get("margin") or {})
    margin["t"] = int(margin.get("t", 60)) + round(TITLE_LINE_PX * size / 16) * (len(wrapped) - len(lines))
    layout = {**layout, "title": {**title, "text": "<br>".join(wrapped)}, "margin": margin}
    return {**spec, "layout": layout}
