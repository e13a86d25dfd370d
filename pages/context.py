"""What moves the word: mask each context word in turn, or edit the sentence, and watch the target respond.

The maths is lib/stats/context.py (occlusion, attention vs effect, sense centroids); the occlusion of a sentence
is cached per (model, sentence, replacement) in ui/cache/; the figures are lib/charts/context.py. What the page
reads from an occlusion for one view, and its charts, are made once per view (ui.analysis.Analysis.computed and
.figure): a rerun that changes nothing finds them.
"""

import html

import numpy as np
import pandas as pd
import streamlit as st

from lib.charts.context import (
    attention_vs_shift,
    correlation_by_layer,
    edit_by_layer,
    shift_bars,
    shift_strip,
)
from lib.charts.layers import layer_names
from lib.models.attention import shown_token
from lib.models.facts import hide_verb, layer_zero_holds, replacement_choices, unknown_piece
from lib.models.targets import TargetError, find_target
from lib.stats.context import (
    MAX_PIECES,
    MAX_WORDS,
    ContextError,
    attention_effect_correlation,
    check_replacement,
    edit,
    layer_cosines,
    mark,
)
from lib.stats.context_senses import (
    pull_notes,
    sense_centroids,
    sense_flip,
    sense_pull,
    suggested_swaps,
    top_content_word,
)
from ui import cache, link, session
from ui.analysis import analysis
from ui.session import model_display
from ui.widgets import chart, escape_md, page_intro, prose, sentence_picker, set_state

REPLACE_KEYS = ("mask", "unk", "delete")  # what a link's ctx_replace may say; the model decides what is offered
MAX_TYPED = 300

st.title("What moves the word")
_intro_model, _ = cache.try_encoder(session.model_name())  # the intro says how this model hides a word
_mask = getattr(_intro_model, "mask_token", None) if _intro_model is not None else "[MASK]"
page_intro(
    "context",
    how=(
        f"And a masked word is not an absent one: {_mask} is the word piece this model was pre-trained to fill "
        "in from the words on both sides (masked language modelling), so it reads it as a word to guess, and the "
        "guess moves its neighbours too. The table under the bars puts the shift with the word masked beside the "
        "shift with it deleted, and how far the word pulls the target towards its sense."
        if _mask
        else "This model was never taught a mask token, so a word is hidden by deleting it: the words after it move "
        "one place to the left (and the target with them, when the word came before it). The table under the "
        "bars puts each word's shift beside how far it pulls the target towards its sense."
    ),
)

a = analysis(min_sentences=1)
ss, tv, enc = a.set, a.vectors, a.encoder
unk = unknown_piece(enc.tokenizer)  # the tokenizer's unknown-word piece, None for a byte-level one
offered = replacement_choices(enc)
REPLACEMENTS = {"mask": f"{enc.mask_token} (each word piece)", "unk": f"{unk} (each word piece)", "delete": "nothing (delete it)"}
REPLACEMENT_TEXT = {"mask": None, "unk": unk, "delete": ""}
DONE = {"mask": "masked", "unk": f"replaced by {unk}", "delete": "deleted"}
L = enc.num_layers
names = layer_names(L)
n_sent = len(ss)
target_word = ss.target or None


def q(text: str) -> str:
    return f"“{escape_md(text)}”"


# ------------------------------------------------------------------------------------------- widgets
# every parameter of the page, declared once: its initial value, its bounds and its place in the URL follow
PARAMS = [
    link.Param("ctx_sentence", "int", 1, lo=1, hi=n_sent),
    link.Param("ctx_layer", "int", L, lo=0, hi=L),
    link.Param("ctx_replace", "choice", "mask", choices=REPLACE_KEYS),
    link.Param("ctx_own", "text", "", max_chars=MAX_TYPED, omit_default=True),
]
link.init_params(PARAMS)
c_sent, c_layer = st.columns([3, 1])
s_num = sentence_picker(c_sent, ss, "ctx_sentence")
layer = c_layer.slider(
    "Layer", 0, L, key="ctx_layer", help=f"0 = {enc.layer_zero}, before any attention; {L} = last."
)
# a link (or another model) may ask for an edit this model cannot make, e.g. "mask" without a mask token: the
# page uses the model's own way and keeps the request, so the link still says it and another model honours it
asked = st.session_state.get("_ctx_replace_asked") or st.session_state.get("ctx_replace")
if asked in offered:
    st.session_state["ctx_replace"] = asked
    st.session_state["_ctx_replace_asked"] = None
else:
    st.session_state["ctx_replace"] = hide_verb(enc)
    chosen = link.url_has("ctx_replace") or st.session_state.get("_ctx_replace_asked")
    st.session_state["_ctx_replace_asked"] = asked if chosen else None
c_own, c_rep = st.columns([3, 1])
own = c_own.text_input(
    "Or type a sentence of your own",
    key="ctx_own",
    max_chars=MAX_TYPED,
    help=f"Leave empty to use the sentence above. The target is the first “{escape_md(ss.target)}”, or mark another "
    f"word in [brackets]. At most {MAX_WORDS} words and {MAX_PIECES} word pieces.",
)
rep_key = c_rep.selectbox(
    "Replace each word by",
    options=list(offered),
    format_func=REPLACEMENTS.get,
    key="ctx_replace",
    on_change=set_state,
    kwargs={"_ctx_replace_asked": None},
)
if st.session_state.get("_ctx_replace_asked"):
    prose(caption=True, text=
        f"{escape_md(model_display(a.model))} was never taught "
        + ("a mask token" if asked == "mask" else "to read a word as unknown")
        + f", so each word is {DONE[rep_key]} instead."
    )
own = " ".join(own.split())
i = None if own else s_num - 1
sentence = own or ss.sentences[i]
own_sense = None if i is None else ss.senses[i]


def centroids():
    """Each sense's mean target vector in the set, without sentence ``i`` (None without senses); once per set."""
    if not ss.has_senses:
        return None
    return a.computed("ctx_centroids", i, compute=lambda: sense_centroids(tv.vectors, ss.senses, exclude=i))


try:
    occ = cache.occlusion(a.model, sentence, target_word, REPLACEMENT_TEXT[rep_key])
except ContextError as err:
    st.warning(escape_md(str(err)))
    st.stop()
except TargetError as err:
    st.error(escape_md(str(err)))
    st.stop()

view = (sentence, target_word, rep_key)  # what the occlusion on screen is made from (with the set: a.key)
word = escape_md(occ.target)
t_html = html.escape(occ.target, quote=False)  # plotly titles read a little HTML
where = "layer 0 (input)" if layer == 0 else f"layer {layer}"
n_words = len(occ.words)
shift_now = occ.shift[layer]
att_layer = max(layer, 1)  # attention exists in layers 1..L; layer 0 has none
what = {"mask": "masking", "unk": f"replacing by {unk}", "delete": "deleting"}[rep_key]

# ------------------------------------------------------------------------------------------- 1. ranking
st.header(f"Which word moves “{word}”?")
ts, te = occ.target_span
marked_md = f"{escape_md(occ.sentence[:ts])}**{word}**{escape_md(occ.sentence[te:])}"
prose(caption=True, text=
    f"The sentence as the model reads it, {n_words} context word(s) and the target in bold: {marked_md}"
)
chart(
    a.figure(
        "ctx_bars",
        *view,
        layer,
        build=lambda: shift_bars(
            occ.words,
            shift_now,
            occ.attention[layer - 1] if layer >= 1 else None,
            title=f"How far “{t_html}” moves at {where}<br>when each word is {DONE[rep_key]}",
            edit=DONE[rep_key],
        ),
    ),
    key="ctx_bars",
    download="context_lens_what_moves_the_word",
)
order = a.computed("ctx_ranking", *view, layer, compute=lambda: occ.ranking(layer))
top, low = int(order[0]), int(order[-1])
if layer == 0 and rep_key != "delete":
    prose(
        f"At layer 0 nothing has moved: the target's vector holds {layer_zero_holds(enc)}, and {what} another word "
        f"keeps every position. The context reaches “{word}” only through attention, from layer 1 on. Move the "
        "layer slider to the right."
    )
else:
    prose(
        f"At {where}, {what} {q(occ.words[top])} moves “{word}” most "
        f"(shift **{shift_now[top]:.3f}**, i.e. cosine {1 - shift_now[top]:.3f} with the original), and "
        f"{what} {q(occ.words[low])} least ({shift_now[low]:.3f}). On the right, in the same rows, the "
        "target's attention to each word in the same layer (mean over heads): compare the two orders in section 2."
    )
    # the five words that move the target most, masked beside deleted (a [MASK] is itself a word piece the
    # model reads), and, with sense labels, how far each pulls the target towards its own sense
    shown_words = [int(k) for k in order[:5]]
    columns = {}
    by = {}
    for key in [k for k in ("unk", "mask", "delete") if k in offered and (k != "unk" or rep_key == "unk")]:
        try:
            by[key] = occ if key == rep_key else cache.occlusion(a.model, sentence, target_word, REPLACEMENT_TEXT[key])
        except (ContextError, TargetError):
            continue
        columns[f"shift, {DONE[key]}"] = [f"{by[key].shift[layer, k]:.3f}" for k in shown_words]
    sense_cents = centroids() if own_sense else None
    if sense_cents is not None and own_sense in sense_cents.names:
        pull = a.computed("ctx_pull", *view, layer, i, compute=lambda: sense_pull(occ, sense_cents, own_sense, layer))
        columns[f"pull towards “{escape_md(own_sense)}” (+: towards)"] = [f"{pull[k]:+.3f}" for k in shown_words]
    st.table(  # cells read Markdown
        cache.frame(
            "ctx_words",
            (*a.key, *view, layer, i),
            lambda: pd.DataFrame(columns, index=[escape_md(occ.words[k]) for k in shown_words]),
        ),
        hide_index=False,
    )
    said = []
    if "mask" in by and "delete" in by:
        m, d = by["mask"].shift[layer], by["delete"].shift[layer]
        k = min(shown_words, key=lambda j: d[j] / m[j] if m[j] > 0 else np.inf)  # the most of it the [MASK] itself
        said.append(
            f"Deleting {q(occ.words[k])} moves “{word}” {d[k]:.3f}, masking it {m[k]:.3f}: the rest is the "
            "[MASK] itself (deleting also moves the later words one place)."
            if d[k] < m[k]
            else f"Here deleting each of these words moves “{word}” at least as far as masking it."
        )
    if sense_cents is not None and own_sense in sense_cents.names:
        said.append(
            f"The pull is the target's margin (cosine with the “{escape_md(own_sense)}” average minus the nearest "
            f"other sense's) in the full sentence minus with the word {DONE[rep_key]}: positive means the word "
            "pulled the target towards its sense."
        )
        said += a.computed(
            "ctx_pull_notes",
            *view,
            layer,
            i,
            compute=lambda: pull_notes(occ, pull, shown_words, own_sense, rep_key == "delete", causal=enc.causal,
                                       layer=layer, quote=q),
        )  # fmt: skip
    changed = [k for k in shown_words if occ.target_changed and occ.target_changed[k]]
    if changed:
        said.append(
            f"{what.capitalize()} {q(occ.words[changed[0]])} changes “{word}” itself: without it the tokenizer reads "
            f"the target as another word piece ({escape_md(' + '.join(shown_token(occ.tokens[p]) for p in occ.target_pieces))} "
            "in the full sentence), so that shift measures another piece, not only a missing word."
        )
    if said:
        prose(" ".join(said), caption=True)
after = occ.after_target
if enc.causal and after:
    change = a.computed("ctx_after", *view, compute=lambda: occ.after_target_change)
    later = float(occ.shift[:, list(after)].max())
    prose(
        f"{what.capitalize()} any of the **{len(after)}** word{'s' if len(after) != 1 else ''} after “{word}” moves it by "
        + ("**exactly 0** at every layer (the largest change of any of its numbers: 0.0)." if change == 0.0 else
           f"nothing but rounding at every layer (a shift of at most {later:.0e}: the edited sentences run through "
           "the model together, and a batch's arithmetic rounds a little differently).")
        + f" When the model made the vector of “{word}” it had not read those "
        "words yet (it reads left to right): the causal mask hides every later word, so nothing after the target "
        "can reach it."
    )
chart(
    a.figure(
        "ctx_strip", *view, build=lambda: shift_strip(occ.words, occ.shift, names, title="Every word at every layer, in sentence order")
    ),
    key="ctx_strip",
)
# the word with the largest effect at the last layer, and the layer where it reaches half of it
k_top, start = a.computed(
    "ctx_top", *view, compute=lambda: (k := int(occ.ranking(occ.num_layers)[0]), occ.half_effect_layer(k))
)
prose(
    f"Read a column upwards to see where a word starts to matter. {q(occ.words[k_top])}, the word with "
    f"the largest effect at the last layer, reaches half of it at layer {start}."
)
st.download_button(
    "Download the shifts and attentions (CSV)",
    data=occ.to_csv,  # made when the button is pressed
    file_name="context_lens_what_moves_the_word.csv",
    mime="text/csv",
    key="ctx_csv",
    on_click="ignore",
)

# ------------------------------------------------------------------------------------------- 2. attention
st.header("Attention vs effect")
over = occ.before_target if enc.causal else None  # later words: no attention, no effect, a tie at 0 on both sides
rho = a.computed("ctx_rho", *view, compute=lambda: attention_effect_correlation(occ, over))
prose(f"**Does “{word}” attend most to the words that move it?**")
# two charts in two columns: side by side on a laptop or projector, one under the other on a phone
left, right = st.columns([3, 2], gap="medium")
with left:
    seen = list(over) if over is not None else list(range(n_words))  # the words the target can see
    chart(
        a.figure(
            "ctx_attention",
            *view,
            att_layer,
            build=lambda: attention_vs_shift([occ.words[j] for j in seen], occ.attention[att_layer - 1, seen],
                                             occ.shift[att_layer, seen], layer=att_layer, edit=DONE[rep_key]),  # fmt: skip
        ),
        key="ctx_attention",
        share=0.6,
    )
with right:
    chart(
        a.figure("ctx_correlation", *view, att_layer, build=lambda: correlation_by_layer(rho, layer=att_layer)),
        key="ctx_correlation",
        share=0.4,
    )
r_now = rho[att_layer - 1]
if np.isfinite(r_now):
    prose(
        f"At layer {att_layer}, the rank correlation between the target's attention to a word and the shift "
        f"caused by {what} it is **ρ = {r_now:.2f}** (Spearman: 1 = same order, 0 = unrelated, −1 = "
        f"reversed). Over the layers it ranges from {np.nanmin(rho):.2f} to {np.nanmax(rho):.2f}."
        + (f" Only the {len(over)} word(s) before “{word}” count: it neither looks at nor is moved by a later word."
           if over is not None else "")  # fmt: skip
    )
else:
    prose(
        "A rank correlation needs at least three context words with different values; this sentence has too few."
    )
st.info(
    "Attention weights are not an explanation by themselves. Jain & Wallace (2019, “Attention is not "
    "Explanation”) found that attention often disagrees with other measures of importance; Wiegreffe & "
    "Pinter (2019, “Attention is not not Explanation”) showed it can still carry signal, if tested. "
    "The shift above *is* such a test: it measures what removing a word does, while attention only says "
    "where one layer looked (a word can also reach the target indirectly, through other word pieces)."
)

# ------------------------------------------------------------------------------------------- 3. edit
st.header("Edit the context")
SWAP_SENTENCES = 3  # per other sense: the suggestions come from the first few sentences of each
others = []
if ss.has_senses:
    for sense in [x for x in ss.sense_names if x != own_sense][:4]:
        for s_other in [t for t, x in zip(ss.sentences, ss.senses, strict=True) if x == sense][
            :SWAP_SENTENCES
        ]:
            try:
                others.append((sense, cache.occlusion(a.model, s_other, target_word, None)))
            except (TargetError, ContextError):
                continue
swaps, k_edit = a.computed(
    "ctx_swaps",
    *view,
    own_sense,
    compute=lambda: (suggested_swaps(occ, others, target=target_word), top_content_word(occ, target_word)),
)
k_edit = k_top if k_edit is None else k_edit
sent_key = (occ.sentence, occ.target_span)
if st.session_state.get("_ctx_for") not in (None, sent_key):  # another sentence: start the edit afresh
    st.session_state["ctx_word"] = k_edit + 1
    st.session_state["ctx_with"] = ""
    st.session_state["ctx_edited"] = ""
st.session_state["_ctx_for"] = sent_key
# the edit's parameters: their bounds and default follow the sentence
PARAMS += [
    link.Param("ctx_word", "int", k_edit + 1, lo=1, hi=n_words),
    link.Param("ctx_with", "text", "", max_chars=40, omit_default=True),
    link.Param("ctx_edited", "text", "", max_chars=MAX_TYPED, omit_default=True),
]
link.init_params(PARAMS[-3:])


if swaps:
    prose("Suggested swaps, with words from the other senses' sentences:")
    cols = st.columns(len(swaps))
    for c, (k, sw) in zip(cols, enumerate(swaps), strict=True):
        c.button(
            escape_md(f"{sw.word} → {sw.replacement}"),
            key=f"ctx_swap_{k}",
            on_click=set_state,
            kwargs={"ctx_word": sw.index + 1, "ctx_with": sw.replacement, "ctx_edited": ""},
            help=f"“{escape_md(sw.replacement)}” comes from a “{escape_md(sw.sense)}” sentence.",
            width="stretch",
        )
c_word, c_with = st.columns(2)
word_num = c_word.selectbox(
    "Word to change",
    options=list(range(1, n_words + 1)),
    format_func={k: f"{k} · {occ.words[k - 1]}" for k in range(1, n_words + 1)}.get,
    key="ctx_word",
)
with_raw = c_with.text_input("Replace it with (leave empty to delete it)", key="ctx_with", max_chars=40)
typed = st.text_input(
    "Or type the whole edited sentence",
    key="ctx_edited",
    max_chars=MAX_TYPED,
    help="Overrides the word and replacement above. Keep the target (or mark it in [brackets]).",
)
j = word_num - 1
typed = " ".join(typed.split())
try:
    if typed:
        span = find_target(typed, target_word)
        edited = mark(span.sentence, span.start, span.end)
        change = f"the sentence becomes “{escape_md(span.sentence)}”"
    else:
        with_text = check_replacement(with_raw)
        edited, span = edit(occ.sentence, occ.target_span, occ.spans[j], with_text)
        change = f"{q(occ.words[j])} becomes {q(with_text)}" if with_text else f"{q(occ.words[j])} is deleted"
    tv_edit = cache.target_vectors(a.model, (edited,), None)
    if not len(tv_edit.kept):
        raise TargetError(tv_edit.problems[0] if tv_edit.problems else "The target was not found.")
except (TargetError, ContextError) as err:
    st.warning(escape_md(str(err)))
    tv_edit = None

if tv_edit is not None:
    v_edit = tv_edit.vectors[0]
    cents = centroids()

    def compare_edit():
        cos = layer_cosines(occ.base, v_edit[None])[:, 0]  # (L + 1,)
        return cos, cents.nearest(occ.base) if cents else None, cents.nearest(v_edit) if cents else None

    cos, before, after = a.computed("ctx_edit", *view, i, edited, compute=compare_edit)
    chart(
        a.figure(
            "ctx_edit",
            *view,
            i,
            edited,
            build=lambda: edit_by_layer(
                cos, names, before, after, cents.names if cents else (), title=f"“{t_html}” after the edit"
            ),
        ),
        key="ctx_edit",
    )
    prose(
        f"When {change}, the target's vector at the last layer has cosine **{cos[-1]:.3f}** with the original "
        f"(lowest: {cos.min():.3f} at layer {int(np.argmin(cos))})."
    )
    if cents is not None:
        flip = sense_flip(before, after)
        if flip is not None:
            prose(
                f"**The sense flips** from {q(before[-1])} to {q(after[-1])} at layer {flip} when {change}: "
                f"from layer {flip} on, the edited “{word}” is nearest to the average “{after[-1]}” vector of "
                "the set."
            )
        else:
            prose(
                f"The nearest sense at the last layer stays {q(before[-1])}. Try a stronger word from another "
                "sense, or change more of the sentence."
            )
        prose(caption=True, text=
            "Sense averages (centroids) are the mean target vector of each sense in the current set"
            + (", leaving out this sentence itself." if i is not None else ".")
        )
        st.dataframe(
            cache.frame(
                "ctx_edit",
                (*a.key, *view, i, edited),
                lambda: pd.DataFrame(
                    {
                        "layer": names,
                        "cosine with the original": cos,
                        "nearest sense (original)": before,
                        "nearest sense (edited)": after,
                    }
                ),
            ),
            hide_index=True,
            column_config={"cosine with the original": st.column_config.NumberColumn(format="%.4f")},
        )
    else:
        prose(caption=True, text=
            "Label the sentences with senses (“sense | sentence”) to see which sense the edited word is nearest to."
        )

link.sync_params(  # as read, spaces folded; an edit this model cannot make stays in the link as asked
    PARAMS, {"ctx_own": own, "ctx_edited": typed, "ctx_replace": st.session_state.get("_ctx_replace_asked") or rep_key}
)
