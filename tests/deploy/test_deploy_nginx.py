"""nginx in front of two replicas, started with tools/up.sh as a host would: /static/ from nginx precompressed,
every page charts through it, and a class of 30 browsers each stays on one replica, both replicas used; when
one replica stops mid-class, its students reconnect to the other and get their view back from the link.
"""

from __future__ import annotations

import os
import re
import time
import urllib.request

import pytest

from benchmarks.browser_bench import student_link
from tests.browser._browser import (
    JS_CHART_DATA,
    JS_CHARTS_DRAWN,
    JS_IDLE,
    chart_pages,
    exceptions,
    goto_app,
    page_url,
    wait_charts,
)
from tests.conftest import wait_until
from tests.deploy._docker import (
    PREFIX,
    docker,
    inspect,
    logs,
    nginx_routes,
    oom_and_restarts,
    process_stats,
    running_stack,
)

PORT = 8642
STACK = f"{PREFIX}-stack"
CLASS_SIZE = 30
# drawn charts, or a traceback on the page (then the test fails at once, naming it, instead of waiting)
JS_CHARTS_OR_ERROR = (
    "() => document.querySelector(\"[data-testid='stException']\") !== null || (" + JS_CHARTS_DRAWN + ")()"
)
CLASS_MS = 900_000  # a class of 30 on two shared cores, their 30 browsers included


@pytest.fixture(scope="module")
def stack(images):
    with running_stack(STACK, PORT) as base:
        yield base


def _replica_of_addr() -> dict[str, str]:
    """upstream address (ip:8501) -> replica name, from Docker's view of the internal network."""
    out = {}
    for n in (1, 2):
        nets = inspect(f"{STACK}-app{n}")["NetworkSettings"]["Networks"]
        out[f"{nets[f'{STACK}-back']['IPAddress']}:8501"] = f"app{n}"
    return out


def _routes() -> dict[str, list[tuple[str, str]]]:
    return nginx_routes(f"{STACK}-nginx")


def test_static_files_come_from_nginx_precompressed(stack):
    with urllib.request.urlopen(stack + "/", timeout=30) as r:
        html = r.read().decode()
        cookie = r.headers.get("Set-Cookie", "")
    assert cookie.startswith("cl_replica=") and "HttpOnly" in cookie
    js = re.search(r'src="\.?/?(static/js/[^"]+\.js)"', html)
    assert js, html[:500]
    req = urllib.request.Request(f"{stack}/{js.group(1)}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.headers["Content-Encoding"] == "gzip"
        assert "immutable" in r.headers["Cache-Control"]
        body = r.read()
    # the very file nginx's image precompressed at build time
    size = docker("exec", f"{STACK}-nginx", "stat", "-c", "%s", f"/srv/streamlit-static/{js.group(1)[7:]}.gz")
    assert len(body) == int(size)

    def logged() -> list[str]:  # nginx writes a request's log line once it has answered it
        return [ln for ln in logs(f"{STACK}-nginx").splitlines() if f'"/{js.group(1)}"' in ln]

    assert wait_until(logged, timeout=30, step=0.5), "nginx logged no request for the script"
    static_lines = logged()
    assert static_lines and all(ln.endswith("upstream=-") for ln in static_lines), static_lines


def test_every_page_charts_through_nginx(stack, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = ctx.new_page()
        for path, title, default in chart_pages():
            goto_app(pg, page_url(stack, path, default))  # a first load that never draws gets one reload
            assert wait_charts(pg), title
            assert not exceptions(pg), (title, exceptions(pg))
        route = next(c["value"] for c in ctx.cookies() if c["name"] == "cl_replica")
    finally:
        ctx.close()
    upstreams = {u for _, u in _routes()[route]}
    assert len(upstreams) == 1, upstreams


def _wait(pg, js: str, arg=None, timeout: int = CLASS_MS) -> None:
    pg.wait_for_function(js, arg=arg, timeout=timeout, polling=250)


def _go_to(students: list[dict], label: str, stem: str) -> None:
    """Each student clicks the page ``label`` in the sidebar; then each one's page must chart, with no traceback."""
    for s in students:
        # a busy replica (15 students reconnecting to it at once) can take over Playwright's 30-s default to answer
        s["pg"].locator("[data-testid='stSidebarNav'] a", has_text=label).first.click(timeout=CLASS_MS)
    for s in students:
        _wait(s["pg"], f"() => location.pathname.endsWith('/{stem}')")
        _wait(s["pg"], JS_CHARTS_OR_ERROR)
        _wait(s["pg"], JS_IDLE)
        assert not exceptions(s["pg"]), (s["k"], exceptions(s["pg"]))


@pytest.mark.timeout(2400)  # 30 browsers on a shared two-core machine
def test_a_class_of_30_over_two_replicas_and_one_replica_stopped(stack, browser):
    addr = _replica_of_addr()
    before = {n: process_stats(f"{STACK}-app{n}") for n in (1, 2)}
    students = []
    t0 = time.monotonic()
    for k in range(CLASS_SIZE):
        ctx = browser.new_context(viewport={"width": 1200, "height": 900})
        pg = ctx.new_page()
        pg.goto(student_link(stack, 2000 + k), wait_until="commit")
        students.append({"k": k, "ctx": ctx, "pg": pg})
    try:
        for s in students:  # every student's first chart
            _wait(s["pg"], JS_CHARTS_OR_ERROR)
            assert not exceptions(s["pg"]), (s["k"], exceptions(s["pg"]))
        first_chart_s = time.monotonic() - t0
        for s in students:
            _wait(s["pg"], JS_IDLE)
        # then each goes to Attention (a rerun over the same websocket)
        _go_to(students, "Attention", "attention")
        for s in students:
            s["view"] = s["pg"].evaluate(JS_CHART_DATA)
            s["url"] = s["pg"].url
        class_s = time.monotonic() - t0
        after = {n: process_stats(f"{STACK}-app{n}") for n in (1, 2)}

        # each browser's requests (page, health, websocket) all reached one replica; both replicas were used
        routes = _routes()
        for s in students:
            s["route"] = next(c["value"] for c in s["ctx"].cookies() if c["name"] == "cl_replica")
            ups = {u for _, u in routes[s["route"]]}
            assert len(ups) == 1 and next(iter(ups)) in addr, (s["k"], ups)
            s["replica"] = addr[next(iter(ups))]
        per = {n: sum(s["replica"] == f"app{n}" for s in students) for n in (1, 2)}
        print(f"\nclass of {CLASS_SIZE} through nginx: all charted after {first_chart_s:.0f} s, Attention after "
              f"{class_s:.0f} s; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        for n in (1, 2):
            print(f"  app{n}: {per[n]} students, server CPU {after[n]['cpu_s'] - before[n]['cpu_s']:.1f} s, "
                  f"peak RSS {after[n]['peak_rss_mb']:.0f} MB")  # fmt: skip
        assert per[1] > 0 and per[2] > 0, per

        # one replica stops mid-class
        docker("stop", "-t", "10", f"{STACK}-app1")
        stayed = [s for s in students if s["replica"] == "app2"]
        moved = [s for s in students if s["replica"] == "app1"]
        _go_to(stayed, "Layer by layer", "layers")  # students on app2 keep working: another page, its charts
        t_stop = time.monotonic()
        app2 = next(a for a, r in addr.items() if r == "app2")
        for s in moved:  # students on app1 reconnect to app2 and get their view back from the link
            # nginx logs a websocket when it closes, so an open one to app2 is not in the log yet; the front end
            # asks /_stcore/health and /_stcore/host-config before it reconnects, and those are logged at once.
            deadline = time.monotonic() + CLASS_MS / 1000
            while app2 not in {u for p, u in _routes()[s["route"]] if p == "/_stcore/health"}:
                assert time.monotonic() < deadline, f"student {s['k']} never reconnected"
                time.sleep(1)
            _wait(s["pg"], JS_CHARTS_OR_ERROR)
            _wait(s["pg"], JS_IDLE)
            assert s["pg"].url == s["url"]
            assert s["pg"].evaluate(JS_CHART_DATA) == s["view"], s["k"]
            assert not exceptions(s["pg"]), (s["k"], exceptions(s["pg"]))
        _go_to(moved, "Layer by layer", "layers")  # and app2 now serves them: another page, its charts
        print(f"  app1 stopped: {len(stayed)} students on app2 kept working; {len(moved)} reconnected to app2 "
              f"with their view and went on within {time.monotonic() - t_stop:.0f} s")  # fmt: skip
        assert oom_and_restarts(f"{STACK}-app2") == (False, 0)
    finally:
        for s in students:
            s["ctx"].close()
