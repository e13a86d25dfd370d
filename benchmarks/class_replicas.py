"""A class of 30 on the decoder over two replicas behind nginx (tools/up.sh), as a host runs it.

    flock /tmp/deploy.lock python benchmarks/class_replicas.py                 # build the images, then measure
    flock /tmp/deploy.lock python benchmarks/class_replicas.py --no-build --out benchmarks/results/class.json
    python benchmarks/class_replicas.py --model sentence-transformers/all-MiniLM-L6-v2   # the encoder, for a floor

Docker, nginx on a fixed port and two 1.5-GB replicas: run it under ``flock /tmp/deploy.lock`` (one such stack at
a time on a shared machine). It builds the images (tools/build_image.sh; ``--no-build`` uses the ones there),
starts tools/up.sh with its own prefix (nginx on 127.0.0.1:``--port``, default 8649), waits until both replicas'
logs say their preset warm-up has ended ("warm presets: ..."; the image is a hosted copy that serves the
decoder), then 30 headless Chromium tabs each open a student's own 8 sentences on the Start page with
``?model=<model>`` (the decoder by default), wait for every chart, then each goes to Attention. Reported per
replica: its students, its server CPU seconds during the class, its peak resident memory (VmHWM of the
streamlit process, seen from the host); the class's seconds to each student's first charts (p50, p95, max);
the load average before and after. Everything is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.browser_bench import student_link  # noqa: E402
from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, JS_CHARTS_DRAWN, JS_IDLE, exceptions  # noqa: E402
from tests.deploy._docker import build_images, inspect, logs, nginx_routes, process_stats, running_stack  # noqa: E402

DECODER = "HuggingFaceTB/SmolLM2-135M-Instruct"
CLASS_SIZE = 30
WAIT_MS = 1_200_000  # a class of 30 on the decoder on two shared cores, their 30 browsers included
JS_CHARTS_OR_ERROR = (
    "() => document.querySelector(\"[data-testid='stException']\") !== null || (" + JS_CHARTS_DRAWN + ")()"
)


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 1)


def _wait_warm(prefix: str, limit: float = 900.0) -> dict[str, float | None]:
    """Seconds until each replica's log says its preset warm-up has ended."""
    t0, out = time.monotonic(), {}
    while time.monotonic() - t0 < limit and len(out) < 2:
        for n in (1, 2):
            if n not in out and "warm presets:" in logs(f"{prefix}-app{n}"):
                out[n] = round(time.monotonic() - t0, 1)
        time.sleep(2)
    return {f"app{n}": out.get(n) for n in (1, 2)}


def run(port: int, model: str, size: int = CLASS_SIZE) -> dict:
    from playwright.sync_api import sync_playwright

    prefix = f"cl-bench-{os.getpid()}"
    result: dict = {"model": model, "students": size, "loadavg_start": list(os.getloadavg())}
    with running_stack(prefix, port) as base:
        result["warm_up_s"] = _wait_warm(prefix)
        result["warm_up"] = {
            f"app{n}": next((x.split("context_lens: ")[-1] for x in logs(f"{prefix}-app{n}").splitlines()
                             if "warm presets:" in x), None)
            for n in (1, 2)
        }  # fmt: skip
        nets = {n: inspect(f"{prefix}-app{n}")["NetworkSettings"]["Networks"][f"{prefix}-back"] for n in (1, 2)}
        addr = {f"{nets[n]['IPAddress']}:8501": f"app{n}" for n in (1, 2)}
        before = {n: process_stats(f"{prefix}-app{n}") for n in (1, 2)}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            students = []
            try:
                t0 = time.monotonic()
                for k in range(size):
                    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
                    pg = ctx.new_page()
                    pg.goto(student_link(base, 3000 + k) + f"&model={quote(model, safe='')}", wait_until="commit")
                    students.append({"k": k, "ctx": ctx, "pg": pg, "t0": time.monotonic()})
                for s in students:
                    s["pg"].wait_for_function(JS_CHARTS_OR_ERROR, timeout=WAIT_MS, polling=250)
                    s["charted_s"] = time.monotonic() - s["t0"]
                    s["traceback"] = bool(exceptions(s["pg"]))
                first_s = time.monotonic() - t0
                for s in students:
                    s["pg"].wait_for_function(JS_IDLE, timeout=WAIT_MS, polling=250)
                for s in students:
                    s["pg"].locator("[data-testid='stSidebarNav'] a", has_text="Attention").first.click(timeout=WAIT_MS)
                for s in students:
                    s["pg"].wait_for_function("() => location.pathname.endsWith('/attention')", timeout=WAIT_MS)
                    s["pg"].wait_for_function(JS_CHARTS_OR_ERROR, timeout=WAIT_MS, polling=250)
                    s["pg"].wait_for_function(JS_IDLE, timeout=WAIT_MS, polling=250)
                    s["traceback"] = s["traceback"] or bool(exceptions(s["pg"]))
                class_s = time.monotonic() - t0
                after = {n: process_stats(f"{prefix}-app{n}") for n in (1, 2)}
                routes = nginx_routes(f"{prefix}-nginx")
                for s in students:
                    route = next((c["value"] for c in s["ctx"].cookies() if c["name"] == "cl_replica"), None)
                    ups = {u for _, u in routes.get(route, [])}
                    s["replica"] = addr.get(next(iter(ups)), "?") if len(ups) == 1 else "?"
            finally:
                for s in students:
                    s["ctx"].close()
                browser.close()
    charted = [s["charted_s"] for s in students]
    result.update({
        "first_charts_s": {"p50": _pct(charted, 0.5), "p95": _pct(charted, 0.95), "max": round(max(charted), 1)},
        "all_charted_s": round(first_s, 1),
        "class_with_attention_s": round(class_s, 1),
        "replicas": {
            f"app{n}": {
                "students": sum(s["replica"] == f"app{n}" for s in students),
                "server_cpu_s": round(after[n]["cpu_s"] - before[n]["cpu_s"], 1),
                "peak_rss_mb": round(after[n]["peak_rss_mb"]),
                "rss_end_mb": round(after[n]["rss_mb"]),
            }
            for n in (1, 2)
        },
        "tracebacks": sum(s["traceback"] for s in students),
        "loadavg_end": list(os.getloadavg()),
    })  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8649)
    ap.add_argument("--model", default=DECODER)
    ap.add_argument("--students", type=int, default=CLASS_SIZE)
    ap.add_argument("--no-build", action="store_true", help="use the images already built")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv if argv is not None else sys.argv[1:])
    built = None if args.no_build else round(build_images(), 1)
    result = run(args.port, args.model, args.students)
    result["build_s"] = built
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
