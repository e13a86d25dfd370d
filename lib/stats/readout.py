"""Reading the sense off the vectors: nearest sense centroid per layer (Coenen et al. 2019).

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K`` layer representations.

Leave-one-out (each sentence's own sense averaged without it) or with centroids from a training set;
the majority baseline beside it. :mod:`lib.stats.chance` reads the leave-one-out readout against shuffled labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.stats.similarity import check_vectors, unit_rows


@dataclass(frozen=True)
class SenseReadout:
    """How well a nearest-sense-centroid rule recovers the sense labels, per layer.

    accuracy:    (K,) fraction of evaluated sentences whose nearest centroid (cosine) has their sense.
    predictions: (K, m) predicted sense of each evaluated sentence at each layer.
    evaluated:   (m,) indices (into the input, or the test set) of the sentences that were scored.
    senses:      the sense labels that have a centroid, sorted.
    majority_sense, majority_baseline: the most frequent sense among the evaluated sentences and the
                 accuracy of always answering it.
    best_layer, best_accuracy: the layer with the highest accuracy (the first one on ties).
    method:      "leave-one-out" or "train/test".
    """

    accuracy: np.ndarray
    predictions: np.ndarray
    evaluated: np.ndarray
    senses: tuple[str, ...]
    majority_sense: str
    majority_baseline: float
    best_layer: int
    best_accuracy: float
    method: str


def _labelled(senses: Sequence[str | None]) -> np.ndarray:
    return np.array([i for i, s in enumerate(senses) if s], dtype=int)


def _readout(accuracy, predictions, evaluated, names, eval_labels, method) -> SenseReadout:
    counts = Counter(eval_labels)
    majority_sense, majority_count = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    best = int(np.argmax(accuracy))
    return SenseReadout(
        accuracy=accuracy,
        predictions=predictions,
        evaluated=evaluated,
        senses=tuple(names),
        majority_sense=majority_sense,
        majority_baseline=majority_count / len(eval_labels),
        best_layer=best,
        best_accuracy=float(accuracy[best]),
        method=method,
    )


def leave_one_out_centroid_cosines(vectors: np.ndarray, labels: np.ndarray, n_groups: int) -> np.ndarray:
    """Each vector's cosine with the average of every group, its own group's average taken without it.

    vectors: (m, K, H); labels: (m,) int group of each vector, 0 .. n_groups - 1, every group with at least
    two members (so a vector's own group is not empty once it is left out). Returns (m, n_groups, K) float64.
    The core of :func:`leave_one_out_readout`: the nearest group per vector is its leave-one-out reading.
    """
    x = check_vectors(vectors).astype(np.float64)
    labels = np.asarray(labels, dtype=int)
    sizes = np.bincount(labels, minlength=n_groups).astype(np.float64)  # (S,)
    if len(labels) != len(x) or len(sizes) != n_groups or sizes.min() < 2:
        raise ValueError(f"need one label in 0..{n_groups - 1} per vector and at least two vectors per group")
    sums = np.stack([x[labels == s].sum(axis=0) for s in range(n_groups)])  # (S, K, H)
    # cosine of every vector with every full average: (m, S, K)
    sim = np.einsum("mkh,skh->msk", unit_rows(x), unit_rows(sums / sizes[:, None, None]))
    # its own group: the average without the vector itself
    own = (sums[labels] - x) / (sizes[labels] - 1)[:, None, None]  # (m, K, H)
    sim[np.arange(len(x)), labels, :] = np.einsum("mkh,mkh->mk", unit_rows(x), unit_rows(own))
    return sim


def leave_one_out_readout(vectors: np.ndarray, senses: Sequence[str | None]) -> SenseReadout | None:
    """Leave-one-out nearest-centroid sense classification at every layer (Coenen et al. 2019).

    For each labelled sentence, the centroid of its own sense is recomputed without it; it is then
    assigned the sense whose centroid has the highest cosine with its vector.
    Only senses with at least two sentences take part (a lone sentence has no centroid once it is
    left out). Returns None unless at least two senses have two or more sentences.
    vectors: (n, K, H); senses: length n (None/"" = unlabelled, ignored).
    """
    v = check_vectors(vectors).astype(np.float64)
    if v.shape[0] != len(senses):
        raise ValueError(f"{len(senses)} sense labels for {v.shape[0]} sentences")
    idx = _labelled(senses)
    counts = Counter(senses[i] for i in idx)
    names = sorted(s for s, c in counts.items() if c >= 2)
    if len(names) < 2:
        return None
    idx = np.array([i for i in idx if senses[i] in names], dtype=int)
    labels = np.array([names.index(senses[i]) for i in idx])
    sim = leave_one_out_centroid_cosines(v[idx], labels, len(names))  # (m, S, K)
    pred = np.argmax(sim, axis=1).T  # (K, m)
    accuracy = (pred == labels[None, :]).mean(axis=1)
    predictions = np.array(names, dtype=object)[pred]
    return _readout(accuracy, predictions, idx, names, [names[s] for s in labels], "leave-one-out")


def centroid_readout(
    train: np.ndarray,
    train_senses: Sequence[str],
    test: np.ndarray,
    test_senses: Sequence[str],
) -> SenseReadout:
    """Nearest-centroid sense classification with centroids from a training set, per layer.

    train: (n_train, K, H); test: (n_test, K, H). Test sentences whose sense has no training
    sentence are still scored (and are necessarily wrong).
    """
    tr = check_vectors(train).astype(np.float64)
    te = check_vectors(test).astype(np.float64)
    names = sorted(set(train_senses))
    if len(names) < 1 or len(test_senses) == 0:
        raise ValueError("need labelled training and test sentences")
    labels = np.array([names.index(s) for s in train_senses])
    cents = np.stack([tr[labels == s].mean(axis=0) for s in range(len(names))])  # (S, K, H)
    sim = np.einsum("mkh,skh->msk", unit_rows(te), unit_rows(cents))
    pred = np.argmax(sim, axis=1).T  # (K, m)
    predictions = np.array(names, dtype=object)[pred]
    accuracy = (predictions == np.array(test_senses, dtype=object)[None, :]).mean(axis=1).astype(float)
    return _readout(
        accuracy, predictions, np.arange(len(test_senses)), names, list(test_senses), "train/test"
    )
