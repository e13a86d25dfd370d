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
  values too (benchmarks/decoder_table.py, 2026-11-27); those positions are ordinary words and stay in.
* **Normed last state.** ``hidden_states[-1]`` already has the model's final norm applied (Llama, Qwen and
  GPT-2 alike): the logit lens (lib/models/lens.py) norms every other layer and not that one.
* **Grouped-query attention.** ``num_kv_heads`` key/value heads are shared by ``num_heads`` query heads
  (SmolLM2: 9 query heads, 3 key/value heads); the attentions returned are per query head.
* **Positions and the head.** ``positions`` is "rotary" for Llama / Qwen (nothing is added at the input:
  hidden state 0 is the word piece's row alone) and "absolute" for GPT-2; ``tied_output_head`` says whether the
  output head is the embedding table itself (SmolLM2 and GPT-2: yes), which the logit lens's reading of
  layer 0 depends on.
* **No mask token**: ``mask_token`` is None (lib.stats.context masks words another way for a decoder).

**Arithmetic.** The weights stay in bfloat16, as the pack holds them (0.27 GB for SmolLM2), and every product is
computed in float32: a linear layer's weight is turned into float32 as it is used (one matrix at a time, a few
MB), the norms, the rotary positions and the residual stream are float32, and the embedding table's rows become
float32 as they are read. bfloat16 → float32 is exact, so the vectors are those of a float32 copy of the same
weights (0.54 GB) to float32 rounding (tests/test_decoder.py holds every hidden state against the pack read by
plain transformers in float32: cosine 1.000000). The output head (the embedding table, tied) is read the same
way, a block of the vocabulary at a time, where the logit lens asks for it. Each linear layer's weight is
stored input-major (its transpose made contiguous): float32 products of a few word pieces ran up to 2× faster
that way here and a batch's as fast, so a sentence alone costs ~25 % less. Loading reads each weight from the
pack's file once (:func:`compute_in_float32`'s ``read``), so no second copy of the file passes through memory.

Measured 2026-11-27 at commit 3ae0cd3 (benchmarks/decoder_speed.py, one torch thread as the server runs, CPU
per sentence, load average 19–41): 46–48 ms in a batch and 153–158 ms one by one, against the encoder's 4.6–5.2
and 16–18 ms, 8.6–10× (7.6–8.9× at load 15–17 the same day): the ratio of their arithmetic, ~107 M multiply-adds
a word piece against ~11 M. A fresh process held 668 MB after loading it, 675 MB after the default preset, 710
MB at its peak (bfloat16 arithmetic: 424, 635, 659 MB). Doing the products in bfloat16
(``CONTEXT_LENS_DECODER_DTYPE=bfloat16``, the arithmetic before) is ~3× faster on a CPU with bfloat16 matrix
instructions (AMX, as this machine has now) and ~5× slower on one without (AVX2 only, where it cost 47× the
encoder); it rounds each product's inputs to 8 significant bits, and the vectors drift (cosine to float32 down
to 0.9886 for an ordinary word piece of the corpus's first 24 sentences): a page would show the rounding, not
the model. ONNX Runtime 1.31.1 in float32 was 1.2–1.4× faster in a batch and 1.7× one by one, for a second
runtime and a 0.54 GB float32 copy of the weights in memory and in the image: not taken.
``CONTEXT_LENS_DECODER_DTYPE=float32`` (once the fast setting, float32 weights) now means the default. Padding is on the right
(a real position never sees a later one, so padding changes nothing); a tokenizer without a pad token pads
with its end token.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from lib.models.base import AttentionSink, Encoding, TransformerModel
from lib.models.targets import CharSpan, TargetError, short

__all__ = ["Decoder", "arithmetic", "compute_in_float32"]

# Word pieces per forward pass, padding included: the decoder's pass holds ~31 × 576 floats a piece plus its
# attention scores (9 heads). Half the encoder's 512: four sentences of 105 pieces held 36 MB beside what they keep
# in batches of 512, 22 MB in batches of 256, and 48 corpus sentences cost 40 ms of CPU each against 45 (2026-11-28)
_BATCH_PIECES = 256


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


def arithmetic() -> str:
    """How decoder products are computed: "float32" (the default), or "bfloat16" when ``CONTEXT_LENS_DECODER_DTYPE``
    says ``bfloat16`` / ``bf16`` (see the module docstring). Any other value, "float32" included, is the default."""
    wanted = os.environ.get("CONTEXT_LENS_DECODER_DTYPE", "").strip().lower()
    return "bfloat16" if wanted in ("bfloat16", "bf16") else "float32"


# Vocabulary rows of the output head turned into float32 at a time: 8,192 × 576 floats, 19 MB
_HEAD_ROWS = 8192


@functools.cache
def _float32_modules():
    """The three module classes :func:`compute_in_float32` gives a model (made once, when torch is first needed)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Float32Linear(nn.Linear):
        """A linear layer whose bfloat16 weight is turned into float32 as it is used (a float32 input, float32 out)."""

        def forward(self, x):
            return F.linear(x, self.weight.float(), self.bias)

    class Float32Embedding(nn.Embedding):
        """An embedding table kept in bfloat16 whose rows come out in float32."""

        def forward(self, ids):
            return super().forward(ids).float()

    class Float32Head(nn.Linear):
        """The output head: its bfloat16 rows (the embedding table, when tied) multiplied in float32, _HEAD_ROWS
        vocabulary entries at a time, so no float32 copy of the whole table is ever made."""

        def forward(self, x):
            x, w = x.float(), self.weight
            out = torch.cat([F.linear(x, w[i : i + _HEAD_ROWS].float()) for i in range(0, w.shape[0], _HEAD_ROWS)], -1)
            return out if self.bias is None else out + self.bias

    return Float32Linear, Float32Embedding, Float32Head


def compute_in_float32(model, read: Callable[[str], object] | None = None):
    """Make ``model`` (a causal LM loaded in bfloat16) compute in float32 while its weights stay bfloat16; returns it.

    Linear layers keep their bfloat16 weight, stored input-major, and multiply in float32; the output head
    (``get_output_embeddings``) does the same a block of the vocabulary at a time; embedding tables stay
    bfloat16 and hand out float32 rows; every other parameter and buffer (norms, biases, rotary frequencies, a
    GPT-2 ``Conv1D``'s weights) becomes float32. The vectors are then those of the same weights in float32.

    ``read(name)``: the weight ``name`` (e.g. ``"model.layers.0.mlp.up_proj.weight"``) as a fresh tensor, or None
    to take the model's own. :meth:`Decoder.load_pretrained` reads each one from the weights file: the model's
    own are views of the file mapped into memory, and copying them would bring every page of the file into the
    process too (a 0.27 GB spike at load) before it could be let go.
    """
    import torch
    from torch import nn

    linear, embedding, head_class = _float32_modules()
    head = model.get_output_embeddings()

    def weight(name: str, module):
        fresh = read(f"{name}.weight") if read is not None else None
        return (module.weight.data if fresh is None else fresh).to(torch.bfloat16), fresh is not None

    for name, module in model.named_modules():
        kind = type(module)
        if kind is nn.Embedding:
            w, fresh = weight(name, module)
            module.weight.data = w if fresh else w.clone()  # its own memory, not the file's
            module.__class__ = embedding
        elif kind is nn.Linear:
            if module is head:
                module.__class__ = head_class
            else:  # input-major storage: float32 products of a few word pieces run faster (module docstring)
                module.weight.data = weight(name, module)[0].t().contiguous().t()
                module.__class__ = linear
            if module.bias is not None:
                module.bias.data = module.bias.data.float()
        else:
            for p in module.parameters(recurse=False):
                p.data = p.data.float()
            for key, b in module.named_buffers(recurse=False):
                if b.is_floating_point():
                    module._buffers[key] = b.float()
    return model


def _file_reader(source: str, stack: contextlib.ExitStack) -> Callable[[str], object] | None:
    """``read(name)`` for :func:`compute_in_float32`: a weight read from ``source``'s safetensors files (one
    read each, into memory of its own), None when it is not there; None when ``source`` has no such file."""
    from pathlib import Path

    from safetensors import safe_open

    folder = Path(source)
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    handles = [stack.enter_context(safe_open(str(f), framework="pt", device="cpu", backend="pread")) for f in files]
    where = {key: h for h in handles for key in h.keys()}  # noqa: SIM118 (a safetensors handle, not a dict)
    return (lambda name: where[name].get_tensor(name) if name in where else None) if where else None


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
        """The trained causal LM, eager attention, bfloat16 weights computing as :func:`arithmetic` says."""
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(source, attn_implementation="eager", dtype=torch.bfloat16, **kw)
        if arithmetic() != "float32":
            return model
        with contextlib.ExitStack() as stack:
            return compute_in_float32(model, _file_reader(source, stack))

    @staticmethod
    def from_config(config):
        """An untrained causal LM of ``config`` (the initialiser's weights, drawn in bfloat16; the caller seeds
        torch), computing as :func:`arithmetic` says."""
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.bfloat16)
        return compute_in_float32(model) if arithmetic() == "float32" else model
