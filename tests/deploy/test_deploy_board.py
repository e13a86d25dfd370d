"""The class board as a host runs it: `tools/up.sh --db` (nginx, two replicas, PostgreSQL on the internal network).

Students whose browsers nginx pins to different replicas send sentences; the teacher, on one replica, sees and
accepts them all on one board. Then both replicas restart: the board and every accepted sentence remain. A wrong
code through nginx counts against the address nginx saw; a request that goes around nginx names no address.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from lib import board as lb
from tests.browser._browser import LOAD_MS, exceptions, goto_app, wait_idle
from tests.browser._class_board import (
    PHONE_VIEWPORT,
    TEACHER_VIEWPORT,
    main_text,
    moderate,
    send,
    sentences_of,
)
from tests.deploy._docker import PREFIX, docker, explained, nginx_routes, running_stack, wait_healthy
from ui.student_cookie import NEW_COOKIES_BURST

# 120 page loads without a cookie, each naming another client in X-Real-IP; prints how many got a new cookie
AROUND_THE_PROXY = """
import sys, urllib.request
n = 0
for i in range(120):
    req = urllib.request.Request(sys.argv[1], headers={"X-Real-IP": f"203.0.113.{i}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        n += any(h.lower() == "set-cookie" and v.startswith("cl_student=") for h, v in r.headers.items())
print(n)
"""
PORT = 8644
STACK = f"{PREFIX}-board"
MAX_STUDENTS = 12  # new browsers until both replicas have students (each browser's cookie picks one)


@pytest.fixture(scope="module")
def stack(images):
    with running_stack(STACK, PORT, "--db") as base:
        yield base


def _replica_serving(ctx) -> str:
    """The replica (its upstream address) nginx passed this browser's requests to."""
    route = next(c["value"] for c in ctx.cookies() if c["name"] == "cl_replica")
    ups = {u for _, u in nginx_routes(f"{STACK}-nginx")[route]}
    assert len(ups) == 1, ups
    return ups.pop()


@pytest.mark.timeout(1800)
def test_students_on_both_replicas_reach_one_board_that_survives_a_restart(stack, browser):
    out = docker(
        "exec", f"{STACK}-app1", "sh", "-c",
        'python -m lib.board create --target bank --senses money,river --db "$CONTEXT_LENS_DB"',
    ).splitlines()  # fmt: skip
    student_link = out[0].split(": ", 1)[1]
    teacher_link = out[1].split(": ", 1)[1]
    contexts = []
    try:
        tctx = browser.new_context(viewport=TEACHER_VIEWPORT)
        contexts.append(tctx)
        teacher = tctx.new_page()
        goto_app(teacher, stack + teacher_link, selector=".st-key-board_moderate")
        moderate(teacher)  # the queue, on the teacher's own screen
        teacher.wait_for_selector("text=Waiting for you (0)", timeout=LOAD_MS)
        replicas: dict[str, list] = {}
        sent = []
        for i in range(MAX_STUDENTS):
            ctx = browser.new_context(viewport=PHONE_VIEWPORT)
            contexts.append(ctx)
            pg = ctx.new_page()
            goto_app(pg, stack + student_link, selector=".st-key-board_text input")
            wait_idle(pg)
            sense, sentence = sentences_of(i)[0]
            send(pg, sense, sentence)
            sent.append(sentence)
            replicas.setdefault(_replica_serving(ctx), []).append(pg)
            if len(replicas) == 2 and min(len(v) for v in replicas.values()) >= 2:
                break
        assert len(replicas) == 2, f"{len(sent)} browsers, all on one replica"
        n = len(sent)
        teacher.wait_for_selector(f"text=Waiting for you ({n})", timeout=60_000)  # refreshes by itself
        text = main_text(teacher)
        assert all(s in text for s in sent)
        teacher.locator("[class*='st-key-board_accept_'] button").click()
        teacher.wait_for_selector(f"text={n} on the board", timeout=60_000)  # moderating: the count, no charts
        pages = [pg for ctx in contexts for pg in ctx.pages]
        assert not any(exceptions(pg) for pg in pages)
        print(
            f"\n{n} students over two replicas ({', '.join(str(len(v)) for v in replicas.values())}) on one board"
        )

        # both replicas restart; PostgreSQL keeps the board
        docker("restart", "-t", "10", f"{STACK}-app1", f"{STACK}-app2")
        for k in (1, 2):
            wait_healthy(f"{STACK}-app{k}")
        with explained(teacher, f"{STACK}-nginx", f"{STACK}-app1", f"{STACK}-app2"):
            goto_app(teacher, stack + teacher_link, selector=f"text=On the board ({n})")
            teacher.wait_for_function(
                """(n) => { const g = document.querySelector('.st-key-board_projection .js-plotly-plot');
                    return g && Array.isArray(g.data) && g.data.reduce((k, t) => k + (t.x ? t.x.length : 0), 0) === n; }""",
                arg=n,
                timeout=LOAD_MS,
            )
        assert not exceptions(teacher)
        # and in PostgreSQL, as typed
        code = student_link.split("room=")[1]
        stored = docker(
            "exec", f"{STACK}-app2", "python", "-c",
            "import os, sys; from lib import board as lb; s = lb.BoardStore(os.environ['CONTEXT_LENS_DB']); "
            "print('\\n'.join(e.sentence for e in s.accepted(sys.argv[1])))", code,
        ).splitlines()  # fmt: skip
        assert sorted(stored) == sorted(sent)
        # a wrong code through nginx counts against the address nginx saw, never one the browser made up
        forged = browser.new_context(viewport=PHONE_VIEWPORT,
                                     extra_http_headers={"X-Real-IP": "203.0.113.9", "X-Forwarded-For": "203.0.113.8"})  # fmt: skip
        contexts.append(forged)
        pg = forged.new_page()
        goto_app(pg, stack + "/board?room=ZZZZZZ", selector="[data-testid='stAlertContentError']")
        counted = docker(
            "exec", f"{STACK}-app1", "python", "-c",
            "import os; import sqlalchemy as sa; from lib import board as lb; s = lb.BoardStore(os.environ['CONTEXT_LENS_DB']); "
            "c = s.engine.connect(); print(' '.join(c.execute(sa.select(lb.guesses.c.client)).scalars()))",
        ).split()  # fmt: skip
        assert counted and not set(counted) & {"203.0.113.9", "203.0.113.8", lb.LOOPBACK}, counted
        # a request that goes around nginx (from another container on the internal network) names no address:
        # 120 page loads without a cookie, each with another X-Real-IP, share one allowance of new cookies
        got = docker(
            "exec", f"{STACK}-app2", "python", "-c", AROUND_THE_PROXY, "http://app1:8501/board",
        ).split()  # fmt: skip
        issued = int(got[0])
        assert issued < 120 and issued <= NEW_COOKIES_BURST + 2, got
        # every answer through nginx sends no Referer onwards, once
        for path in (student_link, "/static/"):  # a page, and nginx's own answer (403: no listing)
            try:
                with urllib.request.urlopen(stack + path, timeout=30) as r:
                    headers = r.headers
            except urllib.error.HTTPError as err:
                headers = err.headers
            assert headers.get_all("Referrer-Policy") == ["no-referrer"], (path, headers.items())
    finally:
        for ctx in contexts:
            ctx.close()
