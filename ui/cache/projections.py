"""Projections of a set's vectors (2-D/3-D maps and their neighbour check), keyed by the arrays' contents."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

from lib.stats.projection import NeighbourCheck, Projection, neighbour_check, project, project_layers
from ui.cache.store import _array_key, _cached, _freeze
from ui.work import heavy, projection_cost


def projection(X: np.ndarray, method: str, dims: int, seed: int = 0) -> Projection:
    """lib.stats.projection.project of X (n, hidden) (Projections), keyed by the array's contents, in RESULTS."""

    def run() -> Projection:
        with heavy(projection_cost(*np.shape(X))):
            return _freeze(project(X, method, dims, seed=seed))

    return _cached(("projection", _array_key(X), method, dims, seed), run)


def projection_check(X: np.ndarray, coords: np.ndarray) -> NeighbourCheck:
    """lib.stats.projection.neighbour_check(X, coords, k=5) (Projections), keyed by both arrays' contents."""

    def run() -> NeighbourCheck:
        with heavy(projection_cost(*np.shape(X))):
            return _freeze(neighbour_check(X, coords, k=5))

    return _cached(("projection_check", _array_key(X), _array_key(coords)), run)


def projection_layers(H: np.ndarray, method: str, progress: Callable[[int, int], None] | None = None):
    """lib.stats.projection.project_layers(H, method, 2) of H (L+1, n, hidden) (Projections), in RESULTS.

    One layer per slot of the work queue (a t-SNE of 500 points is a few seconds): a long request re-enters
    the queue between layers, and stops there when the learner leaves. ``progress(done, total)`` after each.
    """
    _, n, hidden = np.shape(H)

    @contextlib.contextmanager
    def each_layer(layer: int):
        with heavy(projection_cost(n, hidden)):
            yield
        if progress is not None:
            progress(layer + 1, int(np.shape(H)[0]))

    return _cached(
        ("projection_layers", _array_key(H), method),
        lambda: tuple(_freeze(p) for p in project_layers(H, method, 2, step=each_layer)),
    )


