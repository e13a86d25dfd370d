""""Download this page" in a real browser: the saved file opens with the network cut and shows the page's charts.

For every page (in tests/browser/test_browser_pages.py's sweep, through :func:`saved_opens_offline_and_reopens`):
press the button, open the downloaded file with every request aborted and counted (none may be made), wait until
every chart is drawn, and compare each chart's data with the page's. Here: the guided lesson's whole-lesson file
holds every step; a hostile sentence set's file runs none of the learner's script.

Run:  python -m pytest tests/browser/test_browser_export.py -q
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from lib.inputs.sentences import pack_text
from lib.teaching import lesson
from tests.browser._browser import (
    JS_CHART_DATA,
    wait_chart_count,
    wait_charts,
    wait_idle,
)
from tests.browser._offline import open_offline
from tests.test_page_export import HOSTILE_SET

pytestmark = [pytest.mark.browser, pytest.mark.slow]



def _traces(data_json: str) -> list[dict]:
    """A chart's traces as plotly holds them, without the ids plotly gives each trace when drawing it."""
    return [{k: v for k, v in t.items() if k != "uid"} for t in json.loads(data_json)]


def _close(a, b, tol: float = 1e-4) -> bool:
    """Equal structure and text, numbers within ``tol`` (a sentence encoded in another batch moves in the 7th digit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) <= tol * max(1.0, abs(a), abs(b))
    return a == b


def download(pg, label: str) -> str:
    button = pg.locator("[data-testid='stDownloadButton']").filter(has_text=label).first
    with pg.expect_download(timeout=300_000) as dl:
        button.click()
    return Path(dl.value.path()).read_text(encoding="utf-8")


def saved_opens_offline_and_reopens(page, context, url: str, title: str, shown: list[str], *,
                                    reopen: bool = True) -> str:  # fmt: skip
    """"Download this page" on ``page`` (at ``url``, showing the charts ``shown``): the file opens with every request
    stopped and none made, draws the same charts, and (``reopen``) its link reopens the same view in a new session
    (a new tab). Returns the file's link. Every page goes through it (tests/browser/test_browser_pages.py)."""
    html = download(page, "Download this page")
    assert len(html.encode()) <= 6_000_000
    saved = open_offline(context, html)
    try:
        assert saved["requests"] == [], saved["requests"]
        assert not saved["errors"], saved["errors"]
        assert saved["charts"] == len(shown), (saved["charts"], len(shown))
        for i, (a, b) in enumerate(zip(shown, saved["data"], strict=True)):
            assert _traces(a) == _traces(b), f"{title}: chart {i + 1} differs from the page's"
        main_text = page.locator("[data-testid='stMain'] h1").first.inner_text().strip()
        assert main_text.split("\n")[0] in saved["text"]
        link = saved["page"].locator("dl.meta a").first.get_attribute("href")
        assert link.startswith(url + "?"), link
        print(f"{title}: {len(html.encode()) / 1e6:.2f} MB, drawn {saved['ms']:.0f} ms after opening")
    finally:
        saved["page"].close()
    if not reopen:
        return link
    # the file's link reopens the same view: the same charts with the same data
    reopened = context.new_page()  # a new tab: a new session, as a student opening the link
    try:
        reopened.goto(link)
        again = wait_chart_count(reopened, len(shown)) if shown else wait_charts(reopened)
        assert len(again) == len(shown)
        for i, (a, b) in enumerate(zip(again, shown, strict=True)):
            assert _close(_traces(a), _traces(b)), f"{title}: chart {i + 1} differs after reopening the file's link"
    finally:
        reopened.close()
    return link


def test_the_lesson_file_holds_every_step(page, server, browser_context):
    page.goto(f"{server}/lesson")
    wait_charts(page)
    page.get_by_role("button", name="Prepare the whole lesson as one file").click()
    page.locator("[data-testid='stDownloadButton']").filter(has_text="Download the whole lesson").wait_for(
        timeout=600_000
    )
    wait_idle(page)
    html = download(page, "Download the whole lesson")
    saved = open_offline(browser_context, html)
    try:
        assert saved["requests"] == [], saved["requests"]
        assert not saved["errors"], saved["errors"]
        n = len(lesson.STEPS)
        for k, step in enumerate(lesson.STEPS, start=1):
            assert f"Step {k} of {n}: {step.title}" in saved["text"]
        assert saved["charts"] >= n - 1
        print(f"lesson (every step): {len(html.encode()) / 1e6:.2f} MB, {saved['charts']} charts, "
              f"drawn {saved['ms']:.0f} ms after opening")  # fmt: skip
        # the page itself still shows one step, and its charts as before
        assert len(page.evaluate(JS_CHART_DATA)) >= 1
    finally:
        saved["page"].close()


def test_a_hostile_set_runs_no_script_of_the_learners(page, server, browser_context):
    text = HOSTILE_SET
    page.goto(f"{server}/?target=bank&text={quote(pack_text(text))}")
    wait_charts(page)
    html = download(page, "Download this page")
    saved = open_offline(browser_context, html)
    pg = saved["page"]
    try:
        assert saved["requests"] == [], saved["requests"]  # an <img src=x> would have asked for x
        assert saved["dialogs"] == []
        for link in pg.locator("a").all():
            assert not (link.get_attribute("href") or "").lower().startswith("javascript")
        assert pg.evaluate("() => window.pwned === undefined")
        assert "<script>window.pwned = 1</script>" in saved["text"]  # shown as typed
        assert pg.locator("script").count() == 3
    finally:
        pg.close()
