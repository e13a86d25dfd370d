"""What the class board promises, in a real browser against `streamlit run serve.py`:

* the teacher key never reaches a saved page, the CSV, the QR code or a student's page;
* wrong board codes are counted per address no browser can choose: a forged X-Forwarded-For earns no fresh
  allowance (an outsider's cannot lock out a school: tests/browser/test_browser_board_class.py); loopback clients
  count as one; a teacher holding the right key is never locked out and keeps the key;
* the teacher's view, as projected, never shows a waiting sentence; "Accept" accepts what the moderation view
  showed, no others;
* a student's caps survive a reload and a new tab (the server-signed cookie); a hidden sentence frees its room
  under the board's cap.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from lib import board as lb
from tests.browser._browser import (
    LOAD_MS,
    ROOT,
    exceptions,
    served,
    wait_idle,
)
from tests.browser._class_board import (
    PHONE_VIEWPORT,
    TEACHER_VIEWPORT,
    accept_all,
    main_text,
    moderate,
    one_accept_button,
    send,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MONEY = ["The bank raised its interest rates.", "She paid the cheque into the bank.", "The bank lent them money."]
RIVER = ["We sat on the grassy bank of the river.", "The boat drifted to the river bank.", "Reeds grew on the bank."]
WAITING = "A waiting sentence about the bank, not yet accepted."
ERROR = "[data-testid='stAlertContentError']"


@pytest.fixture(scope="module")
def board_server():
    """One server (serve.py, as the README and the image start it) on a SQLite board folder of its own."""
    folder = tempfile.mkdtemp(prefix="context-lens-board-promises-")
    with served(env={"CONTEXT_LENS_DATA": folder}) as (_proc, base, _log):
        store = lb.BoardStore(f"sqlite:///{Path(folder) / 'boards.sqlite'}")
        try:
            yield base, store
        finally:
            store.dispose()


def new_page(browser, viewport=TEACHER_VIEWPORT, **context):
    ctx = browser.new_context(viewport=viewport, accept_downloads=True, **context)
    return ctx.new_page()


def close(*pages) -> None:
    for pg in pages:
        pg.context.close()


def download(pg, label: str) -> bytes:
    """The file behind the download button ``label``, clicked once the page's run has ended: the button's file is
    made when clicked, under an id each full run replaces (the run's end drops the last run's), so a click while a
    run is still going (a busy machine, right after a toggle) can ask for an id that is gone and get nothing."""
    wait_idle(pg)
    button = pg.locator("[data-testid='stDownloadButton']").filter(has_text=label).first
    with pg.expect_download(timeout=LOAD_MS) as dl:
        button.click()
    return Path(dl.value.path()).read_bytes()


def open_teacher(browser, base: str, new: lb.NewBoard):
    pg = new_page(browser)
    pg.goto(base + new.teacher_link)
    pg.wait_for_selector("text=Join at the link", timeout=LOAD_MS)
    return pg


def wait_waiting(pg, n: int, timeout: int = LOAD_MS) -> None:
    """Until the teacher's "Waiting" count reads ``n`` (it refreshes by itself every 2 s)."""
    pg.wait_for_function(
        """(n) => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).some(
            m => /Waiting/.test(m.innerText) && m.innerText.split('\\n').includes(String(n)))""",
        arg=n, timeout=timeout,
    )  # fmt: skip


def _class(store: lb.BoardStore, *, accepted: bool = True) -> lb.NewBoard:
    new = store.create_board("bank", "money, river")
    for i, s in enumerate(MONEY + RIVER):
        store.send(new.board.code, f"seed{i}", "money" if s in MONEY else "river", s)
    if accepted:
        store.accept(new.board.code, new.key)
    return new


def test_the_teacher_key_reaches_no_file_no_qr_code_and_no_students_page(board_server, chromium):
    base, store = board_server
    new = _class(store)
    store.send(new.board.code, "late", "money", WAITING)
    teacher = open_teacher(chromium, base, new)
    student = new_page(chromium, PHONE_VIEWPORT)
    try:
        teacher.wait_for_selector("text=On the board (6)", timeout=LOAD_MS)
        teacher.wait_for_selector(".st-key-board_projection .js-plotly-plot", timeout=LOAD_MS)
        files = {"projected": download(teacher, "Download this page")}
        assert new.key not in files["projected"].decode()
        files["csv"] = download(teacher, "Download the sentences (CSV)")
        for name, data in files.items():
            assert all(s in data.decode("utf-8") for s in MONEY + RIVER), name
        # the QR code is the student link, pixel for pixel
        import segno
        from PIL import Image

        src = teacher.locator("[data-testid='stImage'] img").first.get_attribute("src")
        shown = teacher.evaluate(
            """async (src) => { const b = new Uint8Array(await (await fetch(src)).arrayBuffer());
                let s = ''; for (const x of b) s += String.fromCharCode(x); return btoa(s); }""",
            src,
        )
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(teacher.url))
        qr = segno.make(origin + new.student_link, error="m")
        img = Image.open(io.BytesIO(base64.b64decode(shown))).convert("L")
        n = len(qr.matrix) + 4  # the modules and the 2-module border the page draws
        step = img.size[0] / n
        seen = [[img.getpixel((int((c + 2.5) * step), int((r + 2.5) * step))) < 128 for c in range(n - 4)]
                for r in range(n - 4)]  # fmt: skip
        assert img.size[0] == img.size[1] and seen == [[bool(v) for v in row] for row in qr.matrix]
        moderate(teacher)
        teacher.get_by_text("Your teacher link").click()
        teacher.wait_for_selector(f"text={WAITING}", timeout=LOAD_MS)
        assert new.key in main_text(teacher)  # the teacher's own screen shows it, to copy
        files["moderating"] = download(teacher, "Download this page")
        for name, data in files.items():
            assert new.key not in data.decode("utf-8"), name
        assert WAITING not in files["moderating"].decode()  # the queue is the teacher's, not the file's
        # a student's page: nothing of the key, in the page or in what its server sent
        frames: list[str] = []
        student.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(
            f if isinstance(f, str) else f.decode("latin-1"))))  # fmt: skip
        student.goto(base + new.student_link)
        student.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        assert frames and not any(new.key in f for f in frames)
        assert new.key not in student.content()
        assert not exceptions(teacher) and not exceptions(student)
    finally:
        close(teacher, student)


def clients(store: lb.BoardStore) -> list[str]:
    """Who each wrong guess so far was counted against, oldest first."""
    with store.engine.connect() as conn:
        return list(conn.execute(sa.select(lb.guesses.c.client).order_by(lb.guesses.c.id)).scalars())


def use_up(store: lb.BoardStore, client: str) -> None:
    """The rest of ``client``'s allowance, as if it had just guessed wrong that often (a browser's page loads
    on a busy machine could take longer than the window)."""
    with store.engine.begin() as conn:
        conn.execute(lb.guesses.insert(), [{"client": client, "at": time.time()}] * lb.MAX_GUESSES)


def test_wrong_guesses_count_per_address_no_browser_chooses(board_server, chromium):
    base, store = board_server
    new = _class(store, accepted=False)
    teacher = open_teacher(chromium, base, new)  # opened before any wrong guess
    in_class = new_page(chromium, PHONE_VIEWPORT)
    in_class.goto(base + new.student_link)
    in_class.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
    pages = [teacher, in_class]

    def guess(headers: dict[str, str] | None = None, link: str = "/board?room=ZZZZZZ") -> str:
        pg = new_page(chromium, PHONE_VIEWPORT, extra_http_headers=headers or {})
        pages.append(pg)
        pg.goto(base + link)
        pg.wait_for_selector(f"{ERROR}, .st-key-board_text input, .st-key-board_moderate", timeout=LOAD_MS)
        return main_text(pg)

    try:
        # wrong guesses from made-up addresses, one naming loopback, one a victim's: none earns a fresh allowance
        # or lands on the address it names; from this machine, they count against this machine
        forged = [{"X-Forwarded-For": "203.0.113.1"}, {"X-Forwarded-For": "203.0.113.2, 10.0.0.3"},
                  {"X-Forwarded-For": "127.0.0.1"}, {"X-Real-IP": "198.51.100.7"}]  # fmt: skip
        for headers in forged:
            assert lb.NOT_FOUND in guess(headers)
        counted = clients(store)
        named = {a.strip() for h in forged for v in h.values() for a in v.split(",")}
        assert counted == [lb.LOOPBACK] * len(forged) and not set(counted) & named, counted
        assert lb.NOT_FOUND in guess()
        assert clients(store)[-1] == lb.LOOPBACK
        # its allowance used up, no forged header buys more, and a new student from here waits a minute ...
        use_up(store, lb.LOOPBACK)
        assert lb.TOO_MANY_GUESSES in guess({"X-Forwarded-For": "198.51.100.77"})
        assert lb.TOO_MANY_GUESSES in guess(link=new.student_link)
        # ... the teacher's right key still opens the board, and the open tabs carry on, the key kept
        assert "Class board: “bank”" in guess(link=new.teacher_link)
        moderate(teacher)
        teacher.get_by_text("Your teacher link").click()
        teacher.wait_for_selector(f"text={new.key}", timeout=LOAD_MS)
        send(in_class, "river", "The class sat on the bank after the lockout.")
        assert not any(exceptions(pg) for pg in pages)
    finally:
        close(*pages)
        with store.engine.begin() as conn:  # the next tests' students come from loopback too
            conn.execute(sa.delete(lb.guesses))


def test_the_projected_view_never_shows_a_waiting_sentence(board_server, chromium):
    base, store = board_server
    new = store.create_board("bank", "money, river")
    code = new.board.code
    queued = [f"Student {i} wrote about the bank today." for i in range(lb.MAX_STUDENT_SENTENCES * 4 + 2)]
    for i, s in enumerate(queued):
        store.send(code, f"s{i}", "money" if i % 2 else "river", s)
    teacher = open_teacher(chromium, base, new)
    try:
        wait_waiting(teacher, len(queued))
        store.send(code, "one-more", "river", "One more arrived at the bank while the class watched.")
        wait_waiting(teacher, len(queued) + 1, 60_000)
        text = main_text(teacher)
        assert "bank today" not in text and "One more arrived" not in text
        assert teacher.locator("[class*='st-key-board_accept_'], [class*='st-key-board_hide_']").count() == 0
        moderate(teacher)
        teacher.wait_for_selector(f"text=Waiting for you ({len(queued) + 1})", timeout=LOAD_MS)
        # the list below that count is drawn row by row as the run goes on (a busy machine read it half drawn)
        from playwright.sync_api import TimeoutError as PlaywrightTimeout  # where the browser tests can run

        with contextlib.suppress(PlaywrightTimeout):
            teacher.wait_for_function(
                "(want) => { const t = document.querySelector('[data-testid=\"stMain\"]').innerText;"
                " return want.every(s => t.includes(s)); }", arg=queued[:40], timeout=60_000,
            )  # fmt: skip
        shown = [s for s in queued if s in main_text(teacher)]
        assert shown == queued[:40]
        assert one_accept_button(teacher).inner_text().strip().endswith("Accept these 40")
        accept_all(teacher)
        teacher.wait_for_selector("text=40 on the board", timeout=LOAD_MS)
        assert [e.sentence for e in store.accepted(code)] == queued[:40]
        left = [e.sentence for e in store.entries(code, new.key) if e.status == lb.PENDING]
        assert left == queued[40:] + ["One more arrived at the bank while the class watched."]
        assert not exceptions(teacher)
    finally:
        close(teacher)


def test_a_students_caps_survive_a_reload_and_a_new_tab(board_server, chromium, monkeypatch):
    base, store = board_server
    new = store.create_board("bank", "money, river")
    code = new.board.code
    phone = new_page(chromium, PHONE_VIEWPORT)
    other = new_page(chromium, PHONE_VIEWPORT)
    try:
        phone.goto(base + new.student_link)
        phone.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        mine = [f"My bank sentence number {i}." for i in range(lb.MAX_SENDS_PER_MINUTE)]
        for s in mine:
            send(phone, "money", s)
        for pg in (phone, phone.context.new_page()):  # a reload, then a new tab of the same browser
            pg.goto(base + new.student_link)
            pg.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
            wait_idle(pg)
            assert all(s in main_text(pg) for s in mine)  # the same student: their own list
            pg.locator(".st-key-board_text input").fill("One bank sentence too many this minute.")
            pg.locator(".st-key-board_sense label").filter(has_text="money").first.click()
            pg.locator(".st-key-board_send button").click()
            pg.wait_for_selector(f"{ERROR} >> text=a minute", timeout=LOAD_MS)
        rows = store.entries(code, new.key)
        assert len(rows) == lb.MAX_SENDS_PER_MINUTE and len({e.student for e in rows}) == 1
        # another browser is another student
        other.goto(base + new.student_link)
        other.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        assert "Your sentences" not in main_text(other)
        send(other, "river", "Another student's river bank.")
        # a hidden sentence frees its room under the board's cap
        full = store.create_board("bank", "money, river")
        with store.engine.begin() as conn:
            conn.execute(lb.entries.insert(), [
                {"board": full.board.code, "student": f"x{i}", "sense": "money", "sentence": f"Bank {i}.",
                 "status": lb.PENDING, "created_at": full.board.created_at} for i in range(lb.MAX_BOARD_SENTENCES)
            ])  # fmt: skip
        other.goto(base + full.student_link)
        other.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        other.locator(".st-key-board_text input").fill("A bank sentence for a full board.")
        other.locator(".st-key-board_sense label").filter(has_text="money").first.click()
        other.locator(".st-key-board_send button").click()
        other.wait_for_selector(f"{ERROR} >> text=full", timeout=LOAD_MS)
        store.hide(full.board.code, full.key, [store.entries(full.board.code, full.key)[0].id])
        send(other, "money", "A bank sentence for a full board.")
        assert not exceptions(phone) and not exceptions(other)
    finally:
        close(phone, other)


def test_a_hosts_proxy_header_names_the_client(tmp_path, chromium):
    """Behind the host's own proxy (CONTEXT_LENS_CLIENT_HEADER=x-real-ip, as deploy/nginx.conf sets it from
    $remote_addr): two addresses the proxy saw are two clients; a browser's own X-Forwarded-For changes nothing."""
    env = dict(os.environ, CONTEXT_LENS_DATA=str(tmp_path))
    env.pop("CONTEXT_LENS_DB", None)
    out = subprocess.run(
        [sys.executable, "-m", "lib.board", "create", "--target", "bank", "--senses", "money,river"], cwd=ROOT,
        env=env, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    student = out[0].removeprefix("student: ")
    with served(env={"CONTEXT_LENS_DATA": str(tmp_path), "CONTEXT_LENS_CLIENT_HEADER": "X-Real-IP"}) as (_proc, base, _log):
        pages = []
        try:
            def open_as(address: str, forged: str, link: str) -> str:
                pg = new_page(chromium, PHONE_VIEWPORT, extra_http_headers={"X-Real-IP": address, "X-Forwarded-For": forged})
                pages.append(pg)
                pg.goto(base + link)
                pg.wait_for_selector(f"{ERROR}, .st-key-board_text input", timeout=LOAD_MS)
                return main_text(pg)

            for i in range(2):
                assert lb.NOT_FOUND in open_as("198.51.100.1", f"10.0.0.{i}", "/board?room=ZZZZZZ")
            store = lb.BoardStore(f"sqlite:///{tmp_path / 'boards.sqlite'}")
            assert clients(store) == ["198.51.100.1"] * 2  # the proxy's word, not the browser's
            use_up(store, "198.51.100.1")
            store.dispose()
            assert lb.TOO_MANY_GUESSES in open_as("198.51.100.1", "10.0.0.99", student)
            assert "Your sentence with" in open_as("198.51.100.2", "198.51.100.1", student)
        finally:
            close(*pages)
