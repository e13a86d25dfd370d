"""Hypothesis properties of the maths in lib/: invariants that must hold for any input, not just examples.

cosine in [-1, 1]; softmax rows sum to 1; standardize is finite; whitening gives identity covariance;
projections return one finite point per input. Examples are kept small so the file runs in seconds
(UMAP and t-SNE get only a handful).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FAST = settings(max_examples=50, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=6, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def matrices(min_rows=1, max_rows=12, min_cols=1, max_cols=10, lo=-1e6, hi=1e6):
    """Finite float64 matrices, including zeros, repeated rows and wildly different scales."""
    return st.tuples(st.integers(min_rows, max_rows), st.integers(min_cols, max_cols)).flatmap(
        lambda shape: hnp.arrays(
            np.float64,
            shape,
            elements=st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        )
    )


def gaussian_matrices(min_rows=3, max_rows=40, min_cols=2, max_cols=8):
    """Random-normal matrices from a seed, scaled and shifted: realistic clouds of vectors."""
    return st.builds(
        lambda n, d, seed, scale, shift: np.random.default_rng(seed).normal(size=(n, d)) * scale + shift,
        st.integers(min_rows, max_rows),
        st.integers(min_cols, max_cols),
        st.integers(0, 2**32 - 1),
        st.floats(1e-3, 1e3),
        st.floats(-100, 100),
    )


# ------------------------------------------------------------------------------------------- cosine
@FAST
@given(matrices())
def test_similarity_cosine_matrix_in_range_symmetric(X):
    from lib.stats.similarity import cosine_matrix, unit_rows

    C = cosine_matrix(X)
    assert C.shape == (X.shape[0], X.shape[0])
    assert np.isfinite(C).all()
    assert (C >= -1).all() and (C <= 1).all()
    np.testing.assert_allclose(C, C.T, atol=1e-12)
    norms = np.linalg.norm(unit_rows(X), axis=1)
    nonzero = np.linalg.norm(X, axis=1) > 1e-9
    np.testing.assert_allclose(np.diag(C)[nonzero], 1.0, atol=1e-9)
    np.testing.assert_allclose(norms[nonzero], 1.0, atol=1e-9)


@FAST
@given(matrices(), st.floats(1e-3, 1e3))
def test_cosine_ignores_positive_scaling(X, c):
    from lib.stats.similarity import cosine_matrix

    # rows near the "numerically zero" threshold (1e-12) may cross it when scaled; the property is for
    # rows that are clearly zero or clearly not
    norms = np.linalg.norm(X, axis=1)
    assume(np.all((norms == 0) | (norms > 1e-6)))
    np.testing.assert_allclose(cosine_matrix(X * c), cosine_matrix(X), atol=1e-9)


@FAST
@given(
    st.integers(2, 6).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.float64, (n, 3, 5), elements=st.floats(-100, 100, allow_subnormal=False)),
            st.just(n),
        )
    )
)
def test_layer_cosine_matrices_in_range(args):
    from lib.stats.similarity import layer_cosine_matrices

    V, n = args
    C = layer_cosine_matrices(V)
    assert C.shape == (3, n, n)
    assert np.isfinite(C).all() and (np.abs(C) <= 1).all()


@FAST
@given(matrices(min_rows=2))
def test_anisotropy_in_range_and_equals_mean_offdiagonal_cosine(X):
    from lib.stats.geometry import anisotropy
    from lib.stats.similarity import cosine_matrix

    a = anisotropy(X)
    assert -1.0 <= a <= 1.0
    # lib/geometry and lib/similarity disagree on when a row counts as zero (norm 0 vs norm < 1e-12), so
    # compare them only away from that border
    norms = np.linalg.norm(X, axis=1)
    assume(((norms == 0) | (norms > 1e-6)).all())
    C = cosine_matrix(X)
    iu = np.triu_indices(X.shape[0], k=1)
    assert a == pytest.approx(float(C[iu].mean()), abs=1e-9)


# ------------------------------------------------------------------------------------------- softmax
@FAST
@given(
    st.integers(1, 6).flatmap(
        lambda n: hnp.arrays(
            np.float64, (n, 2), elements=st.floats(-1e4, 1e4, allow_nan=False, allow_subnormal=False)
        )
    ),
    st.booleans(),
    st.booleans(),
    st.floats(0.01, 100.0),
)
def test_toy_attention_rows_sum_to_one(X, scale, causal, temperature):
    from lib.teaching.toy_attention import ToyAttentionError, attention_steps

    try:
        s = attention_steps(X, scale=scale, causal=causal, temperature=temperature)
    except ToyAttentionError as err:  # an overflow is refused with a message, never NaN
        assert "too" in str(err)
        return
    n = X.shape[0]
    assert s.weights.shape == (n, n)
    assert np.isfinite(s.weights).all() and np.isfinite(s.output).all()
    assert (s.weights >= 0).all() and (s.weights <= 1).all()
    np.testing.assert_allclose(s.weights.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(s.row_sums).all() and (s.row_sums > 0).all()
    if causal:
        assert (s.weights[np.triu_indices(n, k=1)] == 0).all()
    # the output mixes value rows: it stays inside their bounding box
    V = s.V
    assert (s.output <= V.max(axis=0) + 1e-9 * (1 + np.abs(V).max())).all()
    assert (s.output >= V.min(axis=0) - 1e-9 * (1 + np.abs(V).max())).all()


@FAST
@given(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "abc", "", "  ", "1/0", "--1", "0x10"])
)
def test_toy_attention_bad_cells_are_refused(cell):
    from lib.teaching.toy_attention import ToyAttentionError, parse_cell

    with pytest.raises(ToyAttentionError) as info:
        parse_cell(cell, "E, row 'cat', column 'dim 1',")
    assert "row 'cat'" in str(info.value)


@FAST
@given(matrices(max_rows=6, max_cols=8, lo=-1e300, hi=1e300))
def test_attention_softmax_rows_sum_to_one_even_for_huge_scores(X):
    from lib.models.recompute import softmax

    P = softmax(X, axis=-1)
    assert np.isfinite(P).all()
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, atol=1e-12)


# ------------------------------------------------------------------------------------------- geometry
@pytest.mark.filterwarnings("ignore:overflow encountered")
@FAST
@given(matrices(lo=-1e300, hi=1e300))
def test_standardize_is_always_finite(X):
    from lib.stats.geometry import standardize

    Z = standardize(X)
    assert Z.shape == X.shape
    assert np.isfinite(Z).all()


@FAST
@given(gaussian_matrices(min_rows=2))
def test_standardize_gives_zero_mean_unit_std_columns(X):
    from lib.stats.geometry import standardize

    Z = standardize(X)
    std = X.std(axis=0)
    live = std > 1e-6 * std.max()
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(Z[:, live].std(axis=0), 1.0, atol=1e-8)
    assert (Z[:, ~live] == 0).all()


@FAST
@given(gaussian_matrices(min_rows=12, max_rows=60, max_cols=6))
def test_whitening_gives_identity_covariance(X):
    from lib.stats.geometry import fit_covariance, whiten

    f = fit_covariance(X)
    ev = f.eigenvalues
    assume(ev[-1] > 1e-8 * ev[0])  # invertible, not merely by rounding
    assert f.shrinkage == 0.0
    Z = whiten(X, f)
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-7)
    cov = (Z - Z.mean(axis=0)).T @ (Z - Z.mean(axis=0)) / Z.shape[0]
    np.testing.assert_allclose(cov, np.eye(X.shape[1]), atol=1e-6)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
@FAST
@given(matrices(min_rows=1, max_rows=8, min_cols=2, max_cols=12, lo=-1e3, hi=1e3))
def test_whitening_a_singular_cloud_stays_finite_and_says_so(X):
    from lib.stats.geometry import fit_covariance, whiten

    assert np.isfinite(whiten(X)).all()
    if X.shape[0] <= X.shape[1]:
        f = fit_covariance(X)
        assert f.shrinkage > 0 or np.ptp(X, axis=0).max() == 0
        assert f.note


@FAST
@given(gaussian_matrices(min_rows=3, max_rows=30), st.integers(0, 3))
def test_remove_top_components_is_finite_and_orthogonal_to_them(X, k):
    from lib.stats.geometry import fit_covariance, remove_top_components

    Y = remove_top_components(X, k)
    assert Y.shape == X.shape and np.isfinite(Y).all()
    k = min(k, X.shape[1])
    if k:
        U = fit_covariance(X).eigenvectors[:, :k]
        np.testing.assert_allclose(Y @ U, 0.0, atol=1e-6 * (1 + np.abs(X).max()))


# ------------------------------------------------------------------------------------------- projection
@FAST
@given(matrices(min_rows=3, max_rows=30, min_cols=1, max_cols=12, lo=-1e3, hi=1e3), st.sampled_from([2, 3]))
def test_pca_one_point_per_input(X, dims):
    from lib.stats.projection import pca_projection

    p = pca_projection(X, dims)
    assert p.coords.shape == (X.shape[0], dims)
    assert np.isfinite(p.coords).all()
    r = p.explained_variance_ratio
    assert (r >= -1e-12).all() and r.sum() <= 1 + 1e-9
    assert (np.diff(r) <= 1e-12).all()


@FAST
@given(matrices(min_rows=0, max_rows=2, min_cols=1, max_cols=4))
def test_projection_of_too_few_points_is_a_clear_error(X):
    from lib.stats.projection import ProjectionError, project

    with pytest.raises(ProjectionError) as info:
        project(X, "pca")
    assert "at least" in str(info.value)


@pytest.mark.slow  # importing umap and numba's first compile take most of a minute on a busy machine
@settings(max_examples=4, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(gaussian_matrices(min_rows=3, max_rows=25, min_cols=2, max_cols=10), st.integers(2, 30))
def test_umap_one_point_per_input(X, k):
    from lib.stats.projection import umap_projection

    p = umap_projection(X, 2, n_neighbors=k)
    assert p.coords.shape == (X.shape[0], 2)
    assert np.isfinite(p.coords).all()
    assert 2 <= p.n_neighbors <= X.shape[0] - 1


@SLOW
@given(gaussian_matrices(min_rows=4, max_rows=25, min_cols=2, max_cols=10), st.floats(1, 50))
def test_tsne_one_point_per_input(X, perplexity):
    from lib.stats.projection import tsne_projection

    p = tsne_projection(X, 2, perplexity=perplexity)
    assert p.coords.shape == (X.shape[0], 2)
    assert np.isfinite(p.coords).all()
    assert p.perplexity < X.shape[0]


@FAST
@given(gaussian_matrices(min_rows=3, max_rows=20), st.integers(2, 3))
def test_align_to_keeps_distances(X, dims):
    from lib.stats.projection import align_to, pca_projection

    a = pca_projection(X, dims).coords
    rng = np.random.default_rng(0)
    b = a @ np.linalg.qr(rng.normal(size=(dims, dims)))[0] + 3.0
    aligned = align_to(b, a)
    d0 = np.linalg.norm(b[:, None] - b[None], axis=-1)
    d1 = np.linalg.norm(aligned[:, None] - aligned[None], axis=-1)
    np.testing.assert_allclose(d0, d1, atol=1e-6 * (1 + d0.max()))


# ------------------------------------------------------------------------------------------- markup
def _markup_brackets_by_character(text: str) -> tuple[list[int], list[int]]:
    """The character-by-character scan lib.models.targets.markup_brackets replaced (a hosted server's CPU: a 2 MB corpus took
    seconds): the reference its jumps from bracket to bracket must agree with."""
    from lib.models.targets import SPECIAL_TOKENS_IN_TEXT

    opens, closes, i = [], [], 0
    while i < len(text):
        if text[i] == "[":
            special = next((t for t in SPECIAL_TOKENS_IN_TEXT if text.startswith(t, i)), None)
            if special is not None:
                i += len(special)
                continue
            opens.append(i)
        elif text[i] == "]":
            closes.append(i)
        i += 1
    return opens, closes


bracket_texts = st.lists(
    st.sampled_from(["[", "]", "a", " ", "x y", "[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MAS", "SK]", "[[", "]]"]),
    max_size=25,
).map("".join)


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(st.one_of(bracket_texts, st.text(alphabet="[]aMASK ", max_size=40)))
def test_markup_brackets_agree_with_a_character_scan(text):
    from lib.models.targets import markup_brackets, strip_markup

    opens, closes = _markup_brackets_by_character(text)
    assert markup_brackets(text) == (opens, closes)
    drop = set(opens) | set(closes)
    assert strip_markup(text, strict=False) == ("".join(ch for i, ch in enumerate(text) if i not in drop), None)
