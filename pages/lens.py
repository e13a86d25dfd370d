"""Logit lens (decoder only): the target's vector after every layer read through the model's final norm and head.

lib.models.lens.logit_lens does the reading (cached per sentence and words in ui.cache.logit_lens); with an
encoder the page says why it cannot and links to the same view with the decoder.
"""

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from lib.charts.lens import lens_word_chart
from lib.models.keys import DECODER_MODEL
from lib.models.lens import LensError, probability_text, shown_token
from ui import cache, link, session
from ui.analysis import analysis
from ui.widgets import chart, escape_md, page_intro, prose, sentence_picker

MAX_WORDS_TEXT = 120

st.title("Logit lens")
page_intro("lens")

model_name = session.model_name()
model, load_error = cache.try_encoder(model_name)
if model is None:
    st.error(escape_md(load_error or "The model could not be loaded."))
    st.stop()
if model.family != "decoder":
    params = {**session.shared_params(), "model": DECODER_MODEL}
    params.pop("weights", None)
    params.pop("seed", None)
    prose(
        f"The model in use, {escape_md(session.model_display())}, is an **encoder**: it was trained to fill in "
        "hidden words from both sides, and has no head that guesses the next word, so there is nothing for a "
        "logit lens to read. The lens needs a **decoder**, a model that reads left to right."
    )
    st.markdown(f"[Open this page with the decoder (a 4-bit copy of SmolLM2)](lens?{urlencode(params)})")
    st.stop()

a = analysis(min_sentences=1)
ss, tv = a.set, a.vectors
n_sent = len(ss)
default_words = ", ".join(dict.fromkeys(s for s in ss.senses if s)) if ss.has_senses else ""

PARAMS = [
    link.Param("lens_sentence", "int", 1, lo=1, hi=n_sent),
    link.Param("lens_words", "text", default_words, max_chars=MAX_WORDS_TEXT, omit_default=True),
]
link.init_params(PARAMS)
c_sent, c_words = st.columns([3, 2])
s_num = sentence_picker(c_sent, ss, "lens_sentence")
words_text = c_words.text_input(
    "Words to follow (commas between)",
    key="lens_words",
    max_chars=MAX_WORDS_TEXT,
    help="Each word's probability as the next word after the target, at every layer, e.g. river, account.",
)
i = s_num - 1
words = tuple(w.strip() for w in words_text.split(",") if w.strip())
span = tv.spans[i]
sentence = tv.encoding.sentences[i]
try:
    lens = cache.logit_lens(a.model, sentence, ss.target, words, tv.vectors[i])
except LensError as err:
    st.warning(escape_md(str(err)))
    link.sync_params(PARAMS)
    st.stop()

L = lens.num_hidden_states - 1
word = escape_md(span.word)
before = escape_md(sentence[: span.end])
after = escape_md(sentence[span.end :])
prose(
    caption=True,
    text=f"Sentence {s_num}: the lens reads “{word}” (its last word piece, the one that has seen the whole word) "
    "and guesses what follows "
    f"**{before}** … (the sentence goes on: “{after.strip()}”).",
)

# ------------------------------------------------------------------------------------------- 1. top guesses
st.header("The top guesses after each layer")
view = (a.model, sentence, ss.target, words)  # what the lens on screen is made from (ui.cache.logit_lens)


def guesses() -> pd.DataFrame:
    rows = {
        ("input" if k == 0 else f"layer {k}"): ", ".join(
            f"“{shown_token(t)}” {probability_text(p)}"
            for t, p in zip(lens.top_tokens[k][:3], lens.top_probs[k][:3], strict=True)
        )
        for k in range(L + 1)
    }
    return pd.DataFrame({"top 3 next words (probability)": rows})


st.dataframe(cache.frame("lens_guesses", view, guesses), width="stretch", height=360)
st.caption("“␣” is the space a word piece starts with: “␣bank” (a word of its own) and “bank” (joined to what "
           "comes before it) are two different pieces of the model's vocabulary.")  # fmt: skip
final_tok, final_p = lens.top_tokens[L][0], float(lens.top_probs[L][0])
settled = lens.settled_from
prose(
    f"After the last layer ({L}), this 4-bit copy of SmolLM2 guesses “{escape_md(shown_token(final_tok))}” with "
    f"probability **{probability_text(final_p)}**: exactly its own next-word output. "
    + (f"That guess is on top from layer {settled} on. " if settled < L else "No earlier layer puts it on top. ")
    + "Read the early layers' guesses as noise, however plausible a word among them looks. The head was trained "
    "only on the last layer's vectors; earlier vectors live in other directions of the space, and what a "
    "layer knows may be there in a form this head cannot read. The lens is a readout, not what the layer "
    "“thinks”."
)

# ------------------------------------------------------------------------------------------- 2. named words
st.header("The words you name")
if not words:
    prose("Name a few words above (e.g. river, account) to follow their probability layer by layer.")
else:
    chart(
        cache.shared_figure(
            "lens_words",
            (*view, span.word),
            lambda: lens_word_chart(lens.word_probs, list(lens.words), lens.top_probs[:, 0],
                                    title=f"Probability as the next word after “{span.word}”"),
        ),  # fmt: skip
        key="lens_words_chart",
    )
    parts = []
    for k, w in enumerate(lens.words):
        peak = int(lens.word_probs[:, k].argmax())
        parts.append(
            f"“{escape_md(w)}” is {probability_text(lens.word_probs[L, k])} after the last layer (highest at "
            f"layer {peak}: {probability_text(lens.word_probs[peak, k])})"
        )
    prose(
        "; ".join(parts) + ". The dotted grey line is the top guess, for scale; a probability below one in ten "
        "million is drawn on the bottom line."
    )
    split = [escape_md(w) for w, s in zip(lens.words, lens.word_split, strict=True) if s]
    if split:
        prose(
            caption=True,
            text="Read as their first word piece only (the model spells them in several): " + ", ".join(split) + ".",
        )

link.sync_params(PARAMS)
