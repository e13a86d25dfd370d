"""Every page in a real browser, as a teacher uses it on a 1280 x 720 projector in presenter mode: it loads, raises
nothing, draws its charts, fits the screen and passes axe (tests/browser/test_browser_screens.py's checks, which
test the phone there), reacts to a control (the sidebar's preset with the sidebar opened, presenter mode starts with
it closed), and saves a file that opens offline with the same charts (tests/browser/test_browser_export.py's
helpers).

Run:  python -m pytest tests/browser -q  (skips with install hints without Chromium/Playwright; CI=true fails)
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser._browser import (
    CHANGE_MS,
    chart_pages,
    chart_summary,
    exceptions,
    open_on,
    page_url,
    screenshot,
    wait_changed,
    wait_charts,
    wait_idle,
)
from tests.browser.test_browser_export import saved_opens_offline_and_reopens
from tests.browser.test_browser_screens import check_screen

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = chart_pages()  # the class board charts once a board is open: tests/browser/test_browser_board.py

# How to change one control on each page (default: the preset in the sidebar, which every page that
# works on the shared sentence set redraws). ("preset", option) | ("toggle", label) |
# ("slider", label) | ("select", label, option text)
CONTROLS: dict[str, tuple[str, ...]] = {
    "attention": ("slider", "Head"),
    "calculator": ("toggle", "Causal mask"),
    "lesson": ("select", "Step", "2."),
}
DEFAULT_CONTROL = ("preset", "bat: animal, sports")
# The saved file's link is opened again in a new tab on the pages whose control is their own, and on the start
# page for the preset: that a link carries each page's controls and the shared set back into a new session, every
# page and key, is tests/test_links.py's (AppTest); on the other preset pages the link is checked to carry the
# preset, which saves a page load each (~5 s of Chromium's CPU here).
REOPEN = {"home", "attention", "calculator", "lesson"}
JS_SIDEBAR_OPEN = """() => { const s = document.querySelector('[data-testid="stSidebar"]');
    const r = s && s.getBoundingClientRect(); return !!r && r.width > 100 && r.left >= 0; }"""


def change_control(pg, control: tuple[str, ...]) -> None:
    kind = control[0]
    main = pg.locator("[data-testid='stMain']")
    if kind == "preset":
        opener = pg.locator("[data-testid='stExpandSidebarButton']")
        if opener.is_visible():  # presenter mode starts with the sidebar closed: open it, wait until it is in
            opener.click()
            pg.wait_for_function(JS_SIDEBAR_OPEN, timeout=CHANGE_MS)
        option = pg.get_by_role("option", name=control[1])
        for attempt in range(3):  # a click while the sidebar still slides in can miss the list (a busy machine)
            pg.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
            try:
                option.wait_for(timeout=10_000)
                break
            except Exception:
                if attempt == 2:
                    raise
                pg.keyboard.press("Escape")
        option.click()
    elif kind == "toggle":
        main.locator("[data-testid='stCheckbox']").filter(has_text=control[1]).first.locator("label").click()
    elif kind == "slider":
        thumb = (
            main.locator("[data-testid='stSlider']").filter(has_text=control[1]).first.get_by_role("slider")
        )
        thumb.focus()
        thumb.press("ArrowRight")
    elif kind == "select":
        main.locator("[data-testid='stSelectbox']").filter(has_text=control[1]).first.click()
        pg.get_by_role("option").filter(has_text=control[2]).first.click()
    else:  # pragma: no cover
        raise ValueError(kind)


@pytest.mark.parametrize("path,title,default", PAGES, ids=[Path(p).stem for p, _, _ in PAGES])
def test_page_draws_saves_a_file_that_opens_offline_and_reacts(page, server, browser_context, shots_dir, path, title,
                                                                default):  # fmt: skip
    """Each page in one tab on the projector: it loads and draws and fits the screen; a control redraws a chart;
    then "Download this page" saves a file that opens with the network cut and shows the page's charts, and whose
    link reopens that view (the control's new value and presenter mode too) in a new session."""
    stem = Path(path).stem
    open_on(page, "projector", page_url(server, path, default))
    before = wait_charts(page)
    assert not exceptions(page), exceptions(page)
    assert before, f"{title}: no plotly chart on the page"
    first = chart_summary(before[0])
    assert first["traces"] > 0, f"{title}: the main chart has no data"
    assert page.locator("h1").first.is_visible()
    check_screen(page, "projector", title, shots_dir, stem)

    control = CONTROLS.get(stem, DEFAULT_CONTROL)
    change_control(page, control)
    after = wait_changed(page, before)
    assert not exceptions(page), exceptions(page)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b]
    assert changed or len(after) != len(before), f"{title}: no chart changed after {control}"
    screenshot(page, shots_dir, f"{stem}-2-after-{control[0]}")
    assert not page.errors, page.errors  # no JavaScript errors either

    link = saved_opens_offline_and_reopens(
        page, browser_context, page_url(server, path, default), title, after, reopen=stem in REOPEN
    )
    query = parse_qs(urlsplit(link).query)
    assert query.get("presenter") == ["1"], link
    if control[0] == "preset":
        assert query.get("preset") == ["bat"], link


def test_every_listed_page_is_in_the_navigation(page, server):
    page.goto(server + "/")
    wait_idle(page)
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    for _path, title, _default in PAGES:
        assert title in nav
