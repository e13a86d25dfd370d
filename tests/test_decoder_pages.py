"""The decoder on the learner's pages: what each page states, checked against numpy on the real decoder.

The lib functions the pages use (first-position share, the causal mask's empty triangle, the cue halves, the
massive values, the bounded corpus, the after-target deletion, the logit lens's readout) are checked against
a computation written here from the arrays, and each page's numbers are read from its text and recomputed.
The decoder is the real one (fixture ``decoder``: a 4-bit copy of SmolLM2-135M-Instruct), never a mock.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lib.inputs.corpus import DECODER_CORPUS_SENTENCES, bounded_corpus, load_reference_corpus
from lib.inputs.presets import preset_by_id
from lib.models import DECODER_MODEL
from lib.models.attention import first_position_share, special_token_share, weight_above_diagonal
from lib.models.lens import logit_lens, probability_text, shown_token
from lib.stats.context import occlusion
from lib.stats.direction import cue_gaps, gap_null
from lib.stats.geometry import MASSIVE_RATIO, massive_values
from tests.conftest import page_test

SENTENCE = "The bank of the river flooded after the storm."


@pytest.fixture
def one_torch_thread():
    """Torch on one thread while the test runs, as the server runs it (ui.startup.limit_torch_threads). On two,
    the float32 products of a batch may be split between the threads otherwise than those of one sentence, so
    a word's vector in a batch and alone agree to float32 rounding (~1e-4 of 25,000), not to the last bit."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _texts(at) -> str:
    """Every markdown and caption of a run, glossary links read as their text."""
    out = "\n".join([str(m.value) for m in at.markdown] + [str(c.value) for c in at.caption])
    out = re.sub(r"\[(\[[^\]]*\]|[^\]]*)\]\(glossary#[^)]*\)", r"\1", out)  # "[[CLS]](glossary#cls)" too
    return re.sub(r"\\([-.()\[\]*_:!#])", r"\1", out)  # Markdown escapes read as the characters ("4\-bit")


def _decoder_page(page: str, *, timeout: float = 300, **params):
    """An AppTest of ``page`` with the decoder chosen, run, checked to have raised nothing."""
    at = page_test(page, model=DECODER_MODEL, **params)
    at.run(timeout=timeout)
    assert not at.exception, [e.value for e in at.exception]
    return at


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.sqrt(np.dot(a, a)) * np.sqrt(np.dot(b, b))))


def _gap_by_hand(V: np.ndarray, senses: list[str]) -> np.ndarray:
    """Same − different sense mean cosine per layer, pair by pair."""
    K = V.shape[1]
    out = np.zeros(K)
    for k in range(K):
        same, diff = [], []
        for i in range(len(V)):
            for j in range(i + 1, len(V)):
                (same if senses[i] == senses[j] else diff).append(_cos(V[i, k], V[j, k]))
        out[k] = np.mean(same) - np.mean(diff)
    return out


def _cue_set():
    p = preset_by_id("bank-cue")
    ss = p.sentence_set()
    return p, ss, p.cue_of(ss.sentences)


# ----------------------------------------------------------------------------------- lib
def test_the_causal_mask_leaves_nothing_above_the_diagonal(decoder, encoder):
    att = decoder.encode([SENTENCE]).attentions[0]
    n = att.shape[-1]
    by_hand = max(float(att[ly, h, i, j]) for ly in range(att.shape[0]) for h in range(att.shape[1])
                  for i in range(n) for j in range(i + 1, n))  # fmt: skip
    assert weight_above_diagonal(att) == by_hand == 0.0
    assert weight_above_diagonal(encoder.encode([SENTENCE]).attentions[0]) > 0.01


def test_first_position_share_by_hand(decoder, encoder):
    for model in (decoder, encoder):
        att = model.encode([SENTENCE]).attentions[0].astype(np.float64)
        L, H, n, _ = att.shape
        share = first_position_share(att, causal=model.causal)
        for layer in (0, L // 2, L - 1):
            want = sum(att[layer, h, q, 0] for h in range(H) for q in range(1, n)) / (H * (n - 1))
            assert share.per_layer[layer] == pytest.approx(want, abs=1e-9)
        even = np.mean([1 / (q + 1) for q in range(1, n)]) if model.causal else 1 / n
        assert share.uniform == pytest.approx(even)
    # the decoder's start token draws far more than an even spread in its upper layers
    dec = first_position_share(decoder.encode([SENTENCE]).attentions[0], causal=True)
    assert dec.per_layer[decoder.num_layers // 2 :].min() > 2 * dec.uniform


def test_the_special_token_share_names_the_start_token(decoder, encoder):
    for model, opening in ((decoder, decoder.sink.token), (encoder, "[CLS]")):
        e = model.encode([SENTENCE])
        s = special_token_share(e.attentions[0], e.tokens[0], e.special[0], ids=e.token_ids[0],
                                roles=model.special_roles)  # fmt: skip
        assert s.opening_label == opening
        # a decoder's sentence has no closing special token: nothing is called [SEP] on its screen
        assert s.closing_label == ("" if model is decoder else "[SEP]")
        assert (float(s.sep_mean.max()) == 0.0) == (model is decoder)
    assert decoder.sink.token != "[CLS]"


@pytest.mark.slow  # over ~5 s of CPU
def test_cue_gaps_by_hand_and_the_two_directions(decoder, encoder):
    _, ss, cues = _cue_set()
    got = {}
    for model in (decoder, encoder):
        tv = model.target_vectors(list(ss.sentences), ss.target)
        V = tv.vectors.astype(np.float64)
        senses, kept_cues = [ss.senses[i] for i in tv.kept], [cues[i] for i in tv.kept]
        g = cue_gaps(V, senses, kept_cues)
        for half, gap in (("before", g.before), ("after", g.after)):
            idx = [i for i, c in enumerate(kept_cues) if c == half]
            np.testing.assert_allclose(gap, _gap_by_hand(V[idx], [senses[i] for i in idx]), atol=1e-6)
        got[model.family] = g
    d, e = got["decoder"], got["encoder"]
    assert d.separates_before and not d.separates_after
    assert e.separates_before and e.separates_after
    assert d.after.max() <= d.after_cut < d.before.max()


def test_the_gap_null_by_hand():
    """The null shuffles the senses and recomputes the gap pair by pair; its cut-off is the 95th percentile of
    each shuffle's best layer."""
    rng = np.random.default_rng(1)
    V = rng.normal(size=(8, 3, 5))
    senses = ["a", "a", "a", "a", "b", "b", "b", "b"]
    C = np.stack([[[_cos(V[i, k], V[j, k]) for j in range(8)] for i in range(8)] for k in range(3)])
    per_layer, cut = gap_null(C, senses, n_permutations=50, seed=3)
    perms = np.random.default_rng(3)
    best, every = [], []
    for _ in range(50):
        lab = perms.permutation(np.array(senses))
        g = _gap_by_hand(V, list(lab))
        every.append(g)
        best.append(g.max())
    np.testing.assert_allclose(per_layer, np.percentile(every, 95, axis=0), atol=1e-9)
    assert cut == pytest.approx(np.percentile(best, 95))


@pytest.mark.slow  # over ~5 s of CPU
def test_massive_values_by_hand(decoder):
    e = decoder.encode(list(load_reference_corpus().sentences[:DECODER_CORPUS_SENTENCES]), attentions=False)
    mv = massive_values(e.hidden_states, e.special, e.tokens)
    first = max(float(np.abs(h[:, 0, :]).max()) for h in e.hidden_states)
    assert mv.first == first
    peaks = [float(np.abs(h[:, p, :]).max()) for h, s in zip(e.hidden_states, e.special, strict=True)
             for p in range(h.shape[1]) if not s[p]]  # fmt: skip
    assert mv.typical == pytest.approx(float(np.median(peaks)))
    assert len(mv.words) == sum(v > MASSIVE_RATIO * np.median(peaks) for v in peaks)
    assert mv.first > 10 * mv.typical  # the start token's numbers dwarf a word's
    assert all(p == 1 for _, p, _, _ in mv.words)  # the word pieces that carry them sit right after the start


def test_the_decoder_reads_a_bounded_corpus(decoder, encoder):
    corpus = load_reference_corpus().sentences
    used, key, note = bounded_corpus(decoder, corpus, "builtin-x")
    assert used == tuple(corpus[:DECODER_CORPUS_SENTENCES]) and key != "builtin-x"
    assert note and str(DECODER_CORPUS_SENTENCES) in note and f"{len(corpus):,}" in note
    assert bounded_corpus(encoder, corpus, "builtin-x") == (tuple(corpus), "builtin-x", None)


@pytest.mark.slow  # over ~5 s of CPU
def test_deleting_a_word_after_the_target_moves_it_by_exactly_zero(decoder, one_torch_thread):
    occ = occlusion(decoder, SENTENCE, "bank")
    assert occ.replacement == ""  # no mask token: each word is deleted
    assert occ.after_target == tuple(j for j, w in enumerate(occ.words) if SENTENCE.index("bank") < occ.spans[j][0])
    # by hand: the sentence without "river", encoded afresh, gives "bank" the same numbers at every layer
    base = decoder.target_vectors([SENTENCE], "bank").vectors[0]
    cut = decoder.target_vectors([SENTENCE.replace(" river", "")], "bank").vectors[0]
    assert np.array_equal(base, cut)
    assert occ.after_target_change == 0.0
    before = [j for j in range(len(occ.words)) if j not in occ.after_target]
    assert occ.shift[-1, before].max() > 0.01  # a word before it does move it


def test_the_lens_readout_by_hand(decoder):
    tv = decoder.target_vectors([SENTENCE], "bank")
    lens = logit_lens(decoder, tv.vectors[0], words=("river", "money"))
    # numpy: RMSNorm with the model's weight and eps on every hidden state but the last, then the head
    w = decoder.final_norm.weight.detach().float().numpy().astype(np.float64)
    eps = float(decoder.model.config.rms_norm_eps)
    head = decoder.output_head.weight.detach().float().numpy()
    V = tv.vectors[0].astype(np.float64)
    normed = V / np.sqrt((V**2).mean(axis=1, keepdims=True) + eps) * w
    normed[-1] = V[-1]
    logits = normed.astype(np.float32) @ head.T
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits.astype(np.float64))
    p /= p.sum(axis=1, keepdims=True)
    L = decoder.num_layers
    assert int(lens.top_ids[L, 0]) == int(np.argmax(p[L]))
    assert lens.top_probs[L, 0] == pytest.approx(p[L].max(), rel=0.15)
    for k, tok in enumerate(lens.word_ids):
        assert lens.word_probs[L, k] == pytest.approx(p[L, tok], rel=0.3)
    settled = lens.settled_from
    assert all(int(lens.top_ids[k, 0]) == int(lens.top_ids[L, 0]) for k in range(settled, L + 1))
    assert settled == 0 or int(lens.top_ids[settled - 1, 0]) != int(lens.top_ids[L, 0])


def test_probability_and_token_text():
    assert probability_text(0.314) == "31%" and probability_text(0.0042) == "0.42%"
    assert probability_text(3.14e-6) == "3.1e-06"
    assert shown_token("\n") == "↵" and shown_token(" ") == "␣" and shown_token(" river") == "␣river"
    assert shown_token("\xa0") == "⍽" != shown_token(" ")  # a no-break space is another piece than a space


def test_the_lens_follows_the_models_own_top_guesses_and_reads_the_tied_head(decoder):
    """With no words named the lens follows the last layer's three most probable tokens (numpy: the argsort of
    the last layer's probabilities); the tied head reads the input vector back as its own word piece."""
    tv = decoder.target_vectors([SENTENCE], "bank")
    lens = logit_lens(decoder, tv.vectors[0], follow_top=3)
    assert lens.follows_top and len(lens.words) == 3
    assert list(lens.word_ids) == list(lens.top_ids[-1, :3])
    np.testing.assert_array_equal(lens.word_probs[-1], lens.top_probs[-1, :3])
    assert not logit_lens(decoder, tv.vectors[0], words=("river",), follow_top=3).follows_top  # named words win
    # layer 0 through a tied head: the row of the piece's own embedding scores highest against itself
    table = decoder.model.get_input_embeddings().weight.detach().float().numpy().astype(np.float64)
    piece = int(tv.encoding.token_ids[0][tv.spans[0].vector_indices[-1]])
    assert decoder.tied_output_head and piece in set(lens.top_ids[0, :2].tolist())
    v = tv.vectors[0, 0].astype(np.float64)
    w = decoder.final_norm.weight.detach().float().numpy().astype(np.float64)
    normed = v / np.sqrt((v**2).mean() + float(decoder.model.config.rms_norm_eps)) * w
    assert int(np.argmax(table @ normed)) in set(lens.top_ids[0, :2].tolist())


# ----------------------------------------------------------------------------------- pages
@pytest.mark.slow
def test_the_attention_page_states_the_decoders_numbers(decoder, encoder):
    at = _decoder_page("pages/attention.py")
    text = _texts(at)
    assert "largest weight there, any layer and head: 0.0" in text
    m = re.search(r"give it \*\*(\d+)%–(\d+)%\*\* of their attention on average in layers (\d+)–(\d+)", text)
    assert m, text
    sentence = preset_by_id("bank").sentence_set().sentences[0]
    att = decoder.encode([sentence]).attentions[0].astype(np.float64)
    L = decoder.num_layers
    per_layer = [att[layer, :, 1:, 0].sum() / (att.shape[1] * (att.shape[-1] - 1)) for layer in range(L)]
    lo, hi = min(per_layer[L // 2 :]), max(per_layer[L // 2 :])
    assert (int(m[1]), int(m[2]), int(m[3]), int(m[4])) == (round(lo * 100), round(hi * 100), L // 2 + 1, L)
    enc_att = encoder.encode([sentence]).attentions[0].astype(np.float64)
    cls = [enc_att[layer, :, 1:, 0].mean() for layer in range(encoder.num_layers)]
    assert f"encoder's [CLS] gets {min(cls):.0%}–{max(cls):.0%} per layer" in text
    assert "4-bit copy of SmolLM2" in text
    # why the target's vector changes: only the words before it can change it, in a left-to-right model
    assert "earlier neighbours (a word sees no later word)" in text
    assert "what comes after cannot change it" in text
    opened = _texts(_decoder_page("pages/attention.py", attn_compare_box=True))  # the two sentences side by side
    assert "this left-to-right model lets the target see only the words before it" in opened


@pytest.mark.slow
def test_the_context_page_says_a_later_word_moves_the_target_by_zero(decoder, one_torch_thread):
    at = _decoder_page("pages/context.py")
    text = _texts(at)
    sentence = preset_by_id("bank").sentence_set().sentences[0]
    after = sentence[sentence.index("bank") + 4 :]
    n_after = len(re.findall(r"\w+|[^\w\s]", after))
    # a model without a mask token is offered only what it can do: deleting each word
    assert list(at.selectbox(key="ctx_replace").options) == ["nothing (delete it)"]
    assert f"Deleting any of the **{n_after}** word{'s' if n_after != 1 else ''} after “bank” moves it by **exactly 0**" in text
    # by hand: delete the last word before the full stop; "bank" keeps every number
    last = after.rstrip(".").split()[-1]
    cut = sentence.replace(" " + last, "")
    tv = decoder.target_vectors([sentence, cut], "bank")
    assert np.array_equal(tv.vectors[0], tv.vectors[1])


@pytest.mark.slow
def test_the_anisotropy_page_with_the_decoder_is_bounded_and_states_the_massive_values(decoder):
    at = _decoder_page("pages/anisotropy.py", timeout=600)
    text = _texts(at) + "\n".join(str(i.value) for i in at.info)
    assert f"first {DECODER_CORPUS_SENTENCES} of" in text
    corpus = list(load_reference_corpus().sentences[:DECODER_CORPUS_SENTENCES])
    e = decoder.encode(corpus, attentions=False)
    first = max(float(np.abs(h[:, 0, :]).max()) for h in e.hidden_states)
    dim = int(np.argmax(np.max([np.abs(h[:, 0, :]).max(axis=0) for h in e.hidden_states], axis=0)))
    assert f"carries numbers up to **{first:,.0f}** (dimension {dim})" in text
    peaks = [(float(np.abs(h[:, p, :]).max()), t[p]) for h, s, t in zip(e.hidden_states, e.special, e.tokens,
             strict=True) for p in range(h.shape[1]) if not s[p]]  # fmt: skip
    typical = float(np.median([v for v, _ in peaks]))
    assert f"against {typical:,.0f} for a typical word piece" in text
    for v, tok in peaks:
        if v > MASSIVE_RATIO * typical:
            assert f"“{tok}” ({v:,.0f})" in text


@pytest.mark.slow
def test_the_cue_view_on_layer_by_layer_states_both_models_numbers(decoder, encoder):
    at = _decoder_page("pages/layers.py", timeout=400, preset="bank-cue", layers_cue_box=True)  # opened
    text = _texts(at)
    _, ss, cues = _cue_set()
    verdicts = {}
    for name, model in (("Encoder", encoder), ("Decoder", decoder)):
        tv = model.target_vectors(list(ss.sentences), ss.target)
        V = tv.vectors.astype(np.float64)
        for half in ("before", "after"):
            idx = [i for i, c in enumerate(cues) if c == half]
            gap = _gap_by_hand(V[idx], [ss.senses[i] for i in idx])
            C = np.stack([[[_cos(V[i, k], V[j, k]) for j in idx] for i in idx] for k in range(V.shape[1])])
            _, cut = gap_null(C, [ss.senses[i] for i in idx])
            k = int(np.argmax(gap))
            verdicts[name, half] = gap[k] > cut
            said = "separates" if gap[k] > cut else "does not separate"
            assert f"{said} ({gap[k]:+.2f} at layer {k}; shuffled senses reach {cut:+.2f})" in text, (name, half)
        if name == "Decoder":  # pairs of different senses that read the same words up to "bank": one vector
            after = [i for i, c in enumerate(cues) if c == "after"]
            opening = {i: tv.spans[i].sentence[: tv.spans[i].end] for i in after}
            same = [(a, b) for a in after for b in after if a < b and ss.senses[a] != ss.senses[b]
                    and opening[a] == opening[b]]  # fmt: skip
            one = [p for p in same if all(_cos(V[p[0], k], V[p[1], k]) >= 1 - 1e-4 for k in range(V.shape[1]))]
            if one:
                assert f"{len(one)} of the {len(same)} pairs of different senses that open with the same" in text
    if verdicts == {("Encoder", "before"): True, ("Encoder", "after"): True, ("Decoder", "before"): True,
                    ("Decoder", "after"): False}:  # fmt: skip
        assert "The decoder separates the senses only when the cue comes first; the encoder separates both" in text
    assert "not the two models' heights" in text


@pytest.mark.slow
def test_the_lens_page_with_the_decoder_and_with_the_encoder(decoder):
    at = _decoder_page("pages/lens.py", lens_words="river, money")
    text = _texts(at)
    ss = preset_by_id("bank").sentence_set()
    tv = decoder.target_vectors(list(ss.sentences), "bank")  # as the page encodes them: the whole set at once
    lens = logit_lens(decoder, tv.vectors[0], words=("river", "money"))
    L = decoder.num_layers
    assert (f"guesses “{shown_token(lens.top_tokens[L][0])}” with probability "
            f"**{probability_text(lens.top_probs[L][0])}**") in text  # fmt: skip
    assert (f"from layer {lens.settled_from} on" if lens.settled_from < L else "No earlier layer puts it on top") in text
    assert "as noise" not in text and "readings are not noise to dismiss" in text and "a readout, not what a layer" in text
    assert f"“river” is {probability_text(lens.word_probs[L, 0])} after the last layer" in text
    assert "4-bit copy of SmolLM2" in text

    enc_at = page_test("pages/lens.py")
    enc_at.run(timeout=120)
    assert not enc_at.exception
    text = _texts(enc_at)
    assert "reads **both directions**" in text and "has no head that guesses the next word" in text
    assert "lens?" in text and "model=HuggingFaceTB%2FSmolLM2-135M-Instruct" in text


@pytest.mark.slow
def test_bad_words_on_the_lens_page_get_a_message(decoder):
    at = _decoder_page("pages/lens.py", lens_words=",".join(["w"] * 11))
    assert any("at most 10 words" in str(w.value) for w in at.warning)


@pytest.mark.slow
def test_the_lesson_step_on_direction_of_context(decoder):
    from lib.teaching import lesson

    k = lesson.STEP_IDS.index("direction") + 1
    at = page_test("pages/lesson.py", lesson_step=k)
    at.run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    radio = at.radio(key="lesson_q_direction")
    radio.set_value("No: its gap stays at about 0 (or below) at every layer")
    at.button(key="lesson_check_direction").click()
    at.run(timeout=300)
    assert any("Right" in str(s.value) for s in at.success)


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, preset",
    [("pages/home.py", None), ("pages/layers.py", None), ("pages/attention.py", None), ("pages/context.py", None),
     ("pages/anisotropy.py", None), ("pages/projections.py", None), ("pages/lens.py", None)],
)  # fmt: skip
def test_decoder_pages_keep_to_600_words(decoder, page, preset):
    from lib.teaching.wordcount import MAX_PROSE_WORDS, prose_texts, total_words

    at = _decoder_page(page, timeout=600, preset=preset)
    n = total_words(prose_texts(at.main))
    assert n <= MAX_PROSE_WORDS, f"{page}: {n} words of prose on its defaults with the decoder"


def test_the_attention_formula_is_the_decoders_own(decoder):
    """RMSNorm before attention, rotary positions, no Q/K/V bias in SmolLM2, and the causal mask: the formula the
    page shows for the decoder is the arithmetic lib.models.recompute recomputes (to the model's precision)."""
    at = _decoder_page("pages/attention.py")
    formula = " ".join(x.value for x in at.latex)
    assert "RMSNorm" in formula and "rot" in formula and "-\\infty" in formula and "b_Q" not in formula
