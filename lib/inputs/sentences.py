"""The sentence set every page works on: a target word and sentences, each optionally labelled with a sense.

Text format (one sentence per line)::

    money | The bank raised its rates.
    river | We sat on the river [bank].
    You can bank on it.              <- no sense label
    # a line starting with '#' is a comment; empty lines are ignored

A line is ``sense | sentence`` or just ``sentence``. The target is the ``target`` word (first whole-word,
case-insensitive match) or whatever the line marks in ``[brackets]``. Lines that cannot be used are
reported with their line numbers and left out; the good ones are kept.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

from lib.errors import ContextLensError
from lib.models.targets import TargetError, find_target, short, strip_markup
from lib.serving.budget import MAX_LISTED

MAX_SENTENCES = 500  # the most sentences one set may hold (typed, linked or uploaded)
MAX_TEXT_CHARS = 300_000  # the whole text; a single very long line is allowed but truncated by the model
MAX_LABEL_CHARS = 40
SEPARATOR = "|"


@dataclass(frozen=True)
class LineProblem:
    """A line that was left out: its 1-based line number and what to do about it."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"Line {self.line}: {self.message}"


@dataclass(frozen=True)
class SentenceSet:
    """A target word and the usable sentences, in input order.

    sentences: raw sentences (brackets kept, so the target markup travels with them)
    senses:    one label per sentence, or None where a line has no label
    lines:     the 1-based line number each sentence came from
    problems:  the first lib.serving.budget.MAX_LISTED lines that were left out, with messages
    problem_count: how many lines were left out in all (``left_out``)
    """

    target: str
    sentences: tuple[str, ...]
    senses: tuple[str | None, ...]
    lines: tuple[int, ...] = ()
    problems: tuple[LineProblem, ...] = ()
    preset_id: str | None = None
    notes: tuple[str, ...] = field(default=())
    problem_count: int = 0

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def left_out(self) -> int:
        """How many lines were left out (at least those listed in ``problems``)."""
        return max(self.problem_count, len(self.problems))

    @property
    def has_senses(self) -> bool:
        """True when every sentence has a sense label and there are at least two distinct senses."""
        return all(s for s in self.senses) and len(set(self.senses)) >= 2

    @property
    def sense_names(self) -> list[str]:
        """Distinct sense labels in order of first appearance."""
        seen: dict[str, None] = {}
        for s in self.senses:
            if s:
                seen.setdefault(s, None)
        return list(seen)

    @cached_property
    def labels(self) -> list[str]:
        """Short unique labels for charts: 'S3 · We sat on the river bank…'."""
        return [f"S{i + 1} · {short(strip_markup(s)[0], 34)}" for i, s in enumerate(self.sentences)]

    def option_label(self, i: int) -> str:
        """Label of sentence ``i`` (0-based) in a sentence picker: its chart label with its sense, if any, after the
        number ('S3 · river · We sat on the river bank…'), where a phone's narrow picker does not cut it off."""
        sense = self.senses[i]
        number, rest = self.labels[i].split(" · ", 1)
        return f"{number} · {sense} · {rest}" if sense else self.labels[i]

    @property
    def option_labels(self) -> dict[int, str]:
        """Sentence number (1-based, as a picker shows it) -> :meth:`option_label`, for every sentence."""
        return {k: self.option_label(k - 1) for k in range(1, len(self.sentences) + 1)}

    @property
    def clean_sentences(self) -> list[str]:
        """The sentences as encoded (brackets removed). Raises TargetError for a sentence without the target."""
        return list(clean_sentences(self.sentences, self.target))

    def subset(self, kept: Sequence[int]) -> SentenceSet:
        """The set restricted to the sentences at ``kept`` (e.g. ``TargetVectors.kept``), in that order.

        Sentences, senses and line numbers stay aligned; labels are renumbered S1, S2, ... Target, problems,
        notes and preset are kept.
        """
        idx = [int(i) for i in kept]
        return replace(
            self,
            sentences=tuple(self.sentences[i] for i in idx),
            senses=tuple(self.senses[i] for i in idx),
            lines=tuple(self.lines[i] for i in idx) if self.lines else (),
        )

    def to_text(self) -> str:
        """The set written back in the text format (round-trips through :func:`parse_sentence_set`)."""
        rows = []
        for sense, sentence in zip(self.senses, self.sentences, strict=True):
            rows.append(f"{sense} {SEPARATOR} {sentence}" if sense else sentence)
        return "\n".join(rows)


def clean_sentences(
    sentences: Sequence[str], target: str | None, *, bad: Literal["raise", "drop", "keep"] = "raise"
) -> tuple[str, ...]:
    """The sentences as the model sees them: brackets removed (via :func:`lib.models.targets.find_target`).

    A sentence whose target cannot be found raises :class:`TargetError` naming it (``bad="raise"``), is
    left out (``"drop"``: the cache encodes what can be used; ``Encoder.target_vectors`` then reports the
    problems) or is kept as written (``"keep"``: one entry per input, e.g. to count word pieces).
    """
    out = []
    for s in sentences:
        try:
            out.append(find_target(s, target).sentence)
        except TargetError:
            if bad == "raise":
                raise
            if bad == "keep":
                out.append(s)
    return tuple(out)


def split_label(line: str) -> tuple[str | None, str]:
    """Split ``'sense | sentence'`` into its parts; a line without '|' has no label."""
    if SEPARATOR not in line:
        return None, line.strip()
    label, _, sentence = line.partition(SEPARATOR)
    return (label.strip() or None), sentence.strip()


def parse_sentence_set(text: str, target: str, *, preset_id: str | None = None) -> SentenceSet:
    """Parse the text format above into a :class:`SentenceSet`, keeping good lines and listing bad ones.

    Never raises for bad user text: every problem becomes a :class:`LineProblem` (or a note).
    """
    target = " ".join((target or "").split())
    problems: list[LineProblem] = []  # the first MAX_LISTED; every one is counted in n_problems
    n_problems = 0

    def problem(number: int, message: str) -> None:
        nonlocal n_problems
        n_problems += 1
        if len(problems) < MAX_LISTED:
            problems.append(LineProblem(number, message))

    notes: list[str] = []
    text = text or ""
    if len(text) > MAX_TEXT_CHARS:
        notes.append(
            f"The text is {len(text):,} characters long; only the first {MAX_TEXT_CHARS:,} are used."
        )
        text = text[:MAX_TEXT_CHARS]
    sentences: list[str] = []
    senses: list[str | None] = []
    lines: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        label, sentence = split_label(line)
        if not sentence:
            problem(number, f"“{short(line, 40)}” has a label but no sentence after “|”.")
            continue
        if label and len(label) > MAX_LABEL_CHARS:
            problem(number, f"The sense label is longer than {MAX_LABEL_CHARS} characters; shorten it.")
            continue
        try:
            find_target(sentence, target)
        except TargetError as err:
            problem(number, str(err))
            continue
        if len(sentences) >= MAX_SENTENCES:
            notes.append(f"Only the first {MAX_SENTENCES} sentences are used; the rest were left out.")
            break
        sentences.append(sentence)
        senses.append(label)
        lines.append(number)
    if any(senses) and not all(senses):
        missing = sum(1 for s in senses if not s)
        notes.append(
            f"{missing} sentence{'s have' if missing != 1 else ' has'} no sense label, so sense comparisons are "
            "off. Label every line as "
            "“sense | sentence” to turn them on."
        )
    return SentenceSet(
        target=target,
        sentences=tuple(sentences),
        senses=tuple(senses),
        lines=tuple(lines),
        problems=tuple(problems),
        preset_id=preset_id,
        notes=tuple(notes),
        problem_count=n_problems,
    )


def rows_to_text(rows: Sequence[tuple[str | None, str]]) -> str:
    """(sense, sentence) rows in the text format."""
    return "\n".join(f"{s} {SEPARATOR} {t}" if s else t for s, t in rows)


# --------------------------------------------------------------------- links
def pack_text(text: str) -> str:
    """Compress text into a short URL-safe string (for sharing a custom set in a link)."""
    raw = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unpack_text(packed: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Inverse of :func:`pack_text`. Raises ValueError with a plain message for a garbled value."""
    try:
        padded = packed + "=" * (-len(packed) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii"))
        d = zlib.decompressobj()
        data = d.decompress(raw, max_chars * 4 + 1)
        if d.unconsumed_tail:
            raise ValueError("too long")
        if not d.eof:  # a link cut short decodes to part of the text without any zlib error
            raise ValueError("cut off")
        return data.decode("utf-8")[:max_chars]
    except (binascii.Error, zlib.error, UnicodeError, ValueError) as err:
        raise ContextLensError("The sentences in the link are garbled or cut off.") from err


def text_from_link(value: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """The sentences a link's ``text`` value carries: the app's packed form (:func:`pack_text`), or plain
    text that someone typed into a link by hand (``?target=bank&text=I sat by the river bank.``; several
    sentences separated by newlines, ``%0A``).

    A value is read as plain text only when it is not a packed value and contains white space, which a
    packed value never does; anything else (a packed value cut short, stray characters) raises the
    "garbled" ContextLensError of :func:`unpack_text`.
    """
    try:
        return unpack_text(value, max_chars)
    except ContextLensError:
        if any(ch.isspace() for ch in value):
            return value[:max_chars]
        raise
