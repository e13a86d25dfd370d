"""Readouts against chance (lib.stats.chance.readout_chance) and the pair-ranking AUC (every number on screen true)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from lib.stats.chance import (
    CHANCE_BUDGET,
    CHANCE_PERMUTATIONS,
    ReadoutChance,
    _loo_accuracy_from_gram,
    chance_phrase,
    layer_list,
    position_note,
    readout_chance,
)
from lib.stats.evidence import EvidenceCard
from lib.stats.pooling import with_pooled
from lib.stats.readout import leave_one_out_readout
from lib.stats.similarity import layer_cosine_matrices, pair_kinds, pair_ranking_auc


def _brute_auc(values: np.ndarray, same: np.ndarray) -> float:
    a, b = values[same], values[~same]
    wins = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x, y in itertools.product(a, b))
    return wins / (len(a) * len(b))


def test_loo_from_gram_equals_the_readout_for_any_labelling():
    rng = np.random.default_rng(4)
    v = rng.normal(size=(10, 3, 6)) + np.array([1.0, 0, 0, 0, 0, 0])  # a shared direction, like a cone
    x = v
    gram = np.einsum("mkh,nkh->kmn", x, x)
    for _ in range(5):
        labels = rng.permutation([0] * 4 + [1] * 3 + [2] * 3)
        names = [f"s{i}" for i in labels]
        ro = leave_one_out_readout(v, names)
        acc = _loo_accuracy_from_gram(gram, np.eye(3)[labels[None]], labels[None])[0]
        np.testing.assert_allclose(acc, ro.accuracy)


def test_readout_chance_is_seeded_and_reports_the_real_readout():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(12, 4, 8))
    senses = ["a"] * 6 + ["b"] * 6
    v[:6, 3, 0] += 8.0  # the senses separate at the last layer only
    v[6:, 3, 1] += 8.0
    rc = readout_chance(v, senses)
    again = readout_chance(v, senses)
    np.testing.assert_array_equal(rc.shuffled_p95, again.shuffled_p95)
    np.testing.assert_allclose(rc.accuracy, leave_one_out_readout(v, senses).accuracy)
    assert rc.majority == 0.5 and rc.n_evaluated == 12 and rc.n_permutations == CHANCE_PERMUTATIONS
    assert (rc.shuffled_mean <= rc.shuffled_p95).all()
    assert not rc.within_chance[3] and rc.accuracy[3] == 1.0
    assert all(rc.within_chance[:3])  # pure noise is within chance
    assert readout_chance(v, ["a"] + [None] * 11) is None


def test_no_signal_reads_below_the_majority_rate():
    # no sense signal: leaving a sentence out makes its own centroid noisier (5 vs 6 sentences), so it loses
    rng = np.random.default_rng(1)
    v = np.ones((12, 1, 400)) + rng.normal(size=(12, 1, 400))  # one shared direction plus noise
    rc = readout_chance(v, ["a"] * 6 + ["b"] * 6)
    assert rc.accuracy[0] < rc.majority
    assert rc.within_chance[0]
    assert "below always answering the commonest sense" in position_note(rc)


def test_chance_shuffles_are_bounded_for_large_sets():
    rng = np.random.default_rng(2)
    v = rng.normal(size=(500, 9, 16))
    senses = [f"s{i % 5}" for i in range(500)]
    rc = readout_chance(v, senses)
    cost = 9 * 500 * 500 * 5
    assert 20 <= rc.n_permutations < CHANCE_PERMUTATIONS
    assert rc.n_permutations * cost <= CHANCE_BUDGET
    assert rc.shuffled_p95[0] < 0.3  # five senses of 100: chance is about 20 %


def test_pair_ranking_auc_matches_brute_force_and_ignores_scale():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(9, 2, 5))
    senses = ["x", "x", "x", "y", "y", "z", "z", "z", None]
    cos = layer_cosine_matrices(v)
    auc = pair_ranking_auc(cos, senses)
    pairs, same, labelled = pair_kinds(senses)
    for k in range(2):
        vals = cos[k, pairs[:, 0], pairs[:, 1]][labelled]
        assert auc[k] == pytest.approx(_brute_auc(vals, same[labelled]))
    # a monotone rescaling of every cosine (what a shift and stretch does) leaves it unchanged
    np.testing.assert_allclose(pair_ranking_auc(3.0 * cos - 0.5, senses), auc)
    # ties count half
    flat = np.ones((1, 4, 4))
    assert pair_ranking_auc(flat, ["a", "a", "b", "b"])[0] == pytest.approx(0.5)
    assert pair_ranking_auc(cos, ["a"] * 9) is None


def test_layer_list_and_chance_phrase():
    assert layer_list([0]) == "layer 0"
    assert layer_list([0, 3]) == "layers 0 and 3"
    assert layer_list([0, 2, 5]) == "layers 0, 2 and 5"
    rc = ReadoutChance(np.array([0.5, 1.0]), 0.5, np.array([0.4, 0.4]), np.array([0.75, 0.75]), 200, 12)
    assert chance_phrase(rc, 0).endswith("within chance")
    assert chance_phrase(rc, 1).startswith("100% ") and chance_phrase(rc, 1).endswith("above chance")


def test_a_readout_shuffled_labels_also_reach_is_no_separation():
    from lib.stats.chance import verdict_phrase

    # 4 sentences: the real labels read 100 %, and so does the 95th percentile of shuffled ones
    rc = ReadoutChance(np.array([0.25, 1.0]), 0.5, np.array([0.3, 0.6]), np.array([0.5, 1.0]), 200, 4)
    assert verdict_phrase(rc, 0) == "within chance (shuffled labels reach 50%)"
    assert verdict_phrase(rc, 1).startswith("within chance: with so few sentences, shuffled labels are read 100%")
    above = ReadoutChance(np.array([0.9]), 0.5, np.array([0.5]), np.array([0.7]), 200, 12)
    assert verdict_phrase(above, 0) == "above chance (shuffled labels reach 70%)"


def test_the_layer_zero_note_says_what_this_models_layer_zero_holds():
    rc = ReadoutChance(np.array([0.9, 1.0]), 0.5, np.array([0.5, 0.5]), np.array([0.7, 0.7]), 200, 12)
    assert "the word's position in the sentence" in position_note(rc)
    shared = position_note(rc, holds="the word piece's own row", shared=True)
    assert "position" not in shared and "which form of the word it is" in shared
    low = ReadoutChance(np.array([0.4, 1.0]), 0.5, np.array([0.5, 0.5]), np.array([0.7, 0.7]), 200, 12)
    assert position_note(low, holds="the word piece's own row", shared=True).count("only the word piece's own row.") == 1


@pytest.mark.parametrize("preset", ["apple", "bank"])
def test_presets_layer0_readout_against_its_chance_band(encoder, preset):
    """Layer 0 has no context: apple reads 0 % there, inside its chance band; the page must say so."""
    from lib.inputs.presets import preset_by_id

    ss = preset_by_id(preset).sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    senses = [ss.senses[i] for i in tv.kept]
    rc = readout_chance(tv.vectors, senses)
    note = position_note(rc)
    if rc.within_chance[0]:
        assert "within chance" in note
    else:
        assert "so in this set it happens to go with sense" in note
    if preset == "apple":
        assert rc.within_chance[0] and rc.accuracy[0] < rc.majority
    best = int(np.argmax(rc.accuracy))
    assert not rc.within_chance[best]  # the senses are really read somewhere


def test_layers_page_draws_the_chance_band_and_says_where_layer_0_is(encoder):
    import json

    from tests.conftest import ROOT, page_test

    at = page_test(str(ROOT / "pages" / "layers.py"), preset="apple", layers_card_box=True).run()
    assert not at.exception and not at.error
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    readout = next(f for f in figs if any("nearest-centroid" in str(t.get("name", "")) for t in f["data"]))
    assert any("chance band" in str(t.get("name", "")) for t in readout["data"])
    text = "\n".join(m.value for m in [*at.markdown, *at.caption])
    from lib.inputs.presets import preset_by_id

    ss = preset_by_id("apple").sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    rc = readout_chance(with_pooled(tv.vectors), [ss.senses[i] for i in tv.kept])
    assert rc.within_chance[0]
    assert "At the embedding layer the readout (0%) is within chance" in text
    assert f"{rc.at_or_below[0]:.0%} of the shuffles score this low or lower" in text
    card = next(t.value for t in at.table if "on your sentences" in t.value.columns)
    comparison = re.sub(r"\\(.)", r"\1", card.loc["Comparison", "on your sentences"])
    L = tv.vectors.shape[1] - 1
    verdict = "within" if rc.within_chance[L] else "above"
    assert (
        f"Nearest sense average (leave-one-out): {rc.accuracy[L]:.0%} read right at layer {L}, {verdict} chance "
        f"(shuffled labels up to {rc.shuffled_p95[L]:.0%})"
    ) in comparison
    assert "EvidenceCard" not in text
    card = EvidenceCard("apple", "layer 0", "layer 6", (), notes=("readout note",))
    assert "readout note" in card.to_markdown()


def test_apple_layer_0_readout_is_given_with_its_percentile_and_not_called_expected(encoder):
    """apple at layer 0 reads 0 %: within chance, but only a few shuffles score that low. The note gives that
    share (counted here over the same seeded shuffles) and does not call the result expected."""
    from lib.inputs.presets import preset_by_id

    ss = preset_by_id("apple").sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    senses = [ss.senses[i] for i in tv.kept]
    rc = readout_chance(tv.vectors, senses)
    assert rc.accuracy[0] == 0.0 and rc.within_chance[0]
    # the share by hand: the same shuffles (seeded), each scored with leave_one_out_readout
    from lib.stats.readout import leave_one_out_readout

    rng = np.random.default_rng(0)
    idx = leave_one_out_readout(tv.vectors, senses).evaluated
    labels = np.array([senses[i] for i in idx])
    perms = [rng.permutation(labels) for _ in range(rc.n_permutations)]
    scores = []
    for p in perms[:60]:  # the first 60 shuffles, each a full readout by the library's plain path
        lab = list(senses)
        for k, i in enumerate(idx):
            lab[i] = p[k]
        scores.append(leave_one_out_readout(tv.vectors[:, :1], lab).accuracy[0])
    by_hand = np.mean(np.asarray(scores) <= 1e-12)
    assert rc.at_or_below[0] < 0.2 and abs(rc.at_or_below[0] - by_hand) < 0.1
    note = position_note(rc)
    assert f"{rc.at_or_below[0]:.0%} of the shuffles score this low or lower" in note
    assert "as it should be" not in note
