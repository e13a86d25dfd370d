"""lib/charts/common.py: the one escape, the one NaN guard and the shared pair colours."""

from __future__ import annotations

import numpy as np

from lib.charts import common, geometry, layers, lesson


def test_esc_escapes_markup_but_not_quotes():
    assert common.esc("<b>bank</b> & 'rates' \"x\"") == "&lt;b&gt;bank&lt;/b&gt; &amp; 'rates' \"x\""
    assert common.esc(3) == "3"


def test_finite_replaces_nan_and_inf_with_zero():
    out = common.finite([1.0, np.nan, np.inf, -np.inf, -2])
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 0.0, 0.0, 0.0, -2.0])


def test_same_and_different_sense_colours_are_shared():
    assert layers.SAME_COLOR == lesson.SAME_COLOR == common.SAME_COLOR
    assert layers.DIFFERENT_COLOR == lesson.DIFFERENT_COLOR == common.DIFFERENT_COLOR
    fig = geometry.gap_bars({"raw": (0.8, 0.3)})
    colours = {t.name: t.marker.color for t in fig.data}
    assert colours == {"same sense": common.SAME_COLOR, "different sense": common.DIFFERENT_COLOR}


def test_sense_ticks_colour_by_first_appearance_whatever_the_order():
    labels = ["S1 <b>", "S2", "S3"]
    senses = ["river", None, "money"]
    ticks = common.sense_ticks(labels, senses)
    blue, orange = common.SENSE_COLORS[0], common.SENSE_COLORS[1]
    assert ticks == [
        f"<span style='color:{blue}'>river ▍</span>S1 &lt;b&gt;",
        "S2",
        f"<span style='color:{orange}'>money ▍</span>S3",
    ]
    # reordered axis: money keeps its colour, because colours follow the full list
    assert common.sense_ticks(labels, senses, order=[2, 0]) == [ticks[2], ticks[0]]
    assert common.sense_ticks(labels, senses, names=False)[0] == f"<span style='color:{blue}'>▍</span>S1 &lt;b&gt;"


def test_band_from_zero_is_a_closed_polygon_from_zero_to_top():
    from lib.charts.common import band_from_zero

    tr = band_from_zero([0.5, 0.7, 0.6], name="chance")
    assert list(tr.x) == [0, 1, 2, 2, 1, 0]
    assert list(tr.y) == [0.5, 0.7, 0.6, 0.0, 0.0, 0.0]
    assert tr.fill == "toself" and tr.hoverinfo == "skip" and tr.name == "chance"
