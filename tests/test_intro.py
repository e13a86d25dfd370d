"""Page introductions live in assets/intro/*.md (course text a lecturer can edit without touching code)."""

from __future__ import annotations

import ast
import re

import pytest

from ui.widgets import INTRO_DIR, intro_text


def test_every_intro_file_is_used_by_a_page_and_every_page_intro_exists(root):
    used = set()
    for page in (root / "pages").glob("*.py"):
        used |= set(re.findall(r'page_intro\(\s*"([a-z_]+)"', page.read_text(encoding="utf-8")))
    files = {p.stem for p in INTRO_DIR.glob("*.md")}
    assert used == files, (used ^ files)


def test_intro_text_joins_wrapped_lines_and_keeps_paragraphs(tmp_path, monkeypatch):
    import ui.widgets as w

    (tmp_path / "x.md").write_text("A first line\nwrapped here.\n\nA second  paragraph.\n", encoding="utf-8")
    monkeypatch.setattr(w, "INTRO_DIR", tmp_path)
    w.intro_text.cache_clear()
    try:
        assert w.intro_text("x") == "A first line wrapped here.\n\nA second  paragraph."
    finally:
        w.intro_text.cache_clear()


def test_placeholders_are_only_the_ones_pages_fill(root):
    """Each ``{placeholder}`` of an introduction is a keyword its page's ``page_intro`` call gives."""
    filled: dict[str, set[str]] = {}
    for page in (root / "pages").glob("*.py"):
        for node in ast.walk(ast.parse(page.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "page_intro" and node.args:
                given = {kw.arg for kw in node.keywords} - {"label", "first"}
                filled.setdefault(node.args[0].value, set()).update(given)
    assert filled["anisotropy"] == {"bert_peak"} and filled["home"] == {"word", "reads"}  # the walk finds the calls
    for p in INTRO_DIR.glob("*.md"):
        names = set(re.findall(r"\{(\w*)\}", intro_text(p.stem)))
        assert names <= filled.get(p.stem, set()), (p.name, names - filled.get(p.stem, set()))


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_anisotropy_intro_shows_the_reference_peak():
    from streamlit.testing.v1 import AppTest

    from lib.stats.baseline import ETHAYARAJH_2019_BERT_BASE
    from tests.conftest import ROOT

    at = AppTest.from_file(str(ROOT / "pages" / "anisotropy.py"), default_timeout=180)
    at.run()
    text = " ".join(m.value for m in at.markdown)
    assert f"up to {max(ETHAYARAJH_2019_BERT_BASE.anisotropy):.2f} (Ethayarajh 2019)" in text
    assert "{bert_peak}" not in text
