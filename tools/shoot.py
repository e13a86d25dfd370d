"""Screenshot pages of a running Context Lens server in headless Chromium (for looking at them).

    python tools/shoot.py http://localhost:8501/ /tmp/home.png [--width 1400] [--height 1000] [--full]

Waits until Streamlit's script has finished (data-test-script-state="notRunning") before the shot.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def wait_idle(page, timeout_ms: int = 180_000) -> None:
    """Wait until the script has finished and stayed finished for 2 s (a rerun may follow a run)."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    js = (
        "() => { const a = document.querySelector('[data-test-script-state]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }"
    )
    for _ in range(30):
        page.wait_for_function(js, timeout=timeout_ms)
        page.wait_for_timeout(2000)
        if page.evaluate(js):
            break
    # Plotly charts load their library lazily: wait until every chart container holds a drawn plot.
    with contextlib.suppress(Exception):
        page.wait_for_function(
            "() => { const c = document.querySelectorAll('[data-testid=\"stPlotlyChart\"]');"
            " const d = document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .main-svg');"
            " return c.length === 0 || d.length >= c.length; }",
            timeout=60_000,
        )
    page.wait_for_timeout(1500)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": a.width, "height": a.height},
        )
        page = ctx.new_page()
        page.goto(a.url)
        wait_idle(page)
        page.screenshot(path=a.out, full_page=a.full, timeout=180_000)
        print(a.out, page.url)
        ctx.close()


if __name__ == "__main__":
    main()
