"""lib/charts/common.py: the one escape, the one NaN guard and the shared pair colours."""

from __future__ import annotations

import numpy as np

from lib.charts import common, figures, geometry, layers, lesson


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


# ------------------------------------------------------------- figures from dicts (a rerun's server CPU)
def test_figure_to_dict_is_plotlys_and_independent_of_the_figure():
    import plotly.graph_objects as go

    z = np.arange(6, dtype=np.float32).reshape(2, 3)
    data = [{"type": "heatmap", "z": z, "text": [["a", "b", "c"], ["d", "e", "f"]], "texttemplate": "%{text}"}]
    layout = common.base_layout(title="t", height=300) | {"shapes": [common.vline(1, {"color": "black"})]}
    fig = common.figure(data, layout)
    assert isinstance(fig, go.Figure)
    ours = fig.to_dict()
    assert ours == go.Figure.to_dict(fig)  # plotly's deep copy gives the same dict
    ours["data"][0]["text"][0][0] = "changed"
    ours["layout"]["shapes"][0]["x0"] = 5
    ours["layout"]["title"]["text"] = "other"
    assert fig.data[0].text[0][0] == "a" and fig.layout.shapes[0].x0 == 1 and fig.layout.title.text == "t"
    np.testing.assert_array_equal(fig.data[0].z, z)  # base64 encoding did not replace the figure's array


def test_merged_merges_nested_dicts_and_changes_no_input():
    base = {"legend": {"title": {"text": ""}}, "height": 300}
    change = {"orientation": "h", "title": {"font": {"size": 9}}}
    out = common.merged(base, legend=change, height=400)
    assert out == {"legend": {"title": {"text": "", "font": {"size": 9}}, "orientation": "h"}, "height": 400}
    assert base == {"legend": {"title": {"text": ""}}, "height": 300}
    out["legend"]["title"]["font"]["size"] = 1
    assert change["title"]["font"]["size"] == 9  # the result shares no dict with the inputs


def test_figure_dict_round_trip_leaves_out_only_the_default_template():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[0, 1], y=[2, 3], line={"width": 2}))
    fig.update_layout(title="t", height=300)
    spec = figures.figure_dict(fig)
    assert "template" not in spec["layout"]
    again = common.figure(spec["data"], spec["layout"])
    assert again.to_dict() == fig.to_dict()
    spec["data"][0]["line"]["width"] = 9
    assert fig.data[0].line.width == 2
    custom = go.Figure(layout={"template": {"layout": {"font": {"size": 31}}}})
    assert figures.figure_dict(custom)["layout"]["template"]["layout"]["font"]["size"] == 31  # kept


def test_presenter_layout_of_a_dict_and_of_subplots():
    fig = {
        "data": [{"type": "heatmap", "z": [[1, 2]], "coloraxis": "coloraxis", "xaxis": "x2", "yaxis": "y2"}],
        "layout": common.base_layout(title="t", height=400) | common.subplot_grid(1, 2, titles=["a", "b"]),
    }
    big = common.presenter_layout(fig)
    assert big.layout.height == 500 and big.layout.margin.t == int(60 * 1.4)
    assert big.layout.xaxis2.tickfont.size == common.PRESENTER_FONT - 4
    assert big.layout.coloraxis.colorbar.tickfont.size == common.PRESENTER_FONT - 4
    assert {a.font.size for a in big.layout.annotations} == {common.PRESENTER_FONT - 2}
    assert "font" not in fig["layout"]["annotations"][0] or fig["layout"]["annotations"][0]["font"]["size"] == 16


def test_a_layer_axis_labels_every_layer_of_an_encoder_and_every_fifth_of_a_decoder():
    from lib.charts.common import layer_dtick

    assert layer_dtick(7) == 1 and layer_dtick(13) == 1  # all-MiniLM-L6-v2, bert-base: every layer
    assert layer_dtick(31) == 5  # SmolLM2-135M: 31 labels at ~11 px each did not fit a 358-px phone chart
    assert len(range(0, 31, layer_dtick(31))) <= 7
    from lib.charts.common import layer_ticktext

    assert layer_ticktext(7) == [str(i) for i in range(7)]
    shown = [t for t in layer_ticktext(31) if t]
    assert shown == ["0", "5", "10", "15", "20", "25", "30"] and len(layer_ticktext(31)) == 31
