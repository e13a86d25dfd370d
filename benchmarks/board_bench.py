"""The class board with a class: the server's CPU and peak RSS for a teacher and N students on phones.

    python benchmarks/board_bench.py            # 30 students (writes benchmarks/board_results.json)
    python benchmarks/board_bench.py --students 10

One fresh `streamlit run serve.py` on a temporary SQLite board (tests/browser/_class_board.py drives the same
class as tests/browser/test_browser_board.py): the teacher's two tabs (the projector's view at 1280 x 720 and
their phone moderating at 390 x 844) and N phones (390 x 844, each a browser of its own) open the board; each student sends two sentences, the teacher accepts the first round while the second is sent,
then the rest. Reported, from /proc/<server pid>:

* **CPU while the pages opened** (the teacher and N students' first page);
* **CPU while the class sent** (2N sends, two Accept all, the charts), and the wall time it took: the
  driver sends one student after another, so on a busy machine this takes longer than a class's minute;
* **idle CPU a minute**: the same tabs left open for IDLE_S seconds (the teacher's 2-s refresh, the students'
  lists refreshing while a sentence of theirs waits);
* **per send**: (CPU while the class sent - idle rate x its wall time) / 2N; and from these the budget's
  figure, **a class minute**: idle CPU a minute + 2N sends (target: <= 10 s for 30 students);
* **peak RSS** (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server  # noqa: E402
from tests.browser._class_board import cpu_seconds, peak_rss_mb, run_class  # noqa: E402

IDLE_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "board_results.json"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = tempfile.mkdtemp(prefix="context-lens-board-bench-")
    env = dict(os.environ, CONTEXT_LENS_DATA=folder)
    env.pop("CONTEXT_LENS_DB", None)
    out = subprocess.run(
        [sys.executable, "-m", "lib.board", "create", "--target", "bank", "--senses", "money,river"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    student, teacher = out[0].removeprefix("student: "), out[1].removeprefix("teacher: ")
    proc, base, log = start_server(env={"CONTEXT_LENS_DATA": folder})
    load0 = os.getloadavg()[0]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            run, _teacher, _students = run_class(browser, base, proc.pid, student, teacher, args.students)
            c0 = cpu_seconds(proc.pid)
            time.sleep(IDLE_S)
            idle = (cpu_seconds(proc.pid) - c0) * 60.0 / IDLE_S
            browser.close()
        peak = peak_rss_mb(proc.pid)
    finally:
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
    sends = 2 * args.students
    per_send = max(0.0, run.cpu_class_s - idle * run.send_wall_s / 60.0) / sends
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit.strip(),
        "students": args.students,
        "load_average_start": round(load0, 1),
        "load_average_end": round(os.getloadavg()[0], 1),
        "cpu_pages_opened_s": round(run.cpu_load_s, 2),
        "cpu_class_sent_s": round(run.cpu_class_s, 2),
        "class_sent_wall_s": round(run.send_wall_s, 1),
        "idle_cpu_per_minute_s": round(idle, 2),
        "cpu_per_send_s": round(per_send, 3),
        "class_minute_cpu_s": round(idle + sends * per_send, 2),
        "peak_rss_mb": round(max(peak, run.peak_rss_mb)),
        "queue_slowest_s": round(max(run.seen[s] - run.acked[s] for s in run.acked) / 1000, 2),
        "errors": run.errors,
    }
    print(json.dumps(result, indent=2))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
