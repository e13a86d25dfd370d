"""Real-browser fixtures: the session's Streamlit servers (one per entry and environment) and one headless Debian
Chromium.

Under CI=true a missing Chromium or Playwright fails the tests; elsewhere they are skipped with a reason
that says how to install them. Screenshots go to one temporary folder per run; their paths are printed at the end (tests/conftest.py).
Helpers live in tests/browser/_browser.py (also used by benchmarks/bench.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, ServerPool, outside_request, require_browser
from tests.conftest import SHOTS_ENV


@pytest.fixture(scope="session")
def servers():
    """The worker's Streamlit servers, one per entry and environment (``servers.get(env={...})``, ``servers.get(
    "app.py")``), each started on first use and stopped at the end of the session (tests/browser/_browser.py)."""
    require_browser()
    pool = ServerPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def server(servers):
    """Base URL of the session's default server (``streamlit run serve.py``, as the README and the image start it)."""
    return servers.get()


@pytest.fixture(scope="session")
def browser_context(chromium):
    """The session's browser tab group: a fresh profile in the session's one headless Chromium, 1400 x 1000.

    Every request its tabs make for anything but this machine is recorded in ``outside`` (the app asks nothing of
    the internet: a hosted copy may have no way out); the ``page`` fixture fails a test whose tab made one."""
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000})
    ctx.outside = []  # type: ignore[attr-defined]
    ctx.on("request", lambda r: ctx.outside.append(r.url) if outside_request(r.url) else None)  # type: ignore[attr-defined]
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture(scope="session")
def chromium(playwright_driver):
    """The session's one headless Chromium; its contexts are separate people's browsers (their own cookies and
    headers): the class board knows a student by a cookie, so each student needs a context of their own."""
    require_browser()
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def page(browser_context):
    """A new tab (a new Streamlit session) per test; page errors are collected in page.errors; a request the
    tab made for anything but this machine fails the test."""
    before = len(browser_context.outside)
    pg = browser_context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda err: pg.errors.append(str(err)))  # type: ignore[attr-defined]
    yield pg
    pg.close()
    asked = browser_context.outside[before:]
    assert not asked, f"the page asked the internet for {asked[:5]}: every request must go to its own server"


@pytest.fixture(scope="session")
def shots_dir() -> Path:
    """The run's screenshot folder (made in tests/conftest.py, shared by pytest-xdist's workers)."""
    folder = Path(os.environ.get(SHOTS_ENV) or tempfile.mkdtemp(prefix="context-lens-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
