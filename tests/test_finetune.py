"""Fine-tuning (lib/finetune): the split, the recipe, CKA by hand, and training the real bundled model.

Every check compares with an independent computation: the pretrained weights copied before training, a
merged copy of the LoRA model, numpy on the same vectors, the labels counted by hand.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import numpy as np
import pytest

from lib.finetune import backbone
from lib.finetune.compare import cka_floor, linear_cka, pooled_vectors
from lib.finetune.cost import memory_estimate, trained_numbers
from lib.finetune.data import FineTuneError, prepare, set_digest, split_set
from lib.finetune.heads import mix_is_uniform
from lib.finetune.methods import METHODS, parse_method
from lib.finetune.recipe import Recipe, finetuned_key, split_finetuned_key
from lib.finetune.run import prepare_set, run_recipe
from lib.finetune.train import train
from lib.finetune.verdict import majority_rate, near_chance, verdict
from lib.inputs.presets import preset_by_id
from lib.inputs.wsd_data import default_root, load_split
from lib.stats.pooling import sentence_vectors

BANK = preset_by_id("bank").sentence_set()


# ----------------------------------------------------------------------------------- no model


def test_split_is_three_disjoint_stratified_sets_that_cover_the_set():
    s = split_set(BANK.target, BANK.sentences, BANK.senses, heldout=0.5, seed=0)
    parts = (s.train, s.validation, s.test)
    assert sorted(s.train + s.validation + s.test) == list(range(len(BANK.sentences)))
    assert all(not set(a) & set(b) for i, a in enumerate(parts) for b in parts[i + 1 :])  # disjoint
    for sense in set(BANK.senses):
        n = BANK.senses.count(sense)
        held = min(max(2, round(n / 2)), n - 1)
        count = {name: sum(1 for i in idx if BANK.senses[i] == sense) for name, idx in zip("tvs", parts, strict=True)}
        assert count == {"t": n - held, "v": held // 2, "s": held - held // 2}  # every sense in every set
    assert s.heldout == tuple(sorted(s.validation + s.test))
    assert split_set(BANK.target, BANK.sentences, BANK.senses, heldout=0.5, seed=0) == s
    assert any(split_set(BANK.target, BANK.sentences, BANK.senses, heldout=0.5, seed=k).test != s.test for k in range(1, 6))
    listing = s.listing()
    assert list(listing) == ["train", "validation", "test"]
    assert [r["sentence"] for r in listing["test"]] == [BANK.sentences[i] for i in s.test]
    assert [s.part_of(i) for i in s.validation] == ["validation"] * len(s.validation)
    assert s.digest == set_digest(BANK.target, BANK.sentences, BANK.senses)
    # the training set is the one a two-way split of the same share and seed kept: drawn the same way
    rng = np.random.default_rng(0)
    held = set()
    for sense in sorted(set(BANK.senses)):
        idx = np.array([i for i, x in enumerate(BANK.senses) if x == sense])
        held |= {int(i) for i in rng.permutation(idx)[: min(max(2, round(len(idx) / 2)), len(idx) - 1)]}
    assert set(s.train) == set(range(len(BANK.sentences))) - held


@pytest.mark.parametrize(
    "senses, says",
    [
        (["a", "a", "a"], "two senses"),
        (["a", "a", "a", "b"], "only 1 sentence"),
        (["a", "a", "a", "b", "b"], "only 2 sentences"),
        (["a", None, "b"], "every line"),
    ],
)
def test_split_refuses_what_cannot_be_learnt_validated_and_tested(senses, says):
    with pytest.raises(FineTuneError, match=says):
        split_set("bank", ["the bank"] * len(senses), senses)


def test_recipe_key_round_trips_and_names_the_model():
    r = Recipe.make("af8f258ae3", "top-2", num_layers=6, epochs=10, seed=3, patience=2)
    assert Recipe.from_key(r.key) == r
    for method, kw in (("head", {"layer": 4}), ("lora", {"rank": 4}), ("mix", {}), ("full", {"lr": 2e-5})):
        r2 = Recipe.make("af8f258ae3", method, num_layers=6, task="mean", **kw)
        assert Recipe.from_key(r2.key) == r2
    key = finetuned_key("sentence-transformers/all-MiniLM-L6-v2", r)
    assert "#" not in r.key and split_finetuned_key(key) == ("sentence-transformers/all-MiniLM-L6-v2", r)
    assert split_finetuned_key("bert-base-uncased") == ("bert-base-uncased", None)
    assert r.describe(8, "bank") == "fine-tuned on 8 'bank' sentences, top 2 layers, 10 epochs (early stop after 2), seed 3"
    assert r.describe(6, "bank", n_set=12, left_out=True).startswith("fine-tuned on 6 of the 12 'bank' sentences (left out here)")
    control = Recipe.make("af8f258ae3", "top-2", num_layers=6, shuffled=True)
    assert control.key.endswith("_shuffled") and Recipe.from_key(control.key) == control
    assert "with shuffled labels" in control.describe(6, "bank")
    # a key written before the control existed still opens, with true labels
    assert not Recipe.from_key("af8f258ae3_token_top-2_lr5e-05_hlr0.001_e20_p0_b16_s0_h33-0").shuffled
    with pytest.raises(FineTuneError):
        Recipe.from_key("nonsense")
    for bad in ({"epochs": 0}, {"lr": -1.0}, {"seed": 10_000}, {"rank": 0}):
        with pytest.raises(FineTuneError):
            Recipe.make("af8f258ae3", "lora", num_layers=6, **bad)


def test_methods_parse_and_each_is_explained_in_two_sentences():
    assert parse_method("top-2").k == 2 and parse_method("TOP3").name == "top-3"
    with pytest.raises(FineTuneError, match="1 to 6"):
        parse_method("top-7", 6)
    with pytest.raises(FineTuneError, match="not a method"):
        parse_method("freeze")
    for text in METHODS.values():
        assert text.count(". ") + 1 == 2 and text.endswith(".")


def test_linear_cka_by_hand():
    # one dimension each: centred x = (-1, 0, 1), y = (-1, 1, 0); CKA = (x·y)² / (|x|² |y|²) = 1 / 4
    assert linear_cka([[1.0], [2.0], [3.0]], [[1.0], [3.0], [2.0]]) == pytest.approx(0.25)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    assert linear_cka(X, X) == pytest.approx(1.0)
    assert linear_cka(X, 3.0 * X @ Q + 7.0) == pytest.approx(1.0)  # rotation, scale and shift change nothing
    assert linear_cka(X, rng.normal(size=(12, 5))) < 0.9
    assert np.isnan(linear_cka(np.ones((4, 3)), X[:4]))


def test_the_cka_floor_is_the_band_of_random_pairings():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(12, 40)), rng.normal(size=(12, 40))
    lo, hi = cka_floor(X, Y, draws=300, seed=3)
    # by hand: linear CKA of X with Y's rows in random orders, the middle 95 % of it
    values = [linear_cka(X, Y[np.random.default_rng(k).permutation(12)]) for k in range(300)]
    q = np.percentile(values, [2.5, 97.5])
    assert lo == pytest.approx(q[0], abs=0.03) and hi == pytest.approx(q[1], abs=0.03)
    assert 0.3 < lo < hi < 1  # far from 0 at n = 12, d = 40: why a floor is needed
    wide = cka_floor(rng.normal(size=(200, 40)), rng.normal(size=(200, 40)))
    assert wide[1] < lo  # more sentences, a lower floor


def test_near_chance_is_one_standard_deviation_and_at_least_one_sentence():
    assert near_chance(0.5, 4) == pytest.approx(0.25)  # sqrt(.25 / 4) = .25 = one sentence of four
    assert near_chance(0.5, 100) == pytest.approx(0.05)
    assert near_chance(0.9, 100) == pytest.approx(0.03)  # sqrt(.09 / 100) = .03 > 1 / 100


def test_majority_rate_counts_the_commonest_training_sense():
    assert majority_rate(["a", "a", "b"], ["a", "b", "b", "a"]) == 0.5
    assert majority_rate(["b", "a"], ["a", "a", "b"]) == pytest.approx(2 / 3)  # a tie goes to "a"


# ----------------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def prepared(encoder):
    return prepare_set(encoder, BANK, task="token")


def _recipe(prep, method, **kw):
    kw.setdefault("epochs", 3)
    return Recipe.make(prep.split.digest, method, num_layers=6, **kw)


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_the_task_vectors_are_the_apps_own(encoder, prepared):
    tv = encoder.target_vectors(list(BANK.sentences), BANK.target)
    np.testing.assert_allclose(prepared.features, tv.vectors, atol=1e-5)
    cls, mean = sentence_vectors(tv.encoding.hidden_states, tv.encoding.special)
    for task, ref in (("cls", cls), ("mean", mean)):
        p = prepare(encoder, prepared.split, task, vectors=tv)
        np.testing.assert_allclose(p.features, ref, atol=1e-5)


def test_the_top_layers_run_alone_as_in_the_whole_pass(encoder, prepared):
    import torch

    enc = prepared.encoding
    ids, mask = backbone.pad_ids(enc.token_ids, encoder.tokenizer.pad_token_id)
    with torch.no_grad():
        top = backbone.run_top_layers(
            encoder.model, 4, torch.from_numpy(backbone.pad_hidden(enc.hidden_states, 4)), torch.from_numpy(mask)
        ).numpy()
    for i, h in enumerate(enc.hidden_states):
        np.testing.assert_allclose(top[i, : h.shape[1]], h[6], atol=1e-4)


@pytest.mark.slow
def test_top_k_leaves_the_frozen_layers_bit_identical(encoder, prepared):
    before = _state(encoder.model)
    result = run_recipe(encoder, prepared, _recipe(prepared, "top-2", epochs=2, lr=1e-3))
    after_pretrained = encoder.model.state_dict()
    for k, v in before.items():  # the pretrained model itself is untouched
        assert torch_equal(v, after_pretrained[k]), k
    ft = result.run.model.state_dict()
    changed = {k for k, v in before.items() if k in ft and not torch_equal(v, ft[k])}
    for k in before:
        layer = backbone.layer_of(k)
        if layer is not None and layer <= 4:
            assert k not in changed, k  # frozen: the same bits
    assert any(backbone.layer_of(k) == 6 for k in changed) and any(backbone.layer_of(k) == 5 for k in changed)
    wc = result.comparison.weight_change
    assert np.all(wc[:5] == 0.0) and np.all(wc[5:] > 0)
    # the relative change of layer 6, by hand from the two state dicts
    names = [k for k in before if backbone.layer_of(k) == 6]
    d = np.sqrt(sum(float(((ft[k].double() - before[k].double()) ** 2).sum()) for k in names))
    n = np.sqrt(sum(float((before[k].double() ** 2).sum()) for k in names))
    assert wc[6] == pytest.approx(d / n, rel=1e-6)
    # the frozen layers read the same vectors before and after; CKA there is 1
    assert np.array_equal(result.comparison.vectors_before[:, :5], result.comparison.vectors_after[:, :5])
    np.testing.assert_allclose(result.comparison.cka[:5], 1.0, atol=1e-9)
    # the fine-tuned model is an Encoder with the same API, named by its recipe, holding only what changed
    ft_enc = result.encoder
    assert ft_enc.name == finetuned_key(encoder.name, result.recipe)
    assert "top 2 layers, 2 epochs, seed 0" in ft_enc.display_name
    assert ft_enc.target_vectors(list(BANK.sentences[:2]), "bank").vectors.shape == (2, 7, encoder.hidden_size)
    layer_bytes = sum(p.numel() * 4 for k, p in encoder.model.named_parameters() if backbone.layer_of(k) in (5, 6))
    head_bytes = sum(a.nbytes for a in result.run.head)
    assert result.held_bytes == layer_bytes + head_bytes


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


@pytest.mark.slow
def test_lora_merged_into_the_weights_gives_the_adapted_outputs(encoder, prepared):
    import torch

    before = _state(encoder.model)
    run = train(encoder, prepared, _recipe(prepared, "lora", rank=4, epochs=2, lr=5e-3))
    adapted = run.model
    merged = backbone.merge_lora(adapted)
    assert not backbone.adapter_parameters(merged)
    ids, mask = backbone.pad_ids(prepared.encoding.token_ids, encoder.tokenizer.pad_token_id)
    ids, mask = torch.from_numpy(ids), torch.from_numpy(mask)
    with torch.no_grad():
        a = backbone.last_hidden(adapted, ids, mask)
        m = backbone.last_hidden(merged, ids, mask)
        p = backbone.last_hidden(encoder.model, ids, mask)
    real = mask.bool()
    assert torch.allclose(a[real], m[real], atol=1e-4)
    assert not torch.allclose(a[real], p[real], atol=1e-3)  # the adapters did change the outputs
    for k, v in encoder.model.state_dict().items():  # merging a copy left the shared weights alone
        assert torch_equal(v, before[k]), k
    # the adapters are all the adapted model adds
    n_adapters = sum(p.numel() for p in backbone.adapter_parameters(adapted))
    assert backbone.unique_bytes(adapted, encoder.model) == 4 * n_adapters
    assert n_adapters + 384 * 3 + 3 == trained_numbers(encoder, run.recipe, 3) == run.trained_parameters


def test_layer_mix_weights_sum_to_one_and_move_from_uniform(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "mix", epochs=20))
    assert run.mix.shape == (7,) and np.all(run.mix >= 0)
    assert run.mix.sum() == pytest.approx(1.0, abs=1e-6)
    assert run.model is None
    # at its own rate the mix learns a weighting within the page's 20 epochs; at the head's rate it would not
    assert not mix_is_uniform(run.mix), run.mix


def test_mix_is_uniform_by_hand():
    assert mix_is_uniform(np.full(7, 1 / 7))
    assert mix_is_uniform([0.140, 0.146, 0.143, 0.143, 0.143, 0.142, 0.143])  # within 25 % of 1/7
    assert not mix_is_uniform([0.05, 0.05, 0.1, 0.2, 0.3, 0.25, 0.05])


def test_the_same_seed_gives_the_same_weights_and_accuracy(encoder, prepared):
    r = _recipe(prepared, "top-1", epochs=3, lr=1e-3)
    a, b = train(encoder, prepared, r), train(encoder, prepared, r)
    c = train(encoder, prepared, r.with_seed(1))
    assert [e.heldout_acc for e in a.history] == [e.heldout_acc for e in b.history]
    assert [e.heldout_loss for e in a.history] == [e.heldout_loss for e in b.history]
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    assert all(torch_equal(sa[k], sb[k]) for k in sa)
    assert np.array_equal(a.head[0], b.head[0])
    assert not all(torch_equal(sa[k], sc[k]) for k in sa)


def test_progress_every_epoch_and_cancel(encoder, prepared):
    seen = []

    def stop_after_two(rep):
        seen.append(rep.epoch)
        return rep.epoch < 2

    run = train(encoder, prepared, _recipe(prepared, "head", epochs=10), progress=stop_after_two)
    assert seen == [0, 1, 2] and run.stopped == "cancelled" and run.history[-1].epoch == 2
    event = threading.Event()
    event.set()
    run = train(encoder, prepared, _recipe(prepared, "head", epochs=10), cancel=event)
    assert run.stopped == "cancelled" and [e.epoch for e in run.history] == [0]


def test_early_stopping_keeps_the_weights_of_least_validation_loss(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "head", epochs=60, head_lr=0.05, patience=3))
    best = min(run.history, key=lambda e: e.validation_loss)
    assert run.best_epoch == best.epoch and run.final is best
    assert run.stopped in ("early", "completed")
    # the kept head scores the validation loss of its epoch and the test accuracy reported (numpy on the features)
    W, b = run.head
    for idx, loss in ((prepared.split.validation, best.validation_loss), (prepared.split.test, run.test_loss)):
        X = prepared.features[list(idx), 6]
        logits = X @ W.T + b
        logp = logits - logits.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        y = prepared.split.labels[list(idx)]
        assert -logp[np.arange(len(y)), y].mean() == pytest.approx(loss, rel=1e-4)
    X = prepared.features[list(prepared.split.test), 6]
    y = prepared.split.labels[list(prepared.split.test)]
    assert run.test_acc == pytest.approx(float(np.mean((X @ W.T + b).argmax(1) == y)))


def test_the_test_sentences_never_reach_training_or_early_stopping(encoder, prepared):
    """Give every test sentence another sense: the run (its epochs, the epoch it stops at and keeps, its
    weights) is the same, only its one test score moves."""
    split = prepared.split
    labels = list(split.senses)
    names = split.classes
    for i in split.test:
        labels[i] = names[(names.index(labels[i]) + 1) % len(names)]
    other = replace(prepared, split=replace(split, senses=tuple(labels)))
    for method, kw in (("head", {"epochs": 40, "head_lr": 0.05, "patience": 3}), ("top-1", {"epochs": 4, "patience": 2})):
        r = _recipe(prepared, method, **kw)
        a, b = train(encoder, prepared, r), train(encoder, other, r)
        assert [e.as_dict() | {"seconds": 0} for e in a.history] == [e.as_dict() | {"seconds": 0} for e in b.history]
        assert a.best_epoch == b.best_epoch and a.stopped == b.stopped
        assert np.array_equal(a.head[0], b.head[0])
        assert a.test_acc != b.test_acc or a.test_acc == 0.0


def test_the_baseline_is_the_frozen_head_on_the_same_split(encoder, prepared):
    result = run_recipe(encoder, prepared, _recipe(prepared, "head", epochs=3), compare=False)
    base = result.baseline
    assert base.prepared is prepared and base.recipe.digest == prepared.split.digest
    assert base.recipe.method == "head" and base.recipe.layer == 6 and base.model is None
    assert (base.recipe.heldout, base.recipe.split_seed, base.recipe.seed) == (prepared.split.heldout_share * 100, 0, 0)
    W, b = base.head
    test = list(prepared.split.test)
    pred = (prepared.features[test, 6] @ W.T + b).argmax(1)
    assert base.test_acc == pytest.approx(float(np.mean(pred == prepared.split.labels[test])))
    out = result.as_json()
    assert out["baseline"]["method"] == "head" and out["baseline"]["test_acc"] == pytest.approx(base.test_acc, abs=1e-6)
    assert f"The frozen head on the same split scores {100 * base.test_acc:.0f} % on test" in result.verdict.text


def test_cka_of_a_model_with_itself_is_one_and_of_noise_sits_at_the_floor(encoder, prepared):
    from lib.finetune.compare import compare_layers

    same = compare_layers(encoder.model, prepared, None, prepared.encoding, 6)
    np.testing.assert_allclose(same.cka, 1.0, atol=1e-9)
    assert {same.status(k) for k in range(7)} == {"kept"}
    X = prepared.features[:, 6]
    noise = np.random.default_rng(0).normal(size=X.shape)
    lo, hi = cka_floor(X, noise)
    assert lo <= linear_cka(X, noise) <= hi  # noise is where a random pairing is: inside the band
    assert np.all(same.floor_high < 1.0) and np.all(same.floor_low <= same.floor_high)


def test_the_verdict_states_numbers_that_match_the_predictions(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "head", epochs=20))
    v = verdict(run, 6)
    split, labels = prepared.split, prepared.split.labels
    acc = {part: float(np.mean(run.predictions[list(idx)] == labels[list(idx)]))
           for part, idx in (("train", split.train), ("validation", split.validation), ("test", split.test))}  # fmt: skip
    assert (v.train_acc, v.validation_acc, v.test_acc) == pytest.approx((acc["train"], acc["validation"], acc["test"]))
    assert f"Train {100 * acc['train']:.0f} %, validation {100 * acc['validation']:.0f} %, test {100 * acc['test']:.0f} %" in v.text
    test = [split.senses[i] for i in split.test]
    top = max(sorted(set(split.senses)), key=[split.senses[i] for i in split.train].count)
    assert v.chance == pytest.approx(test.count(top) / len(test))
    assert v.comparison is None and "frozen head" not in v.text  # no baseline given, none claimed


def _faked(run, validation_accs, validation_losses, train_acc=1.0):
    """``run`` with its epochs' validation numbers replaced (epoch 1 on), the last one kept."""
    hist = [run.history[0]] + [replace(e, validation_acc=a, validation_loss=loss, train_acc=train_acc)
                               for e, a, loss in zip(run.history[1:], validation_accs, validation_losses, strict=True)]  # fmt: skip
    return replace(run, history=tuple(hist), best_epoch=hist[-1].epoch)


def test_remedies_follow_the_diagnosis_and_read_validation_only(encoder, prepared):
    r = _recipe(prepared, "top-2", epochs=4)
    run = train(encoder, prepared, r)
    chance_v = 1 / 3  # one validation sentence of each of bank's three senses
    # memorised, validation at chance throughout: fewer epochs or smaller steps cannot help
    never = verdict(_faked(run, [chance_v] * 4, [1.1, 1.0, 0.9, 0.8]), 6)
    assert never.kind == "memorised" and "memorised the training sentences" in never.text
    assert [m.label for m in never.remedies] == ["frozen head", "more sentences"]
    head = never.remedies[0].recipe
    assert head.method == "head" and head.layer == 6 and not head.shuffled
    # validation was better at epoch 2 and worse after: stop there, stop early, smaller steps, freeze more
    peaked = verdict(_faked(run, [0.34, 1.0, 0.67, 0.34], [1.0, 0.5, 0.7, 0.9]), 6)
    assert peaked.kind == "memorised"
    labels = [m.label for m in peaked.remedies]
    assert labels[:2] == ["2 epochs", "early stopping"] and "smaller learning rate" in labels and "freeze more" in labels
    assert next(m for m in peaked.remedies if m.label == "smaller learning rate").recipe.lr == pytest.approx(r.lr / 5)
    assert next(m for m in peaked.remedies if m.label == "freeze more").recipe.method == "top-1"
    # the test score is not read: a different test score gives the same remedies
    assert [m.label for m in verdict(replace(_faked(run, [0.34, 1.0, 0.67, 0.34], [1.0, 0.5, 0.7, 0.9]),
                                             test_acc=1.0), 6).remedies] == labels  # fmt: skip
    # underfit
    low = verdict(_faked(run, [0.34] * 4, [1.1] * 4, train_acc=0.5), 6)
    assert low.kind == "underfit" and [m.label for m in low.remedies][:2] == ["more epochs", "larger learning rate"]


def test_the_comparison_with_the_head_needs_every_seed_above_it_by_more_than_the_spread():
    from lib.finetune.verdict import compare_with_head

    beats = compare_with_head([0.9, 0.85, 0.9], [0.75, 0.75, 0.8], [0, 1, 2])
    assert beats.beats and beats.mean == pytest.approx(0.35 / 3)
    assert beats.text().startswith("beats the head by 12 points (seeds 0, 1, 2: +10 points to +15 points")
    within = compare_with_head([0.95, 0.8, 0.9], [0.8, 0.75, 0.8], [0, 1, 2])  # margins 15, 5, 10; spread 15
    assert not within.beats and within.text().startswith("no better than the head")
    one = compare_with_head([0.9], [0.8], [0])
    assert not one.beats and "one seed is an anecdote" in one.text()


def test_memory_estimate_grows_with_what_trains(encoder):
    kw = {"n_sentences": 12, "max_pieces": 20, "total_pieces": 200, "n_classes": 3}
    est = {m: memory_estimate(encoder, Recipe.make("0" * 10, m, num_layers=6), **kw) for m in ("head", "top-2", "lora", "full")}
    assert est["head"] < est["lora"] < est["top-2"] < est["full"]
    params = sum(p.numel() for k, p in encoder.model.named_parameters() if backbone.layer_of(k) is not None)
    assert est["full"] >= 16 * params  # weights, gradients and AdamW's two moments


def test_cli_prints_the_run_as_json(capsys):
    from lib.finetune.__main__ import main

    assert main(["--preset", "bank", "--method", "head", "--epochs", "3", "--seed", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [e["epoch"] for e in out["epochs"]] == [0, 1, 2, 3]
    for e in out["epochs"]:
        assert {"train_acc", "validation_acc", "train_loss", "validation_loss", "heldout_acc", "heldout_loss"} <= set(e)
        assert e["heldout_acc"] == e["validation_acc"]
    assert [row["layer"] for row in out["layers"]] == list(range(7))
    assert all({"layer", "cka", "cka_floor", "weight_change"} <= set(row) for row in out["layers"])
    assert out["recipe"] == Recipe.from_key(out["recipe"]).key
    split = out["split"]
    assert [len(split[k]) for k in ("train", "validation", "test")] == [6, 3, 3]
    texts = [tuple(r["sentence"] for r in split[k]) for k in ("train", "validation", "test")]
    assert sorted(sum(texts, ())) == sorted(BANK.sentences)  # disjoint and complete
    assert out["baseline"]["method"] == "head" and 0.0 <= out["baseline"]["test_acc"] <= 1.0
    assert 0.0 <= out["test_acc"] <= 1.0


@pytest.mark.slow
@pytest.mark.skipif(not (default_root() / "crane" / "train.data.txt").is_file(), reason="CoarseWSD-20 not here")
def test_cli_runs_the_pages_default_task_without_a_set(capsys):
    from lib.finetune.__main__ import main
    from lib.finetune.default_task import WORD, task_preset

    assert main(["--method", "head", "--epochs", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    preset = task_preset()
    assert f"'{WORD}' sentences" in out["name"]
    assert sorted(r["sentence"] for k in ("train", "validation", "test") for r in out["split"][k]) == sorted(
        preset.sentence_set().sentences
    )
    assert len(out["split"]["test"]) >= 20


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--preset", "nope"], "No preset"),
        (["--preset", "bank", "--method", "top-9"], "1 to 6"),
        (["--text", "/no/such/file", "--target", "bank"], "Could not read"),
        (["--preset", "bank", "--epochs", "0"], "epochs"),
        (["--epochs", "many"], "invalid int"),
        (["--preset", "bank", "--model", "no-such-org/no-such-model"], "Could not load the model"),
        (["--preset", "bank", "--model", "not a model name!"], "is not a model id"),
    ],
)
def test_cli_bad_input_is_a_plain_message_and_exit_code_2(argv, says, capsys):
    from lib.finetune.__main__ import main

    with pytest.raises(SystemExit) if "many" in argv else _no_raise():
        code = main(argv)
        assert code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ----------------------------------------------------------------------------------- memorisation, real data

WSD = default_root()


def _balanced(word: str, per_sense: int):
    s = load_split(word, "train")
    out: dict[str, list[str]] = {}
    for sentence, sense in zip(s.sentences, s.senses, strict=True):
        if len(out.setdefault(sense, [])) < per_sense:
            out[sense].append(sentence)
    senses = [k for k in sorted(out) for _ in out[k]]
    return [x for k in sorted(out) for x in out[k]], senses


def test_training_labels_of_the_control_are_the_training_senses_shuffled(prepared):
    from lib.finetune.train import training_labels

    r = _recipe(prepared, "head")
    split = prepared.split
    assert np.array_equal(training_labels(split, r), split.labels)
    shuffled = training_labels(split, replace(r, shuffled=True))
    others = list(split.validation + split.test)
    assert np.array_equal(shuffled[others], split.labels[others])  # validation and test keep their senses
    train = list(split.train)
    assert sorted(shuffled[train]) == sorted(split.labels[train])  # the same counts, other sentences
    assert np.array_equal(training_labels(split, replace(r, shuffled=True)), shuffled)  # seeded


@pytest.mark.slow
@pytest.mark.skipif(not (WSD / "bank" / "train.data.txt").is_file(), reason=f"CoarseWSD-20 not found at {WSD}")
def test_the_random_label_control_memorises_with_test_at_chance_and_says_so(encoder):
    sentences, senses = _balanced("bank", 30)
    split = split_set("bank", sentences, senses, heldout=0.5, seed=0)
    prep = prepare(encoder, split, "token")
    for shuffled in (False, True):
        # a head on frozen vectors: 30 points in 384 dimensions can take any labels (the cheapest memoriser)
        r = Recipe.make(split.digest, "head", num_layers=6, epochs=150, head_lr=0.05, shuffled=shuffled)
        result = run_recipe(encoder, prep, r, compare=False)
        run, v = result.run, result.verdict
        assert run.final.train_acc >= 0.9, shuffled  # both are learnt
        if not shuffled:
            assert run.test_acc >= 0.8
            continue
        assert abs(run.test_acc - v.chance) <= near_chance(v.chance, len(split.test)) + 2 / len(split.test), (
            run.test_acc, v.chance)  # fmt: skip
        assert v.kind == "memorised" and "labels were shuffled" in v.text and "what memorising looks like" in v.text
        assert [m.label for m in v.remedies] == ["true labels"] and not v.remedies[0].recipe.shuffled
    assert pooled_vectors(prep.encoding, prep.pool).shape == prep.features.shape


def test_scoring_only_at_the_end_trains_the_same_weights(encoder, prepared):
    import torch

    from lib.finetune.train import torch_threads

    r = _recipe(prepared, "head", epochs=4)
    every = train(encoder, prepared, r)
    end = train(encoder, prepared, r, each_epoch=False)
    assert [e.epoch for e in end.history] == [4]
    assert end.final.validation_loss == every.final.validation_loss and np.array_equal(end.head[0], every.head[0])
    assert end.test_acc == every.test_acc
    assert np.array_equal(end.predictions, every.predictions)
    with pytest.raises(FineTuneError, match="Early stopping"):
        train(encoder, prepared, replace(r, patience=2), each_epoch=False)
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_seed_spread_is_the_runs_own_accuracies(encoder, prepared):
    from lib.finetune.baseline import baseline_recipe
    from lib.finetune.seeds import seed_spread

    r = _recipe(prepared, "head", epochs=4, head_lr=5e-3)
    first = train(encoder, prepared, r)
    spread = seed_spread(encoder, prepared, r, (0, 1, 2), done={0: first})
    assert spread.runs[0] is first
    accs = [train(encoder, prepared, r.with_seed(s)).test_acc for s in (1, 2)]
    assert list(spread.test_acc) == [first.test_acc, *accs]
    heads = [train(encoder, prepared, baseline_recipe(r.with_seed(s), 6)).test_acc for s in (0, 1, 2)]
    assert list(spread.head_test_acc) == heads
    assert spread.spread == pytest.approx(max(spread.test_acc) - min(spread.test_acc))
    assert f"{100 * min(spread.test_acc):.0f} %" in spread.text()


@pytest.mark.slow
def test_trained_numbers_are_the_parameters_that_require_a_gradient(encoder, prepared):
    for method, kw in (("lora", {"rank": 8}), ("top-2", {}), ("full", {}), ("mix", {}), ("head", {})):
        r = _recipe(prepared, method, epochs=1, **kw)
        run = train(encoder, prepared, r)
        expected = trained_numbers(encoder, r, 3)
        assert run.trained_parameters == expected, method
        head = 384 * 3 + 3
        if method == "lora":  # by hand: 6 layers x (query, key, value) x r (in + out)
            assert expected == 6 * 3 * 8 * (384 + 384) + head == 111_747
            assert sum(p.numel() for n, p in run.model.named_parameters() if "lora_" in n) + head == expected
        if method == "top-2":
            own = {id(p) for p in encoder.model.parameters()}
            assert sum(p.numel() for p in run.model.parameters() if id(p) not in own) + head == expected
    assert "few thousand" not in METHODS["lora"]


@pytest.mark.slow
def test_the_decoder_fine_tunes_with_lora_and_its_top_layers(decoder):
    """SmolLM2 fine-tunes: the target read at its last piece, 31 hidden states compared, float32 adapters and
    layers on the bfloat16 model, the fine-tuned model a Decoder that other pages open."""
    import torch

    from lib.finetune.run import finetune
    from lib.models.decoder import Decoder

    ss = BANK
    result = finetune(decoder, ss, "lora", epochs=1, seed=0)
    rows = result.as_json()["layers"]
    assert len(rows) == decoder.num_hidden_states == 31 and [r["layer"] for r in rows] == list(range(31))
    # hidden state 0 is the word piece alone, the same vector in every sentence: CKA and its floor are undefined
    assert rows[0]["cka"] is None and rows[0]["cka_floor"] is None
    assert all(r["cka"] is not None and r["cka_floor"] is not None for r in rows[1:])
    tv = decoder.target_vectors(list(ss.sentences), ss.target)
    np.testing.assert_allclose(result.run.prepared.features, tv.vectors, atol=1e-5)  # the last piece, as every page
    with pytest.raises(FineTuneError, match="left to right"):  # its first token has seen nothing else
        prepare(decoder, result.split, "cls", vectors=tv)
    adapters = [p for n, p in result.run.model.named_parameters() if "lora_" in n]
    assert adapters and all(p.dtype == torch.float32 for p in adapters)
    heads = decoder.num_kv_heads * decoder.head_dim
    by_hand = 30 * 8 * ((576 + 576) + 2 * (576 + heads)) + 576 * 3 + 3
    assert result.run.trained_parameters == by_hand == trained_numbers(decoder, result.recipe, 3)
    assert isinstance(result.encoder, Decoder) and result.encoder.piece_pooling == "last"
    assert result.encoder.target_vectors(list(ss.sentences[:2]), "bank").vectors.shape == (2, 31, 576)
    top = finetune(decoder, ss, "top-2", epochs=1, seed=0, lr=1e-3)
    wc = top.comparison.weight_change
    assert np.all(wc[:29] == 0) and np.all(wc[29:] > 0)
    assert np.array_equal(top.comparison.vectors_before[:, :29], top.comparison.vectors_after[:, :29])
    with pytest.raises(FineTuneError, match="float32"):
        finetune(decoder, ss, "full", epochs=1)


@pytest.mark.slow
def test_cli_fine_tunes_the_decoder_and_prints_its_31_hidden_states(decoder, capsys):
    from lib.finetune.__main__ import main
    from lib.models import DECODER_MODEL

    assert main(["--model", DECODER_MODEL, "--method", "lora", "--preset", "bank", "--epochs", "1"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    table = out.split("layer    CKA")[1].split("\n\n")[0].strip().splitlines()[1:]
    assert [int(line.split()[0]) for line in table] == list(range(31))
    assert table[0].split()[1] == "—"  # hidden state 0: the word piece alone, CKA undefined


def test_a_left_to_right_model_has_no_cls_task():
    from lib.finetune.data import pool_weights

    special = np.array([True, False, False])
    assert pool_weights("cls", 3, special, [1]).tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(FineTuneError, match="left to right"):
        pool_weights("cls", 3, special, [1], causal=True)
    assert pool_weights("token", 3, special, [2], causal=True).tolist() == [0.0, 0.0, 1.0]  # its last piece


def test_a_run_goes_through_the_work_queue_with_its_estimate(encoder, prepared):
    from lib.finetune.cost import run_cost
    from lib.serving.work import WorkQueue

    r = _recipe(prepared, "head", epochs=2)
    cost = run_cost(encoder, prepared, r)
    lengths = [len(t) for t in prepared.encoding.token_ids]
    assert cost == memory_estimate(encoder, r, n_sentences=12, max_pieces=max(lengths), total_pieces=sum(lengths),
                                   n_classes=3)  # fmt: skip
    queue = WorkQueue(2, 10 * cost, cost)
    with queue.job(cost):
        result = run_recipe(encoder, prepared, r)
    assert queue.stats().peak_bytes == cost and result.run.stopped == "completed"
    # identical runs are one key: the same set, settings and seed
    again = Recipe.make(prepared.split.digest, "head", num_layers=6, epochs=2)
    assert finetuned_key(encoder.name, again) == finetuned_key(encoder.name, r)
    assert finetuned_key(encoder.name, again.with_seed(1)) != finetuned_key(encoder.name, r)
