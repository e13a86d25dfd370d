"""The live class board: a teacher opens a room, students send sentences, the teacher accepts them.

Plain Python (no Streamlit): the schema, room codes, teacher keys, rate limits and caps, and the storage.
One schema through SQLAlchemy Core, on SQLite by default (``<data folder>/boards.sqlite``; the folder is
``CONTEXT_LENS_DATA``, default ``data/`` beside the code) or on PostgreSQL when ``CONTEXT_LENS_DB`` holds a
URL (``postgresql://user@host/db``), so several replicas of the app share one class.

    store = open_store()                                   # CONTEXT_LENS_DB, else SQLite in the data folder
    room = store.create_board("bank", ["money", "river"])  # NewBoard: .board.code and .key (shown once)
    store.send(room.board.code, student, "river", "We sat on the bank.")   # committed, then returned
    store.accept(room.board.code, room.key)                # every pending sentence
    store.accepted(room.board.code)                        # what the charts show

Security, in one place:
* a room code is 6 characters from 31 that cannot be misread (no 0/O, 1/I/L): 887 million codes, and a
  client gets ``MAX_GUESSES`` wrong codes (or keys) a ``GUESS_WINDOW``, counted in the database, so every
  replica counts the same guesses;
* a teacher key is 128 random bits, stored only as its SHA-256 and compared with ``hmac.compare_digest``;
  it is never part of the student link. A wrong key gets exactly the message of a missing board;
* caps per board (``MAX_BOARD_SENTENCES``), per student (``MAX_STUDENT_SENTENCES``, ``MAX_SENDS_PER_MINUTE``)
  and per sentence (``MAX_SENTENCE_CHARS``); the target word is required as in the sidebar
  (:func:`lib.models.targets.find_target`, bracket marking included);
* a send returns only after its transaction committed; boards expire (``CONTEXT_LENS_BOARD_HOURS``,
  default 24) and :meth:`BoardStore.delete_board` removes a board and its sentences at once.

Command line (before class)::

    python -m lib.board create --target bank --senses "money,river"
    student: /board?room=K7QF3M
    teacher: /board?room=K7QF3M&key=...
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from lib.errors import ContextLensError
from lib.inputs.sentences import MAX_LABEL_CHARS, SEPARATOR
from lib.models.targets import find_target, short
from lib.paths import ROOT

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # 31 characters nobody misreads: no 0/O, 1/I/L
CODE_LENGTH = 6
KEY_BYTES = 16  # 128 random bits per teacher key
MAX_GUESSES = 10  # wrong codes or keys per client per GUESS_WINDOW
GUESS_WINDOW = 60.0  # seconds
MAX_SENTENCE_CHARS = 300
MAX_BOARD_SENTENCES = 300
MAX_STUDENT_SENTENCES = 10
MAX_SENDS_PER_MINUTE = 4
MAX_SENSES = 8
MAX_PROMPT_CHARS = 300
DEFAULT_HOURS = 24.0
SCHEMA_VERSION = 1
PAGE_PATH = "/board"  # the board page's address (app.py: pages/board.py, url path "board")

PENDING, ACCEPTED, HIDDEN = "pending", "accepted", "hidden"
NOT_FOUND = "There is no board with this code (or it has expired). Check the link, or ask your teacher for it."
TOO_MANY_GUESSES = "Too many wrong board codes from here. Wait a minute, then check the link and try again."


class BoardError(ContextLensError):
    """A board problem whose message is meant for the teacher or student (safe to show as is)."""


class BoardNotFound(BoardError):
    """No such board, an expired one, or a wrong teacher key: one message for all three (nothing to learn)."""


# --------------------------------------------------------------------------- schema
metadata = sa.MetaData()
boards = sa.Table(
    "boards",
    metadata,
    sa.Column("code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("key_hash", sa.String(64), nullable=False),  # SHA-256 of the teacher key, hex
    sa.Column("target", sa.String(100), nullable=False),
    sa.Column("senses", sa.Text, nullable=False),  # one sense a line
    sa.Column("prompt", sa.Text, nullable=False, default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False, index=True),
)
entries = sa.Table(
    "entries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("board", sa.String(CODE_LENGTH), sa.ForeignKey("boards.code"), nullable=False, index=True),
    sa.Column("student", sa.String(64), nullable=False),
    sa.Column("sense", sa.String(MAX_LABEL_CHARS), nullable=False),
    sa.Column("sentence", sa.String(MAX_SENTENCE_CHARS), nullable=False),
    sa.Column("status", sa.String(10), nullable=False, default=PENDING),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("entries_student", "board", "student"),
)
guesses = sa.Table(
    "guesses",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.String(64), nullable=False, index=True),
    sa.Column("at", sa.Float, nullable=False),
)
schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("applied_at", sa.Float, nullable=False),
)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Board:
    """A room: its code, the target word, the senses students choose from, the teacher's prompt."""

    code: str
    target: str
    senses: tuple[str, ...]
    prompt: str
    created_at: float
    expires_at: float


@dataclass(frozen=True)
class NewBoard:
    """A board just created and its teacher key (only its hash is stored: this is the one chance to see it)."""

    board: Board
    key: str

    @property
    def student_link(self) -> str:
        return student_link(self.board.code)

    @property
    def teacher_link(self) -> str:
        return teacher_link(self.board.code, self.key)


@dataclass(frozen=True)
class Entry:
    """One sentence a student sent: ``status`` is PENDING, ACCEPTED or HIDDEN."""

    id: int
    student: str
    sense: str
    sentence: str
    status: str
    created_at: float


def student_link(code: str) -> str:
    """The student link, relative to the app's address (no key in it, ever)."""
    return f"{PAGE_PATH}?room={code}"


def teacher_link(code: str, key: str) -> str:
    return f"{PAGE_PATH}?room={code}&key={key}"


# --------------------------------------------------------------------------- codes, keys, input
def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalise_code(raw: str) -> str:
    """A code as typed ('k7q f3m', 'K7Q-F3M') in its stored form, or '' when it cannot be one."""
    code = "".join(ch for ch in (raw or "").upper() if not ch.isspace() and ch != "-")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return ""
    return code


def key_hash(key: str) -> str:
    return hashlib.sha256((key or "").encode("utf-8", "replace")).hexdigest()


def key_matches(key: str, stored_hash: str) -> bool:
    """Whether ``key`` is the teacher key whose hash is stored; compared in constant time."""
    return hmac.compare_digest(key_hash(key), stored_hash)


def parse_senses(text: str | Sequence[str]) -> tuple[str, ...]:
    """The senses a board offers, from 'money, river, other' (or a list): trimmed, distinct, in order.

    Raises BoardError unless there are 2 to MAX_SENSES senses of at most MAX_LABEL_CHARS characters each.
    """
    parts = text.split(",") if isinstance(text, str) else list(text)
    senses = tuple(dict.fromkeys(" ".join(str(p).split()) for p in parts if str(p).strip()))
    if not 2 <= len(senses) <= MAX_SENSES:
        raise BoardError(f"Give 2 to {MAX_SENSES} senses, separated by commas, e.g. “money, river, other”.")
    for s in senses:
        if len(s) > MAX_LABEL_CHARS or SEPARATOR in s:
            raise BoardError(
                f"The sense “{short(s, 40)}” is too long or has a “{SEPARATOR}”: keep each sense under "
                f"{MAX_LABEL_CHARS} characters, without “{SEPARATOR}”."
            )
    return senses


def clean_sentence(text: str, target: str) -> str:
    """A student's sentence ready to store: one line, checked like a line of the sidebar.

    Raises BoardError (empty, too long, a '|' or a leading '#' that the sentence format reserves) or
    lib.models.targets.TargetError (no target word, or bad [bracket] marking), each saying what to do.
    """
    sentence = " ".join((text or "").split())
    if not sentence:
        raise BoardError("Type a sentence first.")
    if len(sentence) > MAX_SENTENCE_CHARS:
        raise BoardError(
            f"Your sentence has {len(sentence)} characters; keep it to {MAX_SENTENCE_CHARS} or fewer."
        )
    if SEPARATOR in sentence or sentence.startswith("#"):
        raise BoardError(f"Leave out “{SEPARATOR}” and a leading “#”: write just the sentence.")
    find_target(sentence, target)  # TargetError: the sidebar's own message
    return sentence


def board_hours() -> float:
    """How long a board lives: ``CONTEXT_LENS_BOARD_HOURS`` (default 24)."""
    try:
        hours = float(os.environ.get("CONTEXT_LENS_BOARD_HOURS", DEFAULT_HOURS))
    except ValueError:
        return DEFAULT_HOURS
    return hours if hours > 0 else DEFAULT_HOURS


def default_url() -> str:
    """``CONTEXT_LENS_DB``, else SQLite in the data folder (``CONTEXT_LENS_DATA``, default ``data/``)."""
    url = os.environ.get("CONTEXT_LENS_DB", "").strip()
    if url:
        return url
    folder = Path(os.environ.get("CONTEXT_LENS_DATA", "") or ROOT / "data")
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'boards.sqlite'}"


def engine_url(url: str) -> str:
    """A PostgreSQL URL with the psycopg (3) driver named, as SQLAlchemy wants it; others unchanged."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


# --------------------------------------------------------------------------- storage
def _board(row) -> Board:
    return Board(
        code=row.code,
        target=row.target,
        senses=tuple(row.senses.split("\n")),
        prompt=row.prompt or "",
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


def _entry(row) -> Entry:
    return Entry(row.id, row.student, row.sense, row.sentence, row.status, row.created_at)


class BoardStore:
    """Every board of the app in one database (SQLite or PostgreSQL), schema created on first use.

    ``clock`` gives the time in seconds (tests move it on to check expiry and rate limits).
    """

    def __init__(self, url: str, *, clock: Callable[[], float] = time.time) -> None:
        self.url = engine_url(url)
        self.clock = clock
        if self.url.startswith("sqlite"):
            self.engine = sa.create_engine(self.url, connect_args={"timeout": 30})
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = sa.create_engine(self.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        self.migrate()

    def migrate(self) -> None:
        """Create the tables that are missing and record the schema version (idempotent, safe on replicas)."""
        with self.engine.begin() as conn:
            metadata.create_all(conn, checkfirst=True)
            have = conn.execute(sa.select(sa.func.max(schema_info.c.version))).scalar()
            if have is None or have < SCHEMA_VERSION:
                conn.execute(schema_info.insert().values(version=SCHEMA_VERSION, applied_at=self.clock()))

    def dispose(self) -> None:
        self.engine.dispose()

    # ----------------------------------------------------------------- teacher
    def create_board(
        self, target: str, senses: str | Sequence[str], prompt: str = "", *, hours: float | None = None
    ) -> NewBoard:
        """A new board with a fresh code and key. Raises BoardError for a bad target, senses or prompt."""
        target = " ".join((target or "").split())
        if not target or len(target) > 100 or any(ch in target for ch in "[]|"):
            raise BoardError("Give the target word (up to 100 characters, without brackets or “|”), e.g. “bank”.")
        sense_list = parse_senses(senses)
        prompt = (prompt or "").strip()
        if len(prompt) > MAX_PROMPT_CHARS:
            raise BoardError(f"Keep the prompt to {MAX_PROMPT_CHARS} characters.")
        now = self.clock()
        expires = now + 3600.0 * (hours if hours is not None and hours > 0 else board_hours())
        key = secrets.token_urlsafe(KEY_BYTES)
        self.purge_expired()
        for _ in range(8):  # a clash among 887 million codes is rare; try another
            code = new_code()
            try:
                with self.engine.begin() as conn:
                    conn.execute(
                        boards.insert().values(
                            code=code,
                            key_hash=key_hash(key),
                            target=target,
                            senses="\n".join(sense_list),
                            prompt=prompt,
                            created_at=now,
                            expires_at=expires,
                        )
                    )
            except sa.exc.IntegrityError:
                continue
            return NewBoard(Board(code, target, sense_list, prompt, now, expires), key)
        raise BoardError("Could not find a free board code; try again.")

    def teacher_board(self, code: str, key: str, *, client: str = "") -> Board:
        """The board, if ``key`` is its teacher key; otherwise BoardNotFound with the missing board's message."""
        return self._open(code, key=key, client=client)

    def accept(self, code: str, key: str, ids: Sequence[int] | None = None) -> int:
        """Accept the given pending sentences (all of them when ``ids`` is None); returns how many."""
        return self._moderate(code, key, ids, ACCEPTED, only=PENDING)

    def hide(self, code: str, key: str, ids: Sequence[int]) -> int:
        """Hide sentences (pending or accepted): they leave the queue and the charts; returns how many."""
        return self._moderate(code, key, ids, HIDDEN, only=None)

    def _moderate(self, code: str, key: str, ids, status: str, *, only: str | None) -> int:
        board = self.teacher_board(code, key)
        where = [entries.c.board == board.code]
        if ids is not None:
            where.append(entries.c.id.in_([int(i) for i in ids]))
        if only is not None:
            where.append(entries.c.status == only)
        with self.engine.begin() as conn:
            return conn.execute(entries.update().where(*where).values(status=status)).rowcount

    def delete_board(self, code: str, key: str) -> None:
        """Remove the board and every sentence sent to it, at once."""
        board = self.teacher_board(code, key)
        self._delete(board.code)

    def _delete(self, code: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(entries.delete().where(entries.c.board == code))
            conn.execute(boards.delete().where(boards.c.code == code))

    def entries(self, code: str, key: str) -> list[Entry]:
        """Every sentence of the board, oldest first (the teacher's view)."""
        board = self.teacher_board(code, key)
        return self._entries(entries.c.board == board.code)

    def purge_expired(self) -> int:
        """Delete every expired board with its sentences, and guesses older than the window; returns boards."""
        now = self.clock()
        with self.engine.begin() as conn:
            old = sa.select(boards.c.code).where(boards.c.expires_at <= now)
            conn.execute(entries.delete().where(entries.c.board.in_(old)))
            n = conn.execute(boards.delete().where(boards.c.expires_at <= now)).rowcount
            conn.execute(guesses.delete().where(guesses.c.at < now - GUESS_WINDOW))
        return n

    # ----------------------------------------------------------------- students (and anyone with the code)
    def board(self, code: str, *, client: str = "") -> Board:
        """The live board with this code, or BoardNotFound (a wrong guess counts against ``client``)."""
        return self._open(code, client=client)

    def send(self, code: str, student: str, sense: str, sentence: str) -> Entry:
        """Store a student's sentence as pending; returns it once committed. Raises BoardError/TargetError."""
        board = self.board(code)
        if sense not in board.senses:
            raise BoardError("Choose one of the senses offered.")
        clean = clean_sentence(sentence, board.target)
        student = (student or "")[:64]
        now = self.clock()
        with self.engine.begin() as conn:
            total = conn.execute(
                sa.select(sa.func.count()).select_from(entries).where(entries.c.board == board.code)
            ).scalar()
            if total >= MAX_BOARD_SENTENCES:
                raise BoardError(f"This board is full ({MAX_BOARD_SENTENCES} sentences). Thank you!")
            mine = conn.execute(
                sa.select(entries.c.created_at).where(entries.c.board == board.code, entries.c.student == student)
            ).scalars().all()
            if len(mine) >= MAX_STUDENT_SENTENCES:
                raise BoardError(f"You have sent {MAX_STUDENT_SENTENCES} sentences, the most one student can.")
            if sum(1 for t in mine if t > now - 60.0) >= MAX_SENDS_PER_MINUTE:
                raise BoardError(f"At most {MAX_SENDS_PER_MINUTE} sentences a minute: wait a little, then send.")
            new_id = conn.execute(
                entries.insert().values(
                    board=board.code, student=student, sense=sense, sentence=clean, status=PENDING, created_at=now
                )
            ).inserted_primary_key[0]
        return Entry(int(new_id), student, sense, clean, PENDING, now)

    def mine(self, code: str, student: str) -> list[Entry]:
        """A student's own sentences on the board, oldest first."""
        board = self.board(code)
        return self._entries(entries.c.board == board.code, entries.c.student == (student or "")[:64])

    def accepted(self, code: str) -> list[Entry]:
        """The accepted sentences, oldest first: what the charts and the class see."""
        board = self.board(code)
        return self._entries(entries.c.board == board.code, entries.c.status == ACCEPTED)

    # ----------------------------------------------------------------- internals
    def _entries(self, *where) -> list[Entry]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(entries).where(*where).order_by(entries.c.id)).all()
        return [_entry(r) for r in rows]

    def _open(self, code: str, *, key: str | None = None, client: str = "") -> Board:
        now = self.clock()
        client = (client or "")[:64]
        with self.engine.connect() as conn:
            if client:
                recent = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(guesses)
                    .where(guesses.c.client == client, guesses.c.at > now - GUESS_WINDOW)
                ).scalar()
                if recent >= MAX_GUESSES:
                    raise BoardError(TOO_MANY_GUESSES)
            norm = normalise_code(code)
            row = None
            if norm:
                row = conn.execute(sa.select(boards).where(boards.c.code == norm)).first()
        # the key is hashed and compared whether or not the board exists (no timing difference to learn from)
        good_key = key is None or key_matches(key, row.key_hash if row is not None else "0" * 64)
        if row is None or row.expires_at <= now or not good_key:
            if client:
                with self.engine.begin() as conn:
                    conn.execute(guesses.insert().values(client=client, at=now))
            if row is not None and row.expires_at <= now:
                self._delete(row.code)
            raise BoardNotFound(NOT_FOUND)
        return _board(row)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """WAL: readers (every teacher's refresh) never wait for a writer (a student's send); wait, don't fail."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def open_store(url: str | None = None) -> BoardStore:
    """The store at ``url``, else at :func:`default_url`."""
    return BoardStore(url or default_url())


# --------------------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.board", description="Class boards, from a shell.")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="open a board; prints the student and teacher links")
    create.add_argument("--target", required=True, help="the word the class writes about, e.g. bank")
    create.add_argument("--senses", required=True, help='the senses to choose from, e.g. "money,river,other"')
    create.add_argument("--prompt", default="", help="an optional line shown to the students")
    create.add_argument("--hours", type=float, default=None, help=f"lifetime (default {DEFAULT_HOURS:g} h)")
    create.add_argument("--db", default=None, help="database URL (default: CONTEXT_LENS_DB, else SQLite)")
    delete = sub.add_parser("delete", help="delete a board and its sentences now")
    delete.add_argument("--room", required=True)
    delete.add_argument("--key", required=True)
    delete.add_argument("--db", default=None)
    args = parser.parse_args(argv)
    store = open_store(args.db)
    try:
        if args.command == "create":
            new = store.create_board(args.target, args.senses, args.prompt, hours=args.hours)
            print(f"student: {new.student_link}")
            print(f"teacher: {new.teacher_link}")
        else:
            store.delete_board(args.room, args.key)
            print(f"deleted: {normalise_code(args.room)}")
    except ContextLensError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
