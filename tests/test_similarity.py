"""Hand-computed tiny cases for lib/stats/similarity.py and the modules built on it (pooling, baseline, contextuality,
readout, evidence, layer_profile); no model needed."""

import csv
import io
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.stats.baseline import (
    ETHAYARAJH_2019_BERT_BASE,
    adjusted,
    compare_anisotropy,
    other_token_masks,
    random_token_baseline,
    sample_cross_sentence_pairs,
)
from lib.stats.contextuality import intra_sentence_similarity, self_similarity
from lib.stats.evidence import CHECKS, SURPRISE_TIE, CardFacts, _largest_first, evidence_card
from lib.stats.layer_profile import layer_profile
from lib.stats.pooling import (
    Representation,
    pool,
    pooled_layers,
    pooling_label,
    representation_index,
    sentence_vectors,
    with_pooled,
)
from lib.stats.readout import centroid_readout, leave_one_out_centroid_cosines, leave_one_out_readout
from lib.stats.similarity import (
    cosine_matrix,
    hardest_case,
    layer_cosine_matrices,
    mean_offdiagonal,
    mean_pair_cosines,
    most_changed_pairs,
    nearest_neighbours,
    pair_trajectories,
    pair_values,
    sense_similarity,
)

R2 = 1 / math.sqrt(2)


def one_layer(*rows):
    """(n, 1, H) from n row vectors."""
    return np.array(rows, dtype=float)[:, None, :]


# ---------------------------------------------------------------- cosine


def test_cosine_matrix_by_hand_and_zero_vector_is_safe():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    c = cosine_matrix(a)
    expected = np.array([[1, R2, 0], [R2, 1, 0], [0, 0, 0]])
    np.testing.assert_allclose(c, expected, atol=1e-12)
    assert np.isfinite(c).all()


def test_cosine_matrix_two_sets_and_range():
    a = np.array([[3.0, 4.0]])
    b = np.array([[4.0, 3.0], [-3.0, -4.0], [1e-20, 0.0]])
    c = cosine_matrix(a, b)
    np.testing.assert_allclose(c, [[24 / 25, -1.0, 0.0]], atol=1e-12)
    assert c.max() <= 1 and c.min() >= -1


def test_cosine_matrix_is_exactly_symmetric_and_in_range_on_awkward_rows():
    # one definition for the whole app (lib.stats.geometry has none of its own): symmetric to the last bit,
    # even where BLAS rounds c[i, j] and c[j, i] differently, and clipped into [-1, 1]
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 384)) * np.logspace(-3, 3, 384)
    a[5] = 0.0
    a[7] = a[6] * 1e6  # parallel rows of very different length
    c = cosine_matrix(a)
    assert np.array_equal(c, c.T)
    assert c.min() >= -1.0 and c.max() <= 1.0
    assert c[6, 7] == pytest.approx(1.0, abs=1e-12) and (c[5] == 0).all()
    np.testing.assert_allclose(np.diag(c)[np.arange(40) != 5], 1.0, atol=1e-12)
    # the two-argument form gives the same numbers (up to rounding) for the same rows
    np.testing.assert_allclose(cosine_matrix(a, a), c, atol=1e-12)


def test_cosine_matrix_refuses_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        cosine_matrix(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        cosine_matrix([[1.0, np.nan]])
    with pytest.raises(ValueError, match="dimensions"):
        cosine_matrix(np.ones((2, 3)), np.ones((2, 4)))


def test_representation_names_a_pooled_choice_explicitly():
    k = 7  # L = 6
    one = Representation("layer", 4)
    assert not one.is_pooled and one.index(k) == 4 and one.layers(k) == (4,) and one.label == "layer 4"
    last4 = Representation("last4", layer=3)  # a pooled choice drops the slider's layer
    assert last4.is_pooled and last4.layer is None and last4.index(k) == k and last4.layers(k) == (3, 4, 5, 6)
    every = Representation("all")
    assert every.index(k) == k + 1 and every.layers(k) == tuple(range(k))
    # its index points at the same vectors as with_pooled's pooled entries
    v = np.random.default_rng(0).normal(size=(3, k, 5))
    aug = with_pooled(v)
    np.testing.assert_allclose(aug[:, last4.index(k)], v[:, list(last4.layers(k))].mean(axis=1))
    with pytest.raises(ValueError):
        Representation("layer")
    with pytest.raises(ValueError):
        Representation("max")


def test_layer_cosine_matrices_shape_and_values():
    v = np.array([[[1, 0], [1, 0]], [[0, 1], [1, 1]]], dtype=float)  # (n=2, K=2, H=2)
    m = layer_cosine_matrices(v)
    assert m.shape == (2, 2, 2)
    assert m[0, 0, 1] == pytest.approx(0.0)
    assert m[1, 0, 1] == pytest.approx(R2)
    np.testing.assert_allclose(m, np.transpose(m, (0, 2, 1)))


def test_mean_offdiagonal():
    m = np.array([[1, 0.2, 0.4], [0.2, 1, 0.6], [0.4, 0.6, 1]])
    assert mean_offdiagonal(m) == pytest.approx(0.4)
    assert mean_offdiagonal(np.ones((1, 1))) == 0.0


# ---------------------------------------------------------------- pooling


def test_pooling_single_last_four_and_all():
    # one sentence, 7 representations (L = 6), value at layer l is [l, 1]
    v = np.array([[[layer, 1.0] for layer in range(7)]])
    np.testing.assert_allclose(pool(v, "layer", 2), [[2, 1]])
    np.testing.assert_allclose(pool(v, "last4"), [[(3 + 4 + 5 + 6) / 4, 1]])
    np.testing.assert_allclose(pool(v, "all"), [[3, 1]])
    assert pooled_layers(7, "last4") == (3, 4, 5, 6)


def test_pooling_with_few_layers_never_uses_embedding_for_last_four():
    assert pooled_layers(3, "last4") == (1, 2)
    assert pooled_layers(1, "last4") == (0,)
    with pytest.raises(ValueError):
        pooled_layers(7, "layer", 7)
    with pytest.raises(ValueError):
        pooled_layers(7, "max")


def test_pooling_label():
    assert pooling_label("layer", 0) == "embedding layer (0)"
    assert pooling_label("layer", 3) == "layer 3"
    assert "last four" in pooling_label("last4")


def test_sentence_vectors_by_hand_leave_every_special_token_out_of_the_mean():
    # (K=2, 4 tokens, H=2): [CLS] w1 w2 [SEP]; the mean is over w1 and w2 only, [CLS] is the first row
    h = np.array([[[1, 1], [2, 0], [0, 4], [9, -9]], [[3, 3], [4, 0], [0, 2], [9, -9]]], dtype=float)
    cls, mean = sentence_vectors([h, h[:, :3]], [[True, False, False, True], [True, False, False]])
    assert cls.shape == mean.shape == (2, 2, 2)
    np.testing.assert_allclose(cls[0], [[1, 1], [3, 3]])
    np.testing.assert_allclose(mean[0], [[1, 2], [2, 1]])
    np.testing.assert_allclose(mean[1], mean[0])  # no [SEP] in the second sentence: the same two pieces
    with pytest.raises(ValueError, match="special first token"):
        sentence_vectors([h], [[False, False, False, True]])
    with pytest.raises(ValueError, match="ordinary word piece"):
        sentence_vectors([h], [[True] * 4])


# ---------------------------------------------------------------- same vs different sense


def test_sense_similarity_by_hand():
    # a=[1,0], b=[.6,.8], c=[0,1]; senses A, A, B
    v = one_layer([1, 0], [0.6, 0.8], [0, 1])
    res = sense_similarity(layer_cosine_matrices(v), ["A", "A", "B"])
    assert res.same[0] == pytest.approx(0.6)  # (a, b)
    assert res.different[0] == pytest.approx((0.0 + 0.8) / 2)  # (a, c), (b, c)
    assert res.gap[0] == pytest.approx(0.2)
    assert (res.n_same_pairs, res.n_different_pairs) == (1, 2)


def test_sense_similarity_unlabelled_and_single_sense():
    v = one_layer([1, 0], [0.6, 0.8], [0, 1])
    cos = layer_cosine_matrices(v)
    none = sense_similarity(cos, [None, None, None])
    assert none.same is None and none.different is None and none.gap is None
    one = sense_similarity(cos, ["A", "A", None])
    assert one.same[0] == pytest.approx(0.6) and one.different is None and one.gap is None


def test_pair_trajectories():
    v = np.array([[[1, 0], [1, 0]], [[1, 0], [0, 1]], [[1, 1], [0, 1]]], dtype=float)  # (3, 2, 2)
    t = pair_trajectories(layer_cosine_matrices(v), ["x", "y", "y"])
    np.testing.assert_array_equal(t.pairs, [[0, 1], [0, 2], [1, 2]])
    np.testing.assert_allclose(t.cosines, [[1, 0], [R2, 0], [R2, 1]], atol=1e-12)
    np.testing.assert_array_equal(t.same_sense, [False, False, True])
    only = pair_trajectories(layer_cosine_matrices(v), None, pairs=[(1, 2)])
    assert only.same_sense is None and only.cosines.shape == (1, 2)


# ---------------------------------------------------------------- baseline


def test_random_token_baseline_two_tokens_is_exact():
    # two sentences, one usable token each: parallel at layer 0, orthogonal at layer 1; the rest is masked
    s1 = np.array([[[1, 0], [5, 5]], [[1, 0], [5, 5]]], dtype=float)  # (K=2, T=2, H=2)
    s2 = np.array([[[2, 0], [5, 5]], [[0, 3], [5, 5]]], dtype=float)
    masks = [np.array([True, False]), np.array([True, False])]
    b = random_token_baseline([s1, s2], masks, n_pairs=50, seed=1)
    np.testing.assert_allclose(b.mean, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(b.low, [1.0, 0.0], atol=1e-12)
    assert b.n_tokens == 2 and b.n_pairs == 50 and b.n_sentences == 2


def test_random_token_baseline_is_seeded_and_needs_two_sentences():
    rng = np.random.default_rng(0)
    hs = [rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 4, 4))]
    a = random_token_baseline(hs, seed=7)
    b = random_token_baseline(hs, seed=7)
    np.testing.assert_array_equal(a.mean, b.mean)
    assert (a.low <= a.mean).all() and (a.mean <= a.high).all()
    assert random_token_baseline([np.ones((2, 1, 3))]) is None
    # one sentence with many tokens: Ethayarajh's pairs come from two different sentences, so none
    assert random_token_baseline([rng.normal(size=(2, 6, 3))]) is None


def test_cross_sentence_pairs_never_share_a_sentence_or_a_word_piece():
    tokens = [["the", "bank", "the"], ["the", "river"], ["a", "the", "loan"]]
    cand = np.array([(s, k) for s, toks in enumerate(tokens) for k in range(len(toks))])
    a, b = sample_cross_sentence_pairs(cand, 500, seed=3, tokens=tokens)
    assert len(a) == 500
    assert (cand[a, 0] != cand[b, 0]).all()  # one word from each of two different sentences
    words_a = [tokens[s][k] for s, k in cand[a]]
    words_b = [tokens[s][k] for s, k in cand[b]]
    assert all(x != y for x, y in zip(words_a, words_b, strict=True))  # never "the" with "the"
    # every sentence is drawn about equally often (sentences first, then a word in each)
    counts = np.bincount(np.concatenate([cand[a, 0], cand[b, 0]]), minlength=3)
    assert counts.min() > 0.2 * counts.sum()
    # only one type in the whole set: no valid pair
    same = [["x"], ["x"]]
    a, _ = sample_cross_sentence_pairs(np.array([[0, 0], [1, 0]]), 10, tokens=same)
    assert len(a) == 0


def test_other_token_masks_drop_special_and_target():
    special = [np.array([True, False, False, False, True])]  # [CLS] the bank ##s [SEP]
    masks = other_token_masks(special, [[2, 3]])
    np.testing.assert_array_equal(masks[0], [False, True, False, False, False])
    np.testing.assert_array_equal(special[0], [True, False, False, False, True])  # the input is not changed


def test_adjusted_subtracts_per_layer():
    np.testing.assert_allclose(adjusted([[0.5, 0.9]], [0.1, 0.4]), [[0.4, 0.5]])


# ---------------------------------------------------------------- Ethayarajh 2019


def test_self_similarity_by_hand():
    # cos: (a,b)=0, (a,c)=(b,c)=1/sqrt2 -> mean over pairs = (0 + 2/sqrt2)/3
    v = one_layer([1, 0], [0, 1], [1, 1])
    assert self_similarity(v)[0] == pytest.approx(math.sqrt(2) / 3)
    identical = one_layer([2, 1], [4, 2])
    assert self_similarity(identical)[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        self_similarity(one_layer([1, 0]))


def test_self_similarity_with_a_zero_vector_is_finite():
    v = one_layer([1, 0], [0, 0], [1, 0])
    # pairs: (a,zero)=0, (a,c)=1, (zero,c)=0
    assert self_similarity(v)[0] == pytest.approx(1 / 3)


def test_intra_sentence_similarity_by_hand():
    s1 = np.array([[[1, 0], [0, 1]]], dtype=float)  # mean (.5,.5): both tokens at cos 1/sqrt2
    s2 = np.array([[[2, 0], [3, 0], [0, 9]]], dtype=float)  # third token masked: cos 1, 1
    out = intra_sentence_similarity([s1, s2], [np.array([True, True]), np.array([True, True, False])])
    assert out[0] == pytest.approx((R2 + 1) / 2)


# ---------------------------------------------------------------- sense readout


def test_leave_one_out_readout_by_hand():
    # layer 0: A=[1,0],[1,0]; B=[0,1],[1,.1]. Leaving out [1,.1] its own centroid is [0,1]
    # (cos .0995) while A's is [1,0] (cos .995): wrong. The others are right -> 3/4.
    # layer 1: cleanly separated -> 4/4.
    v = np.array(
        [
            [[1, 0], [1, 0]],
            [[1, 0], [1, 0.1]],
            [[0, 1], [0, 1]],
            [[1, 0.1], [0.1, 1]],
        ]
    )
    r = leave_one_out_readout(v, ["A", "A", "B", "B"])
    np.testing.assert_allclose(r.accuracy, [0.75, 1.0])
    assert r.best_layer == 1 and r.best_accuracy == 1.0
    assert r.majority_baseline == 0.5 and r.majority_sense == "A"
    assert list(r.predictions[0]) == ["A", "A", "B", "A"]
    assert r.senses == ("A", "B") and r.method == "leave-one-out"


def test_leave_one_out_skips_lone_senses_and_needs_two_senses():
    v = one_layer([1, 0], [1, 0.1], [0, 1], [0.1, 1], [5, 5])
    r = leave_one_out_readout(v, ["A", "A", "B", "B", "C"])
    np.testing.assert_array_equal(r.evaluated, [0, 1, 2, 3])
    assert r.accuracy[0] == 1.0
    assert leave_one_out_readout(v, ["A", "A", "A", None, "B"]) is None


def test_leave_one_out_centroid_cosines_by_hand():
    # one layer; group 0: [1, 0] and [0, 1], group 1: [1, 1] and [1, 1]
    x = one_layer([1, 0], [0, 1], [1, 1], [1, 1])
    c = leave_one_out_centroid_cosines(x, np.array([0, 0, 1, 1]), 2)
    assert c.shape == (4, 2, 1)
    # [1, 0] against its own group without it ([0, 1]): 0; against group 1's average [1, 1]: 1/sqrt(2)
    np.testing.assert_allclose(c[0, :, 0], [0.0, R2], atol=1e-12)
    # [1, 1] against group 0's average [0.5, 0.5]: 1; against its own group without it ([1, 1]): 1
    np.testing.assert_allclose(c[2, :, 0], [1.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="at least two"):
        leave_one_out_centroid_cosines(x[:3], np.array([0, 0, 1]), 2)


def test_hardest_case_by_hand():
    # a2 = [0, 1] is orthogonal to its own sense (a1 = [1, 0]) but close to b1 = [0.1, 1]
    cos = cosine_matrix(np.array([[1, 0], [0, 1], [0.1, 1]], dtype=float))
    assert hardest_case(cos, ["a", "a", "b"]) == (1, 2, 0)
    assert hardest_case(cos, ["a", "b", "c"]) is None  # nobody has a same-sense partner
    assert hardest_case(cos, ["a", "a", "a"]) is None  # nobody has a different-sense partner
    with pytest.raises(ValueError):
        hardest_case(cos, ["a", "b"])

def test_centroid_readout_train_test_by_hand():
    train = one_layer([1, 0], [1, 0], [0, 1])
    test = one_layer([0.9, 0.1], [0.2, 0.8], [0.6, 0.5])
    r = centroid_readout(train, ["A", "A", "B"], test, ["A", "B", "B"])
    assert r.accuracy[0] == pytest.approx(2 / 3)
    assert r.majority_sense == "B" and r.majority_baseline == pytest.approx(2 / 3)


# ---------------------------------------------------------------- neighbours and evidence card


def test_nearest_neighbours():
    v = np.array([[1, 0], [1, 0.1], [0, 1], [-1, 0]], dtype=float)
    nb = nearest_neighbours(v, 0, k=2)
    np.testing.assert_array_equal(nb.indices, [1, 2])
    np.testing.assert_allclose(nb.cosines, [1 / math.sqrt(1.01), 0.0], atol=1e-12)
    assert len(nearest_neighbours(v, 3, k=10).indices) == 3


def test_evidence_card_by_hand_and_exports():
    sentences = ['He said "hi, there"', "a | b", "third"]
    first = np.ones((3, 2))  # all identical: cosine 1
    chosen = np.array([[1, 0], [0.6, 0.8], [0, 1]])  # S2 is 0.8 from S3 (sense B), 0.6 from S1 (its own A)
    card = evidence_card(first, chosen, sentences, ["A", "A", "B"], "bank", chosen_name="layer 4")
    assert len(card.rows) == 3
    (surprise,) = card.surprises
    assert surprise.rule == "nearer another sense" and surprise.pairs == ((1, 2), (0, 1))
    assert "S2 (A) is closer to S3 (B), another sense (0.80), than to S1 (A), its own (0.60)" in surprise.text
    marked = [card.rows[k] for k in card.surprising_rows()]
    assert {(r.i, r.j) for r in marked} == {(1, 2), (0, 1)}
    assert card.rows[card.surprising].cosine_first == pytest.approx(1.0)

    rows = list(csv.reader(io.StringIO(card.to_csv())))
    assert rows[0][-3:] == ["cosine embedding layer (0)", "cosine layer 4", "surprising"]
    assert rows[1][0] == sentences[0]  # quotes and commas survive the round trip
    assert sum(r[-1] == "yes" for r in rows[1:]) == 2

    md = card.to_markdown()
    assert "a \\| b" in md
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3
    for name in ("**Representation.**", "**Comparison.**", "**Interpretation.**", "**Failure check.**", "**Expected output.**"):
        assert name in md
    assert [c.name for c in card.checks] == list(CHECKS)
    assert md.count("\n- ") == len(CHECKS)  # one line per failure check
    # the gap grows from 0 at the first representation to 0.6 - 0.4 = 0.2: what it captures
    assert "the gap grows from +0.00 at embedding layer (0) to +0.20" in card.captures
    assert "2 of 3 sentences have their nearest sentence in another sense" in card.misses  # S2 and S3
    assert [f for f, _ in card.fields()][0] == "Representation"


def test_evidence_card_surprises_follow_their_rules():
    first = np.ones((4, 2))
    senses = ["A", "A", "B", "B"]
    # within the tie: S2 sits 0.005 nearer S3 (B) than S1 (A): no surprise, said plainly
    a = np.deg2rad([0.0, 40.0, 40.0 + 39.7, 100.0])
    chosen = np.stack([np.cos(a), np.sin(a)], axis=1)
    c = cosine_matrix(chosen)
    assert 0 < c[1, 2] - c[1, 0] < SURPRISE_TIE
    card = evidence_card(first, chosen, ["s1", "s2", "s3", "s4"], senses, chosen_name="layer 6")
    assert not card.surprises and card.surprising is None
    assert card.reason.startswith("none found: at layer 6 every sentence is closer to each sentence of its own sense")
    # the context did not separate: the gap at the chosen layer is not above the first one's
    flat = evidence_card(chosen, first, ["s1", "s2", "s3", "s4"], senses, first_name="layer 0", chosen_name="layer 6")
    assert [s.rule for s in flat.surprises] == ["no separation by context"]
    assert "gap is +0.00 at layer 6 against" in flat.reason
    # without labels nothing sets what to expect
    none = evidence_card(first, chosen, ["s1", "s2", "s3", "s4"], [None] * 4)
    assert not none.surprises and none.reason.startswith("none found: without two senses")
    assert none.checks[0].flagged is None  # polysemy cannot be checked


def test_evidence_card_failure_checks_by_hand():
    v = np.eye(4)
    facts = CardFacts(
        model="m",
        pieces=(("bank",), ("ban", "##k"), ("bank",), ("bank",)),
        static_min=0.8,
        truncated=1,
        context_words=(2, 9, 12, 4),
        split=(6, 20, 1),
        reference_split=(10, 200, 0),
        self_similarity=0.5,
        context_similarity=0.6,
        baseline=0.3,
        readout=(0.75, 0.5),
    )
    card = evidence_card(v, v, ["a", "b", "c", "d"], ["x", "x", "y", "y"], "bank", chosen_name="layer 6", facts=facts)
    checks = {c.name: c for c in card.checks}
    assert checks["polysemy"].flagged  # orthogonal vectors: each nearest is the first other one, S1 -> S2 ...
    assert checks["domain mismatch"].flagged and "30% of the set's words" in checks["domain mismatch"].text
    assert "against 5% in the reference corpus" in checks["domain mismatch"].text and "1 word is unknown" in checks["domain mismatch"].text
    assert checks["short text"].flagged and "2 of 4 sentences have fewer than 5 words" in checks["short text"].text
    assert "(S1, S4)" in checks["short text"].text
    t = checks["tokenization"].text
    assert checks["tokenization"].flagged and "1 of 4 sentences (e.g. ban + ##k)" in t and "lowest cosine 0.80" in t
    assert "1 sentence was cut" in t
    assert checks["word or sentence"].flagged
    assert "cosine 0.60 with the rest of its own sentence and 0.50" in checks["word or sentence"].text
    # the course's semantic drift is a change of senses over time or domain: one set cannot show it
    assert checks["semantic drift"].flagged is None and "over time or between domains" in checks["semantic drift"].text
    assert "75% read right at layer 6, above chance (shuffled labels up to 50%)" in card.comparison
    assert "Random pairs of other word pieces score 0.30 there" in card.misses
    ok = replace(facts, split=(2, 100, 0), context_words=(5, 6, 7, 8), pieces=(("bank",),) * 4, static_min=1.0,
                 truncated=0, context_similarity=0.4)  # fmt: skip
    checks = {c.name: c for c in evidence_card(v, v, list("abcd"), ["x", "x", "y", "y"], "bank", facts=ok).checks}
    assert not any(checks[k].flagged for k in ("domain mismatch", "short text", "tokenization", "word or sentence"))
    assert checks["short text"].text.endswith("(fewest: 5).")
    bare = {c.name: c for c in evidence_card(v, v, list("abcd"), ["x", "x", "y", "y"], "bank").checks}
    assert all(bare[k].flagged is None for k in CHECKS if k != "polysemy")


def test_split_word_counts_by_hand(encoder):
    from lib.stats.evidence_facts import split_word_counts

    tok = encoder.tokenizer
    words = ["The", "kiwi", "bank", "closed"]
    expected_split = sum(len(tok.tokenize(w)) > 1 for w in words)
    assert split_word_counts(tok, ["The kiwi bank closed."]) == (expected_split, 4, 0)
    assert expected_split >= 1  # "kiwi" is two word pieces in this vocabulary
    assert split_word_counts(tok, []) == (0, 0, 0)


def test_split_word_counts_by_hand_with_a_byte_level_tokenizer(decoder):
    """A byte-level piece takes in the space before its word (" kiwi"): every word counts, not only the first."""
    from lib.stats.evidence_facts import split_word_counts

    tok = decoder.tokenizer
    sentences = ["The xylophonist closed early.", "Photosynthesis needs an ornithologist and sunlight."]
    n_split = n_words = 0
    for sentence in sentences:
        for k, w in enumerate(sentence.rstrip(".").split()):
            pieces = tok.tokenize(w if k == 0 else " " + w)  # as the word reads inside its sentence
            n_words += 1
            n_split += len(pieces) > 1
    assert n_words == 10 and n_split >= 3  # not just the first word of each sentence
    assert split_word_counts(tok, sentences) == (n_split, n_words, 0)


def test_the_evidence_card_follows_the_models_facts():
    sentences = ["This bank is by the river.", "This bank is lending.", "The river bank flooded.", "The bank lends."]
    senses = ["river", "money", "river", "money"]
    first = np.ones((4, 3))
    chosen = np.array([[1.0, 0, 0], [1.0, 0, 0], [0.2, 1, 0], [0.3, 0, 1]])  # S1 and S2: one vector
    ends = tuple(s.index("bank") + 4 for s in sentences)
    causal = CardFacts(pieces=(("Ġbank",), ("Ġbank",), ("Ġriver", "bank"), ("Ġbank",)), piece_pooling="last",
                       layer_zero="the word piece's own row", causal=True, target_ends=ends)  # fmt: skip
    card = evidence_card(first, chosen, sentences, senses, "bank", first_name="layer 0", facts=causal)
    (near,) = [x for x in card.surprises if x.rule == "nearer another sense"]
    assert "Both open with “This bank”" in near.text and "cosine 1.000" in near.text
    assert "(its last word piece)" in card.representation and "(the word piece's own row; no context yet)" in card.representation
    assert "the last of them" in {c.name: c for c in card.checks}["tokenization"].text
    # the same numbers from a model that reads both ways: no such reason is claimed
    both = evidence_card(first, chosen, sentences, senses, "bank", first_name="layer 0",
                         facts=replace(causal, causal=False, piece_pooling="mean"))  # fmt: skip
    assert "Both open with" not in both.reason and "(the mean of its word pieces)" in both.representation


def test_the_evidence_card_claims_no_separation_the_readout_does_not_support():
    a = np.deg2rad([0.0, 10.0, 80.0, 90.0])
    chosen = np.stack([np.cos(a), np.sin(a)], axis=1)  # two clean senses: the gap grows
    first = np.ones((4, 2))
    senses = ["x", "x", "y", "y"]
    above = evidence_card(first, chosen, list("abcd"), senses, facts=CardFacts(readout=(1.0, 0.5)))
    assert above.captures.startswith("the sense, on average") and "within chance" not in above.reason
    within = evidence_card(first, chosen, list("abcd"), senses, facts=CardFacts(readout=(1.0, 1.0)))
    assert within.captures.startswith("no sense this set can show") and "is within chance" in within.reason


def test_evidence_card_limits_rows_and_keeps_surprise():
    rng = np.random.default_rng(3)
    first, chosen = rng.normal(size=(8, 4)), rng.normal(size=(8, 4))
    senses = ["A"] * 4 + ["B"] * 4
    card = evidence_card(first, chosen, [f"s{i}" for i in range(8)], senses, max_rows=6)
    assert len(card.rows) == 6
    c = cosine_matrix(chosen)
    found = [s for s in card.surprises if s.rule == "nearer another sense"]
    a, b, cc = hardest_case(c, senses)
    assert bool(found) == (c[a, b] - c[a, cc] > SURPRISE_TIE)
    for s in found:
        assert {p for p in s.pairs} <= {(r.i, r.j) for r in card.rows}
    given = evidence_card(
        first, chosen, [f"s{i}" for i in range(8)], senses, max_rows=6, cosines=(cosine_matrix(first), c)
    )
    assert given == card


def test_no_nan_anywhere_with_zero_vectors():
    v = np.zeros((4, 3, 5))
    cos = layer_cosine_matrices(v)
    assert np.isfinite(cos).all()
    assert np.isfinite(self_similarity(v)).all()
    r = leave_one_out_readout(v, ["A", "A", "B", "B"])
    assert np.isfinite(r.accuracy).all()
    s = sense_similarity(cos, ["A", "A", "B", "B"])
    assert np.isfinite(s.gap).all()


def test_published_reference_has_thirteen_layers():
    ref = ETHAYARAJH_2019_BERT_BASE
    assert len(ref.anisotropy) == len(ref.intra_sentence) == 13
    assert ref.num_layers == 12
    assert ref.anisotropy[0] == 0.105 and ref.intra_sentence[-1] == 0.776
    assert "Ethayarajh" in ref.citation


# ---------------------------------------------------------------- pooled extras and the profile


def test_with_pooled_appends_last_four_and_all():
    v = np.array([[[layer, 1.0] for layer in range(7)]])  # (1, 7, 2)
    aug = with_pooled(v)
    assert aug.shape == (1, 9, 2)
    np.testing.assert_allclose(aug[0, 7], [4.5, 1])  # layers 3..6
    np.testing.assert_allclose(aug[0, 8], [3, 1])  # layers 0..6
    assert representation_index(7, "layer", 2) == 2
    assert representation_index(7, "last4") == 7
    assert representation_index(7, "all") == 8


def test_pooled_baseline_and_intra_sentence():
    # tokens: layer 0 parallel, layer 1 orthogonal -> pooled (last4 = layer 1; all = mean of both)
    hs = np.array([[[1, 0], [1, 0]], [[1, 0], [0, 1]]], dtype=float)  # (K=2, T=2, H=2)
    b = random_token_baseline([hs[:, :1], hs[:, 1:]], n_pairs=10, pooled=True)
    # all-mean vectors: [1, 0] and [.5, .5] -> cosine 1/sqrt2
    np.testing.assert_allclose(b.mean, [1.0, 0.0, 0.0, R2], atol=1e-12)
    intra = intra_sentence_similarity([hs], pooled=True)
    # layer 1: tokens [1,0],[0,1], mean [.5,.5] -> 1/sqrt2 each; all-mean tokens [1,0],[.5,.5]
    mean_all = np.array([0.75, 0.25])
    expected_all = np.mean(
        [mean_all[0] / np.linalg.norm(mean_all), (0.5 * 0.75 + 0.5 * 0.25) / (R2 * np.linalg.norm(mean_all))]
    )
    np.testing.assert_allclose(intra, [1.0, R2, R2, expected_all], atol=1e-12)


def test_layer_profile_is_consistent_with_the_single_functions():
    rng = np.random.default_rng(5)
    n, k, h = 6, 4, 3
    v = rng.normal(size=(n, k, h))
    senses = ["a", "a", "a", "b", "b", "b"]
    hidden = [rng.normal(size=(k, 5, h)) for _ in range(n)]
    p = layer_profile(v, rng.normal(size=(n, h)), senses, hidden, seed=3)
    assert p.cosines.shape == (k + 2, n, n) and p.num_layers == k - 1
    np.testing.assert_allclose(p.cosines[p.index("last4")], cosine_matrix(pool(v, "last4")))
    np.testing.assert_allclose(p.cosines[p.index("layer", 2)], cosine_matrix(v[:, 2]))
    np.testing.assert_allclose(p.self_similarity[:k], self_similarity(v))
    loo = leave_one_out_readout(pool(v, "all")[:, None, :], senses)
    assert p.readout.accuracy[p.index("all")] == loo.accuracy[0]
    assert p.baseline.mean.shape == (k + 2,)
    assert np.isfinite(p.cosines).all() and np.isfinite(p.intra_sentence).all()


def test_layer_profile_norms_are_the_mean_vector_length_per_representation():
    v = np.array(
        [
            [[3.0, 4.0], [0.0, 5.0], [0.0, 0.0]],  # sentence 1: lengths 5, 5, 0 (a zero vector has length 0)
            [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]],  # sentence 2: lengths 1, 1, 1
        ]
    )
    p = layer_profile(v, np.ones((2, 2)), [None, None], [np.ones((3, 2, 2))] * 2)
    np.testing.assert_allclose(p.norms[:3], [(5 + 1) / 2, (5 + 1) / 2, (0 + 1) / 2])  # per layer, by hand
    # the pooled vectors: the mean of the last 4 layers is of layers 1 and 2 here (the embedding output is no
    # layer's), (0, 2.5) and (1/2, 1/2); the mean of all is of the 3 hidden states, (1, 3) and (1/3, 2/3)
    last4 = (2.5 + np.sqrt(1 / 4 + 1 / 4)) / 2
    every = (np.sqrt(1 + 9) + np.sqrt(1 / 9 + 4 / 9)) / 2
    np.testing.assert_allclose(p.norms[3:], [last4, every])


# ------------------------------------------------------------------ moved out of pages/layers.py


def test_pair_values_and_mean_pair_cosines_by_hand():
    m = np.array([[1.0, 0.2, 0.4], [0.2, 1.0, 0.6], [0.4, 0.6, 1.0]])
    np.testing.assert_allclose(pair_values(m), [0.2, 0.4, 0.6])
    stacked = np.stack([m, 1 - m])
    np.testing.assert_allclose(pair_values(stacked), [[0.2, 0.4, 0.6], [0.8, 0.6, 0.4]])
    np.testing.assert_allclose(mean_pair_cosines(stacked), [0.4, 0.6])
    np.testing.assert_allclose(mean_pair_cosines(np.ones((2, 1, 1))), [0.0, 0.0])  # one sentence: no pair


def _cosines_from_changes(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """(2, n, n) symmetric matrices with the given upper-triangle values at layer 0 and layer 1."""
    n = int((1 + math.isqrt(1 + 8 * len(first))) // 2)
    out = np.ones((2, n, n))
    i, j = np.triu_indices(n, 1)
    for k, vals in enumerate((first, last)):
        out[k, i, j] = out[k, j, i] = vals
    return out


def test_most_changed_pairs_keeps_all_pairs_under_the_limit():
    cos = _cosines_from_changes(np.zeros(3), np.ones(3))
    np.testing.assert_array_equal(most_changed_pairs(cos, None, first=0, last=1, limit=3), [[0, 1], [0, 2], [1, 2]])


def test_most_changed_pairs_takes_the_largest_changes_half_per_kind():
    # 4 sentences, senses a a b b: same-sense pairs (0,1) and (2,3); the four others are different-sense
    change = np.array([0.1, 0.9, 0.8, 0.7, 0.3, 0.5])  # pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    cos = _cosines_from_changes(np.zeros(6), change)
    labelled = most_changed_pairs(cos, ["a", "a", "b", "b"], first=0, last=1, limit=2)
    # one same-sense pair (the larger change: (2,3)) and one different-sense pair ((0,2)), in pair order
    np.testing.assert_array_equal(labelled, [[0, 2], [2, 3]])
    unlabelled = most_changed_pairs(cos, None, first=0, last=1, limit=3)
    np.testing.assert_array_equal(unlabelled, [[0, 2], [0, 3], [1, 2]])
    # the change is an absolute value: a drop counts as much as a rise
    dropped = most_changed_pairs(-cos, None, first=0, last=1, limit=1)
    np.testing.assert_array_equal(dropped, [[0, 2]])


def _profile(seed: int = 5, senses=("a", "a", "a", "b", "b", "b")):
    rng = np.random.default_rng(seed)
    n, k, h = len(senses), 4, 3
    v = rng.normal(size=(n, k, h))
    hidden = [rng.normal(size=(k, 5, h)) for _ in range(n)]
    return layer_profile(v, rng.normal(size=(n, h)), list(senses), hidden, seed=3)


def test_layer_profile_pair_means_and_colour_range_match_the_matrices():
    p = _profile()
    n = p.cosines.shape[1]
    for r in range(p.cosines.shape[0]):
        expected = np.mean([p.cosines[r, i, j] for i in range(n) for j in range(i + 1, n)])
        assert p.pair_means[r] == pytest.approx(expected)
    lo, hi = p.colour_range(adjusted=False)
    lowest = min(p.cosines[r, i, j] for r in range(p.cosines.shape[0]) for i in range(n) for j in range(i + 1, n))
    assert hi == 1.0 and lo <= lowest < lo + 0.1 and round(lo * 10) == pytest.approx(lo * 10)
    lo_a, hi_a = p.colour_range(adjusted=True)
    largest = max(
        abs(p.cosines[r, i, j] - p.baseline.mean[r])
        for r in range(p.cosines.shape[0])
        for i in range(n)
        for j in range(i + 1, n)
    )
    assert hi_a == -lo_a == pytest.approx(max(0.05, largest))


def test_layer_profile_static_vs_contextual_table():
    p = _profile()
    static = p.static_cosines
    same = np.mean([static[i, j] for i, j in [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5)]])
    different = np.mean([static[i, j] for i in range(3) for j in range(3, 6)])
    table = p.static_vs_contextual([None, 0, 3])
    assert list(table) == ["all pairs", "same sense", "different sense"]
    assert table["all pairs"][0] == pytest.approx(np.mean(static[np.triu_indices(6, 1)]))
    assert table["same sense"][0] == pytest.approx(same)
    assert table["different sense"][0] == pytest.approx(different)
    assert table["all pairs"][1:] == pytest.approx([p.pair_means[0], p.pair_means[3]])
    assert table["same sense"][2] == pytest.approx(p.senses.same[3])
    assert list(p.static_vs_contextual([None, 0], by_sense=False)) == ["all pairs"]
    unlabelled = _profile(senses=(None,) * 6)
    assert list(unlabelled.static_vs_contextual([None, 1])) == ["all pairs"]
    assert unlabelled.baseline_mean.shape == (p.cosines.shape[0],)


def test_compare_anisotropy_by_hand():
    ref_peak = max(ETHAYARAJH_2019_BERT_BASE.anisotropy)  # 0.675
    c = compare_anisotropy(np.array([0.02, 0.15, 0.18, 0.17, 0.0]))
    assert (c.peak_layer, c.peak, c.reference_peak) == (2, 0.18, ref_peak)
    assert c.ratio == pytest.approx(0.18 / 0.675) and c.strength == "mild next to"
    assert compare_anisotropy(np.array([0.1, 0.6])).strength == "comparable to"  # 0.6 / 0.675 = 0.89
    assert compare_anisotropy(np.array([0.4])).strength == "weaker than"  # 0.59
    assert compare_anisotropy(np.array([0.9])).strength == "stronger than"  # 1.33
    with pytest.raises(ValueError):
        compare_anisotropy(np.array([0.1, np.nan]))


@given(
    st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.5, 1.0, -0.2]), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=45),
)
def test_largest_first_is_a_stable_descending_sort_cut_at_k(values, k):
    # many ties on purpose: the lower index must come first among equal values, as a full stable sort gives
    want = sorted(range(len(values)), key=lambda i: (-values[i], i))[:k]
    assert _largest_first(np.array(values), k) == want


def test_depth_and_pooling_phrase_by_hand():
    from lib.stats.layer_profile import (
        CLS_VECTOR,
        MEAN_VECTOR,
        WORD_VECTOR,
        best_layers,
        depth_and_pooling_phrase,
    )

    nan = float("nan")
    r = {WORD_VECTOR: np.array([0.5, 1.0, 0.8]), MEAN_VECTOR: np.array([0.6, 0.7, 0.7]), CLS_VECTOR: np.array([nan, 0.9, 0.5])}
    text = depth_and_pooling_phrase(r)
    assert text.startswith("Deeper is not always better: the word's vector reads the sense best at layer 1 (100%), the last layer 80%.")
    assert "the mean of the word pieces reads 70% at its best layer, [CLS] 90%: here [CLS] wins." in text
    assert best_layers(r[CLS_VECTOR]) == [1] and best_layers(r[MEAN_VECTOR]) == [1, 2]
    r[WORD_VECTOR] = np.array([0.5, 0.8, 0.8])
    r[CLS_VECTOR] = np.array([nan, 0.7, 0.7])
    text = depth_and_pooling_phrase(r)
    assert text.startswith("Here the last layer reads the word's sense as well as any (80%)") and "they tie" in text
    assert depth_and_pooling_phrase({}) == ""
    # 12 sentences: the last layer reads one fewer than the best is no evidence; three fewer is
    r = {WORD_VECTOR: np.array([0.5, 1.0, 11 / 12])}
    assert "one sentence of 12 fewer, too small a difference" in depth_and_pooling_phrase(r, 12)
    r = {WORD_VECTOR: np.array([0.5, 1.0, 9 / 12])}
    assert depth_and_pooling_phrase(r, 12).startswith("Deeper is not always better") and "3 sentences of 12 fewer" in depth_and_pooling_phrase(r, 12)


def test_a_readout_of_identical_vectors_is_no_reading():
    from lib.stats.layer_profile import _readout_where_it_varies

    rng = np.random.default_rng(0)
    v = rng.normal(size=(6, 3, 4))
    v[:, 0, :] = v[0, 0, :]  # layer 0: one vector for every sentence, as [CLS] before any context
    ro = _readout_where_it_varies(v, ["a", "a", "a", "b", "b", "b"])
    assert np.isnan(ro.accuracy[0]) and np.isfinite(ro.accuracy[1:]).all()
    assert ro.best_layer in (1, 2) and ro.best_accuracy == np.nanmax(ro.accuracy)
    v[:, :, :] = v[0]  # every layer one vector, as a decoder's start token: no sentence vector at all
    assert _readout_where_it_varies(v, ["a", "a", "a", "b", "b", "b"]) is None
