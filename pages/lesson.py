"""Guided lesson: the course in order, one live chart and one question per step, checked against the model.

The steps, questions and answer checking live in lib/teaching/lesson.py (the course content) and the step
modules lib/teaching/lesson_senses.py, lib/teaching/lesson_geometry.py and lib/teaching/lesson_attention.py; this page reads the fixed lesson sets
through ui.cache (the model runs once per set), draws the figures, and keeps progress in session state and
in the URL (lesson_step, lesson_done).
"""

import contextlib
import functools

import pandas as pd
import streamlit as st

from lib.charts.attention import attention_heatmap, target_attention_bars
from lib.charts.context import shift_bars, word_bars
from lib.charts.controls import two_model_chart
from lib.charts.home import before_after_heatmaps, shared_floor
from lib.charts.layers import layer_names, trajectory_chart
from lib.charts.lesson import centroid_scatter, pair_strip, pooling_panels, readout_lines
from lib.charts.projection import explained_variance_titles, projection_scatter
from lib.charts.toy import vector_arrows
from lib.errors import ContextLensError, StepNotApplicable
from lib.inputs.presets import preset_by_id
from lib.models.encoder import DEFAULT_MODEL, model_key, split_model_key
from lib.models.facts import layer_zero_holds, layer_zero_shared
from lib.models.keys import DECODER_MODEL
from lib.serving.export import frame_csv
from lib.stats.baseline import other_token_masks, random_token_baseline
from lib.stats.context import ContextError
from lib.stats.contextuality import intra_sentence_similarity
from lib.stats.direction import cue_gaps
from lib.teaching import lesson, lesson_attention, lesson_geometry, lesson_senses
from ui import cache, controls, link, page_export, session
from ui.widgets import chart, download_figure, escape_md, intro, matrix_pair, page_intro, prose

STEPS = lesson.STEPS
N = len(STEPS)
K_STEP, K_DONE, K_ANSWERS = "lesson_step", "lesson_done", "lesson_answers"

st.title("Guided lesson")
page_intro("lesson", steps=N, questions=N - 1)

model = session.model_name()
enc = cache.encoder(model)
L = enc.num_layers

# ----------------------------------------------------------------------------------------- progress
PARAMS = [
    link.Param(K_STEP, "int", 1, lo=1, hi=N),
    # not a widget: bit i set means step i solved (lib.teaching.lesson.solved_mask); set by the "Check" button
    link.Param(K_DONE, "int", 0, lo=0, hi=2**N - 1, omit_default=True),
]
link.init_params(PARAMS)
answers: dict[str, lesson.AnswerRecord] = st.session_state.setdefault(K_ANSWERS, {})


def solved() -> set[str]:
    return set(lesson.solved_from_mask(st.session_state.get(K_DONE, 0)))


def _move(delta: int) -> None:
    st.session_state[K_STEP] = min(max(st.session_state[K_STEP] + delta, 1), N)


titles = {k: f"{k}. {lesson.step_title(s, enc)}" + (" ✓" if s.id in solved() else "") for k, s in enumerate(STEPS, start=1)}
pick, progress = st.columns([3, 2], vertical_alignment="bottom")  # one row on a laptop, stacked on a phone
pick.selectbox("Step", options=list(range(1, N + 1)), key=K_STEP, format_func=titles.get)
k = st.session_state[K_STEP]
step = STEPS[k - 1]
n_questions = N - 1
progress.progress(
    len(solved() - {"summary"}) / n_questions,
    text=f"{len(solved() - {'summary'})} of {n_questions} questions solved",
)


# ----------------------------------------------------------------------------------------- helpers
class LessonSet:
    """A fixed preset's vectors, with sense labels and chart labels aligned to the sentences kept."""

    def __init__(self, preset_id: str, model_name: str | None = None):
        p = preset_by_id(preset_id)
        ss = p.sentence_set()
        self.target = ss.target
        self.sentence_tuple = ss.sentences
        self.tv = cache.target_vectors(model_name or model, ss.sentences, ss.target)
        kept = self.tv.kept
        sub = ss.subset(kept)
        self.senses = list(sub.senses)
        self.labels = sub.labels
        self.sentences = [sp.sentence for sp in self.tv.spans]
        self.numbers = [f"S{i + 1}" for i in kept]


def show(fig, name: str, caption: str = "", *, name_model: bool = True) -> None:
    """A step's chart, its download button and, if given, the caption under them."""
    chart(fig, key=f"lesson_chart_{name}", name_model=name_model)
    download_figure(fig, f"context_lens_lesson_{name}", key=f"lesson_dl_{name}")
    if caption:
        prose(caption=True, text=caption)


def csv_button(label: str, data, name: str, key: str) -> None:
    """A step's CSV download (``context_lens_<name>.csv``); pressing it reruns nothing."""
    st.download_button(label, data=data, file_name=f"context_lens_{name}.csv", mime="text/csv", key=key,
                       on_click="ignore")  # fmt: skip


def answered_right(step_id: str) -> bool:
    r = answers.get(step_id)
    return bool(r and r.correct)


def _check(s: lesson.Step, q: lesson.Question) -> None:
    """Button callback: check the answer before the page is drawn, so progress shows at once."""
    given = st.session_state.get(f"lesson_q_{s.id}")
    fb = lesson.check_answer(q, given)
    st.session_state.setdefault("lesson_feedback", {})[s.id] = fb
    if fb.answered:
        shown = f"{given:g}" if isinstance(given, float) else str(given)
        st.session_state[K_ANSWERS][s.id] = lesson.AnswerRecord(s.id, shown, fb.correct, q.answer)
        if fb.correct:
            st.session_state[K_DONE] = st.session_state.get(K_DONE, 0) | (1 << STEPS.index(s))


def ask(s: lesson.Step, q: lesson.Question) -> None:
    """The question, an answer widget, a check button, and the feedback kept in session state."""
    key = f"lesson_q_{s.id}"
    st.subheader("Your turn")
    prose(escape_md(q.prompt))
    if q.is_number:
        st.number_input("Your answer", key=key, value=None, step=0.01, format="%.3f")
    elif len(q.options) <= 3:
        st.radio("Your answer", q.options, index=None, key=key, format_func=escape_md)
    else:
        st.selectbox("Your answer", q.options, index=None, key=key, placeholder="Choose an answer")
    st.button("Check my answer", key=f"lesson_check_{s.id}", type="primary", on_click=_check, args=(s, q))
    fb = st.session_state.get("lesson_feedback", {}).get(s.id)
    if fb is None:
        if s.id in solved():
            prose(caption=True, text="You solved this one earlier (the link remembers it); answer again if you like.")
        return
    if not fb.answered:
        st.warning(escape_md(fb.message))
    elif fb.correct:
        st.success(escape_md(fb.message))
        prose(f"**Why.** {escape_md(q.explanation)}")
    else:
        st.error(escape_md(fb.message))
        with st.expander("Show the model's answer"):
            prose(f"**{escape_md(q.answer)}.** {escape_md(q.explanation)}")


# ----------------------------------------------------------------------------------------- the steps
def step_static() -> lesson.Question:
    d = LessonSet("bat")
    r, floor = cache.lesson_numbers(  # the model's numbers on a fixed preset: once per model (a rerun finds them)
        "static",
        model,
        lambda: (
            r := lesson_senses.static_vs_contextual(d.tv.static, d.tv.vectors, d.labels, d.senses, d.target),
            shared_floor(r.static_cos, r.last_cos),
        ),
    )
    titles = ("Static: the model's input table", f"Contextual: after layer {L}")
    matrix_pair(
        (r.static_cos, r.last_cos), titles, ("lesson_chart_static", "lesson_chart_contextual"), d.sentences,
        d.senses, zmin=floor, made_from=("lesson", model, "static"),
    )  # fmt: skip
    download_figure(  # made when the button is pressed
        functools.partial(before_after_heatmaps, r.static_cos, r.last_cos, d.labels, d.senses, titles),
        "context_lens_lesson_static",
        key="lesson_dl_static",
    )
    prose(caption=True, text="Each cell is the cosine between two occurrences of “bat”; hover for the exact number.")
    return r.question


def step_apple() -> lesson.Question:
    d = LessonSet("apple")
    r = lesson_senses.centroid_reading(d.tv.vectors, d.senses, d.labels, d.target)
    idx = [int(i) for i in r.indices]
    wrong = [idx.index(w) for w in r.wrong] if answers.get("apple") else []
    fig = centroid_scatter(
        r.x,
        r.y,
        [d.senses[i] for i in idx],
        [d.sentences[i] for i in idx],
        [d.numbers[i] for i in idx],
        *r.senses_compared,
        highlight=wrong,
        title=f"Each “apple” at layer {r.layer}: which sense average is it nearer?",
    )
    show(fig, "apple", "Hover over a point to read its sentence. After you answer, the sentences read as the other "
         "sense are ringed.")  # fmt: skip
    return r.question


def step_attention() -> lesson.Question:
    tv = cache.target_vectors(model, (lesson.ATTENTION_SENTENCE,), "bat")
    enc_out, span = cache.sentence_attention(model, tv.encoding.sentences[0]), tv.spans[0]
    r = lesson_attention.attention_look(
        enc_out.attentions[0], enc_out.tokens[0], enc_out.special[0], span.token_indices, "bat", layer=0,
        causal=enc.causal,
    )
    prose(f"Sentence: *{escape_md(lesson.ATTENTION_SENTENCE)}*")
    fig = target_attention_bars(
        r.weights,
        r.attended_by,
        list(r.labels),
        r.target_positions,
        title=f"Layer {r.layer_number}, mean of the heads",
    )
    show(fig, "attention", "Top: how “bat” shares its attention (the bars add up to 1). Bottom: how much each word "
         "piece looks at “bat”. The **Attention** page shows every layer and head.")  # fmt: skip
    return r.question


def step_layers() -> lesson.Question:
    d = LessonSet("bat")
    r = lesson_senses.sense_separation(
        d.tv.vectors, d.senses, d.target, layer_zero=layer_zero_holds(enc), shared=layer_zero_shared(enc)
    )
    fig = trajectory_chart(
        layer_names(L), same=r.same, different=r.different, title="“bat” through the layers"
    )
    show(fig, "layers")
    return r.question


def readout_curves() -> list[lesson_senses.ReadoutCurve]:
    """The sense readout per layer of the three presets the lesson compares ("bat" is asked about)."""
    curves = []
    for pid in ("bat", "bank", "apple"):
        d = LessonSet(pid)
        ss = preset_by_id(pid).sentence_set()
        rc = cache.readout_chance(model, ss.sentences, tuple(d.senses), ss.target, "target", d.tv.vectors)
        curves.append(lesson_senses.readout_curve(pid, d.tv.vectors, d.senses, chance=rc))
    return curves


def bat_intra_sentence():
    """Intra-sentence similarity per layer of the bat sentences (how close each word is to its sentence's mean)."""
    d = LessonSet("bat")
    enc_out = d.tv.encoding
    return intra_sentence_similarity(enc_out.hidden_states, other_token_masks(enc_out.special, [()] * len(enc_out.special)))


def deeper_result(curves: list[lesson_senses.ReadoutCurve]) -> lesson_senses.DeeperCheck:
    return lesson_senses.deeper_check(curves, bat_intra_sentence(), sentence_model=model == DEFAULT_MODEL)


def step_deeper() -> lesson.Question:
    curves = readout_curves()
    r = deeper_result(curves)
    fig = readout_lines(
        [c.name for c in curves],
        [c.accuracy for c in curves],
        [c.majority_baseline for c in curves],
        title="Share of sentences whose sense is read correctly, layer by layer",
        chance=[c.chance_p95 for c in curves],
    )
    show(fig, "deeper")
    table = pd.DataFrame(
        [c.accuracy for c in curves],
        index=[c.name for c in curves],
        columns=[f"layer {i}" for i in range(L + 1)],
    )
    st.table(table.map(lambda a: f"{a:.0%}"))
    prose(caption=True, text=
        "Each sentence is "
        + ", ".join(f"{1 / c.n_evaluated:.0%} of '{c.name}'" for c in curves if c.n_evaluated)
        + ": a difference of one step in a line is one sentence."
    )
    csv_button("Download the table (CSV)", frame_csv(table, index_label="preset"), "readout_by_layer", "lesson_dl_deeper_csv")
    return r.question


def step_cls() -> lesson.Question:
    topics = [t for t, _ in lesson.TOPIC_SENTENCES]
    sentences = tuple(s for _, s in lesson.TOPIC_SENTENCES)
    enc_out = cache.encoding(model, sentences)
    r = cache.lesson_numbers(
        "cls", model, lambda: lesson_geometry.pooling_comparison(
            enc_out.hidden_states, enc_out.special, topics, causal=enc.causal)
    )  # fmt: skip
    fig = pooling_panels(
        r.cls_same,
        r.cls_different,
        r.mean_same,
        r.mean_different,
        title="Two sentence vectors: same topic vs different topics",
        single="[CLS] vector" if r.single == "[CLS]" else "last word piece",
    )
    show(fig, "cls")
    with st.expander("The fifteen sentences"):
        st.dataframe(pd.DataFrame(lesson.TOPIC_SENTENCES, columns=["topic", "sentence"]), hide_index=True)
    return r.question


def step_anisotropy() -> lesson.Question:
    d = LessonSet("bat")
    enc_out = d.tv.encoding
    r = cache.lesson_numbers(
        "anisotropy",
        model,
        lambda: lesson_geometry.anisotropy_floor(
            enc_out.hidden_states,
            enc_out.special,
            [sp.token_indices for sp in d.tv.spans],
            d.tv.vectors,
            d.senses,
            d.target,
            tokens=enc_out.tokens,
        ),
    )
    fig = trajectory_chart(
        layer_names(L),
        same=r.same,
        different=r.different,
        baseline=(r.floor, r.low, r.high),
        title="“bat” pairs against random pairs of other word pieces",
    )
    show(fig, "anisotropy", "The grey dashed line is the floor: unrelated word pieces of the bat sentences, each pair "
         "from two different sentences.")  # fmt: skip
    return r.question


def step_projection() -> lesson.Question:
    d = LessonSet("bat")
    r = lesson_geometry.projection_look(d.tv.vectors, d.senses, d.target)
    fig = projection_scatter(
        r.coords,
        d.senses,
        d.sentences,
        d.numbers,
        axis_titles=explained_variance_titles(r.explained, 2),
        title=f"PCA of the “bat” vectors at layer {r.layer}",
    )
    show(fig, "projection")
    return r.question


def step_polysemy() -> lesson.Question:
    d = LessonSet("bat")
    r = lesson_geometry.hard_case(d.tv.vectors, d.senses, d.labels, d.target)
    pairs = [tuple(int(x) for x in p) for p in r.pairs]
    hover = [f"{d.numbers[i]} + {d.numbers[j]}: {d.sentences[i]} | {d.sentences[j]}" for i, j in pairs]
    ab = pairs.index(tuple(sorted((r.a, r.b))))
    ac = pairs.index(tuple(sorted((r.a, r.c))))
    highlight = {ab: f"{d.numbers[r.a]}–{d.numbers[r.b]}", ac: f"{d.numbers[r.a]}–{d.numbers[r.c]}"}
    fig = pair_strip(
        r.pair_cos, r.same, hover, highlight=highlight, title=f"Every pair of “bat”s at layer {r.layer}"
    )
    show(fig, "polysemy")
    csv_button(
        "Download the evidence card (CSV)",
        lesson_geometry.evidence_csv(d.tv.vectors, d.sentences, d.senses, d.target),
        "evidence_card_bat",
        "lesson_dl_evidence",
    )
    return r.question


def step_toy() -> lesson.Question:
    r = lesson_attention.toy_cell()
    labels = list(r.tokens)
    prose("**X = e + p**, one row per token:")
    st.table(pd.DataFrame(r.X, index=labels, columns=["x₁", "x₂"]).map(lambda v: f"{v:.2f}"))
    prose("**Each token before (X) and after attention**")
    fig = vector_arrows(r.X, r.output, labels)
    show(fig, "toy")
    if answered_right("toy"):
        show(
            attention_heatmap(r.weights, labels, title="The attention weights, softmax(X Xᵀ) row by row"),
            "toy_weights",
        )
    else:
        prose(caption=True, text="The heatmap of all the weights appears once you have answered correctly.")
    return r.question


def step_context() -> lesson.Question:
    """Predict which word moves "bat" most, then see the measurement (shown once answered)."""
    occ = cache.occlusion(model, lesson.CONTEXT_SENTENCE, "bat", None)
    r = lesson_attention.context_prediction(
        occ.words, occ.shift, "bat", attention=occ.attention, replacement=occ.replacement,
        only=occ.before_target if enc.causal else None,  # a later word cannot move a left-to-right model's target
    )
    prose(f"Sentence: *{escape_md(lesson.CONTEXT_SENTENCE)}*")
    show(
        word_bars(
            occ.words,
            occ.attention[-1],
            axis_title="attention from “bat” (mean over heads)",
            title=f"Where “bat” looks in layer {r.layer}",
        ),
        "context_attention",
    )
    if answers.get("context"):
        show(
            shift_bars(
                occ.words,
                occ.shift[-1],
                occ.attention[-1],
                title=f"The measurement: how far “bat” moves at layer {r.layer} when each word is "
                + ("masked" if occ.replacement else "deleted"),
            ),
            "context_shift",
        )
    else:
        prose(caption=True, text="The measured shifts appear once you have answered.")
    return r.question


def direction_gaps() -> dict:
    """The encoder's and the decoder's sense gaps on the cue preset, per half (cached model passes); raises
    StepNotApplicable when either model cannot be loaded here."""
    p = preset_by_id("bank-cue")
    ss = p.sentence_set()
    cues = p.cue_of(ss.sentences)
    gaps = {}
    for name, family in ((DEFAULT_MODEL, "encoder"), (DECODER_MODEL, "decoder")):
        loaded, err = cache.try_encoder(name)
        if loaded is None:
            raise StepNotApplicable(f"the {family} is not available here ({err or 'it could not be loaded'}).")
        tv = cache.target_vectors(name, ss.sentences, ss.target)
        gaps[family] = cue_gaps(tv.vectors, [ss.senses[i] for i in tv.kept], [cues[i] for i in tv.kept])
    return gaps


def step_direction() -> lesson.Question:
    """Predict whether the decoder separates the senses when the cue comes only after "bank"."""
    gaps = direction_gaps()
    d = gaps["decoder"]
    fig, _ = controls.two_model_figure(
        [("cue before “bank”", d.before, "solid")]
        + ([("cue only after", d.after, "dash")] if answers.get("direction") else []),
        title="The decoder (a 4-bit copy of SmolLM2): same − different sense",
        y_title="same − different sense cosine",
        zero_line=True,
    )
    show(fig, "direction", name_model=False)
    if answers.get("direction"):
        e = gaps["encoder"]
        fig_e, _ = controls.two_model_figure(
            [("cue before “bank”", e.before, "solid"), ("cue only after", e.after, "dash")],
            title="The encoder, the same sentences",
            y_title="same − different sense cosine",
            zero_line=True,
        )
        show(fig_e, "direction_encoder", name_model=False)
    else:
        prose(caption=True, text="The cue-after line, and the encoder's, appear once you have answered.")
    return lesson_senses.direction_check(d, gaps["encoder"])


def twin_keys() -> tuple[str, str, int]:
    """The trained model and its shuffled-weights control (seed 0, or the sidebar's seed when a control is
    in use)."""
    base, weights, seed = split_model_key(model)
    seed = seed if weights != "trained" else 0
    return model_key(base), model_key(base, "shuffled", seed), seed


def last_layer_floor(d: LessonSet) -> float:
    """The cosine of random pairs of other word pieces at the last layer of a lesson set (how narrow its cone)."""
    enc_out = d.tv.encoding
    masks = other_token_masks(enc_out.special, [sp.token_indices for sp in d.tv.spans])
    base = random_token_baseline(enc_out.hidden_states, masks, tokens=enc_out.tokens)
    return float("nan") if base is None else float(base.mean[-1])


def architecture_result(*, with_probes: bool = False) -> tuple[lesson_senses.ArchitectureCheck, LessonSet, LessonSet]:
    """The trained and control (shuffled) vectors of the step's preset, compared (lib.teaching.lesson_senses.architecture_check).

    with_probes (once answered): the probes, how much context each model takes in and each one's cone, which
    the explanation quotes."""
    trained_key, random_key, seed = twin_keys()
    for key in (trained_key, random_key):
        enc_k, err = cache.try_encoder(key)
        if enc_k is None:
            raise StepNotApplicable(err or "the second model could not be loaded")
    pid = lesson.step_by_id("random").preset
    dt, dr = LessonSet(pid, trained_key), LessonSet(pid, random_key)
    if dt.tv.kept != dr.tv.kept:
        raise StepNotApplicable("the two copies of the model did not keep the same sentences")
    probes = context = floors = None
    if with_probes:
        senses = tuple(dt.senses)
        probes = (
            cache.probe(trained_key, dt.sentence_tuple, senses, dt.target, dt.tv.vectors),
            cache.probe(random_key, dr.sentence_tuple, senses, dr.target, dr.tv.vectors),
        )
        with contextlib.suppress(ContextError):  # no sentence could be measured: the caveat is left out
            context = tuple(cache.context_use(key, dt.sentence_tuple, dt.target) for key in (trained_key, random_key))
        floors = tuple(
            cache.lesson_numbers(f"floor-{pid}", key, lambda d=d: last_layer_floor(d))
            for key, d in ((trained_key, dt), (random_key, dr))
        )
    r = lesson_senses.architecture_check(
        dt.tv.vectors, dr.tv.vectors, dt.senses, dt.target, seed=seed, probes=probes, context=context, floors=floors
    )
    return r, dt, dr


def step_random() -> lesson.Question:
    """Predict what the shuffled-weights control does, then see its gap per layer (shown once answered)."""
    revealed = bool(answers.get("random"))
    r, dt, _ = architecture_result(with_probes=revealed)
    trained_key, random_key, _ = twin_keys()
    what = "same-sense minus different-sense cosine"
    curves = [(controls.label(trained_key), r.trained_gap, "solid")]
    if revealed:
        curves.append((controls.label(random_key), r.random_gap, "dash"))
    title = f"“{dt.target}”: {what}, " + (
        controls.pair_title(trained_key, random_key) if revealed else "trained weights"
    )
    caption = (
        "Blue: the trained weights; red, dashed: the same architecture with its weights shuffled. The "
        "**Layer by layer** and **Anisotropy** pages can put any two models side by side."
        if revealed
        else "The control's line appears once you have answered."
    )
    show(two_model_chart(curves, title=title, y_title=what, relative=False, zero_line=True), "random", caption,
         name_model=False)  # fmt: skip
    return r.question


def findings() -> list[lesson.Finding]:
    """The surprising results of this model, recomputed from the lesson sets (cached, so cheap)."""
    apple, bat = LessonSet("apple"), LessonSet("bat")
    topics = [t for t, _ in lesson.TOPIC_SENTENCES]
    enc_out = cache.encoding(model, tuple(s for _, s in lesson.TOPIC_SENTENCES))
    curves = readout_curves()
    results = [
        lesson_senses.centroid_reading(apple.tv.vectors, apple.senses, apple.labels, apple.target),
        deeper_result(curves),
        cache.lesson_numbers(
            "cls", model, lambda: lesson_geometry.pooling_comparison(
                enc_out.hidden_states, enc_out.special, topics, causal=enc.causal)
        ),  # fmt: skip
        lesson_geometry.hard_case(bat.tv.vectors, bat.senses, bat.labels, bat.target),
    ]
    with contextlib.suppress(ContextLensError):  # the control cannot be loaded (e.g. a hosted model list)
        results.append(architecture_result()[0])
    if "direction" in answers:  # the decoder's passes are made (and cached) by that step, not by the summary
        with contextlib.suppress(ContextLensError):
            gaps = direction_gaps()
            results.append(lesson_senses.direction_result(gaps["decoder"], gaps["encoder"]))
    return lesson.summary_findings(results)


def step_summary() -> None:
    rows = lesson.report_rows(answers, tuple(solved()), enc)
    st.table(pd.DataFrame(rows).set_index("step"))
    n_right = sum(1 for r in rows if r["result"] in ("correct", "solved earlier"))
    prose(f"You have solved **{n_right} of {len(rows)}** questions.")
    csv_button("Download your answers (CSV)", lesson.report_csv(answers, tuple(solved()), enc), "lesson_answers",
               "lesson_dl_report")  # fmt: skip
    found = findings()
    if found:
        text = (
            f"**What this model showed**: {len(found)} result{'s' if len(found) != 1 else ''}, recomputed just "
            "now. Test each claim on your own sentences on the other pages."
        )
        for group, title in lesson.GROUP_TITLES.items():
            items = [f for f in found if f.group == group]
            if items:
                text += f"\n\n*{title}*\n" + "\n".join(
                    f"- {escape_md(f.text)}" + (f" ({escape_md(f.because)})" if f.because else "") for f in items
                )
        prose(text)


def run(s: lesson.Step) -> lesson.Question | None:
    """Step ``s``'s charts and text; its question, or None (the summary, or a step this model cannot run: said)."""
    try:
        return RENDER[s.id]()
    except ContextLensError as err:  # e.g. StepNotApplicable: a model without [CLS]; anything else is a bug
        st.warning(f"This step cannot run with the model {escape_md(session.model_display(model))}: {escape_md(str(err))}")
        return None


def step_for_file(k: int, s: lesson.Step) -> None:
    """One step as the lesson's file shows it: its text and chart, the question, the learner's answer if given."""
    st.header(f"Step {k} of {N}: {lesson.step_title(s, enc)}")
    st.markdown(lesson.step_text(s, enc))
    q = run(s)
    if q is not None:
        r = answers.get(s.id)
        given = f"{escape_md(r.answer)} ({'right' if r.correct else 'not what the model says'})" if r else (
            "solved earlier" if s.id in solved() else "not answered")  # fmt: skip
        st.markdown(f"**Question.** {escape_md(q.prompt)}\n\n**Your answer:** {given}\n\n"
                    f"**The model's answer:** {escape_md(q.answer)}. {escape_md(q.explanation)}")  # fmt: skip


RENDER = {
    "static": step_static,
    "apple": step_apple,
    "attention": step_attention,
    "layers": step_layers,
    "deeper": step_deeper,
    "cls": step_cls,
    "anisotropy": step_anisotropy,
    "projection": step_projection,
    "polysemy": step_polysemy,
    "toy": step_toy,
    "context": step_context,
    "random": step_random,
    "direction": step_direction,
    "summary": step_summary,
}

# ----------------------------------------------------------------------------------------- the page
st.header(f"Step {k} of {N}: {lesson.step_title(step, enc)}")
intro(lesson.step_text(step, enc), label="About this step")  # folded in presenter mode (beside the heading): the chart comes first
prose(caption=True, text=("Misconception check · " if step.misconception else "") + f"Part of the course: {step.part}")
question = run(step)
if question is not None:
    ask(step, question)

st.divider()
back, _, nxt = st.columns([1, 3, 1])
back.button("← Back", key="lesson_back", on_click=_move, args=(-1,), disabled=k == 1, width="stretch")
nxt.button("Next →", key="lesson_next", on_click=_move, args=(1,), disabled=k == N, width="stretch")

link.sync_params(PARAMS)
if page_export.current() and st.button("Prepare the whole lesson as one file", key="lesson_export_prepare"):
    with page_export.offscreen() as every_step:  # recorded for the file, not shown
        for i, s in enumerate(STEPS, start=1):
            step_for_file(i, s)
    page_export.offer(every_step, title="Guided lesson", label="Download the whole lesson", key="lesson_export",
                      with_set=False)  # fmt: skip
