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
from lib.finetune.compare import linear_cka, pooled_vectors
from lib.finetune.cost import memory_estimate, trained_numbers
from lib.finetune.data import FineTuneError, prepare, set_digest, split_set
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


def test_split_is_stratified_seeded_and_covers_the_set():
    s = split_set(BANK.target, BANK.sentences, BANK.senses, heldout=1 / 3, seed=0)
    assert sorted(s.train + s.heldout) == list(range(len(BANK.sentences)))
    assert not set(s.train) & set(s.heldout)
    for sense in set(BANK.senses):
        n = BANK.senses.count(sense)
        held = sum(1 for i in s.heldout if BANK.senses[i] == sense)
        assert held == min(max(1, round(n / 3)), n - 1)  # every sense on both sides
    assert split_set(BANK.target, BANK.sentences, BANK.senses, seed=0) == s
    assert any(split_set(BANK.target, BANK.sentences, BANK.senses, seed=k).heldout != s.heldout for k in range(1, 6))
    listing = s.listing()
    assert [r["sentence"] for r in listing["heldout"]] == [BANK.sentences[i] for i in s.heldout]
    assert s.digest == set_digest(BANK.target, BANK.sentences, BANK.senses)


@pytest.mark.parametrize(
    "senses, says",
    [
        (["a", "a", "a"], "two senses"),
        (["a", "a", "b"], "only one sentence"),
        (["a", None, "b"], "every line"),
    ],
)
def test_split_refuses_what_cannot_be_learnt_and_tested(senses, says):
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


def test_layer_mix_weights_sum_to_one(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "mix", epochs=5, head_lr=1e-2))
    assert run.mix.shape == (7,) and np.all(run.mix >= 0)
    assert run.mix.sum() == pytest.approx(1.0, abs=1e-6)
    assert not np.allclose(run.mix, 1 / 7)  # it learnt a weighting
    assert run.model is None


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


def test_early_stopping_keeps_the_weights_of_least_heldout_loss(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "head", epochs=60, head_lr=0.05, patience=3))
    best = min(run.history, key=lambda e: e.heldout_loss)
    assert run.best_epoch == best.epoch and run.final is best
    assert run.stopped in ("early", "completed")
    # the kept head scores the held-out loss of its epoch (numpy on the same features)
    W, b = run.head
    X = prepared.features[list(prepared.split.heldout), 6]
    logits = X @ W.T + b
    logp = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(1, keepdims=True)
    y = prepared.split.labels[list(prepared.split.heldout)]
    assert -logp[np.arange(len(y)), y].mean() == pytest.approx(best.heldout_loss, rel=1e-4)


def test_the_verdict_states_numbers_that_match_the_predictions(encoder, prepared):
    run = train(encoder, prepared, _recipe(prepared, "head", epochs=20))
    v = verdict(run, 6)
    split, labels = prepared.split, prepared.split.labels
    tr = float(np.mean(run.predictions[list(split.train)] == labels[list(split.train)]))
    ho = float(np.mean(run.predictions[list(split.heldout)] == labels[list(split.heldout)]))
    assert (v.train_acc, v.heldout_acc) == pytest.approx((tr, ho))
    assert f"train {100 * tr:.0f} %, held-out {100 * ho:.0f} %" in v.text
    held = [split.senses[i] for i in split.heldout]
    top = max(sorted(set(split.senses)), key=[split.senses[i] for i in split.train].count)
    assert v.chance == pytest.approx(held.count(top) / len(held))


def test_a_memorised_run_is_called_so_with_remedies(encoder, prepared):
    r = _recipe(prepared, "top-2", epochs=4)
    run = train(encoder, prepared, r, progress=None)
    fake = replace(run, history=(*run.history[:-1], replace(run.history[-1], train_acc=1.0, heldout_acc=0.5)))
    v = verdict(fake, 6)
    assert v.kind == "memorised" and "memorised the training sentences" in v.text
    labels = [m.label for m in v.remedies]
    assert "smaller learning rate" in labels and "freeze more" in labels and "early stopping" in labels
    smaller = next(m for m in v.remedies if m.label == "smaller learning rate").recipe
    assert smaller.lr == pytest.approx(r.lr / 5)
    assert next(m for m in v.remedies if m.label == "freeze more").recipe.method == "top-1"


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
        assert {"train_acc", "heldout_acc", "train_loss", "heldout_loss"} <= set(e)
    assert [row["layer"] for row in out["layers"]] == list(range(7))
    assert all({"layer", "cka", "weight_change"} <= set(row) for row in out["layers"])
    assert out["recipe"] == Recipe.from_key(out["recipe"]).key and len(out["split"]["heldout"]) == 4


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--preset", "nope"], "No preset"),
        (["--method", "top-9"], "1 to 6"),
        (["--text", "/no/such/file", "--target", "bank"], "Could not read"),
        (["--epochs", "0"], "epochs"),
        (["--epochs", "many"], "invalid int"),
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


@pytest.mark.slow
@pytest.mark.skipif(not (WSD / "bank" / "train.data.txt").is_file(), reason=f"CoarseWSD-20 not found at {WSD}")
def test_shuffled_training_labels_are_memorised_but_do_not_carry_over(encoder):
    sentences, senses = _balanced("bank", 30)
    split = split_set("bank", sentences, senses, heldout=1 / 3, seed=0)
    true = prepare(encoder, split, "token")
    rng = np.random.default_rng(0)
    shuffled_senses = list(split.senses)
    train_idx = list(split.train)
    for i, j in zip(train_idx, rng.permutation(train_idx), strict=True):
        shuffled_senses[i] = split.senses[j]
    shuffled_split = replace(split, senses=tuple(shuffled_senses),
                             digest=set_digest("bank", sentences, shuffled_senses))  # fmt: skip
    shuffled = replace(true, split=shuffled_split)
    for prep, name in ((true, "true"), (shuffled, "shuffled")):
        # a head on frozen vectors: 40 points in 384 dimensions can take any labels (the cheapest memoriser)
        r = Recipe.make(prep.split.digest, "head", num_layers=6, epochs=150, head_lr=0.05)
        run = train(encoder, prep, r)
        chance = majority_rate([prep.split.senses[i] for i in prep.split.train], [split.senses[i] for i in split.heldout])
        assert run.final.train_acc >= 0.95, name  # both are learnt
        if name == "true":
            assert run.final.heldout_acc >= 0.9
        else:
            assert abs(run.final.heldout_acc - chance) <= 0.25, (run.final.heldout_acc, chance)
            assert verdict(run, 6).kind == "memorised"
    assert pooled_vectors(true.encoding, true.pool).shape == true.features.shape


def test_scoring_only_at_the_end_trains_the_same_weights(encoder, prepared):
    import torch

    from lib.finetune.train import torch_threads

    r = _recipe(prepared, "head", epochs=4)
    every = train(encoder, prepared, r)
    end = train(encoder, prepared, r, each_epoch=False)
    assert [e.epoch for e in end.history] == [4]
    assert end.final.heldout_loss == every.final.heldout_loss and np.array_equal(end.head[0], every.head[0])
    assert np.array_equal(end.predictions, every.predictions)
    with pytest.raises(FineTuneError, match="Early stopping"):
        train(encoder, prepared, replace(r, patience=2), each_epoch=False)
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_seed_spread_is_the_runs_own_accuracies(encoder, prepared):
    from lib.finetune.seeds import seed_spread

    r = _recipe(prepared, "head", epochs=4, head_lr=5e-3)
    first = train(encoder, prepared, r)
    spread = seed_spread(encoder, prepared, r, (0, 1, 2), done={0: first})
    assert spread.runs[0] is first
    accs = [train(encoder, prepared, r.with_seed(s)).final.heldout_acc for s in (1, 2)]
    assert list(spread.heldout_acc) == [first.final.heldout_acc, *accs]
    assert spread.spread == pytest.approx(max(spread.heldout_acc) - min(spread.heldout_acc))
    assert f"{100 * min(spread.heldout_acc):.0f} %" in spread.text()


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
