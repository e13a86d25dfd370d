"""A hostile link on a fresh server: the class's server answers with a message and a chart, and survives."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import budget
from tests.browser._browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    _healthy,
    exceptions,
    require_browser,
    start_server,
    stop_server,
    wait_charts,
)
from tests.browser._oversized import oversized_link

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def test_oversized_link_on_a_fresh_server_gives_a_message_and_a_chart():
    require_browser()
    from playwright.sync_api import sync_playwright

    proc, base, log = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                pg.goto(base + oversized_link())
                data = wait_charts(pg)
                assert data and not exceptions(pg)
                text = pg.locator("[data-testid='stMain']").inner_text()
                assert f"the {budget.MAX_SET_PIECES:,} word pieces one set may use" in text  # the set was cut ...
                assert f"longer than {budget.MAX_PIECES_PER_SENTENCE} word pieces" in text  # ... and each line
                # the server survives and still serves a second student
                assert proc.poll() is None and _healthy(base)
                pg2 = browser.new_page(viewport={"width": 1400, "height": 1000})
                pg2.goto(base + "/?preset=bat")
                assert wait_charts(pg2) and not exceptions(pg2)
            finally:
                browser.close()
        if Path("/proc").exists():
            print(f"server peak RSS: {_peak_rss_mb(proc.pid):.0f} MB")
    finally:
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
