"""What every benchmark script shares: the commit it measures, medians, and where a run's results go.

One run writes one file, ``benchmarks/results/<date>-<commit>.json`` (UTC date, short commit); the
sections run that day on that commit join the same file, each replacing only its own entry.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"


def git_commit() -> str:
    """The short commit of the checkout being measured ("" outside git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip()
    except OSError:
        return ""


def median(xs) -> float | None:
    """Median of the finite values of ``xs`` (None when there is none)."""
    xs = [x for x in xs if x is not None and x == x]
    return float(statistics.median(xs)) if xs else None


def results_path(commit: str | None = None, day: dt.date | None = None) -> Path:
    """``benchmarks/results/<YYYY-MM-DD>-<commit>.json`` for today's run of the current commit."""
    day = day or dt.datetime.now(dt.UTC).date()
    return RESULTS_DIR / f"{day.isoformat()}-{commit if commit is not None else git_commit() or 'nogit'}.json"


def latest_results() -> Path | None:
    """The newest results file (file names sort by date)."""
    files = sorted(RESULTS_DIR.glob("*.json"))
    return files[-1] if files else None


def run_meta() -> dict:
    """When, on what and under what load a section ran (load average: the two cores may be shared)."""
    return {
        "started_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def save_section(path: Path, section: str, data: dict) -> None:
    """Put one section's results into a run's file, keeping the other sections already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    sections = {**old.get("sections", {}), section: data}
    path.write_text(json.dumps({"sections": sections}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def measure_script_thread() -> tuple[list[float], list]:
    """Time every Streamlit page run in this process: returns (cpu, profiler).

    Wraps Streamlit's ``exec_func_with_error_handling`` (the call that runs a page's script) so that each
    run appends its script thread's CPU seconds (``time.thread_time``) to ``cpu``; while ``profiler[0]`` holds
    a ``cProfile.Profile`` it profiles the runs too. The model's own worker threads are not counted.
    """
    import time

    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.exec_func_with_error_handling
    cpu: list[float] = []
    profiler: list = [None]

    def measured(func, ctx):
        prof = profiler[0]
        t0 = time.thread_time()
        if prof is not None:
            prof.enable()
        try:
            return original(func, ctx)
        finally:
            if prof is not None:
                prof.disable()
            cpu.append(time.thread_time() - t0)

    script_runner.exec_func_with_error_handling = measured
    return cpu, profiler
