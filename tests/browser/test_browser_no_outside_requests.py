"""The app asks nothing of the internet: every page, opened in Chromium, requests only its own server.

A hosted copy may have no way out (the container runs with ``--network none``), and a class's school network may
block the rest; a request that cannot be answered costs the page a timeout or a broken icon.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.browser._browser import app_pages, page_url, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_every_page_requests_only_its_own_server(page, server):
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
    for path, title, default in app_pages():
        page.goto(page_url(server, path, default))
        page.wait_for_selector("[data-testid='stApp']", timeout=300_000)
        wait_idle(page)
        page.wait_for_timeout(500)  # the favicon and fonts are asked for after the first paint
        assert not outside, (title, outside)
