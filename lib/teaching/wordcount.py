"""How many words of prose a page shows: the one counter the tests, the tools and the docs use.

A page keeps at most :data:`MAX_PROSE_WORDS` words of prose on its defaults. Prose is what a learner reads
as sentences: the page's Markdown, captions, plain text and message boxes (info, warning, success, error) in
its main area. Tables, charts, code, formulas, headings, widget labels and the sidebar are not prose.

A word is counted as shown: a run that starts with a letter, digit or apostrophe and may carry on through
``.,%−+-`` (so "0.91", "2,000", "S7", "−0.016" and "don't" are one word each); a link counts by its text,
Markdown markers (``**``, ``*``, ``#``) and lone symbols ("=", "→", "·") are not words::

    count_words("The [probe](glossary#probe) reads **0.91**.")   # 4

``python tools/prose_words.py`` prints every page's count with this counter; ``tests/test_prose.py`` holds
each page to the limit with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_PROSE_WORDS = 600

# The Streamlit element kinds that are prose (AppTest's names for them).
PROSE_ELEMENTS = ("markdown", "caption", "text", "info", "warning", "success", "error")

_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_WORD = re.compile(r"[\w’'][\w’'.,%−+-]*")


def count_words(text: str) -> int:
    """The number of words in ``text`` as a reader sees them (see the module docstring)."""
    return len(_WORD.findall(_LINK_TARGET.sub("]", str(text))))


def prose_texts(main) -> list[str]:
    """The prose of a page's main area, in order of kind: ``main`` is an AppTest block (``at.main``), whose
    ``get(kind)`` lists the elements of one kind."""
    return [str(el.value) for kind in PROSE_ELEMENTS for el in main.get(kind)]


def total_words(texts: Iterable[str]) -> int:
    return sum(count_words(t) for t in texts)
