"""Each oversized input against a fresh server, its peak memory and time to an answer.

    python benchmarks/hosting_bench.py            # all cases, one fresh `streamlit run serve.py` each
    python benchmarks/hosting_bench.py link csv   # only some

For each case a new server starts on a free port (tests/browser/_browser.py), a first tab opens the start
page so the model is loaded (the warm-up every hosted copy goes through once), then a new tab sends the
oversized input. Reported:

* **shown s**: seconds from sending the input until the page shows anything about it: a message (an
  alert), the model's progress bar ("Running the model: 0 of 500 sentences…") or a chart;
* **answer s**: until the page shows a chart or a message (an alert);
* **done s**: until the script run has finished and every chart on the page is drawn;
* **peak RSS**: the server's high-water mark of resident memory (VmHWM in /proc/<pid>/status), warm-up
  included, and its resident memory at the end.

Target (a hosted server): peak RSS <= 1.2 GB and an answer within 10 s for each case. Seconds are noisy on the
shared two-core machine; the warm start page's time is reported in the same run as a floor.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the project's folder first

from benchmarks import kit  # noqa: E402
from tests.browser._oversized import (  # noqa: E402
    FOLDER_MODEL_LINK,
    big_corpus,
    big_csv,
    home_500_link,
    oversized_link,
    own_sense_link,
)

TIMEOUT_MS = 300_000
JS_ANSWER = """() => {
    const alerts = document.querySelectorAll('[data-testid="stAlert"], [data-testid="stException"]');
    const charts = Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
        .filter(g => Array.isArray(g.data) && g.data.length > 0);
    return alerts.length > 0 || charts.length > 0; }"""
JS_SHOWN = """() => document.querySelectorAll(
    '[data-testid="stAlert"], [data-testid="stException"], [data-testid="stProgress"], [data-testid="stPlotlyChart"]'
    ).length > 0"""
JS_MESSAGES = """() => Array.from(document.querySelectorAll('[data-testid="stAlert"]')).map(a => a.textContent)"""
JS_CHANGED_MESSAGES = """(b) => JSON.stringify(Array.from(document.querySelectorAll('[data-testid="stAlert"]'))
    .map(a => a.textContent)) !== JSON.stringify(b)"""


def _wait_answer(pg, t0: float) -> float:
    pg.wait_for_function(JS_ANSWER, timeout=TIMEOUT_MS, polling=50)
    return time.perf_counter() - t0


def _wait_done(pg, t0: float) -> float:
    """Every case ends on a page with charts: wait until they are drawn and the run has finished."""
    pg.wait_for_function(kit.JS_CHARTS_DRAWN, timeout=TIMEOUT_MS, polling=100)
    pg.wait_for_function(kit.JS_IDLE, timeout=TIMEOUT_MS, polling=100)
    return time.perf_counter() - t0


def case_link(pg, base):
    t0 = time.perf_counter()
    pg.goto(base + oversized_link())
    return t0


def case_own_senses(pg, base):
    t0 = time.perf_counter()
    pg.goto(base + own_sense_link())
    return t0


def case_home_500(pg, base):
    t0 = time.perf_counter()
    pg.goto(base + home_500_link())
    return t0


def case_folder_model(pg, base):
    t0 = time.perf_counter()
    pg.goto(base + FOLDER_MODEL_LINK)
    return t0


def _upload(pg, data: bytes, name: str, apply_button: str | None):
    folder = Path(tempfile.mkdtemp(prefix="context-lens-bench-"))
    path = folder / name
    path.write_bytes(data)
    before = pg.evaluate(JS_MESSAGES)
    t0 = time.perf_counter()
    pg.locator("input[type='file']").first.set_input_files(str(path))
    if not apply_button:  # the page answers the upload itself: wait until its messages change
        pg.wait_for_function(JS_CHANGED_MESSAGES, arg=before, timeout=TIMEOUT_MS)
    if apply_button:
        btn = pg.get_by_role("button", name=apply_button)
        btn.wait_for(timeout=TIMEOUT_MS)
        # the answer to the upload is its parse (a message and the button); applying it runs the model
        pg.wait_for_function(kit.JS_IDLE, timeout=TIMEOUT_MS)
        before = pg.evaluate(JS_MESSAGES)
        t0 = time.perf_counter()
        btn.click()
        pg.wait_for_function(JS_CHANGED_MESSAGES, arg=before, timeout=TIMEOUT_MS)
    return t0


def case_csv(pg, base):
    pg.goto(base + "/layers")
    kit.wait_charts(pg)
    pg.get_by_text("Bring your own sentences").click()
    return _upload(pg, big_csv(), "big.csv", apply_button="Use these")


def case_corpus(pg, base):
    pg.goto(base + "/anisotropy?aniso_corpus=upload")
    kit.wait_charts(pg)
    # 1.99 MB: Streamlit's uploader counts maxUploadSize = 2 as 2,000,000 bytes in the browser ("File must
    # be 2.0MB or smaller", and nothing reaches the server), while the server counts 2 × 1024². A file of
    # 2,000,890 bytes never left the browser, which is why this case once waited 300 s for an answer.
    return _upload(pg, big_corpus(target_bytes=1_990_000), "corpus.txt", apply_button=None)


CASES = {
    "link": ("?target=bank&text=… 500 sentences × 390 word pieces (start page)", case_link),
    "csv": ("2 MB CSV upload, 500 long rows (Layer by layer)", case_csv),
    "corpus": ("2 MB corpus upload, 1,000 long sentences (Anisotropy)", case_corpus),
    "senses": ("500 sentences, each its own sense (Layer by layer)", case_own_senses),
    "home500": ("500 sentences on the start page (500 × 500 heatmap)", case_home_500),
    "folder": ("?model=/etc (a folder on the server)", case_folder_model),
}


def run_case(key: str) -> dict:
    from playwright.sync_api import sync_playwright

    label, act = CASES[key]
    proc, base, log = kit.start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=kit.CHROMIUM, headless=True, args=kit.CHROMIUM_ARGS)
            try:
                warm = browser.new_page(viewport={"width": 1400, "height": 1000})
                t = time.perf_counter()
                warm.goto(base + "/")
                kit.wait_charts(warm)
                warm_s = time.perf_counter() - t
                warm.close()
                kit.wait_quiet(proc.pid)
                floor = browser.new_page(viewport={"width": 1400, "height": 1000})
                c = kit.cpu_seconds(proc.pid)
                t = time.perf_counter()
                floor.goto(base + "/")
                kit.wait_charts(floor)
                floor_s = time.perf_counter() - t
                floor_cpu = kit.cpu_seconds(proc.pid) - c
                floor.close()
                rss_warm = kit.status_mb(proc.pid, "VmRSS")
                pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                c = kit.cpu_seconds(proc.pid)
                t0 = act(pg, base)
                pg.wait_for_function(JS_SHOWN, timeout=TIMEOUT_MS, polling=50)
                shown = time.perf_counter() - t0
                answer = _wait_answer(pg, t0)
                done = _wait_done(pg, t0)
                case_cpu = kit.cpu_seconds(proc.pid) - c
                messages = [m[:160] for m in pg.evaluate(JS_MESSAGES)]
                charts = pg.locator("[data-testid='stPlotlyChart']").count()
                errors = kit.exceptions(pg)
            finally:
                browser.close()
        alive = proc.poll() is None and kit.healthy(base)
        return {
            "case": key,
            "what": label,
            "first_page_s": round(warm_s, 1),
            "warm_start_page_s": round(floor_s, 2),
            "warm_start_page_cpu_s": round(floor_cpu, 2),
            "server_cpu_s": round(case_cpu, 2),
            "shown_s": round(shown, 2),
            "answer_s": round(answer, 2),
            "done_s": round(done, 2),
            "rss_after_warmup_mb": round(rss_warm),
            "peak_rss_mb": round(kit.status_mb(proc.pid, "VmHWM")),
            "rss_end_mb": round(kit.status_mb(proc.pid, "VmRSS")),
            "charts": charts,
            "messages": messages,
            "exceptions": [e[:200] for e in errors],
            "server_alive": alive,
        }
    finally:
        kit.stop_server(proc)
        Path(log).unlink(missing_ok=True)


def main(argv: list[str]) -> None:
    keys = argv or list(CASES)
    results = []
    for key in keys:
        r = run_case(key)
        results.append(r)
        print(json.dumps(r, ensure_ascii=False), flush=True)
    print("\n| input | answer | all charts | server CPU | floor: warm start page | peak RSS | server |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        print(
            f"| {r['what']} | {r['answer_s']:.1f} s | {r['done_s']:.1f} s | {r['server_cpu_s']:.1f} s | "
            f"{r['warm_start_page_s']:.1f} s ({r['warm_start_page_cpu_s']:.1f} s CPU) | "
            f"{r['peak_rss_mb']:,} MB | {'alive' if r['server_alive'] else 'DOWN'} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
