"""The leave-one-out sense readout against chance: majority rate and shuffled labels, in numbers and words.

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K`` layer representations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.stats.readout import leave_one_out_readout
from lib.stats.similarity import EPS, check_vectors

CHANCE_PERMUTATIONS = 200  # label shuffles for the chance band (fixed seed, so every run shows the same band)
CHANCE_BUDGET = 2.5e8  # multiply-adds for the shuffles: 12 sentences get 200, 500 sentences about 20 (never fewer)


@dataclass(frozen=True)
class ReadoutChance:
    """A leave-one-out nearest-centroid readout per layer, read against chance.

    accuracy:      (K,) the readout with the real labels (the same numbers as :func:`leave_one_out_readout`).
    majority:      accuracy of always answering the most common sense.
    shuffled_mean: (K,) mean accuracy of the same readout over label permutations (same sense sizes).
    shuffled_p95:  (K,) 95th percentile of those accuracies: the top of the chance band.
    n_permutations, n_evaluated: how many shuffles, how many sentences were scored.
    at_or_below:   (K,) the share of shuffles that score as low as the real readout or lower: its percentile
                   among them (a real readout of 0 % that 4 % of shuffles also reach is at the 4th
                   percentile: within chance, but not what shuffled labels typically give).
    With no signal a left-out sentence's own centroid moves away from it, so the shuffled readout can
    sit *below* the majority rate (two equal senses: near 0 %), which is why both are reported.
    """

    accuracy: np.ndarray
    majority: float
    shuffled_mean: np.ndarray
    shuffled_p95: np.ndarray
    n_permutations: int
    n_evaluated: int
    at_or_below: np.ndarray | None = None

    @property
    def within_chance(self) -> np.ndarray:
        """(K,) bool: the real readout is no better than the 95th percentile of shuffled labels."""
        return self.accuracy <= self.shuffled_p95 + 1e-12

    def chance_layers(self, k: int | None = None) -> list[int]:
        """Indices (of the first ``k`` entries, default all) where the readout is within the chance band."""
        w = self.within_chance if k is None else self.within_chance[:k]
        return [int(i) for i in np.flatnonzero(w)]


def _loo_accuracy_from_gram(gram: np.ndarray, onehot: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Leave-one-out nearest-centroid accuracy for many labellings at once, from the Gram matrices.

    gram: (K, m, m) dot products of the (raw) vectors; onehot: (P, m, S) labellings (sense sizes >= 2);
    labels: (P, m) the same as integers. Returns (P, K). The cosine of x_i with a centroid is that with
    the sense's *sum* (scale does not change a cosine): x_i.sum_s = (G Y)[i, s] and
    |sum_s|^2 = (Yᵀ G Y)[s, s]; the own sense drops x_i: x_i.(sum - x_i) = (G Y)[i, s] - G[i, i] and
    |sum - x_i|^2 = |sum|^2 - 2 (G Y)[i, s] + G[i, i].
    """
    p, m, n_s = onehot.shape
    k = gram.shape[0]
    y = np.transpose(onehot, (1, 0, 2)).reshape(m, p * n_s)  # (m, P*S)
    gy = (gram @ y).reshape(k, m, p, n_s)  # (K, m, P, S)
    sq = np.einsum("kmps,mps->kps", gy, np.transpose(onehot, (1, 0, 2)))  # (K, P, S) |sum_s|^2
    diag = np.einsum("kmm->km", gram)  # (K, m) |x_i|^2
    own = np.transpose(onehot, (1, 0, 2)).astype(bool)  # (m, P, S)
    dots = np.where(own[None], gy - diag[:, :, None, None], gy)
    norms2 = np.where(own[None], sq[:, None] - 2 * gy + diag[:, :, None, None], sq[:, None])
    xnorm = np.sqrt(np.maximum(diag, 0.0))[:, :, None, None]
    denom = np.sqrt(np.maximum(norms2, 0.0)) * xnorm
    cos = np.where(denom > EPS, dots / np.where(denom > EPS, denom, 1.0), 0.0)  # (K, m, P, S)
    pred = np.argmax(cos, axis=3)  # (K, m, P)
    return (pred == labels.T[None]).mean(axis=1).T  # (P, K)


def readout_chance(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    n_permutations: int = CHANCE_PERMUTATIONS,
    seed: int = 0,
) -> ReadoutChance | None:
    """The leave-one-out nearest-centroid readout per layer next to two chance levels.

    Chance is (1) the majority-sense rate and (2) the same readout on shuffled labels: the labels of the
    scored sentences are permuted ``n_permutations`` times (seeded), keeping each sense's size, and the
    mean and 95th percentile accuracy per layer are kept. A readout at or below that 95th percentile is
    within chance: the labels could have been random. Large sets get fewer shuffles (``CHANCE_BUDGET``).
    vectors: (n, K, H); senses: n labels (None/"" ignored). Same sentences and senses as
    :func:`leave_one_out_readout`; None when it is None.
    """
    v = check_vectors(vectors).astype(np.float64)
    ro = leave_one_out_readout(v, senses)
    if ro is None:
        return None
    idx = ro.evaluated
    names = list(ro.senses)
    labels = np.array([names.index(senses[i]) for i in idx])
    x = v[idx]  # (m, K, H)
    m, k = x.shape[0], x.shape[1]
    xk = np.ascontiguousarray(np.transpose(x, (1, 0, 2)))  # (K, m, H)
    gram = xk @ np.transpose(xk, (0, 2, 1))  # (K, m, m), batched BLAS
    cost = k * m * m * len(names)  # multiply-adds per shuffle
    n_perm = int(max(20, min(n_permutations, CHANCE_BUDGET // max(cost, 1))))
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(labels) for _ in range(n_perm)])  # (P, m)
    eye = np.eye(len(names), dtype=np.float64)
    acc = np.concatenate(
        [
            _loo_accuracy_from_gram(gram, eye[chunk], chunk)
            for chunk in np.array_split(perms, max(1, int(np.ceil(n_perm * m * len(names) * k / 2e6))))
        ]
    )  # (P, K), in chunks so memory stays bounded for large sets
    return ReadoutChance(
        accuracy=np.asarray(ro.accuracy, dtype=np.float64),
        majority=float(ro.majority_baseline),
        shuffled_mean=acc.mean(axis=0),
        shuffled_p95=np.percentile(acc, 95, axis=0),
        n_permutations=n_perm,
        n_evaluated=m,
        at_or_below=(acc <= np.asarray(ro.accuracy, dtype=np.float64)[None, :] + 1e-12).mean(axis=0),
    )


def chance_phrase(rc: ReadoutChance, i: int) -> str:
    """The readout at index ``i`` against chance, as a phrase: '67 % (shuffled labels: mean 48 %, 95th
    percentile 75 %; always the commonest sense: 42 %), within chance'."""
    verdict = "within chance" if rc.within_chance[i] else "above chance"
    return (
        f"{rc.accuracy[i]:.0%} (shuffled labels: mean {rc.shuffled_mean[i]:.0%}, 95th percentile "
        f"{rc.shuffled_p95[i]:.0%}; always the commonest sense: {rc.majority:.0%}), {verdict}"
    )


def layer_list(indices: Sequence[int]) -> str:
    """'layer 0', 'layers 0 and 3', 'layers 0, 2 and 5'."""
    idx = [str(int(i)) for i in indices]
    if len(idx) == 1:
        return f"layer {idx[0]}"
    return f"layers {', '.join(idx[:-1])} and {idx[-1]}"


def layer_runs(layers: Sequence[int]) -> str:
    """Layer numbers as text, runs of three or more joined: [2, 3, 4, 6] -> 'layers 2–4 and 6'; [1, 2] ->
    'layers 1 and 2' (:func:`layer_list` names each one); [] -> 'no layer' (e.g. no layer could be read)."""
    if not len(layers):
        return "no layer"
    runs: list[list[int]] = []
    for k in sorted(int(x) for x in layers):
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    parts = []
    for r in runs:
        parts += [f"{r[0]}–{r[-1]}"] if len(r) > 2 else [str(x) for x in r]
    one = len(parts) == 1 and "–" not in parts[0]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return ("layer " if one else "layers ") + text


def verdict_phrase(rc: ReadoutChance, i: int) -> str:
    """The readout at index ``i`` against chance, to follow its number: 'above chance (shuffled labels reach
    67%)', 'within chance (...)', or, when even shuffled labels reach 100 %, that the set is too small to tell:
    a perfect readout means nothing where random labels are read perfectly too."""
    p95 = float(rc.shuffled_p95[i])
    if p95 >= 1.0 - 1e-12:
        return (
            "within chance: with so few sentences, shuffled labels are read 100% right too, so this set cannot "
            "show a separation (add sentences to each sense)"
        )
    verdict = "within chance" if rc.within_chance[i] else "above chance"
    return f"{verdict} (shuffled labels reach {p95:.0%})"


def position_note(
    rc: ReadoutChance, *, holds: str = "the word piece, its position and the segment", shared: bool = False
) -> str:
    """What the readout at the embedding layer (index 0) says, in words.

    ``holds``: what the model's layer 0 holds (:func:`lib.models.facts.layer_zero_holds`); ``shared``: True
    when a word piece has the same layer-0 vector wherever it stands (no position added at the input,
    :func:`lib.models.facts.layer_zero_shared`). Layer 0 holds no context, so a readout above chance there
    can only come from the word's form (which word pieces it is) or, where layer 0 adds it, its position going
    with its sense.
    """
    a0 = rc.accuracy[0]
    if not rc.within_chance[0]:
        what = "which form of the word it is" if shared else "the word's position in the sentence (and which form of the word it is)"
        return (
            f"At the embedding layer the readout is already above chance ({a0:.0%}), although that vector "
            f"holds no context: only {what} differs there, so in this set it happens to go with sense. Small "
            "hand-written sets leak sense this way easily; compare the other layers with layer 0, not only "
            "with chance."
        )
    text = f"At the embedding layer the readout ({a0:.0%}) is within chance"
    if rc.at_or_below is not None:
        text += (
            f": {rc.at_or_below[0]:.0%} of the shuffles score this low or lower (their mean: "
            f"{rc.shuffled_mean[0]:.0%})"
        )
    text += f". That vector holds no context, only {holds}."
    if a0 < rc.majority:
        text += (
            " It is below always answering the commonest sense: with no signal, leaving a sentence out moves "
            "its own sense's average away from it, so it tends to be given another sense."
        )
    return text
