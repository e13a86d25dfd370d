"""The class board with a class: a teacher (the projector's view, and their phone moderating) and 5 students on
phones, each a browser context of its own, in one headless Chromium, then a restart.

Checks what the board promises: each sentence reaches the teacher's queue (the phone) within 5 s of its send
and the projector's charts within 5 s of being accepted; 10 rows in the database and 10 on the board; a second board
sees none of them; a student's page has nothing to moderate with; a wrong key reads like a missing board; after a
server restart every board and accepted sentence is still there. The server's CPU and peak RSS are printed.

Five students, not a class of 30: what this test proves (every sentence of many phones sending at once reaches the
queue and the map in bounded time, and survives a restart) needs several browsers sending into one board, not 30
of them; 30 browser contexts on two cores took 2.5 minutes of the suite, 8 of them 54 s and 5 of them 43 s here. The class of 30, its CPU and its peak RSS
are benchmarks/board_bench.py's (the same class, tests/browser/_class_board.py); ``CONTEXT_LENS_CLASS_SIZE=30``
runs this test with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib import board as lb
from tests.browser._browser import JS_CUT_TEXT, ROOT, exceptions, start_server, stop_server, wait_idle
from tests.browser._class_board import (
    TEACHER_VIEWPORT,
    close_tabs,
    main_text,
    moderate,
    new_tab,
    run_class,
    sentences_of,
)
from tests.browser.test_browser_screens import JS_LAYOUT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N_STUDENTS = int(os.environ.get("CONTEXT_LENS_CLASS_SIZE", "5"))  # 30: the benchmark's class, in the test
WITHIN_MS = 5_000


def create_board(env: dict[str, str], *args: str) -> tuple[str, str]:
    """``python -m lib.board create ...`` as a teacher runs it before class; returns (student, teacher) links."""
    out = subprocess.run(
        [sys.executable, "-m", "lib.board", "create", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        check=True,
    ).stdout.splitlines()  # fmt: skip
    return out[0].removeprefix("student: "), out[1].removeprefix("teacher: ")


def test_a_class_on_one_board_survives_a_restart(chromium, tmp_path):

    env = dict(os.environ, CONTEXT_LENS_DATA=str(tmp_path))
    env.pop("CONTEXT_LENS_DB", None)  # the default: SQLite in the data folder
    student, teacher = create_board(env, "--target", "bank", "--senses", "money,river", "--prompt", "Two senses!")
    code = student.split("room=")[1]
    other_student, other_teacher = create_board(env, "--target", "bank", "--senses", "money,river")
    proc, base, log = start_server(env={"CONTEXT_LENS_DATA": str(tmp_path)})
    pages = []
    try:
        run, (teacher_pg, phone), students = run_class(chromium, base, proc.pid, student, teacher, N_STUDENTS)
        pages += [teacher_pg, phone, *students]
        print(
            f"\nclass of {N_STUDENTS}: sends took {run.send_wall_s:.1f} s wall; server CPU {run.cpu_load_s:.1f} s "
            f"while {N_STUDENTS + 1} pages opened, {run.cpu_class_s:.1f} s while {2 * N_STUDENTS} sentences were "
            f"sent, accepted and charted; peak RSS {run.peak_rss_mb:.0f} MB"
        )
        assert not run.errors
        expected = [s for i in range(N_STUDENTS) for _, s in sentences_of(i)]
        late = {s: run.seen.get(s, float("inf")) - run.acked[s] for s in expected}
        print(f"queue: slowest {max(late.values()) / 1000:.1f} s after its send; each: "
              + " ".join(f"{v / 1000:.1f}" for v in late.values()))
        assert all(v <= WITHIN_MS for v in late.values()), sorted(late.items(), key=lambda kv: -kv[1])[:5]
        for n, clicked in run.accepted_at:
            charted = min((t for k, t in run.points_at.items() if k >= n), default=float("inf"))
            counted = run.marks.get(f"On the board ({n})", float("inf"))
            print(f"charts: {n} points {(charted - clicked) / 1000:.1f} s after Accept all (the count at "
                  f"{(counted - clicked) / 1000:.1f} s)")  # fmt: skip
            assert charted - clicked <= WITHIN_MS
        # every sentence in the database, and on the board
        store = lb.BoardStore(f"sqlite:///{tmp_path / 'boards.sqlite'}")
        key = teacher.split("key=")[1]
        rows = store.entries(code, key)
        assert len(rows) == 2 * N_STUDENTS and all(e.status == lb.ACCEPTED for e in rows)
        assert sorted(e.sentence for e in rows) == sorted(expected)
        teacher_pg.wait_for_selector(f"text=On the board ({2 * N_STUDENTS})")
        # the projector's charts keep their text inside, and a phone does not scroll sideways
        assert teacher_pg.evaluate(JS_CUT_TEXT) == []
        for pg in (teacher_pg, students[0]):
            layout = pg.evaluate(JS_LAYOUT)
            assert layout["pageScroll"] <= 0 and layout["mainScroll"] <= 0, layout
        # a student's page cannot moderate, and a guessed key is refused like a missing board
        assert students[0].locator("[class*='st-key-board_accept_'], [class*='st-key-board_hide_']").count() == 0
        probe = new_tab(chromium, TEACHER_VIEWPORT)
        pages.append(probe)
        wrong = teacher[:-2] + ("AA" if not teacher.endswith("AA") else "BB")
        messages = []
        for link in (wrong, "/board?room=ZZZZZZ&key=" + key):
            probe.goto(base + link)
            wait_idle(probe)
            messages.append(probe.locator("[data-testid='stAlertContentError']").inner_text())
        assert messages == [lb.NOT_FOUND, lb.NOT_FOUND]
        # a second board sees none of them
        probe.goto(base + other_teacher)
        moderate(probe)
        probe.wait_for_selector("text=Waiting for you (0)")
        text = main_text(probe)
        assert "0 on the board" in text and not any(s in text for s in expected)  # moderating: the count alone
        assert store.entries(other_teacher.split("room=")[1].split("&")[0], other_teacher.split("key=")[1]) == []
        store.dispose()
        # restart the server: every board and accepted sentence remain
        close_tabs(pages)
        pages.clear()
        stop_server(proc)
        proc, base, log2 = start_server(env={"CONTEXT_LENS_DATA": str(tmp_path)})
        Path(log2).unlink(missing_ok=True)
        again = new_tab(chromium, TEACHER_VIEWPORT)
        pages.append(again)
        again.goto(base + teacher)
        again.wait_for_selector(f"text=On the board ({2 * N_STUDENTS})", timeout=300_000)
        again.wait_for_function(
            """(n) => { const g = document.querySelector('.st-key-board_projection .js-plotly-plot');
                return g && Array.isArray(g.data) && g.data.reduce((k, t) => k + (t.x ? t.x.length : 0), 0) === n; }""",
            arg=2 * N_STUDENTS,
            timeout=300_000,
        )
        assert not exceptions(again)
    finally:
        close_tabs(pages)
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
