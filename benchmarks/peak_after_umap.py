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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the project's folder first

from benchmarks import kit  # noqa: E402
from tests.browser._browser import app_pages, page_url  # noqa: E402
from tests.browser._oversized import oversized_link  # noqa: E402

TIMEOUT_MS = 300_000
JS_UMAP_SHOWN = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] h2'))
    .some(h => h.innerText.includes('at layer') && h.innerText.includes('UMAP'))"""


def measure(folder: Path) -> dict:
    from playwright.sync_api import sync_playwright

    entry = "serve.py" if (folder / "serve.py").exists() else "app.py"  # a checkout from before serve.py: app.py
    proc, base, log = kit.start_server(app=entry, cwd=folder)
    out: dict = {"app": str(folder), "entry": entry}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=kit.CHROMIUM, headless=True, args=kit.CHROMIUM_ARGS)
            try:
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                for path, _title, default in app_pages():
                    pg.goto(page_url(base, path, default))
                    kit.wait_charts(pg)
                pg.goto(base + "/projections?proj_method=umap")
                pg.wait_for_function(JS_UMAP_SHOWN, timeout=TIMEOUT_MS)
                kit.wait_charts(pg)
                pg.close()
                kit.wait_quiet(proc.pid)
                out["rss_before_mb"] = round(kit.status_mb(proc.pid, "VmRSS"))
                out["peak_before_mb"] = round(kit.status_mb(proc.pid, "VmHWM"))
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                cpu, t0 = kit.cpu_seconds(proc.pid), time.perf_counter()
                pg.goto(base + oversized_link())
                pg.wait_for_function(kit.JS_CHARTS_DRAWN, timeout=TIMEOUT_MS, polling=100)
                pg.wait_for_function(kit.JS_IDLE, timeout=TIMEOUT_MS, polling=100)
                out["link_s"] = round(time.perf_counter() - t0, 1)
                out["link_server_cpu_s"] = round(kit.cpu_seconds(proc.pid) - cpu, 1)
                out["peak_after_mb"] = round(kit.status_mb(proc.pid, "VmHWM"))
                out["rss_end_mb"] = round(kit.status_mb(proc.pid, "VmRSS"))
            finally:
                browser.close()
    finally:
        kit.stop_server(proc)
        Path(log).unlink(missing_ok=True)
    return out


def main(argv: list[str]) -> None:
    for folder in argv or [str(kit.ROOT)]:
        print(json.dumps(measure(Path(folder).resolve())), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
