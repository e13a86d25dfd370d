"""The server's peak memory for the hostile link once every page has run and UMAP is loaded.

    python benchmarks/peak_after_umap.py                    # this checkout
    python benchmarks/peak_after_umap.py /tmp/main-copy .   # several copies of the app, one after the other

The worst moment of a hosted copy: a server that has already served every page (its libraries, the
reference corpus's statistics, shared figures) and compiled UMAP for a learner who chose it on Projections
(umap, numba and pynndescent loaded: ~0.92 GB resident), then receives the 500 × 390-word-piece link
(tests/browser/_oversized.py), which fills the set budget (20,000 word pieces: ~210 MB of hidden states).
For each folder given (a copy of the app, e.g. ``git archive main | tar -x -C /tmp/main-copy``, to compare
before and after in one run) a fresh ``streamlit run serve.py`` (app.py in a checkout without it) starts there; one Chromium tab visits every
page of app.py, then Projections with UMAP chosen, and waits until UMAP is drawn and the server is quiet.
Printed, one JSON line per folder: resident memory and its high-water mark (``VmHWM``, MB of 1024²) before
the link, the high-water mark after it (target: ≤ 1.2 GB = 1,229 MB), the resident memory at the end, and
the link's seconds (until every chart is drawn) and server CPU seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.hosting_bench import _cpu_seconds, _status, _wait_quiet  # noqa: E402
from tests.browser._browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    JS_CHARTS_DRAWN,
    JS_IDLE,
    app_pages,
    page_url,
    start_server,
    stop_server,
    wait_charts,
)
from tests.browser._oversized import oversized_link  # noqa: E402

TIMEOUT_MS = 300_000
JS_UMAP_SHOWN = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] h2'))
    .some(h => h.innerText.includes('at layer') && h.innerText.includes('UMAP'))"""


def measure(folder: Path) -> dict:
    from playwright.sync_api import sync_playwright

    entry = "serve.py" if (folder / "serve.py").exists() else "app.py"  # a checkout from before serve.py: app.py
    proc, base, log = start_server(app=entry, cwd=folder)
    out: dict = {"app": str(folder), "entry": entry}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                for path, _title, default in app_pages():
                    pg.goto(page_url(base, path, default))
                    wait_charts(pg)
                pg.goto(base + "/projections?proj_method=umap")
                pg.wait_for_function(JS_UMAP_SHOWN, timeout=TIMEOUT_MS)
                wait_charts(pg)
                pg.close()
                _wait_quiet(proc.pid)
                out["rss_before_mb"] = round(_status(proc.pid, "VmRSS"))
                out["peak_before_mb"] = round(_status(proc.pid, "VmHWM"))
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                cpu, t0 = _cpu_seconds(proc.pid), time.perf_counter()
                pg.goto(base + oversized_link())
                pg.wait_for_function(JS_CHARTS_DRAWN, timeout=TIMEOUT_MS, polling=100)
                pg.wait_for_function(JS_IDLE, timeout=TIMEOUT_MS, polling=100)
                out["link_s"] = round(time.perf_counter() - t0, 1)
                out["link_server_cpu_s"] = round(_cpu_seconds(proc.pid) - cpu, 1)
                out["peak_after_mb"] = round(_status(proc.pid, "VmHWM"))
                out["rss_end_mb"] = round(_status(proc.pid, "VmRSS"))
            finally:
                browser.close()
    finally:
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
    return out


def main(argv: list[str]) -> None:
    for folder in argv or [str(ROOT)]:
        print(json.dumps(measure(Path(folder).resolve())), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
