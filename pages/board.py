"""Class board: students send sentences from their phones, the teacher accepts them, the class sees them land.

Three views on one page: no room (join a board; start one from the sidebar), a student (``?room=CODE``: one
sentence box, a sense, Send, and their own sentences) and the teacher (``?room=CODE&key=KEY``: the link and QR
code presenter-size, counts that update by themselves every ~2 s, the accepted set through the app's charts).
The teacher's view is made to be projected: the waiting sentences appear only with **Moderate** turned on,
which a teacher does on a screen the class does not see (their laptop or phone, on the teacher link), and
"Accept" accepts the sentences that view showed, no others. The moderation view is the queue alone (the charts
stay on the projector's view), so accepting never holds up its next refresh while charts are drawn.

The teacher key is read from the link once and kept in the session, never written back into the address bar,
shown only in the moderation view, and never exported (``ui.page_export.private`` and ``never_export``): a
projected browser, a saved page, the CSV and the QR code carry the student link only. The browser that opened
the board with the key (or started it in the sidebar) is remembered as its teacher, by its signed cookie
(ui/student_cookie.py), so a reload, a new tab or ``?presenter=1`` on the projector keeps the teacher's view with
no key in the address. A student is known by the same cookie (else their tab's session, sharing one allowance
per address), so a reload or a new tab keeps their caps. Each "Accept" button is keyed by the sentences it
showed and carries their ids: a click that reaches the server after the queue changed accepts what it showed,
or nothing once its button is gone, never a sentence it did not show.
A flood is one click each: hide everything waiting, pause sends, hide all of one student's (hidden sentences
are deleted and free their room). Codes, keys and limits: lib/board/rules.py; storage: lib/board/storage.py.
"""

from __future__ import annotations

import hashlib
import io
import secrets
from urllib.parse import urlencode, urlsplit

import numpy as np
import streamlit as st
from streamlit.errors import StreamlitAPIException

from lib import board as lb
from lib.charts.home import shared_floor, similarity_heatmap
from lib.charts.layers import layer_names, readout_chart
from lib.charts.projection import empty_map, explained_variance_titles, projection_scatter
from lib.inputs.sentences import SentenceSet, pack_text, rows_to_text
from lib.models.encoder import DEFAULT_MODEL
from lib.models.targets import TargetError
from lib.serving.export import csv_text
from lib.stats.chance import chance_phrase
from lib.stats.projection import ProjectionError
from lib.stats.similarity import cosine_matrix
from ui import cache, link, page_export, session, startup, visitor
from ui.student_cookie import SECRET_NAME, issuing
from ui.widgets import chart, escape_md, page_intro, sentence_table

MODEL = DEFAULT_MODEL  # one model for the whole class: the teacher and every student share its cached results
K_ROOM, K_KEY, K_STUDENT = "room", "key", "board_student"
K_SENT = "board_sent_note"  # what the last Send said, shown under the box
K_NOTE = "board_teacher_note"  # what the teacher's last hide did, shown once above the queue
K_CHARTED = "board_charted"  # the ids of the accepted sentences the teacher's charts show
K_MODERATE = "board_moderate"  # the teacher's moderation view (off: the projector's view)
K_OPENED = "board_opened"  # the board this session has opened: its reruns are not guesses
K_AHEAD = "board_ahead"  # ids of waiting sentences this session has encoded ahead (each once)
K_REMEMBERED = "board_remembered"  # the board this session's browser was remembered as the teacher of
K_PAUSED = "board_paused"  # the teacher's Pause switch
REFRESH_S = 2.0  # the teacher's board
STUDENT_REFRESH_S = 20.0  # a student's list, while one of their sentences waits for the teacher
MAX_QUEUE_SHOWN = 40

PARAMS = [link.Param(K_ROOM, "text", "", max_chars=20, omit_default=True)]
link.init_params(PARAMS)
link_key = link.url_text(K_KEY, "", max_chars=64)  # read once; the URL written back never carries it
link.forget(K_KEY)  # and out of the address bar at once: a reload or the history no longer holds it
store = cache.board_store(lb.default_url())


def browser_id() -> str:
    """The student the browser's signed cookie names ('' without one: `streamlit run app.py`, a browser that
    refuses cookies, a script opening sessions)."""
    try:
        raw = st.context.cookies.get(lb.STUDENT_COOKIE)
    except Exception:  # no request context
        raw = None
    return lb.student_from_cookie(store.secret(SECRET_NAME), raw) if isinstance(raw, str) and raw else ""


def student_id() -> str:
    """The student sending: the one the signed cookie names (a reload or a new tab is the same student), else
    this tab's session."""
    return browser_id() or st.session_state.setdefault(K_STUDENT, "t-" + secrets.token_urlsafe(12))


def page_base() -> str:
    """This page's absolute address without the query ('' when unknown): the links and QR code start with it."""
    try:
        raw = st.context.url
    except Exception:  # no request context
        return ""
    if not isinstance(raw, str):
        return ""
    url = urlsplit(raw)
    return f"{url.scheme}://{url.netloc}{url.path}" if url.scheme and url.netloc else ""


def absolute(relative: str) -> str:
    """A lib.board link ('/board?room=...') on this server's address."""
    base = page_base()
    if not base:
        return relative
    return base.removesuffix("/board").rstrip("/") + relative


def qr_png(url: str) -> bytes:
    import segno

    buf = io.BytesIO()
    segno.make(url, error="m").save(buf, kind="png", scale=10, border=2)
    return buf.getvalue()


def accepted_set(board: lb.Board, rows: list[lb.Entry]) -> SentenceSet:
    return SentenceSet(
        target=board.target,
        sentences=tuple(e.sentence for e in rows),
        senses=tuple(e.sense for e in rows),
        lines=tuple(range(1, len(rows) + 1)),
    )


# --------------------------------------------------------------------------------------- sidebar: start one
def _start() -> None:
    try:
        new = store.create_board(
            st.session_state.get("board_new_target", ""),
            st.session_state.get("board_new_senses", ""),
            st.session_state.get("board_new_prompt", ""),
        )
    except lb.BoardError as err:
        st.session_state["board_start_error"] = str(err)
        return
    st.session_state.pop("board_start_error", None)
    st.session_state[K_ROOM], st.session_state[K_KEY] = new.board.code, new.key
    remember(new.board.code, new.key)


def remember(code: str, key: str) -> None:
    """This browser (its signed cookie) is the board's teacher from now on: a reload keeps the teacher's view."""
    browser = browser_id()
    if browser and st.session_state.get(K_REMEMBERED) != code:
        store.remember_teacher(code, key, browser)
        st.session_state[K_REMEMBERED] = code


with st.sidebar.expander("Start a class board", expanded=not st.session_state.get(K_ROOM)):
    st.session_state.setdefault("board_new_target", session.sentence_set().target or "bank")
    st.text_input("Target word", key="board_new_target", max_chars=100)
    st.session_state.setdefault("board_new_senses", "money, river, other")
    st.text_input("Senses to choose from", key="board_new_senses", max_chars=200)
    st.text_input("Prompt (optional)", key="board_new_prompt", max_chars=lb.MAX_PROMPT_CHARS)
    st.button("Start the board", key="board_start", on_click=_start, icon=":material/groups:")
    if st.session_state.get("board_start_error"):
        st.error(escape_md(st.session_state["board_start_error"]))


# --------------------------------------------------------------------------------------- no room yet
def join_view(*, title: bool = True) -> None:
    if title:
        st.title("Class board")
    page_intro("board")

    def join() -> None:
        st.session_state[K_ROOM] = st.session_state.get("board_join", "")
        st.session_state[K_KEY] = ""

    st.text_input("Board code", key="board_join", max_chars=20, placeholder="e.g. K7QF3M")
    st.button("Join", key="board_join_button", on_click=join, type="primary")


# --------------------------------------------------------------------------------------- a student
def _send(code: str, board: lb.Board) -> None:
    sense, text = st.session_state.get("board_sense"), st.session_state.get("board_text", "")
    if not sense:
        st.session_state[K_SENT] = ("error", "Choose the sense your sentence uses, then send.")
        return
    # without the signed cookie (while this server hands them out) every such student from one address shares one
    # allowance: a script opening session after session cannot fill the board
    address = visitor.client() if not browser_id() and issuing() else ""
    try:
        store.send(code, student_id(), sense, text, address=address)
    except (lb.BoardError, TargetError) as err:  # the text stays in the box to fix
        st.session_state[K_SENT] = ("error", str(err))
        return
    st.session_state[K_SENT] = ("ok", "Sent. Your teacher sees it now; it joins the board once accepted.")
    st.session_state["board_text"], st.session_state["board_sense"] = "", None  # the next one: a sense chosen anew


def student_view(code: str, board: lb.Board) -> None:
    word = escape_md(board.target)
    st.title(f"Class board: “{word}”")
    if board.prompt:
        st.markdown(escape_md(board.prompt))
    with st.form("board_form", border=False):  # one rerun per send: the text and the sense go together
        st.text_input(
            f"Your sentence with “{board.target}”",
            key="board_text",
            max_chars=lb.MAX_SENTENCE_CHARS,
            placeholder=f"A sentence with the word {board.target}",
            help="Mark another form of the word in [brackets], e.g. “They [banked] left.”",
        )
        st.radio("Which sense?", board.senses, key="board_sense", horizontal=True, index=None)
        st.form_submit_button(
            "Send", key="board_send", on_click=_send, args=(code, board), type="primary", icon=":material/send:"
        )
    note = st.session_state.get(K_SENT)
    if note:
        (st.success if note[0] == "ok" else st.error)(escape_md(note[1]))
    mine = store.mine(code, student_id())
    waiting = any(e.status == lb.PENDING for e in mine)
    st.fragment(run_every=STUDENT_REFRESH_S if waiting else None)(student_list)(code, board)


def student_list(code: str, board: lb.Board) -> None:
    mine = store.mine(code, student_id())
    if not mine:
        return
    rows = store.accepted(code)
    where: dict[int, str] = {}
    if any(e.status == lb.ACCEPTED for e in mine) and len(rows) >= 3:
        ss = accepted_set(board, rows)
        tv = cache.target_vectors(MODEL, ss.sentences, ss.target)
        ro = cache.sense_readout(MODEL, ss.sentences, ss.senses, ss.target, tv.vectors)
        if ro is not None:
            last = tv.vectors.shape[1] - 1
            ids = [rows[int(tv.kept[i])].id for i in ro.evaluated]
            where = {i: str(p) for i, p in zip(ids, ro.predictions[last], strict=True)}
    st.subheader("Your sentences")
    for e in mine:
        status = {lb.PENDING: "waiting for the teacher", lb.ACCEPTED: "on the board"}[e.status]
        line = f"- {escape_md(e.sentence)} · *{escape_md(e.sense)}* · {status}"
        if e.id in where:
            near = where[e.id]
            line += (
                f": at the last layer it sits nearest the class's **{escape_md(near)}** sentences"
                + (" (your choice)" if near == e.sense else "")
            )
        st.markdown(line)


# --------------------------------------------------------------------------------------- the teacher
def _accept(code: str, who: lb.Teacher, ids: tuple[int, ...]) -> None:
    store.accept(code, who, ids)  # the sentences the teacher saw, no others (a newer one waits its turn)


def _hide(code: str, who: lb.Teacher, entry_id: int) -> None:
    store.hide(code, who, [entry_id])


def _hide_waiting(code: str, who: lb.Teacher) -> None:
    n = store.hide_waiting(code, who)
    st.session_state[K_NOTE] = f"Hid {n} waiting {'sentence' if n == 1 else 'sentences'}."


def _hide_student(code: str, who: lb.Teacher, entry_id: int) -> None:
    n = store.hide_student(code, who, entry_id)
    st.session_state[K_NOTE] = f"Hid {n} {'sentence' if n == 1 else 'sentences'} from one student."


def _pause(code: str, who: lb.Teacher) -> None:
    store.pause(code, who, bool(st.session_state.get(K_PAUSED)))


def _use_everywhere(text: str, target: str) -> None:
    session.set_sentences(text, target)
    st.session_state["board_used"] = True


def _delete(code: str, who: lb.Teacher) -> None:
    store.delete_board(code, who)
    st.session_state[K_ROOM], st.session_state[K_KEY], st.session_state[K_OPENED] = "", "", ""
    st.session_state["board_deleted"] = code


def shown_key(ids: tuple[int, ...]) -> str:
    """The Accept button's key for these sentences: a click that reaches the server after the queue changed
    names a button that the refresh replaced, whose ids are those it showed (or that is gone: nothing)."""
    return "board_accept_" + hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:12]


def teacher_view(code: str, who: lb.Teacher, board: lb.Board) -> None:
    if who.key:
        page_export.never_export(who.key)  # whatever is rendered below, no saved page holds the key
    st.title(f"Class board: “{escape_md(board.target)}”")
    moderating = st.toggle(
        "Moderate on this screen", key=K_MODERATE,
        help="Shows the waiting sentences to accept or hide, and your teacher link. Keep it off on the "
        "projector: open the teacher link on your own laptop or phone and moderate there.",
    )  # fmt: skip
    link = absolute(lb.student_link(code))
    if moderating:  # the teacher's own screen: the queue first, the join panel in one line
        st.caption(f"Code **{code}** · the student link: {escape_md(link)}")
        st.session_state[K_PAUSED] = board.paused  # as stored: another of the teacher's screens may have changed it
        st.toggle(
            "Pause sending", key=K_PAUSED, on_change=_pause, args=(code, who),
            help="While paused, a student's Send is refused with a note to wait; their sentence stays in their box.",
        )  # fmt: skip
        if who.key:
            with page_export.private(), st.expander("Your teacher link (keep it to yourself: it moderates this board)"):
                st.code(absolute(lb.teacher_link(code, who.key)), language=None, wrap_lines=True)
                st.caption("This browser stays the teacher's: a reload or a new tab opens this view.")
    else:
        left, right = st.columns([3, 2], gap="medium")
        with left:
            st.markdown(f"## Join at the link or with the code **{code}**")
            st.code(link, language=None, wrap_lines=True)
            st.caption("Senses: " + ", ".join(escape_md(s) for s in board.senses) + (
                f" · Prompt: {escape_md(board.prompt)}" if board.prompt else "")
                + (" · **Paused**: sends wait until the teacher reopens the board." if board.paused else ""))
        with right:
            st.image(qr_png(link), caption="The student link", width=260)
    with st.expander("Delete this board"):
        st.checkbox("Yes, delete this board and every sentence on it", key="board_delete_sure")
        st.button(
            "Delete the board now", key="board_delete", on_click=_delete, args=(code, who),
            disabled=not st.session_state.get("board_delete_sure"), icon=":material/delete:",
        )  # fmt: skip
    startup.warm_up_board(MODEL)
    accepted = store.accepted(code)
    st.session_state[K_CHARTED] = tuple(e.id for e in accepted)
    st.fragment(run_every=REFRESH_S)(live_board)(code, who, board)
    if moderating:  # a phone's screen: the queue alone, so an accept redraws no chart before the next refresh
        st.caption(f"{len(accepted)} on the board: its charts are on the projector's view (Moderate off).")
        return
    st.subheader(f"On the board ({len(accepted)})")
    board_charts(board, accepted)


def live_board(code: str, who: lb.Teacher, board: lb.Board) -> None:
    try:
        rows = store.entries(code, who)
    except lb.BoardNotFound as err:
        st.error(escape_md(str(err)))
        return
    pending = [e for e in rows if e.status == lb.PENDING]
    accepted = [e for e in rows if e.status == lb.ACCEPTED]
    if tuple(e.id for e in accepted) != st.session_state.get(K_CHARTED):
        st.rerun()  # the accepted set changed: the whole page, charts included (only then: they cost more)
    students = len({e.student for e in rows})
    moderating = bool(st.session_state.get(K_MODERATE))
    if moderating:  # one line on the teacher's phone
        st.caption(f"Sent: {len(rows)} by {students} student(s) · waiting: {len(pending)} · on the board: {len(accepted)}")
    else:
        c1, c2, c3 = st.columns(3)
        c1.metric("Sent", len(rows), help=f"by {students} student(s)")
        c2.metric("Waiting", len(pending))
        c3.metric("On the board", len(accepted))
    shown = pending[:MAX_QUEUE_SHOWN]
    ahead = st.session_state.setdefault(K_AHEAD, set())
    new = [e for e in shown if e.id not in ahead]
    if new:  # encoded once, as they arrive: accepting them then costs a cache lookup
        cache.encode_ahead(MODEL, tuple(e.sentence for e in new), board.target)
        ahead.update(e.id for e in new)
    if not moderating:
        st.caption(
            f"{len(pending)} waiting, not shown here: nothing a student types reaches this screen before you "
            "accept it. Turn on **Moderate on this screen** where the class cannot see it."
            if pending else "Sentences the students send are counted here within a few seconds."
        )  # fmt: skip
        return
    with page_export.private():  # the queue is the teacher's, never a saved page's
        st.subheader(f"Waiting for you ({len(pending)})")
        note = st.session_state.pop(K_NOTE, None)
        if note:
            st.success(escape_md(note))
        if not pending:
            st.caption("Nothing waiting. Sentences the students send appear here within a few seconds.")
            return
        ids = tuple(e.id for e in shown)
        label = f"Accept all {len(shown)}" if len(shown) == len(pending) else f"Accept these {len(shown)}"
        accept, hide_all = st.columns(2)
        accept.button(label, key=shown_key(ids), on_click=_accept, args=(code, who, ids), type="primary",
                      icon=":material/done_all:", width="stretch")  # fmt: skip
        hide_all.button(f"Hide all {len(pending)} waiting", key="board_hide_waiting", on_click=_hide_waiting,
                        args=(code, who), icon=":material/block:", width="stretch",
                        help="Every waiting sentence, shown here or not, is deleted: for a flood.")  # fmt: skip
        per_student = {}
        for e in pending:
            per_student[e.student] = per_student.get(e.student, 0) + 1
        for e in shown:
            text, hide, theirs = st.columns([6, 1, 2], vertical_alignment="center")
            many = per_student[e.student]
            text.markdown(f"*{escape_md(e.sense)}* · {escape_md(e.sentence)}"
                          + (f" · {many} waiting from this student" if many > 1 else ""))  # fmt: skip
            hide.button("Hide", key=f"board_hide_{e.id}", on_click=_hide, args=(code, who, e.id))
            theirs.button("Hide all theirs", key=f"board_hide_student_{e.id}", on_click=_hide_student,
                          args=(code, who, e.id), help="Everything this student sent, waiting or on the board.")  # fmt: skip
        if len(pending) > len(shown):
            st.caption(f"… and {len(pending) - len(shown)} more, shown here as you accept or hide these.")


def board_charts(board: lb.Board, rows: list[lb.Entry]) -> None:
    if len(rows) < 3:  # the map is drawn from the start, so it fills in place (the browser has plotly ready)
        chart(empty_map("The map fills in from three accepted sentences"), key="board_projection", name_model=False)
        return
    ss, note = session.within_budget(accepted_set(board, rows), MODEL)
    tv = cache.target_vectors(MODEL, ss.sentences, ss.target)
    ss = ss.subset(tv.kept)
    last = tv.vectors.shape[1] - 1
    fig_key = (MODEL, ss.sentences, ss.target, ss.senses)
    try:
        proj = cache.projection(np.ascontiguousarray(tv.vectors[:, last, :]), "pca", 2)
    except ProjectionError as err:
        st.caption(escape_md(str(err)))
    else:
        shared = cache.shared_figure(
            "board_projection", fig_key,
            lambda: projection_scatter(
                proj.coords, ss.senses, list(ss.sentences), [str(i + 1) for i in range(len(ss))],
                axis_titles=explained_variance_titles(proj.explained_variance_ratio, 2),
                title=f"Every accepted sentence at layer {last} (PCA)",
            ),
        )  # fmt: skip
        chart(shared, key="board_projection")
    if note:
        st.caption(escape_md(note))
    first_cos, last_cos = cosine_matrix(tv.vectors[:, 0, :]), cosine_matrix(tv.vectors[:, last, :])
    floor = shared_floor(first_cos, last_cos)
    for col, m, title, name, scale in zip(
        st.columns(2, gap="medium"), (first_cos, last_cos), ("Layer 0: before context", f"Layer {last}: after context"),
        ("board_heatmap_first", "board_heatmap_last"), (False, True), strict=True,
    ):  # fmt: skip
        with col:
            st.markdown(f"**{title}**")
            shared = cache.shared_figure(
                name, fig_key,
                lambda m=m, scale=scale: similarity_heatmap(m, ss.sentences, ss.senses, None, zmin=floor, show_scale=scale),
            )  # fmt: skip
            chart(shared, key=name, share=0.5, name_model=False)
    sentence_table(ss.sentences, ss.senses)
    rc = cache.readout_chance(MODEL, ss.sentences, ss.senses, ss.target, "target", tv.vectors)
    if rc is None:
        st.caption("Separation per layer needs two senses with at least two accepted sentences each.")
    else:
        best = int(np.argmax(rc.accuracy))
        shared = cache.shared_figure(
            "board_readout", fig_key,
            lambda: readout_chart(layer_names(last), rc.accuracy, rc.majority, best=best,
                                  chance=(rc.shuffled_mean, rc.shuffled_p95)),
        )  # fmt: skip
        st.markdown("**Does each sentence sit nearest its own sense? Layer by layer, against chance**")
        chart(shared, key="board_readout")
        st.markdown(
            f"Each accepted sentence gets the sense whose average vector (without it) is nearest: at layer 0 "
            f"{chance_phrase(rc, 0)}; at layer {last} {chance_phrase(rc, last)}."
        )
    text = rows_to_text(list(zip(ss.senses, ss.sentences, strict=True)))
    st.button(
        "Open these sentences on every page", key="board_use", on_click=_use_everywhere, args=(text, ss.target),
        icon=":material/open_in_new:",
    )  # fmt: skip
    if st.session_state.get("board_used"):
        try:
            st.page_link("pages/layers.py", label="Every page now shows the class's sentences: Layer by layer",
                         icon=":material/stacked_line_chart:")  # fmt: skip
        except (StreamlitAPIException, KeyError):  # the page run on its own (no navigation)
            st.caption("Every page now shows the class's sentences.")
    share = absolute("/layers?" + urlencode({"target": ss.target, "text": pack_text(text)}))
    st.caption("The same set as a link (Layer by layer):")
    st.code(share, language=None, wrap_lines=True)
    st.download_button(
        "Download the sentences (CSV)",
        csv_text([(e.sense, e.sentence, e.status) for e in rows], header=("sense", "sentence", "status")),
        file_name=f"class_board_{board.target}.csv", mime="text/csv", key="board_csv", on_click="ignore",
    )  # fmt: skip


# --------------------------------------------------------------------------------------- which view
room = st.session_state.get(K_ROOM, "")
key = st.session_state.get(K_KEY, "") or link_key
if st.session_state.get("board_deleted"):
    st.success(f"The board {escape_md(st.session_state.pop('board_deleted'))} and its sentences are deleted.")
if not room:
    join_view()
else:
    # a board this session already opened is not a guess: a class behind one address stays in, whatever
    # wrong codes someone else at that address types
    client = "" if lb.normalise_code(room) == st.session_state.get(K_OPENED) else visitor.client()
    # no key: the browser the board remembers as its teacher's (a reload, a new tab, ?presenter=1)
    who = lb.Teacher(key=key) if key else lb.Teacher(browser=browser_id()) if store.is_teacher(room, browser_id()) else None
    try:
        current = store.teacher_board(room, who, client=client) if who else store.board(room, client=client)
    except lb.BoardNotFound as err:  # missing, expired or a wrong key: one message for all three
        st.title("Class board")
        st.error(escape_md(str(err)))
        st.session_state[K_ROOM], st.session_state[K_KEY], st.session_state[K_OPENED] = "", "", ""
        join_view(title=False)
    except lb.BoardError as err:  # too many wrong guesses from here: the link stays, to try again later
        st.title("Class board")
        st.error(escape_md(str(err)))
        st.button("Try again", key="board_retry", icon=":material/refresh:")
    else:
        st.session_state[K_ROOM], st.session_state[K_KEY] = current.code, key  # the code as stored, in the link
        st.session_state[K_OPENED] = current.code
        if who is not None:
            if key:
                remember(current.code, key)
            teacher_view(current.code, who, current)
        else:
            student_view(current.code, current)
link.sync_params(PARAMS)
