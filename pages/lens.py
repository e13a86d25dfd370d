"""Logit lens (decoder only): the target's vector after every layer read through the model's final norm and head.

lib.models.lens.logit_lens does the reading (cached per sentence and words in ui.cache.logit_lens); with an
encoder the page says why it cannot and links to the same view with the decoder.
"""

from collections import Counter
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from lib.charts.lens import lens_word_chart
from lib.models.facts import described
from lib.models.keys import DECODER_MODEL
from lib.models.lens import LensError, probability_text, shown_token
from lib.models.pack import DESCRIPTION
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
if not model.causal:  # no next-word head to read through
    params = {**session.shared_params(), "model": DECODER_MODEL}
    params.pop("weights", None)
    params.pop("seed", None)
    prose(
        f"The model in use, {escape_md(session.model_display())}, reads **{model.reads}**"
        + (f": it was trained to fill in hidden words ({escape_md(model.mask_token)}) from both sides" if model.mask_token else "")
        + ", and has no head that guesses the next word, so there is nothing for a logit lens to read. The lens "
        "needs a **decoder**, a model that reads left to right."
    )
    st.markdown(f"[Open this page with the decoder ({DESCRIPTION})](lens?{urlencode(params)})")
    st.stop()

a = analysis(min_sentences=1)
ss, tv = a.set, a.vectors
n_sent = len(ss)
enc = a.encoder

PARAMS = [
    link.Param("lens_sentence", "int", 1, lo=1, hi=n_sent),
    # empty: follow the model's own top guesses at its last layer (words it may predict next, not sense labels)
    link.Param("lens_words", "text", "", max_chars=MAX_WORDS_TEXT, omit_default=True),
]
link.init_params(PARAMS)
c_sent, c_words = st.columns([3, 2])
s_num = sentence_picker(c_sent, ss, "lens_sentence")
words_text = c_words.text_input(
    "Words to follow (commas between)",
    key="lens_words",
    max_chars=MAX_WORDS_TEXT,
    help="Each word's probability as the next word after the target, at every layer, e.g. of, and. Leave it "
    "empty to follow the model's own three top guesses after its last layer.",
    placeholder="empty: the model's own top guesses",
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
middle = Counter(lens.top_tokens[k][0] for k in range(1, L))  # the top guess of each layer between input and last
common, times = middle.most_common(1)[0]
own_piece = int(tv.encoding.token_ids[i][span.vector_indices[-1]])
prose(
    f"After the last layer ({L}), {escape_md(described(enc))} guesses “{escape_md(shown_token(final_tok))}” with "
    f"probability **{probability_text(final_p)}**: exactly its own next-word output. "
    + (f"That guess is on top from layer {settled} on. " if settled < L else "No earlier layer puts it on top. ")
    + "The lens is a readout, not what a layer “thinks”: the head was trained on the last layer's vectors, and a "
    "layer may hold more than this head can read. Yet the middle layers' readings are not noise to dismiss: "
    f"between the input and the last layer the commonest top guess is “{escape_md(shown_token(common))}” "
    f"({times} of {L - 1} layers), and the chart below follows the last layer's own guesses down the layers."
    + (
        f" Layer 0 reads the word itself (“{escape_md(shown_token(lens.top_tokens[0][0]))}” "
        f"{probability_text(lens.top_probs[0][0])}): this model's output head is its input embedding table (tied "
        "embeddings), so the input vector, a row of that table, scores highest against itself."
        if enc.tied_output_head and own_piece in {int(x) for x in lens.top_ids[0, :2]}
        else ""
    )
)

# ------------------------------------------------------------------------------------------- 2. named words
st.header("Its last layer's guesses, layer by layer" if lens.follows_top else "The words you name")
shown_words = [shown_token(w) if lens.follows_top else w for w in lens.words]
chart(
    cache.shared_figure(
        "lens_words",
        (*view, span.word),
        lambda: lens_word_chart(lens.word_probs, shown_words, lens.top_probs[:, 0],
                                title=f"Probability as the next word after “{span.word}”"),
    ),  # fmt: skip
    key="lens_words_chart",
)
parts = []
for k, w in enumerate(shown_words):
    peak = int(lens.word_probs[:, k].argmax())
    parts.append(
        f"“{escape_md(w)}” is {probability_text(lens.word_probs[L, k])} after the last layer (highest at "
        f"layer {peak}: {probability_text(lens.word_probs[peak, k])})"
    )
together = lens.word_probs.sum(axis=1)
mid = L // 2
converge = (
    f"the guesses converge: together they take {probability_text(together[mid])} at layer {mid} and "
    f"{probability_text(together[L - 1])} at layer {L - 1}"
    if together[L - 1] > together[mid]
    else f"here they do not build up: together they take {probability_text(together[mid])} at layer {mid} and "
    f"{probability_text(together[L - 1])} at layer {L - 1}"
)
prose(
    (f"The lines follow the three pieces the model guesses after its last layer (name your own words above); {converge}. "
     if lens.follows_top else "")  # fmt: skip
    + "; ".join(parts) + ". The dotted grey line is the top guess, for scale; a probability below one in ten "
    "million is drawn on the bottom line."
)
if not lens.follows_top:
    split = [escape_md(w) for w, s in zip(lens.words, lens.word_split, strict=True) if s]
    if split:
        prose(
            caption=True,
            text="Read as their first word piece only (the model spells them in several): " + ", ".join(split) + ".",
        )

link.sync_params(PARAMS)
