"""Per-run timing for the benchmark: one line per script run on the server's stderr, when asked for.

``CONTEXT_LENS_RUN_LOG=1`` makes app.py print, after every script run,
``context-lens-run session=<id> page=<url path> wall=<s> cpu=<s>``; ``cpu`` is the script thread's own
CPU time (``time.thread_time``), so benchmarks/browser_bench.py can tell how long the server spent on each
student's runs even when browsers share the cores. Off by default: nothing is measured or printed.
"""

from __future__ import annotations

import os
import sys
import time

ENABLED = os.environ.get("CONTEXT_LENS_RUN_LOG", "").strip() == "1"


def start() -> tuple[float, float] | None:
    return (time.perf_counter(), time.thread_time()) if ENABLED else None


def stop(started: tuple[float, float] | None, page: str) -> None:
    if started is None:
        return
    wall, cpu = time.perf_counter() - started[0], time.thread_time() - started[1]
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        session = ctx.session_id if ctx is not None else "-"
    except Exception:  # timing must never break a page
        session = "-"
    print(f"context-lens-run session={session} page={page or 'home'} wall={wall:.4f} cpu={cpu:.4f}",
          file=sys.stderr, flush=True)  # fmt: skip
