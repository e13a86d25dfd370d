"""lib.board: codes, keys, caps, rate limits, expiry and storage, on SQLite and on a real PostgreSQL cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sqlalchemy as sa

from lib import board as lb
from lib.models.targets import TargetError


class Clock:
    """A clock the test moves on by hand."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def db_url(board_db_url):
    return board_db_url


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(db_url, clock):
    s = lb.BoardStore(db_url, clock=clock)
    yield s
    s.dispose()


def test_codes_are_short_typeable_and_many():
    codes = {lb.new_code() for _ in range(2000)}
    assert len(codes) == 2000  # no repeats in 2000 draws from 31**6
    assert all(len(c) == lb.CODE_LENGTH and set(c) <= set(lb.CODE_ALPHABET) for c in codes)
    assert not set("01OIL") & set(lb.CODE_ALPHABET)
    assert len(lb.CODE_ALPHABET) ** lb.CODE_LENGTH > 800_000_000
    assert lb.normalise_code(" k7q-f3m ") == "K7QF3M"
    assert lb.normalise_code("K7QF3") == "" and lb.normalise_code("K7QF30") == ""  # short; a zero


def test_keys_compare_by_hash():
    assert lb.key_matches("abc", lb.key_hash("abc"))
    assert not lb.key_matches("abd", lb.key_hash("abc"))
    assert not lb.key_matches("", lb.key_hash("abc"))


def test_senses_and_sentences_are_checked():
    assert lb.parse_senses(" money,  river , other,money ") == ("money", "river", "other")
    for bad in ("money", "", "a|b, c", "x" * 41 + ", y"):
        with pytest.raises(lb.BoardError):
            lb.parse_senses(bad)
    assert lb.clean_sentence("  The  bank\nopened. ", "bank") == "The bank opened."
    assert lb.clean_sentence("They [banked] left.", "bank") == "They [banked] left."
    with pytest.raises(TargetError, match="has no “bank”"):
        lb.clean_sentence("We sat by the river.", "bank")
    with pytest.raises(TargetError, match="brackets"):
        lb.clean_sentence("The [bank is open.", "bank")
    for bad in ("", "   ", "money | the bank", "# the bank", "bank " * 61):
        with pytest.raises(lb.BoardError):
            lb.clean_sentence(bad, "bank")


def test_links_hold_the_key_only_for_the_teacher(store):
    new = store.create_board("bank", "money, river", "Write about a bank.")
    assert new.student_link == f"/board?room={new.board.code}"
    assert new.key not in new.student_link
    assert new.teacher_link == f"/board?room={new.board.code}&key={new.key}"
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(lb.boards.c.key_hash).where(lb.boards.c.code == new.board.code)).scalar()
    assert stored == lb.key_hash(new.key) and new.key not in stored  # only the hash is kept


def test_a_class_round_trip(store):
    new = store.create_board("bank", ["money", "river"])
    code, key = new.board.code, new.key
    sent = [
        store.send(code, f"s{i}", ("money", "river")[i % 2], f"Sentence {i} about the bank.") for i in range(6)
    ]
    assert [e.status for e in store.entries(code, key)] == [lb.PENDING] * 6
    assert store.accepted(code) == []  # nothing reaches the class before the teacher accepts it
    assert store.accept(code, key, [sent[0].id]) == 1
    assert [e.id for e in store.accepted(code)] == [sent[0].id]
    assert store.accept(code, key) == 5  # Accept all: the rest
    assert store.hide(code, key, [sent[2].id]) == 1
    assert [e.id for e in store.accepted(code)] == [e.id for e in sent if e.id != sent[2].id]
    assert [e.sentence for e in store.mine(code, "s3")] == ["Sentence 3 about the bank."]
    # lowercase and dashes as typed still find the board
    assert store.board(code.lower()[:3] + "-" + code.lower()[3:]).code == code


def test_boards_do_not_see_each_other(store):
    a = store.create_board("bank", "money, river")
    b = store.create_board("bank", "money, river")
    store.send(a.board.code, "s1", "money", "The bank is closed.")
    assert store.entries(b.board.code, b.key) == []
    assert store.accept(b.board.code, b.key) == 0
    with pytest.raises(lb.BoardNotFound):  # b's key does not open a
        store.entries(a.board.code, b.key)
    assert len(store.entries(a.board.code, a.key)) == 1


def test_wrong_key_and_missing_board_read_the_same(store):
    new = store.create_board("bank", "money, river")
    messages = []
    for code, key in ((new.board.code, new.key + "x"), (new.board.code, ""), ("ZZZZZZ", new.key), ("nonsense", "k")):
        with pytest.raises(lb.BoardNotFound) as err:
            store.teacher_board(code, key)
        messages.append(str(err.value))
    assert set(messages) == {lb.NOT_FOUND}
    with pytest.raises(lb.BoardNotFound):  # a student cannot moderate: no key, no accept
        store.accept(new.board.code, "")


def test_guesses_are_rate_limited(store, clock):
    new = store.create_board("bank", "money, river")
    for _ in range(lb.MAX_GUESSES):
        with pytest.raises(lb.BoardNotFound):
            store.board(lb.new_code(), client="10.0.0.9")
    with pytest.raises(lb.BoardError, match="Too many wrong board codes"):
        store.board(new.board.code, client="10.0.0.9")  # even the right code, for a while
    assert store.board(new.board.code, client="10.0.0.10").code == new.board.code  # another client is fine
    clock.t += lb.GUESS_WINDOW + 1
    assert store.board(new.board.code, client="10.0.0.9").code == new.board.code


def test_caps_per_student_minute_and_board(store, clock, monkeypatch):
    new = store.create_board("bank", "money, river")
    code = new.board.code
    for i in range(lb.MAX_SENDS_PER_MINUTE):
        store.send(code, "fast", "money", f"Bank {i}.")
    with pytest.raises(lb.BoardError, match="a minute"):
        store.send(code, "fast", "money", "Bank again.")
    clock.t += 61
    store.send(code, "fast", "money", "Bank later.")
    for i in range(lb.MAX_STUDENT_SENTENCES - lb.MAX_SENDS_PER_MINUTE - 1):
        clock.t += 61
        store.send(code, "fast", "money", f"Bank {i} more.")
    clock.t += 61
    with pytest.raises(lb.BoardError, match="the most one student can"):
        store.send(code, "fast", "money", "One bank too many.")
    monkeypatch.setattr(lb, "MAX_BOARD_SENTENCES", lb.MAX_STUDENT_SENTENCES + 1)
    store.send(code, "other", "river", "The river bank.")
    with pytest.raises(lb.BoardError, match="full"):
        store.send(code, "third", "river", "The bank of the river.")
    with pytest.raises(lb.BoardError, match="senses offered"):
        store.send(code, "x", "sky", "The bank.")
    with pytest.raises(TargetError):
        store.send(code, "x", "money", "No target here.")


def test_boards_expire_and_delete_with_their_sentences(store, clock):
    old = store.create_board("bank", "money, river", hours=1)
    keep = store.create_board("bank", "money, river", hours=48)
    store.send(old.board.code, "s", "money", "The bank.")
    clock.t += 3601
    with pytest.raises(lb.BoardNotFound):
        store.board(old.board.code)
    assert store.purge_expired() == 0  # opening it already removed it
    with store.engine.connect() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(lb.entries).where(
            lb.entries.c.board == old.board.code)).scalar()  # fmt: skip
    assert left == 0
    store.send(keep.board.code, "s", "money", "The bank.")
    store.delete_board(keep.board.code, keep.key)
    with pytest.raises(lb.BoardNotFound):
        store.board(keep.board.code)
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(lb.entries).where(
            lb.entries.c.board == keep.board.code)).scalar() == 0  # fmt: skip


def test_default_lifetime_is_configurable(store, monkeypatch):
    monkeypatch.setenv("CONTEXT_LENS_BOARD_HOURS", "2")
    new = store.create_board("bank", "money, river")
    assert new.board.expires_at - new.board.created_at == pytest.approx(7200)
    monkeypatch.setenv("CONTEXT_LENS_BOARD_HOURS", "soon")
    assert lb.board_hours() == lb.DEFAULT_HOURS


def test_a_second_store_on_the_same_database_sees_everything(db_url, clock):
    """A restarted server (or a second replica) opens the same database and finds every board and sentence."""
    first = lb.BoardStore(db_url, clock=clock)
    new = first.create_board("bank", "money, river")
    e = first.send(new.board.code, "s", "river", "The grassy bank.")
    first.accept(new.board.code, new.key)
    first.dispose()
    second = lb.BoardStore(db_url, clock=clock)  # migrate() again: idempotent
    assert [x.id for x in second.accepted(new.board.code)] == [e.id]
    with second.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.max(lb.schema_info.c.version))).scalar() == lb.SCHEMA_VERSION
    second.dispose()


def test_text_is_stored_as_typed(store):
    new = store.create_board("bank", "money, river")
    nasty = "<script>alert(1)</script> the bank's **bold** $x$ =HYPERLINK()"
    store.send(new.board.code, "s", "money", nasty)
    assert store.entries(new.board.code, new.key)[0].sentence == nasty  # escaping is the page's job


def test_command_line_prints_two_links(tmp_path, root):
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    out = subprocess.run(
        [sys.executable, "-m", "lib.board", "create", "--target", "bank", "--senses", "money,river", "--db", url],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert out[0].startswith("student: /board?room=") and "key=" not in out[0]
    code = out[0].split("room=")[1]
    assert out[1].startswith(f"teacher: /board?room={code}&key=")
    key = out[1].split("key=")[1]
    s = lb.BoardStore(url)
    assert s.teacher_board(code, key).senses == ("money", "river")
    s.dispose()
    bad = subprocess.run(
        [sys.executable, "-m", "lib.board", "create", "--target", "bank", "--senses", "money", "--db", url],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "Give 2 to" in bad.stderr and "Traceback" not in bad.stderr
