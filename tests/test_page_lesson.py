"""AppTest runs of the guided lesson (pages/lesson.py), from the first step to the summary.

The correct answers are computed here from the real model with lib/teaching/lesson.py and its step modules (tested on their own in
tests/test_lesson.py) on the same fixed sets the page uses, so the test checks that the page asks about
the right data and checks, records and remembers answers: every question is answered wrongly once (an
error and a hint), then correctly (a success and the explanation), and the progress reaches the URL.
"""

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from lib.charts.common import PRESENTER_FONT, presenter_layout
from lib.inputs.presets import preset_by_id
from lib.teaching import lesson, lesson_attention, lesson_geometry, lesson_senses
from tests.conftest import page_test, seed, url_written
from ui.widgets import escape_md

PAGE = "pages/lesson.py"
N = len(lesson.STEPS)
QUESTION_IDS = [s.id for s in lesson.STEPS if s.id != "summary"]


@pytest.fixture(scope="module")
def questions(encoder, shuffled_encoder, decoder) -> dict[str, lesson.Question]:
    """The question of every step, built from the model exactly as the lesson's fixed sets define them."""

    def preset(pid):
        ss = preset_by_id(pid).sentence_set()
        return ss, encoder.target_vectors(list(ss.sentences), ss.target)

    bat, tv = preset("bat")
    apple, tva = preset("apple")
    curves = [
        lesson_senses.readout_curve(pid, preset(pid)[1].vectors, preset(pid)[0].senses)
        for pid in ("bat", "bank", "apple")
    ]
    att = encoder.target_vectors([lesson.ATTENTION_SENTENCE], "bat")
    topics = encoder.encode([s for _, s in lesson.TOPIC_SENTENCES])
    e = tv.encoding
    return {
        "static": lesson_senses.static_vs_contextual(tv.static, tv.vectors, bat.labels, bat.senses, "bat").question,
        "apple": lesson_senses.centroid_reading(tva.vectors, apple.senses, apple.labels, "apple").question,
        "attention": lesson_attention.attention_look(
            att.encoding.attentions[0],
            att.encoding.tokens[0],
            att.encoding.special[0],
            att.spans[0].token_indices,
            "bat",
            layer=0,
        ).question,
        "layers": lesson_senses.sense_separation(tv.vectors, bat.senses, "bat").question,
        "deeper": lesson_senses.deeper_check(curves).question,
        "cls": lesson_geometry.pooling_comparison(
            topics.hidden_states, topics.special, [t for t, _ in lesson.TOPIC_SENTENCES]
        ).question,
        "anisotropy": lesson_geometry.anisotropy_floor(
            e.hidden_states, e.special, [sp.token_indices for sp in tv.spans], tv.vectors, bat.senses, "bat"
        ).question,
        "projection": lesson_geometry.projection_look(tv.vectors, bat.senses, "bat").question,
        "polysemy": lesson_geometry.hard_case(tv.vectors, bat.senses, bat.labels, "bat").question,
        "toy": lesson_attention.toy_cell().question,
        "context": _context_question(encoder),
        "random": _random_question(encoder, shuffled_encoder),
        "direction": _direction_question(encoder, decoder),
    }


def _direction_question(encoder, decoder) -> lesson.Question:
    from lib.stats.direction import cue_gaps

    p = preset_by_id(lesson.step_by_id("direction").preset)
    ss = p.sentence_set()
    cues = p.cue_of(ss.sentences)
    gaps = []
    for model in (decoder, encoder):
        tv = model.target_vectors(list(ss.sentences), ss.target)
        gaps.append(cue_gaps(tv.vectors, [ss.senses[i] for i in tv.kept], [cues[i] for i in tv.kept]))
    return lesson_senses.direction_check(*gaps)


def _context_question(encoder) -> lesson.Question:
    from lib.stats.context import occlusion

    occ = occlusion(encoder, lesson.CONTEXT_SENTENCE, "bat")
    return lesson_attention.context_prediction(occ.words, occ.shift, "bat", attention=occ.attention).question


def _random_question(encoder, control_encoder) -> lesson.Question:
    ss = preset_by_id(lesson.step_by_id("random").preset).sentence_set()
    tvt = encoder.target_vectors(list(ss.sentences), ss.target)
    tvr = control_encoder.target_vectors(list(ss.sentences), ss.target)
    return lesson_senses.architecture_check(tvt.vectors, tvr.vectors, [ss.senses[i] for i in tvt.kept], ss.target).question


def answer(at, step_id: str, q: lesson.Question, value) -> None:
    """Put ``value`` into the step's answer widget and press the check button."""
    key = f"lesson_q_{step_id}"
    if q.is_number:
        at.number_input(key=key).set_value(float(value))
    elif len(q.options) <= 3:
        at.radio(key=key).set_value(value)
    else:
        at.selectbox(key=key).set_value(value)
    at.button(key=f"lesson_check_{step_id}").click().run()
    assert not at.exception


def wrong_answer(q: lesson.Question):
    if q.is_number:
        return q.value + 0.5
    return next(o for o in q.options if o not in q.accepted)


def right_answer(q: lesson.Question):
    return q.value if q.is_number else sorted(q.accepted)[0]


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_lesson_from_start_to_end_wrong_once_then_right(questions):
    assert set(questions) == set(QUESTION_IDS)
    at = page_test(PAGE)
    at.run()
    assert not at.exception
    for k, step in enumerate(lesson.STEPS, start=1):
        assert at.session_state["lesson_step"] == k
        assert any(f"Step {k} of {N}" in h.value for h in at.header), k
        if step.id == "summary":
            break
        assert at.get("plotly_chart"), step.id
        q = questions[step.id]
        # the page offers the same choices the model's numbers give
        key = f"lesson_q_{step.id}"
        if q.is_number:
            assert at.number_input(key=key).value is None
        elif len(q.options) <= 3:
            assert list(at.radio(key=key).options) == [escape_md(o) for o in q.options]
        else:
            assert list(at.selectbox(key=key).options) == list(q.options)

        answer(at, step.id, q, wrong_answer(q))
        assert at.error and "Not quite" in at.error[0].value, step.id
        assert not at.success
        assert at.session_state["lesson_answers"][step.id].correct is False

        answer(at, step.id, q, right_answer(q))
        assert at.success and at.success[0].value.startswith("Right"), step.id
        assert not at.error
        assert any(m.value.startswith("**Why.**") for m in at.markdown)
        assert step.id in lesson.solved_from_mask(at.session_state["lesson_done"])

        at.button(key="lesson_next").click().run()
        assert not at.exception

    # the summary: every question solved, in the table, in the progress bits and in the URL
    table = at.table[0].value
    assert list(table["result"]) == ["correct"] * len(QUESTION_IDS)
    done = at.session_state["lesson_done"]
    assert set(lesson.solved_from_mask(done)) == set(QUESTION_IDS)
    url = url_written(at)
    assert url["lesson_step"] == str(N) and url["lesson_done"] == str(done)
    assert any("What this model showed" in m.value for m in at.markdown)
    assert at.get("download_button")


def test_back_and_next_buttons_and_step_picker():
    at = page_test(PAGE)
    at.run()
    assert at.button(key="lesson_back").disabled
    at.button(key="lesson_next").click().run()
    assert at.session_state["lesson_step"] == 2
    at.button(key="lesson_back").click().run()
    assert at.session_state["lesson_step"] == 1
    at.selectbox(key="lesson_step").set_value(N).run()
    assert not at.exception and at.button(key="lesson_next").disabled


def test_progress_comes_back_from_a_link():
    at = page_test(PAGE)
    at.query_params["lesson_step"] = "2"
    at.query_params["lesson_done"] = str(lesson.solved_mask(["static", "apple"]))
    at.run()
    assert not at.exception
    assert at.session_state["lesson_step"] == 2
    assert any("solved this one earlier" in c.value for c in at.caption)
    assert url_written(at)["lesson_done"] == str(lesson.solved_mask(["static", "apple"]))


@pytest.mark.parametrize("raw, expected", [("abc", 1), ("99", N), ("-3", 1)])
def test_a_garbled_step_in_the_link_falls_back(raw, expected):
    at = page_test(PAGE)
    at.query_params["lesson_step"] = raw
    at.run()
    assert not at.exception
    assert at.session_state["lesson_step"] == expected


def test_checking_without_an_answer_asks_for_one():
    at = page_test(PAGE)
    at.run()
    at.button(key="lesson_check_static").click().run()
    assert not at.exception
    assert at.warning and "first" in at.warning[0].value
    assert "static" not in at.session_state["lesson_answers"]


@pytest.mark.slow  # the direction-of-context step runs the decoder
def test_presenter_mode_runs_every_chart_step():
    at = page_test(PAGE)
    seed(at, presenter=True)
    at.run()
    for k, step in enumerate(lesson.STEPS, start=1):
        if step.id != "summary":
            assert not at.exception, step.id
            assert at.get("plotly_chart"), step.id
        if k < N:
            at.button(key="lesson_next").click().run()


def test_presenter_layout_scales_fonts_and_keeps_band_edges_invisible():
    fig = go.Figure(
        [
            go.Scatter(x=[0, 1], y=[0, 1], line={"width": 0}),
            go.Scatter(x=[0, 1], y=[1, 0], line={"width": 2}, marker={"size": 10}),
            go.Heatmap(z=np.eye(2), texttemplate="%{z}"),
        ]
    )
    fig.update_layout(height=400, title="t", margin={"t": 60})
    big = presenter_layout(fig)
    assert big.layout.font.size == PRESENTER_FONT
    assert big.layout.xaxis.tickfont.size > 14 and big.layout.yaxis.title.font.size == PRESENTER_FONT
    assert big.data[0].line.width == 0
    assert big.data[1].line.width > 2 and big.data[1].marker.size > 10
    assert big.data[2].textfont.size is None  # cell numbers: plotly fits them to the cell (fit_cell_text)
    assert big.layout.height == 500
    assert big.layout.margin.t > 60  # room for the larger title
    assert fig.layout.font.size is None and fig.data[1].line.width == 2  # the original is unchanged


@pytest.mark.slow  # over ~5 s of CPU
def test_the_random_weights_step_reveals_the_random_copy_once_answered(questions):
    """A link to the step opens it; the chart shows the trained line only, then both lines and the probe."""
    k = lesson.STEP_IDS.index("random") + 1
    assert k == N - 2  # before the direction step and the summary: earlier steps keep their numbers and bits
    q = questions["random"]
    at = page_test(PAGE)
    at.query_params["lesson_step"] = str(k)
    at.run()
    assert not at.exception
    assert any(f"Step {k} of {N}: Is the separation in the architecture or learned?" in h.value for h in at.header)
    fig = at.get("plotly_chart")[0].proto.spec
    assert fig.count('"name":') >= 1 and "shuffled weights, seed 0" not in fig.split('"title"')[0]
    assert list(at.radio(key="lesson_q_random").options) == [escape_md(o) for o in q.options]
    answer(at, "random", q, right_answer(q))
    assert at.success and at.success[0].value.startswith("Right")
    import json

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t.get("name", "") for t in spec["data"]]
    assert any("shuffled weights, seed 0" in n for n in names) and len(names) == 2
    why = next(m.value for m in at.markdown if m.value.startswith("**Why.**"))
    why = re.sub(r"\[([^\]]*)\]\(glossary#[^)]*\)", r"\1", why)  # glossary links read as their text
    why = re.sub(r"\\(.)", r"\1", why)  # Markdown escapes read as the characters
    assert "probe at layer" in why and "shuffled-label null up to" in why
    assert "What this control cannot rule out" in why and "Masking one word moves its target" in why
