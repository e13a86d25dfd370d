"""The Class board page (AppTest, real model): join, start from the sidebar, a student's send, the teacher's
queue and charts, a wrong key, escaping. Each test runs on SQLite and on PostgreSQL (CONTEXT_LENS_DB)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from lib import board as lb
from lib.models.encoder import DEFAULT_MODEL as MODEL
from tests.conftest import ROOT, page_test, seed, url_written
from ui.widgets import escape_md

PAGE = str(ROOT / "pages" / "board.py")
MONEY = ["The bank raised its interest rates.", "She paid the cheque into the bank.", "The bank lent them money."]
RIVER = ["We sat on the grassy bank of the river.", "The boat drifted to the river bank.", "Reeds grew on the bank."]


@pytest.fixture(scope="module", autouse=True)
def _the_apps_store_ends_with_its_database(board_db_url):
    """The app keeps one store per URL for the whole process (ui.cache.board), and it deletes expired boards every
    few minutes by the real clock. A later module's throwaway cluster can get this one's port, hence its URL: a
    store left running would then delete that module's boards, made on a test clock of 1970, as expired (a board
    of tests/test_board.py vanished mid-test once, on a slow run). So the page's store ends with its database."""
    yield
    from ui.cache.board import board_store

    board_store(board_db_url).dispose()  # stops its purging (made here if no page asked for it)
    board_store.clear()


@pytest.fixture
def store(board_db_url, monkeypatch):
    """The page's store: SQLite, then PostgreSQL (conftest.board_db_url), through CONTEXT_LENS_DB."""
    monkeypatch.setenv("CONTEXT_LENS_DB", board_db_url)
    s = lb.BoardStore(board_db_url)
    yield s
    s.dispose()


def board_page(**params: str):
    at = page_test(PAGE)
    for k, v in params.items():
        at.query_params[k] = v
    return at


def texts(at) -> str:
    parts = [*at.markdown, *at.title, *at.subheader, *at.caption]
    return "\n".join(p.value for p in parts)


def alerts(at) -> str:
    return "\n".join(str(e.value) for e in [*at.error, *at.success, *at.warning])


def accept_button(at):
    """The queue's Accept button (its key names the sentences it shows)."""
    (button,) = [b for b in at.button if b.key.startswith("board_accept_")]
    return button


def values(v) -> np.ndarray:
    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return arr.reshape([int(x) for x in v["shape"].split(",")]) if "shape" in v else arr
    return np.asarray(v)


def test_no_room_shows_join_and_the_sidebar_starts_a_board(store):
    at = board_page().run()
    assert not at.exception
    assert at.title[0].value == "Class board"
    assert at.text_input(key="board_join")
    at.sidebar.text_input(key="board_new_target").set_value("bank")
    at.sidebar.text_input(key="board_new_senses").set_value("money, river, other")
    at.sidebar.button(key="board_start").click().run()
    assert not at.exception
    code = at.session_state["room"]
    board = store.board(code)
    assert board.senses == ("money", "river", "other")
    assert f"/board?room={code}" in "\n".join(c.value for c in at.code)
    assert at.get("imgs") or at.get("image")  # the QR code
    # the address bar gets the student link only: the key stays in the session
    assert url_written(at) == {"room": code}


def test_a_bad_start_says_what_to_do(store):
    at = board_page().run()
    at.sidebar.text_input(key="board_new_senses").set_value("money")
    at.sidebar.button(key="board_start").click().run()
    assert not at.exception
    assert "Give 2 to" in alerts(at)


def test_a_student_sends_and_cannot_moderate(store):
    new = store.create_board("bank", "money, river", "Write about a bank!")
    at = board_page(room=new.board.code).run()
    assert not at.exception
    assert "Write about a bank\\!" in texts(at)
    assert at.radio(key="board_sense").value is None  # no sense chosen for the student
    at.text_input(key="board_text").set_value("We sat by the river.")
    at.button(key="board_send").click().run()
    assert "Choose the sense" in alerts(at)
    at.radio(key="board_sense").set_value("river")
    at.button(key="board_send").click().run()
    assert "has no “bank”" in alerts(at)
    assert at.text_input(key="board_text").value == "We sat by the river."  # kept, to fix
    assert store.entries(new.board.code, new.key) == []
    at.text_input(key="board_text").set_value("We sat on the river [bank].")
    at.radio(key="board_sense").set_value("river")
    at.button(key="board_send").click().run()
    assert not at.exception
    assert "Sent" in alerts(at)
    rows = store.entries(new.board.code, new.key)
    assert [(e.sense, e.sentence, e.status) for e in rows] == [("river", "We sat on the river [bank].", lb.PENDING)]
    assert at.text_input(key="board_text").value == ""
    assert at.radio(key="board_sense").value is None  # the next sentence's sense is chosen anew
    assert "waiting for the teacher" in texts(at)
    labels = {b.label for b in at.button}
    assert not any(lbl.startswith(("Accept", "Hide", "Delete")) for lbl in labels)  # a student cannot moderate
    assert new.key not in json.dumps(dict(at.query_params))


def test_a_wrong_key_reads_like_a_missing_board(store):
    new = store.create_board("bank", "money, river")
    wrong = board_page(room=new.board.code, key=new.key[:-1] + ("A" if new.key[-1] != "A" else "B")).run()
    missing = board_page(room="ZZZZZZ", key=new.key).run()
    for at in (wrong, missing):
        assert not at.exception
        assert [e.value for e in at.error] == [escape_md(lb.NOT_FOUND)]
        assert not any(b.label.startswith("Accept") for b in at.button)


def test_the_teacher_accepts_and_the_charts_match_the_model(store, encoder):
    new = store.create_board("bank", "money, river")
    code = new.board.code
    nasty = "The **bank** <b>closed</b> $5$ early."
    for i, s in enumerate(MONEY + RIVER):
        store.send(code, f"s{i}", "money" if s in MONEY else "river", s)
    store.send(code, "s9", "money", nasty)
    at = board_page(room=code, key=new.key).run()
    assert not at.exception
    projected = texts(at)  # the teacher's view as projected: counts, never the sentences
    assert f"{len(MONEY + RIVER) + 1} waiting" in projected
    assert not any(x in projected for x in MONEY + RIVER) and "closed" not in projected
    assert not any(b.key.startswith(("board_hide_", "board_accept")) for b in at.button)
    # nothing reaches the charts before it is accepted: only the empty map, waiting
    assert [json.loads(c.proto.spec)["data"][0]["x"] for c in at.get("plotly_chart")] in ([[]], [{}])
    at.toggle(key="board_moderate").set_value(True).run()
    assert f"Waiting for you ({len(MONEY + RIVER) + 1})" in texts(at)
    shown = texts(at)
    assert "\\*\\*bank\\*\\*" in shown and "<b>" not in shown.replace("\\<b\\>", "")  # escaped in the queue
    hide = next(b for b in at.button if re.fullmatch(r"board_hide_\d+", b.key) and
                store.entries(code, new.key)[-1].id == int(b.key.rsplit("_", 1)[1]))  # fmt: skip
    hide.click().run()
    accept_button(at).click().run()
    assert not at.exception
    assert not at.get("plotly_chart")  # the moderation view is the queue alone: the charts are the projector's
    at.toggle(key="board_moderate").set_value(False).run()
    accepted = store.accepted(code)
    assert [e.sentence for e in accepted] == MONEY + RIVER  # the hidden one stays off the board
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    heatmaps = [f for f in figs if f["data"][0]["type"] == "heatmap"]
    assert len(heatmaps) == 2
    tv = encoder.target_vectors(MONEY + RIVER, "bank")
    unit = tv.vectors / np.linalg.norm(tv.vectors, axis=2, keepdims=True)
    last = encoder.num_layers
    for fig, layer in zip(heatmaps, (0, last), strict=True):
        expected = unit[:, layer, :] @ unit[:, layer, :].T
        assert np.allclose(values(fig["data"][0]["z"]), expected, atol=1e-5)
    scatter = next(f for f in figs if f["data"][0]["type"] == "scatter" and "PCA" in json.dumps(f["layout"]))
    assert sum(len(values(t["x"])) for t in scatter["data"]) == len(MONEY + RIVER)
    assert any("chance band" in str(t.get("name", "")) for f in figs for t in f["data"])
    csv = next(d for d in at.get("download_button"))
    assert csv is not None


def test_accept_takes_only_what_the_teacher_saw(store):
    """A sentence that arrives after the queue was drawn is not accepted by the click on that queue."""
    new = store.create_board("bank", "money, river")
    code = new.board.code
    for i, s in enumerate(MONEY):
        store.send(code, f"s{i}", "money", s)
    at = board_page(room=code, key=new.key)
    seed(at, board_moderate=True)
    at.run()
    assert accept_button(at).label == "Accept all 3"
    late = store.send(code, "late", "river", RIVER[0])  # sent while the teacher reads the queue
    accept_button(at).click().run()
    assert not at.exception
    assert [e.sentence for e in store.accepted(code)] == MONEY
    assert [e.id for e in store.entries(code, new.key) if e.status == lb.PENDING] == [late.id]


def test_the_queue_is_encoded_once_as_it_arrives(store, monkeypatch):
    """Each refresh encodes only the sentences that arrived since the last one: a queue the cache has dropped
    is not encoded again every 2 s."""
    from lib.serving.budget import ByteLRU, cache_budget_bytes
    from ui import cache
    from ui.cache import store as results

    new = store.create_board("bank", "money, river")
    code = new.board.code
    for i, s in enumerate(MONEY):
        store.send(code, f"s{i}", "money", s)
    at = board_page(room=code, key=new.key).run()
    assert all(cache._sentence_key(MODEL, s) in results.RESULTS for s in MONEY)
    # as if a crowd's sets had pushed them out: an empty cache of the app's size (the tests' shared one is kept)
    monkeypatch.setattr(results, "RESULTS", ByteLRU(cache_budget_bytes()))
    calls = cache.ENCODE_CALLS[MODEL]
    at.run()
    assert cache.ENCODE_CALLS[MODEL] == calls
    store.send(code, "s9", "river", RIVER[0])
    at.run()
    assert cache.ENCODE_CALLS[MODEL] == calls + 1
    assert cache._sentence_key(MODEL, RIVER[0]) in results.RESULTS
    assert not any(cache._sentence_key(MODEL, s) in results.RESULTS for s in MONEY)


def test_no_saved_page_holds_the_teacher_key(store):
    """"Download this page" on the teacher's view, projected or moderating: the key is nowhere in the file, the
    queue neither; the student link and the accepted sentences are."""
    from tests.test_page_export_pages import HARNESS, read

    new = store.create_board("bank", "money, river")
    code = new.board.code
    for i, s in enumerate(MONEY + RIVER):
        store.send(code, f"s{i}", "money" if s in MONEY else "river", s)
    store.accept(code, new.key)
    store.send(code, "s9", "money", "A waiting sentence about the bank.")
    for moderating in (False, True):
        at = AppTest.from_file(HARNESS, default_timeout=600)
        seed(at, _export_page=str(ROOT / "pages" / "board.py"), board_moderate=moderating)
        at.query_params["room"], at.query_params["key"] = code, new.key
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if moderating:  # the link is on the teacher's own screen, just not in the file
            assert any(new.key in c.value for c in at.code)
        doc = at.session_state["_export_html"]
        assert new.key not in doc
        text = read(doc).text
        assert "waiting sentence" not in text
        if not moderating:  # the projected view's file: the student link and the accepted set
            assert f"/board?room={code}" in text and all(s in doc for s in MONEY + RIVER)


def test_open_everywhere_sets_the_shared_set(store):
    new = store.create_board("bank", "money, river")
    for i, s in enumerate(MONEY + RIVER):
        store.send(new.board.code, f"s{i}", "money" if s in MONEY else "river", s)
    store.accept(new.board.code, new.key)
    at = board_page(room=new.board.code, key=new.key).run()
    at.button(key="board_use").click().run()
    assert not at.exception
    from lib.inputs.sentences import parse_sentence_set

    ss = parse_sentence_set(at.session_state["cl_text"], at.session_state["cl_target"])
    assert list(ss.sentences) == MONEY + RIVER and ss.senses == ("money",) * 3 + ("river",) * 3
    assert at.session_state["cl_preset"] == "custom"


def test_joining_by_code_as_typed(store):
    new = store.create_board("bank", "money, river")
    at = board_page().run()
    at.text_input(key="board_join").set_value("zzzzzz")
    at.button(key="board_join_button").click().run()
    assert [e.value for e in at.error] == [escape_md(lb.NOT_FOUND)]
    code = new.board.code
    at.text_input(key="board_join").set_value(f" {code[:3].lower()}-{code[3:].lower()} ")
    at.button(key="board_join_button").click().run()
    assert not at.exception and not at.error
    assert at.text_input(key="board_text") is not None
    assert url_written(at) == {"room": code}


def test_a_student_sees_where_theirs_lands(store, encoder):
    """Once accepted, a student's sentence is read against the class's: the sense whose average vector at the
    last layer (the sentence itself left out) is nearest, checked here with numpy on the model's vectors."""
    new = store.create_board("bank", "money, river")
    code = new.board.code
    sentences = MONEY + RIVER
    senses = ["money"] * 3 + ["river"] * 3
    for i, (sense, s) in enumerate(zip(senses, sentences, strict=True)):
        store.send(code, f"s{i}", sense, s)
    store.accept(code, new.key)
    tv = encoder.target_vectors(sentences, "bank")
    x = tv.vectors[:, encoder.num_layers, :]
    for i in (0, 4):
        centroids = {
            s: x[[j for j in range(6) if senses[j] == s and j != i]].mean(axis=0) for s in ("money", "river")
        }
        cos = {s: float(c @ x[i] / np.linalg.norm(c) / np.linalg.norm(x[i])) for s, c in centroids.items()}
        nearest = max(cos, key=cos.get)
        at = board_page(room=code)
        seed(at, board_student=f"s{i}")
        at.run()
        assert not at.exception
        assert f"sits nearest the class's **{nearest}** sentences" in texts(at)


def test_a_flood_is_one_click_each(store):
    """Hide all of one student's, pause sends, hide everything waiting: hidden sentences are gone from the
    database and free the board's room, while their students' sends still count against their caps."""
    new = store.create_board("bank", "money, river")
    code = new.board.code
    troll = [store.send(code, "troll", "money", f"Spam {i} at the bank.") for i in range(lb.MAX_SENDS_PER_MINUTE)]
    others = [store.send(code, f"s{i}", "river", s) for i, s in enumerate(RIVER)]
    at = board_page(room=code, key=new.key)
    seed(at, board_moderate=True)
    at.run()
    assert not at.exception
    assert f"{len(troll)} waiting from this student" in texts(at)
    at.button(key=f"board_hide_student_{troll[0].id}").click().run()
    assert "Hid 4 sentences from one student" in alerts(at)
    assert [e.id for e in store.entries(code, new.key)] == [e.id for e in others]
    with store.engine.connect() as conn:  # deleted, not kept
        assert not conn.execute(lb.entries.select().where(lb.entries.c.student == "troll")).first()
    at.toggle(key="board_paused").set_value(True).run()
    assert store.board(code).paused
    with pytest.raises(lb.BoardError, match="paused"):
        store.send(code, "late", "money", "A bank sentence while paused.")
    at.toggle(key="board_paused").set_value(False).run()
    assert not store.board(code).paused
    store.send(code, "late", "money", "A bank sentence after the pause.")
    at.run()
    at.button(key="board_hide_waiting").click().run()
    assert not at.exception
    assert store.entries(code, new.key) == [] and "Waiting for you (0)" in texts(at)
    # the troll's four hidden sends still count: six more, not ten
    sent = 0
    with pytest.raises(lb.BoardError, match="the most one student can"):
        for i in range(lb.MAX_STUDENT_SENTENCES):
            store.clock = lambda i=i: new.board.created_at + 61 * (i + 1)
            store.send(code, "troll", "money", f"More spam {i} at the bank.")
            sent += 1
    assert sent == lb.MAX_STUDENT_SENTENCES - len(troll)
