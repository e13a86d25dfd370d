"""One class over two replicas sharing PostgreSQL: students on either replica land on one teacher's board.

The deployment (docs/hosting.md) runs replicas behind a load balancer with sticky sessions, so each browser
talks to one replica for its whole visit; here each tab is pinned to a replica by its address, as the
balancer's cookie would pin it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import board as lb
from tests._postgres import postgres_cluster
from tests.browser._browser import LOAD_MS, exceptions, start_server, stop_server
from tests.browser._class_board import (
    PHONE_VIEWPORT,
    TEACHER_VIEWPORT,
    accept_all,
    close_tabs,
    main_text,
    moderate,
    new_tab,
    send,
    sentences_of,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_students_on_two_replicas_reach_one_board(chromium):
    with postgres_cluster() as url:
        store = lb.BoardStore(url)
        new = store.create_board("bank", "money, river")
        servers = [start_server(env={"CONTEXT_LENS_DB": url}) for _ in range(2)]
        pages = []
        try:
            teacher = new_tab(chromium, TEACHER_VIEWPORT)
            pages.append(teacher)
            teacher.goto(servers[0][1] + new.teacher_link)
            moderate(teacher)
            teacher.wait_for_selector("text=Waiting for you (0)", timeout=300_000)
            sent = []
            for i in range(4):  # students 0 and 2 on the first replica, 1 and 3 on the second
                pg = new_tab(chromium, PHONE_VIEWPORT)
                pages.append(pg)
                pg.goto(servers[i % 2][1] + new.student_link)
                pg.wait_for_selector(".st-key-board_text input", timeout=300_000)
                sense, sentence = sentences_of(i)[0]
                send(pg, sense, sentence)
                sent.append(sentence)
            teacher.wait_for_selector("text=Waiting for you (4)", timeout=LOAD_MS)  # refreshes by itself
            for s in sent:  # the rows under that count are drawn one by one as the run goes on
                teacher.get_by_text(s).first.wait_for(timeout=60_000)
            text = main_text(teacher)
            assert all(s in text for s in sent)
            accept_all(teacher)
            # the moderation view is the queue alone: it counts the board, whose charts are the projector's
            teacher.wait_for_selector("text=4 on the board", timeout=LOAD_MS)
            assert sorted(e.sentence for e in store.accepted(new.board.code)) == sorted(sent)
            assert len({e.student for e in store.entries(new.board.code, new.key)}) == 4
            # a student's cookie, signed by one replica, is the same student on the other (one key in the database)
            again = pages[1].context.new_page()
            pages.append(again)
            again.goto(servers[1][1] + new.student_link)  # student 0 was on the first replica
            again.wait_for_selector("text=Your sentences", timeout=LOAD_MS)
            # the list under the heading comes from the database a moment later (the student's list refreshes)
            again.get_by_text(sentences_of(0)[0][1]).first.wait_for(timeout=LOAD_MS)
            assert sentences_of(0)[0][1] in main_text(again)
            assert not any(exceptions(pg) for pg in pages)
        finally:
            close_tabs({pg.context: pg for pg in pages}.values())
            for proc, _base, log in servers:
                stop_server(proc)
                Path(log).unlink(missing_ok=True)
            store.dispose()
