"""Geometry of a cloud of vectors: anisotropy, and the three corrections the course teaches.

Contextual vectors tend to sit in a narrow cone: two unrelated tokens still have a large cosine
(course §4.2). This module measures that and implements the fixes of §5:

- `anisotropy(X)`            mean cosine between distinct vectors (Ethayarajh 2019's baseline);
- `standardize(X, ...)`      z-scoring per dimension, (x - μ) / σ (§5.1);
- `whiten(X, ...)`           Σ^(-1/2) (x - μ) (§5.2), regularized when Σ cannot be inverted;
- `remove_top_components`    centre, then project out the top-k principal directions
                             (Mu & Viswanath 2018, "All-but-the-top");
- `rogue_dimensions(X)`      per-dimension mean/variance and each dimension's share of the mean
                             cosine (Timkey & van Schijndel 2021, "rogue dimensions").
- `line_margin(points, groups)` how wide a straight gap separates two groups of 2-D points (a
                             picture's question: can one line split the senses?).

Every function takes `X` of shape (n_vectors, hidden) and returns float64 results. The statistics
(μ, σ, covariance) can come from X itself or from a reference corpus (see `lib/inputs/corpus.py`), so the
learner's few target vectors are corrected with statistics from many tokens.

No streamlit here; usable from a notebook exactly as the pages use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.stats.similarity import unit_rows as _unit_rows

# A dimension whose standard deviation is at most this fraction of the largest one (or exactly 0)
# counts as constant: z-scoring it would only amplify rounding noise, so its z-score is set to 0.
CONSTANT_RTOL = 1e-6
# A dimension whose σ is at most this fraction of |μ| is a constant plus rounding error.
ROUNDING_RTOL = 1e-9
# An eigenvalue at most this fraction of the largest counts as zero (covariance not invertible).
SINGULAR_RTOL = 1e-9


# The most principal components the pages let a learner remove.
MAX_TOP_COMPONENTS = 10


def default_top_k(hidden: int) -> int:
    """How many top components `remove_top_components` removes by default: about d/100 (Mu & Viswanath
    2018), at least 1 and at most MAX_TOP_COMPONENTS. 384 dimensions -> 4, 768 -> 8."""
    return max(1, min(MAX_TOP_COMPONENTS, round(int(hidden) / 100)))


def _as_matrix(X, name: str = "X") -> np.ndarray:
    """X as a finite float64 array of shape (n_vectors, hidden); raise ValueError otherwise."""
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_vectors, hidden); got shape {A.shape}.")
    if A.shape[1] == 0:
        raise ValueError(f"{name} has no dimensions (shape {A.shape}).")
    if A.shape[0] == 0:
        raise ValueError(f"{name} has no vectors. Give at least one sentence with at least one word.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return A


def unit_rows(X) -> np.ndarray:
    """Rows scaled to length 1; a (numerically) zero row stays zero (its cosine with anything is 0).

    X: (n, d) -> (n, d), every row has norm 1 or 0.
    """
    return _unit_rows(_as_matrix(X))  # one definition of "numerically zero" for the whole app


def anisotropy(X) -> float:
    """Mean cosine similarity over all pairs of distinct vectors (i < j), a number in [-1, 1].

    X: (n_vectors, hidden), n_vectors >= 2. For random directions in high dimension this is ≈ 0
    ("isotropic"); Ethayarajh (2019) measured 0.1 to 0.68 for BERT-base layers. A zero vector has
    cosine 0 with everything. Computed without the n×n matrix: with unit rows u_i,
    sum_{i≠j} u_i·u_j = |sum_i u_i|² - sum_i |u_i|².

    Raises ValueError for fewer than two vectors (there is no pair to compare).
    """
    U = unit_rows(X)
    n = U.shape[0]
    if n < 2:
        raise ValueError("Anisotropy needs at least two vectors (one pair); got 1. Use a longer corpus.")
    s = U.sum(axis=0)
    off_diagonal = float(s @ s - np.sum(U * U))
    return float(np.clip(off_diagonal / (n * (n - 1)), -1.0, 1.0))


def constant_dimensions(std, mean) -> np.ndarray:
    """True where a dimension counts as constant: σ = 0, σ negligible against the largest σ
    (CONSTANT_RTOL), or σ at the level of rounding error of its own mean (a constant column of
    floats gives σ ≈ 1e-14 · |μ|, not 0). std, mean: (d,) -> (d,) bool."""
    std = np.asarray(std, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    top = float(np.max(std)) if std.size else 0.0
    return (std <= 0) | (std <= CONSTANT_RTOL * top) | (std <= ROUNDING_RTOL * np.abs(mean))


def standardize(X, mean=None, std=None) -> np.ndarray:
    """Z-score each dimension: z_j = (x_j - μ_j) / σ_j (course §5.1). (n, d) -> (n, d).

    `mean`, `std`: (d,) statistics from a reference corpus; if omitted they are estimated from X
    (population std, ddof=0, as in the course formula).

    Invariant: with the statistics estimated from X, every column with σ_j > 0 has mean 0 and
    std 1; a constant column (σ_j = 0, which real models have) becomes all zeros instead of
    0/0 = NaN. The output is always finite.
    """
    A = _as_matrix(X)
    d = A.shape[1]
    mu = A.mean(axis=0) if mean is None else np.asarray(mean, dtype=np.float64)
    sigma = A.std(axis=0) if std is None else np.asarray(std, dtype=np.float64)
    if mu.shape != (d,) or sigma.shape != (d,):
        raise ValueError(f"mean and std must have shape ({d},); got {mu.shape} and {sigma.shape}.")
    constant = constant_dimensions(sigma, mu)
    safe = np.where(constant, 1.0, sigma)
    Z = (A - mu) / safe
    Z[:, constant] = 0.0
    return Z


@dataclass(frozen=True)
class CovarianceFit:
    """Mean and covariance of a set of vectors, kept in eigen form for whitening and PCA.

    mean:         (d,)
    eigenvalues:  (d,)   descending, >= 0 (population covariance, divided by n)
    eigenvectors: (d, m) column i is the principal direction of eigenvalues[i]; m = d when there are more
                  vectors than dimensions, else m = d - n_null, the directions with variance: every direction
                  outside their span has eigenvalue 0 (eigenvalues[m:] == 0), and whitening and the
                  covariance treat it so without a basis of its own. float64, or float32 when fitted with
                  ``float32_vectors`` (the arithmetic on it is float64 either way)
    n_vectors:    how many vectors the statistics came from
    shrinkage:    α used when whitening: Σ_α = (1 - α) Σ + α (trace Σ / d) I. 0 means Σ itself is
                  used (its zero-variance directions, if any, map to 0); > 0 means there were too few
                  vectors (n <= d) and α is the Ledoit-Wolf estimate.
    note:         "" or one sentence for the learner on how a singular covariance was handled.
    n_null:       directions with (numerically) zero variance
    """

    mean: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    n_vectors: int
    shrinkage: float
    note: str
    n_null: int = 0

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    @property
    def covariance(self) -> np.ndarray:
        """Σ, (d, d)."""
        V = np.asarray(self.eigenvectors, dtype=np.float64)
        return (V * self.eigenvalues[: V.shape[1]]) @ V.T

    @property
    def explained_variance_ratio(self) -> np.ndarray:
        """(d,) share of the total variance along each principal direction; sums to 1 (or all 0)."""
        total = float(self.eigenvalues.sum())
        return self.eigenvalues / total if total > 0 else np.zeros_like(self.eigenvalues)


def fit_covariance(X, shrinkage: float | None = None, *, float32_vectors: bool = False) -> CovarianceFit:
    """Estimate μ and Σ from X (n, d) and decide how whitening treats a singular Σ.

    shrinkage=None chooses automatically:
    - n <= d (fewer vectors than dimensions): Σ is singular because there is too little data, so it
      is shrunk toward a multiple of the identity by the Ledoit-Wolf estimate α (at least 1e-3);
    - n > d: α = 0. Directions with no variance at all (eigenvalue <= SINGULAR_RTOL × the largest)
      are real, not a lack of data: a constant dimension, or LayerNorm, which keeps every hidden
      state in a flat slice of the space (Σ_j (y_j - β_j) / γ_j = 0). Whitening leaves them at 0
      (pseudo-inverse) and `note` says how many there are (`n_null`).
    Pass a number in [0, 1] to force α.

    float32_vectors=True keeps the eigenvectors as float32, half the bytes, for statistics held in a cache
    (lib.inputs.corpus); the fit and every use of it compute in float64. On the reference corpus it moved the
    Anisotropy page's curves and section 3 cosines by at most 1e-8 on both bundled models (2026-11-28).
    """
    A = _as_matrix(X)
    n, d = A.shape
    mu = A.mean(axis=0)
    C = A - mu
    vals, vecs, scatter = _eigen(C)
    # a deterministic sign per direction: its largest-magnitude entry is positive
    flip = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
    vecs = vecs * np.where(flip == 0, 1.0, flip)

    top = float(vals[0]) if d else 0.0
    n_null = int(np.sum(vals <= SINGULAR_RTOL * top)) if top > 0 else d
    note = ""
    if shrinkage is None:
        if top <= 0:
            alpha = 1.0
            note = "All vectors are identical, so there is nothing to whiten: every whitened vector is 0."
        elif n > d:
            alpha = 0.0
            if n_null:
                note = (
                    f"{n_null} of the {d} directions {'has' if n_null == 1 else 'have'} no variance at all, so "
                    f"whitening leaves {'it' if n_null == 1 else 'them'} at 0 "
                    "(a pseudo-inverse of the covariance) and rescales the others."
                )
        else:
            alpha = _ledoit_wolf_shrinkage(C, scatter) if n > 1 else 1.0
            alpha = float(min(1.0, max(alpha, 1e-3)))
            note = (
                f"The covariance cannot be inverted (only {n} vectors for {d} dimensions), so it was "
                f"regularized: {alpha:.3f} of it was replaced by a multiple of the identity (Ledoit-Wolf "
                "shrinkage). The whitened vectors are only roughly decorrelated."
            )
    else:
        alpha = float(shrinkage)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"shrinkage must lie in [0, 1]; got {alpha}.")
        if alpha > 0:
            note = f"The covariance was regularized with shrinkage {alpha:.3f} toward the identity."
    if float32_vectors:
        vecs = vecs.astype(np.float32)
    return CovarianceFit(
        mean=mu, eigenvalues=vals, eigenvectors=vecs, n_vectors=n, shrinkage=alpha, note=note, n_null=n_null
    )


def _eigen(C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Σ = CᵀC / n of centred data C (n, d) in eigen form: (eigenvalues (d,) descending and >= 0, eigenvectors
    (d, m), the scatter matrix the eigenvalues came from).

    More vectors than dimensions (n > d): ``np.linalg.eigh`` of Σ itself, m = d. Otherwise Σ has at most n - 1
    directions with variance, and they come from the n × n Gram matrix CCᵀ, which has the same nonzero
    eigenvalues (times n): for an eigenvector u of CCᵀ with eigenvalue w, Cᵀu / √w is Σ's, with eigenvalue w / n.
    Only the m directions above SINGULAR_RTOL of the largest are kept; the others' eigenvalues are 0. A kept
    direction whose eigenvalue is a fraction r of the largest is orthogonal to the others to about 3e-17 / r
    (dividing by √w scales the Gram matrix's rounding up). The decoder's reference corpus (331 word pieces, 576
    dimensions, 31 layers) took 0.36 s of CPU this way against 0.87 s for ``eigh`` of Σ (one BLAS thread,
    2026-11-28) and keeps 324 of the 576 columns (44 MB instead of 78); eigenvalues agree to 1e-15 of the
    largest, the Anisotropy page's curves to 1e-15 (tests/test_geometry.py holds the fit against ``eigh`` of Σ).
    """
    n, d = C.shape
    if n > d:
        scatter = C.T @ C
        cov = scatter / n
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        order = np.argsort(vals)[::-1]
        return np.clip(vals[order], 0.0, None), vecs[:, order], scatter
    scatter = C @ C.T  # (n, n)
    w, U = np.linalg.eigh((scatter + scatter.T) / 2)
    order = np.argsort(w)[::-1]
    w = np.clip(w[order], 0.0, None)
    top = float(w[0])
    m = int(np.sum(w > SINGULAR_RTOL * top)) if top > 0 else 0
    vals = np.zeros(d)
    vals[:m] = w[:m] / n
    vecs = (C.T @ U[:, order[:m]]) / np.sqrt(w[:m])  # (d, m) unit columns: ‖Cᵀu‖² = uᵀCCᵀu = w
    return vals, vecs, scatter


def _ledoit_wolf_shrinkage(C: np.ndarray, scatter: np.ndarray | None = None) -> float:
    """Ledoit-Wolf (2004) shrinkage α toward (tr S / d) I for centred data C (n, d), S = CᵀC / n.

    With m = tr S / d: δ = ‖S - m I‖²_F / d, β = min(δ, (Σ_i ‖c_i‖⁴ / n - ‖S‖²_F) / (n d)), α = β / δ, the
    formula of scikit-learn's ``ledoit_wolf_shrinkage(C, assume_centered=True)`` (a test holds the two equal to
    1e-9). ``scatter``: CᵀC (d, d) or the Gram matrix CCᵀ (n, n), whichever the caller has: both have the same
    trace and Frobenius norm, so either gives ‖S‖_F and tr S. Written here rather than called: importing
    scikit-learn costs ~0.9 s of CPU, the most of a fresh server's first decoder Anisotropy corpus fits (31
    layers of 331 vectors, 2026-11-28), and the formula costs O(n d) beside the scatter the fit has made.
    """
    n, d = C.shape
    G = scatter if scatter is not None else (C @ C.T if n <= d else C.T @ C)
    trace = float(np.trace(G)) / n  # tr S
    s_fro2 = float(np.sum(G * G)) / (n * n)  # ‖S‖²_F
    m = trace / d
    delta = (s_fro2 - 2.0 * m * trace + d * m * m) / d
    if delta <= 0:
        return 0.0
    row4 = float(np.sum(np.einsum("ij,ij->i", C, C) ** 2))  # Σ_i ‖c_i‖⁴
    beta = min(delta, (row4 / n - s_fro2) / (n * d))
    return max(beta, 0.0) / delta


def whiten(X, fit: CovarianceFit | None = None) -> np.ndarray:
    """Whiten X (n, d): z = Σ^(-1/2) (x - μ) (course §5.2), "ZCA" whitening (rotation back to the
    original axes, so dimension j of z still corresponds to dimension j of x).

    `fit`: statistics from a reference corpus (`fit_covariance`); if omitted they come from X. The fit
    also says how the whitening went: `fit.shrinkage` (α, 0 = exact) and `fit.note` (a sentence for the
    learner when Σ was singular); call `fit_covariance(X)` first to show them. (n, d) -> (n, d), like
    `standardize` and `remove_top_components`.

    Invariant: with the statistics estimated from X and n > d (fit.shrinkage == 0), the output has
    mean 0 and covariance equal to the identity on the directions that vary; directions with no
    variance at all (a constant dimension; LayerNorm's flat slice) stay 0 (pseudo-inverse). With
    n <= d, Σ is shrunk toward a multiple of the identity, Σ_α = (1 - α) Σ + α (tr Σ / d) I, so the
    output stays finite; `fit.note` says so.
    """
    A = _as_matrix(X)
    f = fit_covariance(A) if fit is None else fit
    if f.dim != A.shape[1]:
        raise ValueError(f"The statistics have {f.dim} dimensions but X has {A.shape[1]}.")
    lam = f.eigenvalues
    if f.shrinkage > 0:
        lam = (1.0 - f.shrinkage) * lam + f.shrinkage * float(lam.mean())
    top = float(lam.max()) if lam.size else 0.0
    if top <= 0:  # every vector identical: nothing to whiten
        return np.zeros_like(A)
    # directions with (numerically) zero variance carry no signal: map them to 0, never divide by 0
    inv_sqrt = np.where(lam > SINGULAR_RTOL * top, 1.0 / np.sqrt(np.maximum(lam, 1e-300)), 0.0)
    V = np.asarray(f.eigenvectors, dtype=np.float64)  # (d, m)
    m = V.shape[1]
    C = A - f.mean
    P = C @ V  # (n, m)
    Z = (P * inv_sqrt[:m]) @ V.T
    if m < f.dim and inv_sqrt[m] > 0:  # the directions outside V's span, one eigenvalue (0, shrunk): C's rest
        Z += (C - P @ V.T) * inv_sqrt[m]
    return Z


def remove_top_components(X, k: int, fit: CovarianceFit | None = None) -> np.ndarray:
    """All-but-the-top (Mu & Viswanath 2018): centre X, then remove its projection on the top-k
    principal directions. (n, d) -> (n, d).

        x' = (x - μ) - sum_{i<k} (u_i · (x - μ)) u_i

    `fit`: statistics from a reference corpus; if omitted they come from X. k = 0 only centres.
    k larger than the fit's directions with variance (`fit.eigenvectors`' columns) is clamped to them: the
    reference has nothing along the others to remove.

    Invariant: the output is orthogonal to each removed direction u_i (i < k), i.e. x' · u_i = 0.
    """
    A = _as_matrix(X)
    k = int(k)
    if k < 0:
        raise ValueError(f"k must be 0 or more; got {k}.")
    f = fit_covariance(A, shrinkage=0.0) if fit is None else fit
    if f.dim != A.shape[1]:
        raise ValueError(f"The statistics have {f.dim} dimensions but X has {A.shape[1]}.")
    C = A - f.mean
    # an orthonormal basis of the top-k directions' span (d, k), k at most m: the output is orthogonal to the
    # directions as the fit keeps them, float32 ones too (their columns are unit and orthogonal only to ~1e-7)
    U = np.linalg.qr(np.asarray(f.eigenvectors[:, :k], dtype=np.float64))[0]
    return C - (C @ U) @ U.T


@dataclass(frozen=True)
class RogueDimensions:
    """Which dimensions dominate a set of vectors (n, d).

    mean:                (d,) per-dimension mean
    variance:            (d,) per-dimension variance (population)
    cosine_contribution: (d,) dimension j's share of the mean cosine: mean over pairs i≠i' of
                         u_ij u_i'j with unit rows u. Sums to `anisotropy(X)` exactly.
    order:               (d,) dimensions sorted by variance, largest first
    top_variance_share:  share of the total variance in the `top` highest-variance dimensions
    top:                 how many dimensions `top_variance_share` counts (3 by default)
    mean_norm:           mean Euclidean length of the vectors
    """

    mean: np.ndarray
    variance: np.ndarray
    cosine_contribution: np.ndarray
    order: np.ndarray
    top_variance_share: float
    top: int
    mean_norm: float


def top_variance_share(variance, top: int = 3) -> tuple[tuple[int, ...], float]:
    """The ``top`` dimensions with the largest variance (largest first, ties by index) and their share of
    the total variance; the share is 0.0 when the total is 0. variance: (d,) per-dimension variance.
    """
    var = np.asarray(variance, dtype=np.float64).reshape(-1)
    t = max(1, min(int(top), var.size))
    dims = np.argsort(-var, kind="stable")[:t]
    total = float(var.sum())
    return tuple(int(j) for j in dims), float(var[dims].sum() / total) if total > 0 else 0.0


def rogue_dimensions(X, top: int = 3) -> RogueDimensions:
    """Per-dimension statistics that reveal "rogue" dimensions (course §4.2.1). X: (n, d), n >= 2.

    A handful of dimensions with huge variance or mean can decide most of a cosine on their own;
    `cosine_contribution` shows that directly (Timkey & van Schijndel 2021).
    """
    A = _as_matrix(X)
    n, d = A.shape
    if n < 2:
        raise ValueError("Rogue-dimension statistics need at least two vectors; got 1.")
    var = A.var(axis=0)
    order = np.argsort(-var, kind="stable")
    t = max(1, min(int(top), d))
    _, share = top_variance_share(var, t)
    U = unit_rows(A)
    s = U.sum(axis=0)
    contribution = (s * s - np.sum(U * U, axis=0)) / (n * (n - 1))
    return RogueDimensions(
        mean=A.mean(axis=0),
        variance=var,
        cosine_contribution=contribution,
        order=order,
        top_variance_share=share,
        top=t,
        mean_norm=float(np.linalg.norm(A, axis=1).mean()),
    )


def line_margin(points, groups, n_angles: int = 3600) -> float:
    """The widest straight gap between two groups of 2-D points, signed.

    points: (n, 2); groups: (n,) bool. For each direction (``n_angles`` evenly spaced over 180°, starting
    along the first axis) the points are projected onto it, and the gap is the distance from the highest
    point of one group to the lowest of the other. Returns the best gap over all directions, with the
    points first scaled so that their larger side spans 1: > 0 means one straight line (perpendicular to
    that direction) separates the groups with that much room; <= 0 means every line leaves some point on
    the wrong side, and the value is minus the smallest overlap. The angular grid makes it exact to within
    about 1e-3. ``n_angles=1`` asks about the first axis alone (a vertical line).
    """
    P = np.asarray(points, dtype=np.float64)
    g = np.asarray(groups, dtype=bool)
    if P.ndim != 2 or P.shape[1] != 2 or len(g) != len(P) or g.all() or not g.any():
        raise ValueError("need (n, 2) points and two non-empty groups")
    span = float(np.ptp(P, axis=0).max()) or 1.0
    Q = (P - P.min(axis=0)) / span
    theta = np.linspace(0.0, np.pi, n_angles, endpoint=False)
    proj = Q @ np.stack([np.cos(theta), np.sin(theta)])  # (n, n_angles)
    a, b = proj[g], proj[~g]
    gap = np.maximum(a.min(axis=0) - b.max(axis=0), b.min(axis=0) - a.max(axis=0))  # (n_angles,)
    return float(gap.max())


# A position's largest value counts as massive when it is this many times the typical position's largest value
MASSIVE_RATIO = 5.0


@dataclass(frozen=True)
class MassiveValues:
    """A few huge numbers in a few dimensions ("massive activations", Sun et al. 2024), over a set's vectors.

    first:       float, the largest |value| at position 0 of any sentence, any hidden state ([CLS] in BERT, the
                 start token or attention sink in a decoder)
    first_dim:   int, the dimension that holds it
    typical:     float, the median over the ordinary positions (not special) of each one's largest |value|
    threshold:   float, MASSIVE_RATIO × typical: an ordinary position above it carries massive values too
    words:       ((sentence index, position, word piece, largest |value|), ...) those ordinary positions, largest
                 first
    n_positions: int, the ordinary positions looked at
    """

    first: float
    first_dim: int
    typical: float
    threshold: float
    words: tuple[tuple[int, int, str, float], ...]
    n_positions: int


def massive_values(hidden_states, special, tokens) -> MassiveValues:
    """:class:`MassiveValues` of an encoding: ``hidden_states[i]`` (K, n_i, H), ``special[i]`` (n_i,) bool (the
    positions left out of similarity, ``Encoding.special``), ``tokens[i]`` the n_i word pieces."""
    peaks = MassivePeaks()
    for h, sp, toks in zip(hidden_states, special, tokens, strict=True):
        peaks.add(h, sp, toks)
    return peaks.summary()


class MassivePeaks:
    """The numbers :func:`massive_values` needs, gathered one sentence at a time (the corpus statistics keep
    no encoding): position 0's largest |value| per dimension, and each ordinary position's largest |value|."""

    def __init__(self) -> None:
        self.first: np.ndarray | None = None  # (H,)
        self.ordinary: list[tuple[int, int, str, float]] = []
        self.n = 0

    def add(self, h, special, tokens) -> None:
        """One sentence: ``h`` (K, n, H) hidden states, ``special`` (n,) bool, ``tokens`` its n word pieces."""
        a = np.abs(np.asarray(h, dtype=np.float32))
        per_dim0 = a[:, 0, :].max(axis=0).astype(np.float64)
        self.first = per_dim0 if self.first is None else np.maximum(self.first, per_dim0)
        peak = a.max(axis=(0, 2))
        self.ordinary.extend((self.n, p, tokens[p], float(peak[p])) for p in range(len(peak)) if not special[p])
        self.n += 1

    def summary(self) -> MassiveValues:
        if self.first is None or not self.ordinary:
            raise ValueError("no ordinary word piece to compare with")
        typical = float(np.median([w[3] for w in self.ordinary]))
        threshold = MASSIVE_RATIO * typical
        words = sorted((w for w in self.ordinary if w[3] > threshold), key=lambda w: -w[3])
        return MassiveValues(
            first=float(self.first.max()), first_dim=int(self.first.argmax()), typical=typical,
            threshold=threshold, words=tuple(words), n_positions=len(self.ordinary),
        )
