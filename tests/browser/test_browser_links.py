"""Shared links in a real browser: a teacher copies the address bar, the class opens the same view."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlparse

import pytest

from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import pack_text
from tests.browser._browser import exceptions, screenshot, wait_charts, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def sidebar(pg):
    return pg.locator("[data-testid='stSidebar']")


def preset_shown(pg) -> str:
    # streamlit 1.67's selectbox is a react-aria combobox: the chosen option is the input's value
    return sidebar(pg).locator("[data-testid='stSelectbox']").first.get_by_role("combobox").input_value()


def test_preset_link_opens_that_preset(page, server, shots_dir):
    bat = preset_by_id("bat")
    page.goto(server + "/?preset=bat")
    data = wait_charts(page)
    assert not exceptions(page)
    assert bat.title in preset_shown(page)
    assert sidebar(page).get_by_role("textbox", name="Target word", exact=True).input_value() == "bat"
    text = sidebar(page).get_by_role("textbox", name="Sentences, one per line", exact=True).input_value()
    assert text == bat.text
    assert f"{len(bat.rows)} sentences with “bat”" in sidebar(page).inner_text()
    # the home page's heatmap is drawn from the bat sentences
    assert bat.rows[0][1][:20] in data[0]
    assert parse_qs(urlparse(page.url).query).get("preset") == ["bat"]
    screenshot(page, shots_dir, "link-preset-bat")


def test_link_with_twenty_custom_sentences_opens_that_set(page, server, shots_dir):
    senses = ["river", "money"]
    lines = [
        f"{senses[k % 2]} | "
        + (
            f"Sentence {k + 1}: we walked along the muddy bank of stream number {k + 1}."
            if k % 2 == 0
            else f"Sentence {k + 1}: the bank charged fee number {k + 1} on the account."
        )
        for k in range(20)
    ]
    text = "\n".join(lines)
    page.goto(f"{server}/?target=bank&text={quote(pack_text(text))}")
    data = wait_charts(page)
    assert not exceptions(page)
    assert "Your own sentences" in preset_shown(page)
    assert sidebar(page).get_by_role("textbox", name="Target word", exact=True).input_value() == "bank"
    assert (
        sidebar(page).get_by_role("textbox", name="Sentences, one per line", exact=True).input_value() == text
    )
    assert "20 sentences with “bank”" in sidebar(page).inner_text()
    assert "Sentence 19" in data[0] and "Sentence 20" in data[0]  # the chart is drawn from the linked set
    # the app writes the same set back into the address bar, so the link can be passed on
    q = parse_qs(urlparse(page.url).query)
    assert q.get("target") == ["bank"] and q.get("text")
    screenshot(page, shots_dir, "link-custom-20")


def test_garbled_link_shows_a_message_and_the_default(page, server):
    page.goto(server + "/?target=bank&text=%25%25garbled%25%25")
    wait_idle(page)
    assert not exceptions(page)
    assert "garbled" in sidebar(page).inner_text()
    assert preset_by_id("bank").title in preset_shown(page)


def test_layer_link_sets_the_page_control(page, server):
    page.goto(server + "/attention?preset=bat&attn_layer=4&attn_head=7")
    wait_charts(page)
    assert not exceptions(page)
    assert "Layer 4, head 7" in page.locator("[data-testid='stMain']").inner_text()


def test_html_in_a_sentence_shows_as_text(page, server, shots_dir):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    text = (
        "money | <script>alert(1)</script> The bank <b>bold</b> opened.\n"
        "river | We sat on the <img src=x onerror=alert(2)> river bank."
    )
    page.goto(f"{server}/?target=bank&text={quote(pack_text(text))}")
    wait_charts(page)
    page.wait_for_function("() => Array.from(document.images).every(i => i.complete)")  # an onerror has fired by now
    assert not exceptions(page)
    assert not dialogs, f"user text ran as code: {dialogs}"
    injected = page.evaluate(
        """() => ({
            scripts: Array.from(document.querySelectorAll('script')).filter(s => s.textContent.includes('alert(')).length,
            imgs: document.querySelectorAll('img[src="x"]').length,
            bolds: Array.from(document.querySelectorAll('b')).filter(b => b.textContent === 'bold').length,
            tableText: document.querySelector('[data-testid="stMain"] [data-testid="stTable"]').textContent,
        })"""
    )
    assert injected["scripts"] == 0 and injected["imgs"] == 0 and injected["bolds"] == 0, injected
    # shown literally in the table of sentences under the chart (the chart's rows are S1, S2)
    assert "<script>alert(1)</script>" in injected["tableText"], injected["tableText"]
    screenshot(page, shots_dir, "link-html-as-text")


def test_a_bad_page_parameter_in_a_link_is_explained(page, server):
    # ui.link.url_int records "The link's “attn_head” value is not a whole number" for the sidebar
    page.goto(server + "/attention?preset=bank&attn_head=x")
    wait_charts(page)
    assert not exceptions(page)
    assert "Layer 1, head 1" in page.locator("[data-testid='stMain']").inner_text()  # the default is used
    assert "“attn_head” value is not a whole number" in sidebar(page).inner_text()
