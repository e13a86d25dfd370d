"""The guided lesson's course content: its steps in order, their teaching text, fixed sentences and choices,
the questions and how an answer is checked, progress bits for links, and the report.

Each step's question is built by a function in a step module, from numbers the model actually computed:
:mod:`lib.teaching.lesson_senses` (static vs contextual, the apple exercise, layer by layer, deeper is better?,
trained against random weights), :mod:`lib.teaching.lesson_geometry` ([CLS] as a sentence vector, anisotropy, a 2-D
projection, polysemy is solved?) and :mod:`lib.teaching.lesson_attention` (attention, attention by hand, what moves
the word). The correct answer is derived there from those numbers (with a small tolerance, or a set of
acceptable choices where the model's numbers nearly tie), never typed in. The maths itself lives in the
other lib modules (``lib.stats.similarity``, ``lib.stats.readout``, ``lib.stats.chance``, ``lib.stats.baseline``, ``lib.stats.geometry``,
``lib.models.attention``, ``lib.stats.projection``, ``lib.teaching.toy_attention``), each with its own tests; the lesson only picks
what to ask, decides which answers count, and phrases them.

Course order (seeds 000-002): static vs contextual -> attention -> layer by layer -> anisotropy ->
projections -> the toy attention calculator, with the lesson's "apple" exercise and one step for each
common misconception ([CLS] as a sentence vector; deeper is always better; polysemy is solved).

When the data in hand cannot support a step (too few senses, a model without [CLS]), the step raises
:class:`lib.errors.StepNotApplicable`, whose message the page shows; any other exception is a bug. Layer
indices are 0-based like the arrays (hidden-state index 0 = the input layer; attention index 0 = the
first transformer layer, "layer 1" on screen).

Plain Python, no Streamlit: a notebook can run the lesson exactly as ``pages/lesson.py`` does:

    >>> from lib.inputs.presets import preset_by_id
    >>> from lib.models.encoder import load_encoder
    >>> from lib.teaching import lesson_senses
    >>> ss = preset_by_id("bat").sentence_set()
    >>> tv = load_encoder().target_vectors(list(ss.sentences), "bat")
    >>> q = lesson_senses.sense_separation(tv.vectors, list(ss.senses), "bat").question
    >>> q.options[0], check_answer(q, "Layer 0 (input)").correct
    ('Layer 0 (input)', False)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import StepNotApplicable
from lib.serving.export import dict_rows_csv

# Two cosines (or gaps, or attention weights) closer than this count as a tie: either choice is accepted.
COSINE_TIE = 0.01
# Two sentence vectors whose topic gaps differ by less than this are "about the same".
POOLING_TIE = 0.02
# How far a typed number may be from the model's: cosines read off a chart, and a hand-computed softmax.
READ_TOLERANCE = 0.02
HAND_TOLERANCE = 0.01

NONE_WRONG = "None: every sentence is on its own side"

# The fixed sentences and choices of the steps (course content; the step modules use them).

# The sentence the attention step looks into (ours; the word that gives the sense away sits right before).
ATTENTION_SENTENCE = "Her new cricket bat is made of English willow."
CONTEXT_SENTENCE = ATTENTION_SENTENCE  # the same sentence, so the two steps can be compared

# Our own sentences, five topics, three each; none shares a content word with another topic.
TOPIC_SENTENCES: tuple[tuple[str, str], ...] = (
    ("cooking", "Stir the onions slowly until they turn golden and sweet."),
    ("cooking", "She kneaded the dough and left it to rise overnight."),
    ("cooking", "Add a pinch of salt to the boiling water before the pasta."),
    ("football", "The striker scored twice in the second half."),
    ("football", "Our goalkeeper saved a penalty in the last minute."),
    ("football", "The referee showed him a red card for the late tackle."),
    ("weather", "Heavy rain is expected across the north by tomorrow evening."),
    ("weather", "A thick fog rolled in from the sea this morning."),
    ("weather", "The heatwave broke records for the hottest day in July."),
    ("computers", "My laptop froze while the update was installing."),
    ("computers", "He wrote a short script to rename all the files."),
    ("computers", "The new processor runs much cooler than the old one."),
    ("music", "The orchestra tuned their instruments before the concert."),
    ("music", "She practised the piano for two hours every day."),
    ("music", "The band played their new song for the first time."),
)

CLS_CHOICE = "the [CLS] vector"
LAST_PIECE = "the last word piece"  # a left-to-right model's single sentence vector: it has read the whole sentence
LAST_CHOICE = "the last word piece's vector"
MEAN_CHOICE = "the mean of the word pieces"
SAME_CHOICE = "about the same"

YES, NO = "Yes", "No"

# The answers of the trained-against-random step.
AS_TRAINED = "Yes, about as far as the trained model"
SOME = "Yes, but clearly less far than the trained model"
NOT_AT_ALL = "No: the gap stays where it is at layer 0"


# --------------------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of the lesson.

    id:            short, stable name (widget keys, the report)
    title:         heading on the page
    part:          which part of the course it belongs to (and which page explores it further)
    misconception: True for the three "common misconception" checks
    preset:        the fixed preset the step reads ("bat", "apple"), or None
    text:          the teaching text, Markdown, written in our own words from the course seeds
    """

    id: str
    title: str
    part: str
    misconception: bool
    preset: str | None
    text: str


STEPS: tuple[Step, ...] = (
    Step(
        "static",
        "One word, one vector?",
        "Static vs contextual",
        False,
        "bat",
        "A **static** embedding (word2vec, GloVe, or the model's own input table) is a lookup: the word "
        "*bat* gets one vector, whether a bat flies out of a barn or cracks against a fastball. A "
        "**contextual** model gives every *occurrence* its own vector, computed from the whole sentence. "
        "Left: the cosine between the static vectors of *bat* in twelve sentences. Right: the same "
        "occurrences after the last layer.",
    ),
    Step(
        "apple",
        "Exercise: apple, fruit or company",
        "Static vs contextual",
        False,
        "apple",
        "The course exercise: a word starts from one base vector and its context pushes it towards one "
        "meaning, so *apple* in a fruit sentence should drift towards food, and in a company sentence "
        "towards technology. Here is what the real model does. Each point is one *apple*; across is its "
        "cosine with the average fruit *apple*, up its cosine with the average company *apple* (a "
        "sentence's own group is averaged without it). Below the diagonal reads as fruit, above as company.",
    ),
    Step(
        "attention",
        "Where does the word look?",
        "Attention",
        False,
        "bat",
        "Context gets in through **attention**. In each layer every word piece sends a *query* (what it "
        "needs), every word piece offers a *key* (what it can give) and a *value* (what it passes on). "
        "The query-key matches, turned into weights that add up to 1, say how much of each value is mixed "
        "into the word's new vector. The bars show where *bat* looks in the sentence below, averaged over "
        "the layer's heads.",
    ),
    Step(
        "layers",
        "Layer by layer",
        "Layer by layer",
        False,
        "bat",
        "The model builds its vectors in layers: layer 0 is the sum of the word piece's, the position's and "
        "the segment's embeddings, normalised (LayerNorm), and each layer (attention, then a feed-forward "
        "block) mixes in more context. Probing studies find surface "
        "features early and meaning later, but only roughly. The lines follow the average cosine of *bat* "
        "pairs with the **same** sense and with **different** senses through the layers; the gap between "
        "them is how far apart the senses are *on average*.",
    ),
    Step(
        "deeper",
        "Misconception: deeper is always better",
        "Layer by layer",
        True,
        "bat",
        "A common belief: the last layer is always the best one to use. The course warns that the best "
        "layer depends on the task. Here the task is reading the sense: each sentence is given the sense "
        "whose average vector (built without it) is closest, at every layer. The lines are the share of "
        "sentences read correctly for three presets; a dotted line is always guessing the commonest sense, "
        "and the shaded band is chance: the same readout with the sense labels shuffled, up to its 95th "
        "percentile.",
    ),
    Step(
        "cls",
        "Misconception: [CLS] is a sentence vector",
        "Layer by layer",
        True,
        None,
        "BERT puts a **[CLS]** token in front of every sentence, and it is tempting to take its vector as "
        "the sentence's meaning. It was trained for a different job (next-sentence prediction in BERT), "
        "and the course says to test it against **mean pooling**, the average of the word pieces (here "
        "without [CLS] and [SEP]; sentence-transformers' own mean pooling includes them). The lesson encodes "
        "fifteen sentences of its own on five topics and compares same-topic pairs with different-topic "
        "pairs under both choices. On the default model the contest is built in favour of the mean: "
        "all-MiniLM-L6-v2 was never trained with next-sentence prediction and was fine-tuned so that the "
        "mean of its word pieces is the sentence vector. Choose a raw BERT (e.g. bert-base-uncased) in the "
        "sidebar for a fairer test: it is not bundled, so it needs a server with downloads switched on "
        "(CONTEXT_LENS_ALLOW_DOWNLOADS=1) or a local folder holding it.",
    ),
    Step(
        "anisotropy",
        "Anisotropy: cosine has a floor",
        "Anisotropy",
        False,
        "bat",
        "Contextual vectors tend to crowd into a narrow cone: two **unrelated** words can have a clearly "
        "positive cosine, where random directions would give about 0, so a raw cosine means little on its "
        "own. How high this floor is depends on the model and the layer (Ethayarajh, 2019, measured up to 0.68 "
        "in BERT-base). "
        "The grey dashed line is the average cosine of random pairs of other word "
        "pieces in the *bat* sentences, one from each of two different sentences as in Ethayarajh (2019) "
        "(band: 10th to 90th percentile): the *set's random-pair floor*, which differs from the **Anisotropy** "
        "page's corpus anisotropy for the same model and layer; the coloured lines are the *bat* "
        "pairs. z-scoring, whitening or removing top components fix this (see the **Anisotropy** page).",
    ),
    Step(
        "projection",
        "A picture of 384 dimensions",
        "Projections",
        False,
        "bat",
        "To look at the vectors we squeeze them into two dimensions. **PCA** keeps the two directions "
        "along which the points vary most; each point's position along them is exact, but every other "
        "direction is dropped, so two points can look close and be far apart, and the axis titles say how much of the variance is kept. UMAP and t-SNE (on the "
        "**Projections** page) keep neighbourhoods instead of distances.",
    ),
    Step(
        "polysemy",
        "Misconception: polysemy is solved",
        "Projections",
        True,
        "bat",
        "Contextual vectors do separate senses on average, but they do not list senses the way a "
        "dictionary does, and single occurrences can land close to the wrong sense (rare senses most of "
        "all). Each dot is one pair of *bat* sentences at the last layer, in two rows: pairs with the "
        "same sense and pairs with different senses.",
    ),
    Step(
        "toy",
        "Attention by hand",
        "Attention by hand",
        False,
        None,
        "The course's worked example: three tokens *The cat sat* in two dimensions, e(The) = [1, 0], "
        "e(cat) = [0, 1], e(sat) = [1, 1], plus positions [0.1, 0], [0, 0.1], [0.1, 0.1]. With Q = K = V = X "
        "and no scaling, the scores are S = X Xᵀ, each row goes through a softmax, and each token's new "
        "vector is its weighted mix of the rows of V (the arrows: before and after). Work one weight out "
        "by hand; the **Attention by hand** page shows every step.",
    ),
    # "What moves the word": placed before the summary so the progress bits of the steps above
    # (lesson_done in links) keep their meaning.
    Step(
        "context",
        "What moves the word?",
        "What moves the word",
        False,
        None,
        "The experiment behind the whole course: if the context pushes a word towards one meaning, then "
        "hiding a word that gives the meaning away should move the word's vector. The model can run it for us: "
        "replace one word at a time by [MASK] and measure how far *bat* moves (1 − cosine with its vector in "
        "the full sentence). The shift counts any change of the vector, not only a change of meaning, so "
        "a little word can move it too. The bars show where *bat* looks in the last layer (attention, mean "
        "over heads). Predict first, then see the measurement. The **What moves the word** page runs it on "
        "any sentence.",
    ),
    # "Is the separation in the architecture or learned?": also before the summary, after
    # "context", so every earlier step keeps its number and its progress bit.
    Step(
        "random",
        "Is the separation in the architecture or learned?",
        "Layer by layer",
        False,
        "bank",
        "Compared to what? A **control**: the same architecture with the trained weights **shuffled** within "
        "each matrix (seed 0). It keeps the tokenizer, the layers and every matrix's numbers, hence each "
        "matrix's scale; what training arranged is gone, and keeping the scale need not keep how sharply its "
        "attention focuses or how much context each word takes in (the answer gives both, measured). The blue "
        "line is the trained model's same-sense minus different-sense cosine per layer (the measure of step 4, "
        "here on the *bank* sentences). Predict the control's line, then see it.",
    ),
    # "Direction of context": before the summary too, so every earlier step keeps its progress bit.
    Step(
        "direction",
        "Direction of context: left to right",
        "Direction of context",
        False,
        "bank-cue",
        "Every chatbot is a **decoder**: it reads left to right, each word piece seeing only itself and the "
        "words before it (the **causal mask**). So when it makes the vector of *bank*, it has not read what "
        "comes after. An encoder like the default model reads both sides at once. Half of these *bank* "
        "sentences name the cue (river, loan) before *bank*, half only after it, with the same openings for "
        "both senses. The lines are the same-sense minus different-sense cosine per layer in each half.",
    ),
    Step(
        "summary",
        "Your evidence card",
        "Summary",
        False,
        None,
        "What you found, question by question, with the model's own numbers. Keep it: the course's "
        "*evidence card* is a small table with at least one surprising result. Below the table, the "
        "results this model showed are sorted by a rule on their numbers: a sentence whose word sits nearer "
        "another sense than its own is a surprise; a result the course predicts, or that goes beyond it, is "
        "filed as such. **Layer by layer** builds the whole card on your own sentences.",
    ),
)

STEP_IDS = tuple(s.id for s in STEPS)

# The steps whose text depends on the model, said for a model whose facts differ from the default encoder's
# (lib.teaching.lesson.step_text reads the facts: causal, mask_token, positions, hidden_size)
_CAUSAL_CLS_TEXT = (
    "A left-to-right model has no [CLS] that reads the sentence: its first word piece, the start token, has seen "
    "nothing but itself, so its vector is the same in every sentence. The one word piece that has read the "
    "whole sentence is the **last** one, and it is tempting to take its vector as the sentence's meaning. The "
    "course says to test a single vector against **mean pooling**, the average of the word pieces (here "
    "without the start token). The lesson encodes fifteen sentences of its own on five topics and compares "
    "same-topic pairs with different-topic pairs under both choices."
)


def step_title(step: Step, model=None) -> str:
    """The step's title as the model on screen makes it true (``model``: the loaded model, None: as written)."""
    if model is None:
        return step.title
    if step.id == "projection":
        return f"A picture of {int(model.hidden_size)} dimensions"
    if step.id == "cls" and model.causal:
        return "Misconception: one word piece is a sentence vector"
    return step.title


def step_text(step: Step, model=None) -> str:
    """The step's teaching text, every sentence true for ``model`` (None: as written, for the default encoder):
    layer 0 as the model builds it, how it hides a word, which word piece is its single sentence vector, where
    its attention can look."""
    if model is None:
        return step.text
    from lib.models.facts import layer_zero_holds

    if step.id == "layers":
        return (
            f"The model builds its vectors in layers: layer 0 holds {layer_zero_holds(model)}, and each layer "
            "(attention, then a feed-forward block) mixes in more context. Probing studies find surface "
            "features early and meaning later, but only roughly. The lines follow the average cosine of *bat* "
            "pairs with the **same** sense and with **different** senses through the layers; the gap between "
            "them is how far apart the senses are *on average*."
        )
    if step.id == "cls" and model.causal:
        return _CAUSAL_CLS_TEXT
    if step.id == "context" and not model.mask_token:
        return step.text.replace(
            "replace one word at a time by [MASK]", "delete one word at a time (this model has no mask token)"
        )
    if step.id == "attention" and model.causal:
        return step.text.replace(
            "The bars show where *bat* looks", "Reading left to right, a word piece can look only at itself and "
            "the word pieces before it. The bars show where *bat* looks"
        )
    return step.text


def step_by_id(step_id: str) -> Step:
    for s in STEPS:
        if s.id == step_id:
            return s
    raise KeyError(step_id)


def solved_mask(solved: Sequence[str]) -> int:
    """Progress as an integer for the URL: bit i is set when step i is solved."""
    return sum(1 << i for i, sid in enumerate(STEP_IDS) if sid in set(solved))


def solved_from_mask(mask: int) -> tuple[str, ...]:
    """The solved step ids encoded by :func:`solved_mask` (unknown bits are ignored)."""
    return tuple(sid for i, sid in enumerate(STEP_IDS) if mask >> i & 1)


# --------------------------------------------------------------------------------------------------
# Questions and checking
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question, with its answer taken from the model's numbers.

    prompt:      the question (plain text)
    options:     the choices, in display order; empty for a number question
    accepted:    the choices counted as correct (more than one when the model's numbers nearly tie)
    value:       the model's number, for a number question (None otherwise)
    tolerance:   how far a typed number may be from ``value``
    answer:      the correct answer as shown to the learner
    explanation: the numbers behind the answer (plain text), shown once answered
    hint:        where to look, shown after a wrong answer
    """

    prompt: str
    options: tuple[str, ...]
    accepted: frozenset[str]
    value: float | None
    tolerance: float
    answer: str
    explanation: str
    hint: str

    @property
    def is_number(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class Feedback:
    """The result of checking one answer. ``answered`` is False when nothing was given yet."""

    answered: bool
    correct: bool
    message: str


def check_answer(question: Question, answer: object) -> Feedback:
    """Check a learner's answer against the model's numbers.

    A number question accepts any finite number within ``tolerance`` of ``value`` (a string such as
    "0.44" is parsed); a choice question accepts any of ``accepted``.
    """
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Feedback(False, False, "Choose or type an answer first.")
    if question.is_number:
        try:
            x = float(str(answer).strip().replace(",", "."))
        except ValueError:
            return Feedback(False, False, "Type a number, e.g. 0.25.")
        if not np.isfinite(x):
            return Feedback(False, False, "Type an ordinary number, e.g. 0.25.")
        if abs(x - question.value) <= question.tolerance + 1e-12:
            return Feedback(True, True, f"Right: the model gives {question.answer}.")
        direction = "lower" if x > question.value else "higher"
        return Feedback(
            True, False, f"Not quite: the model's number is {direction} than {x:g}. {question.hint}"
        )
    if str(answer) in question.accepted:
        return Feedback(True, True, f"Right: {question.answer}.")
    if str(answer) not in question.options:
        return Feedback(False, False, "Pick one of the choices.")
    return Feedback(True, False, f"Not quite. {question.hint}")


def choice_question(
    prompt: str,
    options: Sequence[str],
    accepted: Sequence[str],
    explanation: str,
    hint: str,
    answer: str | None = None,
) -> Question:
    opts = tuple(options)
    acc = frozenset(accepted)
    if not acc or not acc <= set(opts):
        raise ValueError("every accepted answer must be one of the options, and there must be at least one")
    shown = answer if answer is not None else " or ".join(o for o in opts if o in acc)
    return Question(prompt, opts, acc, None, 0.0, shown, explanation, hint)


def number_question(
    prompt: str, value: float, tolerance: float, explanation: str, hint: str, digits: int = 3
) -> Question:
    if not np.isfinite(value):
        raise ValueError("the model's number is not finite")
    return Question(
        prompt, (), frozenset(), float(value), tolerance, f"{value:.{digits}f}", explanation, hint
    )


def layer_name(k: int) -> str:
    """How a layer is called in the lesson's choices: 'Layer 0 (input)', 'Layer 3'."""
    return "Layer 0 (input)" if k == 0 else f"Layer {k}"


def near_best(values: np.ndarray, tie: float, highest: bool = True) -> list[int]:
    """Indices whose value is within ``tie`` of the best one (the best always included)."""
    v = np.asarray(values, dtype=np.float64)
    best = v.max() if highest else v.min()
    keep = v >= best - tie if highest else v <= best + tie
    return [int(i) for i in np.flatnonzero(keep)]


def sense_names(senses: Sequence[str | None], n: int, need: int = 2) -> list[str]:
    if len(senses) != n:
        raise ValueError(f"{len(senses)} sense labels for {n} sentences")
    if not all(senses):
        raise StepNotApplicable("every lesson sentence needs a sense label")
    names = list(dict.fromkeys(senses))
    if len(names) < need:
        raise StepNotApplicable(f"the lesson needs at least {need} senses; got {len(names)}")
    return names


def commonest_two(senses: Sequence[str | None], names: Sequence[str]) -> tuple[str, str]:
    """The two senses with the most sentences (``names`` from :func:`sense_names`; ties: first seen first)."""
    counts = Counter(senses)
    a, b = sorted(names, key=lambda s: -counts[s])[:2]
    return a, b


def sentence_option(labels: Sequence[str], senses: Sequence[str | None], i: int) -> str:
    """A sentence as a choice: its chart label and its sense."""
    return f"{labels[i]} ({senses[i]})" if senses[i] else labels[i]


# --------------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------------


PREDICTED, SURPRISE, BEYOND = "predicted", "surprise", "beyond"
GROUP_TITLES = {
    PREDICTED: "As the course predicts",
    SURPRISE: "Surprises (against the course)",
    BEYOND: "Beyond the course",
}

# What the course says about each kind of result (by the result's class), and where. A kind the course
# predicts whatever the numbers say maps to PREDICTED; one the course never discusses maps to BEYOND; for
# the others the numbers decide (None): a result whose ``crossing`` (how much nearer another sense than its
# own a sentence's word sits, in cosine) is above COSINE_TIE goes against the course's picture (the
# context pushes each occurrence towards its own meaning: seed 002's base vector + context shift) and is a
# SURPRISE, the kind the evidence card asks for; one with ``as_predicted`` False is a surprise too.
COURSE_SAYS = {
    # seed 002: the context pushes each occurrence towards its meaning; a sentence nearer another sense is
    # against that picture, however much seed 001 warns that "polysemy is not solved completely"
    "CentroidReading": (None, "against the course's picture: context pushes each occurrence towards its own meaning"),
    "HardCase": (None, "against the course's picture: context pushes each occurrence towards its own meaning"),
    # seed 001: "deeper is not always better"; seed 000: the best layer depends on the task
    "DeeperCheck": (PREDICTED, "deeper is not always better: the best layer depends on the task"),
    # seed 001: "[CLS] is not a good sentence vector" without fine-tuning: mean pooling should win
    "PoolingComparison": (None, "[CLS] is not a good sentence vector"),
    # seed 001 sets ELMo's forward LSTM (left to right) beside its backward one and BERT's two-way reading: a word's
    # vector in a left-to-right model holds nothing of the words after it
    "DirectionResult": (None, "a left-to-right model reads only the words before the target"),
    # the course never discusses a control model (random or shuffled weights)
    "ArchitectureCheck": (BEYOND, "the course does not discuss control weights"),
}


def finding_group(result: object) -> str:
    """PREDICTED, SURPRISE or BEYOND for one step's result, from COURSE_SAYS and, where it says None, from the
    result's numbers: ``crossing`` > COSINE_TIE (a sentence's word nearer another sense than its own) or
    ``as_predicted`` False is a SURPRISE. An unknown kind is BEYOND."""
    group, _ = COURSE_SAYS.get(type(result).__name__, (BEYOND, ""))
    if group is not None:
        return group
    crossing = getattr(result, "crossing", None)
    if crossing is not None:
        return SURPRISE if crossing > COSINE_TIE else PREDICTED
    return PREDICTED if getattr(result, "as_predicted", False) else SURPRISE


@dataclass(frozen=True)
class Finding:
    """One result for the summary: its sentence, its group (PREDICTED, SURPRISE or BEYOND) and why."""

    text: str
    group: str
    because: str = ""

    @property
    def surprising(self) -> bool:
        return self.group == SURPRISE


def summary_findings(results: Sequence[object]) -> list[Finding]:
    """The findings of the steps' results (those that have one), each filed by :func:`finding_group`."""
    out = []
    for r in results:
        text = getattr(r, "finding", None)
        if not text:
            continue
        group = finding_group(r)
        because = COURSE_SAYS.get(type(r).__name__, (BEYOND, ""))[1]
        if type(r).__name__ == "PoolingComparison" and getattr(r, "single", "[CLS]") != "[CLS]":
            because = "the course tests [CLS]; a left-to-right model's last word piece is its single vector"
        if group == PREDICTED and type(r).__name__ in ("CentroidReading", "HardCase"):
            because = "polysemy is not solved completely; the margin is within a tie"
        out.append(Finding(text, group, because))
    return out


@dataclass(frozen=True)
class AnswerRecord:
    """What the learner answered for one step and whether the model's numbers agreed."""

    step_id: str
    answer: str
    correct: bool
    model_answer: str


def report_rows(
    records: dict[str, AnswerRecord], solved: Sequence[str] = (), model=None
) -> list[dict[str, str]]:
    """One row per question step, in lesson order, for the summary table.

    records: the answers given in this session; solved: step ids solved earlier (e.g. read from a link),
    shown as solved when this session has no answer for them; model: the model on screen (the steps' titles
    as :func:`step_title` says them).
    """
    rows = []
    for k, s in enumerate(STEPS, start=1):
        if s.id == "summary":
            continue
        r = records.get(s.id)
        if r is not None:
            result = "correct" if r.correct else "not yet"
        else:
            result = "solved earlier" if s.id in solved else "not answered"
        rows.append(
            {
                "step": str(k),
                "topic": step_title(s, model),
                "your answer": r.answer if r else "",
                "result": result,
                "model's answer": r.model_answer if r else "",
            }
        )
    return rows


def report_csv(records: dict[str, AnswerRecord], solved: Sequence[str] = (), model=None) -> str:
    """The summary table as CSV text (header first), safe to open in a spreadsheet (lib.serving.export)."""
    return dict_rows_csv(report_rows(records, solved, model))
