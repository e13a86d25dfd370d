"""The sense readout on real sentences (CoarseWSD-20), through the project's own reader, encoder and maths.

The data lives outside the repository (../shared/data/CoarseWSD-20); where it is absent the real-data
tests skip and say so. The reader's format handling is also checked on a tiny hand-written folder.
"""

import json

import numpy as np
import pytest

from lib.inputs.wsd_data import available_words, default_root, load_split, mark_target, sense_name
from lib.stats.readout import centroid_readout, leave_one_out_readout

ROOT = default_root()
WORDS = ("bank", "apple", "crane")
needs_data = pytest.mark.skipif(
    not all((ROOT / w / "train.data.txt").is_file() for w in WORDS),
    reason=f"CoarseWSD-20 not found at {ROOT} (it is not part of the repository; CI provides it)",
)


# ---------------------------------------------------------------- reader, no model


def test_mark_target_and_sense_name():
    assert mark_target(["the", "bank", "of", "the", "bank"], 4) == "the bank of the [bank]"
    assert mark_target(["a", "[1]", "crane"], 2) == "a (1) [crane]"
    with pytest.raises(ValueError):
        mark_target(["a"], 1)
    assert sense_name("bank", "bank_bank_(geography)") == "bank (geography)"
    assert sense_name("apple", "apple_apple_inc.") == "apple inc."


def test_load_split_on_a_tiny_folder(tmp_path):
    word = tmp_path / "mole"
    word.mkdir()
    (word / "classes_map.txt").write_text(json.dumps({"0": "mole_mole_(animal)", "1": "mole_mole_(unit)"}))
    (word / "train.data.txt").write_text("1\ta mole dug\n3\tone mole is a mole here\n")
    (word / "train.gold.txt").write_text("0\n1")
    s = load_split("mole", "train", root=tmp_path)
    assert s.sentences == ("a [mole] dug", "one mole is [a] mole here")
    assert s.senses == ("mole (animal)", "mole (unit)")
    assert load_split("mole", "train", limit=1, root=tmp_path).positions == (1,)
    assert available_words(tmp_path) == ["mole"]
    with pytest.raises(FileNotFoundError):
        load_split("mole", "test", root=tmp_path)


@needs_data
def test_real_files_put_the_word_in_brackets():
    for w in WORDS:
        s = load_split(w, "test", limit=50)
        assert len(s) == 50
        assert all(f"[{w}]" in x for x in s.sentences)
        assert len(set(s.senses)) <= 2


# ---------------------------------------------------------------- readout with the real model


@pytest.fixture(scope="module")
def wsd_encoder(request):
    """The session's shared encoder when tests/conftest.py provides one, else load the bundled model."""
    try:
        return request.getfixturevalue("encoder")
    except pytest.FixtureLookupError:
        from lib.models.encoder import load_encoder

        return load_encoder()


def _target_vectors(encoder, split, chunk=100):
    """(n, L+1, H) vectors and their senses; encoded in chunks to keep memory small."""
    vectors, senses = [], []
    for start in range(0, len(split), chunk):
        tv = encoder.target_vectors(list(split.sentences[start : start + chunk]), skip_missing=True)
        vectors.append(np.asarray(tv.vectors))
        senses.extend(split.senses[start + k] for k in tv.kept)
    return np.concatenate(vectors), senses


@pytest.fixture(scope="module")
def readouts(wsd_encoder):
    out = {}
    for w in WORDS:
        train, test = load_split(w, "train", limit=200), load_split(w, "test", limit=100)  # enough: crane 0.95 as with 400/200
        xtr, ytr = _target_vectors(wsd_encoder, train)
        xte, yte = _target_vectors(wsd_encoder, test)
        # at most a few sentences may be lost to the length limit
        assert len(ytr) >= 0.95 * len(train) and len(yte) >= 0.95 * len(test)
        out[w] = (centroid_readout(xtr, ytr, xte, yte), leave_one_out_readout(xtr, ytr))
    for w, (r, loo) in out.items():  # shown with -s, and in the report
        print(
            f"\n{w}: train/test {np.round(r.accuracy, 3)} majority {r.majority_baseline:.3f};"
            f" leave-one-out {np.round(loo.accuracy, 3)}"
        )
    return out


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("word", WORDS)
def test_best_layer_reads_out_the_sense(readouts, word):
    r, loo = readouts[word]
    # The embedding layer sees the same word piece everywhere (only its position differs), so it
    # cannot know the sense; context added by the layers should make the senses separable.
    assert r.best_accuracy >= 0.9
    assert r.best_layer > 0
    assert r.best_accuracy >= r.accuracy[0] + 0.2
    assert loo.best_accuracy >= 0.9
    assert loo.best_accuracy >= loo.accuracy[0] + 0.2
