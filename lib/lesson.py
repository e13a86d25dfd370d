"""The guided lesson: its steps in course order, one question per step, and answer checking.

Every question is built from numbers the model actually computed, passed in as arrays: the correct
answer is derived here from those numbers (with a small tolerance, or a set of acceptable choices where
the model's numbers nearly tie), never typed in. The maths itself lives in the other lib modules
(``lib.similarity``, ``lib.geometry``, ``lib.attention``, ``lib.projection``, ``lib.toy_attention``), each
with its own tests; this module only picks what to ask, decides which answers count, and phrases them.

Course order (seeds 000-002): static vs contextual -> attention -> layer by layer -> anisotropy ->
projections -> the toy attention calculator, with the lesson's "apple" exercise and one step for each
common misconception ([CLS] as a sentence vector; deeper is always better; polysemy is solved).

When the data in hand cannot support a step (too few senses, a model without [CLS]), the step raises
:class:`lib.errors.StepNotApplicable`, whose message the page shows; any other exception is a bug. Layer
indices are 0-based like the arrays (hidden-state index 0 = the input layer; attention index 0 = the
first transformer layer, "layer 1" on screen).

Plain Python, no Streamlit: a notebook can run the lesson exactly as ``pages/lesson.py`` does::

    tv = enc.target_vectors(list(preset_by_id("bat").sentence_set().sentences), "bat")
    q = sense_separation(tv.vectors, senses, "bat").question
    check_answer(q, "Layer 6")   # -> Feedback(correct=..., message=...)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.attention import special_attention, target_attention, token_labels
from lib.errors import StepNotApplicable
from lib.export import dict_rows_csv
from lib.geometry import line_margin
from lib.projection import pca_projection
from lib.similarity import (
    ReadoutChance,
    cosine_matrix,
    evidence_card,
    hardest_case,
    layer_cosine_matrices,
    layer_list,
    leave_one_out_centroid_cosines,
    other_token_masks,
    pair_ranking_auc,
    pair_values,
    random_token_baseline,
    readout_chance,
    sense_similarity,
    sentence_vectors,
    upper_pairs,
)
from lib.toy_attention import ToyInputs

# Two cosines (or gaps, or attention weights) closer than this count as a tie: either choice is accepted.
COSINE_TIE = 0.01
# Two sentence vectors whose topic gaps differ by less than this are "about the same".
POOLING_TIE = 0.02
# How far a typed number may be from the model's: cosines read off a chart, and a hand-computed softmax.
READ_TOLERANCE = 0.02
HAND_TOLERANCE = 0.01

NONE_WRONG = "None: every sentence is on its own side"


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
        "The model builds its vectors in layers: layer 0 is the word piece plus its position (and a segment "
        "embedding, then a LayerNorm), and each layer mixes in more context. Probing studies find surface "
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
        "sidebar for a fairer test.",
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
        "(band: 10th to 90th percentile); the coloured lines are the *bat* "
        "pairs. z-scoring, whitening or removing top components fix this (see the **Anisotropy** page).",
    ),
    Step(
        "projection",
        "A picture of 384 dimensions",
        "Projections",
        False,
        "bat",
        "To look at the vectors we squeeze them into two dimensions. **PCA** keeps the two directions "
        "along which the points vary most; distances along them are real, but everything else is "
        "dropped, and the axis titles say how much of the variance is kept. UMAP and t-SNE (on the "
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
        "hiding the right context word should move the word's vector most. The model can run it for us: "
        "replace one word at a time by [MASK] and measure how far *bat* moves (1 − cosine with its vector in "
        "the full sentence). The bars show where *bat* looks in the last layer (attention, mean over heads). "
        "Predict first, then see the measurement. The **What moves the word** page runs it on any sentence.",
    ),
    # "Is the separation in the architecture or learned?": also before the summary, after
    # "context", so every earlier step keeps its number and its progress bit.
    Step(
        "random",
        "Is the separation in the architecture or learned?",
        "Layer by layer",
        False,
        "bank",
        "Compared to what? The same architecture with **random weights** (every weight drawn afresh by the "
        "model's own initialiser, seed 0) reads the same *bank* sentences through the same tokenizer and the "
        "same number of layers; only training is missing. Whatever the random copy shows too comes from the "
        "architecture (mixing each word with its neighbours), not from anything learned. The blue line is the "
        "trained model's same-sense minus different-sense cosine per layer, as in step 4. Predict the random "
        "copy's line, then see it.",
    ),
    Step(
        "summary",
        "Your evidence card",
        "Summary",
        False,
        None,
        "What you found, question by question, with the model's own numbers. Keep it: the course's "
        "*evidence card* is a small table with at least one surprising result. Below the table, the "
        "results this model showed are sorted into surprises and what the course predicts.",
    ),
)

STEP_IDS = tuple(s.id for s in STEPS)


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


def _choice(
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


def _number(
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


def _near_best(values: np.ndarray, tie: float, highest: bool = True) -> list[int]:
    """Indices whose value is within ``tie`` of the best one (the best always included)."""
    v = np.asarray(values, dtype=np.float64)
    best = v.max() if highest else v.min()
    keep = v >= best - tie if highest else v <= best + tie
    return [int(i) for i in np.flatnonzero(keep)]


def _senses_ok(senses: Sequence[str | None], n: int, need: int = 2) -> list[str]:
    if len(senses) != n:
        raise ValueError(f"{len(senses)} sense labels for {n} sentences")
    if not all(senses):
        raise StepNotApplicable("every lesson sentence needs a sense label")
    names = list(dict.fromkeys(senses))
    if len(names) < need:
        raise StepNotApplicable(f"the lesson needs at least {need} senses; got {len(names)}")
    return names


def _commonest_two(senses: Sequence[str | None], names: Sequence[str]) -> tuple[str, str]:
    """The two senses with the most sentences (``names`` from :func:`_senses_ok`; ties: first seen first)."""
    counts = Counter(senses)
    a, b = sorted(names, key=lambda s: -counts[s])[:2]
    return a, b


def sentence_option(labels: Sequence[str], senses: Sequence[str | None], i: int) -> str:
    """A sentence as a choice: its chart label and its sense."""
    return f"{labels[i]} ({senses[i]})" if senses[i] else labels[i]


# --------------------------------------------------------------------------------------------------
# Step 1: static vs contextual
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StaticVsContextual:
    """static_cos: (n, n) cosine of the static vectors; last_cos: (n, n) at the last layer; query: the row asked about."""

    static_cos: np.ndarray
    last_cos: np.ndarray
    query: int
    question: Question


def static_vs_contextual(
    static: np.ndarray, vectors: np.ndarray, labels: Sequence[str], senses: Sequence[str | None], target: str
) -> StaticVsContextual:
    """Which sentence's target is most like sentence 1's at the last layer (the static vectors cannot tell).

    static: (n, H) the input-table vector of the target per sentence; vectors: (n, L+1, H).
    """
    v = np.asarray(vectors)
    n, k = v.shape[0], v.shape[1]
    if n < 3:
        raise StepNotApplicable("this step needs at least three sentences")
    static_cos = cosine_matrix(static)
    last_cos = layer_cosine_matrices(v)[k - 1]
    q = 0
    others = [j for j in range(n) if j != q]
    row = last_cos[q, others]
    best = [others[i] for i in _near_best(row, COSINE_TIE)]
    top = others[int(np.argmax(row))]
    _senses_ok(senses, n, need=1)
    static_pairs = pair_values(static_cos)
    lo, hi = float(static_pairs.min()), float(static_pairs.max())
    same = [j for j in others if senses[j] == senses[q]]
    diff = [j for j in others if senses[j] != senses[q]]
    parts = [
        f"At layer {k - 1}, {labels[top]} ({senses[top]}) is closest to {labels[q]} ({senses[q]}), "
        f"cosine {last_cos[q, top]:.2f}."
    ]
    if same and diff:
        parts.append(
            f"Its same-sense sentences average {last_cos[q, same].mean():.2f}, the other-sense ones "
            f"{last_cos[q, diff].mean():.2f}."
        )
    static_range = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"between {lo:.2f} and {hi:.2f}"
    parts.append(
        f"The static vectors score {static_range} for every pair: one lookup for '{target}', whatever the "
        "sentence."
    )
    question = _choice(
        f"At layer {k - 1}, which sentence's '{target}' is most similar to the '{target}' in {labels[q]}?",
        [sentence_option(labels, senses, j) for j in others],
        [sentence_option(labels, senses, j) for j in best],
        " ".join(parts),
        "Look along the first row of the right-hand heatmap (hover for the numbers) and find the "
        "brightest cell apart from the diagonal.",
    )
    return StaticVsContextual(static_cos, last_cos, q, question)


# --------------------------------------------------------------------------------------------------
# Step 2: the apple exercise
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CentroidReading:
    """Each sentence's cosine with the two sense averages at one layer.

    senses_compared: (sense_x, sense_y), the two senses; x: (m,) cosine with sense_x's average;
    y: (m,) with sense_y's; indices: (m,) the sentences shown (those of the two senses); a sentence's
    own sense average is computed without it. read_as: (m,) the nearer sense; wrong: sentences read
    as the other sense; finding: one sentence for the evidence card when one is misread, else None.
    """

    layer: int
    senses_compared: tuple[str, str]
    indices: np.ndarray
    x: np.ndarray
    y: np.ndarray
    read_as: tuple[str, ...]
    wrong: tuple[int, ...]
    question: Question
    finding: str | None = None


def centroid_reading(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    labels: Sequence[str],
    target: str,
    *,
    layer: int | None = None,
) -> CentroidReading:
    """The two commonest senses' average vectors, and which side of the diagonal each sentence lands on.

    vectors: (n, L+1, H); layer defaults to the last. Each of the two senses needs at least two sentences.
    """
    v = np.asarray(vectors, dtype=np.float64)
    n, k = v.shape[0], v.shape[1]
    two = _commonest_two(senses, _senses_ok(senses, n))
    if min(Counter(senses)[s] for s in two) < 2:
        raise StepNotApplicable("each of the two senses needs at least two sentences")
    layer = k - 1 if layer is None else layer
    idx = np.array([i for i in range(n) if senses[i] in two], dtype=int)
    lab = np.array([two.index(senses[i]) for i in idx])
    cos = leave_one_out_centroid_cosines(v[idx, layer : layer + 1, :], lab, 2)[:, :, 0]  # (m, 2)
    nearer = np.argmax(cos, axis=1)
    read_as = tuple(two[int(s)] for s in nearer)
    wrong = tuple(int(i) for i, s, t in zip(idx, nearer, lab, strict=True) if s != t)
    margin = np.abs(cos[:, 0] - cos[:, 1])
    on_line = [int(i) for i, m in zip(idx, margin, strict=True) if m < COSINE_TIE / 2]
    options = [NONE_WRONG] + [sentence_option(labels, senses, int(i)) for i in idx]
    accepted = [sentence_option(labels, senses, i) for i in dict.fromkeys([*wrong, *on_line])]
    if not wrong:
        accepted.append(NONE_WRONG)
    if wrong:
        w = wrong[0]
        j = int(np.flatnonzero(idx == w)[0])
        expl = (
            f"At layer {layer}, {labels[w]} is labelled {senses[w]} but its '{target}' is closer to the "
            f"average {read_as[j]} '{target}' ({max(cos[j]):.2f} against {min(cos[j]):.2f})."
        )
        if len(wrong) > 1:
            expl += f" {len(wrong) - 1} more sentence(s) cross the line too."
        answer = "; ".join(sentence_option(labels, senses, i) for i in wrong)
    else:
        closest = int(idx[int(np.argmin(margin))])
        expl = (
            f"At layer {layer} every '{target}' is nearer its own sense's average; the closest call is "
            f"{labels[closest]} (margin {margin.min():.3f})."
        )
        answer = NONE_WRONG
    expl += " The context pushed each occurrence towards its meaning, but not always far enough."
    question = _choice(
        f"At layer {layer}, which '{target}' sentence lands on the wrong side of the diagonal "
        f"(closer to the other sense's average)?",
        options,
        accepted,
        expl,
        "Look for a point whose colour does not match its side: fruit points belong below the line, company "
        "points above. Hover to read the sentence.",
        answer=answer,
    )
    finding = None
    if wrong:
        w = wrong[0]
        finding = (
            f"{labels[w]} is a {senses[w]} sentence, yet at layer {layer} its '{target}' sits nearer the average "
            f"{read_as[int(np.flatnonzero(idx == w)[0])]} '{target}'."
        )
    return CentroidReading(
        layer, (two[0], two[1]), idx, cos[:, 0], cos[:, 1], read_as, wrong, question, finding
    )


# --------------------------------------------------------------------------------------------------
# Step 3: attention
# --------------------------------------------------------------------------------------------------

# The sentence the attention step looks into (ours; the word that gives the sense away sits right before).
ATTENTION_SENTENCE = "Her new cricket bat is made of English willow."


@dataclass(frozen=True)
class AttentionLook:
    """Where the target looks in one layer (mean over heads).

    layer: 0-based index into the attention arrays (``layer_number`` = layer + 1 is the name on screen);
    labels: (n,) unique token labels; weights: (n,) the target's attention, sums to 1;
    attended_by: (n,) how much each token looks at the target; special_share: share of the sentence's
    attention that goes to [CLS]/[SEP] in this layer (mean over heads and queries).
    """

    layer: int
    labels: tuple[str, ...]
    target_positions: tuple[int, ...]
    weights: np.ndarray
    attended_by: np.ndarray
    special_share: float
    question: Question

    @property
    def layer_number(self) -> int:
        """The layer as the page names it: 1 = the first transformer layer."""
        return self.layer + 1


def attention_look(
    attentions: np.ndarray,
    tokens: Sequence[str],
    special: Sequence[bool],
    target_positions: Sequence[int],
    target: str,
    *,
    layer: int = 0,
) -> AttentionLook:
    """Which other word piece the target attends to most in ``layer``, apart from [CLS]/[SEP].

    attentions: (L, H, n, n) of one sentence; tokens: its n word pieces; special: (n,) bool, True for the
    special tokens (``Encoding.special``); layer: 0-based index into the first axis of ``attentions``.
    """
    att = np.asarray(attentions)
    if not 0 <= layer < att.shape[0]:
        raise ValueError(f"layer must be between 0 and {att.shape[0] - 1}")
    is_special = np.asarray(special, dtype=bool)
    ta = target_attention(att, target_positions)
    w = ta.attends_to_mean[layer]  # (n,)
    labels = tuple(token_labels(tokens))
    candidates = [i for i in range(len(tokens)) if not is_special[i] and i not in set(target_positions)]
    if not candidates:
        raise StepNotApplicable("the sentence has no word piece besides the target")
    cw = w[candidates]
    best = [candidates[i] for i in _near_best(cw, COSINE_TIE)]
    top = candidates[int(np.argmax(cw))]
    special_share = float(special_attention(att, is_special)[layer])
    to_special = float(w[is_special].sum())
    shown = layer + 1
    expl = (
        f"In layer {shown}, '{target}' gives {w[top]:.2f} of its attention to '{tokens[top]}', more than to "
        f"any other word; {to_special:.2f} goes to [CLS] and [SEP], which many heads use as a resting place "
        f"(across the whole sentence, {special_share:.0%} of this layer's attention lands on them)."
    )
    question = _choice(
        f"In layer {shown} (average of the heads), which word piece does '{target}' attend to most, "
        "apart from itself, [CLS] and [SEP]?",
        [labels[i] for i in candidates],
        [labels[i] for i in best],
        expl,
        "Read the top bar chart: ignore the highlighted target bar and the [CLS]/[SEP] bars, then find the "
        "tallest one.",
    )
    return AttentionLook(
        layer, labels, tuple(target_positions), w, ta.attended_by_mean[layer], special_share, question
    )


# --------------------------------------------------------------------------------------------------
# Step 4: layer by layer
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SenseSeparation:
    """same, different, gap: (L+1,) mean cosine of same-sense pairs, different-sense pairs, and same - different."""

    same: np.ndarray
    different: np.ndarray
    gap: np.ndarray
    best_layers: tuple[int, ...]
    question: Question


def sense_separation(vectors: np.ndarray, senses: Sequence[str | None], target: str) -> SenseSeparation:
    """At which layer the senses are pulled apart most (largest same-minus-different gap)."""
    v = np.asarray(vectors)
    names = _senses_ok(senses, v.shape[0])
    sims = sense_similarity(layer_cosine_matrices(v), senses)
    gap = sims.gap
    best = _near_best(gap, COSINE_TIE / 2)
    top = int(np.argmax(gap))
    last = v.shape[1] - 1
    expl = (
        f"The gap is largest at layer {top}: same-sense pairs {sims.same[top]:.2f}, different-sense pairs "
        f"{sims.different[top]:.2f} (gap {gap[top]:.3f}). At layer 0 the gap is {gap[0]:.3f}: the input vector "
        f"is the word piece plus its position, with no context, so the senses ({' and '.join(names)}) can only "
        "differ there if the word's position happens to go with its sense."
    )
    if top != last:
        expl += f" At the last layer, {last}, it is {gap[last]:.3f}."
    auc = pair_ranking_auc(layer_cosine_matrices(v), senses)
    if auc is not None:
        expl += (
            f" The gap is an average: at layer {top}, a same-sense pair is closer than a different-sense pair "
            f"in {auc[top]:.0%} of comparisons (50% would be chance), so single sentences can still sit nearer "
            "the other sense. The next step reads each sentence on its own, and its best layer can differ."
        )
    question = _choice(
        f"At which layer do the senses of '{target}' separate most (the largest gap between the two lines)?",
        [layer_name(k) for k in range(v.shape[1])],
        [layer_name(k) for k in best],
        expl,
        "Find the layer where the shaded band between the two lines is widest (hover for the numbers).",
    )
    return SenseSeparation(sims.same, sims.different, gap, tuple(best), question)


# --------------------------------------------------------------------------------------------------
# Step 5: deeper is always better?
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadoutCurve:
    """Leave-one-out nearest-average sense readout of one preset: accuracy (L+1,) and the majority baseline.

    n_evaluated: how many sentences were scored; chance_mean, chance_p95: (L+1,) the same readout with
    shuffled labels (lib.similarity.readout_chance), or None when not computed.
    """

    name: str
    accuracy: np.ndarray
    majority_baseline: float
    best_layers: tuple[int, ...]
    n_evaluated: int = 0
    chance_mean: np.ndarray | None = None
    chance_p95: np.ndarray | None = None

    def sentences(self, share: float) -> int:
        """A share of the scored sentences as a count (e.g. 0.0833 of 12 -> 1)."""
        return int(round(share * self.n_evaluated))

    @property
    def within_chance(self) -> np.ndarray | None:
        """(L+1,) bool: the readout is at or below the shuffled-label 95th percentile."""
        return None if self.chance_p95 is None else self.accuracy <= self.chance_p95 + 1e-12


def readout_curve(
    name: str, vectors: np.ndarray, senses: Sequence[str | None], chance: ReadoutChance | None = None
) -> ReadoutCurve:
    """Per-layer sense readout (lib.similarity.readout_chance, with its chance band); every layer with the
    top score is best. ``chance`` may pass the readout_chance of the same vectors when already computed."""
    rc = chance if chance is not None else readout_chance(vectors, senses)
    if rc is None:
        raise StepNotApplicable(f"'{name}' needs two senses with at least two sentences each")
    acc = np.asarray(rc.accuracy, dtype=np.float64)
    best = tuple(int(i) for i in np.flatnonzero(np.isclose(acc, acc.max())))
    return ReadoutCurve(
        name, acc, float(rc.majority), best, rc.n_evaluated, rc.shuffled_mean, rc.shuffled_p95
    )


@dataclass(frozen=True)
class DeeperCheck:
    """The readout of the asked preset and of the others (for the table); finding: a preset whose best
    layer is not the last, for the evidence card, or None."""

    curves: tuple[ReadoutCurve, ...]
    question: Question
    finding: str | None = None


def _sentences_phrase(k: int, n: int) -> str:
    return f"{k} sentence{'s' if k != 1 else ''} of {n}"


def deeper_check(
    curves: Sequence[ReadoutCurve],
    intra_sentence: np.ndarray | None = None,
    sentence_model: bool = False,
) -> DeeperCheck:
    """Ask which layer reads the first preset's sense best; the others are evidence beside it.

    intra_sentence: (L+1,) Ethayarajh's intra-sentence similarity of one lesson set (how close each word is
    to its sentence's average), to say whether the last layer drifts towards the sentence; sentence_model:
    True when the model was fine-tuned for mean-pooled sentence vectors (the default model), so the text
    may name that as the likely cause.
    """
    if not curves:
        raise ValueError("need at least one readout curve")
    c = curves[0]
    last = len(c.accuracy) - 1
    top = c.accuracy[c.best_layers[0]]
    parts = [
        f"For '{c.name}' the best is {layer_list(c.best_layers)} ({top:.0%} read correctly); the last layer reads "
        f"{c.accuracy[last]:.0%}"
        + (
            f", {_sentences_phrase(c.sentences(top - c.accuracy[last]), c.n_evaluated)} fewer."
            if c.n_evaluated and last not in c.best_layers
            else "."
        )
    ]
    w = c.within_chance
    if w is not None:
        inside = [int(i) for i in np.flatnonzero(w)]
        parts.append(
            f"Against chance (shuffled labels, 95th percentile): for '{c.name}' "
            + (
                f"{layer_list(inside)} {'are' if len(inside) > 1 else 'is'} within the band"
                if inside
                else "every layer is above the band"
            )
            + (
                "; layer 0 holds no context, so a readout above chance there can only come from the word's "
                "position going with its sense, which small hand-written sets allow."
                if not w[0]
                else "."
            )
        )
    for o in curves[1:]:
        gap = o.accuracy.max() - o.accuracy[last]
        parts.append(
            f"'{o.name}': best at {layer_list(o.best_layers)} ({o.accuracy.max():.0%}), last layer {o.accuracy[last]:.0%}"
            + (f" ({_sentences_phrase(o.sentences(gap), o.n_evaluated)} fewer)." if o.n_evaluated and gap > 0 else ".")
        )
    not_last = [o for o in curves if last not in o.best_layers]
    if not_last:
        by = [
            f"'{o.name}'"
            + (f" (by {_sentences_phrase(o.sentences(o.accuracy.max() - o.accuracy[last]), o.n_evaluated)})" if o.n_evaluated else "")
            for o in not_last
        ]
        parts.append("So the last layer is not the best one for " + ", ".join(by) + ".")
        if intra_sentence is not None and len(intra_sentence) == last + 1:
            intra = np.asarray(intra_sentence, dtype=np.float64)
            if last > 0 and int(np.argmax(intra)) == last:
                parts.append(
                    f"In the last layer the words sit closest to their sentence's average vector (intra-sentence "
                    f"similarity {intra[0]:.2f} at layer 0, {intra[last - 1]:.2f} at layer {last - 1}, "
                    f"{intra[last]:.2f} at layer {last}), so what the word means on its own counts for less there"
                    + (
                        ": a likely cause is that this model was fine-tuned to make the mean of its last-layer "
                        "vectors a sentence vector."
                        if sentence_model
                        else "."
                    )
                )
    else:
        parts.append("Here the last layer does tie for best, but check per layer: it does not have to.")
    question = _choice(
        f"Which layer reads the sense of '{c.name}' best?",
        [layer_name(k) for k in range(len(c.accuracy))],
        [layer_name(k) for k in c.best_layers],
        " ".join(parts),
        f"Follow the '{c.name}' line and find its highest point (hover for the exact share).",
    )
    finding = None
    for o in curves:
        if last not in o.best_layers:
            k = o.sentences(o.accuracy.max() - o.accuracy[last])
            finding = (
                f"The sense of '{o.name}' reads best at layer {o.best_layers[0]} ({o.accuracy.max():.0%}), not at "
                f"the last layer ({o.accuracy[last]:.0%})"
                + (f": {_sentences_phrase(k, o.n_evaluated)}." if o.n_evaluated else ".")
            )
            break
    return DeeperCheck(tuple(curves), question, finding)


# --------------------------------------------------------------------------------------------------
# Step 6: [CLS] as a sentence vector
# --------------------------------------------------------------------------------------------------

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
MEAN_CHOICE = "the mean of the word pieces"
SAME_CHOICE = "about the same"


@dataclass(frozen=True)
class PoolingComparison:
    """Same-topic vs different-topic mean cosine per layer, for [CLS] and for mean pooling.

    cls_same, cls_different, mean_same, mean_different: (L+1,); cls_gap, mean_gap: same - different.
    cls_last, mean_last: (n, n) cosine matrices at the last layer. finding: the comparison in one
    sentence for the evidence card.
    """

    cls_same: np.ndarray
    cls_different: np.ndarray
    mean_same: np.ndarray
    mean_different: np.ndarray
    cls_last: np.ndarray
    mean_last: np.ndarray
    question: Question
    finding: str | None = None

    @property
    def cls_gap(self) -> np.ndarray:
        return self.cls_same - self.cls_different

    @property
    def as_predicted(self) -> bool:
        """True when the mean beats [CLS] at the last layer, as the course predicts (no surprise)."""
        return bool(self.mean_gap[-1] - self.cls_gap[-1] >= POOLING_TIE)

    @property
    def mean_gap(self) -> np.ndarray:
        return self.mean_same - self.mean_different


def pooling_comparison(
    hidden_states: Sequence[np.ndarray], special: Sequence[Sequence[bool]], topics: Sequence[str]
) -> PoolingComparison:
    """Which sentence vector keeps same-topic pairs above different-topic pairs: [CLS] or the mean?

    special: per sentence (n_i,) bool (``Encoding.special``); the [CLS] vector is the first token's
    (lib.similarity.sentence_vectors), so every sentence must start with a special token.
    """
    if not all(np.asarray(sp, dtype=bool)[:1].all() for sp in special):
        raise StepNotApplicable("the model puts no [CLS] token first; this step needs a BERT-style encoder")
    cls, mean = sentence_vectors(hidden_states, special)
    _senses_ok(topics, cls.shape[0])
    c = sense_similarity(layer_cosine_matrices(cls), topics)
    m = sense_similarity(layer_cosine_matrices(mean), topics)
    last = cls.shape[1] - 1
    cg, mg = float(c.gap[last]), float(m.gap[last])
    if abs(cg - mg) < POOLING_TIE:
        accepted = [SAME_CHOICE, CLS_CHOICE if cg > mg else MEAN_CHOICE]
        answer = SAME_CHOICE
    else:
        accepted = [CLS_CHOICE if cg > mg else MEAN_CHOICE]
        answer = accepted[0]
    expl = (
        f"At layer {last}, same-topic pairs beat different-topic pairs by {mg:.3f} with the mean of the word "
        f"pieces ({m.same[last]:.2f} against {m.different[last]:.2f}) and by {cg:.3f} with [CLS] "
        f"({c.same[last]:.2f} against {c.different[last]:.2f})."
    )
    cls_all = layer_cosine_matrices(cls)  # (L+1, n, n)
    if last > 0:
        floor = float(cls_all[:last].min())  # the least similar pair of [CLS] vectors before the last layer
        if floor > 0.9:
            expl += (
                f" Before layer {last} the [CLS] vector hardly depends on the sentence: from layer 0 to layer "
                f"{last - 1}, every pair of sentences, whatever the topic, has a [CLS] cosine of at least {floor:.3f}."
            )
    question = _choice(
        f"At layer {last}, which sentence vector separates same-topic pairs from different-topic pairs more?",
        [CLS_CHOICE, MEAN_CHOICE, SAME_CHOICE],
        accepted,
        expl,
        "Compare the distance between the two lines in each panel at the last layer.",
        answer=answer,
    )
    if mg - cg >= POOLING_TIE:
        finding = (
            f"[CLS] tells topics apart less than the mean of the word pieces (gap {cg:.2f} against {mg:.2f})."
        )
    elif cg - mg >= POOLING_TIE:
        finding = f"In this model [CLS] tells topics apart more than the mean of the word pieces ({cg:.2f} against {mg:.2f})."
    else:
        finding = (
            f"[CLS] and the mean of the word pieces tell topics apart about equally ({cg:.2f} and {mg:.2f})."
        )
    return PoolingComparison(
        c.same,
        c.different,
        m.same,
        m.different,
        cosine_matrix(cls[:, last, :]),
        cosine_matrix(mean[:, last, :]),
        question,
        finding,
    )


# --------------------------------------------------------------------------------------------------
# Step 7: anisotropy
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnisotropyFloor:
    """floor, low, high: (L+1,) mean and 10th/90th percentile cosine of random other word pieces;
    same, different: (L+1,) the target's same-/different-sense pair means; n_tokens: tokens sampled from."""

    floor: np.ndarray
    low: np.ndarray
    high: np.ndarray
    same: np.ndarray
    different: np.ndarray
    n_tokens: int
    question: Question


def anisotropy_floor(
    hidden_states: Sequence[np.ndarray],
    special: Sequence[Sequence[bool]],
    target_positions: Sequence[Sequence[int]],
    vectors: np.ndarray,
    senses: Sequence[str | None],
    target: str,
    *,
    tokens: Sequence[Sequence[str]] | None = None,
) -> AnisotropyFloor:
    """The mean cosine of unrelated word pieces per layer (lib.similarity.random_token_baseline).

    special: per sentence (n_i,) bool (``Encoding.special``); tokens: per sentence the word pieces, so a
    pair of the same word piece is never drawn (as Ethayarajh samples).
    """
    base = random_token_baseline(hidden_states, other_token_masks(special, target_positions), tokens=tokens)
    if base is None:
        raise StepNotApplicable("the sentences have too few other word pieces")
    sims = sense_similarity(layer_cosine_matrices(vectors), senses)
    last = len(base.mean) - 1
    peak = int(np.argmax(base.mean))
    f = float(base.mean[peak])
    fl = float(base.mean[last])
    expl = (
        f"At layer {peak}, where the floor is highest, two random other word pieces have cosine {f:.2f} on "
        f"average ({base.description}); random directions in "
        f"{np.asarray(vectors).shape[2]} dimensions would give about 0.00. At the last layer, {last}, it is "
        f"{fl:.2f}; measured from there, '{target}' pairs of different senses ({sims.different[last]:.2f}) sit "
        f"{sims.different[last] - fl:+.2f} above it and same-sense pairs {sims.same[last] - fl:+.2f}. With only "
        f"{len(hidden_states)} sentences the floor is rough; the Anisotropy page measures it on a larger corpus."
    )
    question = _number(
        f"At layer {peak}, where the grey dashed line is highest, what is the average cosine between two "
        "unrelated word pieces? Two decimals are enough.",
        f,
        READ_TOLERANCE,
        expl,
        f"Hover over the grey dashed line at layer {peak}.",
        digits=2,
    )
    return AnisotropyFloor(base.mean, base.low, base.high, sims.same, sims.different, base.n_tokens, question)


# --------------------------------------------------------------------------------------------------
# Step 8: projection
# --------------------------------------------------------------------------------------------------

YES, NO = "Yes", "No"


@dataclass(frozen=True)
class ProjectionLook:
    """coords: (n, 2) PCA of the target's vectors at ``layer``; explained: (2,) variance share per axis.

    margin: :func:`lib.geometry.line_margin` of the two commonest senses (> 0: one straight line splits
            them, with a gap of that width in a picture whose larger side spans 1);
    first_axis_splits: whether a vertical line (the first axis alone) already does.
    """

    layer: int
    coords: np.ndarray
    explained: np.ndarray
    margin: float
    first_axis_splits: bool
    question: Question

    @property
    def separable(self) -> bool:
        return self.margin > 0


def projection_look(
    vectors: np.ndarray, senses: Sequence[str | None], target: str, *, layer: int | None = None
) -> ProjectionLook:
    """Can one straight line split the two commonest senses in the 2-D PCA picture?"""
    v = np.asarray(vectors)
    names = _senses_ok(senses, v.shape[0])
    layer = v.shape[1] - 1 if layer is None else layer
    p = pca_projection(v[:, layer, :], 2)
    a, b = _commonest_two(senses, names)
    keep = np.array([s in (a, b) for s in senses])
    pts, grp = p.coords[keep], np.array([s == a for s in senses])[keep]
    margin = line_margin(pts, grp)
    first_axis = line_margin(pts, grp, n_angles=1) > 0  # the one direction along the first axis
    accepted = [YES] if margin > 0 else [NO]
    if abs(margin) < 0.01:  # a point (almost) on the line: either reading of the picture is fair
        accepted = [YES, NO]
    ev = p.explained_variance_ratio
    if margin > 0:
        expl = f"Yes: a straight line puts every {a} point on one side and every {b} point on the other"
        expl += (
            ", and here even a vertical line does (the first axis alone)."
            if first_axis
            else ", but it has to be slanted: along the first axis alone the groups overlap, so the direction "
            "in which these vectors vary most is not the sense."
        )
    else:
        expl = f"No: however you draw a straight line, some {a} or {b} point ends up on the wrong side."
    expl += (
        f" The two axes keep {ev[0]:.0%} and {ev[1]:.0%} of the variance, {ev.sum():.0%} together, so the "
        "picture drops much of what the model knows; check any impression against the cosines."
    )
    question = _choice(
        f"At layer {layer}, could one straight line (in any direction) put every {a} '{target}' on one "
        f"side and every {b} '{target}' on the other?",
        [YES, NO],
        accepted,
        expl,
        "Try to draw the line in your head; it does not have to be vertical.",
        answer=YES if margin > 0 else NO,
    )
    return ProjectionLook(layer, p.coords, ev, margin, first_axis, question)


# --------------------------------------------------------------------------------------------------
# Step 9: polysemy is solved?
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HardCase:
    """A different-sense pair (a, b) against a's least similar same-sense partner c, at ``layer``.

    pair_cos: (P,) cosine of every pair; pairs: (P, 2); same: (P,) bool; n_beating: how many
    different-sense pairs are more similar than the least similar same-sense pair. finding: the hard
    case in one sentence for the evidence card, or None when a's own sense is closer.
    """

    layer: int
    a: int
    b: int
    c: int
    cos_ab: float
    cos_ac: float
    pairs: np.ndarray
    pair_cos: np.ndarray
    same: np.ndarray
    n_beating: int
    question: Question
    finding: str | None = None


def hard_case(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    labels: Sequence[str],
    target: str,
    *,
    layer: int | None = None,
) -> HardCase:
    """The sentence whose nearest different-sense partner beats its farthest same-sense partner by most."""
    v = np.asarray(vectors)
    n = v.shape[0]
    _senses_ok(senses, n)
    layer = v.shape[1] - 1 if layer is None else layer
    cos = layer_cosine_matrices(v)[layer]
    found = hardest_case(cos, senses)
    if found is None:
        raise StepNotApplicable("this step needs a sense with at least two sentences and another sense")
    a, b, c = found
    pairs = upper_pairs(n)
    pair_cos = pair_values(cos)
    s = np.array(senses, dtype=object)
    same_mask = s[pairs[:, 0]] == s[pairs[:, 1]]
    n_beating = int((pair_cos[~same_mask] > pair_cos[same_mask].min()).sum())
    ob, oc = sentence_option(labels, senses, b), sentence_option(labels, senses, c)
    ab, ac = float(cos[a, b]), float(cos[a, c])
    accepted = [ob, oc] if abs(ab - ac) < COSINE_TIE else [ob if ab > ac else oc]
    if ab > ac:
        expl = (
            f"{labels[b]} ({senses[b]}) is closer: cosine {ab:.2f}, against {ac:.2f} for {labels[c]}, which "
            f"shares the sense ({senses[c]}). "
        )
    else:
        expl = f"{labels[c]} ({senses[c]}) is closer: {ac:.2f} against {ab:.2f}. "
    expl += (
        f"Over all pairs at layer {layer}, {n_beating} of {int((~same_mask).sum())} different-sense pairs are more "
        f"similar than the least similar same-sense pair ({pair_cos[same_mask].min():.2f}). The senses differ on "
        "average, yet single occurrences still follow the surrounding words."
    )
    question = _choice(
        f"At layer {layer}, which '{target}' is closer to the one in {labels[a]} ({senses[a]})?",
        [ob, oc],
        accepted,
        expl,
        "Find the two highlighted dots: their position along the axis is their cosine.",
        answer=ob if ab > ac else oc,
    )
    finding = None
    if ab > ac:
        finding = (
            f"At layer {layer}, the '{target}' of {labels[a]} ({senses[a]}) is closer to {labels[b]} ({senses[b]}, "
            f"{ab:.2f}) than to {labels[c]} ({senses[c]}, {ac:.2f}), which shares its sense."
        )
    return HardCase(
        layer, a, b, c, ab, ac, pairs, pair_cos, same_mask, n_beating, question, finding
    )


def evidence_csv(
    vectors: np.ndarray, sentences: Sequence[str], senses: Sequence[str | None], target: str
) -> str:
    """The polysemy step's evidence card (lib.similarity.evidence_card), layer 0 vs the last layer, as CSV."""
    v = np.asarray(vectors)
    last = v.shape[1] - 1
    card = evidence_card(v[:, 0, :], v[:, last, :], sentences, senses, target, chosen_name=f"layer {last}")
    return card.to_csv()


# --------------------------------------------------------------------------------------------------
# Step 10: the toy calculator
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToyCell:
    """The course example's attention: tokens, X (n, 2), scores and weights (n, n), output (n, 2), and the
    cell asked about (query row, key column)."""

    tokens: tuple[str, ...]
    X: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    query: int
    key: int
    question: Question


def toy_cell(query: str = "cat", key: str = "sat") -> ToyCell:
    """The weight ``query`` gives ``key`` in the course's 'The cat sat' example (lib.toy_attention)."""
    course = ToyInputs.course_example()  # identity projections: Q = K = V = X
    tokens, X = course.tokens, course.x(use_positions=True)
    steps = course.steps(use_positions=True)  # no scaling
    qi, ki = tokens.index(query), tokens.index(key)
    row_s = steps.scores[qi]
    w = float(steps.weights[qi, ki])
    terms = " + ".join(f"e^{s:.2f}" for s in row_s)
    expl = (
        f"Row '{query}' of S = X Xᵀ is [{', '.join(f'{s:.2f}' for s in row_s)}]. The weight on '{key}' is "
        f"e^{row_s[ki]:.2f} / ({terms}) = {steps.exp_scores[qi, ki]:.4f} / {steps.row_sums[qi]:.4f} = {w:.4f}."
    )
    question = _number(
        f"What weight does '{query}' give to '{key}'? Work it out from X in the table above.",
        w,
        HAND_TOLERANCE,
        expl,
        f"X = e + p: the '{query}' row is {X[qi].round(2).tolist()}. Dot it with each row of X, take e^ of each "
        "score and divide by their sum.",
    )
    return ToyCell(tokens, X, steps.scores, steps.weights, steps.output, qi, ki, question)


# --------------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One result for the summary: its sentence, and whether it is a surprise or what the course predicts."""

    text: str
    surprising: bool


def summary_findings(results: Sequence[object]) -> list[Finding]:
    """The findings of the steps' results (those that have one), each marked surprising or not.

    A result with ``as_predicted`` True (e.g. mean pooling beating [CLS]) is what the course predicts;
    every other finding (a misread sentence, a better earlier layer, a hard case) is a surprise.
    """
    out = []
    for r in results:
        text = getattr(r, "finding", None)
        if text:
            out.append(Finding(text, not bool(getattr(r, "as_predicted", False))))
    return out


@dataclass(frozen=True)
class AnswerRecord:
    """What the learner answered for one step and whether the model's numbers agreed."""

    step_id: str
    answer: str
    correct: bool
    model_answer: str


def report_rows(records: dict[str, AnswerRecord], solved: Sequence[str] = ()) -> list[dict[str, str]]:
    """One row per question step, in lesson order, for the summary table.

    records: the answers given in this session; solved: step ids solved earlier (e.g. read from a link),
    shown as solved when this session has no answer for them.
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
                "topic": s.title,
                "your answer": r.answer if r else "",
                "result": result,
                "model's answer": r.model_answer if r else "",
            }
        )
    return rows


def report_csv(records: dict[str, AnswerRecord], solved: Sequence[str] = ()) -> str:
    """The summary table as CSV text (header first), safe to open in a spreadsheet (lib.export)."""
    return dict_rows_csv(report_rows(records, solved))


# --------------------------------------------------------------------------------------------------
# "What moves the word": predict which context word matters most, then reveal
# --------------------------------------------------------------------------------------------------

CONTEXT_SENTENCE = ATTENTION_SENTENCE  # the same sentence as the attention step, so the two can be compared
CONTEXT_TIE = 0.005  # shifts closer than this to the largest count as a tie: either word is accepted


@dataclass(frozen=True)
class ContextPrediction:
    """Which context word, masked, moves the target most at ``layer``.

    options: the distinct context words (letters only, not the target), in sentence order
    shift:   (len(options),) the largest shift among each option's occurrences at ``layer``
    """

    layer: int
    options: tuple[str, ...]
    shift: np.ndarray
    question: Question


def context_prediction(
    words: Sequence[str], shift: np.ndarray, target: str, *, attention: np.ndarray | None = None
) -> ContextPrediction:
    """The question "which word, masked, moves the target most at the last layer?".

    words: the context words of an occlusion (``lib.context.Occlusion.words``); shift: (K, len(words)) its
    shifts; attention: (K - 1, len(words)) the target's attention to each word, to compare in the answer.
    """
    s = np.asarray(shift, dtype=np.float64)
    layer = s.shape[0] - 1
    first: dict[str, int] = {}
    best: dict[str, float] = {}
    for j, w in enumerate(words):
        if not w.isalpha() or w.lower() == target.lower():
            continue
        key = w.lower()
        first.setdefault(key, j)
        best[key] = max(best.get(key, -np.inf), float(s[layer, j]))
    if len(first) < 2:
        raise StepNotApplicable("the sentence needs at least two context words")
    keys = list(first)
    options = tuple(words[first[k]] for k in keys)
    values = np.array([best[k] for k in keys])
    accepted = [options[i] for i in _near_best(values, CONTEXT_TIE)]
    top = int(np.argmax(values))
    low = int(np.argmin(values))
    expl = (
        f"Masking '{options[top]}' moves '{target}' most at layer {layer}: its vector keeps a cosine of "
        f"{1 - values[top]:.3f} with the original (shift {values[top]:.3f}); masking '{options[low]}' moves it "
        f"least ({values[low]:.3f})."
    )
    if attention is not None:
        a = np.asarray(attention, dtype=np.float64)[layer - 1]
        a_top = max((j for j in range(len(words)) if words[j].lower() in first), key=lambda j: a[j])
        if words[a_top].lower() != options[top].lower():
            expl += (
                f" In the same layer, '{target}' attends most to '{words[a_top]}': attention and effect do not "
                "always agree."
            )
        else:
            expl += f" It is also the word '{target}' attends to most in that layer."
    question = _choice(
        f"Which word, replaced by [MASK], moves '{target}' most at the last layer (layer {layer})?",
        options,
        accepted,
        expl,
        f"Which word tells you which meaning of '{target}' is meant? Try again; the attention bars are only a "
        "hint, and not always a good one.",
    )
    return ContextPrediction(layer, options, values, question)


# --------------------------------------------------------------------------------------------------
# "Is the separation in the architecture or learned?": trained weights against random ones
# --------------------------------------------------------------------------------------------------

AS_TRAINED = "Yes, about as far as the trained model"
SOME = "Yes, but clearly less far than the trained model"
NOT_AT_ALL = "No: the gap stays where it is at layer 0"
# A layer-0-to-last growth of the gap within this of another counts as "about the same" (cosine units).
GROWTH_TIE = COSINE_TIE


@dataclass(frozen=True)
class ArchitectureCheck:
    """The same sentences through trained and randomly initialised weights of one architecture.

    trained_gap, random_gap: (L+1,) same-sense minus different-sense mean cosine per layer;
    trained_auc, random_auc: (L+1,) pair-ranking AUC per layer (0.5 = chance; scale-free);
    trained_growth, random_growth: gap at the last layer minus gap at layer 0, i.e. what the layers add;
    finding: the result in one sentence for the summary; as_predicted: True when only training separates.
    """

    trained_gap: np.ndarray
    random_gap: np.ndarray
    trained_auc: np.ndarray
    random_auc: np.ndarray
    trained_growth: float
    random_growth: float
    question: Question
    finding: str
    as_predicted: bool

    @property
    def layer(self) -> int:
        return len(self.trained_gap) - 1


def _growth_choices(random_growth: float, trained_growth: float) -> set[str]:
    """The choices that describe a random copy whose layers add ``random_growth`` to the gap."""
    out = set()
    if random_growth >= trained_growth - GROWTH_TIE:
        out.add(AS_TRAINED)
    if random_growth <= GROWTH_TIE:
        out.add(NOT_AT_ALL)
    if GROWTH_TIE < random_growth < trained_growth - GROWTH_TIE:
        out.add(SOME)
    return out


def architecture_check(
    trained: np.ndarray,
    random: np.ndarray,
    senses: Sequence[str | None],
    target: str,
    *,
    seed: int = 0,
    probes: tuple[object, object] | None = None,
) -> ArchitectureCheck:
    """Does a randomly initialised copy of the architecture separate the senses at the last layer?

    trained, random: (n, L+1, H) the target's vectors of the same n sentences through the trained and the
    random weights (same architecture, so the same L). The answer reads what the layers *add*: the gap at
    the last layer minus the gap at layer 0, where there is no context yet; a growth within ``GROWTH_TIE``
    of a boundary between two choices accepts both. probes: optionally the lib.probe.ProbeResult of the
    trained and of the random vectors, quoted in the explanation (probe vs its shuffled-label control).
    """
    t, r = np.asarray(trained), np.asarray(random)
    if t.shape[:2] != r.shape[:2]:
        raise ValueError(f"the two models must read the same sentences at the same depth: {t.shape} vs {r.shape}")
    _senses_ok(senses, t.shape[0])
    ct, cr = layer_cosine_matrices(t), layer_cosine_matrices(r)
    st_, sr = sense_similarity(ct, senses), sense_similarity(cr, senses)
    if st_.gap is None or sr.gap is None:
        raise StepNotApplicable("this step needs pairs of the same sense and pairs of different senses")
    at, ar = pair_ranking_auc(ct, senses), pair_ranking_auc(cr, senses)
    gt, gr = st_.gap, sr.gap
    last = len(gt) - 1
    grow_t, grow_r = float(gt[last] - gt[0]), float(gr[last] - gr[0])
    h = GROWTH_TIE / 2
    accepted = _growth_choices(grow_r - h, grow_t) | _growth_choices(grow_r, grow_t) | _growth_choices(grow_r + h, grow_t)
    shown = _growth_choices(grow_r, grow_t)
    answer = next(c for c in (NOT_AT_ALL, SOME, AS_TRAINED) if c in shown)
    random_name = f"random weights (seed {seed})"
    expl = (
        f"With the trained weights the gap goes from {gt[0]:+.3f} at layer 0 to {gt[last]:+.3f} at layer {last} "
        f"(the layers add {grow_t:+.3f}); with {random_name} from {gr[0]:+.3f} to {gr[last]:+.3f} (they add "
        f"{grow_r:+.3f})."
    )
    if abs(gr[0]) > GROWTH_TIE:
        expl += (
            f" The random copy's gap at layer 0 ({gr[0]:+.3f}) holds no context: it comes from its random word "
            f"piece and position vectors, i.e. from where '{target}' happens to sit in these sentences."
        )
    expl += (
        f" Counted without the scale of the cosines: at layer {last}, a same-sense pair is closer than a "
        f"different-sense pair in {at[last]:.0%} of comparisons with the trained weights and {ar[last]:.0%} "
        "with random ones (50% is chance)."
    )
    if probes is not None:
        pt, pr = probes
        parts = []
        for name, p in (("trained", pt), ("random", pr)):
            acc, high = float(p.accuracy[last]), float(p.shuffled_high[last])
            parts.append(
                f"{name} {acc:.0%} against a control band up to {high:.0%}"
                + (" (within the band)" if acc <= high + 1e-12 else "")
            )
        expl += f" A logistic-regression probe at layer {last} agrees: " + "; ".join(parts) + "."
    if answer == NOT_AT_ALL:
        expl += " What the trained model does here, it learned: the architecture alone does not do it."
    elif answer == SOME:
        expl += " Part of the separation comes from the architecture alone; training adds the rest."
    else:
        expl += " Here the architecture alone goes as far as training: the trained model's gap is no evidence of learning."
    as_predicted = answer == NOT_AT_ALL and grow_t > GROWTH_TIE
    if as_predicted:
        finding = (
            f"With {random_name} the layers add no separation to '{target}' (gap {gr[0]:+.3f} at layer 0, "
            f"{gr[last]:+.3f} at layer {last}); the trained weights take it from {gt[0]:+.3f} to {gt[last]:+.3f}: "
            "the separation was learned."
        )
    elif grow_t <= GROWTH_TIE:
        finding = (
            f"Between layer 0 and layer {last} the layers add no separation to '{target}' with the trained weights "
            f"({grow_t:+.3f}) or with {random_name} ({grow_r:+.3f})."
        )
    else:
        finding = (
            f"A copy with {random_name} already adds {grow_r:+.3f} to the gap of '{target}' between layer 0 and "
            f"layer {last}, against {grow_t:+.3f} with the trained weights: part of the separation comes from the architecture."
        )
    question = _choice(
        f"A copy of this model with {random_name} reads the same '{target}' sentences. By the last layer "
        f"(layer {last}), do its layers pull the senses apart?",
        [AS_TRAINED, SOME, NOT_AT_ALL],
        sorted(accepted),
        expl,
        "The blue line is what training gives. Ask yourself what random weights can know about meaning; "
        "mixing each word with its neighbours is all they do.",
        answer=answer,
    )
    return ArchitectureCheck(gt, gr, at, ar, grow_t, grow_r, question, finding, as_predicted)
