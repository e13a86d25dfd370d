"""Layer by layer: how one word's vectors across sentences start identical and separate by sense.

The model runs once per sentence set (large sets in chunks, with a progress bar); every statistic is
computed once per set into a LayerProfile (lib.stats.layer_profile). Moving the layer slider, the pooling choice
or the view only slices that profile; what the page reads from it for one view (a range, the pairs drawn, the
neighbours) is computed once per view (ui.cache.computed), and each chart is built once per view and shared
(ui.cache.shared_figure), so a rerun that changes nothing finds everything made. The upload, the cue comparison
and the evidence card are expanders that run only while open (ui.upload, ui.cues, ui.evidence).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from lib.charts.geometry import norms_by_layer
from lib.charts.layers import (
    PairLine,
    PooledPoint,
    layer_names,
    layer_small_multiples,
    readout_chart,
    sense_order,
    similarity_heatmap,
    static_contextual_chart,
    subsample,
    trajectory_chart,
)
from lib.charts.layers import ethayarajh_chart as ethayarajh_figure
from lib.models.facts import final_norm_note, layer_zero_holds, layer_zero_shared
from lib.stats.baseline import ETHAYARAJH_2019_BERT_BASE, adjusted
from lib.stats.chance import layer_runs, position_note
from lib.stats.evidence import signed
from lib.stats.layer_profile import best_layers, depth_and_pooling_phrase, vector_readouts
from lib.stats.pooling import POOLING_NAMES, Representation
from lib.stats.similarity import most_changed_pairs, nearest_neighbours, pair_values
from ui import cache, controls, cues, link, session
from ui.analysis import analysis
from ui.evidence import evidence_section
from ui.upload import upload_section
from ui.widgets import chart, escape_md, layer_chart, page_intro, prose, sentence_table

SMALL_MULTIPLES_MAX = 80  # sentences drawn per panel in the all-layers view
PAIR_LINES_MAX = 30

# ------------------------------------------------------------------------------------- page
st.title("Layer by layer")
page_intro("layers")

two_models = controls.compare_requested("layers") or (cues.preset_cues(session.sentence_set()) and cues.is_open("layers"))
session.models_per_set(2 if two_models else 1)  # two models: half the budget each

a = analysis(min_sentences=2)  # large sets are encoded chunk by chunk, with a progress bar (ui.analysis)
ss, tv, model = a.set, a.vectors, a.model
enc = cache.encoder(model)
L = enc.num_layers
K = L + 1
n = len(ss)
if session.origin():
    prose(f"Using {escape_md(session.origin())}.", caption=True)
senses = [s or None for s in ss.senses]
labelled = ss.has_senses
prof = cache.layer_profile(model, tuple(ss.sentences), tuple(senses), ss.target, tv)
word = escape_md(ss.target or "the target")
names = layer_names(L)
labels = ss.labels  # a computed property: read once

# ------------------------------------------------------------------------------------- widgets
POOLINGS = list(POOLING_NAMES)
VIEWS = ["one", "all"]
# every parameter of the page, declared once: its initial value, its bounds and its place in the URL follow
PARAMS = [
    link.Param("layers_layer", "int", L, lo=0, hi=L),
    link.Param("layers_pooling", "choice", "layer", choices=tuple(POOLINGS)),
    link.Param("layers_view", "choice", "one", choices=tuple(VIEWS)),
    link.Param("layers_adjust", "bool", False),
    link.Param("layers_pairs", "bool", False),
    link.Param("layers_reference", "bool", False),
    link.Param("layers_norms", "bool", False),
    link.Param("layers_sentence", "int", 1, lo=1, hi=n),
]
link.init_params(PARAMS)
c1, c2, c3, c4 = st.columns([3, 2.5, 2, 2.5])
pooling = c2.radio(
    "Vector of the word",
    POOLINGS,
    key="layers_pooling",
    format_func={"layer": "one layer", "last4": "mean of last 4 layers", "all": "mean of all layers"}.get,
    help="The course's pooling choices: the similarity matrix shows the chosen vector; the charts over the layers "
    "show every layer and both means, the chosen one marked.",
)
layer = c1.slider(
    "Layer",
    0,
    L,
    key="layers_layer",
    disabled=pooling != "layer",
    help=f"0 = the embedding layer ({enc.layer_zero}), {L} = the last layer.",
)
matrix_view = c3.radio(
    "Similarity view",
    VIEWS,
    key="layers_view",
    format_func={"one": "chosen layer", "all": "all layers at once"}.get,
)
adjust = c4.toggle(
    "Minus baseline",
    key="layers_adjust",
    help="Show cosine minus the mean cosine of random pairs of other words at the same layer (anisotropy).",
)
choice = Representation(pooling, layer)
r = prof.index(choice)
rep = choice.label
rep_names = names + ["mean of last 4", "mean of all"]
base_mean = prof.baseline_mean
if adjust and prof.baseline is None:
    st.info("The sentences have too few other words for a baseline; showing raw cosine.")
    adjust = False


def shown(cos: np.ndarray, idx: int) -> np.ndarray:
    """A cosine matrix as displayed (minus the baseline in adjusted mode)."""
    return adjusted(cos, base_mean[idx]) if adjust else cos


def sub(values):
    """A curve over the representations as drawn (minus the baseline in adjusted mode)."""
    return adjusted(values, base_mean) if adjust else values


pair_means = a.computed("layers_pair_means", compute=lambda: prof.pair_means)  # (K + 2,)
zrange = a.computed("layers_colour_range", adjust, compute=lambda: prof.colour_range(adjusted=adjust))  # one scale for every layer

# ------------------------------------------------------------------------------------- 1. matrix
st.header(f"1. How similar is “{word}” across the {n} sentences?")
sims = prof.senses
if matrix_view == "one":
    chart(
        a.figure(
            "layers_matrix",
            r,
            adjust,
            build=lambda: similarity_heatmap(
                shown(prof.cosines[r], r),
                labels,
                senses,
                title=f"Cosine similarity of “{html.escape(ss.target)}” at {rep}"
                + (" minus the baseline" if adjust else ""),
                zrange=zrange,
                adjusted=adjust,
            ),
        ),
        key="layers_matrix",
        download="context_lens_similarity",
    )
    sentence_table(ss.sentences, ss.senses)
else:
    sample = a.computed("layers_sample", compute=lambda: subsample(sense_order(senses), SMALL_MULTIPLES_MAX))
    panels = list(range(K)) + ([r] if choice.is_pooled else [])
    chart(
        a.figure(
            "layers_small_multiples",
            r,
            adjust,
            build=lambda: layer_small_multiples(
                np.stack([shown(prof.cosines[i], i) for i in panels]),
                senses,
                [f"layer {names[i]}" if i < K else rep_names[i] for i in panels],
                selected=panels.index(r),
                zrange=zrange,
                adjusted=adjust,
                order=sample,
            ),
        ),
        key="layers_matrix",
    )
    if len(sample) < n:
        prose(f"Each panel draws {len(sample)} of the {n} sentences, evenly spread over the senses.", caption=True)
if labelled and sims.same is not None and sims.different is not None:
    prose(
        f"Each cell: the cosine between “{word}” in two sentences, grouped by sense. Bright blocks on the "
        f"diagonal mean the senses have separated: at **{rep}** the same-sense minus different-sense gap is "
        f"**{signed(sims.gap[r])}** ({sims.same[r]:.2f} vs {sims.different[r]:.2f}; layer 0: {signed(sims.gap[0])})."
        + (f" Colours: minus the random-pair baseline ({base_mean[r]:.2f}, section 4)." if adjust else "")
        + (" " + final_norm_note(enc, r) if final_norm_note(enc, r) else "")
    )
else:
    vals_r, vals_0 = a.computed("layers_pair_values", r, compute=lambda: (pair_values(prof.cosines[r]), pair_values(prof.cosines[0])))
    prose(
        f"Each cell is the cosine between “{word}” in two sentences. At **{rep}** the pairs range from "
        f"{vals_r.min():.2f} to {vals_r.max():.2f} (mean {vals_r.mean():.2f}); at the embedding layer from "
        f"{vals_0.min():.2f} to {vals_0.max():.2f}. "
        "Label the sentences with senses (“river | …”) to compare meanings."
    )

cue_of = cues.preset_cues(ss)
if cue_of:  # a preset whose sentences name the cue before or only after the word: the encoder beside the decoder
    cues.cue_section("layers", ss, model, cue_of)

# ------------------------------------------------------------------------------------- 2. static
st.header("2. Static vs contextual")
zero = "layer 0: + position" if enc.layer_zero.startswith("word piece + position") else "layer 0: as input"
# the same three whatever vector is chosen above: the chart stays as drawn while the slider moves
reps = [("static word piece (no position)", None), (zero, 0), (f"layer {L}: + context", L)]
chart(
    a.figure(
        "layers_static",
        tuple(reps),
        build=lambda: static_contextual_chart(
            [x for x, _ in reps], prof.static_vs_contextual([idx for _, idx in reps], by_sense=labelled)
        ),
    ),
    key="layers_static",
)
static_min = a.computed("layers_static_min", compute=lambda: float(pair_values(prof.static_cosines).min()))
identical = static_min > 0.9999
prose(
    (
        f"A static embedding gives “{word}” **one** vector in all {n} sentences (every pair: cosine 1.00). "
        if identical
        else f"The input embeddings differ here (lowest pair {static_min:.2f}): the forms are not all one word piece. "
    )
    + f"Layer 0 ({enc.layer_zero}) has no context yet (mean pair **{pair_means[0]:.2f}**); after {L} layers "
    f"of attention and feed-forward blocks, **{pair_means[L]:.2f}**: the vector now depends on the context."
)

# ------------------------------------------------------------------------------------- 3. trajectories
st.header("3. Same sense vs different sense, layer by layer")
show_pairs = st.toggle("Show individual pairs", key="layers_pairs", help="One thin line per sentence pair.")
# all pairs, or those whose cosine changed most (half same-sense, half different-sense when labelled)
drawn = (
    a.computed("layers_pairs", compute=lambda: [tuple(int(x) for x in p) for p in most_changed_pairs(
        prof.cosines, senses if labelled else None, first=0, last=L, limit=PAIR_LINES_MAX
    )])  # fmt: skip
    if show_pairs or not labelled
    else []
)


def trajectories():
    pairs = [
        PairLine(f"S{i + 1} – S{j + 1}", sub(prof.cosines[:, i, j])[:K], (senses[i] == senses[j]) if labelled else None)
        for i, j in drawn
    ]
    pooled_points = [  # both means, always: a change of pooling then only moves the mark (ui.widgets.layer_chart)
        PooledPoint(
            rep_names[i],
            same=float(sub(sims.same)[i]) if labelled and sims.same is not None else None,
            different=float(sub(sims.different)[i]) if labelled and sims.different is not None else None,
            all_pairs=None if labelled else float(sub(pair_means)[i]),
            baseline=None if adjust or prof.baseline is None else float(base_mean[i]),
        )
        for i in (K, K + 1)
    ]
    band = None
    if prof.baseline is not None and not adjust:
        band = (prof.baseline.mean[:K], prof.baseline.low[:K], prof.baseline.high[:K])
    return trajectory_chart(
        names,
        same=sub(sims.same)[:K] if labelled and sims.same is not None else None,
        different=sub(sims.different)[:K] if labelled and sims.different is not None else None,
        all_pairs=None if labelled else sub(pair_means)[:K],
        baseline=band,
        pairs=pairs,
        pooled=pooled_points,
        adjusted=adjust,
    )


layer_chart(
    a.figure("layers_trajectories", bool(drawn), adjust, build=trajectories),
    key="layers_trajectories",
    at=r,  # the chosen vector's place (a pooled one's: after the K layers, where drawn)
    download="context_lens_trajectories",
)
if drawn and len(drawn) < n * (n - 1) // 2:
    st.caption(
        f"Thin lines: {len(drawn)} of the {n * (n - 1) // 2} pairs, those whose cosine changed most between "
        f"layer 0 and layer {L}" + (" (half same-sense, half different-sense)." if labelled else ".")
    )
if labelled and sims.gap is not None:
    g = sims.gap[:K]
    top = int(np.argmax(g))
    prose(
        f"Green: same-sense pairs ({sims.n_same_pairs}); red: different-sense pairs ({sims.n_different_pairs}). "
        + (
            f"The gap between them is largest at layer 0 ({signed(g[0])}); {signed(g[L])} at layer {L}."
            if top == 0
            else f"The gap between them is largest at **layer {top} ({signed(g[top])})**; layer 0: {signed(g[0])}"
            + (f", layer {L}: {signed(g[L])}." if top != L else ".")
        )
    )
else:
    prose(
        f"Without sense labels the page shows the mean over all pairs (blue, {pair_means[0]:.2f} at layer 0, "
        f"{pair_means[L]:.2f} at layer {L}) and the pairs themselves."
    )
prose(
    "Diamonds: the same for the mean of the last 4 layers and of all layers. Black line: the chosen vector.",
    caption=True,
)

# ------------------------------------------------------------------------------------- 4. baseline
st.header("4. Is a high cosine high? Compare with random words")
if prof.baseline is not None:
    b = prof.baseline
    prose(
        f"Grey band: the cosine of **random pairs of other words** in these sentences (10th–90th percentile): "
        f"{b.mean[0]:.2f} at layer 0, **{b.mean[L]:.2f} at layer {L}**. Where vectors crowd into a cone "
        f"(anisotropy) unrelated words score high (BERT-base: {ETHAYARAJH_2019_BERT_BASE.anisotropy[-2]:.2f} at "
        "layer 11), so read a cosine against the band: switch on *Minus baseline* above."
    )
    prose(f"{b.n_pairs:,} pairs sampled as Ethayarajh (2019) does: each from two different sentences.", caption=True)
else:
    st.info("The sentences have too few other words to draw a baseline; add longer sentences.")
if st.toggle("Show the length of the word's vector per layer", key="layers_norms", help="What cosine leaves out."):
    nm = prof.norms
    layer_chart(
        a.figure("layers_lengths", build=lambda: norms_by_layer(
            nm[:K], title=f"Length of the vector of “{ss.target}” per layer (mean over the sentences)"
        )),  # fmt: skip
        key="layers_lengths",
        at=r,
        download="context_lens_lengths",
    )
    prose(
        f"The mean length of the vector of “{word}”: {nm[0]:.1f} at layer 0, **{nm[L]:.1f} at layer {L}**"
        + (f", {nm[r]:.1f} for the {rep}." if choice.is_pooled else ".")
        + " Cosine divides by the lengths, so a longer vector is no nearer another: only the direction counts."
    )
try:
    st.page_link(
        "pages/anisotropy.py", label="More on anisotropy and how to correct it", icon=":material/explore:"
    )
except (StreamlitAPIException, KeyError):
    prose("The Anisotropy page explains the cone and how to correct it.", caption=True)

# ------------------------------------------------------------------------------------- 5. Ethayarajh
st.header("5. Self-similarity and intra-sentence similarity")
ref_on = st.toggle(
    "Overlay the published BERT-base curves (Ethayarajh 2019)",
    key="layers_reference",
    help="BERT-base has 12 layers; its curves use the top axis, stretched to the same depth.",
)
layer_chart(
    a.figure(
        "layers_ethayarajh",
        ref_on,
        build=lambda: ethayarajh_figure(
            names,
            self_similarity=None if prof.self_similarity is None else prof.self_similarity[:K],
            intra_sentence=prof.intra_sentence[:K],
            baseline=None if prof.baseline is None else prof.baseline.mean[:K],
            reference=ETHAYARAJH_2019_BERT_BASE if ref_on else None,
        ),
    ),
    key="layers_ethayarajh",
    at=r,
)
selfsim = prof.self_similarity
if selfsim is not None:
    adj_last = selfsim[L] - base_mean[L]
    prose(
        f"**Self-similarity**: the mean cosine of “{word}” across the sentences ({selfsim[0]:.2f} at layer 0, "
        f"**{selfsim[L]:.2f} at layer {L}**, {adj_last:+.2f} above random words). **Intra-sentence "
        f"similarity**: how close each word is to its sentence's mean vector ({prof.intra_sentence[0]:.2f} → "
        f"{prof.intra_sentence[L]:.2f})."
    )
ref = ETHAYARAJH_2019_BERT_BASE
st.caption(
    f"Reference: Ethayarajh (2019), [EMNLP]({ref.citation.split()[-1]}), BERT-base. Only the curves' shapes compare "
    f"with this {L}-layer model."
)

# ------------------------------------------------------------------------------------- 6. readout
st.header("6. Which layer reads the sense best?")
ro = prof.readout
if ro is None:
    st.info(
        "This needs sense labels: at least two senses with two or more sentences each. Label the lines as "
        "“sense | sentence” in the sidebar, or pick a preset."
    )
else:
    rc = cache.readout_chance(model, tuple(ss.sentences), tuple(senses), ss.target, "layers", prof.vectors)
    best = int(np.argmax(ro.accuracy[:K]))
    layer_chart(
        a.figure(
            "layers_readout",
            build=lambda: readout_chart(
                names,
                ro.accuracy[:K],
                ro.majority_baseline,
                best=best,
                pooled=[(rep_names[i], float(ro.accuracy[i])) for i in (K, K + 1)],
                chance=(rc.shuffled_mean[:K], rc.shuffled_p95[:K]),
            ),
        ),
        key="layers_readout",
        at=r,
    )
    ties = [i for i in range(K) if ro.accuracy[i] == ro.accuracy[best]]
    m = len(ro.evaluated)
    prose(
        f"Each of the {m} sentences gets the sense whose centroid, built from the other sentences, is nearest "
        f"(leave-one-out; Coenen et al. 2019 used a training corpus). Best: **{'layer 0' if best == 0 else f'layer {best}'}, "
        f"{ro.accuracy[best]:.0%}**"
        + (f" (layers {', '.join(str(i) for i in ties)} tie)" if len(ties) > 1 else "")
        + ". Grey: the chance band (labels shuffled)."
    )
    shown_layers = tuple(sorted({0, best, L} | ({r} if r < K else set())))
    st.table(
        cache.frame(
            "layers_chance",
            (*a.key, shown_layers),
            lambda: pd.DataFrame(
                {
                    "readout": [f"{rc.accuracy[i]:.0%}" for i in shown_layers],
                    "shuffled labels (mean)": [f"{rc.shuffled_mean[i]:.0%}" for i in shown_layers],
                    "shuffled, 95th percentile": [f"{rc.shuffled_p95[i]:.0%}" for i in shown_layers],
                    "shuffles as low or lower": [f"{rc.at_or_below[i]:.0%}" for i in shown_layers],
                    "above chance": ["no" if rc.within_chance[i] else "yes" for i in shown_layers],
                },
                index=[f"layer {i}" for i in shown_layers],
            ),
        ),
        hide_index=False,
    )
    prose(
        f"Always answering the commonest sense (“{escape_md(ro.majority_sense)}”): {ro.majority_baseline:.0%}; "
        f"{rc.n_permutations} shuffles, each sense keeping its size."
        + " " + position_note(rc, holds=layer_zero_holds(enc), shared=layer_zero_shared(enc)),
        caption=True,
    )
    if m < n:
        k = n - m
        prose(f"{k} sentence{'s have' if k != 1 else ' has'} a sense with only one sentence and "
              f"{'are' if k != 1 else 'is'} not scored.", caption=True)
    # two of the course's checks on this set: is deeper better, and [CLS] or the mean as a sentence vector?
    readouts = a.computed("layers_vector_readouts", compute=lambda: vector_readouts(prof))
    st.table(
        cache.frame(
            "layers_vector_readouts",
            a.key,
            lambda: pd.DataFrame(
                {
                    "best layer": [layer_runs(best_layers(acc)) for acc in readouts.values()],
                    "read right there": [f"{np.nanmax(acc):.0%}" for acc in readouts.values()],
                    f"at layer {L}": [f"{acc[L]:.0%}" for acc in readouts.values()],
                },
                index=list(readouts),
            ),
        ),
        hide_index=False,
    )
    depth_phrase = a.computed(
        "layers_depth_phrase", compute=lambda: depth_and_pooling_phrase(readouts, len(ro.evaluated))
    )
    prose(depth_phrase)

# ---------------------------------------------------------------------------------- controls (is it real?)
if labelled:
    controls.probe_section(
        ss,
        tv,
        model,
        names,
        pooled=(pooling, rep_names[r], prof.vectors[:, r, :]) if choice.is_pooled else None,
    )
controls.layers_compare_section(ss, tv, model, prof, names_key=a.key)

# ------------------------------------------------------------------------------------- 7. neighbours
st.header("7. Nearest neighbours")
pick_labels = {k: labels[k - 1] + (f"  · {ss.senses[k - 1]}" if ss.senses[k - 1] else "") for k in range(1, n + 1)}
pick = st.selectbox("Sentence", list(pick_labels), key="layers_sentence", format_func=pick_labels.get)
q = pick - 1
nb = a.computed("layers_neighbours", r, q, compute=lambda: nearest_neighbours(prof.vectors[:, r, :], q, k=min(5, n - 1)))
st.dataframe(
    cache.frame(
        "layers_neighbours",
        (*a.key, r, q, rep),
        lambda: pd.DataFrame(
            {
                "": [f"S{j + 1}" for j in nb.indices],
                "sentence": [ss.sentences[j] for j in nb.indices],
                "sense": [ss.senses[j] or "" for j in nb.indices],
                f"cosine at {rep}": nb.cosines,
                "cosine at layer 0": [prof.cosines[0][q, j] for j in nb.indices],
            }
        ),
    ),
    hide_index=True,
    width="stretch",
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in (f"cosine at {rep}", "cosine at layer 0")},
)
if labelled:
    agree = sum(senses[j] == senses[q] for j in nb.indices)
    prose(
        f"At {rep}, {agree} of the {len(nb.indices)} sentences closest to sentence {pick} "
        f"(“{escape_md(ss.senses[q])}”) share its sense."
    )

# ------------------------------------------------------------------------------------- 8. evidence card
st.header("8. Evidence card")
evidence_section(
    "layers",
    a.key,
    ss,
    tv,
    prof,
    r,
    rep,
    {"last4": "last 4 (mean)", "all": "all (mean)"}.get(pooling, f"layer {layer}"),
    model=model,
    chance=rc if ro is not None else None,
    comparison_notes=(depth_phrase,) if ro is not None else (),
)
st.divider()
upload_section("layers", ss.target)

link.sync_params(PARAMS, {"layers_adjust": adjust})  # adjust may have been switched off (no baseline)
