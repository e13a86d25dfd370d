"""lib/models/facts.py: the phrases a page needs, read from each real model's own facts."""

from __future__ import annotations

from lib.models.facts import (
    attention_columns,
    described,
    final_norm_note,
    hide_verb,
    layer_zero_holds,
    layer_zero_shared,
    pieces_phrase,
    replacement_choices,
    unknown_piece,
)


def test_layer_zero_as_each_model_builds_it(encoder, decoder):
    # the encoder adds a learned position row (and BERT's segment row) to the word piece's; the decoder nothing
    emb = encoder.model.embeddings
    assert emb.position_embeddings.weight.shape[0] > 0 and emb.token_type_embeddings.weight.shape[0] == 2
    assert layer_zero_holds(encoder) == "the word piece, its position and the segment"
    assert not layer_zero_shared(encoder)
    assert layer_zero_shared(decoder) and "rotates queries and keys" in layer_zero_holds(decoder)
    assert not hasattr(decoder.model.base_model, "embed_positions")


def test_how_each_model_makes_a_split_word_and_hides_a_word(encoder, decoder):
    assert pieces_phrase(encoder) == "the mean of its pieces" and "last piece" in pieces_phrase(decoder)
    assert replacement_choices(encoder) == ("mask", "unk", "delete") and hide_verb(encoder) == "mask"
    assert replacement_choices(decoder) == ("delete",) and hide_verb(decoder) == "delete"
    # by hand: the encoder reads an emoji as its unknown piece; the byte-level decoder spells it in bytes
    tok = encoder.tokenizer
    assert tok.unk_token_id in tok(["\U0001f9a9"], add_special_tokens=False)["input_ids"][0]
    assert unknown_piece(tok) == "[UNK]"
    ids = decoder.tokenizer(["\U0001f9a9"], add_special_tokens=False)["input_ids"][0]
    assert decoder.tokenizer.unk_token_id not in ids and unknown_piece(decoder.tokenizer) is None


def test_q_k_and_v_columns_as_the_weights_have_them(encoder, decoder):
    attn = decoder.model.base_model.layers[0].self_attn
    q, k = attn.q_proj.weight.shape[0], attn.k_proj.weight.shape[0]
    assert (q, k) == (576, 192) and attn.v_proj.weight.shape[0] == k
    text = attention_columns(decoder, head=4)
    assert f"uses 64 of Q's {q} columns and 64 of K's and V's {k}" in text
    assert f"each shared by {q // k} heads (grouped-query attention)" in text and text.startswith("Head 5")
    enc = encoder.model.encoder.layer[0].attention.self
    assert enc.key.weight.shape[0] == enc.query.weight.shape[0] == 384
    assert attention_columns(encoder) == "Each head uses its own slice of 32 of the 384 columns of Q, K and V"


def test_the_final_norm_and_the_models_name(encoder, decoder):
    assert final_norm_note(decoder, decoder.num_layers).startswith(f"Layer {decoder.num_layers}'s vectors")
    assert final_norm_note(decoder, decoder.num_layers - 1) == "" and final_norm_note(encoder, encoder.num_layers) == ""
    assert described(decoder) == "a 4-bit copy of SmolLM2-135M-Instruct"
    assert described(encoder) == encoder.display_name
