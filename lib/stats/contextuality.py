"""How contextual a word's vectors are: Ethayarajh (2019)'s self-similarity and intra-sentence similarity.

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K`` layer representations.
* ``hidden_states``: a sequence of ``(K, n_tokens_i, H)`` arrays, one per sentence.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from lib.stats.pooling import POOLED, pooled_layers, with_pooled
from lib.stats.similarity import check_vectors, unit_rows


def self_similarity(vectors: np.ndarray) -> np.ndarray:
    """Self-similarity per layer (Ethayarajh 2019, eq. 1).

    The mean cosine between the same word's vectors in different contexts, over all pairs j != k:
    ``SelfSim_l(w) = 1/(n^2 - n) * sum_j sum_{k != j} cos(f_l(s_j, i_j), f_l(s_k, i_k))``.
    vectors: (n, K, H) with n >= 2 -> (K,).
    """
    v = check_vectors(vectors)
    n = v.shape[0]
    if n < 2:
        raise ValueError("self-similarity needs the word in at least two sentences")
    u = unit_rows(v)  # (n, K, H)
    total = u.sum(axis=0)  # (K, H)
    # sum over ordered pairs j != k of u_j.u_k = |sum u|^2 - sum |u_j|^2
    pair_sum = np.einsum("kh,kh->k", total, total) - np.einsum("nkh,nkh->k", u, u)
    return np.clip(pair_sum / (n * n - n), -1.0, 1.0)


def intra_sentence_similarity(
    hidden_states: Sequence[np.ndarray], masks: Sequence[np.ndarray] | None = None, pooled: bool = False
) -> np.ndarray:
    """Intra-sentence similarity per layer (Ethayarajh 2019, eq. 2), averaged over sentences.

    For a sentence with word vectors ``f_l(s, 1..n)`` and mean ``s_l = 1/n sum_i f_l(s, i)``:
    ``IntraSim_l(s) = 1/n sum_i cos(s_l, f_l(s, i))``. The result is the mean over sentences.
    hidden_states: per sentence (K, n_tokens_i, H); masks: per sentence (n_tokens_i,) bool of the
    tokens to use (e.g. no [CLS]/[SEP]), or None for all. Sentences with no selected token are skipped.
    Returns (K,), or (K + 2,) with ``pooled=True`` (see :func:`with_pooled`); zeros if no sentence has a
    token.
    """
    per_sentence = []
    k = None
    for i, hs in enumerate(hidden_states):
        hs = np.asarray(hs)
        sel = hs if masks is None else hs[:, np.asarray(masks[i], dtype=bool), :]  # (K, T, H), its own dtype
        k = sel.shape[0] + (2 if pooled else 0)
        if sel.shape[1] == 0:
            continue
        # one representation at a time, in float64: a float64 copy of every layer of a long sentence at once
        # is (K, T, H) × 8 bytes (a 31-layer, 576-wide model's 128 pieces: 18 MB, several copies deep)
        reps = (sel[j] for j in range(sel.shape[0]))
        if pooled:
            reps = itertools.chain(reps, (sel[list(pooled_layers(sel.shape[0], name))].mean(axis=0, dtype=np.float64)
                                          for name in POOLED))  # fmt: skip
        per_sentence.append([_mean_cosine_to_centre(x) for x in reps])
    if not per_sentence:
        return np.zeros(k or 0)
    return np.clip(np.mean(per_sentence, axis=0), -1.0, 1.0)


def _mean_cosine_to_centre(x: np.ndarray) -> float:
    """Mean cosine of the rows of ``x`` (T, H) to their mean, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return float((unit_rows(x) @ unit_rows(x.mean(axis=0))).mean())


def target_context_similarity(
    hidden_states: Sequence[np.ndarray],
    target_indices: Sequence[Sequence[int]],
    masks: Sequence[np.ndarray],
    pooled: bool = False,
) -> np.ndarray:
    """How close the target sits to the rest of its sentence, per layer, averaged over sentences.

    Per sentence: the cosine between the target's vector (mean of its word pieces) and the mean of the other
    selected word pieces (``masks``: per sentence (n_tokens_i,) bool, e.g. no [CLS]/[SEP]; the target's own
    pieces are left out). Beside :func:`self_similarity` (the target against itself in other sentences) it
    says whether the vector stands for the word or has drifted towards its sentence.
    hidden_states: per sentence (K, n_tokens_i, H). Returns (K,), or (K + 2,) with ``pooled=True``; NaN when
    no sentence has another selected word piece.
    """
    per_sentence = []
    k = None
    for hs, idx, mask in zip(hidden_states, target_indices, masks, strict=True):
        hs = np.asarray(hs)  # averaged in float64 without a float64 copy of the whole sentence
        others = np.asarray(mask, dtype=bool).copy()
        others[list(idx)] = False
        target = hs[:, list(idx), :].mean(axis=1, dtype=np.float64)  # (K, H)
        rest = hs[:, others, :].mean(axis=1, dtype=np.float64) if others.any() else None
        k = hs.shape[0] + (2 if pooled else 0)
        if rest is None:
            continue
        if pooled:
            target, rest = with_pooled(target, axis=0), with_pooled(rest, axis=0)
        per_sentence.append(np.einsum("kh,kh->k", unit_rows(target), unit_rows(rest)))
    if not per_sentence:
        return np.full(k or 0, np.nan)
    return np.clip(np.mean(per_sentence, axis=0), -1.0, 1.0)
