"""ui.plotly_look: charts sent with Streamlit's look in the layout, so plotly.js draws a changed chart less often
(a chart's browser draw time). The browser side (how many draws) is measured by benchmarks/browser_profile.py, not here."""

import json

import numpy as np
import plotly.io as pio
import streamlit as st  # noqa: F401  (sets Streamlit's plotly template as the default, as in the app)

from lib.charts.geometry import dimension_profile, norms_by_layer, similarity_before_after
from ui import plotly_look
from ui.plotly_look import AXIS_LOOK, DATAREVISION, LIST_MAX, LOOK, SentFigure, themed_spec


def _sent(fig) -> dict:
    """The spec as st.plotly_chart writes it: SentFigure.to_dict through plotly.io.to_json."""
    return json.loads(pio.to_json(SentFigure(themed_spec(fig)).to_dict(), validate=False))


def test_no_template_a_constant_datarevision_and_our_layout_wins():
    fig = norms_by_layer([9.8, 11.8, 11.7, 11.5], layer=2, title="Mean vector length per layer")
    assert "template" in fig.to_dict()["layout"]  # built with Streamlit's template (what used to be sent)
    spec = _sent(fig)
    lay = spec["layout"]
    assert "template" not in lay and lay["datarevision"] == DATAREVISION
    assert lay["title"]["text"] == "Mean vector length per layer"  # not wrapped in <b>: a bold font instead
    assert lay["title"]["font"]["weight"] == "bold"
    assert lay["font"]["size"] == fig.layout.font.size  # ours (14), not the theme's 12
    assert lay["font"]["family"] == LOOK["font"]["family"] and lay["paper_bgcolor"] == "#FFFFFF"
    assert lay["margin"]["l"] == fig.layout.margin.l and lay["margin"]["pad"] == LOOK["margin"]["pad"]
    for name in ("xaxis", "yaxis"):
        assert lay[name]["automargin"] is True  # labels are never cut
        assert "minor" not in lay[name]  # a layout "minor" would switch minor grid lines on
    assert lay["xaxis"]["title"]["text"] == fig.layout.xaxis.title.text
    assert lay["xaxis"]["title"]["standoff"] == AXIS_LOOK["xaxis"]["title"]["standoff"]
    # the bar heights as plain numbers (a base64 array would look changed to Plotly.react after mounting)
    assert spec["data"][0]["y"] == list(np.asarray(fig.data[0].y, dtype=float))


def test_a_chart_without_a_title_gets_no_title_object():
    fig = norms_by_layer([9.8, 11.8, 11.7], layer=1)  # no title
    assert "title" not in _sent(fig)["layout"]


def test_every_subplot_axis_and_colour_axis_gets_the_look():
    rng = np.random.default_rng(0)
    fig = dimension_profile(rng.random(384), rng.normal(size=384), rng.random(384) / 100, title="Layer 3")
    lay = _sent(fig)["layout"]
    for name in ("xaxis", "xaxis2", "xaxis3", "yaxis", "yaxis2", "yaxis3"):
        assert lay[name]["gridcolor"] == AXIS_LOOK[name[:5]]["gridcolor"], name
    assert lay["xaxis"]["matches"] == "x3" and lay["xaxis3"]["title"]["text"] == "dimension"  # ours kept

    m = np.corrcoef(rng.normal(size=(5, 20)))
    fig = similarity_before_after(m, m, [f"S{i}" for i in range(1, 6)], [None] * 5, ("raw", "z-scored"))
    lay = _sent(fig)["layout"]
    assert lay["coloraxis"]["colorbar"]["thickness"] == 16  # the theme's colour bar
    assert lay["coloraxis"]["colorscale"] == json.loads(json.dumps(fig.layout.coloraxis.colorscale))  # ours


def test_large_arrays_stay_base64_and_the_figure_is_not_changed(monkeypatch):
    fig = norms_by_layer(list(np.linspace(1, 2, 7)), layer=3)
    before = fig.to_json()
    monkeypatch.setattr(plotly_look, "LIST_MAX", 3)
    y = _sent(fig)["data"][0]["y"]
    assert isinstance(y, dict) and y["dtype"] == "f8"  # over LIST_MAX numbers: base64, as plotly sends it
    assert fig.to_json() == before  # the (possibly shared) figure itself is untouched
    assert LIST_MAX >= 1_000  # the real limit keeps the default preset's arrays (384 dimensions, 12 x 12) as lists


# ------------------------------------------------------------------------------- margins sized in advance
def _line_chart(y_title="mean cosine", x_title="layer", **yaxis):
    from lib.charts.common import base_layout, figure, merged

    layout = merged(base_layout(height=420), xaxis={"title": {"text": x_title}}, yaxis={"title": {"text": y_title}, **yaxis})
    return figure([{"type": "scatter", "x": list(range(7)), "y": np.linspace(0.31, 0.87, 7)}], layout)


def test_text_width_is_source_sans():
    # digits are 0.497 em in Source Sans, a "." 0.249 em; tags are not drawn, entities are one character
    assert plotly_look.text_width("0.8", 12) == (497 + 249 + 497) * 12 / 1000
    assert plotly_look.text_width("<span style='color:red'>S1</span>", 12) == plotly_look.text_width("S1", 12)
    assert plotly_look.text_width("&lt;", 10) == plotly_look.text_width("<", 10)
    assert plotly_look.text_width("<b>W</b>", 12) > plotly_look.text_width("W", 12)  # bold is wider
    assert plotly_look.text_width("漢", 12) == 12  # an unknown character counts as 1 em: never too narrow


def test_auto_tick_labels_follow_plotlys_steps():
    # 0..1 over 300 px: about 8 ticks, so a step of 0.2; plotly writes 1, not 1.0, and a true minus sign
    assert plotly_look._auto_tick_labels(0.0, 1.0, 300, None) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    assert plotly_look._auto_tick_labels(-0.1, 0.1, 300, None)[0] == "−0.1"
    assert plotly_look._auto_tick_labels(0.0, 1.0, 300, ".0%")[-1] == "100%"
    assert plotly_look._auto_tick_labels(0.0, 1.0, 300, ",.3s") is None  # a format it does not know: no guess


def test_presized_margins_hold_the_labels_and_titles():
    spec = themed_spec(_line_chart(), 980)
    m = spec["layout"]["margin"]
    labels = plotly_look._axis_labels(spec, "yaxis", 300)
    widest = max(plotly_look.text_width(t, 12) for t in labels)
    y_title = AXIS_LOOK["yaxis"]["title"]
    # the widest y label, plotly's gap before it, and the title (0.7 of its font + its standoff)
    assert m["l"] >= plotly_look.Y_LABEL_GAP + widest + 0.7 * y_title["font"]["size"] + y_title["standoff"]
    assert m["l"] <= plotly_look.Y_LABEL_GAP + widest + 0.7 * y_title["font"]["size"] + y_title["standoff"] + 4
    x_title = AXIS_LOOK["xaxis"]["title"]
    assert m["b"] >= plotly_look.X_LABELS_DEPTH + 0.7 * x_title["font"]["size"] + x_title["standoff"]
    # a longer y title does not change the margin (it runs along the axis); longer labels do
    assert themed_spec(_line_chart(y_title="a much longer title on the y axis"), 980)["layout"]["margin"] == m
    wide = themed_spec(_line_chart(tickvals=[0.4, 0.8], ticktext=["0.4", "very wide label"]), 980)
    assert wide["layout"]["margin"]["l"] > m["l"] + 50
    # without a width (a caller that does not know it) the margins are left as built
    assert themed_spec(_line_chart())["layout"]["margin"]["l"] == 10


def test_presizing_only_raises_margins_and_leaves_charts_it_cannot_predict():
    from lib.charts.common import figure

    big = _line_chart()
    big.layout.margin.l = 300
    assert themed_spec(big, 980)["layout"]["margin"]["l"] == 300  # never lowered
    for layout in (
        {"xaxis": {"side": "top"}},  # labels on top: the top margin, not predicted
        {"xaxis2": {"overlaying": "x", "side": "top"}},  # a second axis over the first
        {"yaxis": {"scaleanchor": "x", "constrain": "domain"}},  # equal axes shrinking the plot inside its domain
        {"yaxis": {"tickformat": ",.3s"}},  # a number format it does not know
        {"yaxis": {"title": {"text": "two<br>lines"}}},
        {"yaxis": {"tickfont": {"size": 20}}},  # presenter mode's larger fonts
        {"yaxis": {"ticks": "outside"}},  # tick marks add their length
        {"xaxis": {"ticklabelposition": "inside"}},
    ):
        fig = figure([{"type": "scatter", "x": [0, 1, 2], "y": [0.1, 0.5, 0.9]}], {"margin": {"l": 10, "b": 10}, **layout})
        assert themed_spec(fig, 980)["layout"]["margin"] == {**LOOK["margin"], "l": 10, "b": 10}, layout
    fig = figure([{"type": "scatter3d", "x": [0, 1], "y": [0, 1], "z": [0, 1]}], {"margin": {"l": 10, "b": 10}})
    assert themed_spec(fig, 980)["layout"]["margin"]["l"] == 10
    # hidden axes push nothing
    hidden = {"xaxis": {"visible": False}, "yaxis": {"visible": False}, "margin": {"l": 10, "b": 10}}
    fig = figure([{"type": "scatter", "x": [0, 1, 2], "y": [0.1, 0.5, 0.9]}], hidden)
    assert themed_spec(fig, 980)["layout"]["margin"] == {**LOOK["margin"], "l": 10, "b": 10}


def test_a_tick_label_of_two_lines_gets_one_line_more_of_margin():
    """Layer by layer's pooled point is labelled "mean of<br>last 4": the bottom margin holds the second line, so
    plotly draws the chart once; the width check reads each line on its own."""
    from lib.charts.common import X_LABEL_LINE

    one = themed_spec(_line_chart(), 980)["layout"]["margin"]["b"]
    spec = _line_chart()
    spec.layout.xaxis.update(tickmode="array", tickvals=[0, 1, 2], ticktext=["0 emb.", "1", "mean of<br>last 4"])
    two = themed_spec(spec, 980)["layout"]["margin"]["b"]
    assert two == one + X_LABEL_LINE


def test_labels_turned_by_a_fixed_angle_are_sized_by_their_slant():
    """The token axes turn their labels by -60 degrees: the bottom margin holds the widest label's slanted depth
    (measured in Chromium: 32 px + width · sin + 12 px · cos, then the title); labels turned the other way, or by
    an angle on a y axis, are left to plotly."""
    import math

    tokens = ["[CLS]·0", "the·1", "approved·3"]
    widest = max(plotly_look.text_width(t, 12) for t in tokens)
    x_title = AXIS_LOOK["xaxis"]["title"]
    title = 0.7 * x_title["font"]["size"] + x_title["standoff"]
    for angle in (-30, -60, -90):
        spec = _line_chart()
        spec.layout.xaxis.update(tickmode="array", tickvals=[0, 1, 2], ticktext=tokens, tickangle=angle)
        turn = math.radians(-angle)
        expected = plotly_look.X_UPRIGHT_DEPTH + widest * math.sin(turn) + 12 * math.cos(turn) + title
        assert themed_spec(spec, 980)["layout"]["margin"]["b"] == math.ceil(expected) + 2, angle
    for axis, angle in (("xaxis", 45), ("yaxis", -60)):
        spec = _line_chart()
        spec.layout[axis].update(tickangle=angle)
        # not predicted: the margins as built (what a caller that does not know the width gets)
        assert themed_spec(spec, 980)["layout"]["margin"] == themed_spec(spec)["layout"]["margin"], (axis, angle)


def test_every_layers_chart_is_presized(encoder):
    """The charts the layer slider and the pooling switch redraw all get their margins in advance."""
    from lib.inputs.presets import default_preset
    from tests.conftest import page_test

    at = page_test("pages/layers.py", preset=default_preset().id).run()
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) >= 5
    for spec in specs:
        margin = spec["layout"]["margin"]
        assert margin["l"] > 10 and margin["b"] > 10, spec["layout"].get("title")


def test_labels_too_close_for_their_width_are_sized_upright():
    """Forty sentence numbers under a heatmap of 500 sentences: plotly turns them upright (90 degrees), so the
    bottom margin holds the widest label standing; a few labels with room between them stay flat."""
    from lib.charts.layers import similarity_heatmap

    rng = np.random.default_rng(0)
    for n, upright in ((12, False), (500, True)):
        x = rng.normal(size=(n, 8))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        fig = similarity_heatmap(x @ x.T, [f"S{i + 1} · s" for i in range(n)], ["a", "b"] * (n // 2), title="t")
        spec = themed_spec(fig, 980)
        labels = spec["layout"]["xaxis"]["ticktext"]
        widest = max(plotly_look.text_width(t, 12) for t in labels)
        title = 0.7 * AXIS_LOOK["xaxis"]["title"]["font"]["size"] + AXIS_LOOK["xaxis"]["title"]["standoff"]
        depth = plotly_look.X_UPRIGHT_DEPTH + widest if upright else plotly_look.X_LABELS_DEPTH
        assert depth + title <= spec["layout"]["margin"]["b"] <= depth + title + 4, n


def test_a_title_too_wide_for_a_phone_is_broken_into_balanced_lines_with_room_above():
    from ui.plotly_look import PHONE_TITLE_PX, TITLE_LINE_PX, text_width, wrap_title

    long = "Share of sentences whose sense is read correctly, layer by layer"
    assert text_width(long, 16, bold=True) > PHONE_TITLE_PX
    spec = {"data": [], "layout": {"title": {"text": long}, "margin": {"t": 60, "l": 10}}}
    out = wrap_title(spec)
    lines = out["layout"]["title"]["text"].split("<br>")
    assert " ".join(lines) == long and len(lines) == 2
    widths = [text_width(x, 16, bold=True) for x in lines]
    assert max(widths) <= PHONE_TITLE_PX and abs(widths[0] - widths[1]) < 0.35 * max(widths)  # balanced
    assert out["layout"]["margin"] == {"t": 60 + TITLE_LINE_PX, "l": 10}
    assert spec["layout"]["title"]["text"] == long  # the input is left as it was


def test_titles_that_fit_or_carry_markup_are_left_alone():
    from ui.plotly_look import wrap_title

    short = {"data": [], "layout": {"title": {"text": "Mean vector length per layer"}}}
    assert wrap_title(short) is short
    tagged = {"data": [], "layout": {"title": {"text": "A " + "very " * 30 + "<i>long</i> title"}}}
    assert wrap_title(tagged) is tagged  # a break inside a tag would show: not wrapped
    none = {"data": [], "layout": {}}
    assert wrap_title(none) is none
    two = {"data": [], "layout": {"title": {"text": "First line<br>" + "second line that is " * 3}, "margin": {}}}
    lines = wrap_title(two)["layout"]["title"]["text"].split("<br>")
    assert lines[0] == "First line" and len(lines) == 3
