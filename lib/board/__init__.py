"""The live class board: a teacher opens a room, students send sentences, the teacher accepts them.

Plain Python (no Streamlit), in three modules: ``rules.py`` (room codes, teacher keys, the caps and messages, the
checks on what is typed, students' signed cookies), ``storage.py`` (the schema and :class:`BoardStore`) and
``__main__.py`` (the command line); every name is importable from ``lib.board``. One schema through SQLAlchemy Core, on SQLite by default (``<data folder>/boards.sqlite``; the folder is
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
  replica counts the same guesses. Who a client is comes from :func:`lib.serving.clients.client_key`: the
  connection's address (every loopback form one client), or the one header the host's own proxy sets
  (``CONTEXT_LENS_CLIENT_HEADER``), never a header a browser could make up, so a forger's wrong codes count
  against the forger's own address; a teacher holding the right key is never refused;
* a teacher key is 128 random bits, stored only as its SHA-256 and compared with ``hmac.compare_digest``;
  it is never part of the student link. A wrong key gets exactly the message of a missing board. A browser
  that opened the board with the key is remembered as its teacher (:meth:`BoardStore.remember_teacher`: the
  hash of its signed cookie, with the board), so a reload, a new tab or ``?presenter=1`` keeps the teacher's
  view with no key in the address;
* caps per board (``MAX_BOARD_SENTENCES`` waiting or accepted), per student (``MAX_STUDENT_SENTENCES``,
  ``MAX_SENDS_PER_MINUTE``), per address for students without a cookie (``COOKIELESS_SENTENCES``,
  ``COOKIELESS_SENDS_PER_MINUTE``) and per sentence (``MAX_SENTENCE_CHARS``), counted and inserted in one
  transaction that holds the board's row lock, so concurrent sends cannot overrun them. A student's sends are
  tallied apart from the sentences (table ``senders``), so hiding a sentence, which deletes it and frees its
  room, gives no one more sends. The teacher can pause a board (sends are refused until it reopens), hide
  everything waiting, or everything one student sent. The target word is required as in the sidebar
  (:func:`lib.models.targets.find_target`, bracket marking included). A student is whoever holds a cookie the
  server signed (:func:`new_student_cookie`), so a reload or a new tab is the same student;
* a send returns only after its transaction committed; boards expire (``CONTEXT_LENS_BOARD_HOURS``,
  default 24) and are deleted on a schedule (:meth:`BoardStore.start_purging`, ``python -m lib.board purge``);
  :meth:`BoardStore.delete_board` removes a board and its sentences at once. On SQLite deleted rows are
  overwritten (``secure_delete``) and the file compacted (``VACUUM``), the write-ahead log emptied.

Command line (before class)::

    python -m lib.board create --target bank --senses "money,river"
    student: /board?room=K7QF3M
    teacher: /board?room=K7QF3M&key=...
    python -m lib.board delete --room K7QF3M      # asks for the key (or reads it from standard input)
"""

from __future__ import annotations

from lib.board.rules import *  # noqa: F403 - rules.__all__: codes, keys, caps, messages, links, cookies
from lib.board.storage import *  # noqa: F403 - storage.__all__: the schema, the results, the store
from lib.serving.clients import LOOPBACK, client_header, client_key  # noqa: F401 - the board's names for them
