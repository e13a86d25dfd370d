"""Each page's prose on its defaults: at most 600 words, and every glossary term it uses is linked.

What counts as prose and as a word is lib.teaching.wordcount, the one counter (``python tools/prose_words.py``
prints every page's count with it).
"""

from __future__ import annotations

import pytest

from lib.teaching.glossary import PAGE, link_terms, links_to, load_glossary, parse_glossary, uses
from lib.teaching.wordcount import MAX_PROSE_WORDS, count_words, prose_texts, total_words
from tests.browser._browser import chart_pages
from tests.conftest import ROOT, page_test

# every page of app.py but the glossary and the board; Fine-tune draws no chart before Train, but its prose counts
PAGES = [path for path, _title, _default in chart_pages()] + ["pages/finetune.py", "pages/lens.py"]


@pytest.fixture(scope="module")
def pages():
    out = {}
    for page in PAGES:
        at = page_test(page)
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        out[page] = prose_texts(at.main)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_prose_fits_600_words(pages, page):
    n = total_words(pages[page])
    assert n <= MAX_PROSE_WORDS, f"{page}: {n} words of prose on its defaults"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_glossary_term_used_is_linked(pages, page):
    text = "\n".join(pages[page])
    missing = [t.name for t in load_glossary() if uses(text, t) and not links_to(text, t)]
    assert not missing, f"{page} uses {missing} without a link to the glossary"


def test_glossary_entries_and_linking():
    head, terms = parse_glossary((ROOT / "assets" / "glossary.md").read_text(encoding="utf-8"))
    assert "Glossary" in head and len(terms) >= 20
    by = {t.anchor: t for t in terms}
    assert {"probe", "null", "shuffled-weights", "layernorm", "pseudo-inverse", "shrinkage", "entropy"} <= set(by)
    assert all(t.text for t in terms)
    text, linked = link_terms("A probe beats its null; the probe again, `probe` in code.", terms, set())
    assert text.startswith(f"A [probe]({PAGE}#probe) beats its [null]({PAGE}#null); the probe again")
    assert "`probe`" in text and linked == {"probe", "null"}
    again, linked2 = link_terms("Another probe.", terms, linked)
    assert again == "Another probe." and not linked2
    # never inside a link, and a term already linked counts
    text, linked = link_terms("[the probe page](layers#x) and the probe", terms, set())
    assert text == f"[the probe page](layers#x) and the [probe]({PAGE}#probe)"
    assert uses("Ledoit-Wolf shrinkage", by["shrinkage"]) and not uses("shrinkages", by["shrinkage"])


@pytest.mark.slow
def test_the_glossary_page_has_an_entry_with_its_anchor_per_term():
    at = page_test("pages/glossary.py")
    at.run()
    assert not at.exception
    terms = load_glossary()
    heads = {h.value: h.proto.anchor for h in at.subheader}
    assert {t.name: t.anchor for t in terms} == heads
    assert "Format for editors" not in " ".join(m.value for m in at.markdown)


def test_the_word_counter_by_hand():
    assert count_words("The [probe](glossary#probe) reads **0.91**.") == 4
    assert count_words("Pairs: 2,000; S7 → S2 = −0.016, don't") == 6  # symbols alone are not words
    assert count_words("*one* `two` # three") == 3
    assert count_words("") == 0
    assert total_words(["a b", "c"]) == 3


def test_prose_includes_message_boxes():
    class Element:
        def __init__(self, value):
            self.value = value

    class Main:
        def get(self, kind):
            return {"markdown": [Element("one two")], "info": [Element("three")], "table": [Element("x y z")]}.get(
                kind, []
            )

    assert total_words(prose_texts(Main())) == 3  # a table is not prose; an info box is
