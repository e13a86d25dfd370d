"""Every page and every lesson step, rendered once with each model: every sentence true for the model on screen.

The encoder (all-MiniLM-L6-v2) and the decoder (a 4-bit copy of SmolLM2-135M-Instruct) each render every page of
app.py and every step of the guided lesson once (AppTest, the real models, shared by the module through ui.cache);
the tests then read what each screen says:

* on the decoder's screens no sentence made for an encoder: layer 0 with a position or a segment, [MASK] or [UNK]
  offered, a word's vector as the mean of its pieces, a [CLS] readout (a sentence naming [CLS] must set the
  encoder beside the decoder, as the Attention page's comparison does, or say there is none);
* on every screen no separation claimed while the same screen's readout is within chance;
* the numbers these sentences rest on, recomputed here with numpy from the models' own arrays.

The Fine-tune page is rendered (it must not fail) but its prose is the fine-tuning code's; the glossary describes
both kinds of model on purpose and is left out of the encoder-only check.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from lib.inputs.presets import preset_by_id
from lib.models import DECODER_MODEL, DEFAULT_MODEL
from tests.browser._browser import app_pages
from tests.conftest import page_test, seed

pytestmark = pytest.mark.slow

# every page of app.py (a new page is checked without being named here); the lesson's steps one by one below
PAGES = tuple(Path(path).stem for path, _title, _default in app_pages() if Path(path).stem != "lesson")
MODELS = {"encoder": DEFAULT_MODEL, "decoder": DECODER_MODEL}
TEXT = ("markdown", "caption", "header", "subheader", "title", "info", "warning", "success", "error")
WIDGETS = ("selectbox", "radio", "slider", "text_input", "checkbox", "toggle", "button", "multiselect")


def screen_text(at) -> str:
    """What a run put on screen, one element a line: its text, its tables, its widgets' labels and options;
    glossary links read as their text and Markdown escapes as the characters."""
    out: list[str] = []

    def walk(node) -> None:
        for child in getattr(node, "children", {}).values():
            walk(child)
        kind = getattr(node, "type", "")
        if kind in TEXT:
            out.append(str(node.value))
        elif kind in ("table", "dataframe"):
            out.append(node.value.to_string())
        elif kind in WIDGETS:
            out.append(f"{getattr(node, 'label', '')}: {getattr(node, 'options', '')}")

    walk(at.main)
    text = "\n".join(out)
    text = re.sub(r"\[(\[[^\]]*\]|[^\]]*)\]\(glossary#[^)]*\)", r"\1", text)
    return re.sub(r"\\([-.()\[\]*_:!#|+])", r"\1", text)


def _render(page: str, model: str, **params) -> str:
    at = page_test(f"pages/{page}.py", model=model, **params)
    at.run(timeout=1800)
    assert not at.exception, (page, model, params, [e.value for e in at.exception])
    return screen_text(at)


def _steps() -> int:
    from lib.teaching.lesson import STEPS

    return len(STEPS)


SCREENS = [*PAGES, *(f"lesson{k}" for k in range(1, _steps() + 1))]
_SHOWN: dict[tuple[str, str], str] = {}  # each screen rendered once in the module, then read by every test


OPENED = {"layers": {"layers_card_box": True}}  # a page's expanders that compute only while open


def screen(kind: str, name: str) -> str:
    """The text of page ``name`` (or lesson step ``lesson<k>``) with model ``kind``, rendered on first use."""
    if (kind, name) not in _SHOWN:
        if name.startswith("lesson"):
            _SHOWN[kind, name] = _render("lesson", MODELS[kind], lesson_step=int(name[len("lesson"):]))
        else:  # with the pages' expanders open, so what they say is read too
            _SHOWN[kind, name] = _render(name, MODELS[kind], **OPENED.get(name, {}))
    return _SHOWN[kind, name]


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?:])\s+|\n", text) if s.strip()]


# What a sentence made for an encoder says; none may stand on the decoder's screen (whatever its page)
ENCODER_ONLY = {
    "layer 0 with a segment": re.compile(r"\bsegment", re.IGNORECASE),
    "layer 0 with a position": re.compile(r"word piece(,| and) (its )?position", re.IGNORECASE),
    "[MASK] offered or used": re.compile(r"\[MASK\]"),
    "[UNK] offered": re.compile(r"\[UNK\]"),
    "a word as the mean of its pieces": re.compile(r"mean of its (word )?pieces|vector is their mean|is the mean of the pieces"),
    "mask a word": re.compile(r"\bmask(ing)? (one|each|a) (context )?word", re.IGNORECASE),
    "an encoder that learned nothing": re.compile(r"an encoder that learned", re.IGNORECASE),
    "early layers as noise": re.compile(r"as noise\b"),
}
# A sentence may name [CLS] on the decoder's screen only to set the encoder beside it, or to say there is none
ABOUT_THE_ENCODER = re.compile(r"encoder|no \[CLS\]|course tests \[CLS\]")
# A sentence that says the senses separated; and the readout of the same screen within chance
SEPARATION = re.compile(r"pulled the occurrences apart by meaning|captures: the sense, on average|(?<!not )separates the senses")
WITHIN = re.compile(r"\*\*\d+%\*\* at layer \d+, within chance|read right at [^,;]+, within chance")


@pytest.mark.parametrize("name", SCREENS)
@pytest.mark.parametrize("kind", list(MODELS))
def test_every_screen_is_true_for_its_model(kind, name, encoder, decoder):
    """No sentence made for an encoder on the decoder's screen ([CLS] only in a sentence about the encoder),
    and on every screen no separation claimed while its readout is within chance."""
    text = screen(kind, name)
    if kind == "decoder" and name not in ("glossary", "finetune"):
        found = [(label, sentence[:160]) for sentence in _sentences(text) for label, pattern in ENCODER_ONLY.items()
                 if pattern.search(sentence)]  # fmt: skip
        found += [("a [CLS] readout", sentence[:160]) for sentence in _sentences(text)
                  if "[CLS]" in sentence and not ABOUT_THE_ENCODER.search(sentence)]  # fmt: skip
        assert not found, "\n".join(map(str, found))
    if name not in ("finetune", "glossary") and SEPARATION.search(text):
        assert not WITHIN.search(text), (SEPARATION.search(text)[0], WITHIN.search(text)[0])


@pytest.mark.parametrize("kind", list(MODELS))
def test_a_small_set_within_chance_claims_no_separation(kind):
    """Four kiwi sentences: whatever the gap does, a readout that shuffled labels also reach is no separation."""
    text = "fruit | I peeled a ripe kiwi for breakfast.\nfruit | The kiwi tasted sweet and sour.\n" \
           "bird | A kiwi cannot fly at all.\nbird | We saw a kiwi in the forest at night."
    at = page_test("pages/home.py", text=text, target="kiwi")
    seed(at, model=MODELS[kind])
    at.run(timeout=600)
    assert not at.exception
    shown = screen_text(at)
    if "within chance" in shown:
        assert "pulled the occurrences apart by meaning" not in shown
    assert "shuffled labels are read 100% right too" in shown or "within chance (" in shown or "above chance" in shown


# ------------------------------------------------------------------ the numbers the sentences rest on, by hand
def _cos(V: np.ndarray) -> np.ndarray:
    U = V.astype(np.float64) / np.linalg.norm(V.astype(np.float64), axis=1, keepdims=True)
    return U @ U.T


def test_layer_zero_as_each_model_builds_it(encoder, decoder):
    ss = preset_by_id("bank").sentence_set()
    for kind, model in (("encoder", encoder), ("decoder", decoder)):
        C = _cos(model.target_vectors(list(ss.sentences), "bank").vectors[:, 0])
        same = bool(np.all(C > 0.9995))
        assert same == (kind == "decoder")  # no position added at the decoder's input: one piece, one vector
        home = screen(kind, "home")
        assert ("At layer 0 every pair scores 1.00: the vector holds the embedding table's row" in home) == same
        assert ("its position and the segment" in home) == (kind == "encoder")


def test_the_attention_page_says_how_a_head_uses_q_k_and_v(encoder, decoder):
    for kind, model in (("encoder", encoder), ("decoder", decoder)):
        attn = model.model.base_model.layers[0].self_attn if kind == "decoder" else model.model.encoder.layer[0].attention.self
        q = (attn.q_proj if kind == "decoder" else attn.query).weight.shape[0]
        k = (attn.k_proj if kind == "decoder" else attn.key).weight.shape[0]
        text = screen(kind, "attention")
        if k < q:  # grouped-query attention: K and V are narrower than Q
            assert f"of Q's {q} columns and {q // model.num_heads} of K's and V's {k}" in text
            assert f"each shared by {q // k} heads" in text
        else:
            assert f"of the {q} columns of Q, K and V" in text


def test_what_moves_the_word_offers_what_the_model_can_do():
    enc, dec = screen("encoder", "context"), screen("decoder", "context")
    assert "[MASK] (each word piece)" in enc and "[UNK] (each word piece)" in enc
    assert "['nothing (delete it)']" in dec


def test_the_lens_follows_its_own_top_guesses(decoder):
    from lib.models.lens import logit_lens, probability_text, shown_token

    ss = preset_by_id("bank").sentence_set()
    tv = decoder.target_vectors(list(ss.sentences), "bank")
    lens = logit_lens(decoder, tv.vectors[0], follow_top=3)
    L = decoder.num_layers
    text = screen("decoder", "lens")
    together = lens.word_probs.sum(axis=1)
    assert f"take {probability_text(together[L // 2])} at layer {L // 2} and {probability_text(together[L - 1])}" in text
    for w, p in zip(lens.words, lens.word_probs[L], strict=True):
        assert f"“{shown_token(w)}” is {probability_text(p)} after the last layer" in text
    assert "tied embeddings" in text and decoder.tied_output_head
    assert "reads **both directions**" in screen("encoder", "lens")


def test_the_anisotropy_statistics_with_and_without_the_massive_pieces(decoder):
    """The decoder's corpus through numpy: the positions whose largest value passes five times the median
    position's are the massive ones; the top-3 variance share with and without them at the page's layer."""
    from lib.inputs.corpus import DECODER_CORPUS_SENTENCES, load_reference_corpus
    from lib.serving.budget import MAX_PIECES_PER_SENTENCE

    corpus = list(load_reference_corpus().sentences[:DECODER_CORPUS_SENTENCES])
    e = decoder.encode(corpus, attentions=False, max_tokens=MAX_PIECES_PER_SENTENCE)
    layer = decoder.num_layers // 2
    X = np.concatenate([h[:, ~s, :] for h, s in zip(e.hidden_states, e.special, strict=True)], axis=1)
    peak = np.abs(X).max(axis=(0, 2))
    massive = peak > 5 * np.median(peak)
    assert 0 < massive.sum() < 10

    def top3(v):
        var = v.var(axis=0)
        return np.sort(var)[-3:].sum() / var.sum()

    text = screen("decoder", "anisotropy")
    assert f"hold **{top3(X[layer].astype(np.float64)):.1%}** of it" in text
    assert f"without the {int(massive.sum())} word piece" in text
    assert f"hold **{top3(X[layer][~massive].astype(np.float64)):.1%}**" in text


def test_the_domain_check_counts_every_word_with_each_tokenizer(encoder, decoder):
    """The evidence card's domain check, word by word with each tokenizer (a byte-level piece takes in the space
    before its word): the set's words cut into several pieces, out of all its words."""
    ss = preset_by_id("bank").sentence_set()
    for kind, model in (("encoder", encoder), ("decoder", decoder)):
        tok = model.tokenizer
        n_split = n_words = 0
        for sentence in ss.clean_sentences:
            for m in re.finditer(r"\w+(?:['’]\w+)*|[^\w\s]", sentence):
                w = m.group()
                if not w.isalpha():
                    continue
                n_words += 1
                spaced = m.start() > 0 and sentence[m.start() - 1] == " "
                n_split += len(tok.tokenize((" " if spaced and kind == "decoder" else "") + w)) > 1
        assert f"({n_split} of {n_words})" in screen(kind, "layers"), kind


def test_the_probe_never_names_a_layer_it_lists_as_inside_the_null():
    for kind in MODELS:
        m = re.search(r"Furthest above the null: ([^.]+)\. Not above the null's band: ([^\n]+)", screen(kind, "layers"))
        if m:
            assert m[1] not in m[2].split(", "), (kind, m[0])


def test_the_lesson_steps_speak_for_each_model(encoder, decoder):
    from lib.teaching.lesson import STEPS

    k_proj = [s.id for s in STEPS].index("projection") + 1
    assert f"A picture of {decoder.hidden_size} dimensions" in screen("decoder", f"lesson{k_proj}")
    assert f"A picture of {encoder.hidden_size} dimensions" in screen("encoder", f"lesson{k_proj}")
    k_cls = [s.id for s in STEPS].index("cls") + 1
    assert "last word piece" in screen("decoder", f"lesson{k_cls}")
    assert "[CLS] is a sentence vector" in screen("encoder", f"lesson{k_cls}")
    k_ctx = [s.id for s in STEPS].index("context") + 1
    assert "Which word, deleted, moves" in screen("decoder", f"lesson{k_ctx}")
    assert "Which word, replaced by [MASK], moves" in screen("encoder", f"lesson{k_ctx}")
