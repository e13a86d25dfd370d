"""The layer axis of the charts over the layers (lib.charts.layers): one tick per layer, every 5th named past 13
hidden states, and the pooled representations' places to the right, spaced so that their labels fit a phone.

A chart lists every layer (and pooled representation) in its axis's ``tickvals``, so the chosen one is marked by
its index in that list (lib.charts.common.layer_positions, ui.widgets.layer_chart).
"""

from __future__ import annotations

from collections.abc import Sequence

from lib.charts.common import CONTEXT_COLOR, layer_labels, layer_mark, vline

__all__ = [
    "PHONE_PLOT_PX",
    "POOLED_LABEL_PX",
    "two_lines",
    "pooled_gap",
    "pooled_places",
    "pooled_tick",
    "x_axis",
    "layer_marks",
]


def two_lines(label: str, longer_than: int = 8) -> str:
    """A tick label longer than ``longer_than`` characters broken in two at the space nearest its middle
    ("mean of last 4" -> "mean of<br>last 4"); a shorter label, or one without a space, as it is."""
    spaces = [i for i, ch in enumerate(label) if ch == " "]
    if len(label) <= longer_than or not spaces:
        return label
    cut = min(spaces, key=lambda i: (abs(i - len(label) / 2), -i))  # a tie: the longer first line
    return label[:cut] + "<br>" + label[cut + 1 :]


# A phone's plot is ~264 px wide (~6.8 px a character of tick text): the pooled representations' two-line labels
# ("mean<br>last 4", 6 characters at most, with room) get that many pixels between their places there, however
# many layers share the axis, so plotly never has to turn the axis's labels on their side.
PHONE_PLOT_PX, POOLED_LABEL_PX = 264, 40


def pooled_gap(k: int) -> float:
    """The distance, in layers, between the last layer and the first pooled place and between pooled places:
    at least 1.3, more for many layers (the decoder's 31), so that on a phone's plot it is POOLED_LABEL_PX.

    The axis then spans k - 0.7 + 2.5 gaps (with two pooled places), so the gap g solves
    g * PHONE_PLOT_PX / (k - 0.7 + 2.5 g) = POOLED_LABEL_PX.

    >>> pooled_gap(7), pooled_gap(31)
    (1.54, 7.39)
    """
    need = POOLED_LABEL_PX * (k - 0.7) / (PHONE_PLOT_PX - 2.5 * POOLED_LABEL_PX)
    return round(max(1.3, need), 2)


def pooled_places(k: int, n: int) -> list[float]:
    """Where ``n`` pooled representations sit to the right of ``k`` layers: a :func:`pooled_gap` apart.

    >>> pooled_places(7, 2)
    [7.54, 9.08]
    """
    g = pooled_gap(k)
    return [round(k - 1 + g * (i + 1), 6) for i in range(n)]


def pooled_tick(name: str) -> str:
    """A pooled representation's tick label in two short lines: "mean of last 4" -> "mean<br>last 4" (the hover
    and the page say "mean of"); another name broken at its middle space (:func:`two_lines`)."""
    return "mean<br>" + name[len("mean of ") :] if name.startswith("mean of ") else two_lines(name)


def x_axis(names: Sequence[str], pooled_names: Sequence[str] = ()) -> dict:
    """The layer axis: one tick per layer (named as :func:`lib.charts.common.layer_labels` says: all of them still listed, so a layer's
    place is its index, lib.charts.common.layer_positions), and the pooled representations' ticks to the right,
    level like the rest (never turned on their side on a phone)."""
    k = len(names)
    vals: list[float] = list(range(k)) + pooled_places(k, len(pooled_names))
    text = layer_labels(names) + [pooled_tick(n) for n in pooled_names]
    end = vals[-1] + (0.5 * pooled_gap(k) if pooled_names else 0.4)
    return {
        "tickmode": "array",
        "tickvals": vals,
        "ticktext": text,
        "tickangle": 0,
        "title": {"text": "layer"},
        "range": [-0.3, end],
    }


def _divider(k: int) -> float:
    """Where the dotted line between the layers and the pooled places stands."""
    return k - 1 + 0.45 * pooled_gap(k)


def layer_marks(k: int, *, pooled: int, selected: int | None) -> list[dict]:
    """Shapes: the selected representation's mark (lib.charts.common.layer_mark; the pooled one number
    ``selected - k`` sits at its place, :func:`pooled_places`) and, with ``pooled`` pooled points, a dotted line
    between the layers and them."""
    shapes = []
    if selected is not None:
        shapes.append(layer_mark(selected if selected < k else pooled_places(k, selected - k + 1)[-1]))
    if pooled:
        shapes.append(vline(_divider(k), {"color": CONTEXT_COLOR, "width": 1, "dash": "dot"}))
    return shapes
