"""lib/stats/projection.py: PCA by hand, guards, clamps, seeds, alignment."""

from __future__ import annotations

import os

import numpy as np
import pytest

from lib.stats.projection import (
    MIN_POINTS,
    Projection,
    ProjectionError,
    align_to,
    clamp_n_neighbors,
    clamp_perplexity,
    context_points,
    ensure_numba_cache_dir,
    group_neighbours,
    pca_projection,
    project,
    project_layers,
    same_sense_neighbours,
)


def test_pca_by_hand():
    # points on a line along x plus a small spread along y: variances 8/3·... computed below
    X = np.array([[2.0, 0.0, 5.0], [-2.0, 0.0, 5.0], [0.0, 1.0, 5.0], [0.0, -1.0, 5.0]])
    p = pca_projection(X, 2)
    # centred: x has sum of squares 8, y has 2 -> ratios 0.8 and 0.2; the constant z carries nothing
    np.testing.assert_allclose(p.explained_variance_ratio, [0.8, 0.2])
    assert p.variance_kept == pytest.approx(1.0)  # x and y carry all of it; z is constant
    # axes with sums of squares 8, 2 and 0.5 (mean 0): two axes keep 10 / 10.5
    X3 = np.array([[2.0, 0, 0], [-2.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 0.5], [0, 0, -0.5]])
    assert pca_projection(X3, 2).variance_kept == pytest.approx(10 / 10.5)
    assert Projection(coords=p.coords, method="umap", dims=2).variance_kept is None
    np.testing.assert_allclose(np.abs(p.coords), [[2, 0], [2, 0], [0, 1], [0, 1]], atol=1e-12)
    # deterministic sign: the largest loading of each axis is positive -> +x maps to +PC1
    assert p.coords[0, 0] > 0


def test_pca_3d_of_three_points_pads_missing_axis():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    p = pca_projection(X, 3)
    assert p.coords.shape == (3, 3)
    np.testing.assert_allclose(p.coords[:, 2], 0.0)
    assert p.explained_variance_ratio[2] == 0.0
    assert p.explained_variance_ratio.sum() == pytest.approx(1.0)


def test_pca_preserves_distances_when_rank_fits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 10))  # three points span a plane: 2-D PCA keeps every distance
    p = pca_projection(X, 2)
    d_full = np.linalg.norm(X[:, None] - X[None], axis=-1)
    d_proj = np.linalg.norm(p.coords[:, None] - p.coords[None], axis=-1)
    np.testing.assert_allclose(d_proj, d_full, atol=1e-10)


def test_pca_identical_points_are_zero_with_a_note():
    p = pca_projection(np.ones((4, 5)), 2)
    np.testing.assert_array_equal(p.coords, 0.0)
    assert p.notes and "identical" in p.notes[0]


@pytest.mark.parametrize("method", ["pca", "umap", "tsne"])
@pytest.mark.parametrize("n", [0, 1, 2])
def test_fewer_than_three_points_says_what_to_do(method, n):
    with pytest.raises(ProjectionError, match=f"at least {MIN_POINTS} points") as err:
        project(np.ones((n, 4)), method, 2)
    assert "Add sentences" in str(err.value)


def test_bad_dims_and_method():
    with pytest.raises(ProjectionError, match="2 or 3"):
        project(np.eye(4), "pca", 4)
    with pytest.raises(ProjectionError, match="Unknown projection method"):
        project(np.eye(4), "lda", 2)


def test_clamps():
    assert clamp_n_neighbors(15, 3) == 2
    assert clamp_n_neighbors(15, 100) == 15
    assert clamp_n_neighbors(1, 100) == 2
    assert clamp_perplexity(30, 4) == 1.0
    assert clamp_perplexity(30, 31) == 10.0
    assert clamp_perplexity(5, 100) == 5.0
    for n in range(3, 40):
        assert clamp_perplexity(30, n) < n  # scikit-learn's requirement
        assert 2 <= clamp_n_neighbors(15, n) <= n - 1


def _clusters(n_per=6, d=20, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n_per, d)) * 0.1 + np.r_[5.0, np.zeros(d - 1)]
    b = rng.normal(size=(n_per, d)) * 0.1 + np.r_[0.0, 5.0, np.zeros(d - 2)]
    return np.vstack([a, b])


@pytest.mark.parametrize("method", [pytest.param("umap", marks=pytest.mark.slow), "tsne"])  # UMAP: its import and numba compile, ~20-40 s
@pytest.mark.parametrize("dims", [2, 3])
def test_nonlinear_methods_are_seeded_and_clamped(method, dims):
    X = _clusters()
    p1 = project(X, method, dims, seed=3)
    p2 = project(X, method, dims, seed=3)
    assert p1.coords.shape == (12, dims)
    assert np.all(np.isfinite(p1.coords))
    np.testing.assert_array_equal(p1.coords, p2.coords)  # a shared link shows the same picture
    if method == "umap":
        assert p1.n_neighbors == 11 and "n_neighbors" in p1.notes[0]
    else:
        assert p1.perplexity == pytest.approx(11 / 3) and "perplexity" in p1.notes[0]


@pytest.mark.parametrize("method", ["pca", pytest.param("umap", marks=pytest.mark.slow), "tsne"])
def test_two_clusters_stay_apart(method):
    X = _clusters()
    c = project(X, method, 2).coords
    within = max(np.ptp(c[:6], axis=0).max(), np.ptp(c[6:], axis=0).max())
    between = np.linalg.norm(c[:6].mean(axis=0) - c[6:].mean(axis=0))
    assert between > within


@pytest.mark.parametrize("method", [pytest.param("umap", marks=pytest.mark.slow), "tsne"])
def test_three_points_work(method):
    p = project(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), method, 2)
    assert p.coords.shape == (3, 2) and np.all(np.isfinite(p.coords))


def test_align_to_undoes_rotation_and_reflection():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(8, 2))
    theta = 1.1
    R = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]) @ np.diag([1, -1])
    moved = ref @ R + 3.0
    aligned = align_to(moved, ref)
    # same shape as ref up to the translation of `moved`'s centre
    np.testing.assert_allclose(aligned - aligned.mean(0), ref - ref.mean(0), atol=1e-10)


def test_project_layers_one_per_layer_and_distances_kept():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(3, 7, 12))
    out = project_layers(H, "pca", 2)
    assert len(out) == 3
    for layer, p in enumerate(out):
        raw = pca_projection(H[layer], 2).coords
        d_raw = np.linalg.norm(raw[:, None] - raw[None], axis=-1)
        d_al = np.linalg.norm(p.coords[:, None] - p.coords[None], axis=-1)
        np.testing.assert_allclose(d_al, d_raw, atol=1e-9)  # alignment only rotates


def test_numba_cache_dir_is_writable(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = ensure_numba_cache_dir()
    assert path and os.access(path, os.W_OK)
    assert os.environ["NUMBA_CACHE_DIR"] == path
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere/else")
    assert ensure_numba_cache_dir() == "/somewhere/else"  # an explicit setting wins


def test_same_sense_neighbours_by_hand():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.2, 0.0], [2.4, 0.0]])
    senses = ["a", "a", "b", "b", "a"]
    # nearest: 0->1 (a, hit), 1->0 (hit), 2->3 (hit), 3->2 (hit), 4 (a) -> 1 at 2.3 vs 2 at 2.6 (hit)
    assert same_sense_neighbours(X, senses) == (5, 5)
    senses = ["a", "a", "b", "b", "b"]  # point 4 (b) is nearest to 1 (a): a miss
    assert same_sense_neighbours(X, senses) == (4, 5)


def test_same_sense_neighbours_skips_unlabelled_and_uses_cosine():
    X = np.array([[1.0, 0.0], [10.0, 0.5], [0.0, 1.0], [0.9, 0.1]])
    # by cosine, point 1 (long, same direction as 0) is 0's neighbour; point 3 is unlabelled
    assert same_sense_neighbours(X, ["a", "a", "b", None], metric="cosine") == (2, 3)
    assert same_sense_neighbours(X, [None, None, "b", None]) == (0, 0)
    with pytest.raises(ValueError, match="metric"):
        same_sense_neighbours(X, ["a", "a", "b", "b"], metric="manhattan")


# ---------------------------------------------------------------- figures (lib/charts/projection.py)


def test_scatter_escapes_hover_and_draws_context_first():
    from lib.charts.projection import projection_scatter

    coords = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]])
    fig = projection_scatter(
        coords,
        ["river", "money", "river"],
        ["We sat <i>by</i> the bank.", "The bank & co.", "A muddy bank."],
        ["1", "2", "3"],
        context=np.array([[0.5, 0.5]]),
        context_hover=["“the” <script>"],
        axis_titles=["PC1 (50% of variance)", "PC2 (20% of variance)"],
    )
    assert fig.data[0].name == "other word pieces"
    assert [t.name for t in fig.data[1:]] == ["river", "money"]
    hovers = " ".join(h for t in fig.data for h in t.hovertext)
    assert "<i>" not in hovers and "<script>" not in hovers and "&amp;" in hovers
    assert fig.layout.yaxis.scaleanchor == "x"  # equal axes: honest distances


def test_scatter_3d_and_small_multiples():
    from lib.charts.projection import projection_scatter, projection_small_multiples

    rng = np.random.default_rng(0)
    fig = projection_scatter(rng.normal(size=(4, 3)), [None] * 4, ["s"] * 4, ["1", "2", "3", "4"])
    assert fig.data[0].type == "scatter3d" and fig.data[0].name == "no label"
    layers = [rng.normal(size=(4, 2)) for _ in range(7)]
    fig = projection_small_multiples(
        layers, ["a", "a", "b", "b"], ["s"] * 4, ["1", "2", "3", "4"], [f"layer {j}" for j in range(7)]
    )
    assert len(fig.data) == 7 * 2  # one trace per sense per panel
    assert sum(t.showlegend for t in fig.data) == 2  # legend once
    y = layers[0][:, 1]
    lo, hi = fig.layout.yaxis.range
    assert lo < y.min() and hi > y.max()  # margin: no marker cut at the edge

def _svd_pca(X, dims):
    """An independent PCA: numpy's SVD of the centred data, each axis signed by its largest loading."""
    C = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(C, full_matrices=False)
    sign = np.sign(Vt[np.arange(len(S)), np.argmax(np.abs(Vt), axis=1)])
    return (U * S * sign)[:, :dims], (S**2 / np.sum(S**2))[:dims]


@pytest.mark.parametrize(("n", "dims"), [(3, 2), (12, 2), (40, 3)])
def test_pca_matches_an_independent_svd_with_a_deterministic_sign(n, dims):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 384)) * np.linspace(0.1, 3.0, 384)
    p = pca_projection(X, dims)
    coords, ratio = _svd_pca(X, dims)
    m = min(dims, n - 1)  # n points span at most n - 1 directions
    np.testing.assert_allclose(p.coords[:, :m], coords[:, :m], atol=1e-9)
    np.testing.assert_allclose(p.explained_variance_ratio[:m], ratio[:m], atol=1e-12)
    # the sign does not depend on the order of the points or on which way the data were written down
    perm = rng.permutation(n)
    np.testing.assert_allclose(pca_projection(X[perm], dims).coords, p.coords[perm], atol=1e-9)
    np.testing.assert_allclose(pca_projection(-X, dims).coords, -p.coords, atol=1e-9)
    np.testing.assert_array_equal(pca_projection(X, dims).coords, p.coords)  # run twice, same picture


def test_pca_of_identical_points_is_zero_with_a_note():
    p = pca_projection(np.ones((4, 5)), 2)
    assert np.array_equal(p.coords, np.zeros((4, 2))) and np.array_equal(p.explained_variance_ratio, [0, 0])
    assert "identical" in p.notes[0]


# ------------------------------------------------------------------ moved out of pages/projections.py


def test_group_neighbours_by_hand():
    # two group points close together, one far away; the others sit next to the far one
    pts = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.0], [5.3, 0.0]])
    assert group_neighbours(pts, 3) == 2  # point 2's nearest is point 3, outside the group
    assert group_neighbours(pts, 5) == 5
    assert group_neighbours(pts[:1], 1) == 0


def test_context_points_follow_the_masks_and_sample_the_same_points_every_time():
    rng = np.random.default_rng(0)
    hidden = [rng.normal(size=(3, 4, 2)).astype(np.float32), rng.normal(size=(3, 5, 2)).astype(np.float32)]
    masks = [np.array([False, True, True, False]), np.array([False, True, False, True, False])]
    allp = context_points(hidden, masks, 2, limit=10)
    assert allp.where == ((0, 1), (0, 2), (1, 1), (1, 3)) and allp.total == 4
    np.testing.assert_array_equal(allp.vectors, np.stack([hidden[i][2, p] for i, p in allp.where]))
    assert allp.vectors.dtype == np.float32
    some = context_points(hidden, masks, 2, limit=2)
    assert len(some.where) == 2 and set(some.where) <= set(allp.where) and some.total == 4
    assert list(some.where) == sorted(some.where)
    assert context_points(hidden, masks, 2, limit=2).where == some.where  # seeded: the same sample
    none = context_points(hidden, [np.zeros(4, bool), np.zeros(5, bool)], 0, limit=3)
    assert none.vectors.shape == (0, 2) and none.where == () and none.total == 0


def test_same_nearest_neighbour_by_hand():
    from lib.stats.projection import same_nearest_neighbour

    # full space (cosine): 0-1 nearest each other, 2-3 nearest each other
    full = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.9, 0.1]])
    # a map that pairs 0 with 2 and 1 with 3: every same-sense count can still match, the pairs do not
    coords = np.array([[0.0, 0.0], [5.0, 0.0], [0.1, 0.0], [5.1, 0.0]])
    senses = ["a", "a", "a", "a"]
    assert same_sense_neighbours(coords, senses) == same_sense_neighbours(full, senses, metric="cosine") == (4, 4)
    assert same_nearest_neighbour(coords, full, senses) == (0, 4)
    assert same_nearest_neighbour(full[:, :2], full, senses) == (4, 4)
    assert same_nearest_neighbour(coords, full, ["a", None, None, None]) == (0, 0)


def test_all_alike_by_hand():
    from lib.stats.projection import all_alike

    v = np.array([[1.0, 2.0, 3.0]] * 4)
    assert all_alike(v) and all_alike(v[:1])
    w = v.copy()
    w[2, 1] += 1e-3
    assert not all_alike(w)
    assert all_alike(v * 1e4 + np.array([[0.0, 0.0, 1e-3]] * 4))  # relative to the vectors' size
