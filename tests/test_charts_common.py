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


def test_figure_factory_same_output_with_and_without_validation(monkeypatch):
    from lib.charts.common import VALIDATE_ENV, base_layout, figure

    data = [{"type": "scatter", "x": [0, 1, 2], "y": [0.5, 0.25, 1.0], "name": "a", "mode": "lines"}]
    layout = base_layout(title="t", height=300) | {"xaxis": {"title": {"text": "layer"}}}
    monkeypatch.setenv(VALIDATE_ENV, "1")
    checked = figure(data, layout).to_plotly_json()
    monkeypatch.setenv(VALIDATE_ENV, "0")
    fast = figure(data, layout).to_plotly_json()
    assert checked["layout"] == fast["layout"]
    assert [list(t["y"]) for t in checked["data"]] == [list(t["y"]) for t in fast["data"]]
    assert checked["layout"]["title"]["text"] == "t" and fast["layout"]["height"] == 300


def test_figure_factory_validates_in_tests(monkeypatch):
    import pytest

    from lib.charts.common import VALIDATE_ENV, figure

    monkeypatch.setenv(VALIDATE_ENV, "1")
    with pytest.raises(ValueError):
        figure([{"type": "scatter", "bogus": 1}])
    monkeypatch.setenv(VALIDATE_ENV, "0")
    assert figure([{"type": "scatter", "bogus": 1}]).to_plotly_json()["data"][0]["bogus"] == 1
