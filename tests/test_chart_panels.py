"""Charts with several panels, built from dicts on explicit axis domains (lib.charts.common.subplot_grid)
instead of plotly's make_subplots (a chart's browser draw time): each panel draws its own data, on its own place."""

from __future__ import annotations

import numpy as np
import pytest
from plotly.subplots import make_subplots

from lib.charts.common import grid_axes, subplot_grid
from lib.models.attention import target_attention, token_labels


def _axis(fig, ref: str):
    """The layout axis a trace's "x2"/"y" reference names."""
    return fig.layout[ref[0] + "axis" + ref[1:]]


def _overlap(a, b) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


@pytest.mark.parametrize(
    "rows, cols, kw",
    [
        (1, 2, {"h_space": 0.14, "titles": ("a", "b")}),
        (2, 1, {"v_space": 0.12, "shared_x": True, "titles": ("top", "bottom")}),
        (1, 2, {"h_space": 0.04, "shared_y": True, "col_widths": [0.62, 0.38]}),
        (2, 1, {"v_space": 0.08, "shared_x": True, "row_heights": [0.65, 0.35]}),
        (3, 4, {"h_space": 0.03, "v_space": 0.06, "titles": [f"L{k}" for k in range(10)]}),
        (6, 13, {"h_space": 0.006, "v_space": 0.012}),
    ],
)
def test_grid_lays_out_panels_as_make_subplots_does(rows, cols, kw):
    names = {"h_space": "horizontal_spacing", "v_space": "vertical_spacing", "titles": "subplot_titles",
             "shared_x": "shared_xaxes", "shared_y": "shared_yaxes", "col_widths": "column_widths",
             "row_heights": "row_heights"}  # fmt: skip
    ref = make_subplots(rows=rows, cols=cols, **{names[k]: v for k, v in kw.items()}).layout
    grid = subplot_grid(rows, cols, **kw)
    for k in range(rows * cols):
        for name in (f"xaxis{grid_axes(k)[0][1:]}", f"yaxis{grid_axes(k)[1][1:]}"):
            ours, theirs = grid[name], ref[name]
            np.testing.assert_allclose(ours["domain"], theirs.domain, atol=1e-9)
            assert ours["anchor"] == theirs.anchor
            assert ours.get("matches") == theirs.matches
            assert ours.get("showticklabels") == theirs.showticklabels
    theirs = [(a.text, a.x, a.y) for a in ref.annotations]
    ours = [(a["text"], a["x"], a["y"]) for a in grid.get("annotations", [])]
    assert [t for t, _, _ in ours] == [t for t, _, _ in theirs]
    np.testing.assert_allclose([xy for _, *xy in ours], [xy for _, *xy in theirs], atol=1e-9)
    # every domain stays inside the figure, also after rounding (plotly refuses -1e-16)
    for name, axis in grid.items():
        if name.startswith(("xaxis", "yaxis")):
            assert 0.0 <= axis["domain"][0] < axis["domain"][1] <= 1.0


def test_target_bars_and_layer_heatmaps_stack_two_panels_on_one_token_axis(encoder):
    from lib.charts.attention import target_attention_bars, target_attention_by_layer

    enc = encoder.encode(["We sat on the river bank."])
    labels = token_labels(enc.tokens[0])
    ta = target_attention(enc.attentions[0], [enc.tokens[0].index("bank")])
    bars = target_attention_bars(ta.attends_to_mean[2], ta.attended_by_mean[2], labels, ta.token_indices)
    grid = target_attention_by_layer(ta.attends_to_mean, ta.attended_by_mean, labels)
    for fig, (top, bottom) in ((bars, (ta.attends_to_mean[2], ta.attended_by_mean[2])),
                               (grid, (ta.attends_to_mean, ta.attended_by_mean))):  # fmt: skip
        upper, lower = fig.data
        np.testing.assert_allclose(upper.y if upper.type == "bar" else upper.z, top, atol=1e-6)
        np.testing.assert_allclose(lower.y if lower.type == "bar" else lower.z, bottom, atol=1e-6)
        uy, ly = _axis(fig, upper.yaxis), _axis(fig, lower.yaxis)
        assert uy.domain[0] > ly.domain[1]  # "attends to" above "is attended to by", no overlap
        ux, lx = _axis(fig, upper.xaxis), _axis(fig, lower.xaxis)
        # one token axis: the upper panel follows the lower one and leaves the labels to it
        assert ux.matches == lower.xaxis and ux.showticklabels is False and lx.showticklabels is not False
        assert list(lx.ticktext) == labels


def test_small_multiples_put_each_layer_in_its_own_panel_with_room_around_its_points(encoder):
    from lib.charts.projection import projection_small_multiples
    from lib.stats.projection import pca_projection

    sentences = ["We sat on the river bank.", "The bank raised its rates.", "A bank loan.", "The muddy bank."]
    enc = encoder.encode(sentences, attentions=False)
    pos = [toks.index("bank") for toks in enc.tokens]
    layers = [0, 2, 4, 6, 3]
    coords = [pca_projection(np.stack([enc.hidden_states[i][layer, p] for i, p in enumerate(pos)]), 2).coords
              for layer in layers]  # fmt: skip
    senses = ["river", "money", "money", "river"]
    fig = projection_small_multiples(coords, senses, sentences, ["1", "2", "3", "4"], [f"L{k}" for k in layers],
                                     cols=3)  # fmt: skip
    assert len(fig.data) == len(layers) * 2  # one trace per sense and panel
    seen = set()
    for k, c in enumerate(coords):
        traces = fig.data[2 * k : 2 * k + 2]
        assert {t.xaxis for t in traces} == {grid_axes(k)[0]}
        seen.add(traces[0].xaxis)
        got = np.concatenate([np.c_[t.x, t.y] for t in traces])
        want = np.concatenate([c[[i for i, s in enumerate(senses) if s == name]] for name in ("river", "money")])
        np.testing.assert_allclose(got, want, atol=1e-9)
        xr, yr = _axis(fig, traces[0].xaxis).range, _axis(fig, traces[0].yaxis).range
        assert xr[0] < got[:, 0].min() <= got[:, 0].max() < xr[1] and yr[0] < got[:, 1].min() <= got[:, 1].max() < yr[1]
    assert len(seen) == len(layers)
    # no two panels overlap
    domains = [(_axis(fig, grid_axes(k)[0]).domain, _axis(fig, grid_axes(k)[1]).domain) for k in range(6)]
    for i in range(6):
        for j in range(i + 1, 6):
            assert _overlap(domains[i][0], domains[j][0]) * _overlap(domains[i][1], domains[j][1]) == 0
