"""Server CPU of a new student (target: ≤ 0.3 s), measured inside Streamlit's script thread.

    PYTHONPATH=. python benchmarks/new_student_cpu.py [--students 6] [--warmup 2] [--profile 40 [--sort tottime]]
        [--root DIR]

Each student is a fresh AppTest session that opens a link with its own 8 sentences (benchmarks.browser_bench
.student_link: a preset's rows in the student's own words, so nothing is cached for them yet), runs the
start page, then switches to the Attention page. The figure is the script thread's CPU (``time.thread_time``
around Streamlit's ``exec_func_with_error_handling``), as in benchmarks/rerun_profile.py: it leaves out
what the server does after the script (websocket, post-script gc). The sessions share one compiled copy
of each page, as in the server (AppTest compiles them again for every session: ``--own-script-cache``,
~0.05 s more per student). The first ``--warmup`` students load the
model and warm the caches; the medians are over the others. ``--root`` measures another checkout of the app
(e.g. the commit before a change) with this same script.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

ap = argparse.ArgumentParser()
ap.add_argument("--students", type=int, default=6, help="measured students (after the warm-up ones)")
ap.add_argument("--warmup", type=int, default=2)
ap.add_argument("--profile", type=int, default=0, help="print the N most expensive functions (cumulative)")
ap.add_argument("--sort", default="cumulative", help="pstats order of --profile: cumulative, tottime...")
ap.add_argument(
    "--own-script-cache",
    action="store_true",
    help="compile the pages again for every session, as AppTest does (the server compiles each page once)",
)
ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
args = ap.parse_args()
ROOT = Path(args.root).resolve()
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from streamlit.testing.v1 import AppTest  # noqa: E402

from benchmarks.browser_bench import student_link  # noqa: E402
from benchmarks.runs import measure_script_thread  # noqa: E402

if not args.own_script_cache:  # one ScriptCache for every session, as the server's Runtime has
    from streamlit.runtime.scriptrunner import script_cache
    from streamlit.testing.v1 import app_test, local_script_runner

    _SHARED_SCRIPT_CACHE = script_cache.ScriptCache()
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: _SHARED_SCRIPT_CACHE

CPU, PROFILER = measure_script_thread()  # each page run's script-thread CPU; PROFILER[0]: an optional cProfile


def student(k: int) -> tuple[float, float]:
    """CPU (s) of student k's start page and of their first visit to the Attention page."""
    query = parse_qs(urlparse(student_link("http://x", k)).query)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for key, value in query.items():
        at.query_params[key] = value[0]
    CPU.clear()
    at.run()
    home = sum(CPU)
    CPU.clear()
    at.switch_page("pages/attention.py").run()
    attention = sum(CPU)
    assert not at.exception, [e.value for e in at.exception]
    return home, attention


def main() -> None:
    print(f"root: {ROOT}  load average: {os.getloadavg()[0]:.2f}")
    profiler = cProfile.Profile() if args.profile else None
    rows = []
    for k in range(args.warmup + args.students):
        PROFILER[0] = profiler if k >= args.warmup else None
        home, attention = student(k)
        print(f"student {k}{' (warm-up)' if k < args.warmup else ''}: start page {home:.3f} s, "
              f"attention {attention:.3f} s, total {home + attention:.3f} s", flush=True)  # fmt: skip
        if k >= args.warmup:
            rows.append((home, attention, home + attention))
    home, attention, total = (statistics.median(col) for col in zip(*rows, strict=True))
    print(f"median of {len(rows)}: start page {home:.3f} s, attention {attention:.3f} s, total {total:.3f} s")
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.profile)
        print(out.getvalue())


if __name__ == "__main__":
    main()
