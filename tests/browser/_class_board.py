"""A class on the board in one headless Chromium: a teacher (1280 x 720) and students on phones (390 x 844),
each in a browser context of their own (their own cookies: the board knows a student by a signed cookie, so
tabs of one context would be one student).

Shared by tests/browser/test_browser_board.py (which asserts) and benchmarks/board_bench.py (which records the
server's CPU and peak RSS). Each student sends two sentences; the teacher's tab records, in the browser's own
clock, when each sentence first appears there (a timer reading the page's text every 100 ms), and when the
projection first holds a given number of points, so "appeared within 5 s of its send" needs no polling from
Python.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tests.browser._browser import LOAD_MS, cpu_seconds, exceptions, peak_rss_mb, wait_idle

TEACHER_VIEWPORT = {"width": 1280, "height": 720}
PHONE_VIEWPORT = {"width": 390, "height": 844}
SEND_MS = 60_000

# In the teacher's tab: remember when each expected text is first on screen, and when the map first has n points.
JS_WATCH = """([expected, marks]) => {
  window.__seen = window.__seen || {}; window.__marks = window.__marks || {}; window.__points = window.__points || {};
  window.__expect = expected; window.__expect_marks = marks;
  if (window.__watch) return;
  window.__watch = setInterval(() => {
    const now = Date.now(); const text = document.body.innerText;
    for (const s of window.__expect) if (!(s in window.__seen) && text.includes(s)) window.__seen[s] = now;
    for (const s of window.__expect_marks) if (!(s in window.__marks) && text.includes(s)) window.__marks[s] = now;
    const g = document.querySelector('.st-key-board_projection .js-plotly-plot');
    if (g && Array.isArray(g.data)) {
      const n = g.data.reduce((k, t) => k + (t.x ? t.x.length : 0), 0);
      if (!(n in window.__points)) window.__points[n] = now;
    }
  }, 100);
}"""


def sentences_of(i: int) -> list[tuple[str, str]]:
    """Student i's two (sense, sentence): one of each sense, in an order that alternates across students."""
    pair = [
        ("money", f"Student {i} paid the rent money into the bank today."),
        ("river", f"Student {i} fished from the muddy river bank today."),
    ]
    return pair if i % 2 == 0 else pair[::-1]


def main_text(pg) -> str:
    return pg.locator("[data-testid='stMain']").inner_text()


def moderate(pg) -> None:
    """Turn on the teacher's moderation view (the waiting sentences, Accept and Hide: off on the projector)."""
    toggle = pg.locator(".st-key-board_moderate")
    box = toggle.locator("input")
    box.wait_for(state="attached", timeout=LOAD_MS)  # the box can be drawn before its input (a replica's first run)
    if not box.is_checked():
        toggle.locator("label").first.click()
    pg.wait_for_selector("text=Waiting for you", timeout=LOAD_MS)


@dataclass
class ClassRun:
    """What one class did: when each sentence was acknowledged, seen by the teacher, and the server's costs."""

    acked: dict[str, float] = field(default_factory=dict)  # sentence -> browser ms when its Send was confirmed
    seen: dict[str, float] = field(default_factory=dict)  # sentence -> browser ms when the teacher's tab showed it
    accepted_at: list[tuple[int, float]] = field(default_factory=list)  # (accepted so far, browser ms of the click)
    points_at: dict[int, float] = field(default_factory=dict)  # points on the teacher's map -> first browser ms
    marks: dict[str, float] = field(default_factory=dict)  # "On the board (n)" -> first browser ms
    send_wall_s: float = 0.0
    cpu_load_s: float = 0.0  # server CPU while the teacher and students opened their pages
    cpu_class_s: float = 0.0  # server CPU while the students sent (and the teacher accepted) every sentence
    peak_rss_mb: float = 0.0
    errors: list[str] = field(default_factory=list)


def new_tab(browser, viewport: dict) -> object:
    """A page in a browser context of its own: one person's browser."""
    return browser.new_context(viewport=viewport).new_page()


def close_tabs(pages) -> None:
    for pg in pages:
        pg.context.close()


def open_students(browser, base: str, student_link: str, n: int) -> list:
    pages = []
    for _ in range(n):
        pg = new_tab(browser, PHONE_VIEWPORT)
        pg.goto(base + student_link)
        pages.append(pg)
    for pg in pages:
        pg.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        wait_idle(pg)
    return pages


def send(pg, sense: str, sentence: str) -> float:
    """Type, choose the sense, Send; returns the browser's ms once the sentence is confirmed on the phone."""
    pg.locator(".st-key-board_text input").fill(sentence)  # in a form: nothing is sent before Send
    pg.locator(".st-key-board_sense label").filter(has_text=sense).first.click()
    pg.locator(".st-key-board_send button").click()
    pg.wait_for_function(
        """(s) => { const t = document.querySelector("[data-testid='stMain']").innerText;
            const box = document.querySelector('.st-key-board_text input');
            return t.includes('Sent.') && t.includes(s) && box && box.value === ''; }""",
        arg=sentence,
        timeout=SEND_MS,
    )
    return pg.evaluate("Date.now()")


ACCEPT = "[class*='st-key-board_accept_'] button"


def one_accept_button(teacher):
    """The moderation view's Accept button, once it is the only one. The button's key names the rows it accepts,
    so while the list refreshes the old button and the new one can both be on the page for a moment (seen on a
    busy machine)."""
    teacher.wait_for_function("(sel) => document.querySelectorAll(sel).length === 1", arg=ACCEPT, timeout=SEND_MS)
    return teacher.locator(ACCEPT)


def accept_all(teacher) -> float:
    """Click the moderation view's one Accept button (:func:`one_accept_button`); returns when (the page's clock,
    ms)."""
    for attempt in range(3):
        button = one_accept_button(teacher)
        at = teacher.evaluate("Date.now()")
        try:
            button.click(timeout=SEND_MS)
            return at
        except Exception as err:  # a newer list arrived between the count and the click: wait for it again
            if "strict mode violation" not in str(err) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def run_class(browser, base: str, pid: int, student_link: str, teacher_link: str, n_students: int) -> tuple:
    """Open the teacher's two tabs (the projector's view, and their phone moderating) and ``n_students`` phones
    (each its own browser context of ``browser``), send 2 sentences each (the teacher accepts the first round
    on the phone while the second is sent), accept the rest; returns (ClassRun, (projector, teacher's phone),
    student pages): close them with :func:`close_tabs`. A sentence is "seen" when the teacher's phone shows it;
    the points and the "On the board (n)" marks are read on the projector."""
    run = ClassRun()
    cpu0 = cpu_seconds(pid)
    projector = new_tab(browser, TEACHER_VIEWPORT)
    projector.goto(base + teacher_link)
    projector.wait_for_selector("text=On the board (0)", timeout=LOAD_MS)
    phone = projector.context.new_page()  # the teacher's own browser: the same session cookie, another tab
    phone.set_viewport_size(PHONE_VIEWPORT)
    phone.goto(base + teacher_link)
    moderate(phone)
    students = open_students(browser, base, student_link, n_students)
    expected = [s for i in range(n_students) for _, s in sentences_of(i)]
    marks = [f"On the board ({n_students})", f"On the board ({2 * n_students})"]  # the server's answer, drawn
    for pg in (projector, phone):
        pg.evaluate(JS_WATCH, [expected, marks])
    cpu1 = cpu_seconds(pid)
    t0 = time.monotonic()
    for round_ in range(2):
        for i, pg in enumerate(students):
            sense, sentence = sentences_of(i)[round_]
            run.acked[sentence] = send(pg, sense, sentence)
        if round_ == 0:  # the teacher accepts the first round while the second one is being sent
            phone.wait_for_function("(n) => Object.keys(window.__seen).length >= n", arg=n_students, timeout=SEND_MS)
            run.accepted_at.append((n_students, accept_all(phone)))
    run.send_wall_s = time.monotonic() - t0
    phone.wait_for_function("(n) => Object.keys(window.__seen).length >= n", arg=2 * n_students, timeout=SEND_MS)
    run.accepted_at.append((2 * n_students, accept_all(phone)))
    projector.wait_for_function("(n) => n in window.__points", arg=2 * n_students, timeout=SEND_MS)
    run.cpu_class_s = cpu_seconds(pid) - cpu1
    run.cpu_load_s = cpu1 - cpu0
    run.peak_rss_mb = peak_rss_mb(pid)
    run.seen = phone.evaluate("window.__seen")
    run.marks = projector.evaluate("window.__marks")
    run.points_at = {int(k): v for k, v in projector.evaluate("window.__points").items()}
    for pg in [projector, phone, *students]:
        run.errors += exceptions(pg)
    return run, (projector, phone), students
