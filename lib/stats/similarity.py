"""Cosines of one word's vectors across sentences, layer by layer, and what the pairs of sentences say.

Everything here is plain numpy and works on arrays the encoder already produced:

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K`` layer representations
  (usually ``K = num_layers + 1`` with index 0 the embedding output), ``H`` hidden dimensions.

Cosine similarity is defined as 0 whenever one of the two vectors is (numerically) zero, so no
function here returns NaN or inf; every cosine lies in [-1, 1].

Statistics:
  * :func:`cosine_matrix` (the app's one definition of a cosine) and cosine matrices per layer;
  * the pairs ``i < j`` of a matrix (:func:`pair_values`, :func:`mean_pair_cosines`,
    :func:`most_changed_pairs`);
  * mean same-sense / different-sense cosine and their gap, the pair-ranking AUC (the same, without the
    cosines' scale), and the hardest case (a sentence nearer another sense than its own);
  * pair trajectories (one pair's cosine across layers) and nearest neighbours.

The rest of the word-vector statistics build on these, one concept per module: :mod:`lib.stats.pooling`
(pooling over layers, sentence vectors), :mod:`lib.stats.baseline` (random other-token pairs, published reference
curves), :mod:`lib.stats.contextuality` (self- and intra-sentence similarity), :mod:`lib.stats.readout` (nearest-centroid
sense readout), :mod:`lib.stats.chance` (the readout against shuffled labels), :mod:`lib.stats.evidence` (the evidence
card) and :mod:`lib.stats.layer_profile` (all of them for one sentence set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EPS = 1e-12


# --------------------------------------------------------------------------------------------
# Cosine
# --------------------------------------------------------------------------------------------


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Scale vectors along the last axis to length 1; (numerically) zero vectors stay zero.

    x: (..., H) -> (..., H) float64
    """
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    safe = np.where(norms > EPS, norms, 1.0)
    return np.where(norms > EPS, x / safe, 0.0)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Pairwise cosine similarity between rows: the app's one definition.

    a: (n, H); b: (m, H), or None for the rows of ``a`` against themselves. Returns (n, m) float64.
    Invariants: every entry lies in [-1, 1] (clipped against rounding); a (numerically) zero row has
    cosine 0 with everything, itself included; with ``b=None`` the matrix is exactly symmetric and its
    diagonal is 1 for non-zero rows. Raises ValueError for input that is not 2-D or not finite.
    """
    ua = unit_rows(_finite_rows(a, "a"))
    if b is None:
        c = np.clip(ua @ ua.T, -1.0, 1.0)
        return (c + c.T) / 2  # BLAS may round c[i, j] and c[j, i] differently
    ub = unit_rows(_finite_rows(b, "b"))
    if ub.shape[1] != ua.shape[1]:
        raise ValueError(f"a has {ua.shape[1]} dimensions but b has {ub.shape[1]}.")
    return np.clip(ua @ ub.T, -1.0, 1.0)


def _finite_rows(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_vectors, hidden); got shape {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return a


def layer_cosine_matrices(vectors: np.ndarray) -> np.ndarray:
    """Cosine matrix of the ``n`` vectors at every layer.

    vectors: (n, K, H) -> (K, n, n), each slice symmetric with values in [-1, 1].
    """
    v = unit_rows(check_vectors(vectors))
    per_layer = np.ascontiguousarray(np.transpose(v, (1, 0, 2)))  # (K, n, H)
    return np.clip(per_layer @ np.transpose(per_layer, (0, 2, 1)), -1.0, 1.0)  # batched BLAS matmul


def upper_pairs(n: int) -> np.ndarray:
    """All unordered index pairs ``i < j`` of ``n`` items, in row-major order: (n*(n-1)/2, 2) int."""
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1)


def pair_values(matrices: np.ndarray) -> np.ndarray:
    """The entries above the diagonal, pairs i < j in row-major order: (..., n, n) -> (..., P)."""
    m = np.asarray(matrices)
    i, j = np.triu_indices(m.shape[-1], k=1)
    return m[..., i, j]


def mean_pair_cosines(cosines: np.ndarray) -> np.ndarray:
    """Mean over all pairs i < j of each matrix: (K, n, n) -> (K,); zeros when n < 2."""
    values = pair_values(cosines)
    return values.mean(axis=-1) if values.shape[-1] else np.zeros(values.shape[:-1])


def most_changed_pairs(
    cosines: np.ndarray,
    senses: Sequence[str | None] | None,
    *,
    first: int,
    last: int,
    limit: int,
) -> np.ndarray:
    """The pairs to draw as lines: all of them, or the ``limit`` whose cosine changed most.

    cosines: (K, n, n); the change is ``|cosines[last] - cosines[first]|`` per pair. With ``senses``
    (labelled sets) half the quota goes to same-sense pairs (equal labels) and half to the others;
    ties keep the lower pair. Returns (P, 2) int pairs i < j in row-major order.
    """
    cos = np.asarray(cosines)
    pairs = upper_pairs(cos.shape[1])
    if len(pairs) <= limit:
        return pairs
    change = np.abs(cos[last][pairs[:, 0], pairs[:, 1]] - cos[first][pairs[:, 0], pairs[:, 1]])
    if senses is not None:
        kind = np.array([senses[i] == senses[j] for i, j in pairs], dtype=bool)
        groups, quota = (np.flatnonzero(kind), np.flatnonzero(~kind)), limit // 2
    else:
        groups, quota = (np.arange(len(pairs)),), limit
    keep: list[int] = []
    for group in groups:
        keep.extend(group[np.argsort(-change[group], kind="stable")[:quota]].tolist())
    return pairs[np.sort(keep)]


def mean_offdiagonal(matrix: np.ndarray) -> float:
    """Mean of the entries above the diagonal of one square (n, n) matrix; 0.0 when n < 2
    (:func:`mean_pair_cosines` of a single matrix)."""
    return float(mean_pair_cosines(np.asarray(matrix)[None])[0])


def check_vectors(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors)
    if v.ndim != 3:
        raise ValueError(f"expected vectors of shape (n, layers, hidden), got shape {v.shape}")
    return v


# --------------------------------------------------------------------------------------------
# Same-sense vs different-sense
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SenseSimilarity:
    """Mean cosine of same-sense and different-sense pairs at each layer.

    same:      (K,) mean cosine over pairs with the same sense label, or None if there are none.
    different: (K,) mean cosine over pairs with different sense labels, or None if there are none.
    gap:       (K,) ``same - different``, or None unless both exist.
    n_same_pairs, n_different_pairs: how many pairs went into each mean.
    Sentences without a label (None or "") take part in no pair.
    """

    same: np.ndarray | None
    different: np.ndarray | None
    gap: np.ndarray | None
    n_same_pairs: int
    n_different_pairs: int


def pair_kinds(senses: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs (P, 2), same mask (P,), labelled mask (P,)) over all unordered pairs."""
    n = len(senses)
    pairs = upper_pairs(n)
    lab = np.array([bool(s) for s in senses], dtype=bool)
    names = np.array([s if s else "" for s in senses], dtype=object)
    if len(pairs) == 0:
        empty = np.zeros(0, dtype=bool)
        return pairs, empty, empty
    labelled = lab[pairs[:, 0]] & lab[pairs[:, 1]]
    same = labelled & (names[pairs[:, 0]] == names[pairs[:, 1]])
    return pairs, same, labelled


def sense_similarity(cosines: np.ndarray, senses: Sequence[str | None]) -> SenseSimilarity:
    """Same- vs different-sense mean cosine per layer.

    cosines: (K, n, n) from :func:`layer_cosine_matrices`; senses: length n.
    """
    cos = np.asarray(cosines)
    if cos.ndim == 2:
        cos = cos[None]
    if cos.shape[1] != len(senses):
        raise ValueError(f"{len(senses)} sense labels for {cos.shape[1]} sentences")
    pairs, same, labelled = pair_kinds(senses)
    diff = labelled & ~same
    values = cos[:, pairs[:, 0], pairs[:, 1]] if len(pairs) else np.zeros((cos.shape[0], 0))
    same_mean = values[:, same].mean(axis=1) if same.any() else None
    diff_mean = values[:, diff].mean(axis=1) if diff.any() else None
    gap = same_mean - diff_mean if same_mean is not None and diff_mean is not None else None
    return SenseSimilarity(same_mean, diff_mean, gap, int(same.sum()), int(diff.sum()))


def hardest_case(cosines: np.ndarray, senses: Sequence[str | None]) -> tuple[int, int, int] | None:
    """(a, b, c): the sentence ``a`` whose most similar different-sense partner ``b`` beats its least similar
    same-sense partner ``c`` by the most (or loses to it by the least).

    cosines: (n, n) at one layer; senses: n labels (every sentence labelled). Ties go to the earlier
    sentence and partner. None when no sentence has both a same-sense and a different-sense partner.
    """
    cos = np.asarray(cosines)
    s = np.array(senses, dtype=object)
    n = len(s)
    if cos.shape != (n, n):
        raise ValueError(f"{n} sense labels for a {cos.shape} cosine matrix")
    best = None
    for i in range(n):
        same = [j for j in range(n) if j != i and s[j] == s[i]]
        diff = [j for j in range(n) if s[j] != s[i]]
        if not same or not diff:
            continue
        b = diff[int(np.argmax(cos[i, diff]))]
        c = same[int(np.argmin(cos[i, same]))]
        score = cos[i, b] - cos[i, c]
        if best is None or score > best[0]:
            best = (score, i, b, c)
    return None if best is None else best[1:]


# --------------------------------------------------------------------------------------------
# Pair trajectories
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairTrajectories:
    """Cosine of individual sentence pairs across layers.

    pairs:   (P, 2) int sentence indices (i < j).
    cosines: (P, K) cosine of the pair at each layer.
    same_sense: (P,) bool, or None when the pair kinds are unknown (no labels).
    """

    pairs: np.ndarray
    cosines: np.ndarray
    same_sense: np.ndarray | None


def pair_trajectories(
    cosines: np.ndarray,
    senses: Sequence[str | None] | None = None,
    pairs: np.ndarray | Sequence[tuple[int, int]] | None = None,
) -> PairTrajectories:
    """One line per pair: ``cosines[:, i, j]`` across layers.

    cosines: (K, n, n); pairs: (P, 2) or None for all pairs i < j.
    ``same_sense`` is filled only when every sentence has a label.
    """
    cos = np.asarray(cosines)
    n = cos.shape[1]
    p = upper_pairs(n) if pairs is None else np.asarray(pairs, dtype=int).reshape(-1, 2)
    traj = cos[:, p[:, 0], p[:, 1]].T if len(p) else np.zeros((0, cos.shape[0]))
    same = None
    if senses is not None and len(senses) == n and all(senses):
        s = np.array(senses, dtype=object)
        same = s[p[:, 0]] == s[p[:, 1]] if len(p) else np.zeros(0, dtype=bool)
    return PairTrajectories(p, traj, same)


def pair_ranking_auc(cosines: np.ndarray, senses: Sequence[str | None]) -> np.ndarray | None:
    """Per layer, the chance that a same-sense pair has a higher cosine than a different-sense pair.

    cosines: (K, n, n) (or one (n, n) matrix); senses: n labels (unlabelled sentences take part in no
    pair). Over every (same-sense pair, different-sense pair) combination, ties counting half: 1.0 means
    every same-sense pair beats every different-sense pair, 0.5 is chance. It depends only on the order
    of the cosines, so any rescaling or shift of the cosines leaves it unchanged (the gap does not).
    Returns (K,), or None without both kinds of pairs.
    """
    cos = np.asarray(cosines, dtype=np.float64)
    if cos.ndim == 2:
        cos = cos[None]
    pairs, same, labelled = pair_kinds(senses)
    diff = labelled & ~same
    if not same.any() or not diff.any():
        return None
    vals = cos[:, pairs[:, 0], pairs[:, 1]]  # (K, P)
    a, b = vals[:, same], vals[:, diff]
    both = np.concatenate([a, b], axis=1)
    # ranks with ties averaged (Mann-Whitney U), one layer at a time
    out = np.empty(len(both))
    na, nb = a.shape[1], b.shape[1]
    for r, row in enumerate(both):
        order = np.argsort(row, kind="mergesort")
        sorted_row = row[order]
        ranks = np.empty(len(row))
        _, first, counts = np.unique(sorted_row, return_index=True, return_counts=True)
        avg = first + (counts + 1) / 2.0  # 1-based average rank of each tie group
        ranks[order] = np.repeat(avg, counts)
        u = ranks[:na].sum() - na * (na + 1) / 2.0
        out[r] = u / (na * nb)
    return out


# --------------------------------------------------------------------------------------------
# Nearest neighbours
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbours:
    """The sentences most similar to one sentence.

    query: index of the sentence asked about.
    indices: (k,) the other sentences, most similar first (ties: lower index first).
    cosines: (k,) their cosine with the query.
    """

    query: int
    indices: np.ndarray
    cosines: np.ndarray


def nearest_neighbours(vectors: np.ndarray, query: int, k: int = 5) -> Neighbours:
    """The ``k`` nearest other sentences to ``query`` by cosine. vectors: (n, H)."""
    v = np.asarray(vectors)
    n = v.shape[0]
    if not 0 <= query < n:
        raise ValueError(f"query must be between 0 and {n - 1}")
    sims = cosine_matrix(v[query : query + 1], v)[0]
    others = np.array([i for i in range(n) if i != query], dtype=int)
    order = others[np.lexsort((others, -sims[others]))][:k]
    return Neighbours(query, order, sims[order])
