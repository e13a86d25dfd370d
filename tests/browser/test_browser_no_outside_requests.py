"""The app asks nothing of the internet: every page, opened in Chromium, requests only its own server.

A hosted copy may have no way out (the container runs with ``--network none``), and a class's school network may
block the rest; a request that cannot be answered costs the page a timeout or a broken icon. Every browser test's
tab is watched for such a request (the ``page`` fixture, tests/browser/conftest.py), so the pages the other browser
tests open (every page that draws a chart, on both screens: test_browser_screens.py and test_browser_pages.py)
are checked there; here, the ones they do not open as they first appear, with every request off this machine stopped.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser._browser import CHARTLESS, app_pages, page_url, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_pages_without_charts_request_only_their_own_server(page, server):
    own = urlsplit(server).netloc
    outside: list[str] = []

    def route(r):
        url = r.request.url
        if urlsplit(url).netloc == own or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    page.route("**/*", route)
    for path, title, default in [p for p in app_pages() if Path(p[0]).stem in CHARTLESS]:
        page.goto(page_url(server, path, default))
        page.wait_for_selector("[data-testid='stApp']", timeout=300_000)
        wait_idle(page)
        # the favicon and fonts are asked for after the first paint: every font loaded, no request in flight
        page.evaluate("() => document.fonts.ready.then(() => true)")
        page.wait_for_load_state("networkidle")
        assert not outside, (title, outside)
