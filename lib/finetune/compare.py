"""Pretrained vs fine-tuned, layer by layer: how far each layer moved and what it did to the senses.

Per hidden state ℓ = 0 … L (0 = the embedding output):

* ``cka``: linear CKA (Kornblith et al. 2019) between the pretrained and the fine-tuned task vectors of every
  sentence of the set: 1 when the fine-tuned layer is the pretrained one up to a rotation and a scale,
  lower the more its geometry changed (Merchant et al. 2020 found the top layers move most);
* ``floor_low``, ``floor_high``: CKA's floor at this n and d, the band (2.5th to 97.5th percentile) CKA reaches
  between the same two sets of vectors with the sentences paired at random (:func:`cka_floor`). Linear CKA of
  unrelated vectors is far from 0 when n is small against d (12 sentences in 384 dimensions: ~0.6-0.8), so a
  layer's CKA says how far it moved only above that band: at or below it, the fine-tuned vectors are no more
  like the pretrained ones than a random pairing is (:meth:`LayerComparison.status`);
* ``weight_change``: ‖W_ft − W_pre‖ / ‖W_pre‖ over every weight of layer ℓ (the embeddings for ℓ = 0);
  exactly 0 for a frozen layer (its tensors are the pretrained ones);
* sense separation on the held-out (validation and test) sentences before and after: the nearest-centroid
  readout (centroids from the training sentences, :func:`lib.stats.readout.centroid_readout`) and the
  same-minus-different-sense cosine gap among the held-out sentences (:func:`lib.stats.similarity.sense_similarity`, the Layer by
  layer curve; None when the held-out sentences hold no same-sense pair);
* anisotropy before and after (:func:`lib.stats.geometry.anisotropy`): the mean cosine between the set's
  ordinary word pieces at that layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.finetune import backbone
from lib.stats.geometry import anisotropy
from lib.stats.readout import centroid_readout
from lib.stats.similarity import cosine_matrix, sense_similarity

__all__ = [
    "KEPT",
    "LayerComparison",
    "cka_floor",
    "compare_layers",
    "linear_cka",
    "pooled_vectors",
    "weight_change",
]

KEPT = 0.99  # CKA from which a layer kept its geometry (a rotation and a scale of it, within 1 %)
FLOOR_DRAWS = 200  # random pairings per layer for the floor band
FLOOR_SEED = 0


def _centred_gram(X) -> np.ndarray:
    A = np.asarray(X, dtype=np.float64)
    A = A - A.mean(axis=0)
    return A @ A.T


def linear_cka(X, Y) -> float:
    """Linear centred kernel alignment of two sets of vectors of the same n items, a number in [0, 1].

    X: (n, d1), Y: (n, d2), row i of each describing item i. With column-centred X̃, Ỹ:
    CKA = ‖Ỹᵀ X̃‖²_F / (‖X̃ᵀ X̃‖_F ‖Ỹᵀ Ỹ‖_F), computed as ⟨K, L⟩ / (‖K‖ ‖L‖) with the Gram matrices
    K = X̃ X̃ᵀ, L = Ỹ Ỹᵀ (n × n, cheap when n ≪ d). Invariant to rotating or scaling either set; 1 for
    identical sets. NaN when either set has no variance (all rows equal), where it is undefined.
    """
    A = np.asarray(X, dtype=np.float64)
    B = np.asarray(Y, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0]:
        raise ValueError(f"CKA needs (n, d) arrays of the same n; got {A.shape} and {B.shape}")
    return _cka_gram(_centred_gram(A), _centred_gram(B))


def _cka_gram(K: np.ndarray, L: np.ndarray) -> float:
    denom = np.linalg.norm(K) * np.linalg.norm(L)
    if denom <= 1e-300:
        return float("nan")
    return float(np.clip(np.sum(K * L) / denom, 0.0, 1.0))


def cka_floor(X, Y, *, draws: int = FLOOR_DRAWS, seed: int = FLOOR_SEED) -> tuple[float, float]:
    """CKA's floor for these two sets: the 2.5th and 97.5th percentiles of ``linear_cka(X, Y[p])`` over
    ``draws`` random orders ``p`` of Y's rows (each set keeps its own geometry; only which sentence is paired
    with which is lost). A CKA inside the band is what vectors unrelated sentence by sentence reach at this n
    and d. X: (n, d1), Y: (n, d2); (NaN, NaN) where CKA is undefined."""
    K, L = _centred_gram(X), _centred_gram(Y)
    rng = np.random.default_rng(seed)
    n = K.shape[0]
    values = []
    for _ in range(int(draws)):
        p = rng.permutation(n)
        values.append(_cka_gram(K, L[np.ix_(p, p)]))
    if not np.all(np.isfinite(values)):
        return float("nan"), float("nan")
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def weight_change(pretrained, finetuned, num_layers: int) -> np.ndarray:
    """(L + 1,) relative change of each layer's weights: sqrt(Σ‖ΔW‖²) / sqrt(Σ‖W‖²) over its tensors,
    index 0 the embeddings. LoRA adapters are folded into the weights they adapt; a tensor the fine-tuned
    model shares with the pretrained one contributes exactly 0. ``finetuned`` None (head, mix): all zero."""
    change = np.zeros(num_layers + 1)
    if finetuned is None:
        return change
    pre = dict(pretrained.named_parameters())
    diff2 = np.zeros(num_layers + 1)
    norm2 = np.zeros(num_layers + 1)
    for name, w in backbone.effective_weights(finetuned).items():
        layer = backbone.layer_of(name)
        if layer is None or name not in pre:
            continue
        w0 = pre[name].detach()
        norm2[layer] += _squares(w0)
        if w is not w0 and w.data_ptr() != w0.data_ptr():
            diff2[layer] += _squares(w0, w)
    np.divide(np.sqrt(diff2), np.sqrt(norm2), out=change, where=norm2 > 0)
    return change


def _squares(a, b=None, rows: int = 4096) -> float:
    """Σ a² (or Σ (b − a)²) in float64, a block of ``rows`` rows at a time: the word embeddings in float64 at
    once would hold ~0.2 GB for a moment."""
    a = a.reshape(a.shape[0], -1) if a.dim() > 1 else a.reshape(-1, 1)
    b = None if b is None else b.detach().reshape(a.shape)
    total = 0.0
    for i in range(0, a.shape[0], rows):
        d = a[i : i + rows].double()
        if b is not None:
            d = b[i : i + rows].double() - d
        total += float((d * d).sum())
    return total


def pooled_vectors(encoding, pool) -> np.ndarray:
    """(n, K, H) float32: each sentence's task vector at every hidden state (``pool[i] @ hidden_states[i]``)."""
    return np.stack(
        [np.einsum("t,kth->kh", pool[i], encoding.hidden_states[i]) for i in range(len(pool))]
    ).astype(np.float32)


def _word_pieces(encoding, layer: int) -> np.ndarray:
    """(m, H): the ordinary (non-special) word pieces of every sentence at hidden state ``layer``."""
    return np.concatenate([h[layer][~s] for h, s in zip(encoding.hidden_states, encoding.special, strict=True)])


@dataclass(frozen=True)
class LayerComparison:
    """Pretrained vs fine-tuned per hidden state ℓ = 0 … L (see the module). Every array is (L + 1,).

    vectors_before, vectors_after: (n, L + 1, H) the task vectors of every sentence (split order)
    gap_before / gap_after: None when the held-out sentences have no same-sense pair
    """

    cka: np.ndarray
    floor_low: np.ndarray
    floor_high: np.ndarray
    weight_change: np.ndarray
    readout_before: np.ndarray
    readout_after: np.ndarray
    gap_before: np.ndarray | None
    gap_after: np.ndarray | None
    anisotropy_before: np.ndarray
    anisotropy_after: np.ndarray
    vectors_before: np.ndarray
    vectors_after: np.ndarray

    def status(self, layer: int) -> str:
        """What hidden state ``layer``'s CKA says: "kept" (CKA ≥ :data:`KEPT`: its geometry is the pretrained
        one), "floor" (at or below the floor band's top: no more alike than a random pairing, so CKA cannot say
        how far it moved), "changed" (between the two) or "undefined" (the vectors do not vary: a decoder's
        hidden state 0 is the target's word piece alone, the same in every sentence)."""
        c = float(self.cka[layer])
        if not np.isfinite(c):
            return "undefined"
        if c >= KEPT:
            return "kept"
        if c <= float(self.floor_high[layer]):
            return "floor"
        return "changed"

    @property
    def num_hidden_states(self) -> int:
        return int(self.cka.shape[0])

    def rows(self) -> list[dict]:
        """One dict per hidden state: ``layer``, ``cka``, ``weight_change`` and the before/after figures."""

        def num(x):
            return None if x is None or not np.isfinite(x) else round(float(x), 6)

        out = []
        for i in range(self.num_hidden_states):
            out.append(
                {
                    "layer": i,
                    "cka": num(self.cka[i]),
                    "cka_floor": num(self.floor_high[i]),
                    "cka_floor_low": num(self.floor_low[i]),
                    "cka_status": self.status(i),
                    "weight_change": num(self.weight_change[i]),
                    "heldout_readout_before": num(self.readout_before[i]),
                    "heldout_readout_after": num(self.readout_after[i]),
                    "heldout_gap_before": num(self.gap_before[i]) if self.gap_before is not None else None,
                    "heldout_gap_after": num(self.gap_after[i]) if self.gap_after is not None else None,
                    "anisotropy_before": num(self.anisotropy_before[i]),
                    "anisotropy_after": num(self.anisotropy_after[i]),
                }
            )
        return out


def compare_layers(pretrained_model, prepared, finetuned_model, after_encoding, num_layers: int) -> LayerComparison:
    """Compare the pretrained reading of the split (``prepared.encoding``) with the fine-tuned one
    (``after_encoding``: the fine-tuned model's encoding of the same sentences; ``prepared.encoding`` again
    when the model did not change, as for head and mix)."""
    split = prepared.split
    before = prepared.features
    after = pooled_vectors(after_encoding, prepared.pool)
    K = before.shape[1]
    tr, te = list(split.train), list(split.heldout)
    train_senses = [split.senses[i] for i in tr]
    held_senses = [split.senses[i] for i in te]

    def separation(v: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        readout = centroid_readout(v[tr], train_senses, v[te], held_senses).accuracy
        cos = np.stack([cosine_matrix(v[te][:, k]) for k in range(K)])
        return np.asarray(readout, dtype=float), sense_similarity(cos, held_senses).gap

    r0, g0 = separation(before)
    r1, g1 = separation(after)
    floors = np.array([cka_floor(before[:, k], after[:, k]) for k in range(K)])
    return LayerComparison(
        cka=np.array([linear_cka(before[:, k], after[:, k]) for k in range(K)]),
        floor_low=floors[:, 0],
        floor_high=floors[:, 1],
        weight_change=weight_change(pretrained_model, finetuned_model, num_layers),
        readout_before=r0,
        readout_after=r1,
        gap_before=g0,
        gap_after=g1,
        anisotropy_before=np.array([anisotropy(_word_pieces(prepared.encoding, k)) for k in range(K)]),
        anisotropy_after=np.array([anisotropy(_word_pieces(after_encoding, k)) for k in range(K)]),
        vectors_before=before,
        vectors_after=after,
    )
