"""lib/inputs/upload.py: CSV/TSV files of `sense, sentence` rows; bad rows listed by line, good rows kept."""

import pytest

from lib.inputs.sentences import MAX_SENTENCES, parse_sentence_set
from lib.inputs.upload import UploadError, parse_upload


def test_csv_with_header_quotes_and_empty_sense():
    data = (
        b"sense,sentence\n"
        b"money,The bank approved the loan.\n"
        b'river,"We sat on the bank, watching boats."\n'
        b",You can bank on it.\n"
    )
    r = parse_upload(data, "bank", "set.csv")
    assert r.rows == (
        ("money", "The bank approved the loan."),
        ("river", "We sat on the bank, watching boats."),
        (None, "You can bank on it."),
    )
    assert r.lines == (2, 3, 4)
    assert r.problems == ()
    assert any("header" in n for n in r.notes)
    assert r.senses == ["money", "river"]


def test_bad_rows_are_listed_with_file_line_numbers_and_good_rows_kept():
    data = (
        b"money,The bank approved the loan.\n"  # 1 good
        b"river,We sat by the water.\n"  # 2 no target
        b"\n"  # 3 blank: skipped
        b"only one column with bank\n"  # 4 one column
        b"river,\n"  # 5 empty sentence
        b'river,"A quoted\nsentence over two lines by the bank."\n'  # 6-7 good, starts on 6
        b"We sat on the river bank and watched the ducks all afternoon,river\n"  # 8 swapped columns
        b"money,Two [marks] in [one] bank sentence.\n"  # 9 bad markup
        b"# a comment\n"  # 10 skipped
        b"rely,They [banked] on it.\n"  # 11 good (bracketed form)
    )
    r = parse_upload(data, "bank", "x.csv")
    assert [s for _, s in r.rows] == [
        "The bank approved the loan.",
        "A quoted sentence over two lines by the bank.",
        "They [banked] on it.",
    ]
    assert r.lines == (1, 6, 11)
    assert [p.line for p in r.problems] == [2, 4, 5, 8, 9]
    msgs = {p.line: p.message for p in r.problems}
    assert "has no “bank”" in msgs[2]
    assert "only one column" in msgs[4]
    assert "empty" in msgs[5]
    assert "first column" in msgs[8]
    assert "brackets" in msgs[9]
    assert str(r.problems[0]).startswith("Line 2:")


def test_unquoted_commas_stay_in_the_sentence():
    r = parse_upload(b"money,The bank, which was old, closed.\n", "bank")
    assert r.rows == (("money", "The bank, which was old, closed."),)


def test_tsv_by_extension_and_by_content():
    data = b"sense\tsentence\nmoney\tThe bank, old and grey, closed.\nriver\tThe bank was muddy.\n"
    for name in ("set.tsv", "upload.txt"):
        r = parse_upload(data, "bank", name)
        assert r.delimiter == "\t"
        assert r.rows[0] == ("money", "The bank, old and grey, closed.")
        assert len(r) == 2


def test_round_trip_through_the_sentence_box_format():
    data = b'money,The bank closed.\nriver,"The bank | shore, muddy."\n,A bank.\n'
    r = parse_upload(data, "bank")
    ss = parse_sentence_set(r.to_text(), "bank")
    assert ss.problems == ()
    assert list(ss.sentences) == [s for _, s in r.rows]
    assert list(ss.senses) == [s for s, _ in r.rows]


def test_unlabelled_sentence_with_a_bar_is_a_bad_row():
    r = parse_upload(b",The bank | shore.\nmoney,The bank.\n", "bank")
    assert [p.line for p in r.problems] == [1] and len(r) == 1


def test_at_most_500_sentences_are_kept():
    data = "".join(f"s{i % 2},Sentence {i} about the bank.\n" for i in range(MAX_SENTENCES + 20)).encode()
    r = parse_upload(data, "bank")
    assert len(r) == MAX_SENTENCES
    assert r.rows[-1][1] == f"Sentence {MAX_SENTENCES - 1} about the bank."
    assert any("20 more" in n for n in r.notes)


def test_utf8_bom_utf16_and_windows_1252():
    text = "sense,sentence\nfood,The crème brûlée by the bank.\n"
    for data in (text.encode("utf-8-sig"), text.encode("utf-16")):
        r = parse_upload(data, "bank")
        assert r.rows == (("food", "The crème brûlée by the bank."),) and not r.notes[1:]
    r = parse_upload(text.encode("cp1252"), "bank")
    assert r.rows == (("food", "The crème brûlée by the bank."),)
    assert any("Windows-1252" in n for n in r.notes)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"  \n\n \t\n", "no text"),
        (b"PK\x03\x04\x14\x00\x06\x00" + bytes(range(256)), "Excel"),
        (b"%PDF-1.7\n%\xe2\xe3", "PDF"),
        (bytes(range(256)) * 4, "binary"),
        (b"\x01\x02\x03\x04hello bank\x05\x06\x07" * 50, "binary"),
        (b"sense,sentence\n", "no sentences"),
        (b"money,No target here.\nriver,None here.\n", "No row of the file could be used"),
    ],
)
def test_unusable_files_give_a_clear_error(data, words):
    with pytest.raises(UploadError, match=words):
        parse_upload(data, "bank", "f.csv")


def test_too_large():
    with pytest.raises(UploadError, match="limit"):
        parse_upload(b"a,b bank\n" * 300_000, "bank")


def test_stray_quote_is_reported_not_raised():
    data = b'money,The bank closed.\nriver,"The bank\x00 was' + b"x" * 10
    with pytest.raises(UploadError):
        parse_upload(data, "bank")  # NUL inside: binary
    data = b'money,The bank closed.\nriver,"The bank was muddy.\n'
    r = parse_upload(data, "bank")
    assert len(r) >= 1
