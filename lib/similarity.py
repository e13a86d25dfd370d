"""Similarity of one word's vectors across sentences, layer by layer.

Everything here is plain numpy and works on arrays the encoder already produced:

* ``vectors``: ``(n, K, H)`` -- one target word in ``n`` sentences, ``K`` layer representations
  (usually ``K = num_layers + 1`` with index 0 the embedding output), ``H`` hidden dimensions.
* ``hidden_states``: a sequence of ``(K, n_tokens_i, H)`` arrays, one per sentence (for baselines
  over *other* tokens and for intra-sentence similarity).

Cosine similarity is defined as 0 whenever one of the two vectors is (numerically) zero, so no
function here returns NaN or inf; every cosine lies in [-1, 1].

Statistics:
  * cosine matrices per layer, mean same-sense / different-sense cosine and their gap, and the hardest
    case (a sentence nearer another sense than its own);
  * pooling over layers (:class:`Representation`) and two sentence vectors: [CLS] and the mean of the
    ordinary word pieces;
  * pair trajectories (one pair's cosine across layers);
  * a random other-token baseline per layer (anisotropy) and baseline-adjusted similarity;
  * self-similarity and intra-sentence similarity (Ethayarajh 2019);
  * leave-one-out nearest-centroid sense readout per layer (Coenen et al. 2019), majority baseline, and
    each sentence's leave-one-out cosine with every sense centroid behind it;
  * nearest neighbours and a small "evidence card" exportable as CSV and Markdown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

_EPS = 1e-12

Pooling = Literal["layer", "last4", "all"]
POOLING_NAMES: dict[str, str] = {
    "layer": "a single layer",
    "last4": "mean of the last four layers",
    "all": "mean of all layers",
}


# --------------------------------------------------------------------------------------------
# Published reference numbers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerReference:
    """Published per-layer numbers for one model, with where they come from.

    anisotropy:      (num_layers + 1,) mean cosine between random words in random contexts.
    intra_sentence:  (num_layers + 1,) mean cosine of each word to its sentence's mean vector.
    Index 0 is the embedding layer.
    """

    model: str
    anisotropy: tuple[float, ...]
    intra_sentence: tuple[float, ...]
    citation: str
    note: str

    @property
    def num_layers(self) -> int:
        return len(self.anisotropy) - 1


# fmt: off
_ETHAYARAJH_ANISOTROPY = (0.105, 0.168, 0.219, 0.245, 0.327, 0.377, 0.420, 0.398, 0.399, 0.484, 0.561, 0.675, 0.477)
_ETHAYARAJH_INTRA = (0.435, 0.522, 0.570, 0.590, 0.642, 0.695, 0.726, 0.711, 0.720, 0.771, 0.820, 0.870, 0.776)
# fmt: on

ETHAYARAJH_2019_BERT_BASE = LayerReference(
    model="bert-base-cased",
    anisotropy=_ETHAYARAJH_ANISOTROPY,
    intra_sentence=_ETHAYARAJH_INTRA,
    citation=(
        "Kawin Ethayarajh. 2019. How Contextual are Contextualized Word Representations? Comparing the "
        "Geometry of BERT, ELMo, and GPT-2 Embeddings. EMNLP-IJCNLP 2019, pages 55-65. "
        "https://aclanthology.org/D19-1006"
    ),
    note=(
        "From the author's released statistics for BERT-base (cased), layers 0-12: anisotropy is the mean "
        "cosine between 1,000 random words in random contexts; intra-sentence similarity is measured on "
        "STS sentences."
    ),
)


@dataclass(frozen=True)
class AnisotropyComparison:
    """A raw anisotropy curve's highest value next to a reference model's (e.g. BERT-base).

    peak_layer:     0-based layer of the curve's highest value
    peak:           that value
    reference_peak: the reference curve's highest value
    ratio:          peak / reference_peak
    strength:       "mild next to" (ratio < 0.4), "weaker than" (< 0.8), "comparable to" (< 1.25) or
                    "stronger than", to be followed by the reference's name
    """

    peak_layer: int
    peak: float
    reference_peak: float
    ratio: float
    strength: str


def compare_anisotropy(
    curve: np.ndarray, reference: LayerReference = ETHAYARAJH_2019_BERT_BASE
) -> AnisotropyComparison:
    """How strong a raw anisotropy curve ((L + 1,) mean cosines of random pairs) is next to ``reference``."""
    c = np.asarray(curve, dtype=float)
    if c.ndim != 1 or len(c) == 0 or not np.all(np.isfinite(c)):
        raise ValueError("compare_anisotropy needs a non-empty 1-D curve of finite values")
    k = int(np.argmax(c))
    ref_peak = float(max(reference.anisotropy))
    ratio = float(c[k]) / ref_peak
    strength = (
        "mild next to"
        if ratio < 0.4
        else "weaker than"
        if ratio < 0.8
        else "comparable to"
        if ratio < 1.25
        else "stronger than"
    )
    return AnisotropyComparison(peak_layer=k, peak=float(c[k]), reference_peak=ref_peak, ratio=ratio, strength=strength)


# --------------------------------------------------------------------------------------------
# Cosine
# --------------------------------------------------------------------------------------------


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Scale vectors along the last axis to length 1; (numerically) zero vectors stay zero.

    x: (..., H) -> (..., H) float64
    """
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    safe = np.where(norms > _EPS, norms, 1.0)
    return np.where(norms > _EPS, x / safe, 0.0)


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Pairwise cosine similarity between rows: the app's one definition.

    a: (n, H); b: (m, H), or None for the rows of ``a`` against themselves. Returns (n, m) float64.
    Invariants: every entry lies in [-1, 1] (clipped against rounding); a (numerically) zero row has
    cosine 0 with everything, itself included; with ``b=None`` the matrix is exactly symmetric and its
    diagonal is 1 for non-zero rows. Raises ValueError for input that is not 2-D or not finite.
    """
    ua = unit_rows(_finite_rows(a, "a"))
    if b is None:
        c = np.clip(ua @ ua.T, -1.0, 1.0)
        return (c + c.T) / 2  # BLAS may round c[i, j] and c[j, i] differently
    ub = unit_rows(_finite_rows(b, "b"))
    if ub.shape[1] != ua.shape[1]:
        raise ValueError(f"a has {ua.shape[1]} dimensions but b has {ub.shape[1]}.")
    return np.clip(ua @ ub.T, -1.0, 1.0)


def _finite_rows(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_vectors, hidden); got shape {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return a


def layer_cosine_matrices(vectors: np.ndarray) -> np.ndarray:
    """Cosine matrix of the ``n`` vectors at every layer.

    vectors: (n, K, H) -> (K, n, n), each slice symmetric with values in [-1, 1].
    """
    v = unit_rows(_check_vectors(vectors))
    per_layer = np.ascontiguousarray(np.transpose(v, (1, 0, 2)))  # (K, n, H)
    return np.clip(per_layer @ np.transpose(per_layer, (0, 2, 1)), -1.0, 1.0)  # batched BLAS matmul


def upper_pairs(n: int) -> np.ndarray:
    """All unordered index pairs ``i < j`` of ``n`` items, in row-major order: (n*(n-1)/2, 2) int."""
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1)


def pair_values(matrices: np.ndarray) -> np.ndarray:
    """The entries above the diagonal, pairs i < j in row-major order: (..., n, n) -> (..., P)."""
    m = np.asarray(matrices)
    i, j = np.triu_indices(m.shape[-1], k=1)
    return m[..., i, j]


def mean_pair_cosines(cosines: np.ndarray) -> np.ndarray:
    """Mean over all pairs i < j of each matrix: (K, n, n) -> (K,); zeros when n < 2."""
    values = pair_values(cosines)
    return values.mean(axis=-1) if values.shape[-1] else np.zeros(values.shape[:-1])


def most_changed_pairs(
    cosines: np.ndarray,
    senses: Sequence[str | None] | None,
    *,
    first: int,
    last: int,
    limit: int,
) -> np.ndarray:
    """The pairs to draw as lines: all of them, or the ``limit`` whose cosine changed most.

    cosines: (K, n, n); the change is ``|cosines[last] - cosines[first]|`` per pair. With ``senses``
    (labelled sets) half the quota goes to same-sense pairs (equal labels) and half to the others;
    ties keep the lower pair. Returns (P, 2) int pairs i < j in row-major order.
    """
    cos = np.asarray(cosines)
    pairs = upper_pairs(cos.shape[1])
    if len(pairs) <= limit:
        return pairs
    change = np.abs(cos[last][pairs[:, 0], pairs[:, 1]] - cos[first][pairs[:, 0], pairs[:, 1]])
    if senses is not None:
        kind = np.array([senses[i] == senses[j] for i, j in pairs], dtype=bool)
        groups, quota = (np.flatnonzero(kind), np.flatnonzero(~kind)), limit // 2
    else:
        groups, quota = (np.arange(len(pairs)),), limit
    keep: list[int] = []
    for group in groups:
        keep.extend(group[np.argsort(-change[group], kind="stable")[:quota]].tolist())
    return pairs[np.sort(keep)]


def mean_offdiagonal(matrix: np.ndarray) -> float:
    """Mean of the entries above the diagonal of one square (n, n) matrix; 0.0 when n < 2
    (:func:`mean_pair_cosines` of a single matrix)."""
    return float(mean_pair_cosines(np.asarray(matrix)[None])[0])


def _check_vectors(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors)
    if v.ndim != 3:
        raise ValueError(f"expected vectors of shape (n, layers, hidden), got shape {v.shape}")
    return v


# --------------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------------


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
    v = _check_vectors(vectors)
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
    statistic in this module can then be computed for the pooled choices too.
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
    hidden_states: Sequence[np.ndarray], special: Sequence[Sequence[bool]]
) -> tuple[np.ndarray, np.ndarray]:
    """Two sentence vectors per layer: the first token's ([CLS]) and the mean of the ordinary word pieces.

    hidden_states: per sentence (K, n_i, H); special: per sentence (n_i,) bool (``Encoding.special``), whose
    first token must be special (a BERT-style [CLS]) and which must leave at least one ordinary word piece.
    The mean leaves every special token out (sentence-transformers' own mean pooling keeps them).
    Returns (cls, mean), each (n, K, H) float64.
    """
    cls, mean = [], []
    for hs, sp in zip(hidden_states, special, strict=True):
        hs = np.asarray(hs, dtype=np.float64)
        is_special = np.asarray(sp, dtype=bool)
        if len(is_special) != hs.shape[1] or not is_special[0] or is_special.all():
            raise ValueError(
                "each sentence needs a special first token ([CLS]) and at least one ordinary word piece"
            )
        cls.append(hs[:, 0, :])
        mean.append(hs[:, ~is_special, :].mean(axis=1))
    return np.stack(cls), np.stack(mean)


# --------------------------------------------------------------------------------------------
# Same-sense vs different-sense
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SenseSimilarity:
    """Mean cosine of same-sense and different-sense pairs at each layer.

    same:      (K,) mean cosine over pairs with the same sense label, or None if there are none.
    different: (K,) mean cosine over pairs with different sense labels, or None if there are none.
    gap:       (K,) ``same - different``, or None unless both exist.
    n_same_pairs, n_different_pairs: how many pairs went into each mean.
    Sentences without a label (None or "") take part in no pair.
    """

    same: np.ndarray | None
    different: np.ndarray | None
    gap: np.ndarray | None
    n_same_pairs: int
    n_different_pairs: int


def _pair_kinds(senses: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs (P, 2), same mask (P,), labelled mask (P,)) over all unordered pairs."""
    n = len(senses)
    pairs = upper_pairs(n)
    lab = np.array([bool(s) for s in senses], dtype=bool)
    names = np.array([s if s else "" for s in senses], dtype=object)
    if len(pairs) == 0:
        empty = np.zeros(0, dtype=bool)
        return pairs, empty, empty
    labelled = lab[pairs[:, 0]] & lab[pairs[:, 1]]
    same = labelled & (names[pairs[:, 0]] == names[pairs[:, 1]])
    return pairs, same, labelled


def sense_similarity(cosines: np.ndarray, senses: Sequence[str | None]) -> SenseSimilarity:
    """Same- vs different-sense mean cosine per layer.

    cosines: (K, n, n) from :func:`layer_cosine_matrices`; senses: length n.
    """
    cos = np.asarray(cosines)
    if cos.ndim == 2:
        cos = cos[None]
    if cos.shape[1] != len(senses):
        raise ValueError(f"{len(senses)} sense labels for {cos.shape[1]} sentences")
    pairs, same, labelled = _pair_kinds(senses)
    diff = labelled & ~same
    values = cos[:, pairs[:, 0], pairs[:, 1]] if len(pairs) else np.zeros((cos.shape[0], 0))
    same_mean = values[:, same].mean(axis=1) if same.any() else None
    diff_mean = values[:, diff].mean(axis=1) if diff.any() else None
    gap = same_mean - diff_mean if same_mean is not None and diff_mean is not None else None
    return SenseSimilarity(same_mean, diff_mean, gap, int(same.sum()), int(diff.sum()))


def hardest_case(cosines: np.ndarray, senses: Sequence[str | None]) -> tuple[int, int, int] | None:
    """(a, b, c): the sentence ``a`` whose most similar different-sense partner ``b`` beats its least similar
    same-sense partner ``c`` by the most (or loses to it by the least).

    cosines: (n, n) at one layer; senses: n labels (every sentence labelled). Ties go to the earlier
    sentence and partner. None when no sentence has both a same-sense and a different-sense partner.
    """
    cos = np.asarray(cosines)
    s = np.array(senses, dtype=object)
    n = len(s)
    if cos.shape != (n, n):
        raise ValueError(f"{n} sense labels for a {cos.shape} cosine matrix")
    best = None
    for i in range(n):
        same = [j for j in range(n) if j != i and s[j] == s[i]]
        diff = [j for j in range(n) if s[j] != s[i]]
        if not same or not diff:
            continue
        b = diff[int(np.argmax(cos[i, diff]))]
        c = same[int(np.argmin(cos[i, same]))]
        score = cos[i, b] - cos[i, c]
        if best is None or score > best[0]:
            best = (score, i, b, c)
    return None if best is None else best[1:]


# --------------------------------------------------------------------------------------------
# Pair trajectories
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairTrajectories:
    """Cosine of individual sentence pairs across layers.

    pairs:   (P, 2) int sentence indices (i < j).
    cosines: (P, K) cosine of the pair at each layer.
    same_sense: (P,) bool, or None when the pair kinds are unknown (no labels).
    """

    pairs: np.ndarray
    cosines: np.ndarray
    same_sense: np.ndarray | None


def pair_trajectories(
    cosines: np.ndarray,
    senses: Sequence[str | None] | None = None,
    pairs: np.ndarray | Sequence[tuple[int, int]] | None = None,
) -> PairTrajectories:
    """One line per pair: ``cosines[:, i, j]`` across layers.

    cosines: (K, n, n); pairs: (P, 2) or None for all pairs i < j.
    ``same_sense`` is filled only when every sentence has a label.
    """
    cos = np.asarray(cosines)
    n = cos.shape[1]
    p = upper_pairs(n) if pairs is None else np.asarray(pairs, dtype=int).reshape(-1, 2)
    traj = cos[:, p[:, 0], p[:, 1]].T if len(p) else np.zeros((0, cos.shape[0]))
    same = None
    if senses is not None and len(senses) == n and all(senses):
        s = np.array(senses, dtype=object)
        same = s[p[:, 0]] == s[p[:, 1]] if len(p) else np.zeros(0, dtype=bool)
    return PairTrajectories(p, traj, same)


# --------------------------------------------------------------------------------------------
# Random other-token baseline (anisotropy)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenBaseline:
    """Cosine of random pairs of *other* words in the sentences, per layer (Ethayarajh 2019's baseline).

    Each pair is one word piece from each of two different, randomly chosen sentences, and the two word
    pieces are never the same string (so "the" is not compared with another "the"); see
    :func:`random_token_baseline`.

    mean: (K,) mean cosine of the sampled pairs at each layer (the anisotropy estimate).
    low, high: (K,) 10th and 90th percentile of the sampled cosines (a band for charts).
    n_pairs: how many token pairs were sampled (the same pairs at every layer).
    n_tokens: how many candidate tokens they were drawn from.
    n_sentences: how many sentences had a candidate token.
    """

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_pairs: int
    n_tokens: int
    n_sentences: int = 0

    @property
    def description(self) -> str:
        """What was sampled, in one phrase for the page text."""
        return (
            f"{self.n_pairs:,} pairs, each one word piece from each of two different sentences and never the same "
            f"word piece twice, drawn from {self.n_tokens:,} word pieces in {self.n_sentences} sentences"
        )


def other_token_masks(
    special: Sequence[np.ndarray], target_indices: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """Per sentence, a bool mask over its tokens: True for ordinary tokens that are not the target.

    special: per sentence (n_tokens_i,) bool, True for special tokens (``Encoding.special``);
    target_indices: per sentence the token positions of the target's word pieces (``()`` for none).
    """
    masks = []
    for sp, tgt in zip(special, target_indices, strict=True):
        m = ~np.asarray(sp, dtype=bool)
        m[list(tgt)] = False
        masks.append(m)
    return masks


def _candidates(hidden_states: Sequence[np.ndarray], masks: Sequence[np.ndarray] | None) -> np.ndarray:
    """(T, 2) int array of (sentence, token) positions that may be drawn."""
    out = []
    for i, hs in enumerate(hidden_states):
        shape = np.shape(hs)
        if len(shape) != 3:
            raise ValueError(f"hidden states of sentence {i} must be (layers, tokens, hidden), got {shape}")
        ok = np.ones(shape[1], bool) if masks is None else np.asarray(masks[i], dtype=bool)
        pos = np.flatnonzero(ok)
        out.append(np.stack([np.full(len(pos), i), pos], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=int)


def sample_cross_sentence_pairs(
    cand: np.ndarray,
    n_pairs: int,
    seed: int = 0,
    tokens: Sequence[Sequence[str]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Ethayarajh (2019)'s random-word pairs: one word from each of two different random sentences.

    cand: (T, 2) (sentence, token) positions that may be drawn. A pair picks two different sentences
    uniformly among those with a candidate, then one candidate uniformly within each. With ``tokens``
    (per sentence the token strings), pairs of the same word piece string are drawn again, so repeated
    word types are not compared with themselves. Returns (a, b): (P,) indices into ``cand``, P <= n_pairs
    (P < n_pairs only when too few different-type pairs exist); empty when fewer than two sentences have
    a candidate.
    """
    cand = np.asarray(cand, dtype=int).reshape(-1, 2)
    sents, counts = np.unique(cand[:, 0], return_counts=True)
    order = np.argsort(cand[:, 0], kind="stable")  # candidates grouped by sentence
    starts = np.searchsorted(cand[order, 0], sents)
    s = len(sents)
    if s < 2 or n_pairs <= 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    rng = np.random.default_rng(seed)
    kept_a: list[np.ndarray] = []
    kept_b: list[np.ndarray] = []
    have = 0
    for _ in range(8):  # rejection rounds for same-type pairs; a handful always suffice in real text
        m = 2 * (n_pairs - have) + 16
        sa = rng.integers(0, s, size=m)
        sb = rng.integers(0, s - 1, size=m)
        sb = np.where(sb >= sa, sb + 1, sb)  # a different sentence, uniform over the others
        a = order[starts[sa] + (rng.random(m) * counts[sa]).astype(int)]
        b = order[starts[sb] + (rng.random(m) * counts[sb]).astype(int)]
        if tokens is not None:
            ta = np.array([tokens[i][k] for i, k in cand[a]], dtype=object)
            tb = np.array([tokens[i][k] for i, k in cand[b]], dtype=object)
            ok = ta != tb
            a, b = a[ok], b[ok]
        take = min(len(a), n_pairs - have)
        kept_a.append(a[:take])
        kept_b.append(b[:take])
        have += take
        if have >= n_pairs:
            break
    return np.concatenate(kept_a), np.concatenate(kept_b)


def random_token_baseline(
    hidden_states: Sequence[np.ndarray],
    masks: Sequence[np.ndarray] | None = None,
    n_pairs: int = 2000,
    seed: int = 0,
    pooled: bool = False,
    tokens: Sequence[Sequence[str]] | None = None,
) -> TokenBaseline | None:
    """Mean cosine of random word pairs from different sentences, at each layer (Ethayarajh 2019).

    hidden_states: per sentence (K, n_tokens_i, H); masks: per sentence (n_tokens_i,) bool of the
    tokens that may be drawn (see :func:`other_token_masks`), or None for all tokens; tokens: per
    sentence the token strings, to skip pairs of the same word piece (see
    :func:`sample_cross_sentence_pairs`, the one definition of the pairs for the whole app).
    The pairs are drawn once (seeded, reproducible) and reused at every layer, so the curve moves
    only because the vectors change. Only the drawn tokens are read (memory stays small).
    With ``pooled=True`` the result has K + 2 entries: the layers, then the mean of the last four
    layers and the mean of all layers (see :func:`with_pooled`).
    Returns None unless two sentences have a usable token (and a pair of different word pieces exists).
    """
    cand = _candidates(hidden_states, masks)
    a, b = sample_cross_sentence_pairs(cand, n_pairs, seed, tokens)
    if len(a) == 0:
        return None

    def gather(idx: np.ndarray) -> np.ndarray:  # (P, K, H)
        out = np.stack([np.asarray(hidden_states[s])[:, k, :] for s, k in cand[idx]]).astype(np.float64)
        return with_pooled(out) if pooled else out

    cos = np.clip(np.einsum("pkh,pkh->pk", unit_rows(gather(a)), unit_rows(gather(b))), -1.0, 1.0)
    return TokenBaseline(
        mean=cos.mean(axis=0),
        low=np.percentile(cos, 10, axis=0),
        high=np.percentile(cos, 90, axis=0),
        n_pairs=int(len(a)),
        n_tokens=int(len(cand)),
        n_sentences=int(len(np.unique(cand[:, 0]))),
    )


def adjusted(values: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """Similarity minus the per-layer baseline (Ethayarajh's anisotropy adjustment).

    values: (..., K); baseline: (K,) -> (..., K).
    """
    return np.asarray(values, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Ethayarajh (2019): self-similarity and intra-sentence similarity
# --------------------------------------------------------------------------------------------


def self_similarity(vectors: np.ndarray) -> np.ndarray:
    """Self-similarity per layer (Ethayarajh 2019, eq. 1).

    The mean cosine between the same word's vectors in different contexts, over all pairs j != k:
    ``SelfSim_l(w) = 1/(n^2 - n) * sum_j sum_{k != j} cos(f_l(s_j, i_j), f_l(s_k, i_k))``.
    vectors: (n, K, H) with n >= 2 -> (K,).
    """
    v = _check_vectors(vectors)
    n = v.shape[0]
    if n < 2:
        raise ValueError("self-similarity needs the word in at least two sentences")
    u = unit_rows(v)  # (n, K, H)
    total = u.sum(axis=0)  # (K, H)
    # sum over ordered pairs j != k of u_j.u_k = |sum u|^2 - sum |u_j|^2
    pair_sum = np.einsum("kh,kh->k", total, total) - np.einsum("nkh,nkh->k", u, u)
    return np.clip(pair_sum / (n * n - n), -1.0, 1.0)


def intra_sentence_similarity(
    hidden_states: Sequence[np.ndarray], masks: Sequence[np.ndarray] | None = None, pooled: bool = False
) -> np.ndarray:
    """Intra-sentence similarity per layer (Ethayarajh 2019, eq. 2), averaged over sentences.

    For a sentence with word vectors ``f_l(s, 1..n)`` and mean ``s_l = 1/n sum_i f_l(s, i)``:
    ``IntraSim_l(s) = 1/n sum_i cos(s_l, f_l(s, i))``. The result is the mean over sentences.
    hidden_states: per sentence (K, n_tokens_i, H); masks: per sentence (n_tokens_i,) bool of the
    tokens to use (e.g. no [CLS]/[SEP]), or None for all. Sentences with no selected token are skipped.
    Returns (K,), or (K + 2,) with ``pooled=True`` (see :func:`with_pooled`); zeros if no sentence has a
    token.
    """
    per_sentence = []
    k = None
    for i, hs in enumerate(hidden_states):
        hs = np.asarray(hs, dtype=np.float64)
        sel = hs if masks is None else hs[:, np.asarray(masks[i], dtype=bool), :]
        if pooled:
            sel = with_pooled(sel, axis=0)
        k = sel.shape[0]
        if sel.shape[1] == 0:
            continue
        centre = unit_rows(sel.mean(axis=1))  # (K, H)
        cos = np.einsum("kth,kh->kt", unit_rows(sel), centre)  # (K, T)
        per_sentence.append(cos.mean(axis=1))
    if not per_sentence:
        return np.zeros(k or 0)
    return np.clip(np.mean(per_sentence, axis=0), -1.0, 1.0)


# --------------------------------------------------------------------------------------------
# Sense readout: nearest centroid
# --------------------------------------------------------------------------------------------


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
    x = _check_vectors(vectors).astype(np.float64)
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
    v = _check_vectors(vectors).astype(np.float64)
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
    tr = _check_vectors(train).astype(np.float64)
    te = _check_vectors(test).astype(np.float64)
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


# --------------------------------------------------------------------------------------------
# Readouts against chance, and a scale-free separation measure
# --------------------------------------------------------------------------------------------

CHANCE_PERMUTATIONS = 200  # label shuffles for the chance band (fixed seed, so every run shows the same band)
CHANCE_BUDGET = 2.5e8  # multiply-adds for the shuffles: 12 sentences get 200, 500 sentences about 20 (never fewer)


@dataclass(frozen=True)
class ReadoutChance:
    """A leave-one-out nearest-centroid readout per layer, read against chance.

    accuracy:      (K,) the readout with the real labels (the same numbers as :func:`leave_one_out_readout`).
    majority:      accuracy of always answering the most common sense.
    shuffled_mean: (K,) mean accuracy of the same readout over label permutations (same sense sizes).
    shuffled_p95:  (K,) 95th percentile of those accuracies: the top of the chance band.
    n_permutations, n_evaluated: how many shuffles, how many sentences were scored.
    With no signal a left-out sentence's own centroid moves away from it, so the shuffled readout can
    sit *below* the majority rate (two equal senses: near 0 %), which is why both are reported.
    """

    accuracy: np.ndarray
    majority: float
    shuffled_mean: np.ndarray
    shuffled_p95: np.ndarray
    n_permutations: int
    n_evaluated: int

    @property
    def within_chance(self) -> np.ndarray:
        """(K,) bool: the real readout is no better than the 95th percentile of shuffled labels."""
        return self.accuracy <= self.shuffled_p95 + 1e-12

    def chance_layers(self, k: int | None = None) -> list[int]:
        """Indices (of the first ``k`` entries, default all) where the readout is within the chance band."""
        w = self.within_chance if k is None else self.within_chance[:k]
        return [int(i) for i in np.flatnonzero(w)]


def _loo_accuracy_from_gram(gram: np.ndarray, onehot: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Leave-one-out nearest-centroid accuracy for many labellings at once, from the Gram matrices.

    gram: (K, m, m) dot products of the (raw) vectors; onehot: (P, m, S) labellings (sense sizes >= 2);
    labels: (P, m) the same as integers. Returns (P, K). The cosine of x_i with a centroid is that with
    the sense's *sum* (scale does not change a cosine): x_i.sum_s = (G Y)[i, s] and
    |sum_s|^2 = (Yᵀ G Y)[s, s]; the own sense drops x_i: x_i.(sum - x_i) = (G Y)[i, s] - G[i, i] and
    |sum - x_i|^2 = |sum|^2 - 2 (G Y)[i, s] + G[i, i].
    """
    p, m, n_s = onehot.shape
    k = gram.shape[0]
    y = np.transpose(onehot, (1, 0, 2)).reshape(m, p * n_s)  # (m, P*S)
    gy = (gram @ y).reshape(k, m, p, n_s)  # (K, m, P, S)
    sq = np.einsum("kmps,mps->kps", gy, np.transpose(onehot, (1, 0, 2)))  # (K, P, S) |sum_s|^2
    diag = np.einsum("kmm->km", gram)  # (K, m) |x_i|^2
    own = np.transpose(onehot, (1, 0, 2)).astype(bool)  # (m, P, S)
    dots = np.where(own[None], gy - diag[:, :, None, None], gy)
    norms2 = np.where(own[None], sq[:, None] - 2 * gy + diag[:, :, None, None], sq[:, None])
    xnorm = np.sqrt(np.maximum(diag, 0.0))[:, :, None, None]
    denom = np.sqrt(np.maximum(norms2, 0.0)) * xnorm
    cos = np.where(denom > _EPS, dots / np.where(denom > _EPS, denom, 1.0), 0.0)  # (K, m, P, S)
    pred = np.argmax(cos, axis=3)  # (K, m, P)
    return (pred == labels.T[None]).mean(axis=1).T  # (P, K)


def readout_chance(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    n_permutations: int = CHANCE_PERMUTATIONS,
    seed: int = 0,
) -> ReadoutChance | None:
    """The leave-one-out nearest-centroid readout per layer next to two chance levels.

    Chance is (1) the majority-sense rate and (2) the same readout on shuffled labels: the labels of the
    scored sentences are permuted ``n_permutations`` times (seeded), keeping each sense's size, and the
    mean and 95th percentile accuracy per layer are kept. A readout at or below that 95th percentile is
    within chance: the labels could have been random. Large sets get fewer shuffles (``CHANCE_BUDGET``).
    vectors: (n, K, H); senses: n labels (None/"" ignored). Same sentences and senses as
    :func:`leave_one_out_readout`; None when it is None.
    """
    v = _check_vectors(vectors).astype(np.float64)
    ro = leave_one_out_readout(v, senses)
    if ro is None:
        return None
    idx = ro.evaluated
    names = list(ro.senses)
    labels = np.array([names.index(senses[i]) for i in idx])
    x = v[idx]  # (m, K, H)
    m, k = x.shape[0], x.shape[1]
    xk = np.ascontiguousarray(np.transpose(x, (1, 0, 2)))  # (K, m, H)
    gram = xk @ np.transpose(xk, (0, 2, 1))  # (K, m, m), batched BLAS
    cost = k * m * m * len(names)  # multiply-adds per shuffle
    n_perm = int(max(20, min(n_permutations, CHANCE_BUDGET // max(cost, 1))))
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(labels) for _ in range(n_perm)])  # (P, m)
    eye = np.eye(len(names), dtype=np.float64)
    acc = np.concatenate(
        [
            _loo_accuracy_from_gram(gram, eye[chunk], chunk)
            for chunk in np.array_split(perms, max(1, int(np.ceil(n_perm * m * len(names) * k / 2e6))))
        ]
    )  # (P, K), in chunks so memory stays bounded for large sets
    return ReadoutChance(
        accuracy=np.asarray(ro.accuracy, dtype=np.float64),
        majority=float(ro.majority_baseline),
        shuffled_mean=acc.mean(axis=0),
        shuffled_p95=np.percentile(acc, 95, axis=0),
        n_permutations=n_perm,
        n_evaluated=m,
    )


def chance_phrase(rc: ReadoutChance, i: int) -> str:
    """The readout at index ``i`` against chance, as a phrase: '67 % (shuffled labels: mean 48 %, 95th
    percentile 75 %; always the commonest sense: 42 %), within chance'."""
    verdict = "within chance" if rc.within_chance[i] else "above chance"
    return (
        f"{rc.accuracy[i]:.0%} (shuffled labels: mean {rc.shuffled_mean[i]:.0%}, 95th percentile "
        f"{rc.shuffled_p95[i]:.0%}; always the commonest sense: {rc.majority:.0%}), {verdict}"
    )


def layer_list(indices: Sequence[int]) -> str:
    """'layer 0', 'layers 0 and 3', 'layers 0, 2 and 5'."""
    idx = [str(int(i)) for i in indices]
    if len(idx) == 1:
        return f"layer {idx[0]}"
    return f"layers {', '.join(idx[:-1])} and {idx[-1]}"


def position_note(rc: ReadoutChance) -> str:
    """What the readout at the embedding layer (index 0) says, in words.

    Layer 0 is LayerNorm(word piece + position + segment embedding): no context, so a readout above
    chance there can only come from the word's position (or its form) going with its sense.
    """
    a0 = rc.accuracy[0]
    if not rc.within_chance[0]:
        return (
            f"At the embedding layer the readout is already above chance ({a0:.0%}), although that vector "
            "holds no context: only the word's position in the sentence (and which form of the word it is) "
            "differs there, so in this set position happens to go with sense. Small hand-written sets leak "
            "sense this way easily; compare the other layers with layer 0, not only with chance."
        )
    text = (
        f"At the embedding layer the readout ({a0:.0%}) is within chance, as it should be: that vector holds "
        "no context, only the word and its position. (In a small hand-written set, position alone can go "
        "with sense and lift layer 0 above chance; then compare the other layers with layer 0.)"
    )
    if a0 < rc.majority:
        text += (
            " It is below always answering the commonest sense: with no signal, leaving a sentence out moves "
            "its own sense's average away from it, so it tends to be given another sense."
        )
    return text


def pair_ranking_auc(cosines: np.ndarray, senses: Sequence[str | None]) -> np.ndarray | None:
    """Per layer, the chance that a same-sense pair has a higher cosine than a different-sense pair.

    cosines: (K, n, n) (or one (n, n) matrix); senses: n labels (unlabelled sentences take part in no
    pair). Over every (same-sense pair, different-sense pair) combination, ties counting half: 1.0 means
    every same-sense pair beats every different-sense pair, 0.5 is chance. It depends only on the order
    of the cosines, so any rescaling or shift of the cosines leaves it unchanged (the gap does not).
    Returns (K,), or None without both kinds of pairs.
    """
    cos = np.asarray(cosines, dtype=np.float64)
    if cos.ndim == 2:
        cos = cos[None]
    pairs, same, labelled = _pair_kinds(senses)
    diff = labelled & ~same
    if not same.any() or not diff.any():
        return None
    vals = cos[:, pairs[:, 0], pairs[:, 1]]  # (K, P)
    a, b = vals[:, same], vals[:, diff]
    both = np.concatenate([a, b], axis=1)
    # ranks with ties averaged (Mann-Whitney U), one layer at a time
    out = np.empty(len(both))
    na, nb = a.shape[1], b.shape[1]
    for r, row in enumerate(both):
        order = np.argsort(row, kind="mergesort")
        sorted_row = row[order]
        ranks = np.empty(len(row))
        _, first, counts = np.unique(sorted_row, return_index=True, return_counts=True)
        avg = first + (counts + 1) / 2.0  # 1-based average rank of each tie group
        ranks[order] = np.repeat(avg, counts)
        u = ranks[:na].sum() - na * (na + 1) / 2.0
        out[r] = u / (na * nb)
    return out


# --------------------------------------------------------------------------------------------
# Nearest neighbours
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbours:
    """The sentences most similar to one sentence.

    query: index of the sentence asked about.
    indices: (k,) the other sentences, most similar first (ties: lower index first).
    cosines: (k,) their cosine with the query.
    """

    query: int
    indices: np.ndarray
    cosines: np.ndarray


def nearest_neighbours(vectors: np.ndarray, query: int, k: int = 5) -> Neighbours:
    """The ``k`` nearest other sentences to ``query`` by cosine. vectors: (n, H)."""
    v = np.asarray(vectors)
    n = v.shape[0]
    if not 0 <= query < n:
        raise ValueError(f"query must be between 0 and {n - 1}")
    sims = cosine_matrix(v[query : query + 1], v)[0]
    others = np.array([i for i in range(n) if i != query], dtype=int)
    order = others[np.lexsort((others, -sims[others]))][:k]
    return Neighbours(query, order, sims[order])


# --------------------------------------------------------------------------------------------
# Everything at once
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerProfile:
    """Every per-layer statistic of one word across ``n`` sentences, computed once per sentence set.

    The representation axis has R = L + 3 entries: layers 0..L (0 = embedding output), then the mean
    of the last four layers (index L + 1) and the mean of all layers (index L + 2); use
    :func:`representation_index` to find a pooling choice.

    vectors:         (n, R, H) the target's vector in each sentence
    cosines:         (R, n, n) cosine matrices
    static_cosines:  (n, n) cosines of the model's input word-piece embeddings (no position, no context)
    senses:          same- vs different-sense means over R
    static_senses:   same- vs different-sense means of the static cosines (one entry)
    baseline:        random other-token pairs over R, or None when the sentences have too few tokens
    self_similarity: (R,) Ethayarajh's self-similarity, or None when n < 2
    intra_sentence:  (R,) Ethayarajh's intra-sentence similarity
    readout:         leave-one-out nearest-centroid accuracy over R, or None without two labelled senses
    num_layers:      L
    """

    vectors: np.ndarray
    cosines: np.ndarray
    static_cosines: np.ndarray
    senses: SenseSimilarity
    static_senses: SenseSimilarity
    baseline: TokenBaseline | None
    self_similarity: np.ndarray | None
    intra_sentence: np.ndarray
    readout: SenseReadout | None
    num_layers: int

    @property
    def num_hidden_states(self) -> int:
        """K = L + 1, the number of hidden states (without the pooled extras)."""
        return self.num_layers + 1

    def index(self, pooling: Pooling | Representation, layer: int | None = None) -> int:
        """Index of a representation on the R axis; pass a :class:`Representation` or (pooling, layer)."""
        if isinstance(pooling, Representation):
            return pooling.index(self.num_hidden_states)
        return representation_index(self.num_hidden_states, pooling, layer)

    @property
    def pair_means(self) -> np.ndarray:
        """(R,) mean cosine over all pairs of sentences at each representation."""
        return mean_pair_cosines(self.cosines)

    @property
    def baseline_mean(self) -> np.ndarray:
        """(R,) mean cosine of random other-token pairs, zeros when there is no baseline."""
        return self.baseline.mean if self.baseline is not None else np.zeros(self.cosines.shape[0])

    def colour_range(self, *, adjusted: bool) -> tuple[float, float]:
        """One colour scale for every representation, so layers compare by colour.

        Raw cosine: from just below the lowest pair (rounded down to 0.1) to 1. Minus the baseline:
        symmetric around 0, as wide as the largest difference (at least ±0.05).
        """
        values = pair_values(self.cosines)  # (R, P)
        if adjusted:
            spread = max(0.05, float(np.abs(values - self.baseline_mean[:, None]).max()))
            return (-spread, spread)
        return (float(np.floor(values.min() * 10) / 10), 1.0)

    def static_vs_contextual(self, indices: Sequence[int | None], *, by_sense: bool = True) -> dict[str, list[float]]:
        """Mean cosine per kind of pair for the static embedding (index None) and the given representations.

        Keys: "all pairs", and "same sense" / "different sense" when ``by_sense`` and the set has both
        kinds of pair. Each value has one entry per index, in order.
        """
        both = by_sense and self.senses.same is not None and self.senses.different is not None
        table: dict[str, list[float]] = {"all pairs": []}
        if both:
            table.update({"same sense": [], "different sense": []})
        static_mean = mean_offdiagonal(self.static_cosines)
        for idx in indices:
            if idx is None:
                table["all pairs"].append(static_mean)
                if both:
                    table["same sense"].append(float(self.static_senses.same[0]))
                    table["different sense"].append(float(self.static_senses.different[0]))
            else:
                table["all pairs"].append(float(self.pair_means[idx]))
                if both:
                    table["same sense"].append(float(self.senses.same[idx]))
                    table["different sense"].append(float(self.senses.different[idx]))
        return table


def layer_profile(
    vectors: np.ndarray,
    static: np.ndarray,
    senses: Sequence[str | None],
    hidden_states: Sequence[np.ndarray],
    other_masks: Sequence[np.ndarray] | None = None,
    word_masks: Sequence[np.ndarray] | None = None,
    n_pairs: int = 2000,
    seed: int = 0,
    tokens: Sequence[Sequence[str]] | None = None,
) -> LayerProfile:
    """Compute a :class:`LayerProfile`.

    vectors: (n, L+1, H) target vectors; static: (n, H) input word-piece embeddings of the target;
    senses: n labels or None; hidden_states: per sentence (L+1, n_tokens_i, H);
    other_masks: per sentence, tokens for the random baseline (not special, not the target);
    word_masks: per sentence, tokens for intra-sentence similarity (not special);
    tokens: per sentence the token strings, so the baseline never pairs a word piece with itself.
    """
    v = _check_vectors(vectors)
    n, k = v.shape[0], v.shape[1]
    aug = with_pooled(v)
    cos = layer_cosine_matrices(aug)
    static_cos = cosine_matrix(static)
    return LayerProfile(
        vectors=aug,
        cosines=cos,
        static_cosines=static_cos,
        senses=sense_similarity(cos, senses),
        static_senses=sense_similarity(static_cos[None], senses),
        baseline=random_token_baseline(
            hidden_states, other_masks, n_pairs=n_pairs, seed=seed, pooled=True, tokens=tokens
        ),
        self_similarity=self_similarity(aug) if n >= 2 else None,
        intra_sentence=intra_sentence_similarity(hidden_states, word_masks, pooled=True),
        readout=leave_one_out_readout(aug, senses),
        num_layers=k - 1,
    )


# --------------------------------------------------------------------------------------------
# Evidence card
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceRow:
    """One sentence pair on the evidence card."""

    i: int
    j: int
    sentence_a: str
    sentence_b: str
    sense_a: str
    sense_b: str
    same_sense: bool | None
    cosine_first: float
    cosine_chosen: float

    @property
    def change(self) -> float:
        return self.cosine_chosen - self.cosine_first


@dataclass(frozen=True)
class EvidenceCard:
    """A small comparison table of sentence pairs (course lesson: "evidence to keep").

    rows: the pairs shown; surprising: index into ``rows`` of the most surprising pair;
    reason: one sentence saying why it is surprising; first_name / chosen_name: the two
    representations compared (e.g. "embedding layer (0)" and "layer 4"); notes: further lines for the
    Markdown card (e.g. the sense readout against chance), added with ``dataclasses.replace``.
    """

    target: str
    first_name: str
    chosen_name: str
    rows: tuple[EvidenceRow, ...]
    surprising: int | None
    reason: str
    notes: tuple[str, ...] = ()

    _HEADER = ("sentence A", "sentence B", "sense A", "sense B", "same sense")

    def _records(self) -> list[list[str]]:
        out = []
        for k, r in enumerate(self.rows):
            same = "" if r.same_sense is None else ("yes" if r.same_sense else "no")
            out.append(
                [
                    r.sentence_a,
                    r.sentence_b,
                    r.sense_a,
                    r.sense_b,
                    same,
                    f"{r.cosine_first:.3f}",
                    f"{r.cosine_chosen:.3f}",
                    "yes" if k == self.surprising else "",
                ]
            )
        return out

    def header(self) -> list[str]:
        return [*self._HEADER, f"cosine {self.first_name}", f"cosine {self.chosen_name}", "most surprising"]

    def to_csv(self) -> str:
        """The card as CSV text (header row first), safe to open in a spreadsheet (lib.export)."""
        from lib.export import csv_text

        return csv_text(self._records(), header=self.header())

    def to_markdown(self) -> str:
        """The card as a Markdown table with a title and the reason for the surprising pair.

        Every text is escaped (lib.export.escape_markdown): a sentence's raw HTML or ``javascript:`` link
        shows as typed in any Markdown viewer."""
        from lib.export import escape_markdown

        def cell(s: str) -> str:
            return escape_markdown(s, newline=" ")

        lines = [f"### Evidence card: '{cell(self.target)}'", ""]
        lines.append("| " + " | ".join(cell(h) for h in self.header()) + " |")
        lines.append("|" + "---|" * len(self.header()))
        for rec in self._records():
            lines.append("| " + " | ".join(cell(c) for c in rec) + " |")
        if self.reason:
            lines += ["", f"Most surprising: {cell(self.reason)}"]
        for note in self.notes:
            lines += ["", cell(note)]
        return "\n".join(lines) + "\n"


def _largest_first(values: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` largest values, largest first, the lower index first on a tie: the first ``k`` of
    a stable sort by descending value, without sorting all of them (a set of 500 sentences has 124,750 pairs).
    """
    values = np.asarray(values)
    if k >= len(values):
        top = np.arange(len(values))
    else:
        kth = np.partition(values, len(values) - k)[len(values) - k]  # the k-th largest value
        top = np.flatnonzero(values >= kth)  # every tie of it too, so the tie-break below stays exact
    order = np.lexsort((top, -values[top]))
    return [int(i) for i in top[order][:k]]


def evidence_card(
    first: np.ndarray,
    chosen: np.ndarray,
    sentences: Sequence[str],
    senses: Sequence[str | None],
    target: str = "",
    first_name: str = "embedding layer (0)",
    chosen_name: str = "chosen layer",
    max_rows: int = 8,
    cosines: tuple[np.ndarray, np.ndarray] | None = None,
) -> EvidenceCard:
    """Pick a few telling sentence pairs and compare their cosine in two representations.

    first, chosen: (n, H) the target's vectors in the two representations (e.g. layer 0 and the
    chosen layer or pooling); ``cosines`` may pass their two (n, n) cosine matrices when they are
    already computed. With at most ``max_rows`` pairs in total, all pairs are shown.
    Otherwise, when labels exist: the most similar different-sense pair, the least similar
    same-sense pair, the most similar same-sense pair and the least similar different-sense pair,
    then the pairs whose cosine changed most, up to ``max_rows``.

    The most surprising pair: with both kinds of pairs, the different-sense pair with the highest
    cosine in ``chosen``; otherwise the pair whose cosine changed most between the two.
    """
    n = len(sentences)
    if np.asarray(first).shape[0] != n or np.asarray(chosen).shape[0] != n or len(senses) != n:
        raise ValueError("first, chosen, sentences and senses must have the same length")
    c0, c1 = cosines if cosines is not None else (cosine_matrix(first), cosine_matrix(chosen))
    pairs, same, labelled = _pair_kinds(senses)
    if len(pairs) == 0:
        return EvidenceCard(target, first_name, chosen_name, (), None, "")
    v0 = c0[pairs[:, 0], pairs[:, 1]]
    v1 = c1[pairs[:, 0], pairs[:, 1]]
    diff = labelled & ~same
    change = np.abs(v1 - v0)

    def argbest(mask: np.ndarray, values: np.ndarray, highest: bool) -> int | None:
        """The pair with the highest (lowest) value among ``mask``, the first pair on a tie."""
        if not mask.any():
            return None
        cand = np.flatnonzero(mask)  # ascending, and argmax/argmin return the first of equal values
        return int(cand[np.argmax(values[cand]) if highest else np.argmin(values[cand])])

    surprise = (
        argbest(diff, v1, True)
        if (diff.any() and same.any())
        else argbest(np.ones(len(pairs), bool), change, True)
    )
    if len(pairs) <= max_rows:
        chosen_pairs = list(range(len(pairs)))
    else:
        picks = [
            surprise,
            argbest(same, v1, False),
            argbest(same, v1, True),
            argbest(diff, v1, False),
        ]
        by_change = _largest_first(change, max_rows + len(picks))
        chosen_pairs = []
        for p in [*picks, *by_change]:
            if p is not None and p not in chosen_pairs:
                chosen_pairs.append(p)
            if len(chosen_pairs) >= max_rows:
                break

    rows = []
    for p in chosen_pairs:
        i, j = (int(x) for x in pairs[p])
        rows.append(
            EvidenceRow(
                i=i,
                j=j,
                sentence_a=sentences[i],
                sentence_b=sentences[j],
                sense_a=senses[i] or "",
                sense_b=senses[j] or "",
                same_sense=bool(same[p]) if labelled[p] else None,
                cosine_first=float(v0[p]),
                cosine_chosen=float(v1[p]),
            )
        )
    surprising = chosen_pairs.index(surprise)
    r = rows[surprising]
    if diff.any() and same.any():
        below = int((v1[same] < r.cosine_chosen).sum())
        reason = (
            f"sentences {r.i + 1} and {r.j + 1} use different senses ({r.sense_a} / {r.sense_b}) yet have "
            f"cosine {r.cosine_chosen:.2f} at {chosen_name}, higher than {below} of {int(same.sum())} "
            f"same-sense pairs."
        )
    else:
        verb = "rose" if r.change >= 0 else "fell"
        reason = (
            f"the cosine of sentences {r.i + 1} and {r.j + 1} {verb} the most, from {r.cosine_first:.2f} at "
            f"{first_name} to {r.cosine_chosen:.2f} at {chosen_name}."
        )
    return EvidenceCard(target, first_name, chosen_name, tuple(rows), surprising, reason)
