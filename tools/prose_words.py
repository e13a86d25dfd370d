"""Print each page's words of prose on its defaults, counted by lib.teaching.wordcount (the counter
tests/test_prose.py holds every page to).

Usage (from the repository root; loads the bundled model and runs each page once, about a minute)::

    python tools/prose_words.py                  # every page the prose test checks
    python tools/prose_words.py pages/layers.py  # one page
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from lib.teaching.wordcount import MAX_PROSE_WORDS, prose_texts, total_words
    from tests.conftest import page_test
    from tests.test_prose import PAGES

    over = 0
    for page in argv or PAGES:
        at = page_test(page)
        at.run()
        if at.exception:
            print(f"{page}: the page raised {at.exception[0].value}")
            over += 1
            continue
        n = total_words(prose_texts(at.main))
        over += n > MAX_PROSE_WORDS
        print(f"{page}: {n} words of prose (limit {MAX_PROSE_WORDS})")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
