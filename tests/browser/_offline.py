"""Open a saved page ("Download this page") in Chromium with the network cut: every request but the file's own
is aborted and counted. Used by tests/browser/test_browser_export.py and benchmarks/page_export_bench.py."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

# every chart in the file: drawn by plotly (an SVG with its traces), and its data as plotly holds it
JS_DRAWN = """() => { const plots = Array.from(document.querySelectorAll('[data-figure]'));
    return document.body.getAttribute('data-drawn') !== null && plots.every(p =>
        p.classList.contains('js-plotly-plot') && Array.isArray(p.data) && p.querySelector('.main-svg')); }"""
JS_DATA = """() => Array.from(document.querySelectorAll('[data-figure]')).map(p => JSON.stringify(p.data))"""


def open_offline(context, html: str, *, timeout_ms: int = 60_000) -> dict:
    """Open ``html`` from a file (file://, as a learner opens a download) in a new tab of ``context``, with every
    request the page makes aborted and counted.

    Returns {"requests": [every URL the page asked for], "ms": milliseconds from navigation start to every
    chart drawn (the page's own clock), "wall_ms": the same seen from here, "charts": number of charts, "data":
    each chart's data as JSON, "text": the page's text, "errors": JavaScript errors, "console": console errors,
    "dialogs": dialogs opened, "page": the open tab (close it)}.
    """
    pg = context.new_page()
    made: list[str] = []
    errors: list[str] = []
    console: list[str] = []
    dialogs: list[str] = []

    own: list[str] = []

    def route(r):
        if r.request.url in own and r.request.is_navigation_request():
            r.continue_()  # the file itself
        else:
            made.append(r.request.url)
            r.abort()

    pg.route("**/*", route)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: console.append(m.text) if m.type == "error" else None)

    def dialog(d):
        dialogs.append(d.message)
        d.dismiss()

    pg.on("dialog", dialog)
    with tempfile.TemporaryDirectory(prefix="context-lens-saved-") as folder:
        path = Path(folder) / "page.html"
        path.write_text(html, encoding="utf-8")
        own.append(path.as_uri())
        t0 = time.perf_counter()
        pg.goto(path.as_uri())
        pg.wait_for_function(JS_DRAWN, timeout=timeout_ms)
        wall = (time.perf_counter() - t0) * 1000
    return {
        "requests": made, "ms": float(pg.evaluate("() => Number(document.body.getAttribute('data-drawn-ms'))")),
        "wall_ms": wall, "charts": pg.locator("[data-figure]").count(), "data": pg.evaluate(JS_DATA),
        "text": pg.inner_text("body"), "errors": errors, "console": console, "dialogs": dialogs, "page": pg,
    }  # fmt: skip
