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


# Every map heading the page shows, in order, recorded as it appears: the warm-up may finish (numba's disk cache)
# within a second or two of the first chart, before a check after the page is idle could read the PCA heading.
JS_RECORD_HEADINGS = """(() => {
    window.__mapHeadings = [];
    const seen = () => {
        for (const h of document.querySelectorAll('[data-testid="stMain"] h2')) {
            const t = h.innerText;
            if (t.includes('at layer') && window.__mapHeadings[window.__mapHeadings.length - 1] !== t)
                window.__mapHeadings.push(t);
        }
        const last = window.__mapHeadings[window.__mapHeadings.length - 1] || '';
        const main = document.querySelector('[data-testid="stMain"]');
        if (last.includes('PCA') && main && main.innerText.includes('switches to UMAP by itself'))
            window.__pcaNote = true;
    };
    new MutationObserver(seen).observe(document, {subtree: true, childList: true, characterData: true});
})();"""


def _visit_fresh_server(browser_context, shots_dir) -> tuple[list[str], bool]:
    """A fresh server's Projections page with UMAP chosen, until UMAP is drawn without input: (every map heading
    shown, in order; whether the PCA map said that UMAP follows)."""
    proc, base, _log = start_server()
    pg = browser_context.new_page()
    pg.add_init_script(JS_RECORD_HEADINGS)
    try:
        pg.goto(base + "/projections?proj_method=umap")
        wait_charts(pg)
        assert not exceptions(pg)
        # the learner's choice stays UMAP (radio and link), only the picture waits
        assert "proj_method=umap" in pg.url
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
        return pg.evaluate("() => window.__mapHeadings"), pg.evaluate("() => window.__pcaNote === true")
    finally:
        pg.close()
        stop_server(proc)


def test_fresh_server_shows_pca_then_umap_without_input(browser_context, shots_dir):
    require_browser()
    # Two fresh servers at most. In two of the session's clean-clone CI runs (not reproduced by hand: there the
    # warm-up took ~20 s and PCA came first) the first map a fresh server's page sent was already UMAP; why is
    # not known yet (the closing note of session 5 has a guess: the first run interrupted). A second fresh server
    # must then show PCA first; a page that never shows PCA while UMAP warms fails both.
    attempts = []
    for _ in range(2):
        headings, note = _visit_fresh_server(browser_context, shots_dir)
        attempts.append(headings)
        assert headings and "UMAP" in headings[-1], headings
        if "PCA" in headings[0]:
            assert note  # the PCA map said that UMAP follows
            break
        print(f"a fresh server's first map was not PCA: {headings}")
    else:
        raise AssertionError(f"no fresh server showed PCA while UMAP warmed up: {attempts}")
