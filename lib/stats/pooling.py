"""Which word vector to use: one hidden state, or a mean over several layers; and two sentence vectors.

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K = num_layers + 1`` hidden states
  (index 0 the embedding output), ``H`` hidden dimensions.

:class:`Representation` names a choice ("layer 4", "mean of the last four layers"); :func:`with_pooled`
appends the two pooled choices to a layer axis, so every per-layer statistic covers them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from lib.stats.similarity import check_vectors

Pooling = Literal["layer", "last4", "all"]
POOLING_NAMES: dict[str, str] = {
    "layer": "a single layer",
    "last4": "mean of the last four layers",
    "all": "mean of all layers",
}


def pooled_layers(num_hidden_states: int, pooling: Pooling, layer: int | None = None) -> tuple[int, ...]:
    """Which layer indices a pooling choice averages, for arrays with ``num_hidden_states = L + 1``.

    * ``"layer"``: just ``layer`` (required).
    * ``"last4"``: the last four transformer layers ``L-3 .. L`` (fewer if the model has fewer than
      four layers; the embedding layer 0 is never included unless the model has no layers).
    * ``"all"``: every representation ``0 .. L``, the embedding output included.
    """
    k = num_hidden_states
    if k < 1:
        raise ValueError("need at least one layer")
    if pooling == "layer":
        if layer is None or not 0 <= layer < k:
            raise ValueError(f"layer must be between 0 and {k - 1}, got {layer}")
        return (layer,)
    if pooling == "last4":
        if k == 1:
            return (0,)
        return tuple(range(max(1, k - 4), k))
    if pooling == "all":
        return tuple(range(k))
    raise ValueError(f"unknown pooling {pooling!r}; use 'layer', 'last4' or 'all'")


def pool(vectors: np.ndarray, pooling: Pooling, layer: int | None = None) -> np.ndarray:
    """One vector per sentence from the per-layer vectors.

    vectors: (n, L+1, H) -> (n, H) float64: the chosen layer, or the mean over the pooled layers.
    """
    v = check_vectors(vectors)
    idx = list(pooled_layers(v.shape[1], pooling, layer))
    return v[:, idx, :].astype(np.float64).mean(axis=1)


def pooling_label(pooling: Pooling, layer: int | None = None) -> str:
    """Short human name of a pooling choice, e.g. 'layer 4' or 'mean of the last four layers'."""
    if pooling == "layer":
        return "embedding layer (0)" if layer == 0 else f"layer {layer}"
    return POOLING_NAMES[pooling]


POOLED = ("last4", "all")


def with_pooled(x: np.ndarray, axis: int = 1) -> np.ndarray:
    """Append the two pooled representations after the layers along ``axis``.

    x: (..., K, ...) with K = L + 1 along ``axis`` -> (..., K + 2, ...): index K is the mean of the last
    four layers, index K + 1 the mean of all layers (see :func:`pooled_layers`). Every per-layer
    statistic can then be computed for the pooled choices too.
    """
    x = np.asarray(x)
    k = x.shape[axis]
    extra = [
        np.take(x, list(pooled_layers(k, name)), axis=axis).mean(axis=axis, keepdims=True) for name in POOLED
    ]
    return np.concatenate([x.astype(np.float64), *extra], axis=axis)


def representation_index(num_hidden_states: int, pooling: Pooling, layer: int | None = None) -> int:
    """Index into a :func:`with_pooled` axis: the layer itself, K for last-four, K + 1 for all."""
    if pooling == "layer":
        pooled_layers(num_hidden_states, pooling, layer)  # validates the layer
        return int(layer)
    return num_hidden_states + POOLED.index(pooling)


@dataclass(frozen=True)
class Representation:
    """One choice of word vector: a single hidden state, or a mean over several (pooled).

    pooling: "layer" (one hidden state), "last4" or "all" (pooled, see :func:`pooled_layers`);
    layer:   the 0-based hidden-state index when ``pooling == "layer"`` (0 = embedding output), else None.
    Use this instead of reading "index >= L + 1 means pooled" off a :func:`with_pooled` axis.
    """

    pooling: Pooling
    layer: int | None = None

    def __post_init__(self) -> None:
        if self.pooling not in POOLING_NAMES:
            raise ValueError(f"unknown pooling {self.pooling!r}; use 'layer', 'last4' or 'all'")
        if self.pooling == "layer" and self.layer is None:
            raise ValueError("a single-layer representation needs its layer")
        if self.pooling != "layer":
            object.__setattr__(self, "layer", None)  # a pooled choice has no single layer

    @property
    def is_pooled(self) -> bool:
        return self.pooling != "layer"

    @property
    def label(self) -> str:
        """'layer 4', 'embedding layer (0)' or 'mean of the last four layers'."""
        return pooling_label(self.pooling, self.layer)

    def layers(self, num_hidden_states: int) -> tuple[int, ...]:
        """The hidden-state indices this representation averages (one for a single layer)."""
        return pooled_layers(num_hidden_states, self.pooling, self.layer)

    def index(self, num_hidden_states: int) -> int:
        """Its index on a :func:`with_pooled` axis of ``num_hidden_states + 2`` entries."""
        return representation_index(num_hidden_states, self.pooling, self.layer)


def sentence_vectors(
    hidden_states: Sequence[np.ndarray], special: Sequence[Sequence[bool]], *, single: str = "first"
) -> tuple[np.ndarray, np.ndarray]:
    """Two sentence vectors per layer: one word piece's and the mean of the ordinary word pieces.

    hidden_states: per sentence (K, n_i, H); special: per sentence (n_i,) bool (``Encoding.special``), which
    must leave at least one ordinary word piece. ``single``: "first", the first token's vector (a BERT-style
    [CLS]: it must be special), or "last", the last ordinary word piece's (in a left-to-right model the only
    one that has read the whole sentence). The mean leaves every special token out (sentence-transformers'
    own mean pooling keeps them). Returns (single, mean), each (n, K, H) float64.
    """
    if single not in ("first", "last"):
        raise ValueError(f"single must be 'first' or 'last'; got {single!r}")
    one, mean = [], []
    for hs, sp in zip(hidden_states, special, strict=True):
        hs = np.asarray(hs)
        is_special = np.asarray(sp, dtype=bool)
        if len(is_special) != hs.shape[1] or is_special.all() or (single == "first" and not is_special[0]):
            raise ValueError(
                "each sentence needs a special first token ([CLS]) and at least one ordinary word piece"
            )
        # float64 copies of the slices only: a view into the whole sentence in float64 kept every sentence's
        # copy alive (27 decoder sentences of 128 pieces: ~0.5 GB)
        j = 0 if single == "first" else int(np.flatnonzero(~is_special)[-1])
        one.append(hs[:, j, :].astype(np.float64))
        mean.append(hs[:, ~is_special, :].mean(axis=1, dtype=np.float64))  # accumulated in float64, no copy
    return np.stack(one), np.stack(mean)
