"""The controls for "did training do this?" (lib.models.weights, lib.models.encoder's weights option) on the real model."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lib.inputs.presets import preset_by_id
from lib.models.encoder import (
    DEFAULT_MODEL,
    ModelLoadError,
    load_encoder,
    model_key,
    model_label,
    split_model_key,
)
from lib.models.keys import base_model_id
from lib.serving.hosting import model_allowed
from lib.stats.context import context_use
from tests.conftest import ROOT


def test_shuffled_keys_round_trip():
    key = model_key(None, "shuffled", 5)
    assert key == f"{DEFAULT_MODEL}#shuffled-5"
    assert split_model_key(key) == (DEFAULT_MODEL, "shuffled", 5)
    assert model_key(key) == key  # a key that already names a control keeps it
    assert model_label(key) == f"{DEFAULT_MODEL} (shuffled weights, seed 5)"
    for bad in (f"{DEFAULT_MODEL}#shuffled-x", f"{DEFAULT_MODEL}#shuffled-"):
        with pytest.raises(ModelLoadError):
            split_model_key(bad)
    env = {"CONTEXT_LENS_MODELS": "bert-base-uncased"}
    # a control's key is allowed when its model id is (ui.cache.try_encoder asks about base_model_id(key))
    assert model_allowed(base_model_id("bert-base-uncased#shuffled-3"), env)
    assert not model_allowed(base_model_id("org/x#shuffled-3"), env)


def test_the_finetuned_variant_is_registered_by_the_layer_that_builds_it():
    """lib.models knows no fine-tuning (its keys name the two controls); lib.finetune.model registers
    "<id>#finetuned-<recipe>", and the app's ui package imports it before anything reads a key. A fresh process,
    as the app and a notebook start."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from lib.models.keys import variants\n"
        "print(sorted(v.name for v in variants()))\n"
        "import ui\n"
        "print(sorted(v.name for v in variants()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, check=True, timeout=300
    ).stdout.splitlines()
    assert out == ["['random', 'shuffled']", "['finetuned', 'random', 'shuffled']"]


def test_shuffling_keeps_each_tensors_values_and_moves_them(encoder, shuffled_encoder):
    trained = dict(encoder.model.named_parameters())
    moved = 0
    for name, p in shuffled_encoder.model.named_parameters():
        a, b = trained[name].detach().numpy().ravel(), p.detach().numpy().ravel()
        np.testing.assert_array_equal(np.sort(a), np.sort(b))  # the same numbers, so the same scale
        moved += int(a.size > 1 and not np.array_equal(a, b))
    # every tensor with more than one distinct value moved (the pooler's bias is all zeros)
    assert moved == sum(1 for p in trained.values() if len(np.unique(p.detach().numpy())) > 1)
    assert shuffled_encoder.name == f"{DEFAULT_MODEL}#shuffled-0" and shuffled_encoder.weights == "shuffled"
    assert shuffled_encoder.display_name == f"{DEFAULT_MODEL} (shuffled weights, seed 0)"


def test_shuffled_weights_are_deterministic_per_seed(shuffled_encoder):
    import torch

    state = torch.random.get_rng_state()
    again = load_encoder(f"{DEFAULT_MODEL}#shuffled-0")
    other = load_encoder(None, weights="shuffled", seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)
    s = ["The bank raised its rates.", "We sat on the river bank."]
    v0 = shuffled_encoder.word_vectors(s, "bank")
    np.testing.assert_array_equal(again.word_vectors(s, "bank"), v0)
    assert not np.allclose(other.word_vectors(s, "bank"), v0)


def test_the_shuffled_control_takes_in_context_and_the_initialiser_copy_does_not(
    encoder, shuffled_encoder, random_encoder
):
    """Why the shuffled weights are the control: their attention picks words and a masked word moves the
    target, as in the trained model; BERT's initialiser (std 0.02) spreads attention evenly and barely moves it."""
    bank = preset_by_id("bank").sentence_set()
    sentences = list(bank.sentences)[:4]
    t, s, r = (context_use(e, sentences, "bank") for e in (encoder, shuffled_encoder, random_encoder))
    assert r.entropy.min() > 0.99 and r.shift.max() < 0.005
    assert s.entropy[0] < 0.9 and s.shift.min() > 5 * r.shift.max()
    assert t.shift.min() > s.shift.min()  # the trained model still takes in more
