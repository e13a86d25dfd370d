"""Anisotropy: random words already look alike to raw cosine; z-scoring, whitening or removing the top
principal components fix that (course §4.2, §5.1, §5.2).

The reference corpus runs through the model once per (model, corpus) and only its statistics are kept
(a local cache below); moving the layer, treatment or k slider only redoes small matrix products.
"""

import functools
import math

import numpy as np
import streamlit as st

from lib.charts.geometry import (
    anisotropy_by_layer,
    before_after_range,
    dimension_profile,
    norms_by_layer,
    similarity_before_after,
)
from lib.inputs.corpus import (
    TREATMENTS,
    UNTREATED,
    CorpusError,
    CorpusStats,
    bounded_corpus,
    corpus_id,
    parse_corpus_file,
    without_massive,
)
from lib.inputs.upload import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, UploadError
from lib.models.encoder import DEFAULT_MODEL, split_model_key, weights_label
from lib.models.facts import described
from lib.stats.baseline import ETHAYARAJH_2019_BERT_BASE, compare_anisotropy
from lib.stats.geometry import constant_dimensions, default_top_k, rogue_dimensions, top_variance_share
from lib.stats.readout import leave_one_out_readout
from lib.stats.similarity import cosine_matrix, mean_offdiagonal, pair_ranking_auc, sense_similarity
from ui import cache, controls, link, session
from ui.analysis import analysis
from ui.widgets import (
    chart,
    download_figure,
    escape_md,
    layer_chart,
    matrix_pair,
    page_intro,
    prose,
)

CORPUS_CHOICES = {
    "builtin": "Built-in reference corpus",
    "set": "Your sentence set",
    "upload": "Upload a text file",
}


def fmt(x: float, digits: int = 2) -> str:
    """A number for the page text: never 'nan' or 'inf'."""
    return f"{x:.{digits}f}" if math.isfinite(x) else "–"


# How much higher a control's raw curve must peak to be "far more anisotropic": twice as high, and at least
# this much higher in cosine.
FAR_RATIO, FAR_DIFFERENCE = 2.0, 0.1


def twin_sentence(model_name: str, other_name: str, curve: np.ndarray, other_curve: np.ndarray) -> str:
    """Section 1's sentence on the trained model vs its control in section 4 ("" for any other pair)."""
    (b1, w1, s1), (b2, w2, s2) = split_model_key(model_name), split_model_key(other_name)
    if b1 != b2 or w1 == w2 or "trained" not in (w1, w2):
        return ""
    trained, control = (curve, other_curve) if w1 == "trained" else (other_curve, curve)
    weights, seed = (w2, s2) if w1 == "trained" else (w1, s1)
    pt, pr = float(np.max(trained)), float(np.max(control))
    kt, kr = int(np.argmax(trained)), int(np.argmax(control))
    head = (
        f"**Trained or control (section 4).** With {weights_label(weights, seed)} the same architecture's raw "
        f"curve peaks at {fmt(pr)} (layer {kr}); with the trained weights at {fmt(pt)} (layer {kt}). "
    )
    if pr >= FAR_RATIO * pt and pr - pt >= FAR_DIFFERENCE:
        times = f"{pr / pt:.1f} times as high" if pt > 0 else "far higher"
        return head + (
            f"The control is **far more anisotropic** ({times}): a cone needs no training, and the trained "
            "model's is the smaller one. What builds the control's cone is not measured here."
        )
    if pt >= FAR_RATIO * pr and pt - pr >= FAR_DIFFERENCE:
        return head + "Here the cone is mostly learned: the control's vectors point in far more different directions."
    return head + "The two cones are of a similar order here."


# ------------------------------------------------------------------------------------------- intro
st.title("Anisotropy: why raw cosine misleads")
page_intro("anisotropy", bert_peak=f"{max(ETHAYARAJH_2019_BERT_BASE.anisotropy):.2f}")

model = session.model_name()
enc = cache.encoder(model)
L, d = enc.num_layers, enc.hidden_size
default_k = default_top_k(d)

# ------------------------------------------------------------------------------------------- widgets
# every parameter of the page, declared once: its initial value, its bounds and its place in the URL follow
PARAMS = [
    link.Param("aniso_corpus", "choice", "builtin", choices=tuple(CORPUS_CHOICES)),
    link.Param("aniso_layer", "int", L // 2, lo=0, hi=L),
    link.Param("aniso_treatment", "choice", "zscore", choices=tuple(t for t in TREATMENTS if t != UNTREATED)),
    link.Param("aniso_k", "int", default_k, lo=0, hi=10),
    link.Param("aniso_bert", "bool", True),
]
link.init_params(PARAMS)


c_corpus, c_layer = st.columns([2, 3])
c_corpus.radio(
    "Reference corpus",
    options=list(CORPUS_CHOICES),
    format_func=CORPUS_CHOICES.get,
    key="aniso_corpus",
    horizontal=True,
    help="Whose word pieces give the statistics (mean, σ, covariance) and the random token pairs.",
)
c_layer.slider("Layer", 0, L, key="aniso_layer", help=f"0 = the embedding layer, {L} = the last layer.")
c_treat, c_k, c_bert = st.columns([2, 2, 1])
c_treat.selectbox(
    "Fix to apply to your word (section 3)",
    options=[t for t in TREATMENTS if t != UNTREATED],
    format_func=TREATMENTS.get,
    key="aniso_treatment",
)
c_k.slider(
    "k: principal components to remove",
    0,
    10,
    key="aniso_k",
    help=f"Mu & Viswanath (2018) suggest about d/100; here d = {d}, so {default_k}. 0 only centres the vectors.",
)
c_bert.toggle("Show BERT-base", key="aniso_bert", help="Ethayarajh (2019)'s numbers for raw BERT-base.")
corpus_choice = st.session_state.aniso_corpus
session.models_per_set(2 if controls.compare_requested("aniso") else 1)  # a comparison: half the set budget each
layer = st.session_state.aniso_layer
treatment = st.session_state.aniso_treatment
k = st.session_state.aniso_k
show_bert = st.session_state.aniso_bert
link.sync_params(PARAMS)

# ------------------------------------------------------------------------------------------- corpus
stats: CorpusStats | None = None
stats_key = ""
corpus_sentences: tuple[str, ...] = ()
use_set_stats = False
corpus_label = CORPUS_CHOICES["builtin"]
if corpus_choice == "set":
    ss0 = session.sentence_set()
    clean = cache.clean_sentences(ss0.sentences, ss0.target)
    if not clean:
        st.warning("Your sentence set has no usable sentences yet, so the built-in corpus is used instead.")
    else:
        try:
            stats_key = "set-" + corpus_id(clean)
            stats = cache.set_stats(model, stats_key, clean)
            corpus_sentences, use_set_stats = tuple(clean), True
            corpus_label = f"your {len(clean)} sentence{'s' if len(clean) != 1 else ''}"
        except CorpusError as err:
            st.warning(escape_md(str(err)) + " The built-in corpus is used instead.")
elif corpus_choice == "upload":
    upload = st.file_uploader(
        "A plain-text file (.txt), one sentence per line or ordinary paragraphs",
        type=["txt"],
        key="aniso_upload",
        max_upload_size=MAX_UPLOAD_MB,
        help="Lines starting with # are ignored. Up to 1,000 sentences are used.",
    )
    if upload is None:
        st.info("Choose a .txt file to use as the reference corpus. Until then the built-in corpus is used.")
    elif upload.size > MAX_UPLOAD_BYTES:
        st.error(
            f"The file is {upload.size / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB. "
            "Upload a shorter text. The built-in corpus is used meanwhile."
        )
    else:
        try:
            parsed, encoding_note = cache.parsed_upload("corpus", upload.getvalue(), parse_corpus_file)
            for note in (encoding_note, *parsed.notes) if encoding_note else parsed.notes:
                st.info(escape_md(note))
            up_sentences, stats_key, bound_note = bounded_corpus(enc, parsed.sentences, "upload-" + parsed.corpus_id)
            if bound_note:
                st.info(escape_md(bound_note))
            # what the budget cuts is said before the model's pass over the rest (a 2 MB file: seconds)
            cut_note = cache.corpus_cut(model, stats_key, up_sentences).message
            if cut_note:
                st.info(escape_md(cut_note))
            stats = cache.corpus_stats(model, stats_key, up_sentences)
            for note in stats.notes:
                if note != cut_note:
                    st.info(escape_md(note))
            corpus_sentences = tuple(parsed.sentences)
            corpus_label = f"the uploaded file ({len(up_sentences)} sentences)"
        except (CorpusError, UploadError) as err:
            st.error(escape_md(str(err)) + " The built-in corpus is used meanwhile.")
if stats is None:
    try:
        builtin = cache.reference_corpus()
    except CorpusError as err:
        st.error(escape_md(str(err)))
        st.stop()
    used, stats_key, bound_note = bounded_corpus(enc, builtin.sentences, "builtin-" + builtin.corpus_id)
    if bound_note:
        st.info(escape_md(bound_note))
    stats = cache.corpus_stats(model, stats_key, used)
    corpus_sentences = tuple(builtin.sentences)
    corpus_label = (
        f"the built-in reference corpus ({len(builtin)} sentences on everyday topics)"
        if len(used) == len(builtin)
        else f"the first {len(used)} sentences of the built-in reference corpus"
    )

curves = cache.anisotropy_curves(model, stats_key, k, stats)
names = {t: (f"top {k} components removed" if t == "topk" else TREATMENTS[t]) for t in TREATMENTS}
m = len(stats.sample_tokens)
is_default = model == DEFAULT_MODEL
corpus_key = (model, stats_key)  # what the corpus's numbers are made from: a rerun finds what was made from them

# ------------------------------------------------------------------------------------------- 1. curves
st.header("1. How alike are two random words?")
ref = ETHAYARAJH_2019_BERT_BASE.anisotropy if show_bert else None
layer_chart(
    cache.shared_figure(
        "aniso_curves",
        (*corpus_key, k, show_bert),
        lambda: anisotropy_by_layer(curves, names, reference=ref, title="Mean cosine of random word-piece pairs"),
    ),
    key="aniso_curves",
    at=layer,
    download="context_lens_anisotropy",
)
raw, z, w, t = (float(curves[x][layer]) for x in (UNTREATED, "zscore", "whiten", "topk"))
wm = without_massive(stats, layer)  # the same numbers without the word pieces that carry massive values
prose(
    f"At **layer {layer}**, two random word pieces from {escape_md(corpus_label)} (the *corpus anisotropy*) have "
    f"a mean cosine of **{fmt(raw)}** raw"
    + (f" ({fmt(wm.cosine_without)} without the {wm.n} with massive values)"
       if wm is not None and fmt(wm.cosine_without) != fmt(raw) else "")  # fmt: skip
    + f", **{fmt(z)}** z-scored, **{fmt(w)}** whitened, **{fmt(t)}** without the top {k} "
    f"components. Random directions would give about 0: anything above is the cone. Whitening reaches 0 by "
    "construction (same corpus); z-scoring "
    + ("gets most of the way." if abs(z) < abs(raw) / 2 else "does less here.")
)
strength = cache.computed("aniso_strength", (*corpus_key, k), lambda: compare_anisotropy(curves[UNTREATED]))
prose(
    f"This model's raw peak, {fmt(strength.peak)} at layer {strength.peak_layer}, is {strength.strength} "
    f"BERT-base's {strength.reference_peak:.2f}."
)
if show_bert:
    bert = ETHAYARAJH_2019_BERT_BASE.anisotropy
    b_peak = int(np.argmax(bert))
    text = (
        f"The grey line is raw **BERT-base** (Ethayarajh 2019), stretched to the same depth: it climbs to "
        f"{bert[b_peak]:.2f} at its layer {b_peak} of 12, while this model's raw curve peaks at "
        f"{fmt(strength.peak)} (layer {strength.peak_layer}) and ends at {fmt(float(curves[UNTREATED][L]))}. "
    )
    if is_default:
        text += (
            "A likely reason (not measured here): all-MiniLM-L6-v2 was fine-tuned with a **contrastive "
            "objective** on about a billion sentence pairs, which rewards spreading unrelated text apart; raw "
            "BERT's pre-training does not ask for that."
        )
    else:
        text += (
            "The default model, all-MiniLM-L6-v2, fine-tuned for sentence similarity, stays far below it."
        )
    prose(text)
twin_note = st.empty()  # filled by section 4 when it compares trained and random weights of one model
prose(
    f"{m} distinct word pieces ({m * (m - 1) // 2:,} pairs) from {stats.n_sentences} sentences; mean, σ and "
    f"covariance from all {stats.n_tokens:,} (special tokens left out).",
    caption=True,
)
fit = stats.fits[layer]
if fit.note:
    why = (
        " One in every layer is LayerNorm's doing: each vector's centred components add up to 0."
        if fit.shrinkage == 0
        else ""
    )
    prose(f"Whitening at layer {layer}: {fit.note}{why}", caption=True)  # lib's own words, no user text

# ------------------------------------------------------------------------------------------- 2. rogue dims
st.header("2. Rogue dimensions and vector length")
var = stats.variance[layer]


def _dimensions():
    top3, share = top_variance_share(var, 3)  # over all the corpus's word pieces, not just the sample
    n_const = int(constant_dimensions(stats.std[layer], stats.mean[layer]).sum())
    return rogue_dimensions(stats.sample[layer], top=3), top3, share, n_const


rd, top3, share, n_const = cache.computed("aniso_dims", (*corpus_key, layer), _dimensions)
chart(  # 3 x 384 dimensions: built once per corpus and layer, then reused by every rerun and session
    cache.shared_figure(
        "aniso_dims",
        (model, stats_key, layer),
        lambda: dimension_profile(var, stats.mean[layer], rd.cosine_contribution, title=f"Layer {layer}"),
    ),
    key="aniso_dims",
)
contrib = rd.cosine_contribution
j_max = int(np.argmax(contrib))
raw_here = float(contrib.sum())
text = (
    f"At layer {layer} the top three dimensions by variance ({', '.join(map(str, top3))}) hold "
    f"**{share:.1%}** of it (even share: {3 / d:.1%})"
)
if wm is not None:
    carried = ", ".join(f"“{escape_md(t)}”" for t in wm.words[:3])
    text += (
        f"; without the {wm.n} word piece{'s' if wm.n != 1 else ''} with massive values ({carried}), the top "
        f"three ({', '.join(map(str, wm.top_dims_without))}) hold **{wm.top_share_without:.1%}**"
        + (": those pieces make it" if wm.top_share - wm.top_share_without > 0.2 else "")
    )
text += (
    f". The bottom chart splits the mean cosine of {fmt(raw_here, 3)} by dimension: dimension {j_max} gives "
    f"**{fmt(float(contrib[j_max]), 3)}**"
)
if raw_here > 0:
    text += f", {float(contrib[j_max]) / raw_here:.0%} of the total"
if wm is not None:
    text += f" (without them: {fmt(wm.dim_cosine_without, 3)} of {fmt(wm.cosine_without, 3)})"
# whether the dimension leans to one sign, said of the numbers that decide it: without the massive pieces
# when some carry them (two pieces of values in the tens of thousands make any mean and σ theirs)
mu_j, sd_j = (wm.dim_mean_without, wm.dim_std_without) if wm is not None else (float(stats.mean[layer][j_max]), float(stats.std[layer][j_max]))
c_j, c_all = (wm.dim_cosine_without, wm.cosine_without) if wm is not None else (float(contrib[j_max]), raw_here)
share_j = c_j / c_all if c_all > 0 else 0.0
which = " Without them, its" if wm is not None else " Its"
if share_j >= 0.1 and abs(mu_j) > sd_j:
    text += (
        f".{which} mean is {fmt(mu_j)}, its σ only {fmt(sd_j)}: a large *shared* value, added to every cosine, "
        "inflates cosine more than a large variance does."
    )
elif share_j >= 0.1:
    text += (
        f".{which} mean is {fmt(mu_j)} and its spread σ {fmt(sd_j)}: its values lean to one sign often enough to "
        "add to most cosines."
    )
else:
    text += (
        f".{which} share of the mean cosine is {share_j:.0%}: no single dimension dominates the typical word "
        "pieces at this layer."
        if wm is not None
        else ". No single dimension dominates at this layer: the parts are spread thin, as in an isotropic space."
    )
text += " Z-scoring removes each dimension's mean and divides by its σ: then every dimension counts the same."
if n_const:
    text += (
        f" {n_const} dimension(s) here have σ = 0 (the same value in every vector): z-scoring sets them to 0 "
        "instead of dividing by zero."
    )
prose(text)
if enc.sink is not None and stats.massive is not None:  # a model with an attention sink at position 0
    mv = stats.massive
    zr = (float(np.min(curves[UNTREATED][1:])), float(np.max(curves[UNTREATED][1:])))
    zz = (float(np.min(curves["zscore"][1:])), float(np.max(curves["zscore"][1:])))
    carried = ", ".join(f"“{escape_md(t)}” ({v:,.0f})" for _, _, t, v in mv.words[:4])
    prose(
        f"**Massive values.** In {escape_md(described(enc))} the start token (the **attention sink**) carries "
        f"numbers up to **{mv.first:,.0f}** (dimension {mv.first_dim}), against {mv.typical:,.0f} for a typical "
        "word piece's largest. "
        + (
            f"So do a few first words after it: {carried} ({len(mv.words)} of {mv.n_positions:,} word pieces over "
            "five times typical). "
            if mv.words
            else f"No word piece here passes five times typical ({mv.threshold:,.0f}); in longer corpora a few "
            "first words after the start (split words like “Cop”) do. "
        )
        + f"Z-scoring fixes the cone (over layers 1–{L}: {fmt(zr[0])} to {fmt(zr[1])} raw, {fmt(zz[0])} to "
        f"{fmt(zz[1])} z-scored), not these outliers."
    )
layer_chart(
    cache.shared_figure(
        "aniso_norms", corpus_key, lambda: norms_by_layer(stats.mean_norm, title="Mean vector length per layer")
    ),
    key="aniso_norms",
    at=layer,
)
nm = stats.mean_norm
prose(
    f"Vector length: {fmt(float(nm[0]), 1)} at layer 0, {fmt(float(nm[L]), 1)} at layer {L}"
    + (
        f" (after the final norm, which layers 0–{L - 1} skip: layer {L - 1}'s are {fmt(float(nm[L - 1]), 1)} "
        f"long, its raw cone {fmt(float(curves[UNTREATED][L - 1]))} against layer {L}'s "
        f"{fmt(float(curves[UNTREATED][L]))})"
        if enc.final_norm_in_last_state and L > 0
        else ""
    )
    + ". Cosine ignores length; components every vector shares pull the directions together: that is the cone."
)

# ------------------------------------------------------------------------------------------- 3. your word
st.header("3. What the fix does to your word")
a = analysis(min_sentences=2)
ss, tv = a.set, a.vectors
word = escape_md(ss.target or "the target")
X = tv.vectors[:, layer, :]
t_name = names[treatment]
titles = (f"Layer {layer}, raw cosine", f"Layer {layer}, {t_name}")
fix_view = (*corpus_key, layer, treatment, k)  # with the set (a.key): what section 3's numbers are made from


def _fix():
    """Section 3's numbers, once per set, corpus, layer and fix: the two cosine matrices, their colour range and
    means, the senses' similarity, the pair ranking and the readout before and after the fix."""
    treated = np.asarray(stats.treat(X, layer, treatment, k))
    before, after = cosine_matrix(X), cosine_matrix(treated)
    both = np.stack([before, after])
    labelled = ss.has_senses
    return {
        "before": before,
        "after": after,
        "range": before_after_range(before, after),
        "means": (mean_offdiagonal(before), mean_offdiagonal(after)),
        "sims": sense_similarity(both, ss.senses) if labelled else None,
        "auc": pair_ranking_auc(both, ss.senses) if labelled else None,
        "readouts": (
            leave_one_out_readout(X[:, None, :], list(ss.senses)), leave_one_out_readout(treated[:, None, :], list(ss.senses))
        ) if labelled else (None, None),
    }  # fmt: skip


fix = a.computed("aniso_fix", *fix_view, compute=_fix)
before, after = fix["before"], fix["after"]
lo, hi = fix["range"]  # one colour range for both
keys = ("aniso_matrix_raw", "aniso_matrix_treated")
matrix_pair((before, after), titles, keys, ss.sentences, ss.senses, zmin=lo, zmax=hi, made_from=(*a.key, *fix_view))
download_figure(  # made when the button is pressed
    functools.partial(similarity_before_after, before, after, ss.labels, ss.senses, titles),
    "context_lens_anisotropy_before_after",
    key="aniso_matrices_download",
)
mb, ma = fix["means"]
sims = fix["sims"]
if sims is not None and sims.gap is not None:
    cols = st.columns(3)
    # deltas against raw, all neutral: a larger gap in cosine units is not by itself a better separation
    cols[0].metric(
        f"same-sense pairs, {t_name}",
        fmt(float(sims.same[1])),
        f"{float(sims.same[1] - sims.same[0]):+.2f} vs raw",
        delta_color="off",
    )
    cols[1].metric(
        f"different-sense pairs, {t_name}",
        fmt(float(sims.different[1])),
        f"{float(sims.different[1] - sims.different[0]):+.2f} vs raw",
        delta_color="off",
    )
    cols[2].metric(
        f"gap (same − different), {t_name}",
        fmt(float(sims.gap[1])),
        f"{float(sims.gap[1] - sims.gap[0]):+.2f} vs raw",
        delta_color="off",
    )
    # scale-free measures: the order of the pairs (AUC) and the per-sentence readout, before and after
    auc = fix["auc"]
    ro_b, ro_a = fix["readouts"]
    c2 = st.columns(3)
    c2[0].metric(
        f"pair ranking (AUC), {t_name}",
        fmt(float(auc[1]), 3),
        f"{float(auc[1] - auc[0]):+.3f} vs raw ({fmt(float(auc[0]), 3)})",
        delta_color="off",
        help="The share of (same-sense pair, different-sense pair) comparisons that the same-sense pair wins; "
        "0.5 is chance, 1 is perfect. It reads only the order of the cosines, not their scale.",
    )
    if ro_b is not None and ro_a is not None:
        c2[1].metric(
            f"sense readout, {t_name}",
            f"{float(ro_a.accuracy[0]):.0%}",
            f"{float(ro_a.accuracy[0] - ro_b.accuracy[0]) * 100:+.0f} points vs raw ({float(ro_b.accuracy[0]):.0%})",
            delta_color="off",
            help="Leave-one-out nearest centroid, as on the Layer by layer page, at this layer.",
        )
    d_auc = float(auc[1] - auc[0])
    prose(
        f"Raw, the {len(ss)} occurrences of “{word}” at layer {layer} average **{fmt(mb)}** over all pairs; "
        f"{t_name} with {escape_md(corpus_label)}'s statistics, **{fmt(ma)}** (both maps: one colour scale). "
        "The fix removes what every vector shares, which changes the cosines' scale and so the gap; the "
        "pair ranking (AUC) and the readout read only which pairs are closer: "
        + (
            "here they barely move, so the fix mostly rescales."
            if abs(d_auc) < 0.02
            else f"here the AUC moves {'up' if d_auc > 0 else 'down'} by {abs(d_auc):.3f}, so the fix also "
            "reorders some pairs."
        )
    )
else:
    prose(
        f"Raw, the {len(ss)} occurrences of “{word}” at layer {layer} average **{fmt(mb)}** over all pairs; "
        f"{t_name}, **{fmt(ma)}**: the shared part of every vector is gone. Label sentences with a sense "
        "(“river | …”) in the sidebar to see whether the gap between meanings grows."
    )
if treatment == "whiten" and stats.fits[layer].shrinkage > 0:
    prose(
        f"The covariance was regularized (shrinkage {stats.fits[layer].shrinkage:.3f}) before whitening.",
        caption=True,
    )

# ------------------------------------------------------------------------------------------- 4. two models
st.header("4. Trained or shuffled? The same corpus through two models")
other = controls.compare_picker(
    "aniso",
    model,
    off_note="Switch on to measure a second model's cone (default: the shuffled-weights control).",
)
if other is not None:
    other_sentences, other_key, other_note = bounded_corpus(
        cache.encoder(other), corpus_sentences, stats_key.split("-first")[0]
    )
    if other_note and not use_set_stats:
        st.info(escape_md(other_note))
    with st.spinner("Running the second model over the corpus (once per model and corpus)…"):
        stats2 = (
            cache.set_stats(other, stats_key, corpus_sentences)
            if use_set_stats
            else cache.corpus_stats(other, other_key, other_sentences)
        )
    curves2 = cache.anisotropy_curves(other, other_key if not use_set_stats else stats_key, k, stats2)
    n1, n2 = controls.label(model), controls.label(other)
    fig2, relative = controls.two_model_figure(
        [
            (f"{n1} · raw", curves[UNTREATED], "solid"),
            (f"{n1} · z-scored", curves["zscore"], "dot"),
            (f"{n2} · raw", curves2[UNTREATED], "solid"),
            (f"{n2} · z-scored", curves2["zscore"], "dot"),
        ],
        title=f"Mean cosine of random word-piece pairs, {controls.pair_title(model, other)}",
        y_title="mean cosine of random pairs",
        zero_line=True,
    )
    chart(fig2, key="aniso_compare_chart", name_model=False)
    r1, r2 = curves[UNTREATED], curves2[UNTREATED]
    prose(
        f"On {escape_md(corpus_label)}: **{escape_md(n1)}** (blue) goes from {fmt(float(r1[0]))} at the embedding "
        f"layer to **{fmt(float(r1[-1]))}** at its last layer, raw; **{escape_md(n2)}** (red) from "
        f"{fmt(float(r2[0]))} to **{fmt(float(r2[-1]))}**. Dotted: the same after z-scoring each dimension. "
        "A cone the control shows too needs no training; a cone only the trained model has was learned."
        + (" The models have different depths, so the x axis is the relative depth." if relative else "")
    )
    controls.control_card(model, other, tv.encoding.sentences, ss.target)
    if note := twin_sentence(model, other, r1, r2):
        twin_note.markdown(note)
