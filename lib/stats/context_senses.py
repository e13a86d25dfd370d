"""Editing the context, read by senses: which sense average the target is nearest at each layer, how far each
context word pulls it towards its sense, and a few swaps to try (a content word of another sense's sentence).

Built on an occlusion (lib.stats.context.occlusion) of one sentence of a labelled set: its ``base`` and ``moved``
vectors are compared with the mean vector of each sense (:func:`sense_centroids`), leaving the edited sentence out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from lib.stats.similarity import unit_rows

if TYPE_CHECKING:
    from lib.stats.context import Occlusion

# Words too common to suggest as swaps (the suggestions are content words of the other senses).
_FUNCTION_WORDS = """a an the and or but if so of to in on at by for from with without into onto over under up down out off
    about after before during while than then as is are was were be been being am do does did done have has had
    it its it's this that these those there here he she they we you i me him her them us my your his our their
    not no yes can could will would shall should may might must just very too also still only even all any
    some each every both other another such more most much many few lot again once when where why how what
    which who whom whose because since until near far own same"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())


@dataclass(frozen=True)
class SenseCentroids:
    """The mean target vector of each sense of a labelled set, per layer.

    names:     the senses, in order of first appearance
    centroids: float64 (n_senses, num_layers + 1, hidden)
    sizes:     how many sentences each centroid averages
    """

    names: tuple[str, ...]
    centroids: np.ndarray
    sizes: tuple[int, ...]

    def nearest(self, vector: np.ndarray) -> tuple[str, ...]:
        """The sense whose centroid has the highest cosine with ``vector`` (K, H), per layer."""
        sim = np.einsum("kh,skh->sk", unit_rows(vector), unit_rows(self.centroids))  # (S, K)
        return tuple(self.names[i] for i in np.argmax(sim, axis=0))


def sense_centroids(
    vectors: np.ndarray, senses: Sequence[str | None], exclude: int | None = None
) -> SenseCentroids | None:
    """Centroids of each labelled sense, leaving out sentence ``exclude`` (the one being edited, so it does
    not pull its own sense's centroid towards itself). None unless two senses remain."""
    names: list[str] = []
    for i, s in enumerate(senses):
        if s and i != exclude and s not in names:
            names.append(s)
    if len(names) < 2:
        return None
    v = np.asarray(vectors, dtype=np.float64)
    cents, sizes = [], []
    for name in names:
        idx = [i for i, s in enumerate(senses) if s == name and i != exclude]
        cents.append(v[idx].mean(axis=0))
        sizes.append(len(idx))
    return SenseCentroids(tuple(names), np.stack(cents), tuple(sizes))


def sense_pull(occ: Occlusion, cents: SenseCentroids, sense: str, layer: int) -> np.ndarray:
    """(n_words,) how far each word pulls the target towards ``sense`` at ``layer``.

    The margin of a vector is its cosine with the ``sense`` centroid minus its highest cosine with another
    sense's centroid (> 0: nearest to ``sense``); the pull of a word is the target's margin in the original
    sentence minus its margin with the word replaced. Positive: the word pulled the target towards ``sense``
    (without it the target is less clearly that sense); negative: it pulled the target away. Unlike the
    shift (any change of the vector) it measures a change of sense only.
    """
    if occ.moved is None or sense not in cents.names:
        raise ValueError("needs an occlusion with its moved vectors and a sense among the centroids")
    c = unit_rows(cents.centroids[:, layer, :])  # (S, H)
    own = cents.names.index(sense)

    def margin(v: np.ndarray) -> np.ndarray:
        sim = unit_rows(np.atleast_2d(v)) @ c.T  # (n, S)
        others = np.delete(sim, own, axis=1)
        return sim[:, own] - others.max(axis=1)

    return margin(occ.base[layer])[0] - margin(occ.moved[:, layer, :])


def pull_noise(occ: Occlusion, pull: np.ndarray, *, causal: bool) -> float:
    """How large a pull is still rounding: for a left-to-right model, the largest |pull| of a word after the target
    (which the target cannot see, so its true pull is 0); otherwise 0.001."""
    after = list(occ.after_target)
    if causal and after:
        return max(float(np.max(np.abs(np.asarray(pull)[after]))), 1e-4)
    return 1e-3


def pull_notes(
    occ: Occlusion,
    pull: np.ndarray,
    shown: Sequence[int],
    sense: str,
    deleted: bool,
    *,
    causal: bool,
    layer: int = -1,
    quote=lambda w: f"“{w}”",
) -> list[str]:
    """Sentences on what the pulls of the ``shown`` words say where a rule can see why.

    A word whose edit leaves the target *nearer* its own sense (a negative pull beyond rounding,
    :func:`pull_noise`) pulled it away from ``sense``; when the word was deleted and stands before the
    target, the deletion also moved the target one place to the left, which the pull counts too. And when the
    word that moves the target most is not the one that pulls it most towards its sense, the shift is mostly not
    a change of sense. ``pull``: (n_words,) :func:`sense_pull` at ``layer``; ``quote`` formats a word for the
    page (e.g. escaped Markdown in quotes).
    """
    p = np.asarray(pull, dtype=np.float64)
    noise = pull_noise(occ, p, causal=causal)
    out: list[str] = []
    neg = [j for j in shown if p[j] < -noise]
    if neg:
        j = min(neg, key=lambda k: p[k])
        text = (
            f"Without {quote(occ.words[j])} the target sits *nearer* the {quote(sense)} average (pull "
            f"{p[j]:+.3f}): here that word pulled it away from its sense, however much it reads as a cue."
        )
        if deleted and j in occ.before_target:
            text += (
                " Deleting a word before the target also moves the target one place to the left, and its "
                "vector changes with its position too."
            )
        out.append(text)
    layer_top = max(shown, key=lambda k: occ.shift[layer, k]) if shown else None
    pos = [j for j in shown if p[j] > noise]
    if layer_top is not None and pos:
        best = max(pos, key=lambda k: p[k])
        if best != layer_top and p[layer_top] < p[best] / 2:
            out.append(
                f"{quote(occ.words[layer_top])} moves the target most but pulls it only {p[layer_top]:+.3f} "
                f"towards {quote(sense)}; {quote(occ.words[best])} pulls it most ({p[best]:+.3f}): the shift "
                "counts any change of the vector, and most of this one is not a change of sense."
            )
    return out


def sense_flip(before: Sequence[str], after: Sequence[str]) -> int | None:
    """The layer from which the edited sentence's nearest sense differs from the original's up to the last
    layer, or None when the last layer agrees."""
    n = len(before)
    if n == 0 or before[-1] == after[-1]:
        return None
    k = n - 1
    while k > 0 and before[k - 1] != after[k - 1]:
        k -= 1
    return k


@dataclass(frozen=True)
class Swap:
    """A suggested edit: replace ``word`` (index ``index`` into the occlusion's words) by ``replacement``,
    a word from a sentence of sense ``sense``."""

    index: int
    word: str
    replacement: str
    sense: str


def top_content_word(occ: Occlusion, target: str | None = None) -> int | None:
    """Index of the content word (not a function word, punctuation or the target) whose masking moves the
    target most at the last layer; None when the sentence has no content word."""
    content = [j for j, w in enumerate(occ.words) if _is_content(w, occ.target, target)]
    return max(content, key=lambda k: occ.shift[-1, k]) if content else None


def suggested_swaps(
    occ: Occlusion,
    others: Sequence[tuple[str, Occlusion]],
    *,
    target: str | None = None,
    per_sense: int = 2,
    limit: int = 6,
) -> list[Swap]:
    """A handful of swaps: replace the content word that moves the target most here by the content word
    that moves it most in a sentence of another sense.

    others: (sense, occlusion of one sentence of that sense), e.g. the first few sentences of each other
    sense. Senses take turns, so every sense gets a suggestion before any gets a second.
    """
    j = top_content_word(occ, target)
    if j is None:
        return []
    here = {w.lower() for w in occ.words}
    by_sense: dict[str, list[str]] = {}
    seen: set[str] = set()
    for sense, o in others:
        k = top_content_word(o, target)
        if k is None:
            continue
        w = o.words[k]
        if w.lower() in here or w.lower() in seen:
            continue
        seen.add(w.lower())
        by_sense.setdefault(sense, []).append(w)
    out: list[Swap] = []
    for turn in range(per_sense):
        for sense, words in by_sense.items():
            if turn < len(words):
                out.append(Swap(j, occ.words[j], words[turn], sense))
    return out[:limit]


def _is_content(word: str, *targets: str | None) -> bool:
    lw = word.lower()
    if not word.isalpha() or lw in FUNCTION_WORDS:
        return False
    return all(not t or lw != t.lower() for t in targets)
