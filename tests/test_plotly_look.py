"""ui.plotly_look: charts sent with Streamlit's look in the layout, so plotly.js draws a changed chart less often
(issue 16). The browser side (how many draws) is measured by benchmarks/browser_profile.py, not here."""

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
