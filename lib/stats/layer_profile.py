"""Every per-layer statistic of one word across a sentence set, computed once: :class:`LayerProfile`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lib.stats.baseline import TokenBaseline, random_token_baseline
from lib.stats.contextuality import intra_sentence_similarity, self_similarity, target_context_similarity
from lib.stats.pooling import Pooling, Representation, representation_index, sentence_vectors, with_pooled
from lib.stats.readout import SenseReadout, leave_one_out_readout
from lib.stats.similarity import (
    SenseSimilarity,
    check_vectors,
    cosine_matrix,
    layer_cosine_matrices,
    mean_offdiagonal,
    mean_pair_cosines,
    pair_values,
    sense_similarity,
)


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
    target_context:  (R,) the target's mean cosine with the rest of its own sentence (the other ordinary word
                     pieces, lib.stats.contextuality.target_context_similarity), or None without the
                     target's positions
    cls_readout, mean_readout: the same readout over the K layers of two sentence vectors, [CLS] and the mean
                     of the ordinary word pieces (lib.stats.pooling.sentence_vectors): the course's "compare
                     mean pooling and [CLS] empirically" on this set; None without a readout or a [CLS]
    norms:           (R,) the mean length (Euclidean norm) of the target's vector over the n sentences
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
    norms: np.ndarray
    cls_readout: SenseReadout | None = None
    mean_readout: SenseReadout | None = None
    target_context: np.ndarray | None = None

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


def _readout_where_it_varies(vectors: np.ndarray, senses: Sequence[str | None]) -> SenseReadout | None:
    """leave_one_out_readout of (n, K, H) vectors, NaN at a layer where every sentence has the same vector
    (e.g. [CLS] at layer 0: its embedding at position 0, before any context), where a reading would only be
    rounding noise breaking ties. None when that is every layer: a decoder's start token sees only itself, so
    the vector at position 0 is one vector in every sentence at every layer, not a sentence vector."""
    v = np.asarray(vectors, dtype=np.float64)
    same = np.array([np.allclose(v[:, k], v[0, k], rtol=0, atol=1e-6) for k in range(v.shape[1])])
    if same.all():
        return None
    ro = leave_one_out_readout(vectors, senses)
    if ro is None:
        return None
    if not same.any():
        return ro
    acc = np.where(same, np.nan, ro.accuracy)
    best = int(np.nanargmax(acc)) if np.isfinite(acc).any() else 0
    return replace(ro, accuracy=acc, best_layer=best, best_accuracy=float(acc[best]))


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
    special: Sequence[np.ndarray] | None = None,
    target_indices: Sequence[Sequence[int]] | None = None,
) -> LayerProfile:
    """Compute a :class:`LayerProfile`.

    vectors: (n, L+1, H) target vectors; static: (n, H) input word-piece embeddings of the target;
    senses: n labels or None; hidden_states: per sentence (L+1, n_tokens_i, H);
    other_masks: per sentence, tokens for the random baseline (not special, not the target);
    word_masks: per sentence, tokens for intra-sentence similarity (not special);
    tokens: per sentence the token strings, so the baseline never pairs a word piece with itself.
    special: per sentence (n_tokens_i,) bool (``Encoding.special``): with it, the readouts of the [CLS] and
    mean-pooled sentence vectors too (when every sentence starts with a special token).
    target_indices: per sentence the target's word-piece positions: with ``word_masks``, how close the target
    sits to the rest of its sentence (``target_context``).
    """
    v = check_vectors(vectors)
    n, k = v.shape[0], v.shape[1]
    aug = with_pooled(v)
    cos = layer_cosine_matrices(aug)
    static_cos = cosine_matrix(static)
    readout = leave_one_out_readout(aug, senses)
    cls_readout = mean_readout = None
    if readout is not None and special is not None and all(len(sp) and sp[0] and not np.all(sp) for sp in special):
        cls, mean = sentence_vectors(hidden_states, special)
        cls_readout, mean_readout = _readout_where_it_varies(cls, senses), _readout_where_it_varies(mean, senses)
        del cls, mean
    target_context = None
    if target_indices is not None and word_masks is not None:
        target_context = target_context_similarity(hidden_states, target_indices, word_masks, pooled=True)
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
        readout=readout,
        num_layers=k - 1,
        norms=np.linalg.norm(aug.astype(np.float64), axis=-1).mean(axis=0),
        cls_readout=cls_readout,
        mean_readout=mean_readout,
        target_context=target_context,
    )


WORD_VECTOR, MEAN_VECTOR, CLS_VECTOR = "the word's vector", "sentence: mean of word pieces", "sentence: [CLS]"


def vector_readouts(profile: LayerProfile) -> dict[str, np.ndarray]:
    """The leave-one-out sense readout per layer, (K,) each, of every vector the profile has: the word's own
    vector, and the two sentence vectors when computed. Empty without a readout."""
    if profile.readout is None:
        return {}
    K = profile.num_hidden_states
    out = {WORD_VECTOR: np.asarray(profile.readout.accuracy[:K], dtype=np.float64)}
    for name, ro in ((MEAN_VECTOR, profile.mean_readout), (CLS_VECTOR, profile.cls_readout)):
        if ro is not None:
            out[name] = np.asarray(ro.accuracy, dtype=np.float64)
    return out


def best_layers(accuracy: np.ndarray) -> list[int]:
    """Every layer that reaches the highest accuracy (a readout counts sentences, so ties are exact); a NaN
    layer (no reading there) is never one."""
    a = np.asarray(accuracy, dtype=np.float64)
    return [int(i) for i in np.flatnonzero(a >= np.nanmax(a) - 1e-12)]


def depth_and_pooling_phrase(readouts: dict[str, np.ndarray], n: int | None = None) -> str:
    """Two of the course's checks on a set, from :func:`vector_readouts`: is the last layer the best one to
    read the sense from (the misconception "deeper is always better"), and does [CLS] or the mean of the word
    pieces make the better sentence vector ("compare mean pooling and [CLS] empirically").

    ``n``: the sentences the readout scored; a last layer that reads a single sentence fewer than the best is
    said as that (one sentence is no evidence that deeper is worse)."""
    from lib.stats.chance import layer_runs

    word = readouts.get(WORD_VECTOR)
    if word is None:
        return ""
    last = len(word) - 1
    best = best_layers(word)
    if last in best:
        text = (
            f"Here the last layer reads the word's sense as well as any ({word[last]:.0%}); that is this set's "
            "result, not a rule: the best layer depends on the task."
        )
    elif n and round((float(np.nanmax(word)) - float(word[last])) * n) <= 1:
        text = (
            f"The word's vector reads the sense best at {layer_runs(best)} ({np.nanmax(word):.0%}), the last layer "
            f"{word[last]:.0%}: one sentence of {n} fewer, too small a difference to say that deeper is worse here."
        )
    else:
        text = (
            f"Deeper is not always better: the word's vector reads the sense best at {layer_runs(best)} "
            f"({word.max():.0%}), the last layer {word[last]:.0%}"
            + (f", {round((float(np.nanmax(word)) - float(word[last])) * n)} sentences of {n} fewer." if n else ".")
        )
    if MEAN_VECTOR in readouts and CLS_VECTOR in readouts:
        m, c = float(np.nanmax(readouts[MEAN_VECTOR])), float(np.nanmax(readouts[CLS_VECTOR]))
        verdict = "the mean wins" if m > c else "[CLS] wins" if c > m else "they tie"
        text += (
            f" As sentence vectors, the mean of the word pieces reads {m:.0%} at its best layer, [CLS] {c:.0%}: "
            f"here {verdict}."
        )
    return text
