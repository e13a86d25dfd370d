"""lib/inputs/sentences.py: the text format, labels, line problems, limits and links (no model needed)."""

from __future__ import annotations

import base64
import zlib

import pytest

from lib.inputs.sentences import (
    MAX_LABEL_CHARS,
    MAX_SENTENCES,
    MAX_TEXT_CHARS,
    LineProblem,
    SentenceSet,
    clean_sentences,
    pack_text,
    parse_sentence_set,
    rows_to_text,
    split_label,
    text_from_link,
    unpack_text,
)
from lib.models.targets import TargetError

TEXT = """money | The bank raised its rates.
river | We sat on the river [bank].

# a comment line
You can bank on it.
"""


def test_parse_format_labels_and_comments():
    ss = parse_sentence_set(TEXT, "bank")
    assert isinstance(ss, SentenceSet)
    assert ss.target == "bank"
    assert ss.sentences == (
        "The bank raised its rates.",
        "We sat on the river [bank].",
        "You can bank on it.",
    )
    assert ss.senses == ("money", "river", None)
    assert ss.lines == (1, 2, 5)  # 1-based line numbers, the blank line and the comment counted
    assert ss.problems == ()
    assert len(ss) == 3
    assert ss.sense_names == ["money", "river"]
    assert not ss.has_senses  # one line has no label
    assert any("no sense label" in n for n in ss.notes)
    assert ss.clean_sentences[1] == "We sat on the river bank."


def test_has_senses_needs_every_label_and_two_senses():
    assert parse_sentence_set("a | The bank.\nb | A bank.", "bank").has_senses
    assert not parse_sentence_set("a | The bank.\na | A bank.", "bank").has_senses
    assert not parse_sentence_set("The bank.\nA bank.", "bank").has_senses


def test_labels_are_short_unique_and_without_brackets():
    long = "We sat on the river [bank] and watched the ducks swim by for hours."
    ss = parse_sentence_set(f"{long}\n{long}\nThe bank.", "bank")
    labels = ss.labels
    assert len(labels) == 3 and len(set(labels)) == 3
    assert labels[0].startswith("S1 · ") and labels[2].startswith("S3 · ")
    assert all("[" not in x and "]" not in x for x in labels)
    assert all(len(x) <= len("S3 · ") + 34 for x in labels)
    assert labels[0].endswith("…")


def test_option_label_adds_the_sense_when_there_is_one():
    ss = parse_sentence_set(TEXT, "bank")
    assert ss.option_label(0) == ss.labels[0].replace("S1 · ", "S1 · money · ", 1)  # the sense before the text
    assert ss.option_label(2) == ss.labels[2]  # no sense label on that line


def test_problems_have_line_numbers_and_good_lines_stay():
    text = "\n".join(
        [
            "money | The bank raised its rates.",  # 1 good
            "river | ",  # 2 label, no sentence
            "No target word here.",  # 3 target absent
            "x" * (MAX_LABEL_CHARS + 1) + " | The bank.",  # 4 label too long
            "The [bank and the river.",  # 5 unbalanced brackets
            "The [bank] by the [bank].",  # 6 two spans
            "Empty [] brackets bank.",  # 7 empty brackets
            "river | We sat on the bank.",  # 8 good
        ]
    )
    ss = parse_sentence_set(text, "bank")
    assert ss.lines == (1, 8)
    assert [p.line for p in ss.problems] == [2, 3, 4, 5, 6, 7]
    assert all(isinstance(p, LineProblem) for p in ss.problems)
    msgs = {p.line: str(p) for p in ss.problems}
    assert msgs[2].startswith("Line 2:") and "no sentence" in msgs[2]
    assert "No target word here." in msgs[3]
    assert str(MAX_LABEL_CHARS) in msgs[4]
    assert "unbalanced" in msgs[5]
    assert "2 spans" in msgs[6] or "only one" in msgs[6]
    assert "empty brackets" in msgs[7]


def test_whole_word_case_insensitive_match():
    ss = parse_sentence_set("The BANK opened.\nThe embankment held.\nbankers met.", "bank")
    assert ss.sentences == ("The BANK opened.",)
    assert [p.line for p in ss.problems] == [2, 3]


def test_empty_and_blank_text_give_an_empty_set_without_errors():
    for text in ("", "   \n\n  \t", None):
        ss = parse_sentence_set(text, "bank")
        assert len(ss) == 0 and ss.problems == ()


def test_no_target_needs_brackets():
    ss = parse_sentence_set("We sat on the [bank].\nThe bank opened.", "")
    assert ss.sentences == ("We sat on the [bank].",)
    assert ss.problems[0].line == 2 and "target" in ss.problems[0].message.lower()


def test_target_whitespace_is_normalised():
    ss = parse_sentence_set("The river   bank.", "  river  bank ")
    assert ss.target == "river bank"
    assert len(ss) == 1


def test_more_than_max_sentences_are_cut_with_a_note():
    text = "\n".join(f"Sentence {k} about the bank." for k in range(MAX_SENTENCES + 25))
    ss = parse_sentence_set(text, "bank")
    assert len(ss) == MAX_SENTENCES
    assert any(str(MAX_SENTENCES) in n for n in ss.notes)
    assert ss.sentences[-1] == f"Sentence {MAX_SENTENCES - 1} about the bank."


def test_oversized_text_is_cut_with_a_note():
    line = "The bank " + "x" * 990 + "\n"
    text = line * (MAX_TEXT_CHARS // len(line) + 5)
    ss = parse_sentence_set(text, "bank")
    assert any(f"{MAX_TEXT_CHARS:,}" in n for n in ss.notes)
    assert len(ss) <= MAX_TEXT_CHARS // len(line) + 1


def test_split_label():
    assert split_label("river | We sat on the bank.") == ("river", "We sat on the bank.")
    assert split_label("We sat on the bank.") == (None, "We sat on the bank.")
    assert split_label(" | We sat.") == (None, "We sat.")
    # only the first bar separates the label
    assert split_label("a | b | c") == ("a", "b | c")


def test_to_text_round_trips():
    ss = parse_sentence_set(TEXT, "bank")
    again = parse_sentence_set(ss.to_text(), "bank")
    assert again.sentences == ss.sentences and again.senses == ss.senses
    assert rows_to_text([("a", "x"), (None, "y")]) == "a | x\ny"


@pytest.mark.parametrize(
    "text",
    [
        TEXT,
        "",
        "ünïcødé | Le [bánk] 銀行 🏦 — “quoted”\n" * 3,
        "a | b\n" * 2000,
        "line with = and / and + signs | ?&#%",
    ],
)
def test_pack_unpack_round_trip(text):
    packed = pack_text(text)
    assert all(c.isalnum() or c in "-_" for c in packed)  # URL-safe, no padding
    assert unpack_text(packed) == text


def test_pack_compresses_repetitive_text():
    text = "money | The bank raised its rates.\n" * 200
    assert len(pack_text(text)) < len(text) / 10


@pytest.mark.parametrize(
    "garbled",
    [
        "!!!not base64!!!",
        "abc",  # valid characters, not zlib
        "eJzLSM3JyQ",  # a truncated zlib stream
        base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe\xfa")).decode(),  # not UTF-8
        "%E2%9C%93",
        "é",
    ],
)
def test_unpack_garbled_raises_a_plain_value_error(garbled):
    with pytest.raises(ValueError) as info:
        unpack_text(garbled)
    assert "garbled" in str(info.value)


def test_unpack_refuses_a_decompression_bomb():
    bomb = base64.urlsafe_b64encode(zlib.compress(b"a" * (MAX_TEXT_CHARS * 8), 9)).decode()
    assert len(bomb) < 10_000  # tiny in the URL...
    with pytest.raises(ValueError):
        unpack_text(bomb)  # ...but refused instead of inflating megabytes


def test_unpack_caps_length():
    text = "b" * 1000
    assert unpack_text(pack_text(text), max_chars=100_000) == text
    with pytest.raises(ValueError):
        unpack_text(pack_text("b" * 1000), max_chars=10)


def test_a_link_cut_short_is_refused_not_silently_shortened():
    # chat clients and e-mail often cut long links; a cut link must give the "garbled or cut off" message,
    # never a set that silently lacks its last sentences
    text = "\n".join(
        f"s{k % 3} | Sentence number {k} about the bank, with {k * 7919 % 1000} words." for k in range(20)
    )
    packed = pack_text(text)
    for cut in range(1, len(packed)):
        try:
            got = unpack_text(packed[:cut])
        except ValueError:
            continue
        assert got == text, f"cut at {cut} of {len(packed)} decoded to a shorter text"

def test_clean_sentences_raises_or_drops_a_line_without_the_target():
    lines = ("The [bank] rose.", "No target here.", "We sat by the bank.")
    with pytest.raises(TargetError, match="No target here"):
        clean_sentences(lines, "bank")
    assert clean_sentences(lines, "bank", bad="drop") == ("The bank rose.", "We sat by the bank.")
    assert clean_sentences(lines, "bank", bad="keep") == ("The bank rose.", "No target here.", "We sat by the bank.")
    ss = parse_sentence_set("money | The [bank] rose.\nriver | We sat by the bank.", "bank")
    assert ss.clean_sentences == ["The bank rose.", "We sat by the bank."]


def test_subset_keeps_sentences_senses_and_lines_aligned():
    ss = parse_sentence_set("a | one bank\n# comment\nb | two bank\nthree bank\nc | four bank", "bank")
    sub = ss.subset([3, 1])
    assert sub.sentences == ("four bank", "two bank")
    assert sub.senses == ("c", "b")
    assert sub.lines == (5, 3)
    assert sub.target == ss.target and sub.notes == ss.notes
    assert sub.labels[0].startswith("S1 · four bank")  # labels are renumbered for the subset
    assert ss.subset(range(len(ss))) == ss


def test_text_from_link_reads_packed_and_hand_typed_values():
    text = "money | The bank raised rates.\nriver | We sat on the river bank."
    assert text_from_link(pack_text(text)) == text
    assert text_from_link("I sat by the river bank.") == "I sat by the river bank."
    assert text_from_link("a b\nc bank", max_chars=5) == "a b\nc"
    for garbled in ("%%%garbled%%%", pack_text(text)[:-8], "abc"):  # no white space: not plain text
        with pytest.raises(ValueError) as info:
            text_from_link(garbled)
        assert "garbled" in str(info.value)
