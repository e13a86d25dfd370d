"""Direction of context: does a word's vector separate its senses when the cue comes before it, or only after?

An encoder reads the whole sentence at once, so a cue on either side of "bank" can move it; a left-to-right
decoder has made the vector of "bank" before it reads anything after it, so a cue that comes only after
cannot. :func:`cue_gaps` measures both halves of a set (the "bank-cue" preset labels each sentence "before"
or "after") with the sense gap of ``lib.stats.similarity.sense_similarity``: the mean cosine of same-sense
pairs minus that of different-sense pairs, per layer, raw cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.stats.evidence import signed
from lib.stats.similarity import layer_cosine_matrices, sense_similarity

__all__ = ["NULL_PERMUTATIONS", "CueGaps", "cue_gaps", "cue_phrase", "gap_null"]

# A half "separates" the senses when its gap, at its best layer, beats what shuffled senses reach at their best
# layer in 95 % of shuffles (a null of the same sentences, the same sizes): no constant cut-off in cosine units,
# which would mean something else for every model, word and layer count
NULL_PERMUTATIONS = 200
NULL_PERCENTILE = 95.0


@dataclass(frozen=True)
class CueGaps:
    """Same-sense minus different-sense mean cosine per layer, for each half of a set, against a null.

    before, after: float64 (K,) the gap of the sentences whose cue comes before the target / only after it
    n_before, n_after: sentences in each half
    before_null, after_null: float64 (K,) per layer, the 95th percentile of the gap with the half's senses
                 shuffled (:func:`gap_null`), for a chart
    before_cut, after_cut: the 95th percentile over shuffles of the *largest* gap over the layers: a half
                 separates the senses when its own largest gap is above it (the best of many layers, compared
                 with the best of many layers)
    same_opening: (before, after) how many pairs of sentences of different senses read the same words up to and
                 including the target (given ``openings``); a left-to-right model gives such a pair one vector
    identical:   (before, after) how many of those pairs have one vector (cosine 1 within 1e-4) at every layer
    """

    before: np.ndarray
    after: np.ndarray
    n_before: int
    n_after: int
    before_null: np.ndarray | None = None
    after_null: np.ndarray | None = None
    before_cut: float = float("nan")
    after_cut: float = float("nan")
    same_opening: tuple[int, int] = (0, 0)
    identical: tuple[int, int] = (0, 0)

    @property
    def separates_before(self) -> bool:
        return bool(np.max(self.before) > self.before_cut)

    @property
    def separates_after(self) -> bool:
        return bool(np.max(self.after) > self.after_cut)


def gap_null(
    cosines: np.ndarray, labels: Sequence[str], *, n_permutations: int = NULL_PERMUTATIONS, seed: int = 0
) -> tuple[np.ndarray, float]:
    """What the same-sense minus different-sense gap reaches with the senses shuffled (sizes kept, seeded).

    cosines: (K, m, m) the half's cosine matrices; labels: its m senses. Returns the 95th percentile per layer
    (K,) and the 95th percentile of each shuffle's largest gap over the layers (a cut-off for "the best layer
    separates"). A shuffle gives the gap over the same pairs: mean cosine of its same-label pairs minus that of
    the others.
    """
    C = np.asarray(cosines, dtype=np.float64)
    m = C.shape[1]
    iu = np.triu_indices(m, 1)
    pairs = C[:, iu[0], iu[1]]  # (K, P) the pairs' cosines
    lab = np.asarray([str(x) for x in labels])
    rng = np.random.default_rng(seed)
    gaps = np.empty((n_permutations, C.shape[0]))
    for k in range(n_permutations):
        perm = rng.permutation(lab)
        same = perm[iu[0]] == perm[iu[1]]
        gaps[k] = pairs[:, same].mean(axis=1) - pairs[:, ~same].mean(axis=1)
    return np.percentile(gaps, NULL_PERCENTILE, axis=0), float(np.percentile(gaps.max(axis=1), NULL_PERCENTILE))


def cue_gaps(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    cues: Sequence[str | None],
    *,
    openings: Sequence[str] | None = None,
) -> CueGaps:
    """:class:`CueGaps` of ``vectors`` (n, K, H), one sentence each, with its sense and its cue
    ("before", "after", or None for a sentence in neither half), each half against its shuffled-sense null
    (:func:`gap_null`). ``openings``: each sentence's text up to the end of the target, to count the pairs of
    different senses a left-to-right model cannot tell apart. Raises ContextLensError when a half has fewer than
    two senses with two sentences each."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if not (len(vectors) == len(senses) == len(cues)):
        raise ValueError(f"{len(vectors)} vectors, {len(senses)} senses and {len(cues)} cues")
    out: dict[str, object] = {}
    same_opening, identical = [], []
    for half in ("before", "after"):
        idx = [i for i, c in enumerate(cues) if c == half and senses[i]]
        labels = [senses[i] for i in idx]
        names = [s for s in set(labels) if labels.count(s) >= 2]
        if len(names) < 2:
            raise ContextLensError(
                f"The sentences whose cue comes {half} the target need two senses with two sentences each; "
                "pick the preset “bank: the cue before it, or only after” again."
            )
        cos = layer_cosine_matrices(vectors[idx])  # (K, m, m)
        out[half] = sense_similarity(cos, labels).gap
        out[f"n_{half}"] = len(idx)
        out[f"{half}_null"], out[f"{half}_cut"] = gap_null(cos, labels)
        k_same = k_identical = 0
        if openings is not None:
            for a in range(len(idx)):
                for b in range(a + 1, len(idx)):
                    if labels[a] != labels[b] and openings[idx[a]] == openings[idx[b]]:
                        k_same += 1
                        k_identical += bool(np.all(cos[:, a, b] >= 1 - 1e-4))
        same_opening.append(k_same)
        identical.append(k_identical)
    return CueGaps(**out, same_opening=tuple(same_opening), identical=tuple(identical))  # type: ignore[arg-type]


def _peak(gap: np.ndarray) -> str:
    k = int(np.argmax(gap))
    return f"{signed(float(gap[k]))} at layer {k}"


def cue_phrase(encoder: CueGaps, decoder: CueGaps, target: str, decoder_name: str = "the decoder") -> str:
    """The cue-before / cue-after view in words, each model against its own null: which half each separates,
    why the decoder's cue-after half cannot (pairs that read the same words up to the target share one
    vector), and why the two models' heights do not compare. ``target`` and ``decoder_name`` are shown as
    given (escape them for Markdown first)."""
    e, d = encoder, decoder

    def verdict(g: CueGaps, half: str) -> str:
        gap, cut = (g.before, g.before_cut) if half == "before" else (g.after, g.after_cut)
        return (
            f"{'separates' if np.max(gap) > cut else 'does not separate'} ({_peak(gap)}; shuffled senses reach "
            f"{signed(cut)})"
        )

    expected = d.separates_before and not d.separates_after and e.separates_before and e.separates_after
    text = (
        f"Half the {e.n_before + e.n_after} sentences name the cue **before** “{target}”, half only **after** it, "
        "with the same openings for both senses. Each half's sense gap (same − different sense cosine) at its best "
        "layer is read against the same gap with the senses shuffled. **Encoder**: cue before "
        f"{verdict(e, 'before')}, cue after {verdict(e, 'after')}. **Decoder** ({decoder_name}): cue before "
        f"{verdict(d, 'before')}, cue after {verdict(d, 'after')}. "
        + (
            "**The decoder separates the senses only when the cue comes first; the encoder separates both "
            "halves.** Reading left to right, the decoder makes the word's vector before it reads what follows."
            if expected
            else "**Here the halves do not split as a left-to-right reading predicts; look at the curves.**"
        )
    )
    k_same, k_one = d.same_opening[1], d.identical[1]
    if k_one:
        text += (
            f" In the cue-after half, {k_one} of the {k_same} pairs of different senses that open with the same "
            f"words up to “{target}” have one vector in the decoder (cosine 1.000 at every layer): it has read "
            "nothing else when it makes that vector, so it cannot tell them apart by construction."
        )
    text += (
        " Each chart has its own scale, with its null dotted: compare a model's two lines, not the two models' "
        "heights, since their cosines start from different floors."
    )
    return text
