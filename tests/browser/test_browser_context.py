"""'What moves the word' in a real browser: the page draws its charts, and a suggested swap redraws the edit
and reaches the address bar."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser._browser import exceptions, screenshot, wait_changed, wait_charts, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_context_page_draws_and_a_swap_redraws_the_edit(page, server, shots_dir):
    page.goto(server + "/context")
    wait_charts(page)
    wait_idle(page)  # the edit section comes after the suggested swaps, which run the model a few times
    before = wait_charts(page)
    assert not exceptions(page), exceptions(page)
    assert len(before) >= 4  # ranked shifts, words x layers, attention vs effect, the edit
    assert page.get_by_role("heading", name="What moves the word").first.is_visible()
    swap = page.locator("[data-testid='stMain'] button").filter(has_text="→").first
    label = swap.inner_text()
    replacement = label.split("→")[1].strip()
    swap.click()
    after = wait_changed(page, before)
    assert not exceptions(page), exceptions(page)
    assert after[-1] != before[-1]  # the edit chart was redrawn
    assert after[0] == before[0]  # the occlusion itself did not change
    page.wait_for_function(
        "(r) => new URLSearchParams(window.location.search).get('ctx_with') === r", arg=replacement
    )
    assert parse_qs(urlparse(page.url).query)["ctx_with"] == [replacement]
    screenshot(page, shots_dir, "context-swap")
    assert not page.errors, page.errors
