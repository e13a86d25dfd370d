"""What a model's facts say in words: the phrases a page needs where the truth depends on the model.

Every function here reads the model interface's attributes (``positions``, ``piece_pooling``, ``mask_token``,
``num_kv_heads``, ``head_dim``, ``tied_output_head``, ``final_norm_in_last_state``, ``sink``...), never a
family's name, so a sentence stays true for whichever model is on screen::

    >>> class Rotary:  # the facts of a Llama-style decoder, as lib.models.decoder.Decoder states them
    ...     positions, piece_pooling, mask_token, causal = "rotary", "last", None, True
    >>> print(layer_zero_holds(Rotary()))
    the embedding table's row for its word piece, nothing else (this model adds no position there: it rotates queries and keys by position inside attention)
    >>> layer_zero_shared(Rotary()), pieces_phrase(Rotary())
    (True, 'its last piece (the only one that has seen the whole word)')

A model object is anything with those attributes (a :class:`lib.models.base.TransformerModel`); the
functions never load or run it.
"""

from __future__ import annotations

import functools

__all__ = [
    "attention_columns",
    "described",
    "final_norm_note",
    "hide_verb",
    "layer_zero_holds",
    "layer_zero_shared",
    "pieces_phrase",
    "replacement_choices",
    "unknown_piece",
]


def _has_segment(model) -> bool:
    """True when layer 0 adds a segment (token-type) embedding: BERT's (type_vocab_size 2); not RoBERTa's (1)."""
    cfg = getattr(getattr(model, "model", None), "config", None)
    return int(getattr(cfg, "type_vocab_size", 0) or 0) > 1


def layer_zero_shared(model) -> bool:
    """True when a word piece has the same layer-0 vector wherever it stands: the model adds no position at its
    input (``positions`` "rotary" or "relative"), so every occurrence of one word piece starts identical."""
    return getattr(model, "positions", "absolute") != "absolute"


def layer_zero_holds(model) -> str:
    """What hidden state 0 holds, to follow "the vector holds ...": built from ``positions`` and the config's
    segment embedding (compare ``layer_zero``, the short form a chart's title uses)."""
    if layer_zero_shared(model):
        how = (
            "it rotates queries and keys by position inside attention"
            if model.positions == "rotary"
            else "position enters inside attention"
        )
        return f"the embedding table's row for its word piece, nothing else (this model adds no position there: {how})"
    parts = ["the word piece", "its position"] + (["the segment"] if _has_segment(model) else [])
    return (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 2 else " and ".join(parts)


def pieces_phrase(model) -> str:
    """How a word split into word pieces becomes one vector (``piece_pooling``), to follow "its vector is ..."."""
    if getattr(model, "piece_pooling", "mean") == "last":
        return "its last piece (the only one that has seen the whole word)"
    return "the mean of its pieces"


@functools.lru_cache(maxsize=16)  # asked once per tokenizer: a page asks on every rerun
def _reads_unknown(tokenizer) -> bool:
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("\U0001f9a9"))  # no call that sets truncation state
    return tokenizer.unk_token_id in ids


def unknown_piece(tokenizer) -> str | None:
    """The tokenizer's unknown-word piece as typed in a sentence ("[UNK]"), or None when it never reads a word
    as unknown: a byte-level tokenizer spells any character in bytes, so its ``unk_token`` (SmolLM2's
    "<|endoftext|>") is no word the model learned to read as "unknown". Asked of the tokenizer itself: a
    character no vocabulary lists (a flamingo emoji) is read as its unknown piece, or not."""
    unk, unk_id = getattr(tokenizer, "unk_token", None), getattr(tokenizer, "unk_token_id", None)
    if unk is None or unk_id is None:
        return None
    return str(unk) if _reads_unknown(tokenizer) else None


def replacement_choices(model) -> tuple[str, ...]:
    """What "What moves the word" may put in a context word's place with this model: "mask" (its mask token,
    one per word piece) only when it has one, "unk" (its unknown-word piece) only when its tokenizer reads words
    as unknown, and "delete" always."""
    out = []
    if getattr(model, "mask_token", None):
        out.append("mask")
    tok = getattr(model, "tokenizer", None)
    if tok is not None and unknown_piece(tok) is not None:
        out.append("unk")
    return (*out, "delete")


def hide_verb(model) -> str:
    """How the model's default edit hides a context word: "mask" (its mask token) or "delete" (none)."""
    return "mask" if getattr(model, "mask_token", None) else "delete"


def described(model) -> str:
    """The model as a sentence names it: the decoder pack's own description ("a 4-bit copy of
    SmolLM2-135M-Instruct") for the pack's model, else its display name; never a family's name."""
    from lib.models.keys import DECODER_MODEL
    from lib.models.pack import DESCRIPTION

    if getattr(model, "base_name", None) == DECODER_MODEL and getattr(model, "weights", "trained") == "trained":
        return DESCRIPTION
    return str(getattr(model, "display_name", None) or getattr(model, "name", "this model"))


def attention_columns(model, head: int | None = None) -> str:
    """Which columns of Q, K and V one attention head uses, in a sentence: with grouped-query attention
    (``num_kv_heads`` < ``num_heads``) K and V are narrower than Q and each of their slices serves several query
    heads. ``head``: the 0-based query head the sentence is about (None: any head).

    >>> class GQA:
    ...     head_dim, num_heads, num_kv_heads = 64, 9, 3
    >>> print(attention_columns(GQA(), head=4))
    Head 5 uses 64 of Q's 576 columns and 64 of K's and V's 192, each shared by 3 heads (grouped-query attention)
    """
    d, h, kv = int(model.head_dim), int(model.num_heads), int(model.num_kv_heads)
    who = "Each head" if head is None else f"Head {head + 1}"
    if kv >= h:
        return f"{who} uses its own slice of {d} of the {d * h} columns of Q, K and V"
    return f"{who} uses {d} of Q's {d * h} columns and {d} of K's and V's {d * kv}, each shared by {h // kv} heads (grouped-query attention)"


def final_norm_note(model, layer: int) -> str:
    """A sentence for a page that reads hidden state ``layer``: the last one of a model whose last state has the
    final norm applied (``final_norm_in_last_state``) is on another scale than every layer before it. "" when
    nothing needs saying."""
    if not getattr(model, "final_norm_in_last_state", False) or layer != int(model.num_layers):
        return ""
    return (
        f"Layer {layer}'s vectors already went through the model's final norm, which the layers before did not: "
        "lengths and cosines jump there for that reason alone."
    )
