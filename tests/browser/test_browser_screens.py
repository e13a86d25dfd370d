"""Every page on a 390 x 844 phone and on a 1280 x 720 projector (presenter mode), in a real browser: the phone
here, the projector on the first load of tests/browser/test_browser_pages.py's sweep (one page load fewer a page).

Checked on each page (:func:`check_screen`): no horizontal scrolling; on the phone the sidebar starts closed (it
does not cover the page); on the projector the page's main chart starts in the upper half of the first screen (top < 360 px of
720: presenter mode's compact title, introduction and controls, ui.style.PRESENTER_CSS); no chart's text is cut at the
chart's edge or runs into another title (JS_CUT_TEXT); and axe-core's WCAG 2 A/AA rules find no violation. A screenshot of each is saved (paths printed at the end of the run).

axe-core comes from npm (pinned in AXE_VERSION); `.ci/run` installs it with
    npm install --prefix tests/browser/.axe axe-core@<AXE_VERSION>
Without it these tests skip with that command (and fail under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.teaching.lesson import STEP_IDS
from tests.browser._browser import (
    JS_CUT_TEXT,
    LOAD_MS,
    ROOT,
    chart_pages,
    exceptions,
    on_ci,
    open_on,
    page_url,
    screenshot,
    wait_charts,
    wait_sized,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE_VERSION = "4.14.1"
AXE_JS = ROOT / "tests" / "browser" / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PAGES = chart_pages()  # the class board charts once a board is open: tests/browser/test_browser_board.py

JS_LAYOUT = """() => {
    const de = document.documentElement;
    const main = document.querySelector('[data-testid="stMain"]');
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const chart = document.querySelector('[data-testid="stMain"] [data-testid="stPlotlyChart"]');
    const r = sidebar ? sidebar.getBoundingClientRect() : null;
    return {
        pageScroll: de.scrollWidth - de.clientWidth,
        mainScroll: main ? main.scrollWidth - main.clientWidth : 0,
        sidebarVisible: r !== null && r.right > 1 && r.width > 1,
        chartTop: chart ? chart.getBoundingClientRect().top : null,
        viewportHeight: window.innerHeight,
    };
}"""
# Every visible control has an element that Tab reaches (a select's input, the checked radio of a group,
# a slider's thumb, ...), unless the whole control is disabled.
JS_KEYBOARD = """() => {
  const widgets = ['stSelectbox', 'stRadio', 'stSlider', 'stNumberInput', 'stTextInput', 'stTextArea', 'stButton',
    'stDownloadButton', 'stCheckbox', 'stToggle', 'stExpander', 'stFileUploader', 'stMultiSelect', 'stSelectSlider',
    'stDataFrame', 'stBaseButton-headerNoPadding', 'stExpandSidebarButton'];
  const tabbable = 'button, input, textarea, select, summary, a[href], [tabindex]';
  const out = []; let checked = 0;
  for (const id of widgets) {
    for (const w of document.querySelectorAll(`[data-testid="${id}"]`)) {
      const r = w.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      checked += 1;
      const els = [w, ...w.querySelectorAll(tabbable)];
      if (!els.some(e => e.tabIndex >= 0 && !e.disabled && e.getAttribute('aria-disabled') !== 'true')
          && !els.some(e => e.disabled || e.getAttribute('aria-disabled') === 'true'))
        out.push(id + ': ' + w.innerText.slice(0, 40));
    }
  }
  return {checked, unreachable: out};
}"""
JS_AXE = """async (tags) => {
    const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
    return result.violations.map(v => ({
        rule: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
    }));
}"""


def axe_source() -> str:
    if not AXE_JS.exists():
        hint = f"npm install --prefix tests/browser/.axe axe-core@{AXE_VERSION}"
        if on_ci():
            pytest.fail(f"CI=true but axe-core is missing: {hint}")
        pytest.skip(f"axe-core is not installed: {hint}")
    return AXE_JS.read_text(encoding="utf-8")


def axe_violations(pg) -> list[dict]:
    pg.add_script_tag(content=axe_source())
    return pg.evaluate(JS_AXE, AXE_TAGS)


@pytest.mark.parametrize("path,title,default", PAGES, ids=[Path(p).stem for p, _, _ in PAGES])
def test_page_fits_a_phone_and_passes_axe(page, server, shots_dir, path, title, default):
    """The phone here; the projector on the first load of tests/browser/test_browser_pages.py's sweep, which opens
    every page in presenter mode on the projector's screen and calls :func:`check_screen` before working it."""
    open_on(page, "phone", page_url(server, path, default))
    wait_charts(page)
    check_screen(page, "phone", title, shots_dir, Path(path).stem)


def check_screen(page, screen: str, title: str, shots_dir: Path, stem: str) -> None:
    """The checks of a page opened on ``screen`` (:func:`open_on`) whose charts are drawn: no sideways scroll; on
    the phone no sidebar over the page, on the projector the main chart in the screen's upper half; no chart text
    cut or overlapping; every control reachable by Tab; axe-core's WCAG rules; no JavaScript error."""
    wait_sized(page)  # plotly's responsive resize after the first draw
    assert not exceptions(page), exceptions(page)
    layout = page.evaluate(JS_LAYOUT)
    screenshot(page, shots_dir, f"{stem}-{screen}")

    assert layout["pageScroll"] <= 0 and layout["mainScroll"] <= 0, f"{title} scrolls sideways: {layout}"
    if screen == "phone":
        assert not layout["sidebarVisible"], f"{title}: the sidebar covers the page on a phone"
    else:
        assert layout["chartTop"] is not None, f"{title}: no chart"
        assert layout["chartTop"] < layout["viewportHeight"] / 2, (
            f"{title}: the main chart starts at y = {layout['chartTop']:.0f} px, below the upper half of the "
            f"{layout['viewportHeight']}-px screen"
        )
    cut = page.evaluate(JS_CUT_TEXT)
    assert not cut, f"{title} ({screen}): chart text cut at a chart's edge or overlapping: {cut}"
    keyboard = page.evaluate(JS_KEYBOARD)
    assert keyboard["checked"] > 0 and not keyboard["unreachable"], f"{title}: not reachable by Tab: {keyboard}"
    if screen == "phone":  # a second picture with the main chart in view
        page.locator("[data-testid='stMain'] [data-testid='stPlotlyChart']").first.scroll_into_view_if_needed()
        screenshot(page, shots_dir, f"{stem}-{screen}-chart")
    violations = axe_violations(page)
    assert not violations, f"{title} ({screen}): axe-core found {violations}"
    assert not page.errors, page.errors


def test_every_lesson_chart_fits_a_phone(page, server):
    """Each question step's charts on a 390-px phone: no text cut at a chart's edge, no titles running into each
    other (the default view of each page is checked above; the lesson's steps are not on it). One tab walks the
    steps with Next, as a learner does: a rerun a step, not a new session."""
    from lib.teaching import lesson

    assert lesson.STEP_IDS[-1] == "summary"
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server}/lesson?lesson_step=1")
    for step in range(1, len(STEP_IDS)):  # every step but the summary
        if step > 1:
            page.locator(".st-key-lesson_next button").click()
        page.get_by_role("heading", name=f"Step {step} of {len(STEP_IDS)}:").wait_for(timeout=LOAD_MS)
        wait_charts(page)
        wait_sized(page)
        assert not exceptions(page), (step, exceptions(page))
        cut = page.evaluate(JS_CUT_TEXT)
        assert not cut, f"lesson step {step} ({lesson.STEP_IDS[step - 1]}): chart text cut or overlapping: {cut}"
