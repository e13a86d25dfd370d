"""Shared look of every chart: a colour-blind-safe palette for sense labels and a readable layout.

The palette is Okabe & Ito's (2008) qualitative set, which stays distinguishable for the common forms of
colour blindness and on a washed-out projector. Sense colours are assigned in order of first appearance, so
the same sense keeps its colour on every chart of a page.
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
import threading
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from _plotly_utils.utils import is_homogeneous_array, plotlyjsShortTypes, to_typed_array_spec
from plotly.basedatatypes import BasePlotlyType

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
X_LABEL_LINE = 16  # px each further line of a 12-px tick label broken with <br> adds (plotly's 1.3 line spacing)
# Sequential scale for similarities and attention weights (perceptually uniform, colour-blind safe).
SEQUENTIAL = "Viridis"
# Diverging scale centred on 0 for adjusted similarities.
DIVERGING = "RdBu_r"

BASE_FONT = 14
PRESENTER_FONT = 22
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


def band_from_zero(
    top: Sequence[float],
    *,
    name: str,
    fillcolor: str = "rgba(120,120,120,0.18)",
    line: dict | None = None,
) -> go.Scatter:
    """A filled band from 0 up to ``top`` (K,) over layers 0..K-1: a chance or control band (shuffled
    labels up to their 95th percentile), drawn behind the curves and skipped by hover."""
    t = [float(v) for v in top]
    x = list(range(len(t)))
    return go.Scatter(
        x=x + x[::-1],
        y=t + [0.0] * len(t),
        fill="toself",
        fillcolor=fillcolor,
        line=line if line is not None else {"width": 0},
        name=name,
        hoverinfo="skip",
    )


# Figures are built from plain dicts in one constructor call, without plotly's per-property validation:
# each `update_layout`/`add_*` call walks and validates the figure's property tree, and that was most of a
# rerun's server CPU. Validation is switched back on by CONTEXT_LENS_VALIDATE_FIGURES=1, which the
# test suite sets, so every figure a test builds is still checked property by property.
VALIDATE_ENV = "CONTEXT_LENS_VALIDATE_FIGURES"


def validating() -> bool:
    """True when figures are validated as they are built (the tests; see VALIDATE_ENV)."""
    return os.environ.get(VALIDATE_ENV, "") not in ("", "0")


def base_layout(*, title: str | None = None, height: int | None = None) -> dict:
    """The readable defaults of every chart as a layout dict (font, margins, hover label, legend, title),
    for figures built with :func:`figure`."""
    layout: dict = {
        "font": {"size": BASE_FONT},
        "margin": {"l": 10, "r": 10, "t": 60 if title else 30, "b": 10},
        "hoverlabel": {"font": {"size": BASE_FONT}},
        "legend": {"title": {"text": ""}},
    }
    if title is not None:
        layout["title"] = {"text": title, "x": 0.0, "xanchor": "left"}
    if height is not None:
        layout["height"] = height
    return layout


class Figure(go.Figure):
    """A go.Figure whose :meth:`to_dict` copies the figure's dicts and lists but not the values in them.

    plotly's own ``to_dict`` deep-copies every value (every number of every array) before Streamlit turns
    the dict into JSON; ``st.plotly_chart`` calls it on every rerun. The dict returned here is as safe to
    change as plotly's (new containers all the way down; numbers, strings and numpy arrays are shared,
    and the arrays are replaced, never changed, by the base64 encoding).
    """

    def to_dict(self) -> dict:
        memo: dict = {}
        res = {"data": _export(self._data, memo), "layout": _export(self._layout, memo)}
        frames = [_export(f._props, memo) for f in self._frame_objs]
        if frames:
            res["frames"] = frames
        return res


def _containers(obj):
    """A copy of nested dicts, lists and tuples (tuples become lists); other values are shared."""
    if isinstance(obj, dict):
        return {k: _containers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_containers(v) for v in obj]
    return obj


# ------------------------------------------------------------------------------------------ lazy figures
# Building a go.Figure costs plotly ~1 ms per axis and trace even unvalidated (an object per property, a
# validated object per subplot axis: 0.085 s for the attention overview's 78 panels), and a new student
# builds a dozen. Streamlit only needs the figure's ``to_dict()``. So production figures are LazyFigures:
# they keep the trace and layout dicts, answer ``to_dict`` (and ``update_layout``, ``fit_cell_text``,
# ``figure_dict``...) from them, and turn into a plotly Figure in place the first time anything else of
# plotly's API is used (``fig.data``, ``fig.layout.title.text``, ``fig.add_trace``...), so code that reads a
# figure never notices. Tests validate every figure (CONTEXT_LENS_VALIDATE_FIGURES=1) and get plotly
# Figures straight away; tests/test_lazy_figures.py checks both give the same ``to_dict`` for every chart.
_LAZY_LOCK = threading.RLock()  # one materialisation or lazy read at a time (shared figures, many sessions)
# Read from the dicts, never materialise: what Streamlit, the charts' helpers, downloads and lib.budget use.
_LAZY_ATTRS = frozenset(
    {"to_dict", "to_plotly_json", "to_json", "to_html", "update_layout", "materialise", "_data", "_layout",
     "_b64", "_builder", "__class__", "__dict__", "__init__", "__getattribute__", "__setattr__", "__delattr__"}
)  # fmt: skip (to_json and to_html are plotly's: they only read to_dict())
# Layout keys of subplots (xaxis2, coloraxis3, ...): plotly validates these even in an unvalidated figure.
_SUBPLOT_KEY = re.compile(r"^(coloraxis|geo|legend|map|polar|scene|smith|ternary|xaxis|yaxis)(\d+)$")
_PLAIN_UNDERSCORE_KEYS = frozenset({"paper_bgcolor", "plot_bgcolor"})  # layout keys that are not paths


class LazyFigure(Figure):
    """A :class:`Figure` kept as its trace and layout dicts until plotly's API is used (see above).

    ``to_dict`` gives what the plotly Figure's would (the default template added as plotly adds it, the one
    in force when the figure is sent, and the numpy arrays base64-encoded once per figure, not on every
    rerun); ``update_layout`` merges into the
    dicts as plotly's does. Any other attribute turns the object into a :class:`Figure` in place
    (:meth:`materialise`, thread-safe), which then behaves exactly as ``Figure(data, layout)`` would.
    """

    def __init__(self, data: list[dict], layout: dict) -> None:  # noqa: D107 (no plotly __init__ on purpose)
        d = object.__getattribute__(self, "__dict__")
        d["_data"], d["_layout"], d["_b64"], d["_builder"] = data, layout, {}, None

    def __getattribute__(self, name: str):
        if name in _LAZY_ATTRS or object.__getattribute__(self, "_builder") == threading.get_ident():
            return object.__getattribute__(self, name)
        LazyFigure.materialise(self)
        return getattr(self, name)

    def materialise(self) -> Figure:
        """Turn this figure into a plotly :class:`Figure` in place (once; a no-op afterwards) and return it."""
        with _LAZY_LOCK:
            if type(self) is not LazyFigure:
                return self
            d = object.__getattribute__(self, "__dict__")
            data, layout = d["_data"], d["_layout"]
            d["_builder"] = threading.get_ident()  # plotly's __init__ below reads the object as a Figure
            try:
                Figure.__init__(self, data=data, layout=layout, _validate=False)
            except BaseException:
                d["_data"], d["_layout"], d["_builder"] = data, layout, None
                raise
            d.pop("_b64", None)
            d["_builder"] = None  # kept: a thread already in LazyFigure.__getattribute__ still reads it
            object.__setattr__(self, "__class__", Figure)
        return self

    def to_dict(self) -> dict:
        with _LAZY_LOCK:
            if type(self) is not LazyFigure:
                return Figure.to_dict(self)
            memo = self._b64
            data = [_lazy_trace(t, memo) for t in self._data]
            layout = _lazy_layout(self._layout, memo)
        if "template" not in layout:
            template = _default_template()
            if template is not None:
                layout["template"] = _containers(template)
        return {"data": data, "layout": layout}

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    def update_layout(self, dict1: dict | None = None, overwrite: bool = False, **kwargs) -> go.Figure:
        """plotly's update_layout on the layout dict: nested dicts merged key by key, a list of dicts
        (shapes, annotations) merged element by element into a non-empty one, any other value (None too,
        as in plotly's unvalidated figure) replaced. An update plotly would read differently
        (``overwrite=True``, a ``title_text`` path) turns the figure into a plotly Figure first."""
        changes = {**(dict1 or {}), **kwargs}
        with _LAZY_LOCK:
            if type(self) is not LazyFigure or overwrite or _has_paths(changes):
                return Figure.update_layout(LazyFigure.materialise(self), dict1, overwrite, **kwargs)
            layout = self._layout
            for key, value in changes.items():
                match = _SUBPLOT_KEY.match(key)
                if match and match.group(2) == "1":
                    key = match.group(1)  # noqa: PLW2901 (plotly's name for the first one)
                _update(layout, key, value)
                if match and isinstance(layout.get(key), dict):
                    pruned = _pruned(layout[key])
                    if pruned:
                        layout[key] = pruned
                    else:
                        del layout[key]
        return self

    def __setattr__(self, name: str, value) -> None:
        if not _building(self):
            LazyFigure.materialise(self)
        Figure.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if not _building(self):
            LazyFigure.materialise(self)
        Figure.__delattr__(self, name)


def _building(fig: LazyFigure) -> bool:
    return object.__getattribute__(fig, "__dict__").get("_builder") == threading.get_ident()


def _eager(name: str):
    """A special method of LazyFigure that materialises the figure, then runs plotly's (Python calls
    these on the class, past ``__getattribute__``)."""
    method = getattr(Figure, name)

    def run(self, *args, **kwargs):
        if not _building(self):
            LazyFigure.materialise(self)
        return method(self, *args, **kwargs)

    run.__name__ = name
    return run


for _name in ("__getitem__", "__setitem__", "__contains__", "__iter__", "__eq__", "__repr__", "__reduce__"):
    setattr(LazyFigure, _name, _eager(_name))


def _lazy_trace(trace: dict, memo: dict) -> dict:
    """A trace dict as plotly's unvalidated Figure sends it (with its type; :func:`_export`)."""
    out = _export(trace, memo)
    out.setdefault("type", "scatter")
    return out


def _lazy_layout(layout: dict, memo: dict) -> dict:
    """A layout dict as plotly's unvalidated Figure sends it (:func:`_export`)."""
    return {k: _export(v, memo) if isinstance(v, (dict, list, tuple)) else _value(k, v, memo) for k, v in layout.items()}


def _subplots_as_plotly(layout: dict) -> dict:
    """``layout`` (changed in place and returned) with its subplot axes (xaxis2...) as plotly's validation of
    them, which even an unvalidated Figure runs, leaves them: None values and empty dicts left out, an empty
    axis dropped, "xaxis1" called "xaxis"."""
    for k in [k for k in layout if _SUBPLOT_KEY.match(k)]:
        v = layout.pop(k)
        match = _SUBPLOT_KEY.match(k)
        name = match.group(1) if match.group(2) == "1" else k
        if isinstance(v, dict):
            v = _pruned(v)
            if not v:
                continue
        layout[name] = v
    return layout


def _pruned(obj):
    """``obj`` without None values and empty dicts in its dicts (new dicts and lists; values shared)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            v = _pruned(v)  # noqa: PLW2901
            if v is not None and v != {}:
                out[k] = v
        return out
    if isinstance(obj, (list, tuple)):
        return [_pruned(v) for v in obj]
    return obj


_PLAIN = (str, int, float, bool, type(None))  # never typed arrays (numpy's float64 is a float too)
_PLAIN_TYPES = frozenset(_PLAIN)
_SKIPPED_KEYS = frozenset({"geojson", "layer", "layers", "range"})  # plotly's is_skipped_key: sent as they are


def _export(obj, memo: dict):
    """What plotly's ``to_dict`` makes of ``obj`` in one pass: a copy of its nested dicts, lists and tuples
    (tuples as lists), with each numpy array (or other array) that is a dict value replaced by plotly's
    typed-array dict (``{"dtype", "bdata", "shape"}``), as ``convert_to_base64`` replaces them. Other values
    are shared. ``memo`` keeps each numpy array's encoding (a figure's arrays are never changed), so a
    cached figure encodes its arrays once, not on every rerun."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if type(v) in _PLAIN_TYPES:
                out[k] = v
            elif isinstance(v, (dict, list, tuple)):
                out[k] = _containers(v) if k in _SKIPPED_KEYS else _export(v, memo)
            else:
                out[k] = _value(k, v, memo)
        return out
    if isinstance(obj, (list, tuple)):
        return [_export(v, memo) if isinstance(v, (dict, list, tuple)) else v for v in obj]
    return obj


def typed_array(v: np.ndarray):
    """plotly's ``to_typed_array_spec`` of a numpy array; for the numeric arrays of our charts (floats, ints
    up to 32 bits, native byte order) without its detour through narwhals and a copy (~0.4 ms an array)."""
    dtype = str(v.dtype)
    if v.size == 0 or dtype not in plotlyjsShortTypes:  # int64, bool, strings...: plotly's own conversion
        return to_typed_array_spec(v)
    spec = {"dtype": plotlyjsShortTypes[dtype], "bdata": base64.b64encode(np.ascontiguousarray(v)).decode("ascii")}
    if v.ndim > 1:
        spec["shape"] = str(v.shape)[1:-1]
    return spec


def _value(key: str, value, memo: dict):
    """A dict value as plotly sends it: an array as a typed-array dict (see :func:`_export`)."""
    if key in _SKIPPED_KEYS or isinstance(value, _PLAIN):
        return value
    if isinstance(value, np.ndarray):
        hit = memo.get(id(value))
        if hit is None or hit[0] is not value:  # the memo keeps the array: its id is not reused meanwhile
            hit = memo[id(value)] = (value, typed_array(value))
        spec = hit[1]
        return dict(spec) if isinstance(spec, dict) else spec
    return to_typed_array_spec(value) if is_homogeneous_array(value) else value


def _has_paths(changes: dict, top: bool = True) -> bool:
    """True when a key of ``changes`` (at any depth) is one of plotly's underscore paths (``title_text``)."""
    for key, value in changes.items():
        if "_" in key and not (top and key in _PLAIN_UNDERSCORE_KEYS):
            return True
        if isinstance(value, dict) and _has_paths(value, top=False):
            return True
    return False


def _update(obj: dict, key: str, value) -> None:
    """plotly's update of ``obj[key]`` with ``value`` (BaseFigure._perform_update), on dicts; the dicts
    and lists already in ``obj`` are replaced by changed copies, never changed (they may be shared)."""
    old = obj.get(key)
    if isinstance(value, dict) and isinstance(old, dict):
        new = dict(old)
        for k, v in value.items():
            _update(new, k, v)
        obj[key] = new
    elif (
        isinstance(value, (list, tuple))
        and isinstance(old, (list, tuple))
        and old
        and all(isinstance(el, dict) for el in old)
    ):
        if not value:
            return  # plotly leaves a non-empty list of objects as it is
        new_list = []
        for i, el in enumerate(old):  # each element merged with the update's element i (cycled)
            holder = {"el": el}
            _update(holder, "el", value[i % len(value)])
            new_list.append(holder.get("el", el))
        new_list.extend(value[len(old) :])
        obj[key] = new_list
    else:
        obj[key] = value


def materialised(fig: go.Figure) -> go.Figure:
    """``fig`` as a plotly Figure (a :class:`LazyFigure` materialised in place; anything else as it is)."""
    return LazyFigure.materialise(fig) if type(fig) is LazyFigure else fig


def figure(data: Sequence[dict | go.Figure], layout: dict | None = None) -> go.Figure:
    """A figure from trace dicts (``{"type": "scatter", ...}``) and a layout dict, built in one step.

    Use nested dicts (``{"title": {"text": ...}}``), not plotly's ``title_text`` shorthand: unvalidated
    figures keep keys as given. Trace objects (``go.Scatter(...)``) are accepted too. Validated (the tests),
    the figure is a :class:`Figure`, whose ``to_dict`` (Streamlit's per-rerun copy) does not copy every
    value; otherwise a :class:`LazyFigure`, which is a Figure built only when plotly's API is used. The
    top-level dicts are copied (properties set to None left out, as plotly does); the values in them are
    shared with the caller, who must not change them.
    """
    traces = [t.to_plotly_json() if hasattr(t, "to_plotly_json") else t for t in data]
    if validating():
        return Figure(data=traces, layout=layout or {}, _validate=True)
    # plotly's constructor leaves out properties given as None
    traces = [{k: v for k, v in t.items() if v is not None} for t in traces]
    return LazyFigure(traces, _subplots_as_plotly({k: v for k, v in (layout or {}).items() if v is not None}))


def merged(base: dict, **changes) -> dict:
    """``base`` (a layout dict) with ``changes`` merged in, nested dicts key by key (as update_layout
    merges them); ``base`` is not changed."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict):  # merged into a copy: the caller's dicts are never shared or changed
            old = out.get(key)
            out[key] = merged(old if isinstance(old, dict) else {}, **value)
        else:
            out[key] = value
    return out


def vline(x: float, line: dict, *, axis: str = "x") -> dict:
    """A vertical line across the plot at ``x`` as a layout shape (what add_vline adds, in one dict)."""
    y = axis.replace("x", "y", 1)
    return {"type": "line", "xref": axis, "x0": x, "x1": x, "yref": f"{y} domain", "y0": 0, "y1": 1, "line": line}


def hline(y: float, line: dict, *, axis: str = "y") -> dict:
    """A horizontal line across the plot at ``y`` as a layout shape (what add_hline adds, in one dict)."""
    x = axis.replace("y", "x", 1)
    return {"type": "line", "yref": axis, "y0": y, "y1": y, "xref": f"{x} domain", "x0": 0, "x1": 1, "line": line}


_DEFAULT_TEMPLATES: dict[str, dict] = {}


def _default_template() -> dict | None:
    """The default template (Streamlit's, once Streamlit is imported) as a dict, computed once per name."""
    import plotly.io as pio

    name = pio.templates.default
    if not isinstance(name, str):
        return None
    if name not in _DEFAULT_TEMPLATES:
        _DEFAULT_TEMPLATES[name] = pio.templates[name].to_plotly_json()
    return _DEFAULT_TEMPLATES[name]


def figure_dict(fig: go.Figure | dict) -> dict:
    """``{"data": [trace dicts], "layout": {...}}``: a copy of ``fig`` to change and rebuild with
    :func:`figure` (``figure(d["data"], d["layout"])``), without a validated copy of the figure.

    The dicts and lists are new, the values in them shared (see :class:`Figure`). The default template is
    left out: every figure gets it when it is built, and building a figure from the template's dict costs
    plotly tens of milliseconds.
    """
    if isinstance(fig, go.Figure):
        data, layout = fig._data, fig._layout  # plotly's own dicts of the figure's properties, as to_dict reads
    else:
        data, layout = fig.get("data", []), fig.get("layout", {})
    default = _default_template()
    layout = {k: v for k, v in layout.items() if not (k == "template" and v == default)}
    return {"data": _containers(list(data)), "layout": _containers(layout)}


def _axes(layout: dict, data: list[dict], kind: str) -> list[str]:
    """Names of the layout's ``kind`` axes ("xaxis", "yaxis", "coloraxis"): those set in the layout and those
    the traces draw on (the first always, as plotly's update_xaxes has it; colour axes only when used)."""
    names = {k for k in layout if re.fullmatch(rf"{kind}\d*", k)}
    ref = {"xaxis": "x", "yaxis": "y", "coloraxis": "coloraxis"}[kind]
    for trace in data:
        used = trace.get(kind if kind == "coloraxis" else ref + "axis")
        if used:
            names.add(used.replace(ref, kind, 1))
    if kind != "coloraxis":
        names.add(kind)
    return sorted(names)


def presenter_layout(fig: go.Figure | dict) -> go.Figure:
    """Scale a figure for a projector and return a copy (the original is not changed).

    Larger fonts everywhere (titles, axis ticks and titles, legend, subplot titles, colour bars, the
    numbers written in heatmap cells), near-black text instead of the theme's grey (grey fades on a
    washed-out projector), thicker lines and larger markers, and 25% more height. Lines drawn with
    width 0 (the edges of shaded bands) stay invisible. Built from dicts (:func:`figure_dict`) in one step.
    """
    spec = figure_dict(fig)
    data, lay = spec["data"], spec["layout"]
    tick = PRESENTER_FONT - 4
    lay = merged(
        lay,
        font={"size": PRESENTER_FONT, "color": PRESENTER_TEXT},
        hoverlabel={"font": {"size": PRESENTER_FONT}},
        legend={"font": {"size": PRESENTER_FONT - 2}},
    )
    title = lay.get("title")
    title_text = title.get("text") if isinstance(title, dict) else title
    if isinstance(title, str):
        lay["title"] = {"text": title}
    if title_text:
        lay = merged(lay, title={"font": {"size": PRESENTER_FONT + 4}})
    annotations = lay.get("annotations") or []
    top = (lay.get("margin") or {}).get("t")
    if top is not None and (title_text or annotations):
        # the larger title and subplot titles need a taller top margin, or the plot covers them
        lay = merged(lay, margin={"t": int(top * 1.4)})
    axis_fonts = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title": {"font": {"size": PRESENTER_FONT, "color": PRESENTER_TEXT}},
    }
    for name in _axes(lay, data, "xaxis") + _axes(lay, data, "yaxis"):
        axis = lay.get(name) or {}
        if isinstance(axis.get("title"), str):
            axis = {**axis, "title": {"text": axis["title"]}}
        lay[name] = merged(axis, **axis_fonts)
    for ann in annotations:  # subplot titles and labels; a colour set on purpose is kept
        ann["font"] = merged(ann.get("font") or {}, size=PRESENTER_FONT - 2)
        ann["font"].setdefault("color", PRESENTER_TEXT)
    colorbar = {
        "tickfont": {"size": tick, "color": PRESENTER_TEXT},
        "title": {"font": {"size": PRESENTER_FONT - 2, "color": PRESENTER_TEXT}},
    }
    for name in _axes(lay, data, "coloraxis"):
        lay[name] = merged(lay.get(name) or {}, colorbar=_colorbar(lay.get(name) or {}, colorbar))
    for trace in data:
        kind = trace.get("type", "scatter")
        if kind == "heatmap":
            # cell numbers keep plotly's automatic size: it fits the drawn cell, capped at the (larger)
            # layout font, so they grow on a projector and never overlap (see fit_cell_text)
            if not trace.get("coloraxis"):
                trace["colorbar"] = _colorbar(trace, colorbar)
        elif kind in ("scatter", "scattergl"):
            line = trace.get("line") or {}
            width = line.get("width")
            if width is None or width > 0:
                trace["line"] = {**line, "width": max(4.0, 1.5 * (width or 2))}
            size = (trace.get("marker") or {}).get("size")
            if isinstance(size, (int, float)):
                trace["marker"] = {**trace["marker"], "size": size * 1.3}
            if (trace.get("textfont") or {}).get("size") is not None or "text" in (trace.get("mode") or ""):
                trace["textfont"] = {**(trace.get("textfont") or {}), "size": tick}
        elif kind == "bar" and (trace.get("text") is not None or trace.get("texttemplate")):
            trace["textfont"] = {**(trace.get("textfont") or {}), "size": tick}
    if lay.get("height"):
        lay["height"] = int(lay["height"] * 1.25)
    return figure(data, lay)


def _colorbar(owner: dict, big: dict) -> dict:
    """``owner``'s colour bar with the presenter's fonts merged in (a title given as a string kept)."""
    bar = dict(owner.get("colorbar") or {})
    if isinstance(bar.get("title"), str):
        bar["title"] = {"text": bar["title"]}
    return merged(bar, **big)


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
# and the page's CSS hides any that end up below MIN_CELL_FONT (ui.state).
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
        with _LAZY_LOCK:
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


def sentence_ticks(senses: Sequence[str | None]) -> list[str]:
    """Short y tick labels S1…Sn, each after its sense label in the sense's colour (HTML for plotly).

    Long sentence labels squeeze a chart to a strip on a phone; the full sentences go in the hover label and
    in a table under the chart. Sense names are escaped here.
    """
    colors = sense_color_map(senses)
    if not any(senses):
        return [f"S{i + 1}" for i in range(len(senses))]
    return [
        f"<span style='color:{colors[s]}'>{esc(s or '–')} ▍</span>S{i + 1}" for i, s in enumerate(senses)
    ]


def subplot_grid(
    rows: int,
    cols: int,
    *,
    h_space: float | None = None,
    v_space: float | None = None,
    col_widths: Sequence[float] | None = None,
    row_heights: Sequence[float] | None = None,
    titles: Sequence[str] = (),
    shared_x: bool = False,
    shared_y: bool = False,
) -> dict:
    """The axes of a ``rows`` x ``cols`` grid of panels as a layout dict, laid out as plotly's make_subplots
    does (row 1 at the top; spacing, widths and heights as fractions of the figure), without its cost.

    Panel k = r * cols + c (0-based, row-major) draws on axes ``grid_axes(k)``: "x"/"y", "x2"/"y2", ….
    ``titles`` (one per panel, in that order; empty = none) become annotations above the panels;
    ``shared_x`` ties each column's x axes to its bottom panel (tick labels only there), ``shared_y`` each
    row's y axes to its first panel (tick labels only there). Merge axis settings into the returned dicts.
    """
    h = 0.2 / cols if h_space is None else h_space
    v = 0.3 / rows if v_space is None else v_space
    cw = list(col_widths) if col_widths is not None else [1.0] * cols
    rh = list(row_heights) if row_heights is not None else [1.0] * rows
    widths = [(1 - h * (cols - 1)) * w / sum(cw) for w in cw]
    heights = [(1 - v * (rows - 1)) * w / sum(rh) for w in rh]
    layout: dict = {}
    annotations = []
    for r in range(rows):
        y1 = 1 - sum(heights[:r]) - r * v
        for c in range(cols):
            k = r * cols + c
            xa, ya = grid_axes(k)
            x0 = sum(widths[:c]) + c * h
            xaxis: dict = {"domain": _domain(x0, x0 + widths[c]), "anchor": ya}
            yaxis: dict = {"domain": _domain(y1 - heights[r], y1), "anchor": xa}
            if shared_x and r < rows - 1:
                xaxis |= {"matches": grid_axes((rows - 1) * cols + c)[0], "showticklabels": False}
            if shared_y and c > 0:
                yaxis |= {"matches": grid_axes(r * cols)[1], "showticklabels": False}
            layout[f"xaxis{xa[1:]}"] = xaxis
            layout[f"yaxis{ya[1:]}"] = yaxis
            if k < len(titles) and titles[k]:
                annotations.append(
                    {"text": titles[k], "x": sum(xaxis["domain"]) / 2, "y": yaxis["domain"][1], "xref": "paper", "yref": "paper",
                     "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 16}}  # fmt: skip
                )
    if annotations:
        layout["annotations"] = annotations
    return layout


def _domain(lo: float, hi: float) -> list[float]:
    """An axis domain inside [0, 1] (sums of fractions can miss 0 or 1 by a rounding error)."""
    return [min(max(round(lo, 12), 0.0), 1.0), min(max(round(hi, 12), 0.0), 1.0)]


def grid_axes(k: int) -> tuple[str, str]:
    """The x and y axis references ("x", "y"; "x2", "y2"; …) of panel k (0-based) of :func:`subplot_grid`."""
    suffix = "" if k == 0 else str(k + 1)
    return f"x{suffix}", f"y{suffix}"


def labelled_line(x, y, *, text: list[str], name: str, hovertemplate: str, color: str, width: float = 3) -> dict:
    """A thick line with markers and each value written above its point (``text``), as a trace dict."""
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "lines+markers+text",
        "text": text,
        "textposition": "top center",
        "cliponaxis": False,  # the first label, half outside the plot on a phone, is not cut
        "line": {"color": color, "width": width},
        "name": name,
        "hovertemplate": hovertemplate,
    }
