"""What only a browser shows about redraws (a slider's redraw time), not timed: Layer by layer's layer slider moves the chosen
layer's line in the per-layer charts without re-creating them, and the page's charts are drawn once (their
margins were sized in advance, so plotly's automargin has nothing to push).

Run:  python -m pytest tests/browser/test_browser_redraws.py -q
"""

from __future__ import annotations

import pytest

from tests.browser._browser import LOAD_MS, exceptions, screenshot, wait_charts, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# per chart (by its key): the plot element, the indices of the layer lines drawn visible, and whether plotly drew
# it a second time for its margins
JS_CHARTS = """() => Object.fromEntries(Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]')).map(c => {
    const key = ((c.closest('.stElementContainer') || {}).className || '').match(/st-key-(\\S+)/);
    const g = c.querySelector('.js-plotly-plot');
    const shown = Array.from(c.querySelectorAll('.shape-group path'))
        .filter(p => (g.layout.shapes[+p.parentNode.getAttribute('data-index')] || {}).opacity === 0)
        .filter(p => getComputedStyle(p).opacity === '1')
        .map(p => +p.parentNode.getAttribute('data-index'));
    return [key ? key[1] : '', {shown, redrawn: '_redrawFromAutoMarginCount' in g._fullLayout}];
}))"""
JS_TAG = """() => document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')
    .forEach(g => { g.__tagged = true; })"""
JS_TAGGED = """() => Object.fromEntries(Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]')).map(c => {
    const key = ((c.closest('.stElementContainer') || {}).className || '').match(/st-key-(\\S+)/);
    return [key ? key[1] : '', !!c.querySelector('.js-plotly-plot').__tagged];
}))"""
CURVES = ("layers_trajectories", "layers_ethayarajh", "layers_readout")


def _opened(page, url: str, *keys: str) -> dict:
    """Open ``url``, wait until the charts ``keys`` are drawn and the page is idle; return JS_CHARTS."""
    page.goto(url)
    for key in keys:
        page.wait_for_selector(f".st-key-{key} .js-plotly-plot", timeout=LOAD_MS)
    wait_idle(page)
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    return page.evaluate(JS_CHARTS)


def _move_slider(page, label: str, key: str = "ArrowLeft") -> None:
    slider = page.locator("[data-testid='stMain'] [data-testid='stSlider']", has_text=label).first
    slider.get_by_role("slider").first.focus()
    page.keyboard.press(key)


def test_the_layer_slider_moves_the_line_and_keeps_the_curves_drawn(page, server, shots_dir):
    # the whole page: its later sections (the probe's read-out) may wait their turn in the work queue and come
    # seconds after the first charts
    charts = _opened(page, server + "/layers?preset=bank", *CURVES, "layers_matrix")
    for key in CURVES:
        assert charts[key]["shown"] == [6], (key, charts[key])  # the last layer, the slider's start
    # at this width every chart of the page is drawn once: no second draw from plotly's automargin
    assert not [k for k, c in charts.items() if c["redrawn"]], charts
    page.evaluate(JS_TAG)
    _move_slider(page, "Layer")
    page.wait_for_function(
        "() => !!Array.from(document.querySelectorAll('h1, h2, h3, p')).find(e => /layer 5/.test(e.textContent))",
        timeout=LOAD_MS,
    )
    wait_charts(page)
    charts, tagged = page.evaluate(JS_CHARTS), page.evaluate(JS_TAGGED)
    for key in CURVES:
        assert charts[key]["shown"] == [5], (key, charts[key])  # the line moved with the slider...
        assert tagged[key], key  # ...in the chart already drawn, not a new one
    assert not tagged["layers_matrix"]  # the matrix is the layer's own: drawn anew
    screenshot(page, shots_dir, "redraws-layers-layer-5")
    assert not page.errors, page.errors


def test_anisotropy_layer_slider_moves_the_marks_and_keeps_the_curves_and_lengths_drawn(page, server, shots_dir):
    # the whole page: on a server that has not yet computed the reference corpus, the first charts come well before
    # the last one
    charts = _opened(page, server + "/anisotropy?preset=bank&aniso_layer=3", "aniso_matrix_treated")
    for key in ("aniso_curves", "aniso_norms"):
        assert charts[key]["shown"] == [3], (key, charts[key])
    page.evaluate(JS_TAG)
    _move_slider(page, "Layer")
    page.wait_for_function(
        "() => !!Array.from(document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .js-plotly-plot'))"
        ".find(g => g.layout.title && /Layer 2/.test(JSON.stringify(g.layout)))",
        timeout=LOAD_MS,
    )
    wait_charts(page)
    charts, tagged = page.evaluate(JS_CHARTS), page.evaluate(JS_TAGGED)
    for key in ("aniso_curves", "aniso_norms"):
        assert charts[key]["shown"] == [2], (key, charts[key])  # the mark moved...
        assert tagged[key], key  # ...in the chart already drawn
    assert not tagged["aniso_matrix_raw"] and not tagged["aniso_matrix_treated"]  # the layer's own: drawn anew
    screenshot(page, shots_dir, "redraws-anisotropy-layer-2")


def test_attention_charts_are_drawn_once(page, server):
    """The token heatmaps' labels are turned by 60 degrees: their margins are sized in advance too."""
    charts = _opened(page, server + "/attention?preset=bank&attn_compare=2", "attn_side_b")  # opens the side by side
    assert {"attn_heatmap", "attn_target_bars", "attn_side_a", "attn_side_b"} <= set(charts)
    assert not [k for k, c in charts.items() if c["redrawn"]], charts
