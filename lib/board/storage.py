"""The class board's storage: one schema through SQLAlchemy Core, the boards, their sentences and the clients'
wrong guesses, on SQLite by default (``<data folder>/boards.sqlite``; the folder is ``CONTEXT_LENS_DATA``, default
``data/`` beside the code) or on PostgreSQL when ``CONTEXT_LENS_DB`` holds a URL (``postgresql://user@host/db``),
so several replicas of the app share one class. The caps and checks it applies are lib.board.rules'; the package's
docstring says how they protect a class.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from lib.board.rules import (
    ACCEPTED,
    CODE_LENGTH,
    COOKIELESS_SENDS_PER_MINUTE,
    COOKIELESS_SENTENCES,
    GUESS_WINDOW,
    HIDDEN,
    KEY_BYTES,
    MAX_BOARD_SENTENCES,
    MAX_GUESSES,
    MAX_PROMPT_CHARS,
    MAX_SENDS_PER_MINUTE,
    MAX_SENTENCE_CHARS,
    MAX_STUDENT_SENTENCES,
    MAX_TEACHER_BROWSERS,
    NOT_FOUND,
    PAUSED,
    PENDING,
    TOO_MANY_GUESSES,
    BoardError,
    BoardNotFound,
    address_sender,
    board_hours,
    clean_sentence,
    key_hash,
    key_matches,
    new_code,
    normalise_code,
    parse_senses,
    student_link,
    teacher_link,
)
from lib.inputs.sentences import MAX_LABEL_CHARS
from lib.paths import ROOT

__all__ = [  # what lib.board gives its users
    "Board", "BoardStore", "Entry", "NewBoard", "PURGE_EVERY_S", "SCHEMA_VERSION", "Teacher", "boards",
    "default_url", "engine_url", "entries", "guesses", "metadata", "open_store", "schema_info", "senders",
    "settings", "teachers",
]

SCHEMA_VERSION = 3  # 2: the settings table (the key that signs student cookies); 3: teachers, senders, paused_at
PURGE_EVERY_S = 300.0  # how often a running app deletes expired boards
_MIGRATE_LOCK = 0x436C42  # PostgreSQL advisory lock id: one process creates the schema at a time

_log = logging.getLogger(__name__)


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
    sa.Column("paused_at", sa.Float, nullable=True),  # set while the teacher has paused sends
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
senders = sa.Table(  # what each student (or cookieless address) sent to a board, hidden sentences included
    "senders",
    metadata,
    sa.Column("board", sa.String(CODE_LENGTH), sa.ForeignKey("boards.code"), primary_key=True),
    sa.Column("student", sa.String(64), primary_key=True),
    sa.Column("sent", sa.Integer, nullable=False),
    sa.Column("recent", sa.String(200), nullable=False),  # the times of the last few sends, space-separated
)
teachers = sa.Table(  # browsers that opened a board with its key: the hash of their signed cookie
    "teachers",
    metadata,
    sa.Column("board", sa.String(CODE_LENGTH), sa.ForeignKey("boards.code"), primary_key=True),
    sa.Column("browser", sa.String(64), primary_key=True),
    sa.Column("created_at", sa.Float, nullable=False),
)
settings = sa.Table(  # the server's own secrets, shared by every replica of the database (never shown)
    "settings",
    metadata,
    sa.Column("name", sa.String(40), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)
# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Board:
    """A room: its code, the target word, the senses students choose from, the teacher's prompt; ``paused``
    while the teacher has paused sends."""

    code: str
    target: str
    senses: tuple[str, ...]
    prompt: str
    created_at: float
    expires_at: float
    paused: bool = False


@dataclass(frozen=True)
class Teacher:
    """Who moderates: the teacher ``key`` (from the link), or a ``browser`` the board remembers as its teacher's
    (:meth:`BoardStore.remember_teacher`: the student id of its signed cookie). A plain string is a key."""

    key: str = ""
    browser: str = ""


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


# --------------------------------------------------------------------------- where
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
        paused=row.paused_at is not None,
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
        self.sqlite = self.url.startswith("sqlite")
        if self.sqlite:
            self.engine = sa.create_engine(self.url, connect_args={"timeout": 30})
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = sa.create_engine(self.url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        self._secrets: dict[str, bytes] = {}
        self._purging: threading.Event | None = None
        self._hidden = False  # sentences were hidden (deleted) since the file was last compacted
        self.migrate()

    def migrate(self) -> None:
        """Create the tables that are missing and record the schema version (idempotent, safe on replicas).

        One process at a time: PostgreSQL takes an advisory lock for the transaction, SQLite the database's
        write lock (``BEGIN IMMEDIATE``), so two processes opening a new database at once do not both create
        the same table; the second waits, then finds the tables made.
        """
        with self.engine.begin() as conn:
            if self.sqlite:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            elif self.engine.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATE_LOCK})
            metadata.create_all(conn, checkfirst=True)
            if "paused_at" not in {c["name"] for c in sa.inspect(conn).get_columns("boards")}:  # a version-2 file
                conn.exec_driver_sql("ALTER TABLE boards ADD COLUMN paused_at FLOAT")
            have = conn.execute(sa.select(sa.func.max(schema_info.c.version))).scalar()
            if have is None or have < SCHEMA_VERSION:
                conn.execute(schema_info.insert().values(version=SCHEMA_VERSION, applied_at=self.clock()))

    def secret(self, name: str) -> bytes:
        """A 256-bit secret of this database (created on first use, the same for every replica), e.g. the key
        that signs student cookies. Never shown, never exported."""
        if name not in self._secrets:
            with self.engine.begin() as conn:
                value = conn.execute(sa.select(settings.c.value).where(settings.c.name == name)).scalar()
            if value is None:
                try:
                    with self.engine.begin() as conn:
                        conn.execute(settings.insert().values(name=name, value=secrets.token_hex(32)))
                except sa.exc.IntegrityError:  # another process made it first: use theirs
                    pass
                with self.engine.begin() as conn:
                    value = conn.execute(sa.select(settings.c.value).where(settings.c.name == name)).scalar()
            self._secrets[name] = bytes.fromhex(value)
        return self._secrets[name]

    def start_purging(self, every: float = PURGE_EVERY_S) -> None:
        """Delete expired boards every ``every`` seconds in a daemon thread, as long as the process runs (once
        per store; :meth:`stop_purging` ends it). A failed round is logged and the next one tries again."""
        if self._purging is not None:
            return
        stop = self._purging = threading.Event()

        def loop() -> None:
            while not stop.wait(every):
                try:
                    self.purge_expired()
                except Exception:  # a database that is down for a moment: try again next round
                    _log.exception("deleting expired class boards failed")

        threading.Thread(target=loop, name="context-lens-board-purge", daemon=True).start()

    def stop_purging(self) -> None:
        if self._purging is not None:
            self._purging.set()
            self._purging = None

    def dispose(self) -> None:
        self.stop_purging()
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

    def teacher_board(self, code: str, key: str | Teacher, *, client: str = "") -> Board:
        """The board, if ``key`` is its teacher key (or a :class:`Teacher` it knows); otherwise BoardNotFound
        with the missing board's message."""
        return self._open(code, teacher=_teacher(key), client=client)

    def remember_teacher(self, code: str, key: str, browser: str) -> None:
        """Remember ``browser`` (a signed cookie's student id) as the teacher of the board whose key is ``key``:
        a reload, a new tab or ``?presenter=1`` in that browser then opens the teacher's view without the key.
        At most MAX_TEACHER_BROWSERS a board (the oldest forgotten); deleted with the board."""
        board = self.teacher_board(code, key)
        browser = (browser or "")[:64]
        if not browser:
            return
        with self.engine.begin() as conn:
            self._lock(conn, board.code)
            known = conn.execute(
                sa.select(teachers.c.browser).where(teachers.c.board == board.code).order_by(teachers.c.created_at)
            ).scalars().all()
            if browser in known:
                return
            for old in known[: max(0, len(known) - MAX_TEACHER_BROWSERS + 1)]:
                conn.execute(teachers.delete().where(teachers.c.board == board.code, teachers.c.browser == old))
            conn.execute(teachers.insert().values(board=board.code, browser=browser, created_at=self.clock()))

    def is_teacher(self, code: str, browser: str) -> bool:
        """Whether ``browser`` is remembered as the teacher of the live board ``code`` (never counts a guess)."""
        norm, browser = normalise_code(code), (browser or "")[:64]
        if not norm or not browser:
            return False
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(sa.func.count()).select_from(teachers.join(boards, teachers.c.board == boards.c.code))
                .where(teachers.c.board == norm, teachers.c.browser == browser, boards.c.expires_at > self.clock())
            ).scalar() > 0  # fmt: skip

    def accept(self, code: str, key: str | Teacher, ids: Sequence[int] | None = None) -> int:
        """Accept the given pending sentences (all of them when ``ids`` is None); returns how many."""
        board = self.teacher_board(code, key)
        where = [entries.c.board == board.code, entries.c.status == PENDING]
        if ids is not None:
            where.append(entries.c.id.in_([int(i) for i in ids]))
        with self.engine.begin() as conn:
            return conn.execute(entries.update().where(*where).values(status=ACCEPTED)).rowcount

    def hide(self, code: str, key: str | Teacher, ids: Sequence[int]) -> int:
        """Hide sentences (pending or accepted): deleted, so they leave the queue and the charts and free their
        room on the board; their students' sends still count. Returns how many."""
        board = self.teacher_board(code, key)
        return self._hide(entries.c.board == board.code, entries.c.id.in_([int(i) for i in ids]))

    def hide_waiting(self, code: str, key: str | Teacher) -> int:
        """Hide every sentence waiting for the teacher, seen or not (a flood in one click); returns how many."""
        board = self.teacher_board(code, key)
        return self._hide(entries.c.board == board.code, entries.c.status == PENDING)

    def hide_student(self, code: str, key: str | Teacher, entry_id: int) -> int:
        """Hide everything the student who sent sentence ``entry_id`` sent to the board, waiting or accepted."""
        board = self.teacher_board(code, key)
        sender = sa.select(entries.c.student).where(entries.c.board == board.code, entries.c.id == int(entry_id))
        return self._hide(entries.c.board == board.code, entries.c.student == sender.scalar_subquery())

    def pause(self, code: str, key: str | Teacher, paused: bool = True) -> Board:
        """Pause sends to the board (a student's Send is refused with PAUSED until it reopens), or reopen it."""
        board = self.teacher_board(code, key)
        with self.engine.begin() as conn:
            conn.execute(boards.update().where(boards.c.code == board.code)
                         .values(paused_at=self.clock() if paused else None))  # fmt: skip
        return self.board(board.code)

    def _hide(self, *where) -> int:
        with self.engine.begin() as conn:
            n = conn.execute(entries.delete().where(*where)).rowcount
        self._hidden = self._hidden or n > 0  # the next purge empties SQLite's write-ahead log of them
        return n

    def delete_board(self, code: str, key: str | Teacher) -> None:
        """Remove the board and every sentence sent to it, at once."""
        board = self.teacher_board(code, key)
        self._delete(board.code)

    def _delete(self, code: str) -> None:
        with self.engine.begin() as conn:
            for table in (entries, senders, teachers):
                conn.execute(table.delete().where(table.c.board == code))
            conn.execute(boards.delete().where(boards.c.code == code))
        self._scrub()

    def _scrub(self) -> None:
        """After a delete: SQLite has overwritten the rows (``secure_delete``); empty the write-ahead log, which
        still holds the pages as they were, and compact the file. PostgreSQL: VACUUM the tables, so the
        space is reused. Best effort: a busy database is scrubbed at the next purge."""
        self._hidden = False
        try:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                if self.sqlite:
                    conn.exec_driver_sql("VACUUM")
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                elif self.engine.dialect.name == "postgresql":
                    conn.exec_driver_sql("VACUUM entries, boards, senders, teachers")
        except sa.exc.DBAPIError:
            self._hidden = True
            _log.warning("could not compact the class boards' database now; the next purge tries again")

    def entries(self, code: str, key: str | Teacher) -> list[Entry]:
        """Every sentence of the board, oldest first (the teacher's view)."""
        board = self.teacher_board(code, key)
        return self._entries(entries.c.board == board.code)

    def purge_expired(self) -> int:
        """Delete every expired board with its sentences, and guesses older than the window; returns boards.
        Runs when a board is created, on a schedule (:meth:`start_purging`) and from ``python -m lib.board purge``;
        the file is compacted when anything was deleted since the last time (hidden sentences included)."""
        now = self.clock()
        with self.engine.begin() as conn:
            old = sa.select(boards.c.code).where(boards.c.expires_at <= now)
            for table in (entries, senders, teachers):
                conn.execute(table.delete().where(table.c.board.in_(old)))
            n = conn.execute(boards.delete().where(boards.c.expires_at <= now)).rowcount
            conn.execute(guesses.delete().where(guesses.c.at < now - GUESS_WINDOW))
            legacy = conn.execute(entries.delete().where(entries.c.status == HIDDEN)).rowcount  # kept before
        if n or legacy or self._hidden:
            self._scrub()
        return n

    # ----------------------------------------------------------------- students (and anyone with the code)
    def board(self, code: str, *, client: str = "") -> Board:
        """The live board with this code, or BoardNotFound (a wrong guess counts against ``client``)."""
        return self._open(code, client=client)

    def send(self, code: str, student: str, sense: str, sentence: str, *, address: str = "") -> Entry:
        """Store a student's sentence as pending; returns it once committed. Raises BoardError/TargetError.

        ``address``: for a student without a signed cookie, the client (lib.serving.clients.client_key) whose
        allowance every such student from there shares (COOKIELESS_SENTENCES, COOKIELESS_SENDS_PER_MINUTE),
        on top of their own. The caps are counted and the sentence inserted in one transaction that first takes
        the board's row for writing (a no-op UPDATE: PostgreSQL's row lock, SQLite's write lock), so concurrent
        sends to one board count one after another and none overruns a cap.
        """
        board = self.board(code)
        if board.paused:
            raise BoardError(PAUSED)
        if sense not in board.senses:
            raise BoardError("Choose one of the senses offered.")
        clean = clean_sentence(sentence, board.target)
        student = (student or "")[:64]
        now = self.clock()
        with self.engine.begin() as conn:
            row = self._lock(conn, board.code)
            if row.paused_at is not None:  # paused a moment ago
                raise BoardError(PAUSED)
            shown = conn.execute(
                sa.select(sa.func.count()).where(entries.c.board == board.code, entries.c.status != HIDDEN)
            ).scalar()
            if shown >= MAX_BOARD_SENTENCES:
                raise BoardError(f"This board is full ({MAX_BOARD_SENTENCES} sentences). Thank you!")
            tallies = [(student, MAX_STUDENT_SENTENCES, MAX_SENDS_PER_MINUTE, "student")]
            if address:
                tallies.append((address_sender(address), COOKIELESS_SENTENCES, COOKIELESS_SENDS_PER_MINUTE, "address"))
            updates = [self._tally(conn, board.code, *t, now) for t in tallies]
            new_id = conn.execute(
                entries.insert().values(
                    board=board.code, student=student, sense=sense, sentence=clean, status=PENDING, created_at=now
                )
            ).inserted_primary_key[0]
            for update in updates:
                conn.execute(update)
        return Entry(int(new_id), student, sense, clean, PENDING, now)

    def _tally(self, conn, code: str, who: str, most: int, per_minute: int, kind: str, now: float):
        """The statement that counts one more send by ``who``, or BoardError when ``who`` is at a cap."""
        row = conn.execute(sa.select(senders).where(senders.c.board == code, senders.c.student == who)).first()
        sent = row.sent if row is not None else 0
        recent = [float(t) for t in (row.recent.split() if row is not None else []) if float(t) > now - 60.0]
        if sent >= most:
            raise BoardError(
                f"You have sent {most} sentences, the most one student can." if kind == "student" else
                f"{most} sentences came from here without the board's cookie: allow cookies for this site, then send."
            )  # fmt: skip
        if len(recent) >= per_minute:
            raise BoardError(
                f"At most {per_minute} sentences a minute: wait a little, then send." if kind == "student" else
                "Many sentences come from here without the board's cookie: allow cookies for this site, or wait a minute."
            )  # fmt: skip
        recent = " ".join(f"{t:.3f}" for t in [*recent, now][-per_minute:])
        if row is None:
            return senders.insert().values(board=code, student=who, sent=1, recent=recent)
        return senders.update().where(senders.c.board == code, senders.c.student == who).values(sent=sent + 1, recent=recent)

    def mine(self, code: str, student: str) -> list[Entry]:
        """A student's own sentences on the board, oldest first."""
        board = self.board(code)
        return self._entries(entries.c.board == board.code, entries.c.student == (student or "")[:64])

    def accepted(self, code: str) -> list[Entry]:
        """The accepted sentences, oldest first: what the charts and the class see."""
        board = self.board(code)
        return self._entries(entries.c.board == board.code, entries.c.status == ACCEPTED)

    # ----------------------------------------------------------------- internals
    @staticmethod
    def _lock(conn, code: str):
        """Take the board's row for writing (a no-op UPDATE) and return it; BoardNotFound if it was deleted."""
        locked = conn.execute(boards.update().where(boards.c.code == code).values(expires_at=boards.c.expires_at))
        row = conn.execute(sa.select(boards).where(boards.c.code == code)).first() if locked.rowcount else None
        if row is None:  # deleted a moment ago
            raise BoardNotFound(NOT_FOUND)
        return row

    def _entries(self, *where) -> list[Entry]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(entries).where(*where, entries.c.status != HIDDEN).order_by(entries.c.id)
            ).all()
        return [_entry(r) for r in rows]

    def _open(self, code: str, *, teacher: Teacher | None = None, client: str = "") -> Board:
        """The live board. A teacher's right key (or remembered browser) always opens it; otherwise a client past
        ``MAX_GUESSES`` wrong guesses in the window is refused, and a wrong code or key counts as one more guess."""
        now = self.clock()
        client = (client or "")[:64]
        norm = normalise_code(code)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(boards).where(boards.c.code == norm)).first() if norm else None
            live = row is not None and row.expires_at > now
            good = True
            if teacher is not None:
                # the key is hashed and compared whether or not the board exists (no timing difference to learn from)
                good = key_matches(teacher.key, row.key_hash if row is not None else "0" * 64) and bool(teacher.key)
                if not good and live and teacher.browser:
                    good = conn.execute(
                        sa.select(sa.func.count()).select_from(teachers)
                        .where(teachers.c.board == row.code, teachers.c.browser == teacher.browser[:64])
                    ).scalar() > 0  # fmt: skip
                if live and good:
                    return _board(row)  # the teacher: never locked out by guesses made from the same address
            if client:
                recent = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(guesses)
                    .where(guesses.c.client == client, guesses.c.at > now - GUESS_WINDOW)
                ).scalar()
                if recent >= MAX_GUESSES:
                    raise BoardError(TOO_MANY_GUESSES)
        if not live or not good:
            if client:
                with self.engine.begin() as conn:
                    conn.execute(guesses.insert().values(client=client, at=now))
            if row is not None and row.expires_at <= now:
                self._delete(row.code)
            raise BoardNotFound(NOT_FOUND)
        return _board(row)


def _teacher(key: str | Teacher) -> Teacher:
    return key if isinstance(key, Teacher) else Teacher(key=key or "")


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """WAL: readers (every teacher's refresh) never wait for a writer (a student's send); wait, don't fail;
    a deleted row is overwritten with zeros, not left in the file (secure_delete)."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA secure_delete=ON")
    cur.close()


def open_store(url: str | None = None) -> BoardStore:
    """The store at ``url``, else at :func:`default_url`."""
    return BoardStore(url or default_url())

