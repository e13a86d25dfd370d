"""What a raw cosine is measured against: random pairs of other words (anisotropy), and published curves.

* ``hidden_states``: a sequence of ``(K, n_tokens_i, H)`` arrays, one per sentence.

A random other-token baseline per layer (Ethayarajh 2019: one word piece from each of two different
sentences), baseline-adjusted similarity, and Ethayarajh's published BERT-base numbers to compare a
model's anisotropy with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.stats.pooling import with_pooled
from lib.stats.similarity import unit_rows

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


PAIR_BLOCK = 32  # pairs gathered at once (32 x 33 x 576 float64: ~5 MB)


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

    # a block of pairs at a time: 2,000 pairs of a 31-layer, 576-wide model in float64 at once held ~1.1 GB
    cos = np.concatenate([
        np.einsum("pkh,pkh->pk", unit_rows(gather(a[i : i + PAIR_BLOCK])), unit_rows(gather(b[i : i + PAIR_BLOCK])))
        for i in range(0, len(a), PAIR_BLOCK)
    ])  # fmt: skip
    cos = np.clip(cos, -1.0, 1.0)
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
