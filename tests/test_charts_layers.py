"""Figures of the Layer by layer, Anisotropy and Start here pages and of the controls (lib/charts/layers.py,
geometry.py, home.py, controls.py), built from dicts in one step: what they draw, and that plotly's
validation would not change them."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest
from plotly.colors import get_colorscale

from lib.charts import common, controls, geometry, home, layers

RNG = np.random.default_rng(7)
N = 9
SENSES = ["river", "money", "river", None, "money", "bench", "river", None, "money"]
LABELS = [f"S{i + 1} · sentence <{i}>" for i in range(N)]
NAMES = layers.layer_names(6)


def _cos(n: int = N) -> np.ndarray:
    x = RNG.normal(size=(n, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


BUILDERS = {
    "similarity_heatmap": lambda: layers.similarity_heatmap(_cos(), LABELS, SENSES, title="t", adjusted=True),
    "layer_small_multiples": lambda: layers.layer_small_multiples(
        np.stack([_cos() for _ in NAMES]), SENSES, NAMES, selected=2
    ),
    "trajectory_chart": lambda: layers.trajectory_chart(
        NAMES,
        same=RNG.random(7),
        different=RNG.random(7),
        all_pairs=RNG.random(7),
        baseline=(RNG.random(7), RNG.random(7), RNG.random(7)),
        pairs=[layers.PairLine("S1–S2", RNG.random(7), True)],
        pooled=layers.PooledPoint("last 4", same=0.6, different=0.3, baseline=0.2),
        selected=7,
        adjusted=True,
        title="t",
    ),
    "static_contextual_chart": lambda: layers.static_contextual_chart(
        ["static", "layer 6"], {"same sense": [0.9, None], "all pairs": [0.8, 0.4]}
    ),
    "ethayarajh_chart": lambda: layers.ethayarajh_chart(
        NAMES, self_similarity=RNG.random(7), intra_sentence=RNG.random(7), baseline=RNG.random(7), selected=3
    ),
    "readout_chart": lambda: layers.readout_chart(
        NAMES, RNG.random(7), 0.4, best=2, pooled=("last 4", 0.7), selected=1, chance=(RNG.random(7), RNG.random(7))
    ),
    "before_after_heatmaps": lambda: home.before_after_heatmaps(_cos(), _cos(), LABELS, SENSES, ("a", "b")),
    "home_similarity_heatmap": lambda: home.similarity_heatmap(_cos(), LABELS, SENSES, "t", zmin=0.2),
    "anisotropy_by_layer": lambda: geometry.anisotropy_by_layer(
        {"none": RNG.random(7), "zscore": RNG.random(7)}, {"none": "raw"}, layer=3, reference=RNG.random(13), title="<t>"
    ),
    "similarity_before_after": lambda: geometry.similarity_before_after(_cos(), _cos(), LABELS, SENSES, ("a", "b")),
    "dimension_profile": lambda: geometry.dimension_profile(RNG.random(30), RNG.normal(size=30), RNG.normal(size=30)),
    "norms_by_layer": lambda: geometry.norms_by_layer(RNG.random(7) * 10, layer=2, title="n"),
    "norms_by_layer_marks": lambda: geometry.norms_by_layer(RNG.random(7) * 10, title="n", all_marks=True),
    "anisotropy_by_layer_marks": lambda: geometry.anisotropy_by_layer(
        {"none": RNG.random(7)}, {"none": "raw"}, title="t", all_marks=True
    ),
    "gap_bars": lambda: geometry.gap_bars({"raw": (0.7, 0.4), "z-scored": (None, 0.1)}, title="g"),
    "probe_chart": lambda: controls.probe_chart(NAMES, RNG.random(7), RNG.random(7), RNG.random(7), 0.35, title="p"),
    "two_model_chart": lambda: controls.two_model_chart(
        [("m1 · self", RNG.random(7), "solid"), ("m2 · self", RNG.random(13), "dash")],
        title="t",
        y_title="y",
        relative=True,
        zero_line=True,
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_validation_would_not_change_the_figure(name, monkeypatch):
    """Built without validation (the app) and with it (the tests): the same JSON reaches the browser. A
    shorthand plotly only expands when validating (``"title": "cosine"``) or a wrong key would differ or raise."""
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    state = RNG.bit_generator.state
    checked = BUILDERS[name]()
    monkeypatch.setenv(common.VALIDATE_ENV, "0")
    RNG.bit_generator.state = state  # the same random input
    fast = BUILDERS[name]()
    assert _scales(json.loads(pio.to_json(fast, validate=False))) == _scales(json.loads(pio.to_json(checked, validate=False)))


def _scales(obj):
    """``obj`` with colour scales written out as plotly's validation writes them (a name such as "Viridis"
    as its list of [position, colour]), positions rounded (the two expansions differ in the last bit)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "colorscale" and isinstance(v, (str, list)):
                out[k] = [[round(float(p), 9), c] for p, c in (get_colorscale(v) if isinstance(v, str) else v)]
            else:
                out[k] = _scales(v)
        return out
    if isinstance(obj, list):
        return [_scales(v) for v in obj]
    return obj


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
    fig = BUILDERS["trajectory_chart"]()
    xs = sorted(s.x0 for s in fig.layout.shapes if s.yref == "y domain")
    assert xs == pytest.approx([k - 0.2, k + 0.6])  # the divider, and the selected pooled representation
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
    probe = BUILDERS["probe_chart"]()
    (line,) = [t for t in probe.data if t.name and t.name.startswith("always the most common sense")]
    assert list(line.y) == [0.35, 0.35] and line.name.endswith("35%")
    readout = layers.readout_chart(NAMES, np.linspace(0.2, 0.9, 7), 0.5, best=6)
    (line,) = [t for t in readout.data if t.name and t.name.startswith("always")]
    assert list(line.y) == [0.5, 0.5]
    assert [t.text for t in readout.data if t.mode == "lines+markers+text"][0][6] == "90%"


@pytest.mark.parametrize("pooled", [False, True])
def test_all_marks_draw_an_invisible_line_at_every_layer_and_none_depends_on_the_choice(pooled):
    k = len(NAMES)
    acc = np.linspace(0.3, 0.9, k)
    build = {
        "trajectory": lambda sel: layers.trajectory_chart(
            NAMES, same=acc, different=acc / 2, pooled=layers.PooledPoint("last 4", same=0.6) if pooled else None,
            selected=sel, all_marks=True,
        ),
        "readout": lambda sel: layers.readout_chart(
            NAMES, acc, 0.4, best=6, pooled=("last 4", 0.7) if pooled else None, selected=sel, all_marks=True
        ),
        "ethayarajh": lambda sel: layers.ethayarajh_chart(
            NAMES, self_similarity=acc, intra_sentence=acc / 2, baseline=acc / 3, selected=sel, all_marks=True
        ),
    }  # fmt: skip
    for name, make in build.items():
        fig = make(None)
        assert fig.to_json() == make(3).to_json(), name  # the chosen layer is not in the figure
        marks = [s for s in fig.layout.shapes if s.opacity == 0]
        slots = k + (1 if pooled and name != "ethayarajh" else 0)
        assert len(marks) == slots, name
        assert list(fig.layout.shapes[:slots]) == marks  # first, in layer order
        assert [m.x0 for m in marks[:k]] == list(range(k))
        for r in range(k):
            idx = layers.layer_mark_index(k, r, pooled=pooled)
            assert fig.layout.shapes[idx].x0 == r
        if slots > k:
            assert fig.layout.shapes[layers.layer_mark_index(k, k, pooled=True)].x0 == pytest.approx(k + 0.6)
    assert layers.layer_mark_index(k, k + 1, pooled=False) is None


def test_show_layer_mark_draws_the_chosen_line_in_a_copy():
    fig = layers.trajectory_chart(NAMES, all_pairs=np.linspace(0.2, 0.9, 7), all_marks=True)
    shown = layers.show_layer_mark(fig, 4)
    assert [s.opacity for s in shown.layout.shapes] == [0, 0, 0, 0, 1, 0, 0]
    assert all(s.opacity == 0 for s in fig.layout.shapes)  # the original is untouched
    # the same line the chart without all_marks draws at the selected layer
    plain = layers.trajectory_chart(NAMES, all_pairs=np.linspace(0.2, 0.9, 7), selected=4)
    (line,) = plain.layout.shapes
    assert (line.x0, line.line.color, line.line.width) == (4, shown.layout.shapes[4].line.color, 1)
    assert layers.show_layer_mark(fig, None).to_json() == fig.to_json()


def test_a_long_pooled_label_is_broken_in_two_at_its_middle_space():
    assert layers.two_lines("mean of last 4") == "mean of<br>last 4"
    assert layers.two_lines("mean of all") == "mean of<br>all"
    assert layers.two_lines("layer 3") == "layer 3"  # short: as it is
    assert layers.two_lines("averageofall") == "averageofall"  # no space: as it is
    fig = layers.readout_chart(NAMES, np.linspace(0.2, 0.9, 7), 0.5, best=6, pooled=("mean of last 4", 0.7))
    assert fig.layout.xaxis.ticktext[-1] == "mean of<br>last 4"
    assert fig.layout.legend.y == layers.LEGEND_Y_POOLED  # lower, clear of the deeper axis
    # the value labels may reach past the plot's edge (the first one, on a phone) instead of being cut
    assert all(t.cliponaxis is False for t in fig.data if t.mode and "text" in t.mode)
