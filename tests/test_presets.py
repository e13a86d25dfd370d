"""Presets: enough words, senses and sentences, every target found by the real model's tokenizer."""

import pytest

from lib.inputs.presets import default_preset, load_presets
from lib.inputs.sentences import parse_sentence_set


def test_presets_cover_the_required_words():
    ids = {p.id for p in load_presets()}
    assert len(ids) >= 10
    assert {"bank", "bat", "bass", "apple", "spring", "crane", "mole", "pitcher", "plant", "rock"} <= ids
    assert default_preset().id == "bank"


def test_every_preset_parses_cleanly_with_two_senses():
    for p in load_presets():
        ss = parse_sentence_set(p.text, p.target, preset_id=p.id)
        assert not ss.problems, (p.id, ss.problems)
        assert len(ss) >= 8, p.id
        assert ss.has_senses and len(ss.sense_names) >= 2, p.id
        assert set(ss.sense_names) == {k for k, _ in p.senses}, p.id


def test_bank_has_a_verb_use():
    bank = default_preset()
    verbs = [t for s, t in bank.rows if s == "rely"]
    assert verbs and any("bank on" in t for t in verbs)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_targets_align_to_word_pieces_and_one_preset_splits(encoder):
    split_words = set()
    for p in load_presets():
        tv = encoder.target_vectors(list(p.sentence_set().sentences), p.target)
        assert len(tv.spans) == len(p.rows)
        for span in tv.spans:
            assert span.word.lower() == p.target.lower()
            # The pieces, joined without '##', spell the word.
            assert "".join(x.removeprefix("##") for x in span.pieces) == p.target.lower()
            if span.is_split:
                split_words.add(p.id)
    assert split_words, "at least one preset's target must be split into word pieces"


def test_a_data_preset_is_a_seeded_balanced_sample_of_real_sentences():
    from lib.inputs.presets import (
        DATA_MAX_WORDS,
        DATA_PER_SENSE,
        data_preset_id,
        is_data_preset,
        preset_by_id,
    )
    from lib.inputs.wsd_data import available, load_split

    assert preset_by_id("coarsewsd-nope") is None and preset_by_id("coarsewsd-../bank") is None
    assert is_data_preset("coarsewsd-crane") and not is_data_preset("bank")
    assert all(not is_data_preset(p.id) for p in load_presets())  # not in the sidebar's list of hand-written sets
    if not available("crane"):
        pytest.skip("CoarseWSD-20 is not beside the checkout")
    p = preset_by_id(data_preset_id("crane"))
    assert p.id == "coarsewsd-crane" and p.target == "crane"
    train = load_split("crane", "train")
    pairs = set(zip(train.senses, train.sentences, strict=True))
    assert set(p.rows) <= pairs  # real sentences of the train file, with their senses
    for sense in set(train.senses):
        assert sum(1 for s, _ in p.rows if s == sense) == DATA_PER_SENSE
    assert all(len(text.split(" ")) <= DATA_MAX_WORDS for _, text in p.rows)
    order = [train.sentences.index(t) for _, t in p.rows]
    assert order == sorted(order)  # in the file's order
    ss = p.sentence_set()
    assert len(ss) == len(p.rows) and not ss.problems
