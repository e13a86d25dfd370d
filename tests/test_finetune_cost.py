"""lib.finetune.cost: what a run holds and how long it takes, checked against the runs themselves and by hand."""

from __future__ import annotations

import pytest

from lib.finetune import cost
from lib.finetune.cost import Pace, memory_estimate, run_cost, run_seconds, trained_numbers
from lib.finetune.recipe import Recipe
from lib.finetune.run import prepare_set
from lib.finetune.train import train
from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import parse_sentence_set


@pytest.fixture(scope="module")
def prepared(encoder):
    p = preset_by_id("bank")
    return prepare_set(encoder, parse_sentence_set(p.text, p.target, preset_id=p.id))


def _recipe(prepared, method, **kw) -> Recipe:
    return Recipe.make(prepared.split.digest, method, num_layers=6, **kw)


@pytest.mark.parametrize("method", ["head", "mix", "top-2", "lora", "full"])
def test_the_numbers_a_run_trains_are_counted_before_it_starts(encoder, prepared, method):
    """trained_numbers (from the model's configuration and parameters) against the run's own count of what its
    optimizer changed; the memory estimate holds at least weights, gradients and AdamW's two moments of them."""
    r = _recipe(prepared, method, epochs=1)
    run = train(encoder, prepared, r)
    classes = len(prepared.split.classes)
    assert trained_numbers(encoder, r, classes) == run.trained_parameters
    assert run_cost(encoder, prepared, r) >= 16 * run.trained_parameters


def test_the_memory_of_training_every_weight_counts_the_optimizers_temporaries(encoder, prepared):
    r = _recipe(prepared, "full")
    n = trained_numbers(encoder, r, len(prepared.split.classes))
    kw = {"n_sentences": 12, "max_pieces": 20, "total_pieces": 200, "n_classes": 3}
    assert memory_estimate(encoder, r, **kw) >= (4 + 4 + 8 + 6) * n  # measured: 497 MB for 22.7 M numbers


def test_an_epoch_of_a_head_costs_its_batches_by_hand(encoder, prepared):
    """A head trains on the pretrained vectors: no model pass, one AdamW step per batch over H × C + C numbers."""
    r = _recipe(prepared, "head", epochs=10)
    est = run_seconds(encoder, prepared, r)
    n_train, classes = len(prepared.split.train), len(prepared.split.classes)
    batches = -(-n_train // r.batch)
    by_hand = batches * ((384 * classes + classes) * cost.STEP_SECONDS_PER_NUMBER + cost.SECONDS_PER_BATCH)
    assert est.per_epoch == pytest.approx(by_hand)


def test_the_top_layers_cost_their_multiply_adds_by_hand(encoder, prepared):
    """top-2: two layers forward and backward (3 passes) over the training pieces, forward over every piece to
    score them, the layers' own parameters (counted here from the state dict) plus 2 n H per piece."""
    r = _recipe(prepared, "top-2", epochs=4)
    est = run_seconds(encoder, prepared, r)
    lengths = [len(t) for t in prepared.encoding.token_ids]
    train_pieces = sum(lengths[i] for i in prepared.split.train)
    state = encoder.model.state_dict()
    per_layer = sum(v.numel() for k, v in state.items() if ".layer.0." in k and "position" not in k)
    macs = per_layer + 2 * (sum(lengths) / len(lengths)) * 384
    flops = (train_pieces * 3 + sum(lengths)) * 2 * macs
    trained = trained_numbers(encoder, r, len(prepared.split.classes))
    batches = -(-len(prepared.split.train) // r.batch)
    by_hand = flops / cost.MACS_PER_SECOND + batches * (trained * cost.STEP_SECONDS_PER_NUMBER + cost.SECONDS_PER_BATCH)
    assert est.per_epoch == pytest.approx(by_hand, rel=1e-6)


def test_the_estimate_grows_with_epochs_and_with_what_trains(encoder, prepared):
    ten, twenty = (run_seconds(encoder, prepared, _recipe(prepared, "lora", epochs=e)) for e in (10, 20))
    assert twenty.seconds - ten.seconds == pytest.approx(10 * ten.per_epoch)
    per = {m: run_seconds(encoder, prepared, _recipe(prepared, m, epochs=5)).per_epoch for m in
           ("head", "top-1", "top-2", "lora", "full")}  # fmt: skip
    assert per["head"] < per["top-1"] < per["top-2"] < per["lora"] < per["full"]


def test_the_pace_is_the_median_of_measured_over_estimated():
    pace = Pace(keep=3)
    assert pace.factor() == 1.0
    for est, measured in ((10, 20), (10, 5), (10, 12), (0.01, 100)):  # the last is too short to count
        pace.record(est, measured)
    assert pace.factor() == pytest.approx(1.2)
    pace.record(10, 30)  # the oldest of the three kept goes
    assert pace.factor() == pytest.approx(1.2)
    pace.record(10, 40)
    assert pace.factor() == pytest.approx(3.0)
