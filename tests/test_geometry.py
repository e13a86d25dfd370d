"""lib/stats/geometry.py: hand-computed tiny cases and the documented invariants as properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lib.stats.geometry import (
    MAX_TOP_COMPONENTS,
    anisotropy,
    default_top_k,
    fit_covariance,
    line_margin,
    remove_top_components,
    rogue_dimensions,
    standardize,
    whiten,
)
from lib.stats.similarity import cosine_matrix

# ---------------------------------------------------------------- hand-computed cases


def test_anisotropy_orthogonal_pair_is_zero():
    assert anisotropy([[1.0, 0.0], [0.0, 1.0]]) == pytest.approx(0.0)


def test_anisotropy_three_vectors_by_hand():
    # pairs: (a, a') cos 1, (a, b) cos 0, (a', b) cos 0 -> mean 1/3; lengths do not matter
    assert anisotropy([[1.0, 0.0], [5.0, 0.0], [0.0, 2.0]]) == pytest.approx(1 / 3)


def test_anisotropy_opposite_pair_is_minus_one():
    assert anisotropy([[1.0, 2.0], [-1.0, -2.0]]) == pytest.approx(-1.0)


def test_anisotropy_zero_vector_counts_as_cosine_zero():
    # pairs: (0, a) 0, (0, a) 0, (a, a) 1 -> 1/3, and no NaN
    assert anisotropy([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]]) == pytest.approx(1 / 3)


def test_anisotropy_matches_mean_of_cosine_matrix_off_diagonal():
    X = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [2.0, 2.0, 2.0], [-1.0, 0.0, 1.0]])
    C = cosine_matrix(X)
    off = C[~np.eye(4, dtype=bool)]
    assert anisotropy(X) == pytest.approx(off.mean())


def test_anisotropy_needs_two_vectors():
    with pytest.raises(ValueError, match="at least two"):
        anisotropy([[1.0, 2.0]])


def test_cosine_matrix_by_hand():
    C = cosine_matrix([[3.0, 4.0], [4.0, 3.0], [0.0, 0.0]])
    assert C[0, 1] == pytest.approx(24 / 25)
    assert C[0, 0] == pytest.approx(1.0)
    assert C[2, 2] == 0.0 and C[0, 2] == 0.0


def test_line_margin_by_hand():
    # two columns two units apart: the widest gap is 2, and the larger side spans 2, so 1.0
    pts = np.array([[0, 0], [0, 1], [2, 0], [2, 1]], dtype=float)
    grp = np.array([True, True, False, False])
    assert line_margin(pts, grp) == pytest.approx(1.0, abs=1e-9)
    assert line_margin(pts, grp, n_angles=1) == pytest.approx(1.0, abs=1e-9)  # the first axis alone
    # the same columns turned on their side: only a horizontal line splits them, not the first axis
    assert line_margin(pts[:, ::-1], grp) == pytest.approx(1.0, abs=1e-9)
    assert line_margin(pts[:, ::-1], grp, n_angles=1) < 0
    # crossed pairs (XOR): no straight line separates them
    xor = np.array([[0, 0], [1, 1], [0, 1], [1, 0]], dtype=float)
    assert line_margin(xor, grp) < 0
    with pytest.raises(ValueError):
        line_margin(pts, np.array([True] * 4))
    Z = standardize([[1.0, 10.0], [3.0, 10.0]])
    # column 0: mean 2, std 1 -> -1, 1; column 1 is constant (σ = 0) -> 0 instead of 0/0
    np.testing.assert_allclose(Z, [[-1.0, 0.0], [1.0, 0.0]])


def test_standardize_with_given_statistics():
    Z = standardize([[4.0, 1.0]], mean=[2.0, 1.0], std=[4.0, 0.0])
    np.testing.assert_allclose(Z, [[0.5, 0.0]])


def test_standardize_rejects_wrong_statistics_shape():
    with pytest.raises(ValueError, match="shape"):
        standardize([[1.0, 2.0]], mean=[0.0], std=[1.0])


def test_whiten_by_hand():
    # mean 0, covariance diag(1/2, 2): whitening scales x by √2 and y by 1/√2
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    w = whiten(X)
    # n = 4 > d = 2 and Σ invertible: no regularization
    fit = fit_covariance(X)
    assert fit.shrinkage == 0.0 and fit.note == ""
    s = math.sqrt(2)
    np.testing.assert_allclose(w, [[s, 0], [-s, 0], [0, s], [0, -s]], atol=1e-12)
    np.testing.assert_array_equal(whiten(X, fit), w)


def test_whiten_fewer_vectors_than_dimensions_is_regularized_and_says_so():
    X = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 5.0]])
    fit = fit_covariance(X)
    assert 0 < fit.shrinkage <= 1
    assert "regularized" in fit.note and "3 vectors for 4 dimensions" in fit.note
    assert np.all(np.isfinite(whiten(X)))


def test_whiten_constant_dimension_stays_zero_and_the_rest_is_white():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    X[:, 1] = 7.0  # σ = 0, as real models have
    w = whiten(X)
    fit = fit_covariance(X)
    assert fit.shrinkage == 0 and "1 of the 3 directions has no variance" in fit.note and "leaves it at 0" in fit.note
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w[:, 1], 0.0, atol=1e-9)
    cov = np.cov(w, rowvar=False, bias=True)
    np.testing.assert_allclose(cov, np.diag([1.0, 0.0, 1.0]), atol=1e-9)


def test_whiten_flat_slice_like_layernorm():
    # every vector satisfies x0 + x1 + x2 = 0 (what LayerNorm does before its scale and shift):
    # one direction has no variance; whitening is exact on the other two
    rng = np.random.default_rng(2)
    A = rng.normal(size=(40, 3)) @ np.diag([3.0, 1.0, 0.2])
    X = A - A.mean(axis=1, keepdims=True)
    fit = fit_covariance(X)
    assert fit.n_null == 1 and fit.shrinkage == 0
    Z = whiten(X, fit)
    np.testing.assert_allclose(Z.sum(axis=1), 0.0, atol=1e-9)  # still in the slice
    eig = np.sort(np.linalg.eigvalsh(np.cov(Z, rowvar=False, bias=True)))
    np.testing.assert_allclose(eig, [0.0, 1.0, 1.0], atol=1e-9)


def _closed_form_ledoit_wolf(C: np.ndarray) -> float:
    """The hand-written estimate the app used before it called scikit-learn (Ledoit & Wolf 2004):
    with S = CᵀC / n and m = tr S / d, δ = ‖S - m I‖²_F / d, β = min(δ, (Σ_i ‖c_i‖⁴ / n - ‖S‖²_F) / (n d)),
    α = β / δ."""
    n, d = C.shape
    S = (C.T @ C) / n
    m = float(np.trace(S)) / d
    s_fro2 = float(np.sum(S * S))
    delta = (s_fro2 - 2.0 * m * float(np.trace(S)) + d * m * m) / d
    row4 = float(np.sum(np.sum(C * C, axis=1) ** 2))
    beta = min(delta, (row4 / n - s_fro2) / (n * d))
    return max(beta, 0.0) / delta


@pytest.mark.parametrize(("n", "d"), [(2, 3), (3, 4), (5, 10), (20, 384), (60, 10), (400, 30)])
def test_ledoit_wolf_shrinkage_equals_scikit_learns_and_the_former_closed_form(n, d):
    from sklearn.covariance import ledoit_wolf_shrinkage

    from lib.stats.geometry import _ledoit_wolf_shrinkage

    rng = np.random.default_rng(n + d)
    X = rng.normal(size=(n, d)) * np.linspace(0.1, 5.0, d)
    C = X - X.mean(axis=0)
    alpha = _ledoit_wolf_shrinkage(C)
    assert alpha == pytest.approx(ledoit_wolf_shrinkage(C, assume_centered=True), rel=1e-9)
    assert alpha == pytest.approx(_closed_form_ledoit_wolf(C), rel=1e-9)
    # the scatter either way round (CᵀC or the Gram matrix CCᵀ): the same α
    assert _ledoit_wolf_shrinkage(C, C.T @ C) == pytest.approx(_ledoit_wolf_shrinkage(C, C @ C.T), rel=1e-9)


def test_whitening_shrinkage_on_real_vectors_is_unchanged(encoder):
    # a handful of real target vectors (n <= d): the α the fit reports equals the former closed form
    tv = encoder.target_vectors(["We sat by the [bank].", "The bank raised rates.", "A bank of fog."], "bank")
    X = tv.vectors[:, -1, :].astype(np.float64)
    fit = fit_covariance(X)
    expected = min(1.0, max(_closed_form_ledoit_wolf(X - X.mean(axis=0)), 1e-3))
    assert fit.shrinkage == pytest.approx(expected, rel=1e-9)


def _reference_fit(X: np.ndarray):
    """μ, Σ's eigenvalues and eigenvectors (descending) from ``np.linalg.eigh`` of the d × d covariance itself."""
    mu = X.mean(axis=0)
    C = X - mu
    vals, vecs = np.linalg.eigh(C.T @ C / len(X))
    return mu, np.clip(vals[::-1], 0.0, None), vecs[:, ::-1]


def _reference_whiten(Y: np.ndarray, mu, vals, vecs, alpha: float) -> np.ndarray:
    lam = (1 - alpha) * vals + alpha * vals.mean()
    inv = np.where(lam > 1e-9 * lam.max(), 1 / np.sqrt(np.maximum(lam, 1e-300)), 0.0)
    return (Y - mu) @ (vecs * inv) @ vecs.T


def _few_vectors(n: int, d: int, seed: int) -> np.ndarray:
    """n <= d vectors with a spread of scales like a model's (variances over eight orders of magnitude: the
    decoder's corpus fits keep directions down to 4e-8 of the largest) and one flat direction (every row's
    entries add up to 0, as LayerNorm leaves them)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.geomspace(1e3, 1e-1, d) + rng.normal(size=d) * 50
    return X - X.mean(axis=1, keepdims=True)


# The fit from the Gram matrix (n <= d) against eigh of Σ: relative to the largest eigenvalue and the
# vectors' scale, far below the pages' three decimals. Measured on the decoder's reference corpus (31 layers,
# conditions up to 2.5e7): the Anisotropy page's curves 1e-15, its section 3 cosines 6e-14; here, whitening
# at a condition of 5e8 (64 vectors in 64 dimensions) 1.5e-8
GRAM_RTOL = 1e-7


@pytest.mark.parametrize(("n", "d", "seed"), [(2, 3, 0), (5, 10, 1), (40, 64, 2), (64, 64, 3), (120, 384, 4)])
def test_fit_from_few_vectors_matches_eigh_of_the_covariance(n, d, seed):
    X = _few_vectors(n, d, seed)
    Y = _few_vectors(7, d, seed + 100)  # other vectors, with parts outside the fit's span
    fit = fit_covariance(X)
    mu, vals, vecs = _reference_fit(X)
    top = vals[0]
    m = d - fit.n_null
    assert fit.n_null == int(np.sum(vals <= 1e-9 * top))  # the rank: at most n - 1 directions with variance
    assert fit.eigenvectors.shape == (d, m) and m <= n - 1
    np.testing.assert_allclose(fit.eigenvalues, vals, rtol=0, atol=GRAM_RTOL * top)
    np.testing.assert_allclose(fit.covariance, vecs @ np.diag(vals) @ vecs.T, rtol=0, atol=GRAM_RTOL * top)
    # orthonormal to about 1e-16 times the condition (measured 1e-17 to 3e-17 times it): Cᵀu / √w divides the
    # Gram matrix's rounding by the direction's own scale
    cond = top / fit.eigenvalues[m - 1]
    np.testing.assert_allclose(fit.eigenvectors.T @ fit.eigenvectors, np.eye(m), rtol=0, atol=1e-15 * cond)
    ref = _reference_whiten(Y, mu, vals, vecs, fit.shrinkage)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(whiten(Y, fit), ref, rtol=0, atol=GRAM_RTOL * scale)
    assert anisotropy(whiten(Y, fit)) == pytest.approx(anisotropy(ref), abs=GRAM_RTOL)
    for k in sorted({min(k, m) for k in (1, 3, 10)}):
        U = vecs[:, :k]
        expected = (Y - mu) - (Y - mu) @ U @ U.T
        np.testing.assert_allclose(
            remove_top_components(Y, k, fit), expected, rtol=0, atol=GRAM_RTOL * np.abs(Y - mu).max()
        )


def test_fit_from_few_real_vectors_matches_eigh_of_the_covariance(encoder):
    # the bundled model's target vectors at every layer (n <= d): whitening as eigh of Σ gives it
    sentences = ["We sat by the [bank].", "The bank raised rates.", "A bank of fog.", "A [bank] flooded."]
    tv = encoder.target_vectors(sentences, "bank")
    for layer in range(tv.vectors.shape[1]):
        X = tv.vectors[:, layer, :].astype(np.float64)
        fit = fit_covariance(X)
        ref = _reference_whiten(X, *_reference_fit(X), fit.shrinkage)
        np.testing.assert_allclose(whiten(X, fit), ref, rtol=0, atol=GRAM_RTOL * np.abs(ref).max())


def test_whiten_single_vector_is_finite():
    w = whiten([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(w, np.zeros((1, 3)))
    assert "identical" in fit_covariance([[1.0, 2.0, 3.0]]).note


def test_remove_top_components_by_hand():
    # the x axis carries variance 2, the y axis 0.5: k = 1 removes the x coordinate
    X = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    np.testing.assert_allclose(remove_top_components(X, 1), [[0, 0], [0, 0], [0, 1], [0, -1]], atol=1e-12)


def test_remove_top_components_k0_only_centres():
    X = np.array([[1.0, 3.0], [3.0, 5.0]])
    np.testing.assert_allclose(remove_top_components(X, 0), [[-1.0, -1.0], [1.0, 1.0]])


def test_remove_top_components_rejects_negative_k():
    with pytest.raises(ValueError, match="0 or more"):
        remove_top_components([[1.0, 2.0], [2.0, 1.0]], -1)


def test_remove_top_components_with_reference_statistics():
    ref = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    fit = fit_covariance(ref)
    # a new vector loses its x coordinate (the reference's top direction); μ = 0
    np.testing.assert_allclose(remove_top_components([[5.0, 3.0]], 1, fit=fit), [[0.0, 3.0]], atol=1e-12)


def test_rogue_dimensions_by_hand():
    X = np.array([[2.0, 0.0, 0.0], [-2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0]])
    r = rogue_dimensions(X, top=1)
    np.testing.assert_allclose(r.variance, [2.0, 0.5, 0.0])
    assert list(r.order[:2]) == [0, 1]
    assert r.top_variance_share == pytest.approx(0.8)  # 2 / (2 + 0.5)
    assert r.mean_norm == pytest.approx(1.5)


def test_rogue_dimension_dominates_cosine():
    # dimension 0 is a large shared offset: it makes the mean cosine high on its own
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 8))
    X[:, 0] += 20.0
    r = rogue_dimensions(X)
    assert int(np.argmax(r.cosine_contribution)) == 0
    assert r.cosine_contribution[0] > 0.9 * anisotropy(X)


# ---------------------------------------------------------------- properties

finite = st.floats(
    min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False
)


@st.composite
def matrices(draw, min_rows=1, max_rows=12, max_cols=6):
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_cols))
    return draw(hnp.arrays(np.float64, (n, d), elements=finite))


@st.composite
def gaussian_clouds(draw):
    """n > d random vectors with very different scales per dimension (a few "rogue" ones)."""
    seed = draw(st.integers(0, 2**32 - 1))
    d = draw(st.integers(1, 6))
    n = draw(st.integers(d + 5, 60))
    rng = np.random.default_rng(seed)
    scales = 10.0 ** rng.uniform(-2, 2, size=d)
    offset = rng.normal(scale=10.0, size=d)
    mixing = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return (rng.normal(size=(n, d)) * scales) @ mixing + offset


@settings(max_examples=100, deadline=None)
@given(matrices(), st.integers(0, 5))
def test_standardize_is_finite_and_unit_where_not_constant(X, const_col):
    X = X.copy()
    X[:, const_col % X.shape[1]] = 3.25  # a constant column must not produce NaN
    Z = standardize(X)
    assert np.all(np.isfinite(Z))
    sigma, mu = X.std(axis=0), X.mean(axis=0)
    for j in range(X.shape[1]):
        if np.ptp(X[:, j]) == 0:
            assert np.all(Z[:, j] == 0.0)  # constant: 0, not 0/0
        elif sigma[j] > 1e-6 * sigma.max() and sigma[j] > 1e-8 * abs(mu[j]):
            assert Z[:, j].mean() == pytest.approx(0.0, abs=1e-8)
            assert Z[:, j].std() == pytest.approx(1.0, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(gaussian_clouds())
def test_whitened_covariance_is_identity(X):
    fit = fit_covariance(X)
    assert fit.shrinkage == 0  # n > d
    Z = whiten(X, fit)
    d = X.shape[1]
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-8)
    # identity on the directions that vary (all of them here unless a scale underflowed)
    V = fit.eigenvectors[:, : d - fit.n_null]
    np.testing.assert_allclose(np.cov(Z, rowvar=False, bias=True).reshape(d, d), V @ V.T, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(matrices(), st.integers(1, 2))
def test_whiten_is_always_finite(X, _):
    assert np.all(np.isfinite(whiten(X)))


@settings(max_examples=60, deadline=None)
@given(matrices(min_rows=2), st.integers(0, 8))
def test_removed_components_are_orthogonal_to_output(X, k):
    fit = fit_covariance(X, shrinkage=0.0)
    Y = remove_top_components(X, k, fit)
    U = fit.eigenvectors[:, : min(k, X.shape[1])]
    scale = max(1.0, float(np.abs(X - X.mean(axis=0)).max()))
    np.testing.assert_allclose(Y @ U, 0.0, atol=1e-9 * scale)


@settings(max_examples=60, deadline=None)
@given(matrices(min_rows=2))
def test_cosines_lie_in_minus_one_one(X):
    C = cosine_matrix(X)
    assert np.all(C >= -1.0) and np.all(C <= 1.0)
    np.testing.assert_allclose(C, C.T)
    a = anisotropy(X)
    assert -1.0 <= a <= 1.0


@settings(max_examples=60, deadline=None)
@given(matrices(min_rows=2))
def test_cosine_contributions_sum_to_anisotropy(X):
    r = rogue_dimensions(X)
    assert r.cosine_contribution.sum() == pytest.approx(anisotropy(X), abs=1e-9)
    assert 0.0 <= r.top_variance_share <= 1.0 + 1e-12


# ---------------------------------------------------------------- figures (lib/charts/geometry.py)


def test_before_after_heatmaps_share_one_scale_and_escape_labels():
    from lib.charts.geometry import similarity_before_after

    before = np.array([[1.0, 0.9, 0.8], [0.9, 1.0, 0.85], [0.8, 0.85, 1.0]])
    after = np.array([[1.0, 0.3, -0.25], [0.3, 1.0, np.nan], [-0.25, np.nan, 1.0]])
    fig = similarity_before_after(before, after, ["<b>S1</b>", "S2", "S3"], ["a", "a", None], ("raw", "z"))
    ca = fig.layout.coloraxis
    assert ca.cmin <= -0.25 and ca.cmax >= 0.9  # both matrices' pairs fit the one scale
    assert {t.coloraxis for t in fig.data} == {"coloraxis"}
    assert all(
        np.all(np.isfinite(np.asarray(t.z, dtype=float))) for t in fig.data
    )  # NaN never reaches the screen
    ticks = " ".join(fig.layout.yaxis.ticktext)
    assert "<b>S1</b>" not in ticks and "&lt;b&gt;S1&lt;/b&gt;" in ticks


def test_anisotropy_chart_stretches_the_reference_to_the_same_depth():
    from lib.charts.geometry import anisotropy_by_layer

    curves = {"none": [0.1, 0.2, 0.3, 0.2], "zscore": [0.0, 0.01, 0.02, 0.01]}
    fig = anisotropy_by_layer(
        curves, {"none": "raw", "zscore": "z"}, layer=2, reference=[0.1, 0.3, 0.5, 0.4, 0.6]
    )
    ref = fig.data[-1]
    assert list(ref.x) == [0.0, 0.75, 1.5, 2.25, 3.0]  # 4 reference layers over our 3
    assert list(ref.customdata) == [0, 1, 2, 3, 4]  # the hover still says the reference's own layer


def test_dimension_profile_marks_the_extreme_dimension_of_each_row():
    from lib.charts.geometry import HIGHLIGHT, dimension_profile

    var = np.array([0.1, 5.0, 0.2, 0.1])
    mean = np.array([0.0, 0.1, -3.0, 0.0])
    contrib = np.array([0.0, 0.01, 0.2, 0.03])
    fig = dimension_profile(var, mean, contrib, label_top=1)
    # every row: all dimensions in one step profile, dims 1 (variance) and 2 (mean, cosine) as orange bars
    assert [list(t.y) for t in fig.data[:3]] == [list(var), list(mean), list(contrib)]
    tops = [{x: y for x, y in zip(t.x[1::5], t.y[1::5], strict=True)} for t in fig.data[3:6]]  # (left, top)
    assert tops == [{0.5: 5.0, 1.5: 0.2}, {0.5: 0.1, 1.5: -3.0}, {0.5: 0.01, 1.5: 0.2}]  # dims 1 and 2, 1 wide
    assert all(t.fillcolor == HIGHLIGHT for t in fig.data[3:6]) and fig.data[0].fillcolor != HIGHLIGHT
    assert [list(t.text) for t in fig.data[6:]] == [["dim 1"], ["dim 2"], ["dim 2"]]

def test_default_top_k_is_about_d_over_100_within_bounds():
    assert [default_top_k(d) for d in (2, 128, 384, 768, 1024, 4096)] == [1, 1, 4, 8, 10, MAX_TOP_COMPONENTS]


def test_top_variance_share_by_hand_and_in_rogue_dimensions():
    from lib.stats.geometry import top_variance_share

    assert top_variance_share([1.0, 4.0, 0.0, 5.0], top=2) == ((3, 1), pytest.approx(0.9))  # (5 + 4) / 10
    assert top_variance_share([2.0, 2.0, 1.0], top=1) == ((0,), pytest.approx(0.4))  # ties: lower index first
    assert top_variance_share(np.zeros(4), top=3)[1] == 0.0
    assert len(top_variance_share([1.0, 2.0], top=5)[0]) == 2
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 6)) * np.array([1, 5, 1, 3, 1, 1])
    r = rogue_dimensions(X, top=3)
    dims, share = top_variance_share(X.var(axis=0), top=3)
    assert dims == tuple(int(j) for j in r.order[:3]) and share == pytest.approx(r.top_variance_share)


@settings(max_examples=60, deadline=None)
@given(
    # coordinates on a 0.001 grid: a picture, not a test of what 1e-300 + 1.0 rounds to
    hnp.arrays(np.float64, st.tuples(st.integers(2, 12), st.just(2)), elements=st.integers(-10_000, 10_000)).map(
        lambda a: a / 1000
    ),
    st.floats(0.1, 10),
    st.floats(-5, 5),
    st.floats(-5, 5),
    st.integers(1, 11),
)
def test_line_margin_ignores_where_and_how_large_the_picture_is(P, scale, dx, dy, split):
    g = np.arange(len(P)) < max(1, min(split, len(P) - 1))  # two non-empty groups
    m = line_margin(P, g)
    # scaled to a unit picture first, so moving or enlarging the points changes nothing; nor does naming
    # the groups the other way round
    assert line_margin(P * scale + [dx, dy], g) == pytest.approx(m, abs=1e-9)
    assert line_margin(P, ~g) == pytest.approx(m, abs=1e-12)
    # the first axis alone is one of the directions tried, so it never beats the best one
    assert line_margin(P, g, n_angles=1) <= m + 1e-12
    # the picture fits in a unit square, so no gap or overlap is longer than its diagonal
    assert abs(m) <= math.sqrt(2) + 1e-9
