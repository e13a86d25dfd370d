"""Every page charts with the decoder (``?model=HuggingFaceTB/SmolLM2-135M-Instruct``) on a 390 x 844 phone, and
the pages whose charts run over every layer or head on a 1280 x 720 projector too, in a real browser with the real
decoder (its pack fetched once per machine).

Checked on each page: the decoder is the model in use (the link keeps it), every chart is drawn, no exception
or sidebar error, no sideways scrolling, and no chart text cut at a chart's edge or running into another title
(JS_CUT_TEXT): the decoder's 31 hidden states (30 layers and the embeddings) and 9 heads make longer axes and
more panels than the encoder's 7 and 12. A screenshot of each is saved (paths printed at the end of the run).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from lib.models import DECODER_MODEL
from tests.browser._browser import (
    DECODER_ONLY,
    JS_CUT_TEXT,
    SCREENS,
    app_pages,
    chart_pages,
    exceptions,
    open_on,
    page_url,
    screenshot,
    wait_charts,
    wait_sized,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = chart_pages() + [p for p in app_pages() if Path(p[0]).stem in DECODER_ONLY]
# Each page once on the phone, where the decoder's 31 layers and 9 heads have ~358 px; on the projector (presenter
# fonts, ~1,200 px) the pages with a chart over every layer or head, and the pages only the decoder has (the
# encoder's pages are checked on both: tests/browser/test_browser_screens.py and test_browser_pages.py): a page load is ~5 s of
# Chromium's CPU here, and every page twice was 18 of them.
PROJECTOR = {"layers", "attention", *DECODER_ONLY}
CASES = [(*p, screen) for p in PAGES for screen in SCREENS if screen == "phone" or Path(p[0]).stem in PROJECTOR]
JS_STATE = """() => {
    const de = document.documentElement;
    const main = document.querySelector('[data-testid="stMain"]');
    const sidebarErrors = Array.from(document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stAlert"]'))
        .map(a => a.textContent).filter(t => t.includes('Still using the previous model'));
    return {pageScroll: de.scrollWidth - de.clientWidth, mainScroll: main ? main.scrollWidth - main.clientWidth : 0,
            charts: document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]').length,
            sidebarErrors};
}"""


@pytest.fixture(scope="module")
def decoder_pack():
    """The decoder's pack on this machine (fetched and converted once when missing; never mocked)."""
    from lib.models import ModelLoadError, pack

    try:
        pack.installed_pack()
    except ModelLoadError:
        pack.download()


@pytest.mark.parametrize("path,title,default,screen", CASES, ids=[f"{Path(c[0]).stem}-{c[3]}" for c in CASES])
def test_every_page_charts_with_the_decoder(decoder_pack, page, server, shots_dir, path, title, default, screen):
    open_on(page, screen, page_url(server, path, default) + f"?model={quote(DECODER_MODEL)}")
    wait_charts(page)
    wait_sized(page)  # plotly's responsive resize after the first draw
    state = page.evaluate(JS_STATE)
    screenshot(page, shots_dir, f"decoder-{Path(path).stem}-{screen}")
    assert not exceptions(page), exceptions(page)
    assert not state["sidebarErrors"], f"{title}: the decoder did not load: {state['sidebarErrors']}"
    assert "model=HuggingFaceTB%2FSmolLM2-135M-Instruct" in page.url or f"model={DECODER_MODEL}" in page.url, page.url
    assert state["charts"] > 0, f"{title}: no chart with the decoder"
    assert state["pageScroll"] <= 0 and state["mainScroll"] <= 0, f"{title} scrolls sideways: {state}"
    cut = page.evaluate(JS_CUT_TEXT)
    if screen == "phone":  # a second picture with the main chart in view
        page.locator("[data-testid='stMain'] [data-testid='stPlotlyChart']").first.scroll_into_view_if_needed()
        screenshot(page, shots_dir, f"decoder-{Path(path).stem}-{screen}-chart")
    assert not cut, f"{title} ({screen}): chart text cut at a chart's edge or overlapping: {cut}"
    assert not page.errors, page.errors
