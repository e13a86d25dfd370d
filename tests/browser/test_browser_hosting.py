"""A hostile link on a fresh server: the class's server answers with a message and a chart, and survives."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.serving import budget
from tests.browser._browser import (
    _healthy,
    exceptions,
    peak_rss_mb,
    served,
    wait_charts,
)
from tests.browser._oversized import oversized_link

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_oversized_link_on_a_fresh_server_gives_a_message_and_a_chart(browser_context):
    # The session's one browser (a second sync_playwright() inside the first one's loop is refused);
    # the server is fresh, started for this test alone.
    with served() as (proc, base, _log):
        pages = []
        try:
            pg = browser_context.new_page()
            pages.append(pg)
            pg.goto(base + oversized_link())
            data = wait_charts(pg)
            assert data and not exceptions(pg)
            text = pg.locator("[data-testid='stMain']").inner_text()
            assert f"the {budget.MAX_SET_PIECES:,} word pieces one set may use" in text  # the set was cut ...
            assert f"longer than {budget.MAX_PIECES_PER_SENTENCE} word pieces" in text  # ... and each line
            # the server survives and still serves a second student
            assert proc.poll() is None and _healthy(base)
            pg2 = browser_context.new_page()
            pages.append(pg2)
            pg2.goto(base + "/?preset=bat")
            assert wait_charts(pg2) and not exceptions(pg2)
            if Path("/proc").exists():
                print(f"server peak RSS: {peak_rss_mb(proc.pid):.0f} MB")
        finally:
            for pg in pages:
                pg.close()
