"""The decoder family: left-to-right language models (Llama, SmolLM2, Qwen, Mistral, GPT-2) behind the model interface.

A decoder reads left to right: position t sees positions 0..t and nothing after (causal attention), so a
word's vector cannot depend on anything to its right. What is particular to it here:

* **Which piece is the word.** A word split into pieces ("Ġriver" + "bank" for "riverbank") is its *last*
  piece: the only one that has seen the whole word (the first piece has not yet seen the rest). The static
  embedding is the same piece's row of the embedding table, so ``static`` equals ``vectors[:, 0]``.
* **The attention sink.** Trained decoders send most of the attention that has nowhere better to go to
  position 0, and the vector there grows huge (~25,000 in a few dimensions). SmolLM2's tokenizer adds no start
  token, so the first *word* would become the sink and carry those values. Context Lens therefore prepends
  the tokenizer's own start token (BOS, ``<|im_start|>`` for SmolLM2) when the tokenizer has one and does not
  add it: the sink is then a special token, left out of every similarity by ``Encoding.special``, and the
  first word is an ordinary word again (measured on "The bank of the river flooded.": largest value at
  position 0 ~25,000 with or without the start token; on "The" 22,400 without it, 520 with it). A model
  without any start token (Qwen) keeps position 0 as the sink: ``special`` is True there, and a target that
  is the first word is refused with a sentence. ``Decoder.sink`` (:class:`lib.models.base.AttentionSink`)
  says which, for a page to show. The start token does not take all of it: in 5 of the reference corpus's
  first 120 sentences the first word after it (a word split into pieces: "Vol", "Cop") carried massive
  values too (benchmarks/README.md); those positions are ordinary words and stay in.
* **Normed last state.** ``hidden_states[-1]`` already has the model's final norm applied (Llama, Qwen and
  GPT-2 alike): the logit lens (lib/models/lens.py) norms every other layer and not that one.
* **Grouped-query attention.** ``num_kv_heads`` key/value heads are shared by ``num_heads`` query heads
  (SmolLM2: 9 query heads, 3 key/value heads); the attentions returned are per query head.
* **Positions and the head.** ``positions`` is "rotary" for Llama / Qwen (nothing is added at the input:
  hidden state 0 is the word piece's row alone) and "absolute" for GPT-2; ``tied_output_head`` says whether the
  output head is the embedding table itself (SmolLM2 and GPT-2: yes), which the logit lens's reading of
  layer 0 depends on.
* **No mask token**: ``mask_token`` is None (lib.stats.context masks words another way for a decoder).

Weights load as bfloat16 (half float32's memory: 0.27 GB for SmolLM2), and every array out is float32.
``CONTEXT_LENS_DECODER_DTYPE=float32`` loads them as float32 instead (0.54 GB): on a CPU without bfloat16
instructions (AVX2 only, as the shared two-core machine) torch emulates bfloat16 matrix products and a
float32 pass was ~3× faster there (a 13-piece sentence: 0.21 s of CPU against 0.63 s, measured 2026-11-27
while other jobs loaded the machine); a host with memory to spare may prefer it. fp16 was slower still. Padding is on the right (a real position never sees a later one, so padding changes nothing);
a tokenizer without a pad token pads with its end token.
"""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np

from lib.models.base import AttentionSink, Encoding, TransformerModel
from lib.models.targets import CharSpan, TargetError, short

__all__ = ["Decoder"]

# Word pieces per forward pass, padding included: the decoder's pass holds ~31 × 576 floats a piece plus its
# attention scores (9 heads), about the encoder's per piece, so the same bound serves
_BATCH_PIECES = 512


def _first_id(tokenizer) -> int | None:
    ids = tokenizer("a", add_special_tokens=True)["input_ids"]
    return int(ids[0]) if ids else None


def ensure_start_token(tokenizer) -> AttentionSink:
    """Make the tokenizer open every sentence with its start token when it has one; say where the sink is.

    A tokenizer that adds its BOS already is left as it is (``added=False``); one that has a BOS and does not
    add it is told to (transformers rebuilds its post-processor, so ``special_tokens_mask`` marks it and
    ``offsets`` give it (0, 0)); one without a BOS leaves the first word as the sink (``token=None``).
    """
    bos, bos_id = getattr(tokenizer, "bos_token", None), getattr(tokenizer, "bos_token_id", None)
    if bos is None or bos_id is None:
        return AttentionSink(position=0, token=None, added=False)
    if _first_id(tokenizer) == bos_id:
        return AttentionSink(position=0, token=str(bos), added=False)
    tokenizer.add_bos_token = True
    if _first_id(tokenizer) != bos_id:
        return AttentionSink(position=0, token=None, added=False)
    return AttentionSink(position=0, token=str(bos), added=True)


def weights_dtype():
    """The torch dtype decoder weights load in: bfloat16, or ``CONTEXT_LENS_DECODER_DTYPE`` ("float32")."""
    import torch

    wanted = os.environ.get("CONTEXT_LENS_DECODER_DTYPE", "").strip().lower()
    return torch.float32 if wanted in ("float32", "fp32") else torch.bfloat16


class Decoder(TransformerModel):
    """A loaded left-to-right decoder with eager attention. Use :func:`lib.models.load_model` to make one.

    See the module docstring for what differs from the encoder and :class:`lib.models.base.TransformerModel`
    for the attributes. ``model`` is the whole causal LM (with its final norm and output head, which the
    logit lens uses); ``encode`` runs its body only (no head: 49,152 logits a piece are not needed there).
    """

    family: ClassVar[str] = "decoder"
    reads: ClassVar[str] = "left to right"
    causal: ClassVar[bool] = True
    piece_pooling: ClassVar[str] = "last"
    final_norm_in_last_state: ClassVar[bool] = True

    def __init__(self, name: str, model, tokenizer, *, weights: str = "trained", seed=0):
        tokenizer.padding_side = "right"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        super().__init__(name, model, tokenizer, weights=weights, seed=seed)
        self.mask_token = None
        self.sink = ensure_start_token(tokenizer)
        # GPT-2 adds a learned position embedding to the word piece's ("absolute"); Llama and Qwen add none
        # ("rotary"): position enters inside attention, by rotating queries and keys, so hidden state 0 is the
        # word piece's embedding alone
        absolute = self.positions == "absolute"
        self.layer_zero = "word piece + position" if absolute else "the word piece alone; position enters in attention"

    # ------------------------------------------------------------------ hooks
    def _batch_pieces(self) -> int:
        return _BATCH_PIECES

    def _body(self):
        return self.model.base_model

    def _forward_inputs(self, enc) -> dict:
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "use_cache": False}

    def _special_mask(self, special) -> np.ndarray:
        if self.sink is not None and self.sink.token is None:  # no start token: the first word is the sink
            special = special.copy()
            special[:, 0] = True
        return special

    def _vector_pieces(self, token_indices: tuple[int, ...]) -> tuple[int, ...]:
        return (int(token_indices[-1]),)

    def _refuse_target(self, encoding: Encoding, i: int, span: CharSpan) -> None:
        if self.sink is None or self.sink.token is not None or len(encoding.offsets[i]) == 0:
            return
        first_end = int(encoding.offsets[i][0][1])
        if span.start < first_end:
            raise TargetError(
                f"The target “{short(span.word, 30)}” is the first word of “{short(span.sentence)}”. This model "
                "has no start token, so the first word is where it puts spare attention (the attention sink) "
                "and carries no meaning of its own. Put a word before it.",
                span.sentence,
            )

    # ------------------------------------------------------------------ the readout (lib.models.lens)
    @property
    def final_norm(self):
        """The model's final norm module (Llama's ``model.norm``, GPT-2's ``transformer.ln_f``)."""
        body = self.model.base_model
        for attr in ("norm", "ln_f", "final_layer_norm"):
            if hasattr(body, attr):
                return getattr(body, attr)
        raise AttributeError(f"{type(body).__name__} has no final norm Context Lens knows")

    @property
    def output_head(self):
        """The output head (``lm_head``): hidden -> one logit per vocabulary entry."""
        return self.model.get_output_embeddings()

    # ------------------------------------------------------------------ how lib.models.loading builds one
    @staticmethod
    def load_tokenizer(source: str, **kw):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(source, **kw)

    @staticmethod
    def load_pretrained(source: str, **kw):
        """The trained causal LM, eager attention, bfloat16 (:func:`weights_dtype`)."""
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_pretrained(source, attn_implementation="eager", dtype=weights_dtype(), **kw)

    @staticmethod
    def from_config(config):
        """An untrained causal LM of ``config`` (the initialiser's weights; the caller seeds torch), bfloat16."""
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=weights_dtype())
