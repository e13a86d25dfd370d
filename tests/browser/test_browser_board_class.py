"""The class board in a real class, in a real browser against `streamlit run serve.py`:

* F5 on the projector: the teacher's view survives a reload, a new tab and ``?presenter=1`` with no key in the
  address (the browser is remembered as the board's teacher), a board started in the sidebar too; another
  browser on the same link is a student;
* a slow phone: a click on "Accept all 1" that reaches the server after a second sentence arrived accepts
  nothing it did not show (the websocket's frames to the phone are held, as a slow network holds them);
* a flood: 1,200 sentences from 300 students, hidden by the teacher a board-full at a time with one click each,
  and a student sending after it is still taken;
* a school's proxy: an outsider forging X-Forwarded-For uses up only their own address's wrong codes, the
  school's joiners (through their proxy's address, with its X-Forwarded-For) get in, and every loopback form
  (``127.0.0.1``, ``::ffff:127.0.0.1``, ``::1``) is one client. The server listens on every interface, so the
  browser reaches it from this machine's own network addresses as well as from loopback.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from lib import board as lb
from tests.browser._browser import LOAD_MS, exceptions, start_server, stop_server, wait_idle
from tests.browser._class_board import PHONE_VIEWPORT, main_text, moderate, send
from tests.browser.test_browser_board_promises import ERROR, clients, close, new_page, use_up

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEACHER_VIEW = ".st-key-board_moderate"
STUDENT_VIEW = ".st-key-board_text input"


@pytest.fixture(scope="module")
def class_server():
    """serve.py on every interface (dual-stack), on a SQLite board folder of its own."""
    folder = tempfile.mkdtemp(prefix="context-lens-board-class-")
    proc, base, log = start_server(env={"CONTEXT_LENS_DATA": folder}, extra_args=["--server.address", "::"])
    store = lb.BoardStore(f"sqlite:///{Path(folder) / 'boards.sqlite'}")
    try:
        yield base, store
    finally:
        store.dispose()
        stop_server(proc)
        if "Traceback" in Path(log).read_text(errors="replace"):
            print(f"\nServer log with a traceback: {log}")
        else:
            Path(log).unlink(missing_ok=True)


def view(pg) -> str:
    """"teacher" or "student": which of the two views the page settled on."""
    pg.wait_for_selector(f"{TEACHER_VIEW}, {STUDENT_VIEW}", timeout=LOAD_MS)
    return "teacher" if pg.locator(TEACHER_VIEW).count() else "student"


def test_the_teacher_keeps_their_view_through_a_reload_a_new_tab_and_presenter_mode(class_server, chromium):
    base, store = class_server
    new = store.create_board("bank", "money, river")
    projector = new_page(chromium)
    phone = new_page(chromium, PHONE_VIEWPORT)
    pages = [projector, phone]
    try:
        response = projector.goto(base + new.teacher_link)
        assert view(projector) == "teacher"
        projector.wait_for_function("(k) => !location.search.includes(k)", arg=new.key, timeout=LOAD_MS)
        assert "key=" not in projector.url  # out of the address bar, so out of a reload and the history
        projector.reload()
        assert view(projector) == "teacher" and new.key not in projector.url
        tab = projector.context.new_page()
        pages.append(tab)
        tab.goto(base + new.student_link + "&presenter=1")
        assert view(tab) == "teacher"
        assert new.key not in tab.content()  # remembered by the browser's cookie: the key is not needed
        # another browser on the same link, presenter mode or not, is a student
        phone.goto(base + new.student_link + "&presenter=1")
        assert view(phone) == "student"
        # a board started in the sidebar: the same after a reload
        starter = new_page(chromium)
        pages.append(starter)
        starter.goto(base + "/board")
        starter.get_by_role("button", name="Start the board").click()
        assert view(starter) == "teacher"
        starter.wait_for_function("() => location.search.includes('room=')", timeout=LOAD_MS)
        code = starter.url.split("room=")[1].split("&")[0]
        starter.reload()
        assert view(starter) == "teacher" and code in main_text(starter)
        # the page the key was in sends no Referer anywhere
        assert response.headers.get("referrer-policy") == "no-referrer"
        assert not any(exceptions(pg) for pg in pages), [exceptions(pg) for pg in pages]
    finally:
        close(*pages)


def _kind(frame) -> str:
    """The kind of message a websocket frame from the server carries (a ForwardMsg: "delta", "script_finished")."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(frame if isinstance(frame, bytes) else frame.encode())
    except Exception:  # noqa: BLE001 - not a ForwardMsg
        return ""
    return msg.WhichOneof("type") or ""


def pump_until(pg, condition, what: str, timeout_s: float = 120.0) -> None:
    """Wait for ``condition()``, letting Playwright deliver the websocket's frames meanwhile."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}"
        pg.wait_for_timeout(50)


def test_accept_on_a_slow_phone_takes_only_what_it_showed(class_server, chromium):
    """The phone's websocket frames from the server are held (a slow network) while a second sentence arrives;
    the click on "Accept all 1" reaches the server after the queue changed, and must not accept the second."""
    base, store = class_server
    new = store.create_board("bank", "money, river")
    code = new.board.code
    first = store.send(code, "s1", "money", "The bank raised its interest rates.")
    phone = new_page(chromium, PHONE_VIEWPORT)
    held: list = []
    state: dict = {"hold": False, "route": None, "trigger": b""}

    def slow(ws) -> None:
        server = ws.connect_to_server()
        state["route"] = ws
        ws.on_message(lambda m: server.send(m))  # the phone's clicks go out at once

        def down(m) -> None:
            if state["trigger"] and state["trigger"] in (m if isinstance(m, bytes) else m.encode()):
                state["hold"] = True  # the first frame of the server's run that knows of the second sentence
            if state["hold"]:
                held.append(m)
            else:
                ws.send(m)

        server.on_message(down)

    def finished_after(i: int) -> int:
        return sum(_kind(m) == "script_finished" for m in held[i + 1 :])

    try:
        phone.route_web_socket("**/_stcore/stream", slow)
        phone.goto(base + new.teacher_link)
        moderate(phone)
        button = phone.locator("[class*='st-key-board_accept_'] button")
        button.filter(has_text="Accept all 1").wait_for(timeout=LOAD_MS)
        wait_idle(phone)
        state["trigger"] = b"waiting: 2"  # the moderation view's first line, before the queue and its buttons
        late = "A second sentence about the river bank arrived."
        second = store.send(code, "s2", "river", late)
        raw = late.removesuffix(".").encode()  # as the queue shows it (its "." escaped)

        def carried() -> int:
            return next((i for i, m in enumerate(held) if raw in (m if isinstance(m, bytes) else m.encode())), -1)

        # the server's refresh with the second sentence has run to its end, and the phone has seen none of it
        pump_until(phone, lambda: carried() >= 0 and finished_after(carried()) >= 1, "the refresh with the 2nd sentence")
        assert button.inner_text().strip().endswith("Accept all 1")
        clicked_at = len(held) - 1
        button.click()
        # the server has run the click (a run in progress when it arrived ends first: two runs to be sure)
        pump_until(phone, lambda: finished_after(clicked_at) >= 2, "the server's runs after the click")
        state["hold"] = False
        for m in held:
            state["route"].send(m)
        held.clear()
        phone.wait_for_selector(f"text={late}", timeout=LOAD_MS)
        # what the click showed, or nothing (its button was gone when it arrived): never the second sentence
        assert [e.id for e in store.accepted(code)] in ([], [first.id])
        assert [e.id for e in store.entries(code, new.key) if e.status == lb.PENDING][-1] == second.id
        button.click()  # the queue on screen now: everything waiting
        phone.wait_for_selector("text=Waiting for you (0)", timeout=LOAD_MS)
        assert [e.id for e in store.accepted(code)] == [first.id, second.id]
        assert not exceptions(phone)
    finally:
        close(phone)


def test_a_hidden_flood_of_1200_leaves_the_board_open(class_server, chromium):
    base, store = class_server
    new = store.create_board("bank", "money, river")
    code = new.board.code
    teacher = new_page(chromium, PHONE_VIEWPORT)
    student = new_page(chromium, PHONE_VIEWPORT)
    try:
        teacher.goto(base + new.teacher_link)
        moderate(teacher)
        for round_ in range(4):  # 300 students, 4 sentences each, a board-full at a time
            for i in range(lb.MAX_BOARD_SENTENCES):
                store.send(code, f"flood{i}", ("money", "river")[i % 2], f"Flood {round_}-{i} about the bank.")
            hide = teacher.get_by_role("button", name=f"Hide all {lb.MAX_BOARD_SENTENCES} waiting")
            hide.wait_for(timeout=LOAD_MS)
            hide.click()
            teacher.wait_for_selector("text=Waiting for you (0)", timeout=LOAD_MS)
        assert store.entries(code, new.key) == []
        student.goto(base + new.student_link)
        student.wait_for_selector(STUDENT_VIEW, timeout=LOAD_MS)
        send(student, "river", "After the flood we sat on the river bank.")
        assert [e.sentence for e in store.entries(code, new.key)] == ["After the flood we sat on the river bank."]
        teacher.wait_for_selector("text=Waiting for you (1)", timeout=LOAD_MS)
        assert not exceptions(teacher) and not exceptions(student)
    finally:
        close(teacher, student)


def network_addresses() -> list[str]:
    """This machine's own addresses other than loopback, IPv4 first (the browser reaches the server through
    them as another client would)."""
    out = subprocess.run(["ip", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    found = [line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3]
    return sorted(found, key=lambda a: ":" in a)


def test_an_outsiders_forged_header_locks_out_no_one_else(class_server, chromium):
    base, store = class_server
    new = store.create_board("bank", "money, river")
    port = base.rsplit(":", 1)[1]
    (school, *_) = network_addresses() or [None]
    assert school, "this test needs a network address besides loopback (ip -o addr show scope global)"
    school_base = f"http://{f'[{school}]' if ':' in school else school}:{port}"
    pages = []

    def open_as(url: str, headers: dict[str, str]) -> str:
        pg = new_page(chromium, PHONE_VIEWPORT, extra_http_headers=headers)
        pages.append(pg)
        pg.goto(url)
        pg.wait_for_selector(f"{ERROR}, {STUDENT_VIEW}", timeout=LOAD_MS)
        return main_text(pg)

    try:
        # the outsider (this machine's loopback here) forges X-Forwarded-For, naming the school's address too,
        # and uses up the wrong codes of whoever their guesses were counted against
        for forged in ("10.1.2.3", school, f"203.0.113.7, {school}"):
            assert lb.NOT_FOUND in open_as(base + "/board?room=ZZZZZZ", {"X-Forwarded-For": forged})
        counted = clients(store)
        use_up(store, counted[-1])
        assert lb.TOO_MANY_GUESSES in open_as(base + new.student_link, {"X-Forwarded-For": "198.51.100.99"})
        # ... the school's joiners, through their proxy (its address, its X-Forwarded-For), still get in
        for i in range(2):
            assert "Your sentence with" in open_as(school_base + new.student_link, {"X-Forwarded-For": f"10.1.2.{i}"})
        send(pages[-1], "money", "The school's student reached the bank.")
        assert counted == [lb.LOOPBACK] * 3, counted  # the outsider's own address, whatever the header named
        # every loopback form is one client: IPv4 (::ffff:127.0.0.1 on this dual-stack socket) and ::1
        with store.engine.begin() as conn:
            conn.execute(lb.guesses.delete())
        assert lb.NOT_FOUND in open_as(base + "/board?room=ZZZZZZ", {})
        assert lb.NOT_FOUND in open_as(f"http://[::1]:{port}/board?room=ZZZZZZ", {})
        assert clients(store) == [lb.LOOPBACK, lb.LOOPBACK]
        assert not any(exceptions(pg) for pg in pages)
    finally:
        close(*pages)
        with store.engine.begin() as conn:
            conn.execute(lb.guesses.delete())
