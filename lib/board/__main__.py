"""The class board from a shell, before class (the package's docstring shows the commands)."""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence

from lib.board.rules import DEFAULT_HOURS, normalise_code
from lib.board.storage import open_store
from lib.errors import ContextLensError


def read_key(stream=None) -> str:
    """A teacher key (or the whole teacher link) from a terminal prompt or standard input, never argv."""
    stream = stream or sys.stdin
    raw = getpass.getpass("Teacher key (or the teacher link): ") if stream.isatty() else stream.readline()
    raw = raw.strip()
    if "key=" in raw:  # the teacher link as printed
        raw = raw.split("key=", 1)[1].split("&", 1)[0]
    return raw



def main(argv: Sequence[str] | None = None, stdin=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.board", description="Class boards, from a shell.")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="open a board; prints the student and teacher links")
    create.add_argument("--target", required=True, help="the word the class writes about, e.g. bank")
    create.add_argument("--senses", required=True, help='the senses to choose from, e.g. "money,river,other"')
    create.add_argument("--prompt", default="", help="an optional line shown to the students")
    create.add_argument("--hours", type=float, default=None, help=f"lifetime (default {DEFAULT_HOURS:g} h)")
    create.add_argument("--db", default=None, help="database URL (default: CONTEXT_LENS_DB, else SQLite)")
    delete = sub.add_parser(
        "delete", help="delete a board and its sentences now; the key (or teacher link) is asked for, or read "
        "from standard input, never given on the command line (shell history and `ps` would keep it)",
    )  # fmt: skip
    delete.add_argument("--room", required=True)
    delete.add_argument("--db", default=None)
    purge = sub.add_parser("purge", help="delete every expired board now (a running app does it every few minutes)")
    purge.add_argument("--db", default=None)
    args = parser.parse_args(argv)
    store = open_store(args.db)
    try:
        if args.command == "create":
            new = store.create_board(args.target, args.senses, args.prompt, hours=args.hours)
            print(f"student: {new.student_link}")
            print(f"teacher: {new.teacher_link}")
        elif args.command == "delete":
            store.delete_board(args.room, read_key(stdin))
            print(f"deleted: {normalise_code(args.room)}")
        else:
            n = store.purge_expired()
            print(f"deleted {n} expired board{'s' if n != 1 else ''}")
    except ContextLensError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
