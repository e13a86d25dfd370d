"""Attention: which word pieces each word piece looks at, per layer and head, and proof it is softmax(QKᵀ/√dₖ).

The set's encoding carries no attention weights (they would be num_layers × num_heads × n² floats per
sentence); the one or two sentences shown here are encoded with them, once each (ui.cache.sentence_attention).
Moving the layer or head sliders only slices arrays and redoes one small matrix product.
"""

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from lib.charts.attention import (
    MAX_TICK_LABELS,
    attention_heatmap,
    attention_overview,
    first_position_chart,
    special_token_share_chart,
    target_attention_bars,
    target_attention_by_layer,
)
from lib.models.attention import (
    contrast_sentence_index,
    first_position_share,
    most_attended,
    pool_attention,
    shown_token,
    special_token_share,
    strongest_keys,
    target_attention,
    token_labels,
    weight_above_diagonal,
)
from lib.models.facts import attention_columns, described
from lib.models.keys import DEFAULT_MODEL
from lib.models.recompute import (
    UnsupportedArchitectureError,
    llama_layout,
    projection_bias,
    recompute_attention,
)
from lib.serving import budget
from ui import cache, link
from ui.analysis import analysis
from ui.widgets import chart, escape_md, expander_while_open, page_intro, prose, sentence_picker, set_state

OVERVIEW_MAX_TOKENS = 40
COMPARE_BOX = "attn_compare_box"  # the side-by-side expander (True while open)
STEP_COLUMNS = ("q·k", "q·k / √d_k", "softmax (recomputed)", "the model's weight")

st.title("Attention")
page_intro("attention")

a = analysis(min_sentences=1)
ss, tv, enc = a.set, a.vectors, a.encoder
encoding = tv.encoding
n_sent = len(ss)
L, H = enc.num_layers, enc.num_heads
word = escape_md(ss.target or "the target")
sentence_label = ss.option_labels.get  # kept by the widgets: data only


def md_token(label: str) -> str:
    return f"“{escape_md(label)}”"


# ------------------------------------------------------------------------------------------- widgets
# every parameter of the page, declared once: its initial value, its bounds and its place in the URL follow
PARAMS = [
    link.Param("attn_sentence", "int", 1, lo=1, hi=n_sent),
    link.Param("attn_layer", "int", 1, lo=1, hi=L),
    link.Param("attn_head", "int", 1, lo=1, hi=H),
    link.Param("attn_target_mean", "bool", True),
]
link.init_params(PARAMS)
c_sent, c_layer, c_head = st.columns([3, 1, 1])
s_num = sentence_picker(c_sent, ss, "attn_sentence")
layer_num = c_layer.slider("Layer", 1, L, key="attn_layer", help=f"1 = closest to the input, {L} = the last layer.")
head_num = c_head.slider("Head", 1, H, key="attn_head", help=f"Each layer has {H} heads that attend independently.")
i, layer, head = s_num - 1, layer_num - 1, head_num - 1

tokens = encoding.tokens[i]
att_encoding = cache.sentence_attention(a.model, encoding.sentences[i])  # this sentence, with attentions
att = att_encoding.attentions[0]  # (L, H, n, n)
n = len(tokens)
span = tv.spans[i]
tpos = list(span.token_indices)
# What the page reads from this sentence's attention is computed once per sentence (and per layer and head where
# it depends on them) and found again by every rerun (ui.cache.computed); charts are built once per input and
# shared (ui.cache.shared_figure), their sent specs too.
fig_key = (a.model, encoding.sentences[i], tuple(tokens), budget.MAX_PIECES_PER_SENTENCE)
labels = cache.computed("attn_labels", fig_key, lambda: token_labels(tokens))
target_labels = ", ".join(md_token(labels[p]) for p in tpos)

SHOW_PIECES = 60
pieces_md = " ".join(
    f"**{escape_md(shown_token(t))}**" if k in tpos else escape_md(shown_token(t)) for k, t in enumerate(tokens[:SHOW_PIECES])
)
prose(caption=True, text=
    f"Sentence {s_num} as the model reads it, {n} word pieces (the target in bold): {pieces_md}"
    + (" …" if n > SHOW_PIECES else "")
)
if encoding.truncated[i]:
    prose(caption=True, text=
        f"This sentence was cut at {min(enc.max_tokens, budget.MAX_PIECES_PER_SENTENCE)} word pieces: everything below is about "
        "the part the model saw. Shorten it to see the rest."
    )

# ------------------------------------------------------------------------------------------- 1. heatmap
st.header(f"Layer {layer_num}, head {head_num}: who looks at whom")
weights = att[layer, head]  # (n, n)
title = f"Sentence {s_num}, layer {layer_num}, head {head_num}"
chart(
    cache.shared_figure("attn_heatmap", (*fig_key, layer, head, title), lambda: attention_heatmap(weights, labels, title=title)),
    key="attn_heatmap",
    download="context_lens_attention",
)
qpos = tpos[-1] if enc.causal else tpos[0]  # a decoder's word is its last piece (it has seen the whole word)
row = weights[qpos]
top = cache.computed("attn_strongest", (*fig_key, layer, head, qpos), lambda: strongest_keys(row, 3))
prose(
    "Each **row** is one word piece looking (the query); its colours show how it shares its attention over "
    "all word pieces (the keys), and every row adds up to 1. "
    f"Row {md_token(labels[qpos])}, the target, gives "
    + ", ".join(f"{row[k]:.2f} to {md_token(labels[k])}" for k in top)
    + ". Hover over a cell for the exact value."
)
if enc.causal:
    prose(
        "Nothing lies **above the diagonal**: a word piece sees only itself and what came before (the **causal "
        f"mask**; largest weight there, any layer and head: "
        f"{cache.computed('attn_above_diagonal', fig_key, lambda: weight_above_diagonal(att)):.1f})."
    )
if n > MAX_TICK_LABELS:
    prose(caption=True, text=
        f"This sentence has {n} word pieces. Every row and column is drawn, but only some labels are printed "
        "so they stay readable; hover over a cell or drag a box to zoom in for the rest."
    )

# ------------------------------------------------------------------------------------------- 2. overview
st.header("All layers and heads at once")
# The overview carries no mark of the chosen head: unchanged, it goes to the browser as a short reference and is
# not redrawn when a slider moves (one heatmap of every head; ~100 kB of JSON with the encoder).
overview = cache.shared_figure(
    "attn_overview",
    fig_key,
    lambda: attention_overview(att, labels, selected=None, max_tokens=OVERVIEW_MAX_TOKENS),
)
chart(overview, key="attn_overview")
prose(
    f"One square per head: rows are layers 1–{L}, columns heads 1–{H}, the last column their **mean**. The "
    f"head enlarged above, layer {layer_num}, head {head_num}, is row {layer_num}, column {head_num}. Look for "
    "a bright diagonal beside the main one (each word looks at its neighbour) and a bright first column "
    f"(everyone looks at {'[CLS]' if not enc.causal else escape_md(tokens[0])})."
)
if cache.computed("attn_pooled", fig_key, lambda: pool_attention(att[:1, :1], OVERVIEW_MAX_TOKENS).pooled):
    prose(caption=True, text=
        f"With {n} word pieces the small squares group neighbouring word pieces into {OVERVIEW_MAX_TOKENS} "
        "blocks (the attention of an average query in a block, so rows still add up to 1). The big heatmaps "
        "show every word piece."
    )

# ------------------------------------------------------------------------------------------- 3. target
st.header(f"What “{word}” looks at, and what looks at it")
use_mean = st.toggle(
    "Average over all heads",
    key="attn_target_mean",
    help=f"Off: only head {head_num}, the head chosen above.",
)
ta = cache.computed("attn_target", (*fig_key, tuple(tpos)), lambda: target_attention(att, tpos))
to_now = ta.attends_to_mean[layer] if use_mean else ta.attends_to[layer, head]
by_now = ta.attended_by_mean[layer] if use_mean else ta.attended_by[layer, head]
which = f"layer {layer_num}, mean over heads" if use_mean else f"layer {layer_num}, head {head_num}"
bars_title = f"The target {target_labels} in {which}"
chart(
    cache.shared_figure(
        "attn_target_bars",
        (*fig_key, tuple(tpos), bars_title),
        lambda: target_attention_bars(to_now, by_now, labels, tpos, title=bars_title),
    ),
    key="attn_target_bars",
)
others = [k for k in range(n) if k not in tpos]
if others:
    k_to = max(others, key=to_now.__getitem__)
    k_by = max(others, key=by_now.__getitem__)
    prose(
        f"In {which}, apart from itself, {target_labels} gives most attention to "
        f"{md_token(labels[k_to])} ({to_now[k_to]:.2f}), and the word piece that looks at it most is "
        f"{md_token(labels[k_by])} ({by_now[k_by]:.2f}). The target's bars are orange."
        + (
            " It is split into several word pieces: the top chart averages their rows, the bottom one adds up "
            "the attention landing on any of them."
            if len(tpos) > 1
            else ""
        )
    )
else:
    prose("This sentence has only the target itself (and special tokens) to look at.")
chart(
    cache.shared_figure(
        "attn_target_layers",
        (*fig_key, tuple(tpos)),
        lambda: target_attention_by_layer(ta.attends_to_mean, ta.attended_by_mean, labels),
    ),
    key="attn_target_layers",
)
prose(caption=True, text="The same two views for every layer (mean over heads): read a row to follow one layer.")

share = cache.computed(
    "attn_special",
    fig_key,
    lambda: special_token_share(att, tokens, encoding.special[i], ids=encoding.token_ids[i], roles=enc.special_roles),
)


def md_special(label: str) -> str:
    """A special token's text for Markdown: "[CLS]" as written (the glossary links it), anything else escaped."""
    return label if label in ("[CLS]", "[SEP]") else escape_md(label)


opening, closing = md_special(share.opening_label), md_special(share.closing_label)
st.subheader(
    f"Attention that goes to {share.opening_label}, {share.closing_label} and punctuation"
    if not enc.causal
    else f"Attention that goes to the start token {share.opening_label} and punctuation"
)
chart(
    cache.shared_figure("attn_special", fig_key, lambda: special_token_share_chart(share)), key="attn_special"
)
spec = share.cls_sep_mean
peak = int(np.argmax(spec))
if not enc.causal:
    prose(
        f"In layer {peak + 1}, **{spec[peak]:.0%}** of all attention in this sentence lands on {opening} and "
        f"{closing}, which carry no word. Clark et al. (2019) saw this in BERT and suggest a head with nothing to "
        f"find parks its attention there (a hypothesis). So a bright {opening} column is usually not a sign of "
        "meaning."
    )
else:
    st.subheader("The start token: where spare attention goes")
    if n < 3:
        st.info("This sentence is too short to show where later word pieces look: write a longer one.")
    else:
        own = cache.computed("attn_first_position", fig_key, lambda: first_position_share(att, causal=True))
        bert = cache.computed(  # the encoder's [CLS], on the same sentence
            "attn_first_position",
            (DEFAULT_MODEL, *fig_key[1:]),
            lambda: first_position_share(
                cache.sentence_attention(DEFAULT_MODEL, encoding.sentences[i]).attentions[0], causal=False
            ),
        )
        chart(
            cache.shared_figure(
                "attn_first_position",
                fig_key,
                lambda: first_position_chart(
                    [("decoder: start token", own.per_layer, own.uniform),
                     ("encoder: [CLS]", bert.per_layer, bert.uniform)],
                    title="Attention later word pieces give to position 0",
                ),
            ),
            key="attn_first_position",
        )
        half = L // 2
        lo, hi = float(own.per_layer[half:].min()), float(own.per_layer[half:].max())
        prose(
            f"Word pieces after the start token give it **{lo:.0%}–{hi:.0%}** of their attention on average in "
            f"layers {half + 1}–{L} of {escape_md(described(enc))} (even spread: {own.uniform:.0%}); the "
            f"encoder's [CLS] gets {bert.per_layer.min():.0%}–{bert.per_layer.max():.0%} per layer (even spread "
            f"{bert.uniform:.0%}). A head with nothing to find parks its weight on a piece that is always there "
            "(the **attention sink**): the encoder's [CLS], though every piece sees every other; here position 0, "
            "seen by every later piece"
            + (" and one vector in every sentence." if enc.sink is not None and enc.sink.token is not None
               else ".")  # fmt: skip
        )

# ------------------------------------------------------------------------------------------- 4. side by side
st.header("Two sentences, same layer and head")


def compare_side_by_side() -> None:
    """Sentence i's heatmap beside another sentence's at the chosen layer and head, and what the target looks at
    in each. Drawn only while its expander is open: every slider move re-creates each heatmap it shows (Streamlit
    keys a chart by its figure), and two more heatmaps, one of them the main one again, made a move slower than
    the 0.2 s a rerun should take."""
    auto = contrast_sentence_index(ss.senses, i)
    choices = [k for k in range(1, n_sent + 1) if k != s_num]
    if "_attn_compare_chosen" not in st.session_state:
        st.session_state["_attn_compare_chosen"] = link.url_has("attn_compare")
    # only with two sentences or more; by default a sentence where the target has another sense
    PARAMS.append(link.Param("attn_compare", "int", auto + 1, lo=1, hi=n_sent))
    link.init_params(PARAMS[-1:])
    if not st.session_state["_attn_compare_chosen"] or st.session_state.attn_compare not in choices:
        st.session_state.attn_compare = auto + 1

    compare = st.selectbox(
        "Compare with",
        options=choices,
        format_func=sentence_label,
        key="attn_compare",
        on_change=set_state,
        kwargs={"_attn_compare_chosen": True},
        help="By default a sentence where the target has a different sense.",
    )
    j = compare - 1
    tokens_b = encoding.tokens[j]
    key_b = (a.model, encoding.sentences[j], tuple(tokens_b), budget.MAX_PIECES_PER_SENTENCE)
    labels_b = cache.computed("attn_labels", key_b, lambda: token_labels(tokens_b))
    weights_b = cache.sentence_attention(a.model, encoding.sentences[j]).attentions[0][layer, head]
    tpos_b = list(tv.spans[j].token_indices)

    def title_for(k: int) -> str:
        sense = ss.senses[k]
        return f"Sentence {k + 1}" + (f" ({sense})" if sense else "")

    # two charts in two columns, not one figure of two panels: Streamlit stacks the columns on a phone, where two
    # heatmaps side by side in one figure were too narrow to read; both on the same fixed 0–1 scale
    left, right = st.columns(2)
    for col, k, key_k, w, labs, side in ((left, i, fig_key, weights, labels, "a"), (right, j, key_b, weights_b, labels_b, "b")):
        with col:
            chart(
                cache.shared_figure(
                    "attn_heatmap",
                    (*key_k, layer, head, title_for(k)),
                    lambda w=w, labs=labs, k=k: attention_heatmap(w, labs, title=title_for(k)),
                ),
                key=f"attn_side_{side}",
                share=0.5,
            )

    def top_other(w, key_k: tuple, pos: list[int], labs: list[str]) -> str:
        k, weight = cache.computed("attn_most_attended", (*key_k, layer, head, tuple(pos)), lambda: most_attended(w, pos))
        return f"{md_token(labs[k])} ({weight:.2f})"

    prose(
        f"At layer {layer_num}, head {head_num}, “{word}” in sentence {i + 1} looks most at "
        f"{top_other(weights, fig_key, tpos, labels)}, in sentence {j + 1} at "
        f"{top_other(weights_b, key_b, tpos_b, labels_b)}. "
        "The weights W_Q, W_K, W_V are the same for both sentences; only the words around the target differ"
        + (", and this left-to-right model lets the target see only the words before it." if enc.causal else ".")
    )


if n_sent < 2:
    st.info("Add a second sentence with the target word in the sidebar to compare two contexts here.")
else:
    if link.url_has("attn_compare") and COMPARE_BOX not in st.session_state:
        st.session_state[COMPARE_BOX] = True  # a link carries the sentence compared with only while this is open
    expander_while_open(
        "Side by side: this sentence and another one",
        compare_side_by_side,
        key=COMPARE_BOX,
        icon=":material/compare_arrows:",
    )

st.subheader("Why the target's vector changes with the context")
prose(
    "Q, K and V come from each word piece's *current* vector, which from layer 2 on already mixes in its "
    + ("neighbours" if not enc.causal else "earlier neighbours (a word sees no later word)")
    + "; the matrices are shared. So the same word gets a different mix in each sentence, layer after layer, and "
    "ends up with a different vector"
    + (" (as long as the words before it differ: what comes after cannot change it)." if enc.causal else ".")
)

# ------------------------------------------------------------------------------------------- 5. maths
st.header("From numbers to maths")
prose(
    f"The heatmap is arithmetic you can redo from the input of layer {layer_num}, the matrix H "
    f"({n} × {enc.hidden_size}) that "
    + ("the embedding step produced" if layer == 0 else f"layer {layer} produced")
    + ", and the layer's weights from the model file."
)
if llama_layout(enc):  # a Llama-style decoder: input normed first, queries and keys rotated by position, a mask
    b = ("+ b_Q", "+ b_K", "+ b_V") if projection_bias(enc) else ("", "", "")
    st.latex(  # short lines, so the formula fits a phone's width without a scroll bar
        rf"\begin{{aligned}} \hat H &= \operatorname{{RMSNorm}}(H),\quad V = \hat H W_V {b[2]} \\"
        rf"Q &= \operatorname{{rot}}(\hat H W_Q {b[0]}),\quad K = \operatorname{{rot}}(\hat H W_K {b[1]}) \\"
        r"\alpha &= \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) \\"
        r"M_{ij} &= -\infty \text{ for } j > i \text{ (a word sees no later word)} \end{aligned}"
    )
else:
    st.latex(  # one line each, so the formula fits a phone's width without a scroll bar
        r"\begin{aligned} Q &= H W_Q + b_Q,\quad K = H W_K + b_K,\quad V = H W_V + b_V \\"
        r"\alpha &= \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) \end{aligned}"
    )
try:  # the layer's input through the weights: once per sentence, layer and head
    rec = cache.computed(
        "attn_recomputed", (*fig_key, layer, head), lambda: recompute_attention(enc, att_encoding, 0, layer, head)
    )
except UnsupportedArchitectureError as err:
    st.info(escape_md(str(err)))
else:
    prose(
        f"{attention_columns(enc, head)}, so "
        f"d_k = {rec.d_k} and the scores are divided by √{rec.d_k} ≈ {rec.scale:.2f}; the softmax makes each row "
        "add up to 1."
    )
    m1, m2, m3 = st.columns(3)
    m1.metric("Largest difference from the model", f"{rec.max_abs_diff:.1e}")
    m2.metric("Rows × columns compared", f"{n} × {n}")
    summing = cache.computed("attn_rows_summing", (*fig_key, layer, head), rec.rows_summing_to_one)
    m3.metric("Rows adding up to 1", f"{summing} of {n}")
    prose(
        f"The recomputed weights match what the model returned to within **{rec.max_abs_diff:.1e}** "
        "everywhere: the tiny rest is rounding in the model's arithmetic."
    )
    q_row = qpos  # the target's own row: its vector's piece (the last one for a left-to-right model)

    def steps() -> pd.DataFrame:
        table = pd.DataFrame(
            {
                "key": labels,
                "q·k": rec.dot_products(q_row),
                "q·k / √d_k": rec.scores[q_row],
                "softmax (recomputed)": rec.weights[q_row],
                "the model's weight": rec.model_weights[q_row],
            }
        )
        return table if n <= 20 else table.nlargest(15, "softmax (recomputed)")

    prose(f"The target's row, {md_token(labels[q_row])}, step by step:")
    st.dataframe(
        cache.frame("attn_steps", (*fig_key, layer, head, q_row), steps),
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.4f") for c in STEP_COLUMNS},
    )
    if n > 20:
        prose(caption=True, text=f"The 15 largest of {n} weights in this row.")
    prose(caption=True, text=
        "Each new vector is then the mix Σⱼ αᵢⱼ Vⱼ, one head per slice, then the output projection, a residual "
        "and LayerNorm; then the feed-forward block on each word piece, with its own residual and LayerNorm. "
        "That is one layer (course §3.2)."
        if not enc.causal
        else "Each new vector is then the mix Σⱼ αᵢⱼ Vⱼ, the output projection and a residual, then the "
        f"feed-forward block; this model norms before each block ({'RMSNorm' if llama_layout(enc) else 'LayerNorm'})."
    )
try:
    st.page_link("pages/calculator.py", label="Do it by hand: the toy attention calculator", icon=":material/calculate:")
except StreamlitAPIException:
    prose(caption=True, text="Open “Attention by hand” in the sidebar to compute a small example step by step.")

link.sync_params(PARAMS)
