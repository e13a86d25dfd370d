"""The lesson's steps on the shape of the vector space: [CLS] against the mean as a sentence vector, the
anisotropy floor, a 2-D projection, and single occurrences that sit nearer another sense ("polysemy is solved?").

Arrays in, each step's result with its question out (the step modules' convention: :mod:`lib.teaching`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import StepNotApplicable
from lib.stats.baseline import other_token_masks, random_token_baseline
from lib.stats.evidence import evidence_card
from lib.stats.geometry import line_margin
from lib.stats.pooling import sentence_vectors
from lib.stats.projection import pca_projection
from lib.stats.similarity import (
    cosine_matrix,
    hardest_case,
    layer_cosine_matrices,
    pair_values,
    sense_similarity,
    upper_pairs,
)
from lib.teaching.lesson import (
    CLS_CHOICE,
    COSINE_TIE,
    LAST_CHOICE,
    LAST_PIECE,
    MEAN_CHOICE,
    NO,
    POOLING_TIE,
    READ_TOLERANCE,
    SAME_CHOICE,
    YES,
    Question,
    choice_question,
    commonest_two,
    number_question,
    sense_names,
    sentence_option,
)

# --------------------------------------------------------------------------------------------------
# Step 6: [CLS] as a sentence vector
# --------------------------------------------------------------------------------------------------



@dataclass(frozen=True)
class PoolingComparison:
    """Same-topic vs different-topic mean cosine per layer, for one word piece's vector and for mean pooling.

    cls_same, cls_different, mean_same, mean_different: (L+1,); cls_gap, mean_gap: same - different.
    cls_last, mean_last: (n, n) cosine matrices at the last layer. finding: the comparison in one
    sentence for the evidence card. single: which word piece's vector the "cls" fields are ("[CLS]", or
    "the last word piece" for a left-to-right model, whose first piece has seen nothing but itself).
    """

    cls_same: np.ndarray
    cls_different: np.ndarray
    mean_same: np.ndarray
    mean_different: np.ndarray
    cls_last: np.ndarray
    mean_last: np.ndarray
    question: Question
    finding: str | None = None
    single: str = "[CLS]"

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
    hidden_states: Sequence[np.ndarray],
    special: Sequence[Sequence[bool]],
    topics: Sequence[str],
    *,
    causal: bool = False,
) -> PoolingComparison:
    """Which sentence vector keeps same-topic pairs above different-topic pairs: one word piece's or the mean?

    special: per sentence (n_i,) bool (``Encoding.special``). A model that reads both ways compares the first
    token's vector, [CLS] (every sentence must start with a special token); a left-to-right one (``causal``)
    the last word piece's, the only one that has read the whole sentence (its first has seen nothing but
    itself: one vector in every sentence). lib.stats.pooling.sentence_vectors makes both.
    """
    if not causal and not all(np.asarray(sp, dtype=bool)[:1].all() for sp in special):
        raise StepNotApplicable("the model puts no [CLS] token first; this step needs a BERT-style encoder")
    cls, mean = sentence_vectors(hidden_states, special, single="last" if causal else "first")
    name = LAST_PIECE if causal else "[CLS]"
    one_choice = LAST_CHOICE if causal else CLS_CHOICE
    sense_names(topics, cls.shape[0])
    c = sense_similarity(layer_cosine_matrices(cls), topics)
    m = sense_similarity(layer_cosine_matrices(mean), topics)
    last = cls.shape[1] - 1
    cg, mg = float(c.gap[last]), float(m.gap[last])
    if abs(cg - mg) < POOLING_TIE:
        accepted = [SAME_CHOICE, one_choice if cg > mg else MEAN_CHOICE]
        answer = SAME_CHOICE
    else:
        accepted = [one_choice if cg > mg else MEAN_CHOICE]
        answer = accepted[0]
    expl = (
        f"At layer {last}, same-topic pairs beat different-topic pairs by {mg:.3f} with the mean of the word "
        f"pieces ({m.same[last]:.2f} against {m.different[last]:.2f}) and by {cg:.3f} with {name} "
        f"({c.same[last]:.2f} against {c.different[last]:.2f})."
    )
    cls_all = layer_cosine_matrices(cls)  # (L+1, n, n)
    if last > 0:
        floor = float(cls_all[:last].min())  # the least similar pair of single vectors before the last layer
        if floor > 0.9:
            expl += (
                f" Before layer {last} the {name} vector hardly depends on the sentence: from layer 0 to layer "
                f"{last - 1}, every pair of sentences, whatever the topic, has a cosine of at least {floor:.3f}."
            )
    question = choice_question(
        f"At layer {last}, which sentence vector separates same-topic pairs from different-topic pairs more?",
        [one_choice, MEAN_CHOICE, SAME_CHOICE],
        accepted,
        expl,
        "Compare the distance between the two lines in each panel at the last layer.",
        answer=answer,
    )
    lead = name[0].upper() + name[1:]
    if mg - cg >= POOLING_TIE:
        finding = f"{lead} tells topics apart less than the mean of the word pieces (gap {cg:.2f} against {mg:.2f})."
    elif cg - mg >= POOLING_TIE:
        finding = f"In this model {name} tells topics apart more than the mean of the word pieces ({cg:.2f} against {mg:.2f})."
    else:
        finding = f"{lead} and the mean of the word pieces tell topics apart about equally ({cg:.2f} and {mg:.2f})."
    return PoolingComparison(
        c.same,
        c.different,
        m.same,
        m.different,
        cosine_matrix(cls[:, last, :]),
        cosine_matrix(mean[:, last, :]),
        question,
        finding,
        name,
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
    """The mean cosine of unrelated word pieces per layer (lib.stats.baseline.random_token_baseline).

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
    question = number_question(
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



@dataclass(frozen=True)
class ProjectionLook:
    """coords: (n, 2) PCA of the target's vectors at ``layer``; explained: (2,) variance share per axis.

    margin: :func:`lib.stats.geometry.line_margin` of the two commonest senses (> 0: one straight line splits
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
    names = sense_names(senses, v.shape[0])
    layer = v.shape[1] - 1 if layer is None else layer
    p = pca_projection(v[:, layer, :], 2)
    a, b = commonest_two(senses, names)
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
    question = choice_question(
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

    @property
    def crossing(self) -> float:
        """How much nearer sentence a's word sits to b (another sense) than to c (its own), in cosine; > 0
        goes against the course's picture of context pushing each occurrence towards its meaning."""
        return self.cos_ab - self.cos_ac


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
    sense_names(senses, n)
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
    question = choice_question(
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
    """The polysemy step's evidence card (lib.stats.evidence.evidence_card), layer 0 vs the last layer, as CSV."""
    v = np.asarray(vectors)
    last = v.shape[1] - 1
    card = evidence_card(v[:, 0, :], v[:, last, :], sentences, senses, target, chosen_name=f"layer {last}")
    return card.to_csv()
