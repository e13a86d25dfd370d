"""Figures of the Layer by layer, Anisotropy and Start here pages and of the controls (lib/charts/layers.py,
geometry.py, home.py, controls.py): what they draw. (That plotly's validation would not change them:
tests/test_lazy_figures.py, for every example in tests/chart_examples.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from lib.charts import common, geometry, home, layers
from tests.chart_examples import EXAMPLES, LABELS, NAMES, RNG, SENSES, N, _cos


def _blocks(senses) -> int:
    """Sense blocks of the grouped axis: each sense once, the unlabelled sentences one block at the end."""
    return len(set(senses))


def test_block_lines_follow_the_sense_boundaries():
    fig = layers.similarity_heatmap(_cos(), LABELS, SENSES, title="t")
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 2 * (_blocks(SENSES) - 1)  # one horizontal and one vertical line per boundary
    order = layers.sense_order(SENSES)
    edges = [k - 0.5 for k in range(1, N) if SENSES[order[k]] != SENSES[order[k - 1]]]
    assert sorted({s.y0 for s in lines if s.xref == "x domain"}) == edges
    assert sorted({s.x0 for s in lines if s.yref == "y domain"}) == edges
    one = layers.similarity_heatmap(_cos(4), LABELS[:4], ["a"] * 4, title="t")
    assert not one.layout.shapes  # one sense: no boundary


def test_small_multiples_draw_each_panels_lines_on_its_own_axes():
    k = 5
    fig = layers.layer_small_multiples(np.stack([_cos() for _ in range(k)]), SENSES, NAMES[:k], selected=3, columns=2)
    per_panel = 2 * (_blocks(SENSES) - 1)
    for i in range(k):
        x = common.grid_axes(i)[0]
        mine = [s for s in fig.layout.shapes if s.type == "line" and x in (s.xref, s.xref.split(" ")[0])]
        assert len(mine) == per_panel, i
        assert fig.data[i].xaxis == x and fig.data[i].coloraxis == "coloraxis"
    (rect,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (rect.xref, rect.yref) == ("x4", "y4")
    assert fig.layout.annotations[3].text == f"<b>{NAMES[3]}</b>"  # the selected panel's title in bold
    assert fig.layout.height == 260 * 3 + 80  # 5 panels in 2 columns: 3 rows


def test_trajectory_marks_the_pooled_point_the_selected_layer_and_zero():
    k = len(NAMES)
    fig = EXAMPLES["layers.trajectory_chart"](None)
    xs = sorted(s.x0 for s in fig.layout.shapes if s.yref == "y domain")
    assert xs == pytest.approx([k - 1 + 0.45 * 1.54, k - 1 + 1.54])  # the divider, and the selected pooled one
    (zero,) = [s for s in fig.layout.shapes if s.xref == "x domain"]
    assert zero.y0 == zero.y1 == 0
    assert list(fig.layout.xaxis.ticktext) == [*NAMES, "last 4"]
    assert fig.layout.yaxis.title.text == "cosine − baseline"
    gap = [t for t in fig.data if t.fill == "tonexty" and t.name and "gap" in t.name]
    assert len(gap) == 1


def test_before_after_share_one_scale_covering_both_matrices():
    a, b = _cos(), _cos() * 0.5
    fig = geometry.similarity_before_after(a, b, LABELS, SENSES, ("raw", "z"))
    off = ~np.eye(N, dtype=bool)
    ca = fig.layout.coloraxis
    assert ca.cmin <= min(a[off].min(), b[off].min()) and ca.cmax >= max(a[off].max(), b[off].max())
    assert [t.xaxis for t in fig.data] == ["x", "x2"] and fig.layout.yaxis2.matches == "y"
    assert list(fig.layout.xaxis.tickvals) == list(range(1, N + 1))  # sentences numbered from 1
    np.testing.assert_allclose(np.asarray(fig.data[1].z, dtype=float), b, atol=1e-6)
    home_fig = home.before_after_heatmaps(a, b, LABELS, SENSES, ("first", "last"))
    assert home_fig.layout.coloraxis.cmin == home.shared_floor(a, b)
    assert list(home_fig.layout.xaxis.tickvals) == list(range(N))


def test_dimension_labels_sit_on_their_rows_bars():
    var, mean, part = RNG.random(30), RNG.normal(size=30), RNG.normal(size=30)
    fig = geometry.dimension_profile(var, mean, part, label_top=2)
    texts = fig.data[6:]  # one text trace of "dim j" labels per row, on the row's axes
    labels = [(t.xaxis, t.yaxis, text, y) for t in texts for text, y in zip(t.text, t.y, strict=True)]
    assert len(labels) == 6
    for xref, yref, text, y in labels:
        row = {"y": 0, "y2": 1, "y3": 2}[yref]
        j = int(text.split()[1])
        assert y == pytest.approx((var, mean, part)[row][j]) and xref == yref.replace("y", "x")
        assert fig.data[row].y[j] == pytest.approx(y)  # the row's profile, every dimension
        marked = fig.data[3 + row]  # the row's labelled dimensions: orange rectangles over it, one wide
        assert marked.fillcolor == geometry.HIGHLIGHT and marked.xaxis == xref
        k = 5 * list(marked.x[::5]).index(j - 0.5)  # each rectangle: 4 corners and a gap
        assert list(marked.x[k : k + 4]) == [j - 0.5, j - 0.5, j + 0.5, j + 0.5]
        assert marked.y[k + 1] == pytest.approx(y) and marked.y[k] == marked.y[k + 3] == 0
    assert not [a for a in fig.layout.annotations if a.text.startswith("dim")]  # no annotation to redraw
    assert fig.layout.xaxis.matches == "x3" and fig.layout.xaxis3.title.text == "dimension"


def test_probe_and_readout_draw_the_majority_rate():
    probe = EXAMPLES["controls.probe_chart"](None)
    (line,) = [t for t in probe.data if t.name and t.name.startswith("always the most common sense")]
    assert list(line.y) == [0.35, 0.35] and line.name.endswith("35%")
    readout = layers.readout_chart(NAMES, np.linspace(0.2, 0.9, 7), 0.5, best=6)
    (line,) = [t for t in readout.data if t.name and t.name.startswith("always")]
    assert list(line.y) == [0.5, 0.5]
    assert [t.text for t in readout.data if t.mode == "lines+markers+text"][0][6] == "90%"


@pytest.mark.parametrize("pooled", [False, True])
def test_every_chart_over_the_layers_lists_its_places_and_marks_the_chosen_one(pooled):
    """lib.charts.common.layer_positions: the layers, then a pooled representation's place; ``selected`` draws
    lib.charts.common.layer_mark at it (ui.widgets.layer_chart hides one at every place and shows one)."""
    k = len(NAMES)
    acc = np.linspace(0.3, 0.9, k)
    build = {
        "trajectory": lambda sel: layers.trajectory_chart(
            NAMES, same=acc, different=acc / 2, pooled=[layers.PooledPoint("last 4", same=0.6)] if pooled else None,
            selected=sel,
        ),
        "readout": lambda sel: layers.readout_chart(
            NAMES, acc, 0.4, best=6, pooled=[("last 4", 0.7)] if pooled else None, selected=sel
        ),
        "ethayarajh": lambda sel: layers.ethayarajh_chart(
            NAMES, self_similarity=acc, intra_sentence=acc / 2, baseline=acc / 3, selected=sel
        ),
        "anisotropy": lambda sel: geometry.anisotropy_by_layer({"none": acc}, {"none": "raw"}, layer=sel),
        "norms": lambda sel: geometry.norms_by_layer(acc * 10, layer=sel),
    }  # fmt: skip
    for name, make in build.items():
        spec = make(None).to_dict()
        places = common.layer_positions(spec)
        with_pooled = pooled and name in ("trajectory", "readout")
        assert places == [*range(k), *([pytest.approx(k - 1 + 1.54)] if with_pooled else [])], name
        mark = common.layer_mark(places[3])
        shapes = make(3).to_dict()["layout"]["shapes"]
        assert [s for s in shapes if s not in spec["layout"].get("shapes", [])] == [mark], name
    fig = layers.trajectory_chart(NAMES, all_pairs=acc, pooled=[layers.PooledPoint("last 4", all_pairs=0.5)], selected=k)
    assert fig.layout.shapes[0].x0 == pytest.approx(k - 1 + 1.54)  # a pooled choice: its mark on the pooled place


def test_both_pooled_vectors_sit_right_of_the_layers_one_place_each():
    """The page draws both means on its charts over the layers whatever is chosen (a change of pooling then moves
    only the mark): each has its own place, tick and hover name, and ``selected = K + i`` marks the one ``i``."""
    k = len(NAMES)
    acc = np.linspace(0.3, 0.9, k)
    both = [layers.PooledPoint("mean of last 4", same=0.6, different=0.2), layers.PooledPoint("mean of all", same=0.5)]
    fig = layers.trajectory_chart(NAMES, same=acc, different=acc / 2, pooled=both, selected=k + 1)
    assert common.layer_positions(fig.to_dict()) == [*range(k), pytest.approx(k - 1 + 1.54), pytest.approx(k - 1 + 3.08)]
    assert list(fig.layout.xaxis.ticktext[-2:]) == ["mean<br>last 4", "mean<br>all"]
    assert fig.layout.shapes[0].x0 == pytest.approx(k - 1 + 3.08)  # the second mean marked
    diamonds = {t.marker.color: t for t in fig.data if t.mode == "markers"}
    same, different = diamonds[layers.SAME_COLOR], diamonds[layers.DIFFERENT_COLOR]
    assert list(same.x) == pytest.approx([k - 1 + 1.54, k - 1 + 3.08]) and list(same.y) == [0.6, 0.5]
    assert list(same.customdata) == ["mean of last 4", "mean of all"]
    assert list(different.x) == pytest.approx([k - 1 + 1.54]) and list(different.y) == [0.2]  # None: no point
    readout = layers.readout_chart(NAMES, acc, 0.4, best=6, pooled=[("mean of last 4", 0.75), ("mean of all", 0.5)])
    (points,) = [t for t in readout.data if t.mode == "markers+text"]
    assert list(points.x) == pytest.approx([k - 1 + 1.54, k - 1 + 3.08]) and list(points.text) == ["75%", "50%"]
    (majority,) = [t for t in readout.data if t.name and t.name.startswith("always")]
    assert majority.x[-1] == pytest.approx(k - 1 + 3.08 + 0.77)  # the majority line reaches past both


def test_a_long_pooled_label_is_broken_in_two_at_its_middle_space():
    assert layers.two_lines("mean of last 4") == "mean of<br>last 4"
    assert layers.two_lines("mean of all") == "mean of<br>all"
    assert layers.two_lines("layer 3") == "layer 3"  # short: as it is
    assert layers.two_lines("averageofall") == "averageofall"  # no space: as it is
    fig = layers.readout_chart(NAMES, np.linspace(0.2, 0.9, 7), 0.5, best=6, pooled=[("mean of last 4", 0.7)])
    assert fig.layout.xaxis.ticktext[-1] == "mean<br>last 4"
    assert fig.layout.legend.y == layers.LEGEND_Y_POOLED  # lower, clear of the deeper axis
    # the value labels may reach past the plot's edge (the first one, on a phone) instead of being cut
    assert all(t.cliponaxis is False for t in fig.data if t.mode and "text" in t.mode)


def test_many_layers_name_every_fifth_and_leave_the_pooled_labels_room_on_a_phone():
    """The decoder's 31 hidden states: every layer keeps its tick (its place is its index) but every fifth is named,
    the labels stay level, and on a phone's ~264-px plot each pooled label has >= 40 px from its neighbour."""
    names = layers.layer_names(30)
    both = [layers.PooledPoint("mean of last 4", all_pairs=0.5), layers.PooledPoint("mean of all", all_pairs=0.4)]
    fig = layers.trajectory_chart(names, all_pairs=np.linspace(0.2, 0.9, 31), pooled=both)
    axis = fig.layout.xaxis
    assert len(axis.tickvals) == 33 and list(axis.tickvals[:31]) == list(range(31))
    assert [t for t in axis.ticktext[:31] if t] == ["0 emb.", "5", "10", "15", "20", "25", "30"]
    assert axis.tickangle == 0
    px = 264 / (axis.range[1] - axis.range[0])
    last, first, second = axis.tickvals[30], axis.tickvals[31], axis.tickvals[32]
    assert (first - last) * px >= 40 - 0.5 and (second - first) * px >= 40 - 0.5
    assert (axis.range[1] - second) * px >= 20 - 0.5  # half a label to the right edge
    few = layers.trajectory_chart(NAMES, all_pairs=np.linspace(0.2, 0.9, len(NAMES)))
    assert list(few.layout.xaxis.ticktext) == NAMES  # a few layers: every one named
    bert_base = layers.layer_names(12)  # 13 hidden states: still every one
    assert layers.layer_labels(bert_base) == bert_base
    # the other charts over the layers name them alike
    acc = np.linspace(0.2, 0.9, 31)
    etha = layers.ethayarajh_chart(names, self_similarity=acc, intra_sentence=acc, baseline=acc)
    assert list(etha.layout.xaxis.ticktext) == layers.layer_labels(names)


def test_bar_values_too_narrow_to_read_are_left_to_the_hover():
    """The lengths chart writes each bar's value up to 13 layers and never smaller than 10 px (a decoder's 31 bars
    on a phone printed unreadable numbers): past that the values are the hover's."""
    fig = geometry.norms_by_layer(np.linspace(2, 700, 31), layer=4)
    assert fig.layout.uniformtext.minsize == 10 and fig.layout.uniformtext.mode == "hide"
    (bars,) = fig.data
    assert bars.text is None and "%{y" in bars.hovertemplate  # 31 layers: the values are the hover's
    (few,) = geometry.norms_by_layer(np.linspace(2, 13, 7)).data
    assert list(few.text) == ["2.0", "3.8", "5.7", "7.5", "9.3", "11.2", "13.0"]
