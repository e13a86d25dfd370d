"""Fitting charts to the screen (lib/charts/common.py): heatmap cell numbers sized from the cell's pixel
size, hidden when they cannot fit; short S1…Sn row labels; the home page's stackable heatmap."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from lib.charts.common import presenter_layout, sentence_ticks
from lib.charts.fitting import (
    CHAR_WIDTH,
    LINE_HEIGHT,
    MIN_CELL_FONT,
    cell_text_changes,
    cell_text_size,
    fit_cell_text,
    heatmap_cell_px,
)
from lib.charts.home import shared_floor, similarity_heatmap


def test_cell_text_size_by_hand():
    # 40 px wide, 4 characters: 40 / 4 / 0.65 = 15.38 -> 15; 30 px tall: 30 / 1.3 = 23.1 -> 23; cap 22
    assert cell_text_size(40, 30, 4, max_size=22) == 15
    # the height limits: 100 px wide, 13 px tall -> 13 / 1.3 = 10
    assert cell_text_size(100, 13, 4, max_size=22) == 10
    # the cap limits
    assert cell_text_size(400, 400, 4, max_size=14) == 14
    # two lines need twice the height: 26 / 2 / 1.3 = 10
    assert cell_text_size(100, 26, 4, lines=2, max_size=22) == 10


def test_cell_text_is_hidden_when_the_cell_is_too_small():
    # 20 px wide, 4 characters: 20 / 4 / 0.65 = 7.7 -> 7 px, below the readable minimum
    assert cell_text_size(20, 30, 4, max_size=22) is None
    assert cell_text_size(20, 30, 4, max_size=22, min_size=7) == 7
    assert cell_text_size(0, 30, 4, max_size=22) is None
    assert cell_text_size(30, 30, 0, max_size=22) is None


@pytest.mark.parametrize("w,h,chars", [(37.0, 30.0, 4), (61.5, 18.5, 5), (12.0, 50.0, 2), (200.0, 9.0, 3)])
def test_cell_text_size_never_overflows_the_cell(w, h, chars):
    size = cell_text_size(w, h, chars, max_size=40, min_size=1)
    assert size is not None
    assert chars * size * CHAR_WIDTH <= w + 1e-9 and size * LINE_HEIGHT <= h + 1e-9
    assert chars * (size + 1) * CHAR_WIDTH > w or (size + 1) * LINE_HEIGHT > h or size == 40  # the largest


def _grid(n: int, height: int) -> go.Figure:
    z = np.linspace(0, 1, n * n).reshape(n, n)
    fig = go.Figure(go.Heatmap(z=z, text=[[f"{v:.2f}" for v in r] for r in z], texttemplate="%{text}"))
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10}, font={"size": 14})
    return fig


def test_heatmap_cell_px_follows_width_height_and_subplot_domain():
    fig = _grid(10, 500)
    w1, h1 = heatmap_cell_px(fig, fig.data[0], 1000)
    w2, h2 = heatmap_cell_px(fig, fig.data[0], 500)
    assert w2 < w1 and h2 == h1
    assert 0 < w1 < 100 and 0 < h1 < 50
    two = make_subplots(rows=1, cols=2)
    for col in (1, 2):
        two.add_trace(go.Heatmap(z=np.eye(10), showscale=False), row=1, col=col)
    two.update_layout(height=500, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    half, _ = heatmap_cell_px(two, two.data[1], 1000)
    one = go.Figure(go.Heatmap(z=np.eye(10), showscale=False))
    one.update_layout(height=500, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    whole, _ = heatmap_cell_px(one, one.data[0], 1000)
    assert half < 0.55 * whole


def test_fit_cell_text_hides_numbers_that_cannot_fit_and_keeps_them_in_hover():
    wide = fit_cell_text(_grid(12, 500), 1000)
    assert wide.data[0].texttemplate == "%{text}"
    assert wide.data[0].textfont.size is None  # plotly's automatic size fits the drawn cell
    narrow = fit_cell_text(_grid(12, 500), 300)
    assert narrow.data[0].texttemplate == ""
    assert narrow.data[0].text is not None  # the values are still there for the hover label
    many = fit_cell_text(_grid(40, 500), 1000)
    assert many.data[0].texttemplate == ""


def test_fit_cell_text_reads_the_z_format():
    fig = go.Figure(go.Heatmap(z=np.full((4, 4), 0.123456), texttemplate="%{z:.2f}", textfont={"size": 11}))
    fig.update_layout(height=400, font={"size": 14})
    fit_cell_text(fig, 900)
    assert fig.data[0].texttemplate == "%{z:.2f}" and fig.data[0].textfont.size is None


def test_presenter_layout_leaves_cell_numbers_to_fit_their_cells():
    big = presenter_layout(_grid(12, 500))
    assert big.data[0].textfont.size is None  # not a fixed size that would collide in small cells


def test_sentence_ticks_are_short_escaped_and_numbered():
    ticks = sentence_ticks(["money", "<b>river</b>", None])
    assert [t.rsplit("</span>", 1)[1] for t in ticks] == ["S1", "S2", "S3"]
    assert "&lt;b&gt;river&lt;/b&gt;" in ticks[1] and "<b>" not in ticks[1]
    assert sentence_ticks([None, None]) == ["S1", "S2"]


def test_similarity_heatmap_keeps_full_sentences_in_hover(encoder):
    from lib.stats.similarity import cosine_matrix

    sentences = ["The bank raised <i>rates</i>.", "We sat on the river bank.", "The bank closed early."]
    tv = encoder.target_vectors(sentences, "bank")
    cos = cosine_matrix(tv.vectors[:, -1, :])
    floor = shared_floor(cosine_matrix(tv.vectors[:, 0, :]), cos)
    fig = similarity_heatmap(cos, sentences, ["money", "river", "money"], None, zmin=floor)
    trace = fig.data[0]
    assert list(fig.layout.yaxis.ticktext)[0].endswith("S1")
    assert trace.customdata[0][1][3] == "We sat on the river bank."
    assert "&lt;i&gt;rates&lt;/i&gt;" in trace.customdata[0][0][1]
    assert np.allclose(np.asarray(trace.z), cos)
    assert floor <= float(cos.min()) and trace.zmin == floor and trace.zmax == 1.0
    assert MIN_CELL_FONT >= 8


@pytest.mark.parametrize(("n", "width"), [(12, 1000), (12, 300), (40, 1000)])
def test_cell_text_changes_says_what_fitting_changes_and_nothing_after_it(n, width):
    fig = _grid(n, 500)
    fig.data[0].textfont.size = 11
    before = fig.to_dict()
    planned = cell_text_changes(fig, width)
    assert fig.to_dict() == before  # only looks
    assert planned in ([(0, True)], [(0, False)])  # a set size to reset, or numbers to hide
    fit_cell_text(fig, width)
    assert (fig.data[0].texttemplate == "") == planned[0][1]
    assert cell_text_changes(fig, width) == []  # a fitted figure is drawn as it is, without a copy
