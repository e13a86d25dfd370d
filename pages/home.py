"""Start here: what the app teaches, and the current word's similarity before and after context."""

import functools

import numpy as np
import streamlit as st

from lib.charts.home import before_after_heatmaps, shared_floor, similarity_heatmap
from lib.stats.similarity import cosine_matrix, pair_values, sense_similarity
from ui import cache, session
from ui.analysis import analysis
from ui.widgets import (
    chart,
    download_figure,
    escape_md,
    page_intro,
    prose,
    sentence_table,
    weights_note,
)

st.title("Context Lens")
page_intro("home")

a = analysis(min_sentences=2)
ss, tv, enc = a.set, a.vectors, a.encoder
last = enc.num_layers


def _numbers():
    first, final = cosine_matrix(tv.vectors[:, 0, :]), cosine_matrix(tv.vectors[:, last, :])
    senses = sense_similarity(np.stack([first, final]), ss.senses) if ss.has_senses else None
    return first, final, pair_values(first), pair_values(final), senses


# computed once per set and model: a rerun finds them (ui.cache.computed)
first_cos, last_cos, first_pairs, last_pairs, sims = cache.computed("home", a.key, _numbers)
word = escape_md(ss.target or "the target")

st.subheader(f"“{word}” in {len(ss)} sentences: before and after context")
# two charts in two columns: side by side on a laptop or projector, one under the other on a phone; each
# figure is built once per set and model and shared by reruns and sessions (ui.cache.shared_figure)
note = weights_note()  # the headings name random weights once; the untitled heatmaps below add nothing
titles = tuple(
    t + (f" · {note}" if note else "")
    for t in (f"Layer 0: embeddings ({enc.layer_zero})", f"Layer {last}: after {last} layers (attention + feed-forward)")
)
fig_key = (*a.key, tuple(ss.labels), note)
for col, m, title, name, scale in zip(
    st.columns(2, gap="medium"),
    (first_cos, last_cos),
    titles,
    ("home_heatmap_first", "home_heatmap_last"),
    (False, True),
    strict=True,
):
    with col:
        # a chart's heading: the one term only it uses is linked, the rest stays as the chart's own title
        st.markdown("**" + title.replace("feed-forward", "[feed-forward](glossary#feed-forward-block)") + "**")
        shared = cache.shared_figure(
            name,
            fig_key,
            lambda m=m, scale=scale: similarity_heatmap(
                m, ss.sentences, ss.senses, None, zmin=shared_floor(first_cos, last_cos), show_scale=scale
            ),
        )
        chart(shared, key=name, share=0.5, name_model=False)
sentence_table(ss.sentences, ss.senses)
download_figure(  # made when the button is pressed (data and a lib function: nothing of the page is kept)
    functools.partial(before_after_heatmaps, first_cos, last_cos, ss.labels, ss.senses, titles),
    "context_lens_before_after",
    key="home_heatmaps_download",
)
lo0, hi0 = float(first_pairs.min()), float(first_pairs.max())
if ss.has_senses:
    if sims.same is not None and sims.different is not None:
        separated = sims.gap[1] > sims.gap[0] + 0.01
        text = (
            f"**Reading it.** At layer 0 every pair scores {lo0:.2f}–{hi0:.2f}: the vector holds the word "
            f"piece, its position and the segment, no context yet. After layer {last}, same-sense pairs "
            f"average **{sims.same[1]:.2f}** and different-sense pairs **{sims.different[1]:.2f}** (gap "
            f"{sims.gap[0]:+.2f} at layer 0)"
            + (
                ": the context has pulled the occurrences apart by meaning."
                if separated
                else ": in these sentences the context has not pulled the senses further apart than at layer 0."
            )
        )
        prose(text)
        rc = cache.readout_chance(a.model, tuple(ss.sentences), tuple(ss.senses), ss.target, "target", tv.vectors)
        if rc is not None:
            verdict = "within" if rc.within_chance[last] else "above"
            text = (
                "Giving each sentence the sense whose average vector (without it) is nearest reads "
                f"{rc.accuracy[0]:.0%} right at layer 0 and **{rc.accuracy[last]:.0%}** at layer {last}, "
                f"{verdict} chance (shuffled labels reach {rc.shuffled_p95[last]:.0%})."
            )
            if not rc.within_chance[0]:
                text += (
                    " Above chance at layer 0 can only mean that the word's position or form (its word "
                    "pieces) goes with its sense in these sentences, which small hand-written sets allow easily."
                )
            prose(text)
    else:
        prose(f"At layer 0 the pairs score {lo0:.2f}–{hi0:.2f}; see how they spread at layer {last}.")
else:
    lo1, hi1 = float(last_pairs.min()), float(last_pairs.max())
    if len(last_pairs) == 1:  # two sentences: one pair, one number per layer (not a range from x to x)
        said = f"At layer 0 the pair scores {lo0:.2f}; at layer {last} it scores {lo1:.2f}."
    else:
        said = f"At layer 0 the pairs score {lo0:.2f}–{hi0:.2f}; at layer {last} they spread to {lo1:.2f}–{hi1:.2f}."
    prose(
        f"**Reading it.** {said} Label your sentences with senses (“river | …”) to compare meanings."
    )
splits = tv.split_targets
if splits:
    sp = splits[0]
    prose(caption=True, text=
        f"The tokenizer splits “{escape_md(sp.word)}” into {len(sp.pieces)} word pieces "
        f"({escape_md(' + '.join(sp.pieces))}); its vector is the mean of the pieces."
    )

st.divider()
st.subheader("What each page shows")
prose(
    "- **Layer by layer**: the word's similarity across sentences at every layer, same vs different sense, "
    "static vs contextual, and which layer reads the sense best.\n"
    "- **Attention**: which words each word looks at, per layer and head, and a check that the heatmap is "
    "exactly softmax(QKᵀ/√dₖ) from the model's own weights.\n"
    "- **What moves the word**: mask one context word at a time and see how far the word's vector moves.\n"
    "- **Anisotropy**: why raw cosine can mislead (in many models the vectors crowd into a narrow cone; the "
    "page measures how narrow in this one) and what z-scoring, whitening or removing top components change.\n"
    "- **Projections**: the word's vectors in 2-D or 3-D (PCA, UMAP, t-SNE), coloured by sense.\n"
    "- **Attention by hand**: the course's worked example (“The cat sat”), step by step, with your own numbers.\n"
    "- **Guided lesson**: the course in order, with questions checked against what the model computed."
)
prose(caption=True, text=
    f"Model: {escape_md(session.model_display(a.model))} ({enc.num_layers} layers, {enc.num_heads} heads, {enc.hidden_size} "
    "dimensions). Edit the sentences, the target word or the model in the sidebar; the address bar "
    "always holds a link to the current view."
)
