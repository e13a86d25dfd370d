"""lib.board: codes, keys, caps, rate limits, expiry and storage, on SQLite and on a real PostgreSQL cluster."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from lib import board as lb
from lib.board import rules, storage
from lib.board.__main__ import main
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


def test_a_teacher_with_the_right_key_is_never_locked_out(store, clock):
    """Wrong guesses from the teacher's own address (a class behind one school address, or someone forging it)
    lock out codes and wrong keys, never the teacher's right key."""
    new = store.create_board("bank", "money, river")
    for _ in range(lb.MAX_GUESSES):
        with pytest.raises(lb.BoardNotFound):
            store.teacher_board(new.board.code, new.key[:-1] + "?", client="school")
    assert store.teacher_board(new.board.code, new.key, client="school").code == new.board.code
    with pytest.raises(lb.BoardError, match="Too many wrong"):
        store.teacher_board(new.board.code, "wrong", client="school")
    with pytest.raises(lb.BoardError, match="Too many wrong"):
        store.board(new.board.code, client="school")


def test_a_forgers_wrong_codes_count_against_the_forger():
    """A school's students arrive through its proxy's address, with X-Forwarded-For; an outsider forging any
    X-Forwarded-For counts as the outsider's own address, so their ten wrong codes lock out only themselves."""
    school = [lb.client_key({"x-forwarded-for": [f"10.1.0.{i}"]}, "198.51.100.20") for i in range(30)]
    outsider = [lb.client_key({"x-forwarded-for": [f"10.1.0.{i}"]}, "203.0.113.66") for i in range(30)]
    assert set(school) == {"198.51.100.20"} and set(outsider) == {"203.0.113.66"}


def test_student_cookies_are_signed_by_the_server(store):
    secret = store.secret("student-cookie")
    assert len(secret) == 32 and store.secret("student-cookie") == secret
    other = lb.BoardStore(store.url)  # another replica on the same database signs with the same key
    assert other.secret("student-cookie") == secret
    other.dispose()
    a, b = lb.new_student_cookie(secret), lb.new_student_cookie(secret)
    ida, idb = lb.student_from_cookie(secret, a), lb.student_from_cookie(secret, b)
    assert ida and idb and ida != idb and ida == lb.student_from_cookie(secret, a)
    assert a.split(".")[0] not in ida  # the database keeps a hash of the cookie, not the cookie
    student, sig = a.split(".")
    last = "y" if sig.endswith("x") else "x"  # a changed last character (a signature ending in "x" stayed valid)
    for bad in ("", None, student, f"{student}.", f"{student}.{sig[:-1]}{last}", f"{student}x.{sig}", "." + sig,
                f"{student}.{rules._signature(b'another secret' * 3, student)}"):  # fmt: skip
        assert lb.student_from_cookie(secret, bad) == ""


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
    monkeypatch.setattr(storage, "MAX_BOARD_SENTENCES", lb.MAX_STUDENT_SENTENCES + 1)
    store.send(code, "other", "river", "The river bank.")
    with pytest.raises(lb.BoardError, match="full"):
        store.send(code, "third", "river", "The bank of the river.")
    with pytest.raises(lb.BoardError, match="senses offered"):
        store.send(code, "x", "sky", "The bank.")
    with pytest.raises(TargetError):
        store.send(code, "x", "money", "No target here.")


def test_hidden_sentences_free_their_room(store, monkeypatch):
    monkeypatch.setattr(storage, "MAX_BOARD_SENTENCES", 3)
    new = store.create_board("bank", "money, river")
    code = new.board.code
    sent = [store.send(code, f"s{i}", "money", f"Bank {i}.") for i in range(3)]
    with pytest.raises(lb.BoardError, match="full"):
        store.send(code, "s9", "money", "One bank too many.")
    store.hide(code, new.key, [sent[1].id])
    store.send(code, "s9", "money", "Now the bank has room.")
    with pytest.raises(lb.BoardError, match="full"):
        store.send(code, "s10", "money", "And now it is full again at the bank.")


def test_a_flood_hidden_again_and_again_never_kills_the_board(store, clock):
    """1,200 sentences from 300 students, hidden a board-full at a time: each hide deletes the rows, so the
    board keeps taking sentences (it once kept every hidden row and refused all after 1,000)."""
    new = store.create_board("bank", "money, river")
    code = new.board.code
    for i in range(1200):
        if i and i % lb.MAX_BOARD_SENTENCES == 0:
            assert store.hide_waiting(code, new.key) == lb.MAX_BOARD_SENTENCES
        clock.t += 0.05
        store.send(code, f"flood{i % 300}", "money", f"Flood {i} at the bank.")
    assert store.hide_waiting(code, new.key) == lb.MAX_BOARD_SENTENCES
    e = store.send(code, "real", "river", "A real student at the river bank.")
    assert [x.id for x in store.entries(code, new.key)] == [e.id]
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(lb.entries).where(lb.entries.c.board == code)).scalar() == 1
        # what each flood student sent is still counted: 4 each
        tallies = conn.execute(sa.select(lb.senders.c.sent).where(lb.senders.c.board == code)).scalars().all()
    assert sorted(tallies) == [1] + [4] * 300


def test_hiding_gives_no_one_more_sends(store, clock):
    new = store.create_board("bank", "money, river")
    code = new.board.code
    first = [store.send(code, "troll", "money", f"Spam {i} at the bank.") for i in range(lb.MAX_SENDS_PER_MINUTE)]
    store.hide(code, new.key, [e.id for e in first])
    with pytest.raises(lb.BoardError, match="a minute"):  # the minute's four still count
        store.send(code, "troll", "money", "Spam again at the bank.")
    for i in range(lb.MAX_STUDENT_SENTENCES - lb.MAX_SENDS_PER_MINUTE):
        clock.t += 61
        store.send(code, "troll", "money", f"More spam {i} at the bank.")
    assert store.hide_student(code, new.key, store.mine(code, "troll")[0].id) == (
        lb.MAX_STUDENT_SENTENCES - lb.MAX_SENDS_PER_MINUTE
    )
    clock.t += 61
    with pytest.raises(lb.BoardError, match="the most one student can"):
        store.send(code, "troll", "money", "One spam too many at the bank.")
    assert store.mine(code, "troll") == []


def test_hide_student_and_hide_waiting_touch_nothing_else(store):
    new = store.create_board("bank", "money, river")
    other = store.create_board("bank", "money, river")
    code = new.board.code
    a = [store.send(code, "a", "money", f"A {i} bank.") for i in range(3)]
    b = [store.send(code, "b", "river", f"B {i} bank.") for i in range(2)]
    keep = store.send(other.board.code, "a", "money", "Another board's bank.")
    store.accept(code, new.key, [a[0].id, b[0].id])
    assert store.hide_student(code, new.key, a[1].id) == 3  # waiting and accepted alike
    assert [e.id for e in store.entries(code, new.key)] == [b[0].id, b[1].id]
    assert store.hide_waiting(code, new.key) == 1  # the accepted one stays
    assert [e.id for e in store.accepted(code)] == [b[0].id]
    assert [e.id for e in store.entries(other.board.code, other.key)] == [keep.id]
    assert store.hide_student(code, new.key, keep.id) == 0  # another board's sentence names no one here
    with pytest.raises(lb.BoardNotFound):
        store.hide_waiting(code, other.key)


def test_a_paused_board_refuses_sends_until_it_reopens(store):
    new = store.create_board("bank", "money, river")
    code = new.board.code
    assert not store.board(code).paused
    assert store.pause(code, new.key).paused
    with pytest.raises(lb.BoardError, match="paused"):
        store.send(code, "s", "money", "A bank while paused.")
    with pytest.raises(lb.BoardNotFound):
        store.pause(code, "not the key", False)
    assert not store.pause(code, new.key, False).paused
    store.send(code, "s", "money", "A bank once reopened.")


def test_students_without_a_cookie_share_one_allowance_per_address(store, clock):
    """Sessions without the signed cookie from one address (a script opening session after session) send at
    most COOKIELESS_SENDS_PER_MINUTE a minute and COOKIELESS_SENTENCES in all, together; another address and
    students with a cookie behind the same address are not held by it."""
    new = store.create_board("bank", "money, river")
    code = new.board.code
    taken = 0
    for minute in range(5):
        for i in range(lb.COOKIELESS_SENDS_PER_MINUTE + 3):
            try:
                store.send(code, f"t-{minute}-{i}", "money", f"Bank {minute} {i}.", address="203.0.113.7")
                taken += 1
            except lb.BoardError as err:
                assert "cookie" in str(err)
        clock.t += 61
    assert taken == lb.COOKIELESS_SENTENCES
    store.send(code, "t-x", "money", "Another address's bank.", address="198.51.100.1")
    for i in range(60):  # a class of 60 with their cookies, behind that first address
        store.send(code, f"c-{i}", "river", f"Student {i} at the river bank.")
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(lb.entries).where(lb.entries.c.board == code)).scalar()
        kept = " ".join(conn.execute(sa.select(lb.senders.c.student).where(lb.senders.c.board == code)).scalars())
    assert stored == lb.COOKIELESS_SENTENCES + 1 + 60
    assert "203.0.113.7" not in kept  # the allowance is kept under a hash, not the address


def test_a_browser_opened_with_the_key_stays_the_teacher(store, clock):
    new = store.create_board("bank", "money, river")
    code = new.board.code
    assert not store.is_teacher(code, "c-projector")
    with pytest.raises(lb.BoardNotFound):
        store.remember_teacher(code, "wrong key", "c-projector")
    store.remember_teacher(code, new.key, "c-projector")
    store.remember_teacher(code, new.key, "c-projector")  # once is enough
    assert store.is_teacher(code.lower(), "c-projector") and not store.is_teacher(code, "c-student")
    who = lb.Teacher(browser="c-projector")
    e = store.send(code, "s", "money", "The bank.")
    assert store.accept(code, who) == 1 and [x.id for x in store.accepted(code)] == [e.id]
    for bad in (lb.Teacher(browser="c-student"), lb.Teacher(), lb.Teacher(key="x", browser="c-student")):
        with pytest.raises(lb.BoardNotFound):
            store.entries(code, bad)
    other = store.create_board("bank", "money, river")  # remembered for one board only
    assert not store.is_teacher(other.board.code, "c-projector")
    for i in range(lb.MAX_TEACHER_BROWSERS):  # the oldest is forgotten past the bound
        clock.t += 1
        store.remember_teacher(code, new.key, f"c-{i}")
    assert not store.is_teacher(code, "c-projector") and store.is_teacher(code, f"c-{lb.MAX_TEACHER_BROWSERS - 1}")
    store.delete_board(code, new.key)
    with store.engine.connect() as conn:
        for table in (lb.teachers, lb.senders):
            assert conn.execute(sa.select(sa.func.count()).select_from(table).where(table.c.board == code)).scalar() == 0


def test_a_version_2_database_is_upgraded_in_place(tmp_path):
    """A board file made before pausing and the senders' tally opens, keeps its boards and can pause them."""
    url = f"sqlite:///{tmp_path / 'v2.sqlite'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE boards (code VARCHAR(6) PRIMARY KEY, key_hash VARCHAR(64) NOT NULL, target VARCHAR(100) "
            "NOT NULL, senses TEXT NOT NULL, prompt TEXT NOT NULL, created_at FLOAT NOT NULL, expires_at FLOAT NOT NULL)"
        )
        conn.exec_driver_sql(
            "INSERT INTO boards VALUES ('K7QF3M', ?, 'bank', 'money\nriver', '', ?, ?)",
            (lb.key_hash("k"), time.time(), time.time() + 3600),
        )
    engine.dispose()
    s = lb.BoardStore(url)
    assert s.board("K7QF3M").senses == ("money", "river") and not s.board("K7QF3M").paused
    assert s.pause("K7QF3M", "k").paused
    s.dispose()


def _at_once(n: int, fn) -> list:
    """Run fn(i) in n threads released together; returns each result or the error it raised."""
    barrier = threading.Barrier(n)
    out: list = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except Exception as err:  # noqa: BLE001 - the test counts which sends were refused and why
            out[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.slow
def test_concurrent_sends_never_overrun_a_cap(store, monkeypatch):
    """Counting and inserting are one step: 12 students sending at once to a board with room for 5 leave 5,
    and one student's 12 tabs sending at once get their 4 a minute, never more."""
    monkeypatch.setattr(storage, "MAX_BOARD_SENTENCES", 5)
    for _ in range(3):
        new = store.create_board("bank", "money, river")
        out = _at_once(12, lambda i, c=new.board.code: store.send(c, f"s{i}", "money", f"Bank {i}."))
        assert sum(isinstance(r, lb.Entry) for r in out) == 5, out
        assert all(isinstance(r, lb.Entry) or "full" in str(r) for r in out), out
        assert len(store.entries(new.board.code, new.key)) == 5
    monkeypatch.setattr(storage, "MAX_BOARD_SENTENCES", 300)
    for _ in range(3):
        new = store.create_board("bank", "money, river")
        out = _at_once(12, lambda i, c=new.board.code: store.send(c, "one", "money", f"Bank {i}."))
        assert sum(isinstance(r, lb.Entry) for r in out) == lb.MAX_SENDS_PER_MINUTE, out
        assert len(store.entries(new.board.code, new.key)) == lb.MAX_SENDS_PER_MINUTE


NEW_STORE = """
import sys
from lib import board as lb
print("ready", flush=True)  # imported: wait for the others
sys.stdin.readline()  # go (every process at once)
try:
    lb.BoardStore(sys.argv[1]).dispose()
except Exception as err:
    print(type(err).__name__, str(err).splitlines()[0])
    sys.exit(1)
print("ok")
"""


def fresh_database(db_url: str, name: str) -> str:
    """A URL for a database nobody has opened yet, on the same server (PostgreSQL) or folder (SQLite)."""
    if db_url.startswith("sqlite"):
        return f"sqlite:///{Path(db_url.removeprefix('sqlite:///')).parent / (name + '.sqlite')}"
    admin = sa.create_engine(lb.engine_url(db_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return db_url.rsplit("/", 1)[0] + "/" + name


@pytest.mark.slow
def test_processes_opening_a_new_database_at_once_share_one_schema(db_url, root):
    """Six processes (replicas starting together) open a database nobody has opened yet at the same moment:
    every one of them starts, and the schema is made once."""
    for attempt in range(2):
        url = fresh_database(db_url, f"race{attempt}")
        procs = [
            subprocess.Popen([sys.executable, "-c", NEW_STORE, url], cwd=root, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(6)
        ]  # fmt: skip
        ready = [p.stdout.readline().strip() for p in procs]  # each has imported SQLAlchemy and lib.board
        assert ready == ["ready"] * len(procs), ready
        for p in procs:  # then all open the new database at the same moment
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate(timeout=120)[0].strip() for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        s = lb.BoardStore(url)
        with s.engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(lb.schema_info)).scalar() == 1
        s.dispose()


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


def test_expired_boards_are_deleted_on_a_schedule(db_url, clock):
    """No one opens or creates a board: the store's own timer deletes the expired one with its sentences."""
    s = lb.BoardStore(db_url, clock=clock)
    old = s.create_board("bank", "money, river", hours=1)
    keep = s.create_board("bank", "money, river", hours=48)
    s.send(old.board.code, "s", "money", "The scheduled bank.")
    clock.t += 3601
    s.start_purging(every=0.05)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with s.engine.connect() as conn:
                codes = set(conn.execute(sa.select(lb.boards.c.code)).scalars())
            if old.board.code not in codes:
                break
            time.sleep(0.05)
    finally:
        s.stop_purging()
    assert old.board.code not in codes and keep.board.code in codes
    with s.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(lb.entries).where(
            lb.entries.c.board == old.board.code)).scalar() == 0  # fmt: skip
    s.dispose()


def test_deleted_sentences_leave_no_trace_in_the_sqlite_file(tmp_path):
    """secure_delete, an emptied write-ahead log and VACUUM: the file and its -wal hold none of the text."""
    url = f"sqlite:///{tmp_path / 'scrub.sqlite'}"
    s = lb.BoardStore(url)
    new = s.create_board("bank", "money, river")
    marker = "Zebrastripedbank marker sentence"
    s.send(new.board.code, "s", "money", f"{marker} bank one.")
    s.send(new.board.code, "t", "river", f"{marker} bank two.")
    files = [tmp_path / "scrub.sqlite", tmp_path / "scrub.sqlite-wal"]
    assert any(marker.encode() in f.read_bytes() for f in files if f.exists())
    s.delete_board(new.board.code, new.key)
    assert not any(marker.encode() in f.read_bytes() for f in files if f.exists())
    s.dispose()


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


def test_command_line_delete_reads_the_key_from_stdin(tmp_path, root):
    """`delete` takes no key on the command line (shell history and `ps` keep it): standard input or a prompt."""
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    s = lb.BoardStore(url)
    a, b = s.create_board("bank", "money, river"), s.create_board("bank", "money, river")
    refused = subprocess.run(
        [sys.executable, "-m", "lib.board", "delete", "--room", a.board.code, "--key", a.key, "--db", url],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode != 0 and s.board(a.board.code).code == a.board.code
    wrong = subprocess.run(
        [sys.executable, "-m", "lib.board", "delete", "--room", a.board.code, "--db", url],
        cwd=root, input="not-the-key\n", capture_output=True, text=True,
    )  # fmt: skip
    assert wrong.returncode == 2 and lb.NOT_FOUND in wrong.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "lib.board", "delete", "--room", a.board.code, "--db", url],
        cwd=root, input=a.key + "\n", capture_output=True, text=True,
    )  # fmt: skip
    assert ok.returncode == 0 and ok.stdout.strip() == f"deleted: {a.board.code}"
    with pytest.raises(lb.BoardNotFound):
        s.board(a.board.code)
    # the whole teacher link, pasted, works too (in-process: the same main)
    assert main(["delete", "--room", b.board.code, "--db", url], stdin=io.StringIO(b.teacher_link)) == 0
    with pytest.raises(lb.BoardNotFound):
        s.board(b.board.code)
    s.dispose()
