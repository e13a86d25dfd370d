"""The controls of "Is it real?" in a real browser: a link with random weights names them in the
chart titles, and Projections says under its map how many neighbours the map keeps.

Run:  python -m pytest tests/browser/test_browser_controls.py -q
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser._browser import exceptions, screenshot, wait_charts

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JS_CHART_TITLES = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
    .map(g => (g.layout && g.layout.title && (g.layout.title.text || g.layout.title)) || '')"""
RANDOM_NOTE = "(random weights, seed 0)"


def chart_titles(pg) -> list[str]:
    """Every chart's title as plain text (plotly's <b> markup removed)."""
    return [re.sub(r"<[^>]+>", "", str(t)) for t in pg.evaluate(JS_CHART_TITLES)]


def test_a_random_weights_link_names_the_weights_in_every_chart_title(page, server, shots_dir):
    # the start page's two heatmaps have no title of their own: the bold heading above each names the
    # weights, once (no second, chart-drawn title under it)
    page.goto(server + "/?preset=bank&weights=random&seed=0")
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    titles = chart_titles(page)
    assert len(titles) == 2 and not any(titles), titles
    headings = page.locator("[data-testid='stMain'] strong").filter(has_text="random weights, seed 0")
    assert headings.count() == 2, headings.all_inner_texts()
    # the link keeps saying so, so it can be passed on
    q = parse_qs(urlparse(page.url).query)
    assert q.get("weights") == ["random"] and q.get("seed") == ["0"]
    screenshot(page, shots_dir, "controls-random-weights-home")
    # a page whose charts have titles: the note is added at the end of the first one
    page.goto(server + "/layers?preset=bank&weights=random&seed=0")
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    titles = chart_titles(page)
    assert titles[0].endswith(RANDOM_NOTE) and "bank" in titles[0], titles[0]
    screenshot(page, shots_dir, "controls-random-weights-layers")
    assert not page.errors, page.errors


def test_a_trained_link_has_no_random_weights_note(page, server):
    page.goto(server + "/?preset=bank")
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    titles = chart_titles(page)
    assert titles and not any("random weights" in t for t in titles), titles


def test_projections_says_under_the_map_how_many_neighbours_it_keeps(page, server, shots_dir):
    page.goto(server + "/projections?preset=bank")
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    main = page.locator("[data-testid='stMain']")
    line = main.get_by_text(re.compile(r"map keeps \d+%"), exact=False).first
    line.wait_for(state="visible")
    text = line.inner_text()
    m = re.search(r"map keeps (\d+)% of each point's (\d+) nearest\s+neighbours", text)
    assert m, text
    kept, k = int(m.group(1)), int(m.group(2))
    chance = re.search(r"random layout would keep about (\d+)%", text)
    assert 0 <= kept <= 100 and k == 5 and chance, text
    # it sits right under the map: below the first chart, above the second
    charts = main.locator("[data-testid='stPlotlyChart']")
    map_box, line_box = charts.first.bounding_box(), line.bounding_box()
    assert map_box and line_box and line_box["y"] >= map_box["y"] + map_box["height"] - 1
    if charts.count() > 1:
        assert line_box["y"] < charts.nth(1).bounding_box()["y"]
    screenshot(page, shots_dir, "controls-projections-neighbours")
    assert not page.errors, page.errors
