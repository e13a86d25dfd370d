"""Finding the target word in a sentence, in characters and then in word pieces.

Rules (the same everywhere in the app):

* Text in ``[square brackets]`` marks the target explicitly, in any form (``[banks]``, ``[banking]``).
  The brackets are removed before encoding. At most one bracketed span per sentence.
* The tokenizer's own special tokens typed in a sentence (``[MASK]``, ``[CLS]``, ``[SEP]``, ``[UNK]``,
  ``[PAD]``, written exactly so) are that token, not a bracketed target: "The [MASK] sat on the river
  [bank]" marks one target, "bank", and the model reads a mask token where the learner typed it.
  ``[[MASK]]`` marks the mask token itself as the target.
* Otherwise the target is the first whole-word, case-insensitive occurrence of ``target``.
* A target split into several word pieces is represented by the mean of its pieces (done in
  :mod:`lib.models.encoder`); :func:`pieces_for_span` tells which pieces those are.

Nothing here needs a model: the character search is plain Python and the piece lookup takes the
tokenizer's character offsets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError

# BERT's special tokens as written in text. The uncased tokenizer matches them only in capitals ("[mask]" is
# the three pieces "[", "mask", "]"), so only the capitalised forms are kept out of the markup.
SPECIAL_TOKENS_IN_TEXT = ("[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]")


class TargetError(ContextLensError):
    """The target word cannot be found or marked in a sentence. The message says what to do."""

    def __init__(self, message: str, sentence: str = ""):
        super().__init__(message)
        self.sentence = sentence


class TargetNotFoundError(TargetError):
    """The sentence has no occurrence of the target and no bracketed span."""


class MarkupError(TargetError):
    """The square-bracket markup is malformed (unbalanced, nested, empty, or more than one span)."""


class TargetTruncatedError(TargetError):
    """The target lies beyond the model's token limit, so the truncated input does not contain it."""


def short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis (for messages and labels)."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 1].rstrip() + "…"


@dataclass(frozen=True)
class CharSpan:
    """The target's place in the cleaned sentence.

    ``sentence`` is the text that is encoded (brackets removed); ``sentence[start:end]`` is the target.
    ``marked`` is True when the span came from brackets.
    """

    sentence: str
    start: int
    end: int
    marked: bool

    @property
    def word(self) -> str:
        return self.sentence[self.start : self.end]


def strip_markup(text: str, *, strict: bool = True) -> tuple[str, tuple[int, int] | None]:
    """Remove one ``[...]`` span from ``text``: the one place the app removes target markup.

    Returns the cleaned text and the (start, end) of the bracketed content in it, or None when the text
    has no brackets. Special tokens (:data:`SPECIAL_TOKENS_IN_TEXT`) are text, not markup, and stay.
    Raises :class:`MarkupError` for unbalanced, nested, empty or repeated brackets; with ``strict=False``
    (plain text such as a reference corpus, where a bracket is no markup) every markup bracket is dropped
    instead and the span is None.
    """
    opens, closes = markup_brackets(text)
    if not opens and not closes:
        return text, None
    if not strict:
        drop = sorted(opens + closes)  # the text between the dropped brackets, in slices (not char by char)
        return "".join(text[a + 1 : b] for a, b in zip([-1, *drop], [*drop, len(text)], strict=True)), None
    where = short(text)
    if len(opens) != len(closes):
        raise MarkupError(
            f"The sentence “{where}” has unbalanced square brackets. Mark the target as [word], "
            "with one opening and one closing bracket.",
            text,
        )
    if len(opens) > 1:
        raise MarkupError(
            f"The sentence “{where}” marks {len(opens)} spans in [brackets]. Mark only one target per sentence.",
            text,
        )
    start, end = opens[0], closes[0]
    if end < start:
        raise MarkupError(
            f"The sentence “{where}” has “]” before “[”. Mark the target as [word].",
            text,
        )
    inner = text[start + 1 : end]
    if not inner.strip():
        raise MarkupError(
            f"The sentence “{where}” has empty brackets. Put the target word inside them, e.g. [bank].",
            text,
        )
    # Keep the bracketed words, drop surrounding spaces inside the brackets.
    lead = len(inner) - len(inner.lstrip())
    trail = len(inner) - len(inner.rstrip())
    clean = text[:start] + inner + text[end + 1 :]
    return clean, (start + lead, start + len(inner) - trail)


def markup_brackets(text: str) -> tuple[list[int], list[int]]:
    """Positions of the ``[`` and ``]`` in ``text`` that are markup (not part of a special token).

    Jumps from bracket to bracket with ``str.find`` (a 2 MB uploaded corpus is read in milliseconds, not
    character by character); a special token's own brackets are skipped.
    """
    opens: list[int] = []
    closes: list[int] = []
    a, b = text.find("["), text.find("]")
    while a >= 0 or b >= 0:
        if b < 0 or 0 <= a < b:
            special = next((t for t in SPECIAL_TOKENS_IN_TEXT if text.startswith(t, a)), None)
            i = a + len(special) if special is not None else a + 1
            if special is None:
                opens.append(a)
            a = text.find("[", i)
            if 0 <= b < i:  # a "]" inside the special token
                b = text.find("]", i)
        else:
            closes.append(b)
            b = text.find("]", b + 1)
    return opens, closes


def has_markup(text: str) -> bool:
    """True when ``text`` has a bracket that is markup (special tokens such as [MASK] do not count)."""
    if "[" not in text and "]" not in text:
        return False
    opens, closes = markup_brackets(text)
    return bool(opens or closes)


def whole_word_pattern(target: str) -> re.Pattern[str]:
    """A case-insensitive regex for ``target`` as a whole word (not inside a longer word)."""
    words = target.split()
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def find_target(text: str, target: str | None) -> CharSpan:
    """Locate the target in one sentence (raw text, possibly with a bracketed span).

    Raises :class:`MarkupError` or :class:`TargetNotFoundError` with a message that names the sentence
    and says what to do.
    """
    clean, marked = strip_markup(text)
    if marked is not None:
        return CharSpan(clean, marked[0], marked[1], True)
    target = (target or "").strip()
    if not clean.strip():
        raise TargetNotFoundError("A sentence is empty. Delete the empty line or write a sentence.", text)
    if not target:
        raise TargetNotFoundError(
            f"No target word is set and “{short(clean)}” marks none. Type the target word, "
            "or mark it in [brackets].",
            text,
        )
    match = whole_word_pattern(target).search(clean)
    if match is None:
        raise TargetNotFoundError(
            f"The sentence “{short(clean)}” has no “{short(target, 30)}”. Add it, or mark the word you mean "
            "in [brackets] (e.g. [banks]).",
            text,
        )
    return CharSpan(clean, match.start(), match.end(), False)


def pieces_for_span(
    offsets: np.ndarray, start: int, end: int, *, special: Sequence[bool]
) -> tuple[int, ...]:
    """Indices of the ordinary word pieces whose character offsets overlap ``[start, end)``.

    ``offsets``: (n_tokens, 2) character offsets from a fast tokenizer; ``special``: (n_tokens,) bool, the
    tokenizer's special-token mask (``Encoding.special``): a special piece is never selected, whatever its
    offsets. Returns an empty tuple when no piece overlaps (e.g. the span was truncated away).
    """
    off = np.asarray(offsets)
    is_special = np.asarray(special, dtype=bool)
    if len(is_special) != len(off):
        raise ValueError(f"{len(is_special)} special flags for {len(off)} word pieces")
    hits = []
    for i, (a, b) in enumerate(off.tolist()):
        if not is_special[i] and b > a and a < end and b > start:
            hits.append(i)
    return tuple(hits)
