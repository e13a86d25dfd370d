"""Each page with the decoder beside the same page with the encoder, in Chromium against `streamlit run serve.py`.

    python benchmarks/decoder_pages.py                        # prints the table (--out FILE: JSON too)
    python benchmarks/decoder_pages.py --repeats 3 --pages context,anisotropy --lesson-steps 3,7,11
    python benchmarks/decoder_pages.py --port 9130            # a fixed port (else a free one)
    python benchmarks/decoder_pages.py --hosted               # a hosted copy serving both models, after its warm-up

Needs the decoder pack and Chromium. For each model and repeat a fresh server: the start page first (it loads
the model and encodes the default preset: "first page"), then every page that draws charts, each in a new tab
on the same server (its first visit: what the page computes for the model, on a server whose model is loaded;
the Logit lens with the decoder only), then a few of the guided lesson's steps. Per page: seconds from opening it to its first chart drawn ("main
chart", the learner's first answer), to a settled page (the run finished, every chart drawn, their number
steady for 0.6 s), and the server's CPU seconds in between (/proc). The floor is the same page with the encoder
on its own fresh server in the same run; the goal is <= 5 s to the main chart on the presets, quiet machine.

``--hosted``: each server is a hosted copy serving both models (``CONTEXT_LENS_MODELS``), and the pages are
opened once its preset warm-up has ended (the log's "warm presets: ..." line, ui.startup.warm_presets): what
the first class of the day meets. The model is then loaded before the first page.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the project's folder first
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks import kit  # noqa: E402
from benchmarks.runs import git_commit, median  # noqa: E402
from tests.browser._browser import DECODER_ONLY, app_pages, chart_pages  # noqa: E402

JS_FIRST_CHART = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
    .some(g => Array.isArray(g.data) && g.data.length > 0)"""
TICK = os.sysconf("SC_CLK_TCK")
TIMEOUT_MS = 900_000


def _server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _visit(context, url: str, pid: int) -> dict:
    """Open ``url`` in a new tab: seconds to the first chart and to a settled page, the server's CPU meanwhile."""
    pg = context.new_page()
    cpu0, t0 = _server_cpu(pid), time.perf_counter()
    out: dict = {"url": url}
    try:
        pg.goto(url)
        pg.wait_for_function(JS_FIRST_CHART, timeout=TIMEOUT_MS, polling=100)
        out["main_chart_s"] = round(time.perf_counter() - t0, 2)
        kit.wait_charts(pg, TIMEOUT_MS)
        out["settled_s"] = round(time.perf_counter() - t0, 2)
        out["charts"] = int(pg.evaluate("() => document.querySelectorAll('[data-testid=\"stPlotlyChart\"]').length"))
        out["all_drawn"] = bool(pg.evaluate(kit.JS_CHARTS_DRAWN))
        out["exceptions"] = [e[:200] for e in kit.exceptions(pg)]
    except Exception as err:  # noqa: BLE001 - a page that never charts is a row of the table, not the end of it
        out["error"] = f"{type(err).__name__}: {str(err)[:200]}"
    out["server_cpu_s"] = round(_server_cpu(pid) - cpu0, 2)
    pg.close()
    return out


WARM_TIMEOUT_S = 1200


def _wait_warm(log: str, proc) -> str:
    """Wait until a hosted server's preset warm-up has ended; its log line ("warm presets: ...")."""
    deadline = time.monotonic() + WARM_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        for line in Path(log).read_text(errors="replace").splitlines():
            if "warm presets:" in line and "skipped" not in line:
                return line.split("warm presets:", 1)[1].strip()
        time.sleep(1)
    raise RuntimeError(f"the warm-up did not end within {WARM_TIMEOUT_S} s (server log: {log})")


def run_model(model: str | None, pages: list[tuple[str, str]], steps: list[int], port: int | None,
              hosted: str | None = None) -> list[dict]:  # fmt: skip
    """One fresh server for ``model`` (None: the encoder): the start page, each page, each lesson step.
    ``hosted``: the models a hosted server serves (CONTEXT_LENS_MODELS); pages open after its warm-up."""
    from playwright.sync_api import sync_playwright

    query = f"?model={model}" if model else ""
    proc, base, log = kit.start_server(port=port, env={"CONTEXT_LENS_MODELS": hosted} if hosted else None)
    rows = []
    first = "Start here (first page: loads the model, encodes the preset)"
    try:
        if hosted:
            warm = _wait_warm(log, proc)
            print(f"warm-up ({'decoder' if model else 'encoder'} server): {warm}", flush=True)
            rows.append({"page": "warm-up", "model": "decoder" if model else "encoder", "log": warm})
            first = "Start here (first page, after the warm-up)"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=kit.CHROMIUM, headless=True, args=kit.CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            visits = [(first, f"{base}/{query}")]
            visits += [(title, f"{base}/{stem}{query}") for stem, title in pages]
            sep = "&" if query else "?"
            visits += [(f"Guided lesson, step {k}", f"{base}/lesson{query}{sep}lesson_step={k}") for k in steps]
            for title, url in visits:
                load = [round(x, 2) for x in os.getloadavg()]
                row = {"page": title, "model": "decoder" if model else "encoder", "loadavg": load,
                       **_visit(context, url, proc.pid)}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
            browser.close()
    finally:
        kit.stop_server(proc)
    return rows


def main() -> None:
    from lib.models import DECODER_MODEL, DEFAULT_MODEL

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--pages", default="", help="page file stems, comma-separated (default: every chart page)")
    ap.add_argument("--lesson-steps", default="3,7,11", help="the guided lesson's steps to open (1-based)")
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--hosted", action="store_true", help="hosted copies serving both models, after their warm-up")
    a = ap.parse_args()
    wanted = [x for x in a.pages.split(",") if x]
    pages = [(Path(f).stem, title) for f, title, default in chart_pages() if not default]
    pages = [(s, t) for s, t in pages if s != "lesson" and (not wanted or s in wanted)]
    only_decoder = [(Path(f).stem, t) for f, t, _ in app_pages() if Path(f).stem in DECODER_ONLY]
    only_decoder = [(s, t) for s, t in only_decoder if not wanted or s in wanted]  # the Logit lens
    steps = [int(k) for k in a.lesson_steps.split(",") if k]
    result = {"git_commit": git_commit(), "hosted": a.hosted, "loadavg_start": [round(x, 2) for x in os.getloadavg()],
              "rows": []}  # fmt: skip
    for _ in range(a.repeats):
        for model in (None, DECODER_MODEL):
            result["rows"] += run_model(model, pages + (only_decoder if model else []), steps, a.port,
                                        f"{DEFAULT_MODEL},{DECODER_MODEL}" if a.hosted else None)  # fmt: skip
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]

    def med(page: str, model: str, key: str):
        return median([r.get(key) for r in result["rows"] if r["page"] == page and r["model"] == model])

    def fmt(x) -> str:
        return "—" if x is None else f"{x:.1f}"

    print("\n| page | main chart, encoder | main chart, decoder | settled, encoder | settled, decoder | "
          "server CPU, encoder | server CPU, decoder |")  # fmt: skip
    print("| --- | --: | --: | --: | --: | --: | --: |")
    for page in dict.fromkeys(r["page"] for r in result["rows"] if r["page"] != "warm-up"):
        cells = [fmt(med(page, m, k)) for k in ("main_chart_s", "settled_s", "server_cpu_s") for m in ("encoder", "decoder")]
        print(f"| {page} | " + " | ".join(cells) + " |")
    failed = [r for r in result["rows"] if r["page"] != "warm-up" and (r.get("error") or r.get("exceptions"))]
    for r in failed:
        print(f"{r['model']} {r['page']}: {r.get('error') or r['exceptions']}")
    print(f"\nseconds (CPU: server's own); commit {result['git_commit']}, load average {result['loadavg_start']} -> "
          f"{result['loadavg_end']}, median of {a.repeats}")  # fmt: skip
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
