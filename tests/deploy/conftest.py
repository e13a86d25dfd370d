"""Deployment fixtures: the images (built once per test session with tools/build_image.sh) and one headless
Chromium. Under CI=true a missing Docker daemon, Chromium or Playwright fails these tests; elsewhere they are
skipped with the reason. Everything they start is removed at the end, and what a killed run left is removed first.
"""

from __future__ import annotations

import pytest

from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, require_browser
from tests.deploy._docker import build_images, remove_stale, require_docker


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/deploy/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.deploy)
            item.add_marker(pytest.mark.slow)  # minutes each: never in the fast tier


@pytest.fixture(scope="session")
def images() -> float:
    """Build (or bring up to date) context-lens and context-lens-nginx; the build's seconds."""
    require_docker()
    require_browser()
    stale = remove_stale()
    if stale:
        print(f"\nremoved what an earlier run left: {', '.join(stale)}")
    seconds = build_images()
    print(f"\ntools/build_image.sh: {seconds:.0f} s")
    return seconds


@pytest.fixture(scope="session")
def browser(images, playwright_driver):
    """One headless Chromium process; each test opens its own contexts (a context is one student's browser)."""
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        yield b
    finally:
        b.close()
