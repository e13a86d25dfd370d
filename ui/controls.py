"""Page sections for the controls (issue "Is it real?"): the probe against shuffled labels, the faithfulness
of a map, and two models side by side. Each section reads its own widgets (keys namespaced by page),
calls lib through ui.cache, draws one figure and explains it in a few sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from lib.charts.controls import probe_chart, two_model_chart
from lib.models.encoder import (
    DEFAULT_MODEL,
    ModelLoadError,
    model_key,
    model_label,
    split_model_key,
    weights_label,
)
from lib.stats.context import ContextError, context_use_phrase
from lib.stats.probe import ProbeError
from lib.stats.projection import NeighbourCheck
from ui import cache, link
from ui.widgets import chart, escape_md, prose


# ------------------------------------------------------------------------------------------ the probe
def layer_word(i: int) -> str:
    """A hidden-state index in running text: 'layer 0 (embedding)', 'layer 3'."""
    return "layer 0 (embedding)" if i == 0 else f"layer {i}"


def probe_section(
    ss,
    tv,
    model: str,
    names: Sequence[str],
    *,
    key: str = "layers_probe",
    pooled: tuple[str, str, np.ndarray] | None = None,
) -> None:
    """A logistic-regression probe per layer next to the same probe trained on shuffled labels (a permutation null).

    pooled: (pooling id, its name, vectors (n, d)) when the page reads a pooled vector (mean of the last four
    or of all layers): the same probe and control are run on it too, and the text gives its numbers.
    """
    st.subheader("A trained probe, and its control")
    senses = tuple(s or None for s in ss.senses)
    try:
        p = cache.probe(model, tuple(ss.sentences), senses, ss.target, tv.vectors)
    except ProbeError as err:
        st.info(escape_md(str(err)))
        return
    K = len(p.accuracy)
    set_key = (model, tuple(ss.sentences), senses, ss.target, tuple(names[:K]))
    chart(  # built once per set and model (ui.cache.shared_figure)
        cache.shared_figure(
            "probe",
            set_key,
            lambda: probe_chart(
                names[:K],
                p.accuracy,
                p.shuffled,
                p.shuffled_high,
                p.chance,
                title="Sense probe per layer vs shuffled labels",  # short enough for a phone
            ),
        ),
        key=key,
    )
    best = p.best_above_band  # never a layer the same caption lists as inside the band
    within = [i for i in range(K) if p.within_band[i]]
    prose(
        f"A **probe** reads the sense off the vectors (logistic regression, {p.folds}-fold cross-validated). "
        f"Its **null**: the same probe trained on shuffled senses ({p.shuffles} times), scored on the true "
        "ones. A layer reads the sense when the probe beats the null and the most common sense's rate."
    )
    pp = None
    if pooled is not None:
        pid, pname, pv = pooled
        try:
            pp = cache.probe(model, tuple(ss.sentences), senses, ss.target, np.asarray(pv)[:, None, :], kind=pid)
        except ProbeError as err:
            st.info(escape_md(str(err)))

    def table() -> pd.DataFrame:
        rows = {"probe": p.accuracy, "null (mean)": p.shuffled, "null, 95 % of shuffles at most": p.shuffled_high}
        frame = pd.DataFrame({k: [f"{x:.0%}" for x in v[:K]] for k, v in rows.items()}, index=list(names[:K]))
        if pp is not None:
            frame.loc[pname] = [f"{float(pp.accuracy[0]):.0%}", f"{float(pp.shuffled[0]):.0%}",
                                f"{float(pp.shuffled_high[0]):.0%}"]  # fmt: skip
        return frame

    st.table(cache.frame("probe", (*set_key, pooled[1] if pp is not None else None), table), hide_index=False)
    st.caption(
        f"Most common sense: {p.chance:.0%}. "
        + (f"Furthest above the null: {layer_word(best)}. " if best is not None else "")
        + (
            "Not above the null's band: " + ", ".join(layer_word(i) for i in within) + "."
            if within
            else "Every layer beats the null's band."
        )
    )
    for note in p.notes:
        st.caption(escape_md(note))


# ------------------------------------------------------------------------------------------ maps
def neighbour_caption(check: NeighbourCheck, method_label: str) -> None:
    """One line under a map: how many of each point's nearest neighbours it keeps; a warning below half."""
    text = (
        f"This {escape_md(method_label)} map keeps **{check.preserved:.0%}** of each point's {check.k} nearest "
        f"neighbours (cosine, in the full space); a random layout would keep about {check.chance:.0%}."
    )
    if check.trustworthiness is not None:
        text += (
            f" Trustworthiness {check.trustworthiness:.2f} (1 = no point looks close on the map without "
            "being close in the full space)."
        )
    if check.poor:
        st.warning(text + " **Less than half the neighbourhoods survive: do not read closeness off this map.**")
    else:
        st.caption(text)


# ------------------------------------------------------------------------------------------ two models
def other_model_key(model: str) -> str:
    """The default model to compare with: the shuffled-weights twin of a trained model, or the trained one."""
    base, weights, _ = split_model_key(model)
    return model_key(base, "shuffled", 0) if weights == "trained" else base


# What each control keeps and what it takes out (the pages and the sidebar say it in these words)
CONTROL_TEXT = {
    "shuffled": "**Shuffled weights** keep the architecture, the tokenizer and every weight matrix's own "
    "numbers, so each matrix keeps its scale; each matrix's entries are put in random places, which removes "
    "everything training arranged: which word pieces are alike, what a position means, where a head looks. "
    "Keeping the scale does not keep how sharply attention focuses or how much context a word takes in: "
    "the table below measures both for the two models.",
    "random": "**Random weights** (BERT's initialiser, std 0.02) keep the architecture and tokenizer and "
    "draw every weight afresh at a tiny scale: attention comes out almost uniform and barely changes a "
    "vector, so this copy takes in almost no context and cannot tell what training added to context "
    "mixing. Compare with the shuffled weights (id#shuffled-0) for that.",
}


def control_card(model: str, other: str, sentences: Sequence[str], target: str | None) -> None:
    """What the control holds fixed and removes, and how much context each model takes in (a small table).

    Shown when one of the two models is a control of the other. The table's numbers are
    lib.stats.context.context_use: attention entropy (fraction of uniform, first and last layer) and the largest
    shift of the target when one context word is masked (smallest and largest over the sentences).
    """
    (b1, w1, s1), (b2, w2, s2) = split_model_key(model), split_model_key(other)
    controls_ = [w for w in (w1, w2) if w != "trained"]
    if b1 != b2 or not controls_:
        return
    prose(CONTROL_TEXT[controls_[0]])
    rows, uses = {}, {}
    for key, w, s in ((model, w1, s1), (other, w2, s2)):
        try:
            use = cache.context_use(key, tuple(sentences), target)
        except ContextError as err:
            st.caption(escape_md(str(err)))
            return
        uses[w] = use
        rows[weights_label(w, s)] = {
            "attention entropy, layer 1": f"{use.entropy[0]:.2f}",
            f"layer {len(use.entropy)}": f"{use.entropy[-1]:.2f}",
            "largest shift from one masked word": f"{use.shift.min():.3f}–{use.shift.max():.3f}",
        }
    st.table(pd.DataFrame.from_dict(rows, orient="index"))
    st.caption(
        "Entropy 1.00 = attention spread evenly over the sentence. Shift: 1 − cosine of the word's last-layer "
        "vector with one context word masked, the largest per sentence, smallest and largest sentence "
        "(as on What moves the word)."
    )
    if "trained" in uses:  # one model is the other's control: say what the numbers show
        prose(context_use_phrase(uses["trained"], uses[controls_[0]], "the control"))


def layers_compare_section(ss, tv, model: str, prof, *, names_key: tuple) -> None:
    """Layer by layer's "trained or shuffled?": the same sentences through a second model, its sense gap (or mean
    pair cosine, without senses) per layer beside the first model's (``prof``, the page's LayerProfile).

    ``names_key``: what the page's results are made from (ui.analysis.Analysis.key)."""
    from lib.stats.similarity import layer_cosine_matrices, mean_pair_cosines, sense_similarity

    st.header("Trained or shuffled? The same sentences through two models")
    other = compare_picker(
        "layers",
        model,
        off_note="Switch on to compare with a second model (default: the shuffled-weights control).",
    )
    if other is None:
        return
    senses = [s or None for s in ss.senses]
    labelled = ss.has_senses
    K1 = prof.num_hidden_states

    def second():
        tv2 = cache.target_vectors(other, ss.sentences, ss.target)
        cos2 = layer_cosine_matrices(tv2.vectors)
        if labelled:
            return sense_similarity(cos2, [senses[i] for i in tv2.kept]).gap
        return mean_pair_cosines(cos2)

    y2 = cache.computed("layers_second_model", (*names_key, other), second)
    if labelled:
        if y2 is None or prof.senses.gap is None:
            st.info("The second model's sentences have too few senses to compare.")
            return
        y1, what = prof.senses.gap[:K1], "same-sense minus different-sense cosine"
    else:
        y1, what = prof.pair_means[:K1], "mean cosine over all pairs"
    n1, n2 = label(model), label(other)
    title = f"“{ss.target}”: {what}, {pair_title(model, other)}"
    relative = len(y1) != len(y2)
    chart(
        cache.shared_figure(
            "layers_compare",
            (*names_key, other, title),
            lambda: two_model_figure(
                [(n1, y1, "solid"), (n2, y2, "dash")], title=title, y_title=what, zero_line=labelled
            )[0],
        ),
        key="layers_compare_chart",
        name_model=False,
    )
    trained = "trained" not in (split_model_key(model)[1], split_model_key(other)[1]) or (
        split_model_key(model)[1] != split_model_key(other)[1]
    )
    prose(
        f"Blue: **{escape_md(n1)}**; red, dashed: **{escape_md(n2)}**. The {what} goes from {y1[0]:+.3f} to "
        f"**{y1[-1]:+.3f}** at the last layer in the first model, and from {y2[0]:+.3f} to **{y2[-1]:+.3f}** in "
        "the second. "
        + (
            "What grows with depth only in the trained model came with training. A flat control line does not "
            "show what the architecture could do with other weights: the control may take in less context "
            "(table below)."
            if trained
            else "Both are trained models: compare where each one separates the senses."
        )
        + (" The models have different depths, so the x axis is the relative depth." if relative else "")
    )
    control_card(model, other, tv.encoding.sentences, ss.target)


def compare_requested(page: str) -> bool:
    """Whether this run compares with a second model (the toggle's state, else the link's ``<page>_compare``),
    known before the toggle is drawn: call it before the page reads its set (session.models_per_set)."""
    link.init_params([link.Param(f"{page}_compare", "bool", False)])
    return bool(st.session_state.get(f"{page}_compare"))


def compare_picker(page: str, model: str, *, off_note: str) -> str | None:
    """A toggle and a model field for "compare with a second model"; returns the second model's key or None.

    ``off_note``: shown while the toggle is off (what switching it on would show).
    URL keys: ``<page>_compare`` (1/0) and ``<page>_other`` (a model key, e.g. "<id>#random-0").
    """
    k_on, k_other = f"{page}_compare", f"{page}_other"
    default_other = other_model_key(model)
    picker = [link.Param(k_on, "bool", False), link.Param(k_other, "text", default_other, max_chars=220)]
    link.init_params(picker)
    c1, c2 = st.columns([1, 2])
    on = c1.toggle(
        "Compare with a second model",
        key=k_on,
        help="The same sentences through two encoders. By default the same architecture with its trained "
        "weights shuffled: what appears only with the trained weights came with training; what appears in both "
        "may come from the architecture (the table under the chart says how much context each model takes in).",
    )
    c2.text_input(
        "Second model (id, id#shuffled-<seed> or id#random-<seed>)",
        key=k_other,
        max_chars=220,
        disabled=not on,
        help=f"Default: {default_other}. Any model the Model panel accepts; add #shuffled-0 for its shuffled "
        "twin, #random-0 for fresh weights from BERT's initialiser.",
    )
    other = (st.session_state.get(k_other) or "").strip() or default_other
    link.sync_params(picker, {k_other: other})
    if not on:
        st.caption(off_note)
        return None
    try:
        other = model_key(other)
    except ModelLoadError as err:
        st.error(escape_md(str(err)))
        return None
    enc, err = cache.try_encoder(other)
    if enc is None:
        st.error(escape_md(err or "The second model could not be loaded."))
        return None
    return enc.name


def two_model_figure(
    curves: Sequence[tuple[str, np.ndarray, str]],
    *,
    title: str,
    y_title: str,
    zero_line: bool = False,
    y_range: tuple[float, float] | None = None,
):
    """two_model_chart, by relative depth when the models' depths differ. Returns (figure, relative)."""
    depths = {len(v) for _, v, _ in curves}
    relative = len(depths) > 1
    return (
        two_model_chart(
            curves, title=title, y_title=y_title, relative=relative, zero_line=zero_line, y_range=y_range
        ),
        relative,
    )


def label(model: str) -> str:
    return model_label(model or DEFAULT_MODEL)


def pair_title(model: str, other: str) -> str:
    """"trained vs shuffled weights, seed 0" for twins of one model, else "<label> vs <label>"."""
    (b1, w1, s1), (b2, w2, s2) = split_model_key(model), split_model_key(other)
    if b1 == b2:
        return f"{weights_label(w1, s1)} vs {weights_label(w2, s2)}"
    return f"{label(model)} vs {label(other)}"
