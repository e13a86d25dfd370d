"""The lesson's steps on how far the senses of a word separate: static vs contextual, the apple exercise,
layer by layer, "deeper is always better?", and trained against random weights.

Arrays in, each step's result with its question out (the step modules' convention: :mod:`lib.teaching`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import StepNotApplicable
from lib.models.encoder import weights_label
from lib.stats.chance import ReadoutChance, layer_list, readout_chance
from lib.stats.readout import leave_one_out_centroid_cosines
from lib.stats.similarity import (
    cosine_matrix,
    layer_cosine_matrices,
    pair_ranking_auc,
    pair_values,
    sense_similarity,
)
from lib.teaching.lesson import (
    AS_TRAINED,
    COSINE_TIE,
    NONE_WRONG,
    NOT_AT_ALL,
    SOME,
    Question,
    choice_question,
    commonest_two,
    layer_name,
    near_best,
    sense_names,
    sentence_option,
)

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
    best = [others[i] for i in near_best(row, COSINE_TIE)]
    top = others[int(np.argmax(row))]
    sense_names(senses, n, need=1)
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
    question = choice_question(
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

    @property
    def crossing(self) -> float:
        """The largest amount by which a sentence's word sits nearer the other sense's average than its own
        (cosine; <= 0 when every sentence is on its own side)."""
        margin = np.abs(np.asarray(self.x) - np.asarray(self.y))  # a misread sentence is nearer the other side
        crossed = np.isin(self.indices, self.wrong)
        return float(margin[crossed].max()) if crossed.any() else -float(margin.min())


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
    two = commonest_two(senses, sense_names(senses, n))
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
            more = len(wrong) - 1
            expl += f" {more} more sentence{'s cross' if more != 1 else ' crosses'} the line too."
        answer = "; ".join(sentence_option(labels, senses, i) for i in wrong)
    else:
        closest = int(idx[int(np.argmin(margin))])
        expl = (
            f"At layer {layer} every '{target}' is nearer its own sense's average; the closest call is "
            f"{labels[closest]} (margin {margin.min():.3f})."
        )
        answer = NONE_WRONG
    expl += " The context pushed each occurrence towards its meaning, but not always far enough."
    question = choice_question(
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


def sense_separation(
    vectors: np.ndarray,
    senses: Sequence[str | None],
    target: str,
    *,
    layer_zero: str = "the word piece, its position and the segment",
    shared: bool = False,
) -> SenseSeparation:
    """At which layer the senses are pulled apart most (largest same-minus-different gap).

    ``layer_zero``: what the model's layer 0 holds (lib.models.facts.layer_zero_holds); ``shared``: a word piece
    has the same layer-0 vector wherever it stands (lib.models.facts.layer_zero_shared), so only the word's
    form can differ there."""
    v = np.asarray(vectors)
    names = sense_names(senses, v.shape[0])
    sims = sense_similarity(layer_cosine_matrices(v), senses)
    gap = sims.gap
    best = near_best(gap, COSINE_TIE / 2)
    top = int(np.argmax(gap))
    last = v.shape[1] - 1
    expl = (
        f"The gap is largest at layer {top}: same-sense pairs {sims.same[top]:.2f}, different-sense pairs "
        f"{sims.different[top]:.2f} (gap {gap[top]:.3f}). At layer 0 the gap is {gap[0]:.3f}: the input vector "
        f"holds {layer_zero}, with no context, so the senses ({' and '.join(names)}) can only differ there if the "
        f"word's {'form' if shared else 'position or form'} happens to go with its sense."
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
    question = choice_question(
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
    shuffled labels (lib.stats.chance.readout_chance), or None when not computed.
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
    """Per-layer sense readout (lib.stats.chance.readout_chance, with its chance band); every layer with the
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
                "position or form (its word pieces) going with its sense, which small hand-written sets allow."
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
        if all(o.n_evaluated and o.sentences(o.accuracy.max() - o.accuracy[last]) <= 1 for o in not_last):
            parts.append("A single sentence is too small a difference to say that deeper is worse on these sets.")
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
    question = choice_question(
        f"Which layer reads the sense of '{c.name}' best?",
        [layer_name(k) for k in range(len(c.accuracy))],
        [layer_name(k) for k in c.best_layers],
        " ".join(parts),
        f"Follow the '{c.name}' line and find its highest point (hover for the exact share).",
    )
    finding = None
    for o in curves:
        if last not in o.best_layers and (not o.n_evaluated or o.sentences(o.accuracy.max() - o.accuracy[last]) > 1):
            k = o.sentences(o.accuracy.max() - o.accuracy[last])
            finding = (
                f"The sense of '{o.name}' reads best at layer {o.best_layers[0]} ({o.accuracy.max():.0%}), not at "
                f"the last layer ({o.accuracy[last]:.0%})"
                + (f": {_sentences_phrase(k, o.n_evaluated)}." if o.n_evaluated else ".")
            )
            break
    return DeeperCheck(tuple(curves), question, finding)


# --------------------------------------------------------------------------------------------------
# "Is the separation in the architecture or learned?": trained weights against random ones
# --------------------------------------------------------------------------------------------------

# A layer-0-to-last growth of the gap within this of another counts as "about the same" (cosine units).
GROWTH_TIE = COSINE_TIE


@dataclass(frozen=True)
class ArchitectureCheck:
    """The same sentences through the trained weights and a control of one architecture (lib.models.weights).

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
    weights: str = "shuffled",
    probes: tuple[object, object] | None = None,
    context: tuple[object, object] | None = None,
    floors: tuple[float, float] | None = None,
) -> ArchitectureCheck:
    """Does a control copy of the architecture (``weights``: "shuffled" or "random", lib.models.encoder.WEIGHTS)
    separate the senses at the last layer?

    trained, random: (n, L+1, H) the target's vectors of the same n sentences through the trained and the
    control's weights (same architecture, so the same L). The answer reads what the layers *add*: the gap at
    the last layer minus the gap at layer 0, where there is no context yet; a growth within ``GROWTH_TIE``
    of a boundary between two choices accepts both. probes: optionally the lib.stats.probe.ProbeResult of the
    trained and of the random vectors, quoted in the explanation (probe vs its shuffled-label null).
    context: optionally the lib.stats.context.ContextUse of the trained model and of the control on the same
    sentences, and floors: their random other-word-piece cosine at the last layer (lib.stats.baseline): what
    the control cannot rule out, said with its numbers (it may take in less context, and a cone squeezes
    every gap by itself). The explanation leads with the pair-ranking AUC, which does not depend on how high
    the cosines sit.
    """
    t, r = np.asarray(trained), np.asarray(random)
    if t.shape[:2] != r.shape[:2]:
        raise ValueError(f"the two models must read the same sentences at the same depth: {t.shape} vs {r.shape}")
    sense_names(senses, t.shape[0])
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
    random_name = weights_label(weights, seed)
    expl = (
        f"At layer {last}, a same-sense pair is closer than a different-sense pair in {at[last]:.0%} of "
        f"comparisons with the trained weights and {ar[last]:.0%} with the control (50% is chance; this count "
        "does not depend on how high the cosines sit). "
        f"The gap goes from {gt[0]:+.3f} at layer 0 to {gt[last]:+.3f} at layer {last} with the trained weights "
        f"(the layers add {grow_t:+.3f}); with {random_name} from {gr[0]:+.3f} to {gr[last]:+.3f} (they add "
        f"{grow_r:+.3f})."
    )
    if abs(gr[0]) > GROWTH_TIE:
        expl += (
            f" The control's gap at layer 0 ({gr[0]:+.3f}) holds no context: it comes from its {weights} word "
            f"piece and position vectors, i.e. from where '{target}' happens to sit in these sentences."
        )
    if probes is not None:
        pt, pr = probes
        parts = []
        for name, p in (("trained", pt), (weights, pr)):
            acc, high = float(p.accuracy[last]), float(p.shuffled_high[last])
            parts.append(
                f"{name} {acc:.0%}, its shuffled-label null up to {high:.0%}"
                + (" (within the null)" if acc <= high + 1e-12 else "")
            )
        expl += f" A logistic-regression probe at layer {last}: " + "; ".join(parts) + "."
    caveats = []
    if context is not None:
        from lib.stats.context import context_use_phrase

        caveats.append(context_use_phrase(context[0], context[1], "the control"))
    if floors is not None:
        ft, fc = floors
        if fc > ft + GROWTH_TIE:
            caveats.append(
                f"At layer {last} the control's vectors crowd into a narrower cone: random pairs of other word "
                f"pieces have cosine {fc:.2f}, against {ft:.2f} trained, and a cone squeezes every gap by itself."
            )
    if caveats:
        expl += (
            " What this control cannot rule out: " + " ".join(caveats) + " So it shows what training adds to "
            "this architecture, not what the architecture could do with other weights."
        )
    if answer == NOT_AT_ALL:
        expl += " With its weights shuffled the architecture adds no separation here: it came with training."
    elif answer == SOME:
        expl += " The control adds part of the separation; training adds the rest."
    else:
        expl += " The control goes as far as training here: the trained model's gap alone is no evidence of learning."
    as_predicted = answer == NOT_AT_ALL and grow_t > GROWTH_TIE
    if as_predicted:
        finding = (
            f"With {random_name} the layers add no separation to '{target}' (gap {gr[0]:+.3f} at layer 0, "
            f"{gr[last]:+.3f} at layer {last}); the trained weights take it from {gt[0]:+.3f} to {gt[last]:+.3f}: "
            "the separation came with training."
        )
    elif grow_t <= GROWTH_TIE:
        finding = (
            f"Between layer 0 and layer {last} the layers add no separation to '{target}' with the trained weights "
            f"({grow_t:+.3f}) or with {random_name} ({grow_r:+.3f})."
        )
    else:
        finding = (
            f"A copy with {random_name} already adds {grow_r:+.3f} to the gap of '{target}' between layer 0 and "
            f"layer {last}, against {grow_t:+.3f} with the trained weights: part of the separation needs no training."
        )
    question = choice_question(
        f"A copy of this model with {random_name} reads the same '{target}' sentences. By the last layer "
        f"(layer {last}), do its layers pull the senses apart?",
        [AS_TRAINED, SOME, NOT_AT_ALL],
        sorted(accepted),
        expl,
        "The blue line is what training gives. The control has the same layers, but nothing in its weights "
        "was learned: what can it know about meaning?",
        answer=answer,
    )
    return ArchitectureCheck(gt, gr, at, ar, grow_t, grow_r, question, finding, as_predicted)


DIRECTION_OPTIONS = (
    "Yes, about as well as with the cue before",
    "No: its gap stays at about 0 (or below) at every layer",
    "Better than with the cue before",
)


def direction_check(decoder_gaps, encoder_gaps) -> Question:
    """Will a left-to-right decoder separate the senses when the cue comes only after the word?

    ``decoder_gaps``, ``encoder_gaps``: lib.stats.direction.CueGaps of the two models on the same set. The
    answer is read from the decoder's numbers: "No" when its cue-after half never beats
    its shuffled-sense null (``CueGaps.after_cut``), "Better" when its cue-after peak beats its cue-before
    peak, else "Yes".
    """
    d, e = decoder_gaps, encoder_gaps
    before, after = float(np.max(d.before)), float(np.max(d.after))
    if not d.separates_after:
        right = DIRECTION_OPTIONS[1]
    elif after > before:
        right = DIRECTION_OPTIONS[2]
    else:
        right = DIRECTION_OPTIONS[0]
    kb = int(np.argmax(d.before))
    return choice_question(
        "The decoder reads left to right. On the sentences whose cue comes only AFTER “bank”, does it "
        "separate river from money?",
        DIRECTION_OPTIONS,
        [right],
        f"The decoder's gap with the cue before peaks at {before:+.2f} (layer {kb}); with the cue only after "
        f"it stays between {float(np.min(d.after)):+.2f} and {after:+.2f}, where shuffled senses reach "
        f"{d.after_cut:+.2f}. When it made the vector of “bank” it had not read the cue. The encoder reads both "
        f"sides: its peaks are {float(np.max(e.before)):+.2f} (cue before) and {float(np.max(e.after)):+.2f} "
        "(cue after).",
        "Ask what the decoder has read when it makes the vector of “bank”.",
    )


@dataclass(frozen=True)
class DirectionResult:
    """The direction-of-context step's result, for the lesson's summary (lib.teaching.lesson.summary_findings).

    as_predicted: the decoder separates the cue-before half and not the cue-after half, the encoder both,
    as a left-to-right reading predicts.
    """

    finding: str
    as_predicted: bool


def direction_result(decoder_gaps, encoder_gaps) -> DirectionResult:
    """:class:`DirectionResult` from the two models' lib.stats.direction.CueGaps on the same set."""
    d, e = decoder_gaps, encoder_gaps
    peak = {name: float(np.max(v)) for name, v in
            (("db", d.before), ("da", d.after), ("eb", e.before), ("ea", e.after))}  # fmt: skip
    as_predicted = d.separates_before and not d.separates_after and e.separates_before and e.separates_after
    text = (
        f"Direction of context: the decoder's sense gap peaks at {peak['db']:+.2f} with the cue before “bank” "
        f"and at {peak['da']:+.2f} with the cue only after; the encoder's at {peak['eb']:+.2f} and "
        f"{peak['ea']:+.2f}."
    )
    return DirectionResult(text, as_predicted)
