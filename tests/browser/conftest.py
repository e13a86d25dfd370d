"""Real-browser fixtures: one `streamlit run app.py` server per test session, headless Debian Chromium.

Under CI=true a missing Chromium or Playwright fails the tests; elsewhere they are skipped with a reason
that says how to install them. Screenshots go to one temporary folder per run; their paths are printed at the end (tests/conftest.py).
Helpers live in tests/browser/_browser.py (also used by benchmarks/bench.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.browser._browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    require_browser,
    start_server,
    stop_server,
)
from tests.conftest import SHOTS_ENV


@pytest.fixture(scope="session")
def server():
    """Base URL of a Context Lens server started for this test session (stopped at the end)."""
    require_browser()
    proc, base, log = start_server()
    try:
        yield base
    finally:
        stop_server(proc)
        # keep the log only if the server wrote a traceback
        text = Path(log).read_text(errors="replace")
        if "Traceback" in text:
            print(f"\nServer log with a traceback: {log}")
        else:
            Path(log).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def browser_context(playwright_driver):
    """A headless Chromium with a fresh profile (launch_persistent_context in a temp folder)."""
    with tempfile.TemporaryDirectory(prefix="context-lens-profile-") as profile:
        ctx = playwright_driver.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture(scope="session")
def chromium(playwright_driver):
    """A headless Chromium whose contexts are separate people's browsers (their own cookies and headers): the
    class board knows a student by a cookie, so each student needs a context of their own."""
    require_browser()
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def page(browser_context):
    """A new tab (a new Streamlit session) per test; page errors are collected in page.errors."""
    pg = browser_context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda err: pg.errors.append(str(err)))  # type: ignore[attr-defined]
    yield pg
    pg.close()


@pytest.fixture(scope="session")
def shots_dir() -> Path:
    """The run's screenshot folder (made in tests/conftest.py, shared by pytest-xdist's workers)."""
    folder = Path(os.environ.get(SHOTS_ENV) or tempfile.mkdtemp(prefix="context-lens-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
