"""The evidence card (course text 002, "Evidence to keep"): five fields filled from one sentence set's numbers.

* **Representation**: which vector of the word is compared, and against what.
* **Comparison**: the similarity score (cosine between the word's occurrences) and the sense readout.
* **Interpretation**: what the representation captures and what it misses, each said with its numbers.
* **Failure check**: polysemy, domain mismatch, short text, tokenization and semantic drift, each checked by
  a rule on the set (:func:`failure_checks`), flagged or not, or "cannot be checked" with the reason.
* **Expected output**: a small comparison table of sentence pairs with the surprising results a rule on the
  numbers finds (:func:`find_surprises`), or "none found" said plainly.

``evidence_card`` builds it from the word's vectors in two representations and a
:class:`~lib.stats.evidence_facts.CardFacts` (what the page knows about the set besides the vectors;
:func:`~lib.stats.evidence_facts.card_facts` gathers it from a :class:`~lib.stats.layer_profile.LayerProfile`).
The card renders as CSV (the pair table) and as Markdown (every field), and the Layer by layer page shows the
same fields, so its page export holds them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lib.stats.evidence_facts import CardFacts
from lib.stats.similarity import cosine_matrix, hardest_case, pair_kinds, pair_ranking_auc

# Two cosines closer than this are a tie: a sentence must sit nearer another sense by more to be a surprise.
SURPRISE_TIE = 0.01
# A sentence with fewer words than this besides the target is "short text".
SHORT_WORDS = 5
# The set's share of words split into several word pieces counts as a domain mismatch above this many times
# the reference corpus's share (general English, assets/reference_corpus.txt).
SPLIT_RATIO = 2.0

FIELDS = ("Representation", "Comparison", "Interpretation", "Failure check", "Expected output")
# The course's five failure checks, then one the course does not name: whether the word's vector has moved
# towards its own sentence more than it stays like itself in the others ("word or sentence")
CHECKS = ("polysemy", "domain mismatch", "short text", "tokenization", "semantic drift", "word or sentence")


@dataclass(frozen=True)
class EvidenceRow:
    """One sentence pair on the evidence card."""

    i: int
    j: int
    sentence_a: str
    sentence_b: str
    sense_a: str
    sense_b: str
    same_sense: bool | None
    cosine_first: float
    cosine_chosen: float

    @property
    def change(self) -> float:
        return self.cosine_chosen - self.cosine_first


@dataclass(frozen=True)
class FailureCheck:
    """One of the course's failure checks on this set: ``flagged`` True (a problem found), False (checked, none
    found) or None (cannot be checked here); ``text``: what the numbers say, in one sentence."""

    name: str
    flagged: bool | None
    text: str

    @property
    def verdict(self) -> str:
        return {True: "check", False: "ok", None: "not checked"}[self.flagged]


@dataclass(frozen=True)
class Surprise:
    """A result against the course's picture (the context pushes each occurrence towards its own meaning),
    found by a rule on the numbers: ``rule`` names the rule, ``pairs`` the sentence pairs (i, j), i < j, it
    concerns (they are in the card's table), ``text`` says it with its numbers."""

    rule: str
    text: str
    pairs: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class EvidenceCard:
    """The course's evidence card for one word on one set (see the module docstring).

    rows: the pair table (Expected output); surprises: what the rules found (empty: none); notes: further
    lines for the Markdown card, added with ``dataclasses.replace``.
    """

    target: str
    first_name: str
    chosen_name: str
    rows: tuple[EvidenceRow, ...]
    representation: str = ""
    comparison: str = ""
    captures: str = ""
    misses: str = ""
    checks: tuple[FailureCheck, ...] = ()
    surprises: tuple[Surprise, ...] = ()
    none_found: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    _HEADER = ("sentence A", "sentence B", "sense A", "sense B", "same sense")

    def surprising_rows(self) -> list[int]:
        """Indices into ``rows`` of the pairs a surprise concerns."""
        wanted = {p for s in self.surprises for p in s.pairs}
        return [k for k, r in enumerate(self.rows) if (r.i, r.j) in wanted]

    @property
    def surprising(self) -> int | None:
        """The first row a surprise concerns, or None."""
        rows = self.surprising_rows()
        return rows[0] if rows else None

    @property
    def reason(self) -> str:
        """The surprises in one paragraph, or the plain "none found" sentence."""
        if self.surprises:
            return " ".join(s.text for s in self.surprises)
        return self.none_found

    def fields(self) -> list[tuple[str, str]]:
        """(field, text) in the course's order, the failure check one line per check, the expected output's
        surprise last: what the page's card table and the Markdown show."""
        out = [
            ("Representation", self.representation),
            ("Comparison", self.comparison),
            ("Interpretation: captures", self.captures),
            ("Interpretation: misses", self.misses),
        ]
        out += [(f"Failure check: {c.name} ({c.verdict})", c.text) for c in self.checks]
        label = "Expected output: surprising result" + ("s" if len(self.surprises) > 1 else "")
        out.append((label, self.reason))
        return [(k, v) for k, v in out if v]

    def _records(self) -> list[list[str]]:
        marked = set(self.surprising_rows())
        out = []
        for k, r in enumerate(self.rows):
            same = "" if r.same_sense is None else ("yes" if r.same_sense else "no")
            out.append(
                [
                    r.sentence_a,
                    r.sentence_b,
                    r.sense_a,
                    r.sense_b,
                    same,
                    f"{r.cosine_first:.3f}",
                    f"{r.cosine_chosen:.3f}",
                    "yes" if k in marked else "",
                ]
            )
        return out

    def header(self) -> list[str]:
        return [*self._HEADER, f"cosine {self.first_name}", f"cosine {self.chosen_name}", "surprising"]

    def to_csv(self) -> str:
        """The pair table as CSV text (header row first), safe to open in a spreadsheet (lib.serving.export)."""
        from lib.serving.export import csv_text

        return csv_text(self._records(), header=self.header())

    def to_markdown(self) -> str:
        """The whole card as Markdown: the five fields, the failure checks as a list, the pair table.

        Every text is escaped (lib.serving.export.escape_markdown): a sentence's raw HTML or ``javascript:`` link
        shows as typed in any Markdown viewer."""
        from lib.serving.export import escape_markdown

        def cell(s: str) -> str:
            return escape_markdown(s, newline=" ")

        lines = [f"### Evidence card: '{cell(self.target)}'", ""]
        for name, text in (("Representation", self.representation), ("Comparison", self.comparison)):
            if text:
                lines += [f"**{name}.** {cell(text)}", ""]
        if self.captures or self.misses:
            lines += [f"**Interpretation.** Captures: {cell(self.captures)} Misses: {cell(self.misses)}", ""]
        if self.checks:
            lines += ["**Failure check.**", ""]
            lines += [f"- {cell(f'{c.name} ({c.verdict})')}: {cell(c.text)}" for c in self.checks]
            lines.append("")
        lines += ["**Expected output.** The pairs compared:", ""]
        lines.append("| " + " | ".join(cell(h) for h in self.header()) + " |")
        lines.append("|" + "---|" * len(self.header()))
        for rec in self._records():
            lines.append("| " + " | ".join(cell(c) for c in rec) + " |")
        lines += ["", ("Surprising: " if self.surprises else "Surprising result: ") + cell(self.reason)]
        for note in self.notes:
            lines += ["", cell(note)]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------------------


def signed(x: float) -> str:
    """A gap with its sign, never "-0.00": ``signed(-0.001) == "+0.00"``."""
    text = f"{x:+.2f}"
    return "+0.00" if text == "-0.00" else text


def _label(i: int, senses: Sequence[str | None]) -> str:
    return f"S{i + 1} ({senses[i]})" if senses[i] else f"S{i + 1}"


def _labelled_index(senses: Sequence[str | None]) -> list[int]:
    return [i for i, s in enumerate(senses) if s]


def _gap(cos: np.ndarray, senses: Sequence[str | None]) -> float | None:
    pairs, same, labelled = pair_kinds(senses)
    diff = labelled & ~same
    if not same.any() or not diff.any():
        return None
    v = cos[pairs[:, 0], pairs[:, 1]]
    return float(v[same].mean() - v[diff].mean())


def _same_prefix(a: int, b: int, c1: np.ndarray, facts: CardFacts | None, sentences: Sequence[str] | None) -> str:
    """Why sentences ``a`` and ``b`` have one vector, when a rule can see it: a left-to-right model has read the
    same words up to the target in both, so it made the same vector (cosine 1). "" otherwise."""
    if facts is None or not facts.causal or sentences is None or len(facts.target_ends) != len(sentences):
        return ""
    pa, pb = sentences[a][: facts.target_ends[a]], sentences[b][: facts.target_ends[b]]
    if pa != pb or c1[a, b] < 1 - 1e-4:
        return ""
    return (
        f" Both open with “{pa}”: a left-to-right model has read only those words when it makes the vector, so "
        f"the two get the same vector (cosine {c1[a, b]:.3f}) whatever follows; the sense comes later in the "
        "sentence, where this word's vector cannot see it."
    )


def find_surprises(
    c0: np.ndarray,
    c1: np.ndarray,
    senses: Sequence[str | None],
    first_name: str,
    chosen_name: str,
    *,
    facts: CardFacts | None = None,
    sentences: Sequence[str] | None = None,
) -> tuple[tuple[Surprise, ...], str]:
    """The surprising results in a set's cosines, by two rules, and the "none found" sentence when neither fires.

    c0, c1: (n, n) cosines in the first and the chosen representation; senses: n labels (None: unlabelled).
    1. *Nearer another sense*: the sentence whose most similar sentence of another sense beats its least
       similar sentence of its own sense by the most (lib.stats.similarity.hardest_case), when by more than
       ``SURPRISE_TIE``. Where a rule can see why (a left-to-right model, ``facts.causal``, read the same words
       up to the target in both sentences), the surprise says so.
    2. *No separation by context*: the same-sense minus different-sense gap at the chosen representation is
       not above the first one's by more than ``SURPRISE_TIE``.
    Both need sentences of two senses with a same-sense pair; without them nothing sets what to expect. The
    "none found" sentence claims no separation that the readout against chance (``facts.readout``) does not
    support.
    """
    idx = _labelled_index(senses)
    lab = [senses[i] for i in idx]
    g0, g1 = _gap(c0, senses), _gap(c1, senses)
    if g0 is None or g1 is None:
        return (), (
            "none found: without two senses, each with a pair of sentences, nothing says which pairs should be "
            "close. Label the sentences (“river | …”) to look for one."
        )
    found = []
    hc = hardest_case(c1[np.ix_(idx, idx)], lab)
    crossing = None
    if hc is not None:
        a, b, c = (idx[k] for k in hc)
        crossing = float(c1[a, b] - c1[a, c])
        if crossing > SURPRISE_TIE:
            found.append(
                Surprise(
                    "nearer another sense",
                    f"At {chosen_name}, {_label(a, senses)} is closer to {_label(b, senses)}, another sense "
                    f"({c1[a, b]:.2f}), than to {_label(c, senses)}, its own ({c1[a, c]:.2f})."
                    + _same_prefix(a, b, c1, facts, sentences),
                    (tuple(sorted((a, b))), tuple(sorted((a, c)))),
                )
            )
    if g1 <= g0 + SURPRISE_TIE:
        found.append(
            Surprise(
                "no separation by context",
                f"The same-sense minus different-sense gap is {signed(g1)} at {chosen_name} against {signed(g0)} at "
                f"{first_name}: here the context did not pull the senses further apart.",
            )
        )
    none = ""
    if not found:
        margin = f" (the closest call: {-crossing:.2f})" if crossing is not None else ""
        none = (
            f"none found: at {chosen_name} every sentence is closer to each sentence of its own sense than to any "
            f"of another sense{margin}, and the senses are further apart than at {first_name} (gap {signed(g1)} "
            f"against {signed(g0)})."
        )
        readout = facts.readout if facts is not None else None
        if readout is not None and readout[0] <= readout[1] + 1e-12:
            none += (
                f" Yet the readout there ({readout[0]:.0%}) is within chance (shuffled labels up to "
                f"{readout[1]:.0%}): a set this size cannot show that the context separated the senses."
            )
    return tuple(found), none


def _nearest_other_sense(cos: np.ndarray, senses: Sequence[str | None]) -> tuple[int, int]:
    """(sentences whose nearest labelled sentence has another sense, labelled sentences)."""
    idx = _labelled_index(senses)
    if len(idx) < 2:
        return 0, len(idx)
    sub = np.array(cos, dtype=np.float64)[np.ix_(idx, idx)]
    np.fill_diagonal(sub, -np.inf)
    nearest = np.argmax(sub, axis=1)
    lab = [senses[i] for i in idx]
    return sum(lab[k] != lab[int(j)] for k, j in enumerate(nearest)), len(idx)


def failure_checks(
    c1: np.ndarray, senses: Sequence[str | None], target: str, chosen_name: str, facts: CardFacts
) -> tuple[FailureCheck, ...]:
    """The course's five failure checks on a set, each by a rule on its numbers (see :class:`CardFacts`)."""
    out = []
    names = list(dict.fromkeys(s for s in senses if s))
    if len(names) >= 2:
        k, m = _nearest_other_sense(c1, senses)
        out.append(
            FailureCheck(
                "polysemy",
                k > 0,
                f"{len(names)} senses labelled; at {chosen_name}, {k} of {m} sentences {'has its' if k == 1 else 'have their'} "
                "nearest sentence in another sense.",
            )
        )
    else:
        out.append(FailureCheck("polysemy", None, "fewer than two senses labelled: nothing to tell apart."))

    if facts.split is not None and facts.split[1] and facts.reference_split is not None and facts.reference_split[1]:
        s, w, unk = facts.split
        rs, rw, _ = facts.reference_split
        share, ref = s / w, rs / rw
        flagged = share > SPLIT_RATIO * ref or unk > 0
        out.append(
            FailureCheck(
                "domain mismatch",
                flagged,
                f"{share:.0%} of the set's words are cut into several word pieces ({s} of {w}), against {ref:.0%} "
                "in the reference corpus of general English"
                + (f"; {unk} word{'s are' if unk != 1 else ' is'} unknown to the tokenizer" if unk else "")
                + (
                    ": a sign of text unlike what the tokenizer was built on."
                    if flagged
                    else ": no sign of a domain the tokenizer does not know (flagged above twice that share)."
                ),
            )
        )
    else:
        out.append(FailureCheck("domain mismatch", None, "no reference to compare the set's words with."))

    if facts.context_words:
        short = [i for i, c in enumerate(facts.context_words) if c < SHORT_WORDS]
        out.append(
            FailureCheck(
                "short text",
                bool(short),
                (
                    f"{len(short)} of {len(facts.context_words)} sentences have fewer than {SHORT_WORDS} words "
                    f"besides '{target}' (" + ", ".join(f"S{i + 1}" for i in short[:5])
                    + (", …" if len(short) > 5 else "") + "): little context to push it."
                )
                if short
                else f"every sentence has at least {SHORT_WORDS} words besides '{target}' "
                f"(fewest: {min(facts.context_words)}).",
            )
        )
    else:
        out.append(FailureCheck("short text", None, "the sentences' lengths are not known here."))

    if facts.pieces:
        split = [i for i, p in enumerate(facts.pieces) if len(p) > 1]
        forms = facts.static_min is not None and facts.static_min < 0.9999
        parts = []
        if split:
            shown = " + ".join(facts.pieces[split[0]])
            parts.append(
                f"'{target}' is cut into word pieces in {len(split)} of {len(facts.pieces)} sentences (e.g. "
                f"{shown}); its vector is "
                + ("the last of them, the only one that has seen the whole word" if facts.piece_pooling == "last" else "their mean")
            )
        else:
            parts.append(f"'{target}' is one word piece in every sentence")
        if forms:
            parts.append(f"its forms differ (their input embeddings' lowest cosine {facts.static_min:.2f})")
        if facts.truncated:
            t = facts.truncated
            parts.append(f"{t} sentence{'s were' if t != 1 else ' was'} cut at the word-piece cap")
        out.append(FailureCheck("tokenization", bool(split) or forms or facts.truncated > 0, "; ".join(parts) + "."))
    else:
        out.append(FailureCheck("tokenization", None, "the target's word pieces are not known here."))

    out.append(
        FailureCheck(
            "semantic drift",
            None,
            "not checked here: semantic drift is a word's senses changing over time or between domains, and one "
            "set without dates or sources cannot show it (compare two sets, one per period or domain).",
        )
    )
    ss, cs = facts.self_similarity, facts.context_similarity
    if ss is not None and cs is not None and np.isfinite(ss) and np.isfinite(cs):
        drifted = cs > ss
        out.append(
            FailureCheck(
                "word or sentence",
                drifted,
                f"at {chosen_name} '{target}' has cosine {cs:.2f} with the rest of its own sentence and {ss:.2f} "
                f"with itself in the other sentences: "
                + (
                    "it has moved towards its sentence, so it stands for the sentence more than for the word."
                    if drifted
                    else "it still stands for the word more than for its sentence."
                ),
            )
        )
    else:
        out.append(FailureCheck("word or sentence", None, "needs the word in two sentences with other words."))
    return tuple(out)


def _interpretation(
    c0: np.ndarray, c1: np.ndarray, senses: Sequence[str | None], first_name: str, chosen_name: str, facts: CardFacts
) -> tuple[str, str]:
    """(what the representation captures, what it misses), each with its numbers."""
    g0, g1 = _gap(c0, senses), _gap(c1, senses)
    floor = (
        f" Random pairs of other word pieces score {facts.baseline:.2f} there: read each cosine against that, not "
        "against 0."
        if facts.baseline is not None and np.isfinite(facts.baseline)
        else ""
    )
    if g0 is None or g1 is None:
        pairs, _, _ = pair_kinds(senses)
        v0, v1 = c0[pairs[:, 0], pairs[:, 1]], c1[pairs[:, 0], pairs[:, 1]]
        return (
            f"how the occurrences spread: pairs range {v1.min():.2f}–{v1.max():.2f} at {chosen_name} "
            f"({v0.min():.2f}–{v0.max():.2f} at {first_name}).",
            "which meaning each occurrence has: the set has no two senses with a pair each to compare." + floor,
        )
    auc = pair_ranking_auc(c1, senses)
    auc_text = f"a same-sense pair is the closer one in {float(auc[0]):.0%} of comparisons (50% is chance)"
    within = facts.readout is not None and facts.readout[0] <= facts.readout[1] + 1e-12
    if g1 > g0 + SURPRISE_TIE and within:
        captures = (
            f"no sense this set can show: the gap grows from {signed(g0)} at {first_name} to {signed(g1)}, but "
            f"the readout is within chance; {auc_text}."
        )
    elif g1 > g0 + SURPRISE_TIE:
        captures = f"the sense, on average: the gap grows from {signed(g0)} at {first_name} to {signed(g1)}; {auc_text}."
    else:
        captures = f"no more of the sense than {first_name} (gap {signed(g1)} against {signed(g0)}); {auc_text}."
    k, m = _nearest_other_sense(c1, senses)
    misses = (
        f"single occurrences: {k} of {m} sentences {'has its' if k == 1 else 'have their'} nearest sentence in another sense."
        if k
        else f"no single occurrence here: every sentence's nearest sentence shares its sense ({m} sentences)."
    )
    return captures, misses + floor


# --------------------------------------------------------------------------------------------------
# The card
# --------------------------------------------------------------------------------------------------


def _largest_first(values: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` largest values, largest first, the lower index first on a tie: the first ``k`` of
    a stable sort by descending value, without sorting all of them (a set of 500 sentences has 124,750 pairs).
    """
    values = np.asarray(values)
    if k >= len(values):
        top = np.arange(len(values))
    else:
        kth = np.partition(values, len(values) - k)[len(values) - k]  # the k-th largest value
        top = np.flatnonzero(values >= kth)  # every tie of it too, so the tie-break below stays exact
    order = np.lexsort((top, -values[top]))
    return [int(i) for i in top[order][:k]]


def evidence_card(
    first: np.ndarray,
    chosen: np.ndarray,
    sentences: Sequence[str],
    senses: Sequence[str | None],
    target: str = "",
    first_name: str = "embedding layer (0)",
    chosen_name: str = "chosen layer",
    max_rows: int = 8,
    cosines: tuple[np.ndarray, np.ndarray] | None = None,
    facts: CardFacts | None = None,
) -> EvidenceCard:
    """The whole card for the word's vectors in two representations.

    first, chosen: (n, H) the target's vectors in the two representations (e.g. layer 0 and the chosen layer
    or pooling); ``cosines`` may pass their two (n, n) cosine matrices when they are already computed;
    ``facts``: what else is known about the set (:class:`CardFacts`, lib.stats.evidence_facts.card_facts).
    The table: with at most ``max_rows`` pairs in total, all pairs. Otherwise the pairs every surprise
    concerns, then (when labelled) the least and the most similar same-sense pair and the least similar
    different-sense pair, then the pairs whose cosine changed most, up to ``max_rows``.
    """
    facts = facts or CardFacts()
    n = len(sentences)
    if np.asarray(first).shape[0] != n or np.asarray(chosen).shape[0] != n or len(senses) != n:
        raise ValueError("first, chosen, sentences and senses must have the same length")
    c0, c1 = cosines if cosines is not None else (cosine_matrix(first), cosine_matrix(chosen))
    c0, c1 = np.asarray(c0, dtype=np.float64), np.asarray(c1, dtype=np.float64)
    pairs, same, labelled = pair_kinds(senses)
    if len(pairs) == 0:
        return EvidenceCard(target, first_name, chosen_name, (), none_found="none found: the set has one sentence.")
    v0 = c0[pairs[:, 0], pairs[:, 1]]
    v1 = c1[pairs[:, 0], pairs[:, 1]]
    diff = labelled & ~same
    change = np.abs(v1 - v0)
    surprises, none_found = find_surprises(c0, c1, senses, first_name, chosen_name, facts=facts, sentences=sentences)

    def argbest(mask: np.ndarray, values: np.ndarray, highest: bool) -> int | None:
        """The pair with the highest (lowest) value among ``mask``, the first pair on a tie."""
        if not mask.any():
            return None
        cand = np.flatnonzero(mask)  # ascending, and argmax/argmin return the first of equal values
        return int(cand[np.argmax(values[cand]) if highest else np.argmin(values[cand])])

    index = {(int(a), int(b)): p for p, (a, b) in enumerate(pairs)}
    if len(pairs) <= max_rows:
        chosen_pairs = list(range(len(pairs)))
    else:
        picks = [index[p] for s in surprises for p in s.pairs]
        picks += [argbest(same, v1, False), argbest(same, v1, True), argbest(diff, v1, False)]
        by_change = _largest_first(change, max_rows + len(picks))
        chosen_pairs = []
        for p in [*picks, *by_change]:
            if p is not None and p not in chosen_pairs:
                chosen_pairs.append(p)
            if len(chosen_pairs) >= max_rows:
                break

    rows = []
    for p in chosen_pairs:
        i, j = (int(x) for x in pairs[p])
        rows.append(
            EvidenceRow(
                i=i,
                j=j,
                sentence_a=sentences[i],
                sentence_b=sentences[j],
                sense_a=senses[i] or "",
                sense_b=senses[j] or "",
                same_sense=bool(same[p]) if labelled[p] else None,
                cosine_first=float(v0[p]),
                cosine_chosen=float(v1[p]),
            )
        )
    split = any(len(p) > 1 for p in facts.pieces)
    pieces = " (its last word piece)" if facts.piece_pooling == "last" else " (the mean of its word pieces)"
    representation = (
        f"contextual embedding: the vector of '{target}'" + (pieces if split else "")
        + f" at {chosen_name}" + (f" of {facts.model}" if facts.model else "")
        + f", against {first_name}"
        + (f" ({facts.layer_zero}; no context yet)." if first_name.startswith(("layer 0", "embedding")) else ".")
    )  # fmt: skip
    comparison = (
        f"similarity score: the cosine between the {n} occurrences of '{target}', {len(pairs):,} pairs, at "
        f"{chosen_name} and at {first_name}; the table shows {len(rows)}."
    )
    if facts.readout is not None:
        acc, high = facts.readout
        comparison += (
            f" Nearest sense average (leave-one-out): {acc:.0%} read right at {chosen_name}, "
            f"{'above' if acc > high + 1e-12 else 'within'} chance (shuffled labels up to {high:.0%})."
        )
    for note in facts.comparison_notes:
        comparison += " " + note
    captures, misses = _interpretation(c0, c1, senses, first_name, chosen_name, facts)
    return EvidenceCard(
        target,
        first_name,
        chosen_name,
        tuple(rows),
        representation=representation,
        comparison=comparison,
        captures=captures,
        misses=misses,
        checks=failure_checks(c1, senses, target, chosen_name, facts),
        surprises=surprises,
        none_found=none_found,
    )
