"""The figure objects every chart is: :class:`Figure` (a go.Figure whose ``to_dict`` copies no values) and
:class:`LazyFigure` (its trace and layout dicts, a plotly Figure only when plotly's API is used), and
:func:`figure_dict`, a figure as dicts to change and build again. Charts build them with
:func:`lib.charts.common.figure`.
"""

from __future__ import annotations

import base64
import re
import threading

import numpy as np
import plotly.graph_objects as go
from _plotly_utils.utils import is_homogeneous_array, plotlyjsShortTypes, to_typed_array_spec


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
LAZY_LOCK = threading.RLock()  # one materialisation or lazy read at a time (shared figures, many sessions)
# Read from the dicts, never materialise: what Streamlit, the charts' helpers, downloads and lib.serving.budget use.
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
        with LAZY_LOCK:
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
        with LAZY_LOCK:
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
        with LAZY_LOCK:
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


def subplots_as_plotly(layout: dict) -> dict:
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
