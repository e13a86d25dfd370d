"""Saved pages ("Download this page"): size, the server's CPU to build each file, and its open time in Chromium.

For every page that draws charts on the default preset (and the guided lesson's whole-lesson file): press the button in a real
browser against a real server, then open the file from disk with every request aborted (tests/browser/_offline.py)
``--repeat`` times. Reported per file:

- ``bytes``: the file's size (the issue's budget: 6 MB);
- ``build_cpu_s``: the server process's CPU seconds (utime + stime from /proc) from the click to the file received:
  the cost of building it, paid only when the button is pressed;
- ``open_ms``: milliseconds from navigation start to every chart drawn (the page's own clock), the median;
- ``floor_ms``: the same for a file that holds only plotly.js and one two-point chart, opened in the same
  rounds: what any self-contained plotly file costs on this machine at this moment; ``ratio`` = open / floor;
- ``open_cpu_s``: CPU seconds of Chromium's processes while the file opens (less sensitive to a busy machine
  than wall time), and ``floor_cpu_s`` the floor's.

Run:  python benchmarks/page_export_bench.py [--repeats 3] [--out benchmarks/page_export_results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.serving import page_export as pe  # noqa: E402
from tests.browser._browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    chart_pages,
    page_url,
    start_server,
    stop_server,
    wait_charts,
    wait_idle,
)
from tests.browser._offline import open_offline  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def process_cpu(pid: int) -> float:
    s = _stat(pid)
    return s[1] if s else 0.0


def tree_cpu(marker: str) -> dict[int, float]:
    """CPU seconds, per process, of every process whose command line holds ``marker`` (the browser's profile
    folder) and of all their descendants (renderers, GPU and utility processes)."""
    stats, roots = {}, set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        s = _stat(int(d.name))
        if s is None:
            continue
        stats[int(d.name)] = s
        try:
            if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                roots.add(int(d.name))
        except OSError:
            pass
    seen, frontier = set(), set(roots)
    while frontier:
        seen |= frontier
        frontier = {p for p, (ppid, _) in stats.items() if ppid in frontier and p not in seen}
    return {p: stats[p][1] for p in seen}


def cpu_since(before: dict[int, float], marker: str) -> float:
    """CPU seconds the browser's processes used since ``before`` (a closed tab's process drops out, not back)."""
    return sum(max(0.0, cpu - before.get(pid, 0.0)) for pid, cpu in tree_cpu(marker).items())


def floor_html() -> str:
    chart = pe.Chart({"data": [{"type": "scatter", "x": [0, 1], "y": [0, 1]}], "layout": {}})
    return pe.page_html("floor", [chart], pe.Meta(model="-", weights="-", date="-", link="-"))


def download(pg, label: str, server_pid: int) -> tuple[str, float]:
    button = pg.locator("[data-testid='stDownloadButton']").filter(has_text=label).first
    cpu0 = process_cpu(server_pid)
    with pg.expect_download(timeout=600_000) as dl:
        button.click()
    html = Path(dl.value.path()).read_text(encoding="utf-8")
    return html, process_cpu(server_pid) - cpu0


def measure_open(ctx, html: str, floor: str, profile: str, repeat: int) -> dict:
    runs: dict[str, list[float]] = {"open_ms": [], "floor_ms": [], "open_cpu_s": [], "floor_cpu_s": []}
    charts = requests = 0
    for _ in range(repeat):
        for name, doc in (("floor", floor), ("open", html)):
            cpu0 = tree_cpu(profile)
            r = open_offline(ctx, doc)
            runs[f"{name}_cpu_s"].append(cpu_since(cpu0, profile))
            runs[f"{name}_ms"].append(r["ms"])
            if name == "open":
                charts, requests = r["charts"], len(r["requests"])
            r["page"].close()
    out = {k: round(statistics.median(v), 3 if k.endswith("_s") else 0) for k, v in runs.items()}
    out["ratio"] = round(out["open_ms"] / out["floor_ms"], 2) if out["floor_ms"] else None
    out.update(charts=charts, requests=requests, bytes=len(html.encode()))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", "--repeat", dest="repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "page_export_results.json"))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    proc, base, log = start_server()
    results: dict[str, dict] = {}
    floor = floor_html()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="context-lens-bench-export-") as profile,
            sync_playwright() as p,
        ):
            ctx = p.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1000},
            )  # fmt: skip
            pg = ctx.new_page()
            for path, _title, default in chart_pages():  # board and glossary draw no chart until used
                stem = Path(path).stem
                pg.goto(page_url(base, path, default))
                wait_charts(pg)
                html, build = download(pg, "Download this page", proc.pid)
                results[stem] = {
                    "build_cpu_s": round(build, 3),
                    **measure_open(ctx, html, floor, profile, args.repeat),
                }
                print(stem, results[stem], flush=True)
            pg.goto(f"{base}/lesson")
            wait_charts(pg)
            pg.get_by_role("button", name="Prepare the whole lesson as one file").click()
            pg.locator("[data-testid='stDownloadButton']").filter(
                has_text="Download the whole lesson"
            ).wait_for(timeout=600_000)
            wait_idle(pg)
            html, build = download(pg, "Download the whole lesson", proc.pid)
            results["lesson (every step)"] = {
                "build_cpu_s": round(build, 3),
                **measure_open(ctx, html, floor, profile, args.repeat),
            }
            print("lesson (every step)", results["lesson (every step)"], flush=True)
            ctx.close()
    finally:
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit.strip(),
        "load_average": os.getloadavg(),
        "repeat": args.repeat,
        "pages": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    return report


if __name__ == "__main__":
    main()
