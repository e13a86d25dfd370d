"""The class board's rules, with no database: room codes and teacher keys, the caps and the messages, the links,
the checks on what a teacher and a student type, and the students' signed cookies (lib.board.storage keeps the
boards; the package's docstring says how the rules protect a class).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence

from lib.errors import ContextLensError
from lib.inputs.sentences import MAX_LABEL_CHARS, SEPARATOR
from lib.models.targets import find_target, short

__all__ = [  # what lib.board gives its users
    "ACCEPTED", "BoardError", "BoardNotFound", "CODE_ALPHABET", "CODE_LENGTH",
    "COOKIELESS_SENDS_PER_MINUTE", "COOKIELESS_SENTENCES", "DEFAULT_HOURS", "GUESS_WINDOW", "HIDDEN",
    "KEY_BYTES", "MAX_BOARD_SENTENCES", "MAX_GUESSES", "MAX_PROMPT_CHARS", "MAX_SENDS_PER_MINUTE",
    "MAX_SENSES", "MAX_SENTENCE_CHARS", "MAX_STUDENT_SENTENCES", "MAX_TEACHER_BROWSERS", "NOT_FOUND",
    "PAGE_PATH", "PAUSED", "PENDING", "STUDENT_COOKIE", "STUDENT_COOKIE_DAYS", "TOO_MANY_GUESSES",
    "address_sender", "board_hours", "clean_sentence", "key_hash", "key_matches", "new_code",
    "new_student_cookie", "normalise_code", "parse_senses", "student_from_cookie", "student_link",
    "teacher_link",
]

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # 31 characters nobody misreads: no 0/O, 1/I/L
CODE_LENGTH = 6
KEY_BYTES = 16  # 128 random bits per teacher key
MAX_GUESSES = 10  # wrong codes or keys per client per GUESS_WINDOW
GUESS_WINDOW = 60.0  # seconds
MAX_SENTENCE_CHARS = 300
MAX_BOARD_SENTENCES = 300  # waiting or accepted: a hidden sentence is deleted, which frees its room
MAX_STUDENT_SENTENCES = 10  # sends per student and board, hidden ones included (the senders table)
MAX_SENDS_PER_MINUTE = 4
# Students without a signed cookie (a browser refusing cookies, a script opening sessions) share one allowance
# per address and board: a school behind one address is limited as one only in what its cookieless clients send
COOKIELESS_SENTENCES = 30
COOKIELESS_SENDS_PER_MINUTE = 10
MAX_TEACHER_BROWSERS = 20  # browsers remembered as one board's teacher (the oldest forgotten past it)
MAX_SENSES = 8
MAX_PROMPT_CHARS = 300
DEFAULT_HOURS = 24.0
STUDENT_COOKIE = "cl_student"  # the signed cookie that identifies a student's browser
STUDENT_COOKIE_DAYS = 30
PAGE_PATH = "/board"  # the board page's address (app.py: pages/board.py, url path "board")

PENDING, ACCEPTED, HIDDEN = "pending", "accepted", "hidden"
NOT_FOUND = "There is no board with this code (or it has expired). Check the link, or ask your teacher for it."
TOO_MANY_GUESSES = "Too many wrong board codes from here. Wait a minute, then check the link and try again."
PAUSED = "Your teacher has paused the board for a moment. Keep your sentence and send it when the board opens."


class BoardError(ContextLensError):
    """A board problem whose message is meant for the teacher or student (safe to show as is)."""


class BoardNotFound(BoardError):
    """No such board, an expired one, or a wrong teacher key: one message for all three (nothing to learn)."""


# --------------------------------------------------------------------------- links
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


# --------------------------------------------------------------------------- students' cookies
def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _signature(secret: bytes, student: str) -> str:
    return _b64(hmac.new(secret, b"student:" + student.encode(), hashlib.sha256).digest()[:18])


def new_student_cookie(secret: bytes) -> str:
    """A fresh student cookie value: 128 random bits and the server's signature of them."""
    student = _b64(secrets.token_bytes(16))
    return f"{student}.{_signature(secret, student)}"


def student_from_cookie(secret: bytes, value: str | None) -> str:
    """The student a cookie names ('' unless the server signed it): a hash of its random part, as stored."""
    student, _, sig = (value or "").partition(".")
    if not student or len(value or "") > 100 or not hmac.compare_digest(sig, _signature(secret, student)):
        return ""
    return "c-" + hashlib.sha256(student.encode()).hexdigest()[:40]


def address_sender(client: str) -> str:
    """The allowance every student without a cookie from one address shares (a hash: no address is stored)."""
    return "a-" + hashlib.sha256(("address:" + client).encode()).hexdigest()[:40]
