"""The Fine-tune page in a real browser, on a 390-px phone and a 1280 × 720 projector: the default task (real
sentences) trains with its epochs shown as they come and then the charts; nothing is cut or scrolls sideways; Stop
stops a run; the fine-tuned model opens on Layer by layer from its link, without the sentences it was fitted to.

Run:  python -m pytest tests/browser/test_browser_finetune.py -q
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser._browser import (
    JS_CUT_TEXT,
    SCREENS,
    exceptions,
    screenshot,
    wait_chart_count,
    wait_charts,
    wait_idle,
    wait_sized,
)
from tests.browser.test_browser_controls import chart_titles
from tests.browser.test_browser_screens import JS_LAYOUT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHARTS = 8  # loss, accuracy, layer change, held-out readout, anisotropy, same-minus-different, two maps
PROGRESS = "[data-testid='stProgress']"


def _ready(pg) -> None:
    """Wait until the page has drawn its Train button (on a cold server the model loads first)."""
    wait_idle(pg)
    pg.get_by_role("button", name="Train", exact=True).wait_for(timeout=300_000)


def _main_text(pg) -> str:
    return pg.locator("[data-testid='stMain']").inner_text()


@pytest.mark.parametrize("screen", list(SCREENS))
def test_train_shows_progress_then_charts_that_fit(page, server, shots_dir, screen):
    page.set_viewport_size(SCREENS[screen])
    # a seed of its own per screen: each screen watches a run of its own train, not a cached one
    seed = {"phone": 11, "projector": 12}[screen]
    page.goto(server + f"/finetune?preset=bank&ft_data=set&ft_seed={seed}&ft_epochs=20")
    _ready(page)
    assert not exceptions(page), exceptions(page)
    assert "Fine-tune it yourself" in _main_text(page)
    screenshot(page, shots_dir, f"finetune-{screen}-ready")
    page.get_by_role("button", name="Train", exact=True).click()
    page.wait_for_selector(PROGRESS, timeout=120_000)  # a bar at once, then the epochs with both losses
    page.wait_for_function(
        f"() => (document.querySelector(\"{PROGRESS}\") || {{}}).innerText?.includes('validation loss')",
        timeout=120_000,
    )
    progress = page.locator(PROGRESS).inner_text()
    assert re.search(r"Epoch \d+ of 20: training loss \d\.\d{3}, validation loss \d\.\d{3}", progress), progress
    wait_chart_count(page, CHARTS, timeout_ms=300_000)
    wait_sized(page)  # plotly's responsive resize after the first draw
    assert not exceptions(page), exceptions(page)
    text = _main_text(page)
    assert "Train " in text and "validation " in text and "Weights changed in: L5, L6" in text
    layout = page.evaluate(JS_LAYOUT)
    assert layout["pageScroll"] <= 0 and layout["mainScroll"] <= 0, f"the page scrolls sideways: {layout}"
    cut = page.evaluate(JS_CUT_TEXT)
    assert not cut, f"chart text cut at a chart's edge or overlapping: {cut}"
    screenshot(page, shots_dir, f"finetune-{screen}-trained")
    assert parse_qs(urlparse(page.url).query).get("ft_train") == ["1"]
    assert not page.errors, page.errors


def test_the_default_task_trains_on_real_sentences(page, server, shots_dir):
    from lib.finetune.default_task import WORD, task_preset

    if task_preset() is None:
        pytest.skip("CoarseWSD-20 is not beside the checkout")
    page.set_viewport_size(SCREENS["projector"])
    page.goto(server + "/finetune")
    _ready(page)
    assert f"'{WORD}' sentences" in _main_text(page)
    page.get_by_role("button", name="Train", exact=True).click()
    page.wait_for_selector(PROGRESS, timeout=120_000)
    wait_chart_count(page, CHARTS, timeout_ms=600_000)
    page.get_by_text("The frozen head on the same split scores").first.wait_for(timeout=60_000)  # the verdict's text
    assert not exceptions(page), exceptions(page)
    text = _main_text(page)
    assert "The frozen head on the same split scores" in text and "test sentences, scored once" in text
    assert parse_qs(urlparse(page.url).query).get("ft_data") == ["wsd"]
    cut = page.evaluate(JS_CUT_TEXT)
    assert not cut, f"chart text cut at a chart's edge or overlapping: {cut}"
    screenshot(page, shots_dir, "finetune-default-task")


def test_stop_ends_a_run_before_its_charts(page, server, shots_dir):
    page.set_viewport_size(SCREENS["projector"])
    page.goto(server + "/finetune?preset=bank&ft_data=set&ft_method=full&ft_epochs=200&ft_seed=13")
    _ready(page)
    page.get_by_role("button", name="Train", exact=True).click()
    page.wait_for_selector(PROGRESS, timeout=120_000)
    page.get_by_role("button", name="Stop").click()
    page.get_by_text("Training stopped").wait_for(timeout=120_000)
    wait_idle(page)
    assert not exceptions(page), exceptions(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 0
    assert page.locator(PROGRESS).count() == 0
    assert "ft_train" not in parse_qs(urlparse(page.url).query)
    screenshot(page, shots_dir, "finetune-stopped")


def test_the_fine_tuned_model_opens_on_layer_by_layer_from_its_link(page, server, shots_dir):
    page.set_viewport_size(SCREENS["projector"])
    page.goto(server + "/finetune?preset=bank&ft_data=set&ft_epochs=5&ft_seed=14&ft_train=1")
    wait_chart_count(page, CHARTS, timeout_ms=300_000)
    page.get_by_role("button", name="Open the fine-tuned model on every page").click()
    page.wait_for_function("() => location.search.includes('finetuned=')", timeout=60_000)
    recipe = parse_qs(urlparse(page.url).query)["finetuned"][0]
    page.goto(server + f"/layers?preset=bank&finetuned={recipe}")
    wait_charts(page)
    assert not exceptions(page), exceptions(page)
    name = "fine-tuned on 6 of the 12 'bank' sentences (left out here), top 2 layers, 5 epochs, seed 14"
    titles = [re.sub(r"\s+", "", t) for t in chart_titles(page)]  # line breaks (<br>) are gone from the text
    assert titles and all(name.replace(" ", "") in t for t in titles), titles
    assert parse_qs(urlparse(page.url).query).get("finetuned") == [recipe]
    cut = page.evaluate(JS_CUT_TEXT)  # the model's long name breaks titles into lines: none may run off the chart
    assert not cut, f"chart text cut at a chart's edge or overlapping: {cut}"
    screenshot(page, shots_dir, "finetune-layers-from-link")
    assert not page.errors, page.errors
