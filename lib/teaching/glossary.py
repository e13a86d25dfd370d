"""The glossary (``assets/glossary.md``): its entries, and linking a term where a page first uses it.

    >>> terms = load_glossary()
    >>> terms[0].name, terms[0].anchor
    ('Word piece', 'word-piece')
    >>> link_terms("Each word piece has a vector; a word piece is ...", terms, already=set())
    ('Each [word piece](glossary#word-piece) has a vector; a word piece is ...', {'word-piece'})

A term is matched as a whole word, case-insensitively, outside links, code and bold markers it would
break; only its first use on a page is linked (``already`` carries what the page linked before).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lib.paths import ASSETS

GLOSSARY_PATH = ASSETS / "glossary.md"
PAGE = "glossary"  # the glossary page's URL path: a link is "glossary#<anchor>"


@dataclass(frozen=True)
class Term:
    """One entry: ``name`` as headed, ``anchor`` (lower case, spaces as hyphens), ``aliases`` (other
    spellings the pages use) and ``text`` (the explanation, markdown)."""

    name: str
    anchor: str
    aliases: tuple[str, ...]
    text: str

    @property
    def spellings(self) -> tuple[str, ...]:
        """The name and its aliases, longest first (so "attention head" wins over "attention")."""
        return tuple(sorted({self.name, *self.aliases}, key=len, reverse=True))


def anchor_of(name: str) -> str:
    """"Shuffled weights" -> "shuffled-weights"; "[CLS]" -> "cls"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def parse_glossary(text: str) -> tuple[str, tuple[Term, ...]]:
    """(the text before the first entry, the entries) from the glossary's markdown."""
    parts = re.split(r"^## +(.+?) *$", text, flags=re.M)
    head, terms = parts[0], []
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = body.strip().splitlines()
        aliases: tuple[str, ...] = ()
        if lines and lines[0].lower().startswith("aliases:"):
            aliases = tuple(a.strip() for a in lines[0].split(":", 1)[1].split(",") if a.strip())
            lines = lines[1:]
        terms.append(Term(name=name.strip(), anchor=anchor_of(name), aliases=aliases, text="\n".join(lines).strip()))
    return head, tuple(terms)


@lru_cache(maxsize=1)
def load_glossary(path: Path = GLOSSARY_PATH) -> tuple[Term, ...]:
    return parse_glossary(Path(path).read_text(encoding="utf-8"))[1]


# Spans a link must not be put into: links, inline code, and link targets
_PROTECTED = re.compile(r"\[[^\]]*\]\([^)]*\)|`[^`]*`|<[^>]*>")


def _pattern(spelling: str) -> re.Pattern:
    return re.compile(rf"(?<![\w#\[-]){re.escape(spelling)}(?![\w\]-])", re.I)


def uses(text: str, term: Term) -> bool:
    """True when ``text`` uses ``term`` (any spelling, whole word, outside links and code)."""
    plain = _PROTECTED.sub(" ", text)
    return any(_pattern(s).search(plain) for s in term.spellings)


def links_to(text: str, term: Term) -> bool:
    """True when ``text`` holds a link to the term's glossary entry."""
    return f"({PAGE}#{term.anchor})" in text


def link_terms(text: str, terms: tuple[Term, ...], already: set[str]) -> tuple[str, set[str]]:
    """``text`` with the first use of each term not in ``already`` linked to its entry; (text, anchors linked).

    A term already linked in ``text`` itself counts as linked. Never links inside a link or code.
    """
    linked: set[str] = set()
    # the longest spelling first: "attention sink" is linked as itself, not as "attention" followed by " sink"
    for term in sorted(terms, key=lambda t: -max(len(s) for s in t.spellings)):
        if term.anchor in already or term.anchor in linked:
            continue
        if links_to(text, term):
            linked.add(term.anchor)
            continue
        for spelling in term.spellings:
            new = _link_first(text, spelling, term.anchor)
            if new is not None:
                text = new
                linked.add(term.anchor)
                break
    return text, linked


def _link_first(text: str, spelling: str, anchor: str) -> str | None:
    pattern = _pattern(spelling)
    pos = 0
    for m in _PROTECTED.finditer(text):
        hit = pattern.search(text, pos, m.start())
        if hit:
            break
        pos = m.end()
    else:
        hit = pattern.search(text, pos)
    if not hit:
        return None
    return f"{text[: hit.start()]}[{hit.group(0)}]({PAGE}#{anchor}){text[hit.end() :]}"
