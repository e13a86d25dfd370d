"""lib/models/decoder.py, lens.py and the decoder side of attention.py on the real decoder (fixture ``decoder``).

The decoder is a 4-bit copy of SmolLM2-135M-Instruct, fetched once per machine (tests/conftest.py). Expected
values come from the model read another way (its own forward pass, its weight tables, its tokenizer, numpy),
never from numbers copied out of an earlier run.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from lib.models import DECODER_MODEL, ModelLoadError, load_model
from lib.models.attention import recompute_attention
from lib.models.base import TransformerModel
from lib.models.decoder import Decoder
from lib.models.encoder import Encoder, load_encoder
from lib.models.lens import LensError, lens_logits, logit_lens
from lib.models.loading import family_of
from lib.models.targets import TargetError

RIVER = "The bank of the river flooded."
CITY = "The bank of the city flooded."
# bf16 keeps 8 significant bits: a weight the model returns is within 2^-8 (relative) of what it computed,
# so a row of them sums to 1 within 2^-8
BF16_ROUNDING = 2.0**-8


# ----------------------------------------------------------------------------------- what a page asks
def test_the_decoder_says_what_it_is(decoder):
    cfg = decoder.model.config
    assert isinstance(decoder, Decoder) and isinstance(decoder, TransformerModel)
    assert decoder.name == DECODER_MODEL
    assert (decoder.family, decoder.reads, decoder.causal, decoder.piece_pooling) == (
        "decoder",
        "left to right",
        True,
        "last",
    )
    assert decoder.final_norm_in_last_state is True
    assert decoder.num_layers == cfg.num_hidden_layers and decoder.num_hidden_states == cfg.num_hidden_layers + 1
    assert (decoder.num_heads, decoder.num_kv_heads) == (cfg.num_attention_heads, cfg.num_key_value_heads)
    assert decoder.num_kv_heads < decoder.num_heads  # grouped-query attention
    assert decoder.head_dim * decoder.num_heads == decoder.hidden_size == cfg.hidden_size
    assert decoder.mask_token is None
    # position enters inside attention (rotary), and the output head is the embedding table itself
    assert decoder.positions == "rotary" and cfg.rope_parameters["rope_theta"] > 0
    assert not hasattr(decoder.model.base_model, "embed_positions")  # no learned position table to add
    head, table = decoder.model.lm_head.weight, decoder.model.get_input_embeddings().weight
    assert decoder.tied_output_head is True and cfg.tie_word_embeddings
    assert head.data_ptr() == table.data_ptr() and bool((head == table).all())
    assert decoder.sink.position == 0 and decoder.sink.token == decoder.tokenizer.bos_token
    assert decoder.sink.added  # SmolLM2's tokenizer adds no start token of its own
    assert "start token" in decoder.sink.note


def test_the_encoder_answers_the_same_questions(encoder):
    assert isinstance(encoder, Encoder) and isinstance(encoder, TransformerModel)
    assert (encoder.family, encoder.reads, encoder.causal, encoder.piece_pooling) == (
        "encoder",
        "both directions",
        False,
        "mean",
    )
    assert encoder.sink is None and encoder.final_norm_in_last_state is False
    assert encoder.num_kv_heads == encoder.num_heads
    assert encoder.mask_token == encoder.tokenizer.mask_token
    assert encoder.positions == encoder.model.config.position_embedding_type == "absolute"
    assert encoder.model.embeddings.position_embeddings.weight.shape[0] == encoder.model.config.max_position_embeddings
    assert encoder.tied_output_head is False and encoder.model.get_output_embeddings() is None  # loaded headless


def test_load_model_reads_the_family_from_the_config(decoder, encoder):
    from transformers import BertConfig, LlamaConfig, T5Config

    assert family_of(LlamaConfig(architectures=["LlamaForCausalLM"])) == "decoder"
    assert family_of(BertConfig(architectures=["BertForMaskedLM"])) == "encoder"
    assert family_of(BertConfig(architectures=["BertLMHeadModel"])) == "encoder"  # a BERT with a head
    with pytest.raises(ModelLoadError, match="encoder-decoder"):
        family_of(T5Config())
    assert isinstance(load_model(), Encoder)
    # the old entry point loads whichever family the name is
    assert isinstance(load_encoder(DECODER_MODEL), Decoder)


# ----------------------------------------------------------------------------------- encode
def test_every_sentence_opens_with_the_start_token_marked_special(decoder):
    out = decoder.encode([RIVER, "Money."], attentions=False)
    tok = decoder.tokenizer
    for i, s in enumerate([RIVER, "Money."]):
        plain = tok(s, add_special_tokens=False)["input_ids"]
        assert out.token_ids[i].tolist() == [tok.bos_token_id, *plain]
        assert out.special[i].tolist() == [True] + [False] * len(plain)
        assert out.hidden_states[i].shape == (decoder.num_hidden_states, len(plain) + 1, decoder.hidden_size)
        assert out.hidden_states[i].dtype == np.float32 and not out.hidden_states[i].flags.writeable


def test_the_attention_sink_is_the_start_token_not_the_first_word(decoder):
    # the first position collects massive values; with the start token there, the first word is ordinary
    h = decoder.encode([RIVER], attentions=False).hidden_states[0]
    largest = np.abs(h).max(axis=(0, 2))  # (n,) the largest value at each position over all layers
    assert largest[0] > 10 * largest[1:].max()


def test_causal_identity_right_context_changes_nothing_before_it(decoder):
    # "river" vs "city" after "bank": bank's vector is identical at every layer; after the change it differs
    tv = decoder.target_vectors([RIVER, CITY], "bank")
    assert tv.vectors.shape == (2, decoder.num_hidden_states, decoder.hidden_size)
    assert np.abs(tv.vectors[0] - tv.vectors[1]).max() <= 1e-6
    enc = tv.encoding
    change = enc.tokens[0].index("Ġriver")
    assert enc.tokens[1][change] == "Ġcity"
    np.testing.assert_array_equal(enc.hidden_states[0][:, :change], enc.hidden_states[1][:, :change])
    after = np.abs(enc.hidden_states[0][:, change + 1 :] - enc.hidden_states[1][:, change + 1 :]).max()
    assert after > 1.0  # the words after the change do see it (so the identity above is not trivial)


def test_the_encoder_has_no_such_identity(encoder):
    tv = encoder.target_vectors([RIVER, CITY], "bank")
    assert np.abs(tv.vectors[0, 1:] - tv.vectors[1, 1:]).max() > 1e-3


def test_attention_is_causal_and_rows_sum_to_one(decoder):
    out = decoder.encode([RIVER, "We sat on the bank and watched the water rise."], attentions=True)
    for a in out.attentions:
        n = a.shape[-1]
        assert a.shape == (decoder.num_layers, decoder.num_heads, n, n)
        assert np.all(a[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
        assert np.abs(a.sum(axis=-1) - 1).max() <= BF16_ROUNDING


def test_a_sentence_alone_or_in_a_batch_gives_the_same_vectors(decoder):
    sents = [RIVER, "Money.", "We sat on the bank and watched the water rise slowly in the spring."]
    together = decoder.encode(sents, attentions=False)
    for i, s in enumerate(sents):
        alone = decoder.encode([s], attentions=False)
        scale = np.abs(alone.hidden_states[0]).max(axis=-1, keepdims=True)  # bf16: relative to each vector
        assert np.all(np.abs(alone.hidden_states[0] - together.hidden_states[i]) <= 2 * BF16_ROUNDING * scale)


# ----------------------------------------------------------------------------------- the target's pieces
def test_a_split_word_is_its_last_piece(decoder):
    tv = decoder.target_vectors(["A [riverbank] opened.", RIVER], "bank")
    split, whole = tv.spans
    assert split.pieces == ("Ġriver", "bank") and split.vector_indices == (split.token_indices[-1],)
    assert whole.pieces == ("Ġbank",) and whole.vector_indices == whole.token_indices
    for i, sp in enumerate(tv.spans):
        last = sp.token_indices[-1]
        np.testing.assert_array_equal(tv.vectors[i], tv.encoding.hidden_states[i][:, last])
        # the static embedding is the same piece's row of the model's embedding table
        row = decoder.model.get_input_embeddings().weight[int(tv.encoding.token_ids[i][last])].detach().float().numpy()
        np.testing.assert_array_equal(tv.static[i], row)
    # Llama adds no position vector before the first layer: hidden state 0 is the embedding itself
    np.testing.assert_array_equal(tv.static, tv.vectors[:, 0])


def test_word_vectors_match_target_vectors(decoder):
    np.testing.assert_array_equal(
        decoder.word_vectors([RIVER, CITY], "bank"), decoder.target_vectors([RIVER, CITY], "bank").vectors
    )


def test_without_a_start_token_the_first_word_is_the_sink_and_cannot_be_the_target(decoder):
    tok = copy.deepcopy(decoder.tokenizer)
    tok.add_bos_token = False
    tok.bos_token = None
    plain = Decoder(DECODER_MODEL, decoder.model, tok)
    assert plain.sink.token is None and not plain.sink.added and "no start token" in plain.sink.note
    out = plain.encode(["Bank of the river."], attentions=False)
    assert out.tokens[0][0] == "Bank" and out.special[0].tolist() == [True] + [False] * (len(out.tokens[0]) - 1)
    with pytest.raises(TargetError, match="first word"):
        plain.target_vectors(["Bank of the river."], "bank")
    tv = plain.target_vectors(["Bank of the river.", "The bank of the river."], "bank", skip_missing=True)
    assert tv.kept == (1,) and "first word" in tv.problems[0]


# ----------------------------------------------------------------------------------- the logit lens
def test_logit_lens_at_the_last_layer_is_the_models_own_next_token_guess(decoder):
    import torch

    tv = decoder.target_vectors([RIVER], "bank")
    pos = tv.spans[0].token_indices[-1]
    ids = torch.tensor([tv.encoding.token_ids[0].tolist()])
    with torch.inference_mode():
        own = decoder.model(input_ids=ids).logits[0, pos].float().numpy()
    lens = lens_logits(decoder, tv.vectors[0])
    assert lens.shape == (decoder.num_hidden_states, decoder.model.config.vocab_size)
    np.testing.assert_allclose(lens[-1], own, rtol=0, atol=BF16_ROUNDING * np.abs(own).max())
    # norming the already-normed last state again reads something else
    with torch.inference_mode():
        last = torch.from_numpy(tv.vectors[0][-1:].copy()).bfloat16()
        again = decoder.output_head(decoder.final_norm(last)).float().numpy()[0]
    assert np.abs(again - own).max() > 10 * BF16_ROUNDING * np.abs(own).max()

    result = logit_lens(decoder, tv.vectors[0], top_k=3, words=["river", "account"])
    p = np.exp(own - own.max())
    p /= p.sum()
    assert result.top_ids[-1, 0] == int(np.argmax(own))
    np.testing.assert_allclose(result.top_probs[-1], np.sort(p)[::-1][:3], atol=1e-2)
    assert result.word_tokens == (" river", " account") and result.word_split == (False, False)
    np.testing.assert_allclose(result.word_probs[-1], p[result.word_ids], atol=1e-3)
    assert result.normed.tolist() == [True] * decoder.num_layers + [False]
    assert result.top_probs.shape == (decoder.num_hidden_states, 3)
    assert np.all(np.diff(result.top_probs, axis=1) <= 0)


def test_logit_lens_refuses_an_encoder_and_empty_words(encoder, decoder):
    v = decoder.target_vectors([RIVER], "bank").vectors[0]
    with pytest.raises(LensError, match="encoder"):
        logit_lens(encoder, v)
    with pytest.raises(LensError):
        logit_lens(decoder, v, words=["  "])


# ----------------------------------------------------------------------------------- recomputed attention
def test_recomputed_attention_matches_the_models_own(decoder):
    enc = decoder.encode(["The bank of the river flooded after the storm."], attentions=True)
    n = len(enc.tokens[0])
    for layer in (0, decoder.num_layers // 2, decoder.num_layers - 1):
        r = recompute_attention(decoder, enc, 0, layer)
        assert r.causal and r.rotary and r.num_kv_heads == decoder.num_kv_heads
        assert r.weights.shape == (decoder.num_heads, n, n)
        assert np.all(r.weights[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
        np.testing.assert_allclose(r.weights.sum(axis=-1), 1, atol=1e-12)
        assert r.max_abs_diff < 0.05  # the model computes in bf16; a wrong RoPE or mask is off by ~0.5
        group = decoder.num_heads // decoder.num_kv_heads
        np.testing.assert_array_equal(r.k[0], r.k[group - 1])  # query heads of one group share K
        assert np.abs(r.k[0] - r.k[group]).max() > 0
    one = recompute_attention(decoder, enc, 0, 3, head=4)
    np.testing.assert_allclose(one.weights, recompute_attention(decoder, enc, 0, 3).weights[4])


@pytest.mark.slow  # a float32 copy of the decoder (0.5 GB) and its run
def test_recomputed_attention_matches_a_float32_run_to_float_precision(decoder):
    m32 = copy.deepcopy(decoder.model).float()
    d32 = Decoder(DECODER_MODEL, m32, decoder.tokenizer)
    enc = d32.encode(["The bank of the river flooded after the storm."], attentions=True)
    for layer in range(0, decoder.num_layers, 7):
        assert recompute_attention(d32, enc, 0, layer).max_abs_diff < 1e-5


# ----------------------------------------------------------------------------------- controls
@pytest.mark.slow  # loads two more copies of the decoder
@pytest.mark.parametrize("weights", ["shuffled", "random"])
def test_the_controls_work_for_the_decoder(decoder, weights):
    control = load_model(DECODER_MODEL, weights=weights, seed=0)
    assert control.name == f"{DECODER_MODEL}#{weights}-0" and control.family == "decoder"
    assert control.model.dtype == decoder.model.dtype
    tv = control.target_vectors([RIVER, CITY], "bank")
    assert np.abs(tv.vectors[0] - tv.vectors[1]).max() <= 1e-6  # still causal: the architecture is kept
    trained = decoder.target_vectors([RIVER], "bank").vectors[0]
    assert np.abs(tv.vectors[0, 1:] - trained[1:]).max() > 1e-2


# ----------------------------------------------------------------------------------- the app
@pytest.mark.slow  # the start page's model runs with the decoder
def test_a_link_with_the_decoder_opens_the_start_page(decoder):
    from tests.conftest import page_test

    at = page_test("pages/home.py", model=DECODER_MODEL)
    at.run()
    assert not at.exception
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown]
    assert any("SmolLM2" in t and f"{decoder.num_layers} layers" in t for t in texts)


# ----------------------------------------------------------------------------------- other decoders by folder
def _tiny_decoder_folder(decoder, tmp_path, config):
    """A small untrained causal LM of ``config`` saved with the decoder's own tokenizer, as a user's folder."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(tmp_path)
    decoder.tokenizer.save_pretrained(tmp_path)
    return str(tmp_path)


@pytest.mark.parametrize("kind", ["qwen2", "gpt2"])
def test_another_decoder_by_folder_loads_the_same_way(decoder, tmp_path, kind):
    from transformers import GPT2Config, Qwen2Config

    from lib.models.attention import UnsupportedArchitectureError

    vocab = decoder.model.config.vocab_size
    if kind == "qwen2":  # biases on Q, K, V; 4 query heads sharing 2 key/value heads
        config = Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, architectures=["Qwen2ForCausalLM"])
    else:
        config = GPT2Config(vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, architectures=["GPT2LMHeadModel"])
    model = load_model(_tiny_decoder_folder(decoder, tmp_path, config))
    assert isinstance(model, Decoder) and model.num_layers == 2 and model.final_norm_in_last_state
    tv = model.target_vectors([RIVER, CITY], "bank")
    assert np.abs(tv.vectors[0] - tv.vectors[1]).max() <= 1e-6  # causal, whatever the weights
    enc = model.encode([RIVER], attentions=True)
    from lib.models.attention import llama_layout, projection_bias

    # what the Attention page's formula and the start page's layer 0 say of each
    assert llama_layout(model) == (kind == "qwen2") and projection_bias(model)
    assert model.layer_zero == ("word piece + position" if kind == "gpt2" else decoder.layer_zero)
    assert model.positions == ("absolute" if kind == "gpt2" else "rotary")
    assert hasattr(model.model.base_model, "wpe") == (kind == "gpt2")  # GPT-2's learned position table
    # GPT-2 ties its head to the embedding table by default, Qwen2 does not: read from the weights
    assert model.tied_output_head == bool(config.tie_word_embeddings) == (kind == "gpt2")
    if kind == "gpt2":
        import torch

        from lib.models.base import tied_output_head

        untied = copy.deepcopy(model.model)
        untied.lm_head.weight = torch.nn.Parameter(untied.lm_head.weight.detach().clone())
        assert tied_output_head(model.model) and not tied_output_head(untied)
    if kind == "qwen2":
        assert model.num_kv_heads == 2
        assert recompute_attention(model, enc, 0, 1).max_abs_diff < 0.05
        # a float32 copy of the same weights: the recomputation is the model's arithmetic to float precision
        d32 = Decoder(str(tmp_path), copy.deepcopy(model.model).float(), model.tokenizer)
        assert recompute_attention(d32, d32.encode([RIVER], attentions=True), 0, 1).max_abs_diff < 1e-5
    else:
        with pytest.raises(UnsupportedArchitectureError, match="Llama-style"):
            recompute_attention(model, enc, 0, 0)
    lens = logit_lens(model, tv.vectors[0], top_k=2)
    assert lens.top_ids.shape == (model.num_hidden_states, 2)


def test_what_layer_zero_holds_is_said_as_each_model_computes_it(decoder, encoder):
    """The decoder's hidden state 0 is the word piece's embedding row alone (Llama adds position inside
    attention), so a piece has the same vector wherever it stands; the encoder's adds position (and segment)."""
    from lib.models.attention import llama_layout, projection_bias

    assert decoder.layer_zero.startswith("the word piece alone")
    assert llama_layout(decoder) and not projection_bias(decoder)  # SmolLM2's q_proj has no bias
    assert decoder.model.base_model.layers[0].self_attn.q_proj.bias is None
    assert not llama_layout(encoder) and projection_bias(encoder)
    assert encoder.layer_zero == "word piece + position + segment"
    sentence = "The bank and the bank."
    e = decoder.encode([sentence], attentions=False)
    ids, h0 = e.token_ids[0], e.hidden_states[0][0]
    table = decoder.model.get_input_embeddings().weight.detach().float().numpy()
    np.testing.assert_allclose(h0, table[ids], atol=1e-6)
    at = [i for i, t in enumerate(e.tokens[0]) if t == "Ġbank"]
    assert len(at) == 2 and np.array_equal(h0[at[0]], h0[at[1]])
    b = encoder.encode([sentence], attentions=False)
    at = [i for i, t in enumerate(b.tokens[0]) if t == "bank"]
    assert len(at) == 2 and np.abs(b.hidden_states[0][0][at[0]] - b.hidden_states[0][0][at[1]]).max() > 1e-3


@pytest.mark.slow  # over ~5 s of CPU
def test_a_decoder_link_offers_the_way_back_to_the_encoder_from_its_first_run(decoder, monkeypatch):
    """The Model panel names the model in use on the run that opens the link, not one run later."""
    from tests.test_pack import _app

    monkeypatch.delenv("CONTEXT_LENS_MODELS", raising=False)
    at = _app({"model": DECODER_MODEL})
    keys = {b.key for b in at.sidebar.button}
    assert "cl_use_encoder" in keys and "cl_use_decoder" not in keys
    at = _app({})
    keys = {b.key for b in at.sidebar.button}
    assert "cl_use_decoder" in keys and "cl_use_encoder" not in keys
