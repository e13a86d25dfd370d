"""What the benchmarks that drive a real server share, in one import: the browser tests' own helpers
(tests/browser/_browser.py: a server on a free port, Chromium's path and arguments, waiting for a page's run and
its charts) and a server process's CPU seconds and memory from /proc.

A script run as a file (``python benchmarks/crowd.py``) has only benchmarks/ on its path, so its one line before
this import puts the project's folder first; run through ``python -m benchmarks`` or imported, it needs nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.runs import git_commit
from tests.browser._browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    JS_CHARTS_DRAWN,
    JS_IDLE,
    LOAD_MS,
    ROOT,
    _healthy,
    cpu_seconds,
    exceptions,
    peak_rss_mb,
    start_server,
    status_mb,
    stop_server,
    wait_charts,
    wait_quiet,
)

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "JS_CHARTS_DRAWN",
    "JS_IDLE",
    "LOAD_MS",
    "ROOT",
    "code_of",
    "cpu_seconds",
    "report",
    "exceptions",
    "healthy",
    "peak_rss_mb",
    "start_server",
    "status_mb",
    "stop_server",
    "wait_charts",
    "wait_quiet",
]

healthy = _healthy  # the server answers /_stcore/health


def code_of(root: Path) -> str:
    """What a run measured: this checkout's short commit, or "code of <root>" for another checkout's server."""
    return git_commit() if Path(root).resolve() == ROOT.resolve() else f"code of {root}"


def report(result: dict, out: str | None, *, show: bool = True) -> dict:
    """A run's summary: printed as JSON (``show``; ``python -m benchmarks`` keeps what a script prints) and
    written to ``out`` when given (the ``--out`` of every script)."""
    text = json.dumps(result, indent=2)
    if show:
        print(text)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    return result
