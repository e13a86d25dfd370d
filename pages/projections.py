"""Projections: the target word's vectors drawn in 2-D or 3-D with PCA, UMAP or t-SNE (course §8.3).

Reads the cached target vectors (the model runs once per set); projections are cached per input array,
so moving a control only recomputes the picture it changes, and what the page reads from a map (its counts,
its checks, its chart) is made once per view (ui.analysis.Analysis.computed and .figure). UMAP is compiled in the background the first
time a learner chooses it on this server (ui.startup.warm_up_in_background -> lib.stats.projection.warm_up_umap);
its libraries (~0.3 GB) stay out of a server where nobody does.
"""


import numpy as np
import pandas as pd
import streamlit as st

from lib.charts.projection import explained_variance_titles, projection_scatter, projection_small_multiples
from lib.inputs.corpus import UNTREATED, CorpusError, CorpusStats, bounded_corpus
from lib.models.facts import final_norm_note, layer_zero_holds
from lib.serving.export import frame_csv
from lib.stats.baseline import other_token_masks
from lib.stats.geometry import default_top_k
from lib.stats.projection import (
    METHOD_LABELS,
    MIN_POINTS,
    ProjectionError,
    align_to,
    all_alike,
    context_points,
    group_neighbours,
    same_nearest_neighbour,
    same_sense_neighbours,
)
from ui import cache, controls, link, startup
from ui.analysis import analysis
from ui.widgets import chart, escape_md, page_intro, prose

MAX_CONTEXT_POINTS = 400
PREP_CHOICES = {
    UNTREATED: "nothing (raw vectors)",
    "zscore": "z-score each dimension (§5.1)",
    "topk": "remove the top principal components",
}
PNG_CONFIG = {"toImageButtonOptions": {"format": "png", "filename": "context-lens-projection", "scale": 2}}


# ------------------------------------------------------------------------------------------- intro
st.title("Projections: the word's vectors on a flat map")
page_intro("projections")

a = analysis(min_sentences=1)
ss, tv, enc = a.set, a.vectors, a.encoder
L, d = enc.num_layers, enc.hidden_size
n = len(ss)
word = escape_md(ss.target or "the target")

if n < MIN_POINTS:
    st.info(
        f"A projection needs at least {MIN_POINTS} points, one per sentence with “{word}”; the set has {n}. "
        "Add sentences in the sidebar (ideally a few per meaning, labelled like “river | …”) or pick a preset."
    )
    st.stop()

# ------------------------------------------------------------------------------------------- widgets
# every parameter of the page, declared once: its initial value, its bounds and its place in the URL follow
PARAMS = [
    link.Param("proj_method", "choice", "pca", choices=tuple(METHOD_LABELS)),
    link.Param("proj_dims", "int", 2, lo=2, hi=3),
    link.Param("proj_layer", "int", L, lo=0, hi=L),
    link.Param("proj_prep", "choice", UNTREATED, choices=tuple(PREP_CHOICES)),
    link.Param("proj_k", "int", default_top_k(d), lo=1, hi=10),
    link.Param("proj_context", "bool", False),
    link.Param("proj_across", "bool", True),
    link.Param("proj_seeds", "bool", False),
]
link.init_params(PARAMS)

c_method, c_dims, c_layer = st.columns([2, 1, 3])
c_method.radio(
    "Method",
    list(METHOD_LABELS),
    format_func=METHOD_LABELS.get,
    key="proj_method",
    horizontal=True,
    help="PCA is exact and instant; UMAP and t-SNE keep neighbourhoods (fixed seed: a link shows the same map).",
)
c_dims.radio("Dimensions", [2, 3], key="proj_dims", horizontal=True, format_func={2: "2-D", 3: "3-D"}.get)
c_layer.slider("Layer", 0, L, key="proj_layer", help=f"0 = the embedding layer, {L} = the last layer.")
c_prep, c_k, c_ctx = st.columns([2, 2, 2])
c_prep.selectbox(
    "Before projecting",
    list(PREP_CHOICES),
    format_func=PREP_CHOICES.get,
    key="proj_prep",
    help="The course's advice (§8.3): project standardized vectors, or remove the top components first. "
    "The statistics come from the built-in reference corpus.",
)
c_k.slider(
    "k: components to remove",
    1,
    10,
    key="proj_k",
    disabled=st.session_state.proj_prep != "topk",
    help="Only used with “remove the top principal components”.",
)
c_ctx.toggle(
    "Show the other words (grey)", key="proj_context", help="All other word pieces of your sentences."
)
c_ctx.toggle("Across layers", key="proj_across", help="One small 2-D map per layer, below the main one.")
c_ctx.toggle(
    "3 seeds",
    key="proj_seeds",
    disabled=st.session_state.proj_method == "pca",
    help="UMAP and t-SNE start from a random state: draw the map with seeds 0, 1 and 2 to see which groups "
    "survive a different start. (PCA has no seed.)",
)

method = st.session_state.proj_method
dims = int(st.session_state.proj_dims)
layer = st.session_state.proj_layer
prep = st.session_state.proj_prep
k = st.session_state.proj_k
show_context = st.session_state.proj_context
across = st.session_state.proj_across
seeds_view = st.session_state.proj_seeds
link.sync_params(PARAMS, {"proj_dims": dims})

# ------------------------------------------------------------------------------------------- data
stats: CorpusStats | None = None
if prep != UNTREATED:
    try:
        corpus = cache.reference_corpus()
        used, stats_key, bound_note = bounded_corpus(a.encoder, corpus.sentences, "builtin-" + corpus.corpus_id)
        if bound_note:
            st.caption(escape_md(bound_note))
        stats = cache.corpus_stats(a.model, stats_key, used)
    except CorpusError as err:
        st.warning(escape_md(str(err)) + " The vectors are projected without preparation.")
        prep = UNTREATED


def prepared(X: np.ndarray, at_layer: int) -> np.ndarray:
    """The vectors of one layer after the chosen preparation, float32 to keep the cache keys small."""
    if stats is None or prep == UNTREATED:
        return np.asarray(X, dtype=np.float32)
    return stats.treat(X, at_layer, prep, k).astype(np.float32)


senses = list(ss.senses)
hover = list(ss.sentences)
numbers = [str(i + 1) for i in range(n)]
prep_view = (prep, k if prep == "topk" else 0)  # the preparation, as it changes the vectors
points_view = (layer, *prep_view, show_context)  # with the set (a.key): what the map's points are made from


def _points():
    """The points to map (the target's vectors, then the other word pieces' when shown), prepared, and the
    other word pieces' hover text."""
    targets = tv.vectors[:, layer, :]  # (n, hidden)
    ctx_vectors, ctx_hover = np.zeros((0, d), dtype=np.float32), []
    if show_context:
        encoding = tv.encoding
        masks = other_token_masks(encoding.special, [s.token_indices for s in tv.spans])
        ctx = context_points(encoding.hidden_states, masks, layer, limit=MAX_CONTEXT_POINTS)
        ctx_vectors = ctx.vectors
        ctx_hover = [f"“{encoding.tokens[i][p]}” in sentence {i + 1}: {encoding.sentences[i]}" for i, p in ctx.where]
    return prepared(np.concatenate([targets, ctx_vectors]) if len(ctx_vectors) else targets, layer), ctx_hover


X_all, ctx_hover = a.computed("proj_points", *points_view, compute=_points)
n_ctx = len(X_all) - n
if method == "umap":
    startup.warm_up_in_background()  # once per server; returns at once
umap_waiting = method == "umap" and startup.umap_status() == "warming"
if umap_waiting:
    # UMAP never blocks the page: while the server compiles it (once, the first time it is chosen), show PCA and switch
    # to UMAP by itself as soon as the warm-up is done (a fragment polls the warm-up once a second).
    method = "pca"
    st.info(
        "UMAP is being prepared on this server (once, the first time anyone chooses it; usually under half a minute). Meanwhile "
        "the map below is **PCA**; it switches to UMAP by itself when UMAP is ready, nothing to click."
    )

    @st.fragment(run_every=1.0)
    def _switch_when_umap_ready() -> None:
        if startup.umap_status() != "warming":
            st.rerun()

    _switch_when_umap_ready()
if method == "umap" and startup.umap_status() != "ready":
    spinner = "Computing UMAP (the first UMAP after a server start also compiles it, up to a minute)…"
else:
    spinner = f"Computing {METHOD_LABELS[method]}…"
view = (*points_view, method, dims)  # with the set: what the map is made from
try:
    with st.spinner(spinner):
        proj = a.computed("proj_map", *view, compute=lambda: cache.projection(X_all, method, dims))
except ProjectionError as err:
    st.error(escape_md(str(err)))
    st.stop()

coords = proj.coords[:n]
ctx_coords = proj.coords[n:] if n_ctx else None

# ------------------------------------------------------------------------------------------- 1. the map
prep_txt = {UNTREATED: "", "zscore": ", z-scored", "topk": f", top {k} components removed"}[prep]
st.header(f"“{word}” at layer {layer}: {METHOD_LABELS[method]}, {dims}-D{prep_txt}")


def axis_titles() -> list[str]:
    if method == "pca":
        return explained_variance_titles(proj.explained_variance_ratio, dims)
    return [f"{METHOD_LABELS[method]} {i + 1}" for i in range(dims)]


chart(
    a.figure(
        "proj_map",
        *view,
        build=lambda: projection_scatter(
            coords,
            senses,
            hover,
            numbers,
            context=ctx_coords,
            context_hover=ctx_hover,
            axis_titles=axis_titles(),
            equal_axes=method == "pca",
        ),
    ),
    key="proj_map",
    config=PNG_CONFIG,
)
for note in proj.notes:
    prose(caption=True, text=escape_md(note))


def _map_numbers():
    """How faithful the map is (its neighbour check) and how many sentences have a same-sense nearest neighbour on
    it, in the full space and the very same one; with the grey points, how many "word" points huddle."""
    hits_map, total = same_sense_neighbours(coords, senses)
    hits_full, _ = same_sense_neighbours(X_all[:n], senses, metric="cosine")
    same_nn, _ = same_nearest_neighbour(coords, X_all[:n], senses)
    huddle = group_neighbours(proj.coords, n) if n_ctx else None
    return cache.projection_check(X_all, proj.coords), hits_map, total, hits_full, same_nn, huddle


check, hits_map, total, hits_full, same_nn, near_target = a.computed("proj_numbers", *view, compute=_map_numbers)
controls.neighbour_caption(check, f"{dims}-D {METHOD_LABELS[method]}")
parts = []
if method == "pca":
    kept = proj.variance_kept
    parts.append(
        f"These {dims} axes keep **{kept:.0%}** of the variance of the {n} vectors"
        + (f" (PC1 alone {proj.explained_variance_ratio[0]:.0%})" if dims > 1 else "")
        + f"; the other {max(0, min(n - 1, d) - dims)} directions are flattened away."
    )
else:
    parts.append(
        f"{METHOD_LABELS[method]} looked at each point's "
        + (
            f"{proj.n_neighbors} nearest neighbours"
            if method == "umap"
            else f"neighbourhood (perplexity {proj.perplexity:.1f})"
        )
        + "; read which points sit together, not how far apart the groups are."
    )
if total:
    parts.append(
        f"On this map **{hits_map} of {total}** sentences have a nearest neighbour of the same sense; in the "
        f"full {d}-dimensional space the map was made from (by cosine) **{hits_full} of {total}** do"
        + (
            f". Equal counts, yet only {same_nn} of {total} keep the very same nearest neighbour."
            if hits_map == hits_full and same_nn < total
            else ", and every one keeps its very nearest neighbour: the map keeps the sense structure."
            if hits_map == hits_full
            else ", so the map shows more sense structure than the space holds: the squashing put some "
            "same-sense points together that are not nearest neighbours there."
            if hits_map > hits_full
            else ", so some of the structure is lost in the squashing."
        )
    )
else:
    parts.append("Label sentences with a sense (“river | …”) in the sidebar to colour the points by meaning.")
if show_context and n_ctx:
    parts.append(
        f"The {n_ctx} grey points are the other word pieces at the same layer (the map was fitted on "
        f"all points together). {near_target} of the {n} “{word}” points have another “{word}” as their nearest "
        "neighbour: among other words, a word's identity weighs more than its sense, so its occurrences "
        "huddle together; switch the grey points off to spread them out."
    )
prose(" ".join(parts))


# ------------------------------------------------------------------------------------------- 3 seeds
if seeds_view and method != "pca":
    st.subheader("The same map from three random starts")

    def _seeds():
        """The map from seeds 0, 1 and 2 (turned to match seed 0's), and how much of the neighbourhoods each keeps."""
        runs = [proj] + [cache.projection(X_all, method, dims, seed=s) for s in (1, 2)]
        seed_coords = [runs[0].coords[:n]] + [align_to(r.coords, runs[0].coords)[:n] for r in runs[1:]]
        return seed_coords, [cache.projection_check(X_all, r.coords) for r in runs]

    try:
        with st.spinner(f"Computing {METHOD_LABELS[method]} with seeds 0, 1 and 2…"):
            seed_coords, seed_checks = a.computed("proj_seeds", *view, compute=_seeds)
    except ProjectionError as err:
        st.error(escape_md(str(err)))
        st.stop()
    chart(
        a.figure(
            "proj_seeds",
            *view,
            build=lambda: projection_small_multiples(
                seed_coords,
                senses,
                hover,
                numbers,
                [f"seed {s}\nkeeps {c.preserved:.0%}" for s, c in enumerate(seed_checks)],
                cols=3,
                title=f"“{ss.target}” at layer {layer}: {METHOD_LABELS[method]} with three seeds",
            ),
        ),
        key="proj_seeds_chart",
        config=PNG_CONFIG,
    )
    prose(
        "Each panel is the same vectors, the same settings, only a different random start (turned to match "
        "seed 0). Groups that appear in all three are in the data; a group, a gap or a position that changes "
        f"from seed to seed is the method's choice, not the model's. The maps keep "
        f"{', '.join(f'{c.preserved:.0%}' for c in seed_checks)} of each point's {seed_checks[0].k} nearest "
        "neighbours."
    )

# ------------------------------------------------------------------------------------------- downloads
def coordinates_table() -> pd.DataFrame:
    cols = ["x", "y", "z"][:dims]
    df = pd.DataFrame(coords, columns=cols)
    df.insert(0, "sentence", hover)
    df.insert(0, "sense", [s or "" for s in senses])
    df.insert(0, "sentence_no", range(1, n + 1))
    df.insert(0, "kind", "target")
    if ctx_coords is not None:
        c = pd.DataFrame(ctx_coords, columns=cols)
        c.insert(0, "sentence", ctx_hover)
        c.insert(0, "sense", "")
        c.insert(0, "sentence_no", 0)
        c.insert(0, "kind", "context")
        df = pd.concat([df, c], ignore_index=True)
    df.insert(0, "preparation", prep if prep != "topk" else f"top{k}")
    df.insert(0, "method", method)
    df.insert(0, "layer", layer)
    return df


st.download_button(
    "Download the coordinates (CSV)",
    data=a.computed("proj_csv", *view, compute=lambda: frame_csv(coordinates_table(), index=False)),
    file_name=f"projection_{method}_{dims}d_layer{layer}.csv",
    mime="text/csv",
    key="proj_csv",
)
prose(caption=True, text="For a picture, use the camera icon above the chart (PNG).")

# ------------------------------------------------------------------------------------------- 2. layers
st.header("Across layers")
if not across:
    prose(caption=True, text="Switch on “Across layers” above to watch the senses separate layer by layer.")
else:

    def _layers():
        """Every layer's 2-D map (one layer at a time, a progress bar meanwhile), the same-sense neighbour counts on
        each map and in the full space, and the share of neighbourhoods each map keeps."""
        H = np.stack([prepared(tv.vectors[:, j, :], j) for j in range(L + 1)])  # (L+1, n, hidden)
        bar = st.empty()  # one layer at a time (the server's work queue); gone when every layer is done
        per_layer = cache.projection_layers(
            H, method, lambda done, total: bar.progress(done / total, f"Layer {done} of {total} done")
        )
        bar.empty()
        counts = [same_sense_neighbours(p.coords, senses) for p in per_layer]
        full = [same_sense_neighbours(H[j], senses, metric="cosine") for j in range(L + 1)]
        kept = [cache.projection_check(H[j], p.coords).preserved for j, p in enumerate(per_layer)]
        return per_layer, counts, full, kept

    try:
        with st.spinner(f"Computing {METHOD_LABELS[method]} for {L + 1} layers…"):
            per_layer, counts, full, kept_per_layer = a.computed("proj_layers", *prep_view, method, compute=_layers)
    except ProjectionError as err:
        st.error(escape_md(str(err)))
        st.stop()
    titles = [
        f"layer {j}\n" + (f"{h}/{t} · " if t else "") + f"{kept_per_layer[j]:.0%}"
        for j, (h, t) in enumerate(counts)
    ]
    chart(  # does not change with the layer slider: built once per set, method and preparation
        a.figure(
            "proj_layers",
            *prep_view,
            method,
            build=lambda: projection_small_multiples([p.coords for p in per_layer], senses, hover, numbers, titles),
        ),
        key="proj_layers",
        config=PNG_CONFIG,
    )
    if total:
        best = int(np.argmax([h for h, _ in full]))
        start = (
            f"is no count at layer 0, where all {n} vectors are one and the same ({layer_zero_holds(enc)}), so no "
            f"sentence is nearer to one than to another; it is {full[L][0]} of {total} at layer {L}"
            if a.computed("proj_zero_alike", *prep_view, compute=lambda: all_alike(prepared(tv.vectors[:, 0, :], 0)))
            else f"goes from {full[0][0]} of {total} at layer 0 ({enc.layer_zero}, no context) to {full[L][0]} at "
            f"layer {L}"
        )
        prose(
            f"Each panel is a separate {METHOD_LABELS[method]} map of the {n} vectors of one layer, turned to "
            "match its neighbour so points do not jump for no reason. In the full space, the number of "
            f"sentences whose nearest neighbour shares its sense {start}, with the most, {full[best][0]}, "
            f"at layer {best}. Under each layer's name: the same count on that panel's map ({counts[best][0]}/"
            f"{counts[best][1]} at layer {best}), then the share of each point's neighbours the map keeps."
            + (" " + final_norm_note(enc, layer) if final_norm_note(enc, layer) else "")
        )
    else:
        prose(
            f"Each panel is a separate {METHOD_LABELS[method]} map of the {n} vectors of one layer. Label the "
            "sentences with senses to see the meanings separate."
        )
    prose(caption=True, text=
        "The small maps are always 2-D and never show the grey context points. “keeps” is the share of each "
        "point's 5 nearest neighbours (cosine, full space) that are also among its 5 nearest on the panel"
        + (
            f"; below half on {sum(v < 0.5 for v in kept_per_layer)} of {L + 1} panels: read those with care."
            if any(v < 0.5 for v in kept_per_layer)
            else "."
        )
    )
