"""UMAP never blocks a page: a fresh server whose first page is Projections with UMAP chosen shows PCA first,
then switches to UMAP by itself when the background warm-up has compiled it (no input from the learner). That
first visitor arrived through a shared link to a page, not to /: they get the whole app shell too.

Needs its own fresh server (the session's server has warmed UMAP up long ago). Not timed: it only checks
the order of what the learner sees.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser._browser import (
    LOAD_MS,
    exceptions,
    screenshot,
    served,
    wait_charts,
)
from tests.browser.test_browser_links import sidebar

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


def test_fresh_server_shows_pca_then_umap_without_input(browser_context, shots_dir):
    """A fresh server's Projections page with UMAP chosen shows PCA first (with a note that UMAP follows),
    then UMAP without any input.

    In two clean-clone CI runs on 2026-11-23 the first map was UMAP: the page's PCA import and the warm-up's
    ``import umap`` imported scikit-learn at the same moment, both failed (``partially initialized module
    'sklearn.base'``), and the page then computed UMAP itself. lib.serving.lazy serialises those first imports.
    """
    with served() as (proc, base, log):
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
            headings = pg.evaluate("() => window.__mapHeadings")
            server_log = Path(log).read_text(errors="replace")
            assert "Traceback" not in server_log, server_log[-3000:]
            assert headings and "PCA" in headings[0] and "UMAP" in headings[-1], (headings, server_log[-3000:])
            assert pg.evaluate("() => window.__pcaNote === true")  # the PCA map said that UMAP follows
            # the first visitor after a restart may arrive through a link to any page: the navigation comes with
            # app.py's run (a rerun through it may follow the page's first run), the sidebar's controls too
            sidebar(pg).locator("[data-testid='stSidebarNav']").get_by_text("Attention by hand").wait_for(timeout=LOAD_MS)
            nav = sidebar(pg).inner_text()
            assert "Start here" in nav and "Attention by hand" in nav, nav[:500]
            assert sidebar(pg).get_by_role("combobox", name="Preset").count() == 1
        finally:
            pg.close()
