"""UMAP never blocks a page: a fresh server whose first page is Projections with UMAP chosen shows PCA first,
then switches to UMAP by itself when the background warm-up has compiled it (no input from the learner).

Needs its own fresh server (the session's server has warmed UMAP up long ago). Not timed: it only checks
the order of what the learner sees.
"""

from __future__ import annotations

import pytest

from tests.browser._browser import (
    LOAD_MS,
    exceptions,
    require_browser,
    screenshot,
    start_server,
    stop_server,
    wait_charts,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JS_MAP_AXIS = """() => { const g = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
    if (g === null || !g.layout || !g.layout.xaxis) return null;
    const t = g.layout.xaxis.title; return t ? (typeof t === 'string' ? t : t.text) : null; }"""


def map_header(pg) -> str:
    return pg.locator("[data-testid='stMain'] h2").filter(has_text="at layer").first.inner_text()


def test_fresh_server_shows_pca_then_umap_without_input(browser_context, shots_dir):
    require_browser()
    proc, base, _log = start_server()
    pg = browser_context.new_page()
    try:
        pg.goto(base + "/projections?proj_method=umap")
        wait_charts(pg)
        assert not exceptions(pg)
        # the first chart is PCA, with a note that UMAP follows
        assert "PCA" in map_header(pg), map_header(pg)
        assert (pg.evaluate(JS_MAP_AXIS) or "").startswith("PC1")
        assert "switches to UMAP by itself" in pg.locator("[data-testid='stMain']").inner_text()
        # the learner's choice stays UMAP (radio and link), only the picture waits
        assert "proj_method=umap" in pg.url
        screenshot(pg, shots_dir, "projections-pca-while-umap-warms")
        # ... then UMAP, without any input
        pg.wait_for_function(
            "() => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] h2'))"
            ".some(h => h.innerText.includes('at layer') && h.innerText.includes('UMAP'))",
            timeout=LOAD_MS,
        )
        wait_charts(pg)
        assert not exceptions(pg)
        assert pg.evaluate(JS_MAP_AXIS) == "UMAP 1"
        assert "switches to UMAP by itself" not in pg.locator("[data-testid='stMain']").inner_text()
        screenshot(pg, shots_dir, "projections-umap-after-warm-up")
    finally:
        pg.close()
        stop_server(proc)
