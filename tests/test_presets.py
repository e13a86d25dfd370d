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
