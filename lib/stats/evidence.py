"""The evidence card: a few telling sentence pairs, their cosine in two representations, as CSV and Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.stats.similarity import cosine_matrix, pair_kinds


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
class EvidenceCard:
    """A small comparison table of sentence pairs (course lesson: "evidence to keep").

    rows: the pairs shown; surprising: index into ``rows`` of the most surprising pair;
    reason: one sentence saying why it is surprising; first_name / chosen_name: the two
    representations compared (e.g. "embedding layer (0)" and "layer 4"); notes: further lines for the
    Markdown card (e.g. the sense readout against chance), added with ``dataclasses.replace``.
    """

    target: str
    first_name: str
    chosen_name: str
    rows: tuple[EvidenceRow, ...]
    surprising: int | None
    reason: str
    notes: tuple[str, ...] = ()

    _HEADER = ("sentence A", "sentence B", "sense A", "sense B", "same sense")

    def _records(self) -> list[list[str]]:
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
                    "yes" if k == self.surprising else "",
                ]
            )
        return out

    def header(self) -> list[str]:
        return [*self._HEADER, f"cosine {self.first_name}", f"cosine {self.chosen_name}", "most surprising"]

    def to_csv(self) -> str:
        """The card as CSV text (header row first), safe to open in a spreadsheet (lib.serving.export)."""
        from lib.serving.export import csv_text

        return csv_text(self._records(), header=self.header())

    def to_markdown(self) -> str:
        """The card as a Markdown table with a title and the reason for the surprising pair.

        Every text is escaped (lib.serving.export.escape_markdown): a sentence's raw HTML or ``javascript:`` link
        shows as typed in any Markdown viewer."""
        from lib.serving.export import escape_markdown

        def cell(s: str) -> str:
            return escape_markdown(s, newline=" ")

        lines = [f"### Evidence card: '{cell(self.target)}'", ""]
        lines.append("| " + " | ".join(cell(h) for h in self.header()) + " |")
        lines.append("|" + "---|" * len(self.header()))
        for rec in self._records():
            lines.append("| " + " | ".join(cell(c) for c in rec) + " |")
        if self.reason:
            lines += ["", f"Most surprising: {cell(self.reason)}"]
        for note in self.notes:
            lines += ["", cell(note)]
        return "\n".join(lines) + "\n"


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
) -> EvidenceCard:
    """Pick a few telling sentence pairs and compare their cosine in two representations.

    first, chosen: (n, H) the target's vectors in the two representations (e.g. layer 0 and the
    chosen layer or pooling); ``cosines`` may pass their two (n, n) cosine matrices when they are
    already computed. With at most ``max_rows`` pairs in total, all pairs are shown.
    Otherwise, when labels exist: the most similar different-sense pair, the least similar
    same-sense pair, the most similar same-sense pair and the least similar different-sense pair,
    then the pairs whose cosine changed most, up to ``max_rows``.

    The most surprising pair: with both kinds of pairs, the different-sense pair with the highest
    cosine in ``chosen``; otherwise the pair whose cosine changed most between the two.
    """
    n = len(sentences)
    if np.asarray(first).shape[0] != n or np.asarray(chosen).shape[0] != n or len(senses) != n:
        raise ValueError("first, chosen, sentences and senses must have the same length")
    c0, c1 = cosines if cosines is not None else (cosine_matrix(first), cosine_matrix(chosen))
    pairs, same, labelled = pair_kinds(senses)
    if len(pairs) == 0:
        return EvidenceCard(target, first_name, chosen_name, (), None, "")
    v0 = c0[pairs[:, 0], pairs[:, 1]]
    v1 = c1[pairs[:, 0], pairs[:, 1]]
    diff = labelled & ~same
    change = np.abs(v1 - v0)

    def argbest(mask: np.ndarray, values: np.ndarray, highest: bool) -> int | None:
        """The pair with the highest (lowest) value among ``mask``, the first pair on a tie."""
        if not mask.any():
            return None
        cand = np.flatnonzero(mask)  # ascending, and argmax/argmin return the first of equal values
        return int(cand[np.argmax(values[cand]) if highest else np.argmin(values[cand])])

    surprise = (
        argbest(diff, v1, True)
        if (diff.any() and same.any())
        else argbest(np.ones(len(pairs), bool), change, True)
    )
    if len(pairs) <= max_rows:
        chosen_pairs = list(range(len(pairs)))
    else:
        picks = [
            surprise,
            argbest(same, v1, False),
            argbest(same, v1, True),
            argbest(diff, v1, False),
        ]
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
    surprising = chosen_pairs.index(surprise)
    r = rows[surprising]
    if diff.any() and same.any():
        below = int((v1[same] < r.cosine_chosen).sum())
        reason = (
            f"sentences {r.i + 1} and {r.j + 1} use different senses ({r.sense_a} / {r.sense_b}) yet have "
            f"cosine {r.cosine_chosen:.2f} at {chosen_name}, higher than {below} of {int(same.sum())} "
            f"same-sense pairs."
        )
    else:
        verb = "rose" if r.change >= 0 else "fell"
        reason = (
            f"the cosine of sentences {r.i + 1} and {r.j + 1} {verb} the most, from {r.cosine_first:.2f} at "
            f"{first_name} to {r.cosine_chosen:.2f} at {chosen_name}."
        )
    return EvidenceCard(target, first_name, chosen_name, tuple(rows), surprising, reason)
