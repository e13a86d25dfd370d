"""The lesson's steps on attention: where the word looks, one attention weight by hand, and which context
word, masked, moves the word most.

Arrays in, each step's result with its question out (the step modules' convention: :mod:`lib.teaching`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import StepNotApplicable
from lib.models.attention import special_attention, target_attention, token_labels
from lib.teaching.lesson import (
    COSINE_TIE,
    HAND_TOLERANCE,
    Question,
    choice_question,
    near_best,
    number_question,
)
from lib.teaching.toy_attention import ToyInputs

# --------------------------------------------------------------------------------------------------
# Step 3: attention
# --------------------------------------------------------------------------------------------------



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


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def attention_look(
    attentions: np.ndarray,
    tokens: Sequence[str],
    special: Sequence[bool],
    target_positions: Sequence[int],
    target: str,
    *,
    layer: int = 0,
    causal: bool = False,
) -> AttentionLook:
    """Which other word piece the target attends to most in ``layer``, apart from the special tokens.

    attentions: (L, H, n, n) of one sentence; tokens: its n word pieces; special: (n,) bool, True for the
    special tokens (``Encoding.special``: [CLS]/[SEP], or a decoder's start token), named in the question as
    the tokenizer writes them; layer: 0-based index into the first axis of ``attentions``. ``causal``: a
    left-to-right model, whose target can look only at itself and the word pieces before it: the choices are
    those (a later word piece gets exactly 0).
    """
    att = np.asarray(attentions)
    if not 0 <= layer < att.shape[0]:
        raise ValueError(f"layer must be between 0 and {att.shape[0] - 1}")
    is_special = np.asarray(special, dtype=bool)
    ta = target_attention(att, target_positions)
    w = ta.attends_to_mean[layer]  # (n,)
    labels = tuple(token_labels(tokens))
    reach = max(target_positions) if causal else len(tokens) - 1  # the last word piece the target can see
    candidates = [
        i for i in range(len(tokens)) if not is_special[i] and i not in set(target_positions) and i <= reach
    ]
    if not candidates:
        raise StepNotApplicable("the sentence has no word piece besides the target")
    specials = list(dict.fromkeys(tokens[i] for i in np.flatnonzero(is_special)))
    named = _and(specials) if specials else "the special tokens"
    cw = w[candidates]
    best = [candidates[i] for i in near_best(cw, COSINE_TIE)]
    top = candidates[int(np.argmax(cw))]
    special_share = float(special_attention(att, is_special)[layer])
    to_special = float(w[is_special].sum())
    shown = layer + 1
    expl = (
        f"In layer {shown}, '{target}' gives {w[top]:.2f} of its attention to '{tokens[top]}', more than to "
        f"any other word; {to_special:.2f} goes to {named}, which many heads use as a resting place "
        f"(across the whole sentence, {special_share:.0%} of this layer's attention lands on "
        f"{'it' if len(specials) == 1 else 'them'})."
        + (" The words after it get exactly 0: reading left to right, it has not reached them." if causal else "")
    )
    question = choice_question(
        f"In layer {shown} (average of the heads), which word piece does '{target}' attend to most, "
        f"apart from itself and {named}?",
        [labels[i] for i in candidates],
        [labels[i] for i in best],
        expl,
        f"Read the top bar chart: ignore the highlighted target bar and the {named} bar"
        f"{'' if len(specials) == 1 else 's'}, then find the tallest one.",
    )
    return AttentionLook(
        layer, labels, tuple(target_positions), w, ta.attended_by_mean[layer], special_share, question
    )


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
    """The weight ``query`` gives ``key`` in the course's 'The cat sat' example (lib.teaching.toy_attention)."""
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
    question = number_question(
        f"What weight does '{query}' give to '{key}'? Work it out from X in the table above.",
        w,
        HAND_TOLERANCE,
        expl,
        f"X = e + p: the '{query}' row is {X[qi].round(2).tolist()}. Dot it with each row of X, take e^ of each "
        "score and divide by their sum.",
    )
    return ToyCell(tokens, X, steps.scores, steps.weights, steps.output, qi, ki, question)


# --------------------------------------------------------------------------------------------------
# "What moves the word": predict which context word matters most, then reveal
# --------------------------------------------------------------------------------------------------

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
    words: Sequence[str],
    shift: np.ndarray,
    target: str,
    *,
    attention: np.ndarray | None = None,
    replacement: str = "[MASK]",
    only: Sequence[int] | None = None,
) -> ContextPrediction:
    """The question "which word, masked, moves the target most at the last layer?".

    words: the context words of an occlusion (``lib.stats.context.Occlusion.words``); shift: (K, len(words)) its
    shifts; attention: (K - 1, len(words)) the target's attention to each word, to compare in the answer;
    replacement: what took each word's place (``Occlusion.replacement``: the mask token, or "" when each word
    was deleted), so the question says what was done; only: the word indices to offer (a left-to-right model's
    target cannot see the words after it, so ``Occlusion.before_target``), default all.
    """
    verb, done = ("Masking", f"replaced by {replacement}") if replacement else ("Deleting", "deleted")
    s = np.asarray(shift, dtype=np.float64)
    layer = s.shape[0] - 1
    first: dict[str, int] = {}
    best: dict[str, float] = {}
    offered = set(range(len(words))) if only is None else {int(j) for j in only}
    for j, w in enumerate(words):
        if not w.isalpha() or w.lower() == target.lower() or j not in offered:
            continue
        key = w.lower()
        first.setdefault(key, j)
        best[key] = max(best.get(key, -np.inf), float(s[layer, j]))
    if len(first) < 2:
        raise StepNotApplicable("the sentence needs at least two context words")
    keys = list(first)
    options = tuple(words[first[k]] for k in keys)
    values = np.array([best[k] for k in keys])
    accepted = [options[i] for i in near_best(values, CONTEXT_TIE)]
    top = int(np.argmax(values))
    low = int(np.argmin(values))
    expl = (
        f"{verb} '{options[top]}' moves '{target}' most at layer {layer}: its vector keeps a cosine of "
        f"{1 - values[top]:.3f} with the original (shift {values[top]:.3f}); {verb.lower()} '{options[low]}' "
        f"moves it least ({values[low]:.3f})."
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
    question = choice_question(
        f"Which word, {done}, moves '{target}' most at the last layer (layer {layer})?",
        options,
        accepted,
        expl,
        f"The shift counts any change of '{target}', so the word that gives the meaning away need not be the "
        "one that moves it most. Try again; the attention bars are only a hint, and not always a good one.",
    )
    return ContextPrediction(layer, options, values, question)
