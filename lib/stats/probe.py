"""A sense probe with a control: can a linear classifier read the sense off each layer, and is that more
than a classifier can do with labels that mean nothing?

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> V = rng.normal(size=(12, 3, 8))                  # (n, L+1, d): 12 sentences, 3 layers, 8 dimensions
    >>> V[6:, 2] += 3.0                                   # the senses apart at the last layer only
    >>> p = probe_layers(V, ["river"] * 6 + ["money"] * 6, folds=3, shuffles=20, seed=0)
    >>> p.accuracy.shape == p.shuffled.shape == p.shuffled_high.shape == p.over_null.shape == (3,)
    True
    >>> float(p.accuracy[2]), p.chance                   # the last layer reads the sense; the majority rate
    (1.0, 0.5)

``accuracy``: the cross-validated accuracy of a logistic-regression probe per layer; ``shuffled``: the mean
accuracy of the same probe trained on shuffled labels (the null), ``shuffled_high`` its 95th percentile (the
null's band); ``over_null``: accuracy - shuffled; ``chance``: the majority-sense rate.

A high accuracy means something next to what the same probe reaches when it is trained on shuffled labels
(same class sizes, no link to the sentences) and scored on the true ones: a permutation null. What a probe
learns from shuffled labels is wrong on the true ones, so the null usually lands *below* the majority rate;
a layer reads the sense when the probe beats both. (This is not Hewitt & Liang's 2019 *selectivity*: their
control task gives each word type a random label and scores the probe on those labels.)

The probe: per fold, standardise each dimension on the training sentences, then an L2-regularised
multinomial logistic regression (scikit-learn, C = 1). Stratified K-fold cross-validation; a sense with
fewer sentences than folds lowers the number of folds (never below 2), and a sense with one sentence is
left out (it cannot be both trained on and tested). The shuffled runs use the same folds: the labels are
permuted within the training sentences of each fold, and the probe is tested on the true labels of the
held-out sentences.

Speed: the L2-penalised solution lies in the span of the training rows, so each fold is fitted on the
training data's coordinates in that span (rank <= number of training sentences) instead of all d
dimensions; this gives the same predictions and makes small sets nearly free. Those coordinates are
along the rows' singular vectors, so L-BFGS is preconditioned by each column's length. The true labels
and all shuffles of one (layer, fold) are solved in one vectorised L-BFGS run, with every label set's
logits from one matrix product (tests check the predictions against
``sklearn.linear_model.LogisticRegression``). 150 real sentences: ~2 s of CPU, was ~20 s. Large sets are bounded: more than ``MAX_SENTENCES``
sentences are probed on a stratified sample of that many, and the number of shuffles is lowered (never
below ``MIN_SHUFFLES``) to keep the work under ``MAX_WORK``; ``notes`` says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lib.serving.lazy import load

CURVATURE = 0.1  # typical p(1 - p) of the log-loss, for _fit_batch's preconditioning
MAX_SENTENCES = 150  # a larger set is probed on a stratified sample of this many sentences
MAX_WORK = 12_000_000  # bound on (runs × layers × folds × rows × columns × classes): a few seconds
MIN_SHUFFLES = 5
BAND_PERCENTILE = 95


class ProbeError(ValueError):
    """The labels cannot be probed (e.g. fewer than two senses with two sentences); the message says why."""


@dataclass(frozen=True)
class ProbeResult:
    """Cross-validated probe accuracy per layer, with the shuffled-label control.

    accuracy:       (L+1,) share of held-out sentences whose sense the probe got right, per layer
    shuffled:       (L+1,) mean accuracy over ``shuffles`` runs with permuted training labels
    shuffled_high:  (L+1,) the 95th percentile of those runs: a layer whose accuracy is at or below it
                    is "within the control's band" (no evidence the layer encodes the sense)
    shuffled_runs:  (shuffles, L+1) every shuffled run
    chance:         share of the most common sense among the sentences used
    senses:         the senses used, sorted; n: sentences used; folds, shuffles: as run
    dropped:        senses left out (a single sentence each)
    notes:          sentences for the learner (fewer folds or shuffles than asked, senses left out)
    """

    accuracy: np.ndarray
    shuffled: np.ndarray
    shuffled_high: np.ndarray
    shuffled_runs: np.ndarray
    chance: float
    senses: tuple[str, ...]
    n: int
    folds: int
    shuffles: int
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def over_null(self) -> np.ndarray:
        """(L+1,) accuracy minus the shuffled-label null's mean."""
        return self.accuracy - self.shuffled

    @property
    def within_band(self) -> np.ndarray:
        """(L+1,) bool: the layer's accuracy does not beat the null's 95th percentile."""
        return self.accuracy <= self.shuffled_high + 1e-12

    @property
    def best_layer(self) -> int:
        """The layer with the highest accuracy over the null (the first, on a tie)."""
        return int(np.argmax(np.round(self.over_null, 12)))

    @property
    def best_above_band(self) -> int | None:
        """The layer furthest above the null's mean among those that beat its band (the first, on a tie); None
        when no layer beats it (the furthest above the mean may still be inside the band)."""
        above = np.flatnonzero(~self.within_band)
        if not len(above):
            return None
        return int(above[np.argmax(np.round(self.over_null[above], 12))])


def _usable(labels: Sequence[str | None]) -> tuple[np.ndarray, list[str], list[str]]:
    """Indices of sentences whose sense has >= 2 sentences, the senses kept and the senses dropped."""
    counts = Counter(s for s in labels if s)
    keep = sorted(s for s, c in counts.items() if c >= 2)
    dropped = sorted(s for s, c in counts.items() if c < 2)
    idx = np.array([i for i, s in enumerate(labels) if s in set(keep)], dtype=int)
    return idx, keep, dropped


def _fit_batch(A: np.ndarray, Y: np.ndarray, mask: np.ndarray, classes: int, C: float = 1.0) -> tuple:
    """Fit many independent L2-penalised logistic regressions at once (scikit-learn's objective).

    A: (D, m, r) one design per problem group; Y: (D, S, m) integer labels, S label sets per design;
    mask: (D, m) 1 for real rows, 0 for padding. Minimises, for every (design, label set),
    ``0.5 * ||W||² + C * Σ_rows log-loss`` with an unpenalised intercept: multinomial for 3+ classes,
    binary logistic (one weight vector) for 2, exactly as ``sklearn.linear_model.LogisticRegression``
    does. Returns (W (D, S, r, c), b (D, S, c)) with c = classes, or 1 for two classes.

    The problems are independent, so one L-BFGS run over all their parameters at once solves each of
    them (the joint objective is their sum); tests check the predictions against scikit-learn's.
    """
    minimize = load("scipy.optimize").minimize

    D, m, r = A.shape
    S = Y.shape[1]
    c = classes if classes > 2 else 1
    onehot = np.zeros((D, m, S, classes))  # rows first: every label set's logits come from one product
    np.put_along_axis(onehot, Y.transpose(0, 2, 1)[..., None], 1.0, axis=-1)
    w_rows = mask[:, :, None, None] * C  # (D, m, 1, 1)
    At = np.ascontiguousarray(A.transpose(0, 2, 1))  # (D, r, m)
    n_w = D * r * S * c
    # Preconditioning. _fold_space gives A orthogonal columns, so the objective's Hessian is close to diagonal:
    # 1 + C * p(1 - p) * ||column||² for a weight, C * p(1 - p) * rows for an intercept. L-BFGS runs on the
    # variables scaled by the inverse square root of that (the minimum is the same point, W = PW * theta):
    # ~5 times fewer iterations on 150 real sentences, the same predictions.
    col2 = np.einsum("dmr,dmr->dr", A, A)
    PW = (1.0 / np.sqrt(1.0 + C * CURVATURE * col2))[:, :, None, None]  # (D, r, 1, 1)
    PB = (1.0 / np.sqrt(1.0 + C * CURVATURE * mask.sum(axis=1)))[:, None, None]  # (D, 1, 1)

    def objective(theta):
        W = theta[:n_w].reshape(D, r, S, c) * PW
        b = theta[n_w:].reshape(D, S, c) * PB
        Z = np.matmul(A, W.reshape(D, r, S * c)).reshape(D, m, S, c) + b[:, None]
        if c == 1:  # binary: logits (0, z)
            Z = np.concatenate([np.zeros_like(Z), Z], axis=-1)
        Z -= Z.max(axis=-1, keepdims=True)
        E = np.exp(Z)
        tot = E.sum(axis=-1, keepdims=True)
        logp = Z - np.log(tot)
        loss = -np.sum(w_rows * onehot * logp) + 0.5 * np.sum(W * W)
        G = (E / tot - onehot) * w_rows  # (D, m, S, classes): d loss / d logits
        if c == 1:
            G = G[..., 1:]
        gW = np.matmul(At, G.reshape(D, m, S * c)).reshape(D, r, S, c) + W
        gb = G.sum(axis=1)
        return loss, np.concatenate([(gW * PW).ravel(), (gb * PB).ravel()])

    theta = np.zeros(n_w + D * S * c)
    f_prev = np.inf
    for _ in range(4):  # L-BFGS can stop early on a flat stretch; a restart (fresh memory) goes on
        res = minimize(
            objective, theta, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "ftol": 1e-11, "gtol": 1e-7}
        )
        theta = res.x
        if f_prev - res.fun <= 1e-9 * max(1.0, abs(res.fun)):
            break
        f_prev = res.fun
    W = (theta[:n_w].reshape(D, r, S, c) * PW).transpose(0, 2, 1, 3)  # (D, S, r, c)
    b = theta[n_w:].reshape(D, S, c) * PB
    return W, b


def _predict(B: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Predicted class per held-out row. B: (D, t, r); W: (D, S, r, c); b: (D, S, c) -> (D, S, t)."""
    Z = np.matmul(B[:, None], W) + b[:, :, None, :]  # (D, S, t, c)
    if Z.shape[-1] == 1:
        return (Z[..., 0] > 0).astype(int)
    return np.argmax(Z, axis=-1)


def _fold_space(Xtr: np.ndarray, Xte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standardise on the training rows, then take coordinates in the span of the training rows.

    An L2-penalised linear model's weight vector lies in that span (the gradient of the loss is a
    combination of the rows, and the penalty's is the weights themselves), so fitting there gives the
    same predictions with at most (training rows) columns instead of d. The coordinates are along the
    training rows' singular vectors, so the columns of the training design are orthogonal (what
    :func:`_fit_batch`'s preconditioning assumes).
    """
    StandardScaler = load("sklearn.preprocessing").StandardScaler

    scaler = StandardScaler().fit(Xtr)  # a constant dimension is centred, not divided by 0
    A, B = scaler.transform(Xtr), scaler.transform(Xte)
    _, S, Vt = np.linalg.svd(A, full_matrices=False)
    r = int(np.sum(S[0] * 1e-10 < S)) if S.size and S[0] > 0 else 0
    if r == 0:
        return np.zeros((A.shape[0], 1)), np.zeros((B.shape[0], 1))
    return A @ Vt[:r].T, B @ Vt[:r].T


def probe_layers(
    V,
    labels: Sequence[str | None],
    folds: int = 5,
    shuffles: int = 20,
    seed: int = 0,
) -> ProbeResult:
    """Cross-validated logistic-regression probe per layer, and the same probe on shuffled labels.

    V: (n, L+1, d) the target's vectors per sentence and layer; labels: n sense names (None or "" =
    unlabelled, left out). Deterministic for a given seed. Raises ProbeError with fewer than two senses
    that have two sentences each.
    """
    StratifiedKFold = load("sklearn.model_selection").StratifiedKFold
    from threadpoolctl import threadpool_limits

    X = np.asarray(V, dtype=np.float64)
    if X.ndim != 3:
        raise ProbeError(f"Expected vectors of shape (sentences, layers, hidden); got shape {X.shape}.")
    if len(labels) != X.shape[0]:
        raise ProbeError(f"There are {X.shape[0]} vectors but {len(labels)} labels; give one label per sentence.")
    if not np.all(np.isfinite(X)):
        raise ProbeError("Some vectors contain NaN or infinite values; they cannot be probed.")
    idx, senses, dropped = _usable(labels)
    if len(senses) < 2:
        raise ProbeError(
            "The probe needs at least two senses with two or more sentences each. Label the lines as "
            "“sense | sentence”."
        )
    notes: list[str] = []
    if dropped:
        notes.append(
            f"{len(dropped)} sense{'s' if len(dropped) != 1 else ''} with a single sentence "
            f"{'are' if len(dropped) != 1 else 'is'} left out of the probe: " + ", ".join(dropped) + "."
        )
    rng = np.random.default_rng(seed)
    if len(idx) > MAX_SENTENCES:
        train_test_split = load("sklearn.model_selection").train_test_split

        lab = [labels[i] for i in idx]
        idx, _ = train_test_split(idx, train_size=MAX_SENTENCES, stratify=lab, random_state=seed)
        idx = np.sort(idx)
        notes.append(
            f"The probe uses a sample of {MAX_SENTENCES} of the {len(lab)} labelled sentences (every sense "
            "keeps its share), to stay quick."
        )
        idx, senses, more = _usable([labels[i] if i in set(idx.tolist()) else None for i in range(len(labels))])
        dropped = sorted(set(dropped) | set(more))
    X = X[idx]
    y = np.array([senses.index(labels[i]) for i in idx])
    n, K = X.shape[0], X.shape[1]
    smallest = int(np.bincount(y).min())
    k = max(2, min(int(folds), smallest))
    if k != folds:
        notes.append(
            f"{k} folds instead of {folds}: the smallest sense has {smallest} sentences, and every fold needs one."
        )
    m_train = int(np.ceil(n * (k - 1) / k))
    work = K * k * m_train * min(m_train, X.shape[2]) * len(senses)  # one run: designs × rows × columns × classes
    budget = max(MIN_SHUFFLES, MAX_WORK // max(1, work) - 1)
    s_runs = int(shuffles)
    if s_runs > budget:
        notes.append(f"{budget} shuffled runs instead of {s_runs}, to keep the probe quick on {n} sentences.")
        s_runs = budget
    splits = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(n), y))
    perms = [[rng.permutation(len(tr)) for tr, _ in splits] for _ in range(s_runs)]
    C = len(senses)
    m = max(len(tr) for tr, _ in splits)
    t = max(len(te) for _, te in splits)
    r = min(m, X.shape[2])
    # one design per (layer, fold), padded to the largest fold; label sets: the true labels, then the shuffles
    A = np.zeros((K * k, m, r))
    B = np.zeros((K * k, t, r))
    mask = np.zeros((K * k, m))
    Y = np.zeros((K * k, 1 + s_runs, m), dtype=int)
    truth = np.full((K * k, t), -1)
    with threadpool_limits(limits=1):  # small products: BLAS threads only add contention on shared cores
        for layer in range(K):
            for f, (tr, te) in enumerate(splits):
                g = layer * k + f
                a, bb = _fold_space(X[tr, layer], X[te, layer])
                A[g, : len(tr), : a.shape[1]] = a[:, :r]
                B[g, : len(te), : bb.shape[1]] = bb[:, :r]
                mask[g, : len(tr)] = 1.0
                Y[g, 0, : len(tr)] = y[tr]
                for s in range(s_runs):
                    Y[g, 1 + s, : len(tr)] = y[tr][perms[s][f]]
                truth[g, : len(te)] = y[te]
        # one solver run per (layer, fold): its label sets share the design, so they converge together
        pred = np.concatenate(
            [_predict(B[g : g + 1], *_fit_batch(A[g : g + 1], Y[g : g + 1], mask[g : g + 1], C)) for g in range(K * k)]
        )  # (K*k, 1+S, t)
    hits = (pred == truth[:, None, :]) & (truth[:, None, :] >= 0)
    hits = hits.sum(axis=2).reshape(K, k, 1 + s_runs).sum(axis=1)  # (K, 1+S) correct per layer and run
    correct = hits[:, 0].astype(float)
    correct_shuf = hits[:, 1:].T.astype(float)  # (S, K)
    accuracy = correct / n
    runs = correct_shuf / n
    return ProbeResult(
        accuracy=accuracy,
        shuffled=runs.mean(axis=0) if s_runs else np.full(K, np.nan),
        shuffled_high=np.percentile(runs, BAND_PERCENTILE, axis=0) if s_runs else np.full(K, np.nan),
        shuffled_runs=runs,
        chance=float(np.bincount(y).max() / n),
        senses=tuple(senses),
        n=n,
        folds=k,
        shuffles=s_runs,
        dropped=tuple(dropped),
        notes=tuple(notes),
    )
