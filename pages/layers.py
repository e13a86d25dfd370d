"""Layer by layer: how one word's vectors across sentences start identical and separate by sense.

Over 600 lines and still one concept: one page's script (its sections share the profile and widgets).

The model runs once per sentence set (large sets in chunks, with a progress bar); every statistic is
computed once per set into a LayerProfile (lib.stats.layer_profile). Moving the layer slider, the pooling choice
or the view only slices that profile.
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
from lib.errors import ContextLensError
from lib.inputs.corpus import CorpusError
from lib.inputs.presets import preset_by_id
from lib.inputs.upload import FORMAT_HELP, MAX_UPLOAD_MB, UploadError, parse_upload
from lib.models.encoder import split_model_key
from lib.models.facts import described, final_norm_note, layer_zero_holds, layer_zero_shared
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL
from lib.stats.baseline import ETHAYARAJH_2019_BERT_BASE, adjusted
from lib.stats.chance import layer_runs, position_note
from lib.stats.direction import cue_gaps, cue_phrase
from lib.stats.evidence import card_facts, evidence_card, signed
from lib.stats.layer_profile import best_layers, depth_and_pooling_phrase, vector_readouts
from lib.stats.pooling import POOLING_NAMES, Representation
from lib.stats.similarity import (
    layer_cosine_matrices,
    mean_pair_cosines,
    most_changed_pairs,
    nearest_neighbours,
    pair_values,
    sense_similarity,
)
from ui import cache, controls, link, session
from ui.analysis import analysis
from ui.widgets import chart, escape_md, layer_chart, page_intro, prose, sentence_table

SMALL_MULTIPLES_MAX = 80  # sentences drawn per panel in the all-layers view
PAIR_LINES_MAX = 30


def _analysis():
    """(sentence set aligned with the vectors, target vectors, model) or a clear message and stop.

    Large sets are encoded chunk by chunk through ui.cache, with a progress bar (see ui.analysis).
    """
    a = analysis(min_sentences=2)
    return a.set, a.vectors, a.model


# ------------------------------------------------------------------------------------- upload
def upload_section(current_target: str) -> None:
    with st.expander("Bring your own sentences: upload a CSV or TSV file", icon=":material/upload_file:"):
        prose(
            FORMAT_HELP
            + " Bad rows are listed and left out:"
        )
        st.code(
            "sense,sentence\nmoney,The bank approved the loan.\n"
            'river,"We sat on the bank, watching the boats."\nrely,You can [bank] on her.',
            language="text",
        )
        if "layers_upload_target" not in st.session_state:
            st.session_state["layers_upload_target"] = current_target
        c1, c2 = st.columns([3, 1])
        up = c1.file_uploader(
            "CSV or TSV file", type=["csv", "tsv", "tab", "txt"], key="layers_upload", max_upload_size=MAX_UPLOAD_MB
        )
        target = c2.text_input(
            "Target word",
            key="layers_upload_target",
            max_chars=100,
            help="The word to follow in every row; a row may mark another form in [brackets].",
        )
        if up is None:
            return
        try:
            res = cache.parsed_upload(
                f"set|{target}|{up.name}", up.getvalue(), lambda data: parse_upload(data, target, up.name)
            )
        except UploadError as err:
            st.error(escape_md(str(err)))
            return
        senses = res.senses
        st.success(
            f"{len(res)} usable sentence(s) in {escape_md(up.name)}"
            + (f", senses: {escape_md(', '.join(senses[:8]))}" if senses else ", no sense labels")
            + (f"; {res.left_out:,} row(s) left out (below)." if res.left_out else ".")
        )
        for note in res.notes:
            st.info(escape_md(note))
        if res.problems:  # the first MAX_LISTED of them (lib.inputs.upload), and how many more
            st.dataframe(
                pd.DataFrame(
                    {"line": [p.line for p in res.problems], "problem": [p.message for p in res.problems]}
                ),
                hide_index=True,
                width="stretch",
                height=min(300, 36 * len(res.problems) + 40),
            )
            if res.left_out > len(res.problems):
                st.caption(f"The first {len(res.problems)} of {res.left_out:,} rows left out are listed.")
        st.button(
            f"Use these {len(res)} sentences (on every page)",
            key="layers_upload_apply",
            type="primary",
            on_click=session.set_sentences,
            args=(res.to_text(), " ".join(target.split()), f"the {len(res)} sentences uploaded from {up.name}"),
        )


def controls_layers_compare(ss, tv, model, prof, senses, labelled, L) -> None:
    """Is the separation in the architecture or learned? The same sentences through a second model."""
    st.header("Trained or shuffled? The same sentences through two models")
    other = controls.compare_picker(
        "layers",
        model,
        off_note="Switch on to compare with a second model (default: the shuffled-weights control).",
    )
    if other is None:
        return
    tv2 = cache.target_vectors(other, ss.sentences, ss.target)
    senses2 = [senses[i] for i in tv2.kept]
    V2 = tv2.vectors
    K1 = L + 1
    cos2 = layer_cosine_matrices(V2)
    if labelled:
        s2 = sense_similarity(cos2, senses2)
        if s2.gap is None or prof.senses.gap is None:
            st.info("The second model's sentences have too few senses to compare.")
            return
        y1, y2, what = prof.senses.gap[:K1], s2.gap, "same-sense minus different-sense cosine"
    else:
        y1 = prof.pair_means[:K1]
        y2, what = mean_pair_cosines(cos2), "mean cosine over all pairs"
    n1, n2 = controls.label(model), controls.label(other)
    fig, relative = controls.two_model_figure(
        [(n1, y1, "solid"), (n2, y2, "dash")],
        title=f"“{ss.target}”: {what}, {controls.pair_title(model, other)}",
        y_title=what,
        zero_line=labelled,
    )
    chart(fig, key="layers_compare_chart", name_model=False)
    prose(
        f"Blue: **{escape_md(n1)}**; red, dashed: **{escape_md(n2)}**. The {what} goes from {y1[0]:+.3f} to "
        f"**{y1[-1]:+.3f}** at the last layer in the first model, and from {y2[0]:+.3f} to **{y2[-1]:+.3f}** in "
        "the second. "
        + (
            "What grows with depth only in the trained model came with training. A flat control line does not "
            "show what the architecture could do with other weights: the control may take in less context "
            "(table below)."
            if "trained" not in (split_model_key(model)[1], split_model_key(other)[1])
            or split_model_key(model)[1] != split_model_key(other)[1]
            else "Both are trained models: compare where each one separates the senses."
        )
        + (" The models have different depths, so the x axis is the relative depth." if relative else "")
    )
    controls.control_card(model, other, tv.encoding.sentences, ss.target)


def cue_preset_cues(ss) -> list[str | None] | None:
    """Each sentence's cue ("before"/"after") when the set comes from a preset that says so, else None."""
    preset = preset_by_id(ss.preset_id) if ss.preset_id else None
    if preset is None or not preset.cues:
        return None
    cues = preset.cue_of(ss.sentences)
    return cues if any(cues) else None


def cue_section(ss, model: str, cues: list[str | None]) -> None:
    """The same set through the encoder and the decoder, side by side: which half does each separate?"""
    st.header("Cue before, cue after: encoder and decoder side by side")
    models = [(DEFAULT_MODEL, "encoder"), (DECODER_MODEL, "decoder")]
    results = {}
    for name, family in models:
        loaded, err = cache.try_encoder(name) if name != model else (cache.encoder(model), None)
        if loaded is None:
            st.info(f"The {family} is not available here: " + escape_md(err or "it could not be loaded."))
            return
        tv_m = cache.target_vectors(loaded.name, ss.sentences, ss.target)
        try:
            results[family] = cue_gaps(
                tv_m.vectors, [ss.senses[i] or None for i in tv_m.kept], [cues[i] for i in tv_m.kept],
                openings=[sp.sentence[: sp.end] for sp in tv_m.spans],
            )
        except ContextLensError as err:
            st.info(escape_md(str(err)))
            return
    columns = st.columns(2)
    for col, (_, family) in zip(columns, models, strict=True):
        g = results[family]
        fig, _ = controls.two_model_figure(  # each model on its own scale: their cosine floors differ
            [(f"cue before “{ss.target}”", g.before, "solid"), ("cue only after", g.after, "dash"),
             ("shuffled senses (95th pct.)", np.maximum(g.before_null, g.after_null), "dot")],
            title=f"The {family}: same − different sense",
            y_title="same − different sense cosine",
            zero_line=True,
        )  # fmt: skip
        with col:
            chart(fig, key=f"layers_cue_{family}", share=0.5, name_model=False)
    prose(cue_phrase(results["encoder"], results["decoder"], escape_md(ss.target),
                     escape_md(described(cache.encoder(DECODER_MODEL)))))  # fmt: skip


# ------------------------------------------------------------------------------------- page
st.title("Layer by layer")
page_intro("layers")

_cues_first = cue_preset_cues(session.sentence_set())
session.models_per_set(2 if controls.compare_requested("layers") or _cues_first else 1)  # two models: half each
upload_section(session.sentence_set().target)

ss, tv, model = _analysis()
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
cues = cue_preset_cues(ss)
if cues:
    cue_section(ss, model, cues)

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
    help="The course's pooling choices; the choice applies to every view on this page.",
)
layer = c1.slider(
    "Layer",
    0,
    L,
    key="layers_layer",
    disabled=pooling != "layer",
    help=f"0 = the embedding layer ({enc.layer_zero}), {L} = the last layer.",
)
view = c3.radio(
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


pair_means = prof.pair_means  # (K + 2,)
mark = min(r, K)  # the chosen layer's place on the per-layer charts (a pooled vector's: after the K layers)
zrange = prof.colour_range(adjusted=adjust)  # one scale for every layer, so layers compare by colour

# ------------------------------------------------------------------------------------- 1. matrix
st.header(f"1. How similar is “{word}” across the {n} sentences?")
sims = prof.senses
if view == "one":
    chart(
        similarity_heatmap(
            shown(prof.cosines[r], r),
            labels,
            senses,
            title=f"Cosine similarity of “{html.escape(ss.target)}” at {rep}"
            + (" minus the baseline" if adjust else ""),
            zrange=zrange,
            adjusted=adjust,
        ),
        key="layers_matrix",
        download="context_lens_similarity",
    )
    sentence_table(ss.sentences, ss.senses)
else:
    order = sense_order(senses)
    sample = subsample(order, SMALL_MULTIPLES_MAX)
    panels = list(range(K)) + ([r] if choice.is_pooled else [])
    chart(
        layer_small_multiples(
            np.stack([shown(prof.cosines[i], i) for i in panels]),
            senses,
            [f"layer {names[i]}" if i < K else rep_names[i] for i in panels],
            selected=panels.index(r),
            zrange=zrange,
            adjusted=adjust,
            order=sample,
        ),
        key="layers_matrix",
    )
    if len(sample) < n:
        prose(f"Each panel draws {len(sample)} of the {n} sentences, evenly spread over the senses.", caption=True)
vals_r = pair_values(prof.cosines[r])
vals_0 = pair_values(prof.cosines[0])
if labelled and sims.same is not None and sims.different is not None:
    prose(
        f"Each cell: the cosine between “{word}” in two sentences, grouped by sense. Bright blocks on the "
        f"diagonal mean the senses have separated: at **{rep}** the same-sense minus different-sense gap is "
        f"**{signed(sims.gap[r])}** ({sims.same[r]:.2f} vs {sims.different[r]:.2f}; layer 0: {signed(sims.gap[0])})."
        + (f" Colours: minus the random-pair baseline ({base_mean[r]:.2f}, section 4)." if adjust else "")
        + (" " + final_norm_note(enc, r) if final_norm_note(enc, r) else "")
    )
else:
    prose(
        f"Each cell is the cosine between “{word}” in two sentences. At **{rep}** the pairs range from "
        f"{vals_r.min():.2f} to {vals_r.max():.2f} (mean {vals_r.mean():.2f}); at the embedding layer from "
        f"{vals_0.min():.2f} to {vals_0.max():.2f}. "
        "Label the sentences with senses (“river | …”) to compare meanings."
    )

# ------------------------------------------------------------------------------------- 2. static
st.header("2. Static vs contextual")
zero = "layer 0: + position" if enc.layer_zero.startswith("word piece + position") else "layer 0: as input"
reps = [("static word piece (no position)", None), (zero, 0), (f"layer {L}: + context", L)]
if r not in (0, L):
    reps.append((rep, r))
kinds = prof.static_vs_contextual([idx for _, idx in reps], by_sense=labelled)
chart(static_contextual_chart([x for x, _ in reps], kinds), key="layers_static")
static_min = float(pair_values(prof.static_cosines).min())
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
def sub(values):
    """A curve over the representations as drawn (minus the baseline in adjusted mode)."""
    return adjusted(values, base_mean) if adjust else values


pairs: list[PairLine] = []
if show_pairs or not labelled:
    # all pairs, or those whose cosine changed most (half same-sense, half different-sense when labelled)
    drawn = most_changed_pairs(prof.cosines, senses if labelled else None, first=0, last=L, limit=PAIR_LINES_MAX)
    for i, j in drawn:
        same_sense = (senses[i] == senses[j]) if labelled else None
        pairs.append(PairLine(f"S{i + 1} – S{j + 1}", sub(prof.cosines[:, i, j])[:K], same_sense))
pooled_point = None
if choice.is_pooled:
    pooled_point = PooledPoint(
        rep_names[r],
        same=float(sub(sims.same)[r]) if labelled and sims.same is not None else None,
        different=float(sub(sims.different)[r]) if labelled and sims.different is not None else None,
        all_pairs=None if labelled else float(sub(pair_means)[r]),
        baseline=None if adjust or prof.baseline is None else float(base_mean[r]),
    )
band = None
if prof.baseline is not None and not adjust:
    band = (prof.baseline.mean[:K], prof.baseline.low[:K], prof.baseline.high[:K])
fig = trajectory_chart(
    names,
    same=sub(sims.same)[:K] if labelled and sims.same is not None else None,
    different=sub(sims.different)[:K] if labelled and sims.different is not None else None,
    all_pairs=None if labelled else sub(pair_means)[:K],
    baseline=band,
    pairs=pairs,
    pooled=pooled_point,
    adjusted=adjust,
)
layer_chart(fig, key="layers_trajectories", at=mark, download="context_lens_trajectories")
if pairs and len(pairs) < n * (n - 1) // 2:
    st.caption(
        f"Thin lines: {len(pairs)} of the {n * (n - 1) // 2} pairs, those whose cosine changed most between "
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
        norms_by_layer(nm[:K], title=f"Length of the vector of “{ss.target}” per layer (mean over the sentences)"),
        key="layers_lengths",
        at=mark,
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
    ethayarajh_figure(
        names,
        self_similarity=None if prof.self_similarity is None else prof.self_similarity[:K],
        intra_sentence=prof.intra_sentence[:K],
        baseline=None if prof.baseline is None else prof.baseline.mean[:K],
        reference=ETHAYARAJH_2019_BERT_BASE if ref_on else None,
    ),
    key="layers_ethayarajh",
    at=mark,
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
    layer_chart(
        readout_chart(
            names,
            ro.accuracy[:K],
            ro.majority_baseline,
            best=int(np.argmax(ro.accuracy[:K])),
            pooled=(rep_names[r], float(ro.accuracy[r])) if choice.is_pooled else None,
            chance=(rc.shuffled_mean[:K], rc.shuffled_p95[:K]),
        ),
        key="layers_readout",
        at=mark,
    )
    best = int(np.argmax(ro.accuracy[:K]))
    ties = [i for i in range(K) if ro.accuracy[i] == ro.accuracy[best]]
    m = len(ro.evaluated)
    chance_at = rc.chance_layers(K)
    prose(
        f"Each of the {m} sentences gets the sense whose centroid, built from the other sentences, is nearest "
        f"(leave-one-out; Coenen et al. 2019 used a training corpus). Best: **{'layer 0' if best == 0 else f'layer {best}'}, "
        f"{ro.accuracy[best]:.0%}**"
        + (f" (layers {', '.join(str(i) for i in ties)} tie)" if len(ties) > 1 else "")
        + ". Grey: the chance band (labels shuffled)."
    )
    shown_layers = sorted({0, best, L} | ({r} if r < K else set()))
    st.table(
        pd.DataFrame(
            {
                "readout": [f"{rc.accuracy[i]:.0%}" for i in shown_layers],
                "shuffled labels (mean)": [f"{rc.shuffled_mean[i]:.0%}" for i in shown_layers],
                "shuffled, 95th percentile": [f"{rc.shuffled_p95[i]:.0%}" for i in shown_layers],
                "shuffles as low or lower": [f"{rc.at_or_below[i]:.0%}" for i in shown_layers],
                "above chance": ["no" if rc.within_chance[i] else "yes" for i in shown_layers],
            },
            index=[f"layer {i}" for i in shown_layers],
        )
    )
    prose(
        f"Always answering the commonest sense (“{escape_md(ro.majority_sense)}”): {ro.majority_baseline:.0%}; "
        f"{rc.n_permutations} shuffles, each sense keeping its size."
        + " " + position_note(rc, holds=layer_zero_holds(enc), shared=layer_zero_shared(enc)),
        caption=True,
    )
    if m < n:
        prose(f"{n - m} sentence(s) have a sense with only one sentence and are not scored.", caption=True)
    # two of the course's checks on this set: is deeper better, and [CLS] or the mean as a sentence vector?
    readouts = vector_readouts(prof)
    st.table(
        pd.DataFrame(
            {
                "best layer": [layer_runs(best_layers(acc)) for acc in readouts.values()],
                "read right there": [f"{np.nanmax(acc):.0%}" for acc in readouts.values()],
                f"at layer {L}": [f"{acc[L]:.0%}" for acc in readouts.values()],
            },
            index=list(readouts),
        )
    )
    prose(depth_and_pooling_phrase(readouts, len(ro.evaluated)))

# ---------------------------------------------------------------------------------- controls (is it real?)
if labelled:
    controls.probe_section(
        ss,
        tv,
        model,
        names,
        pooled=(pooling, rep_names[r], prof.vectors[:, r, :]) if choice.is_pooled else None,
    )
controls_layers_compare(ss, tv, model, prof, senses, labelled, L)

# ------------------------------------------------------------------------------------- 7. neighbours
st.header("7. Nearest neighbours")
pick_labels = {k: labels[k - 1] + (f"  · {ss.senses[k - 1]}" if ss.senses[k - 1] else "") for k in range(1, n + 1)}
pick = st.selectbox("Sentence", list(pick_labels), key="layers_sentence", format_func=pick_labels.get)
q = pick - 1
nb = nearest_neighbours(prof.vectors[:, r, :], q, k=min(5, n - 1))
table = pd.DataFrame(
    {
        "": [f"S{j + 1}" for j in nb.indices],
        "sentence": [ss.sentences[j] for j in nb.indices],
        "sense": [ss.senses[j] or "" for j in nb.indices],
        f"cosine at {rep}": nb.cosines,
        "cosine at layer 0": [prof.cosines[0][q, j] for j in nb.indices],
    }
)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in table.columns if "cosine" in c},
)
if labelled:
    agree = sum(senses[j] == senses[q] for j in nb.indices)
    prose(
        f"At {rep}, {agree} of the {len(nb.indices)} sentences closest to sentence {pick} "
        f"(“{escape_md(ss.senses[q])}”) share its sense."
    )

# ------------------------------------------------------------------------------------- 8. evidence card
st.header("8. Evidence card")


def _reference_split():
    try:
        return cache.split_counts(model, cache.reference_corpus().sentences)
    except CorpusError:  # the reference corpus is missing: the domain check says it cannot compare
        return None


def _card():
    facts = card_facts(
        prof,
        tv,
        r,
        model=session.model_display(model),
        chance=rc if ro is not None else None,
        split=cache.split_counts(model, tuple(ss.clean_sentences)),
        reference_split=_reference_split(),
        comparison_notes=(depth_and_pooling_phrase(readouts, len(ro.evaluated)),) if ro is not None else (),
        model_facts=enc,
    )
    return evidence_card(
        prof.vectors[:, 0, :],
        prof.vectors[:, r, :],
        ss.clean_sentences,
        senses,
        target=ss.target,
        first_name="layer 0",
        chosen_name=rep,
        cosines=(prof.cosines[0], prof.cosines[r]),
        facts=facts,
    )


card = cache.evidence((model, tuple(ss.sentences), tuple(senses), ss.target, r, rep), _card)
fields = card.fields()  # st.table reads Markdown: the set's words are escaped
st.table(pd.DataFrame({"on your sentences": [escape_md(t) for _, t in fields]}, index=[f for f, _ in fields]))
if card.rows:
    rows = card.rows
    marked = set(card.surprising_rows())
    chosen_col = f"cosine at {rep}"
    short_rep = {"last4": "last 4 (mean)", "all": "all (mean)"}.get(pooling, f"layer {layer}")
    st.dataframe(
        pd.DataFrame(
            {
                "": ["★" if k in marked else "" for k in range(len(rows))],
                "pair": [f"S{x.i + 1} – S{x.j + 1}" for x in rows],
                "senses": [f"{x.sense_a} / {x.sense_b}" if x.sense_a else "" for x in rows],
                "cosine at layer 0": [x.cosine_first for x in rows],
                chosen_col: [x.cosine_chosen for x in rows],
                "sentence A": [x.sentence_a for x in rows],
                "sentence B": [x.sentence_b for x in rows],
            }
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "cosine at layer 0": st.column_config.NumberColumn(
                "layer 0", help="cosine at the embedding layer", format="%.3f", width="small"
            ),
            chosen_col: st.column_config.NumberColumn(
                short_rep, help=f"cosine at {rep}", format="%.3f", width="small"
            ),
            "sentence A": st.column_config.TextColumn(width="large"),
            "sentence B": st.column_config.TextColumn(width="large"),
        },
    )
    d1, d2 = st.columns(2)
    stem = f"evidence_{''.join(ch for ch in ss.target if ch.isalnum()) or 'word'}"
    d1.download_button("Download CSV", card.to_csv(), f"{stem}.csv", "text/csv", key="layers_card_csv")
    d2.download_button(
        "Download Markdown", card.to_markdown(), f"{stem}.md", "text/markdown", key="layers_card_md"
    )
    prose(f"Each pair's cosine at layer 0 and at {rep}; ★ the pairs of a surprising result.", caption=True)

link.sync_params(PARAMS, {"layers_adjust": adjust})  # adjust may have been switched off (no baseline)
