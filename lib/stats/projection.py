"""Projecting vectors to 2-D or 3-D for a picture: PCA, UMAP and t-SNE (course §8.3).

- PCA is exact, linear and instant: distances along its axes are real distances, and the share of
  variance each axis keeps is reported (`explained_variance_ratio`).
- UMAP and t-SNE are non-linear: they keep neighbourhoods (who is close to whom), not distances or
  cluster sizes. Both use cosine distance, the measure the rest of the app shows, and fixed seeds so
  that a shared link draws the same picture.

Guards: fewer than `MIN_POINTS` points raise `ProjectionError` with a message that says what to add;
UMAP's `n_neighbors` and t-SNE's perplexity are clamped to what the number of points allows (the
clamped value is reported in `notes`).

umap-learn and scikit-learn are imported lazily (their import and numba compilation take seconds), through
`lib.serving.lazy.load`, which makes first imports from several threads safe. Before importing umap,
`NUMBA_CACHE_DIR` is pointed at a writable folder if unset. `warm_up_umap()` runs a tiny fit so that
numba has compiled everything before the first map: the app calls it in a background thread the first
time a learner chooses UMAP (ui.startup.warm_up_in_background).
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TypedDict, Unpack

import numpy as np

from lib.errors import ContextLensError
from lib.serving.lazy import load

METHODS = ("pca", "umap", "tsne")
METHOD_LABELS = {"pca": "PCA", "umap": "UMAP", "tsne": "t-SNE"}
MIN_POINTS = 3
DEFAULT_SEED = 0


class ProjectionError(ContextLensError):
    """The input cannot be projected; the message says what to do."""


@dataclass(frozen=True)
class Projection:
    """Low-dimensional coordinates of n points.

    coords:                   (n, dims) float64
    method:                   "pca", "umap" or "tsne"
    dims:                     2 or 3
    explained_variance_ratio: (dims,) share of the total variance on each PCA axis; None otherwise
    n_neighbors:              UMAP's neighbourhood size actually used (after clamping); None otherwise
    perplexity:               t-SNE's perplexity actually used (after clamping); None otherwise
    seed:                     random seed (UMAP, t-SNE)
    notes:                    sentences for the learner, e.g. a clamped parameter
    """

    coords: np.ndarray
    method: str
    dims: int
    explained_variance_ratio: np.ndarray | None = None
    n_neighbors: int | None = None
    perplexity: float | None = None
    seed: int = DEFAULT_SEED
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def variance_kept(self) -> float | None:
        """PCA: the share of the total variance its ``dims`` axes keep together; None for UMAP and t-SNE."""
        if self.explained_variance_ratio is None:
            return None
        return float(np.sum(self.explained_variance_ratio))

    @property
    def label(self) -> str:
        return METHOD_LABELS[self.method]


def _check_input(X, dims: int) -> np.ndarray:
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2:
        raise ProjectionError(f"Expected vectors of shape (n_points, hidden); got shape {A.shape}.")
    if dims not in (2, 3):
        raise ProjectionError(f"A projection has 2 or 3 dimensions; got {dims}.")
    n = A.shape[0]
    if n < MIN_POINTS:
        raise ProjectionError(
            f"A projection needs at least {MIN_POINTS} points; there {'is' if n == 1 else 'are'} {n}. "
            f"Add sentences that contain the target word (at least {MIN_POINTS})."
        )
    if not np.all(np.isfinite(A)):
        raise ProjectionError("Some vectors contain NaN or infinite values; they cannot be projected.")
    return A


def _all_identical(A: np.ndarray) -> bool:
    return bool(np.all(np.ptp(A, axis=0) == 0))


IDENTICAL_NOTE = "All points are identical, so every coordinate is 0."


def _all_zero(method: str, n: int, dims: int, notes: list[str], **fields) -> Projection:
    """The projection of n identical points: every coordinate 0, with a note saying why."""
    return Projection(np.zeros((n, dims)), method, dims, notes=(*notes, IDENTICAL_NOTE), **fields)


def _converged(coords, method: str) -> np.ndarray:
    """The fitted coordinates as float64; ProjectionError when the fit produced NaN or infinity."""
    out = np.asarray(coords, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise ProjectionError(
            f"{METHOD_LABELS[method]} did not converge on these points. Try PCA, or add more sentences."
        )
    return out


def pca_projection(X, dims: int = 2) -> Projection:
    """Principal component analysis (scikit-learn's ``PCA``, exact SVD). X: (n, d) -> coords (n, dims).

    Invariants: the coordinates are centred; explained_variance_ratio is descending, each in [0, 1]
    and sums to at most 1. Each axis has a deterministic sign (its largest loading is positive), so the
    same vectors draw the same picture whatever the library version. If the points span fewer than
    `dims` directions, the missing axes are (numerically) zero.
    """
    A = _check_input(X, dims)
    n, d = A.shape
    C = A - A.mean(axis=0)
    if float(np.sum(C * C)) == 0.0:  # no variance at all (or below float64's range): nothing to show
        return _all_zero("pca", n, dims, [], explained_variance_ratio=np.zeros(dims))
    PCA = load("sklearn.decomposition").PCA
    from threadpoolctl import threadpool_limits

    m = min(dims, n, d)
    with threadpool_limits(limits=1):  # a small SVD: BLAS threads only add contention on shared cores
        pca = PCA(n_components=m, svd_solver="full")
        scores = pca.fit_transform(A)
    components = pca.components_  # (m, d)
    flip = np.sign(components[np.arange(m), np.argmax(np.abs(components), axis=1)])
    flip = np.where(flip == 0, 1.0, flip)
    coords = np.zeros((n, dims))
    coords[:, :m] = scores * flip
    ratio = np.zeros(dims)
    ratio[:m] = pca.explained_variance_ratio_
    return Projection(coords=coords, method="pca", dims=dims, explained_variance_ratio=ratio)


def ensure_numba_cache_dir() -> str:
    """Point NUMBA_CACHE_DIR at a writable folder unless it is already set; return the folder.

    Tries ~/.cache/context-lens/numba, then a folder in the system temp dir. numba reads the
    variable when it is first imported, so this runs before umap is imported.
    """
    current = os.environ.get("NUMBA_CACHE_DIR")
    if current:
        return current
    candidates = [
        os.path.join(os.path.expanduser("~"), ".cache", "context-lens", "numba"),
        os.path.join(tempfile.gettempdir(), "context-lens-numba"),
    ]
    for path in candidates:
        try:
            os.makedirs(path, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path):
                pass
        except OSError:
            continue
        os.environ["NUMBA_CACHE_DIR"] = path
        return path
    return ""


def _import_umap():
    ensure_numba_cache_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load("umap")


def clamp_n_neighbors(n_neighbors: int, n_points: int) -> int:
    """UMAP needs 2 <= n_neighbors <= n_points - 1."""
    return int(max(2, min(int(n_neighbors), n_points - 1)))


def clamp_perplexity(perplexity: float, n_points: int) -> float:
    """t-SNE needs perplexity < n_points; the usual advice is at most (n_points - 1) / 3."""
    return float(max(1.0, min(float(perplexity), (n_points - 1) / 3)))


def _clamp_notes(what: str, used: str, asked: str, n: int) -> list[str]:
    """The note for a parameter clamped to what n points allow (none when it was not changed)."""
    return [] if used == asked else [f"{what} was set to {used} (asked {asked}) because there are {n} points."]


def umap_projection(X, dims: int = 2, *, n_neighbors: int = 15, seed: int = DEFAULT_SEED) -> Projection:
    """UMAP with cosine distance and a fixed seed. X: (n, d) -> coords (n, dims).

    n_neighbors is clamped to [2, n - 1]. With a seed UMAP runs single-threaded and is
    reproducible. Spectral initialisation needs a few more points than dimensions; below that the
    start is random (still seeded).
    """
    A = _check_input(X, dims)
    n = A.shape[0]
    k = clamp_n_neighbors(n_neighbors, n)
    notes = _clamp_notes("UMAP's n_neighbors", str(k), str(int(n_neighbors)), n)
    if _all_identical(A):
        return _all_zero("umap", n, dims, notes, n_neighbors=k, seed=seed)
    umap = _import_umap()
    init = "spectral" if n > dims + 3 else "random"
    reducer = umap.UMAP(
        n_components=dims,
        n_neighbors=k,
        metric="cosine",
        init=init,
        random_state=seed,
        n_jobs=1,
        min_dist=0.1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coords = _converged(reducer.fit_transform(A), "umap")
    return Projection(coords, "umap", dims, n_neighbors=k, seed=seed, notes=tuple(notes))


def tsne_projection(X, dims: int = 2, *, perplexity: float = 30.0, seed: int = DEFAULT_SEED) -> Projection:
    """t-SNE (scikit-learn) with cosine distance, PCA initialisation and a fixed seed.

    perplexity is clamped to [1, (n - 1) / 3] (scikit-learn requires perplexity < n).
    """
    A = _check_input(X, dims)
    n = A.shape[0]
    p = clamp_perplexity(perplexity, n)
    notes = _clamp_notes("t-SNE's perplexity", f"{p:.1f}", f"{float(perplexity):g}", n) if p != float(perplexity) else []
    if _all_identical(A):
        return _all_zero("tsne", n, dims, notes, perplexity=p, seed=seed)
    TSNE = load("sklearn.manifold").TSNE
    from threadpoolctl import threadpool_limits

    tsne = TSNE(
        n_components=dims,
        perplexity=p,
        metric="cosine",
        init="pca",
        learning_rate="auto",
        random_state=seed,
        method="barnes_hut",
    )
    # one OpenMP thread: on a shared 2-core server, scikit-learn's threaded Barnes-Hut gradient
    # slowed a 120-point fit from 0.6 s to 29 s when other processes were busy
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore")
        coords = _converged(tsne.fit_transform(A), "tsne")
    return Projection(coords, "tsne", dims, perplexity=p, seed=seed, notes=tuple(notes))


def project(
    X,
    method: str = "pca",
    dims: int = 2,
    *,
    seed: int = DEFAULT_SEED,
    n_neighbors: int = 15,
    perplexity: float = 30.0,
) -> Projection:
    """Project X (n, d) to `dims` dimensions with "pca", "umap" or "tsne"."""
    if method == "pca":
        return pca_projection(X, dims)
    if method == "umap":
        return umap_projection(X, dims, n_neighbors=n_neighbors, seed=seed)
    if method == "tsne":
        return tsne_projection(X, dims, perplexity=perplexity, seed=seed)
    raise ProjectionError(f"Unknown projection method {method!r}; choose one of {', '.join(METHODS)}.")


def align_to(coords, reference) -> np.ndarray:
    """Rotate/reflect `coords` (n, k) about its centre to best match `reference` (n, k)
    (orthogonal Procrustes). Distances between points are unchanged; only the orientation, which
    PCA/UMAP/t-SNE pick arbitrarily, is made consistent from one layer to the next.
    """
    P = np.asarray(coords, dtype=np.float64)
    R = np.asarray(reference, dtype=np.float64)
    if P.shape != R.shape:
        raise ValueError(f"coords {P.shape} and reference {R.shape} must have the same shape.")
    mu = P.mean(axis=0)
    Pc, Rc = P - mu, R - R.mean(axis=0)
    U, _, Vt = np.linalg.svd(Pc.T @ Rc)
    return Pc @ (U @ Vt) + mu


class ProjectOptions(TypedDict, total=False):
    """The keyword options of :func:`project` (``seed``, ``n_neighbors``, ``perplexity``) passed on by
    :func:`project_layers`, declared once."""

    seed: int
    n_neighbors: int
    perplexity: float


def project_layers(
    H,
    method: str = "pca",
    dims: int = 2,
    *,
    align: bool = True,
    step: Callable[[int], AbstractContextManager] | None = None,
    **options: Unpack[ProjectOptions],
) -> list[Projection]:
    """Project each hidden state separately. H: (num_hidden_states, n, d) -> one Projection per layer.

    ``options`` are :func:`project`'s (seed, n_neighbors, perplexity), the same for every layer. With
    align=True each layer's picture is rotated/reflected to match the previous one, so points do not jump
    around between small multiples or animation frames for no reason. ``step(layer)``: a context each layer's
    projection runs in (the app's work queue takes one slot per layer there).
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 3:
        raise ProjectionError(f"Expected (num_hidden_states, n_points, hidden); got shape {H.shape}.")
    out: list[Projection] = []
    for layer in range(H.shape[0]):
        with step(layer) if step is not None else nullcontext():
            p = project(H[layer], method, dims, **options)
        if align and out:
            p = replace(p, coords=align_to(p.coords, out[-1].coords))
        out.append(p)
    return out


def all_alike(X, tol: float = 1e-6) -> bool:
    """True when every row of ``X`` (n, d) is the same vector (within ``tol``, relative to its size): a model
    that adds no position at its input gives one word piece one layer-0 vector in every sentence, and then
    no point is any nearer to one than to another (a nearest-neighbour count there is the tie-break's)."""
    P = np.asarray(X, dtype=np.float64)
    if len(P) < 2:
        return True
    scale = max(float(np.abs(P).max()), 1e-12)
    return bool(np.abs(P - P[0]).max() <= tol * scale)


def same_sense_neighbours(X, senses, metric: str = "euclidean") -> tuple[int, int]:
    """How many labelled points have a same-sense nearest neighbour: (hits, labelled points).

    X: (n, k) points (a projection, or the full vectors); senses: n labels, None/"" = unlabelled.
    metric: "euclidean" (for a picture) or "cosine" (for the full vectors). Only labelled points take
    part, as queries and as neighbours; ties go to the lower index. (0, 0) with fewer than two.
    """
    idx = [i for i, s in enumerate(senses) if s]
    if len(idx) < 2:
        return 0, 0
    nearest = _nearest_among(X, idx, metric)
    labels = [senses[i] for i in idx]
    hits = sum(labels[i] == labels[int(j)] for i, j in enumerate(nearest))
    return int(hits), len(idx)


def _nearest_among(X, idx: Sequence[int], metric: str) -> np.ndarray:
    """For each point of ``X[idx]``, the position in ``idx`` of its nearest other point (ties: the lower)."""
    P = np.asarray(X, dtype=np.float64)[list(idx)]
    if metric == "cosine":
        norms = np.linalg.norm(P, axis=1, keepdims=True)
        U = np.where(norms > 0, P / np.where(norms > 0, norms, 1.0), 0.0)
        D = 1.0 - U @ U.T
    elif metric == "euclidean":
        D = np.linalg.norm(P[:, None, :] - P[None, :, :], axis=-1)
    else:
        raise ValueError(f"metric must be 'euclidean' or 'cosine'; got {metric!r}.")
    np.fill_diagonal(D, np.inf)
    return np.argmin(D, axis=1)


def same_nearest_neighbour(coords, full, senses) -> tuple[int, int]:
    """How many labelled points have the very same nearest labelled neighbour on a map (``coords``,
    Euclidean) as in the full space (``full``, cosine): (agreeing, labelled points); (0, 0) with fewer than
    two. Equal counts of same-sense neighbours (:func:`same_sense_neighbours`) need not be the same pairs.
    """
    idx = [i for i, s in enumerate(senses) if s]
    if len(idx) < 2:
        return 0, 0
    agree = _nearest_among(coords, idx, "euclidean") == _nearest_among(full, idx, "cosine")
    return int(agree.sum()), len(idx)


def group_neighbours(X, n_group: int) -> int:
    """How many of the first ``n_group`` points have their nearest other point (Euclidean) among the
    first ``n_group`` too. X: (m, k) points, the group first; ties go to the lower index.
    """
    A = np.asarray(X, dtype=np.float64)
    if n_group < 1 or A.shape[0] < 2:
        return 0
    D = np.linalg.norm(A[:n_group, None, :] - A[None, :, :], axis=-1)  # (n_group, m)
    D[np.arange(n_group), np.arange(n_group)] = np.inf
    return int(np.sum(np.argmin(D, axis=1) < n_group))


@dataclass(frozen=True)
class ContextPoints:
    """The other word pieces drawn beside the target on a map.

    vectors: (m, hidden) float32, their hidden states at one layer
    where:   m (sentence index, token position) pairs, in sentence and position order
    total:   how many candidates there were before sampling (m == total unless it exceeded the limit)
    """

    vectors: np.ndarray
    where: tuple[tuple[int, int], ...]
    total: int


def context_points(hidden_states, masks, layer: int, *, limit: int, seed: int = 0) -> ContextPoints:
    """The word pieces picked by ``masks`` at hidden-state ``layer``; a fixed random ``limit`` of them.

    hidden_states: per sentence (num_hidden_states, n_tokens_i, hidden); masks: per sentence (n_tokens_i,)
    bool (e.g. lib.stats.baseline.other_token_masks). Sampling (seeded, so every run draws the same points)
    happens before any vector is gathered.
    """
    where = [(i, int(p)) for i, mask in enumerate(masks) for p in np.flatnonzero(mask)]
    if not where:
        hidden = np.asarray(hidden_states[0]).shape[-1] if len(hidden_states) else 0
        return ContextPoints(np.zeros((0, hidden), dtype=np.float32), (), 0)
    pick = np.arange(len(where))
    if len(where) > limit:
        pick = np.sort(np.random.default_rng(seed).choice(len(where), limit, replace=False))
    chosen = tuple(where[k] for k in pick)
    vectors = np.stack([hidden_states[i][layer, p] for i, p in chosen]).astype(np.float32)
    return ContextPoints(vectors, chosen, len(where))


def warm_up_umap() -> float:
    """Import umap and run tiny 2-D fits so numba compiles everything now; return seconds spent.

    Call it once in a background thread at server start: the first real UMAP a learner asks for
    then takes well under a second instead of many seconds. Safe to call more than once; never
    raises (a failed warm-up only means the first UMAP is slow).
    """
    start = time.perf_counter()
    try:
        rng = np.random.default_rng(DEFAULT_SEED)
        X = rng.normal(size=(24, 16))
        # the same code paths as the page: spectral init (many points) and random init (few points)
        umap_projection(X, 2, n_neighbors=15)
        umap_projection(X[:5], 2, n_neighbors=15)
    except Exception:  # a warm-up must never take the server down; the first UMAP then compiles (and shows any error)
        import sys
        import traceback

        print("context-lens: the UMAP warm-up failed:\n" + traceback.format_exc(), file=sys.stderr, flush=True)
    return time.perf_counter() - start


@dataclass(frozen=True)
class NeighbourCheck:
    """How faithful a map is to the space it was made from.

    preserved:       mean share of each point's k nearest neighbours (cosine, full space) that are also
                     among its k nearest on the map (Euclidean), in [0, 1]; 1 = every neighbourhood kept
    k:               neighbours per point actually used (clamped to n - 1)
    chance:          the share a random layout keeps on average, k / (n - 1)
    trustworthiness: scikit-learn's trustworthiness (cosine in the full space), in [0, 1]: penalises
                     points that look close on the map but are far in the full space, by how far;
                     None when there are too few points (it needs k < n / 2)
    """

    preserved: float
    k: int
    chance: float
    trustworthiness: float | None = None

    @property
    def poor(self) -> bool:
        """The map keeps less than half of the neighbours: read it with care."""
        return self.preserved < 0.5


def _knn(D: np.ndarray, k: int) -> np.ndarray:
    """(n, k) indices of each row's k smallest off-diagonal entries; ties go to the lower index."""
    D = D.copy()
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def neighbour_preservation(X, Y, k: int = 5) -> float:
    """Mean share of each point's k nearest neighbours in X (cosine) that stay among its k nearest in Y
    (Euclidean). X: (n, d) the vectors; Y: (n, 2 or 3) their map. In [0, 1]; a random layout keeps about
    k / (n - 1); k is clamped to n - 1. Needs at least 2 points.
    """
    A = np.asarray(X, dtype=np.float64)
    P = np.asarray(Y, dtype=np.float64)
    if A.ndim != 2 or P.ndim != 2 or A.shape[0] != P.shape[0]:
        raise ProjectionError(f"X and Y need one row per point; got shapes {A.shape} and {P.shape}.")
    n = A.shape[0]
    if n < 2:
        raise ProjectionError("Neighbours need at least 2 points.")
    k = max(1, min(int(k), n - 1))
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    U = np.where(norms > 0, A / np.where(norms > 0, norms, 1.0), 0.0)
    cos_d = 1.0 - U @ U.T
    sq = np.sum(P * P, axis=1)
    euc = np.maximum(sq[:, None] + sq[None, :] - 2 * P @ P.T, 0.0)
    a, b = _knn(cos_d, k), _knn(euc, k)
    kept = [len(set(a[i].tolist()) & set(b[i].tolist())) for i in range(n)]
    return float(np.mean(kept) / k)


def neighbour_check(X, Y, k: int = 5) -> NeighbourCheck:
    """neighbour_preservation with its chance level and scikit-learn's trustworthiness (cosine)."""
    A = np.asarray(X, dtype=np.float64)
    n = A.shape[0]
    kk = max(1, min(int(k), n - 1))
    trust = None
    if kk < n / 2:
        trustworthiness = load("sklearn.manifold").trustworthiness

        trust = float(trustworthiness(A, np.asarray(Y, dtype=np.float64), n_neighbors=kk, metric="cosine"))
    return NeighbourCheck(
        preserved=neighbour_preservation(A, Y, kk), k=kk, chance=kk / max(1, n - 1), trustworthiness=trust
    )
