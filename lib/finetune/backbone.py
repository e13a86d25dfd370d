"""What fine-tuning needs to know about a model's insides, in one place.

Every other module of :mod:`lib.finetune` reaches the transformers model only through these functions: which
parameters belong to which layer, a copy that shares the frozen weights, running the top layers from cached
hidden states, the LoRA adapters (``peft``) and merging them. A new architecture is taught here, nowhere else.
The rest of the package sees plain tensors: padded word-piece ids ``(n, T)``, attention masks ``(n, T)`` and
hidden states ``(n, T, H)``.

Two families: the encoder (BERT: the transformers model *is* its body, a bidirectional mask) and the decoder (a
causal LM: its body, ``model.base_model``, runs the layers and the final norm; a causal mask; Llama-style layers
take the rotary position embeddings as an argument). What trains is float32 whatever the model's dtype: an
AdamW step of 5e-5 on a weight near 0.05 is 2.5e-6, below bfloat16's resolution there (2^-8 of it, 2e-4), so a
bfloat16 weight would not move. A model kept in bfloat16 (the decoder, :func:`lib.models.decoder.weights_dtype`)
gets float32 copies of its trained layers, cast back at their edges (:func:`shared_copy`), and float32 LoRA
adapters (peft casts at theirs); every frozen weight stays the pretrained tensor.

Layer vocabulary as in the rest of the app: hidden-state index 0 is the embedding output, index ℓ (1…L) the
output of transformer layer ℓ; a parameter belongs to index 0 (the embeddings), to ℓ (its layer) or to
none (a pooler the hidden states never use).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable

import numpy as np

__all__ = [
    "LORA_TARGETS",
    "adapter_parameters",
    "body",
    "effective_weights",
    "inject_lora",
    "last_hidden",
    "layer_of",
    "lora_modules",
    "merge_lora",
    "pad_ids",
    "pad_hidden",
    "run_top_layers",
    "shared_copy",
    "supports_cached_layers",
    "transformer_layers",
    "unique_bytes",
]

# Where the transformer layers sit, by architecture: BERT / RoBERTa / MiniLM ("encoder.layer"), DistilBERT
# ("transformer.layer"), GPT-2 ("h"), Llama-style decoders ("layers").
_LAYER_PATHS = ("encoder.layer", "transformer.layer", "layers", "h")
_LAYER_RE = re.compile(r"(?:^|\.)(?:encoder\.layer|transformer\.layer|layers|h)\.(\d+)\.")
_EMBED_RE = re.compile(r"(?:^|\.)(?:embeddings|embed_tokens|embed_positions|wte|wpe)\.")
# LoRA's usual targets: the attention's query, key and value projections (Hu et al. 2021 adapt W_q and W_v;
# the key is cheap to add). BERT names them query/key/value; decoders q_proj/k_proj/v_proj.
LORA_TARGETS = {"bert": ("query", "key", "value"), "default": ("q_proj", "k_proj", "v_proj")}


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def transformer_layers(model):
    """The model's transformer layers as a ``torch.nn.ModuleList`` (L entries), or None if unknown."""
    import torch

    for owner in (model, getattr(model, "base_model", model)):  # a causal LM keeps them in its body
        for path in _LAYER_PATHS:
            layers = _get(owner, path)
            if isinstance(layers, torch.nn.ModuleList) and len(layers):
                return layers
    return None


def layer_of(name: str) -> int | None:
    """The hidden-state index a parameter (by its ``named_parameters`` name) feeds: 0 for the embeddings,
    ℓ for transformer layer ℓ (1-based, as its output is hidden state ℓ), None for anything else (pooler)."""
    m = _LAYER_RE.search(name)
    if m:
        return int(m.group(1)) + 1
    if _EMBED_RE.search(name) or name.startswith("embeddings."):
        return 0
    return None


def shared_copy(model, trainable: Iterable[int]):
    """A copy of ``model`` whose parameters of the hidden-state indices in ``trainable`` are its own (float32,
    requiring gradients) while every other parameter and every buffer *is* the original's tensor (shared,
    frozen).

    So the frozen layers of the fine-tuned model are bit-identical to the pretrained ones by construction
    and cost no memory; ``trainable`` empty shares everything (the base for LoRA), every index copies all.
    The original's parameters are marked frozen (``requires_grad=False``): the pretrained model is never
    trained, and a shared tensor must not collect gradients. In a model of another dtype (bfloat16) each
    trained layer computes in float32 and hands its output on in the model's dtype (:func:`_float32_layer`).
    """
    import torch

    keep = set(trainable)
    shared = {id(p): p for name, p in model.named_parameters() if layer_of(name) not in keep}
    shared.update({id(b): b for b in model.buffers()})  # buffers (position ids) never train: shared too
    for p in model.parameters():
        p.requires_grad_(False)
    clone = copy.deepcopy(model, memo=dict(shared))
    dtype = model_dtype(model)
    for name, p in clone.named_parameters():
        mine = layer_of(name) in keep
        if mine and p.dtype != torch.float32:
            p.data = p.data.float()
        p.requires_grad_(mine)
    if dtype != torch.float32:
        layers = transformer_layers(clone)
        for ell in sorted(keep):
            if ell == 0 or layers is None:
                raise ValueError("only transformer layers of a model in a dtype other than float32 can be trained")
            _float32_layer(layers[ell - 1], dtype)
    return clone


def model_dtype(model):
    """The dtype of the model's (frozen) weights: float32 for the encoder, bfloat16 for a decoder kept so."""
    return next(model.parameters()).dtype


def _cast(x, dtype):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dtype)
    if isinstance(x, tuple):
        return tuple(_cast(t, dtype) for t in x)
    return x


def _float32_layer(layer, dtype) -> None:
    """Make a float32 layer of a model in ``dtype`` take that model's tensors and hand its output on in ``dtype``
    (forward hooks: the rest of the model is unchanged; casting up is exact, casting down rounds as every layer
    of that model does)."""
    import torch

    def before(_module, args, kwargs):
        return _cast(args, torch.float32), {k: _cast(v, torch.float32) for k, v in kwargs.items()}

    def after(_module, _args, _kwargs, output):
        return _cast(output, dtype)

    layer.register_forward_pre_hook(before, with_kwargs=True)
    layer.register_forward_hook(after, with_kwargs=True)


def unique_bytes(model, base) -> int:
    """Bytes of ``model``'s parameters and buffers that are not ``base``'s own tensors (what it adds)."""
    seen = {t.data_ptr() for t in list(base.parameters()) + list(base.buffers())}
    total = 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


# ----------------------------------------------------------------------------------- inputs
def pad_ids(token_ids, pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-sentence word-piece ids (each ``(n_i,)``) padded on the right: ids ``(n, T)`` int64 and the
    attention mask ``(n, T)`` int64 (1 for a real piece)."""
    T = max(len(t) for t in token_ids)
    ids = np.full((len(token_ids), T), int(pad_id), dtype=np.int64)
    mask = np.zeros((len(token_ids), T), dtype=np.int64)
    for i, t in enumerate(token_ids):
        ids[i, : len(t)] = t
        mask[i, : len(t)] = 1
    return ids, mask


def pad_hidden(hidden_states, index: int) -> np.ndarray:
    """Hidden state ``index`` of every sentence (each ``(K, n_i, H)``), padded with zeros: ``(n, T, H)``."""
    T = max(h.shape[1] for h in hidden_states)
    H = hidden_states[0].shape[2]
    out = np.zeros((len(hidden_states), T, H), dtype=np.float32)
    for i, h in enumerate(hidden_states):
        out[i, : h.shape[1]] = h[index]
    return out


# ----------------------------------------------------------------------------------- forward passes
def body(model):
    """The module that turns word pieces into hidden states: the model itself for an encoder, a causal LM's
    ``base_model`` (its layers and final norm, without the output head)."""
    return model.base_model


def _has_head(model) -> bool:
    return body(model) is not model


def last_hidden(model, ids, mask):
    """The last hidden state ``(n, T, H)`` of a whole forward pass from word-piece ids (a decoder's with its
    final norm applied, as ``Encoding.hidden_states[-1]``), in float32."""
    kw = {"use_cache": False} if _has_head(model) else {}
    return body(model)(input_ids=ids, attention_mask=mask, **kw).last_hidden_state.float()


def supports_cached_layers(model, *, causal: bool = False) -> bool:
    """True when the top layers can run alone from cached hidden states (:func:`run_top_layers`): an encoder's
    layers, or a Llama-style decoder's (rotary positions given to each layer, a final norm)."""
    if transformer_layers(model) is None:
        return False
    if not causal:
        return not getattr(model.config, "is_decoder", False)
    b = body(model)
    return hasattr(b, "rotary_emb") and hasattr(b, "norm")


def run_top_layers(model, start: int, hidden, mask, *, causal: bool = False):
    """Run transformer layers ``start + 1 … L`` on hidden state ``start`` (``(n, T, H)``, the output of layer
    ``start``); returns hidden state L ``(n, T, H)`` in float32. The same arithmetic as the model's own pass:
    the bidirectional mask built by transformers from the 0/1 ``mask``, or for a decoder the causal mask, the
    rotary position embeddings of positions 0 … T - 1 and the final norm after the last layer."""
    import torch

    layers = transformer_layers(model)
    if not causal:
        from transformers.masking_utils import create_bidirectional_mask

        m = create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=mask)
        for layer in layers[start:]:
            out = layer(hidden, m)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden.float()
    from transformers.masking_utils import create_causal_mask

    b = body(model)
    hidden = hidden.to(model_dtype(model))  # the model's own pass hands each layer its dtype
    positions = torch.arange(hidden.shape[1]).unsqueeze(0)
    m = create_causal_mask(config=b.config, inputs_embeds=hidden, attention_mask=mask, past_key_values=None,
                           position_ids=positions)  # fmt: skip
    rotary = b.rotary_emb(hidden, position_ids=positions)
    for layer in layers[start:]:
        out = layer(hidden, attention_mask=m, position_embeddings=rotary, position_ids=positions)
        hidden = out[0] if isinstance(out, tuple) else out
    return b.norm(hidden).float()


# ----------------------------------------------------------------------------------- LoRA (peft)
def lora_targets(model) -> tuple[str, ...]:
    """The module names LoRA adapts in ``model``: its attention's query, key and value projections."""
    kind = getattr(model.config, "model_type", "")
    return LORA_TARGETS["bert"] if kind in ("bert", "roberta", "distilbert", "xlm-roberta") else LORA_TARGETS[
        "default"
    ]


def lora_modules(model) -> list:
    """The linear projections LoRA adapts in ``model`` (:func:`lora_targets` of every layer), in order."""
    import torch

    names = lora_targets(model)
    return [m for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and name.rpartition(".")[2] in names and layer_of(name + ".") is not None]  # fmt: skip


def inject_lora(model, rank: int, generator):
    """Put LoRA adapters of rank ``rank`` on the attention's query, key and value projections of ``model``
    (a :func:`shared_copy` that shares every weight) with ``peft``; only the adapters train.

    Each adapted projection computes ``W x + (α / r) B A x`` with ``A`` ``(r, in)`` drawn from ``generator``
    (Kaiming-uniform, as peft does, but reproducible) and ``B`` ``(out, r)`` zero, so training starts from
    the pretrained model exactly; α = 2r (scale 2). The adapters are float32 in a model of any dtype (peft
    casts the input to theirs and the sum back to the layer's). Returns the model, adapted in place.
    """
    import math

    import torch
    from peft import LoraConfig, inject_adapter_in_model

    config = LoraConfig(r=int(rank), lora_alpha=2 * int(rank), lora_dropout=0.0, target_modules=list(lora_targets(model)))
    with torch.random.fork_rng(devices=[]):  # peft's own initialisation draws from the global generator
        model = inject_adapter_in_model(config, model)
    for name, p in model.named_parameters():
        if "lora_" in name and p.dtype != torch.float32:
            p.data = p.data.float()
        p.requires_grad_("lora_" in name)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                torch.nn.init.kaiming_uniform_(p, a=math.sqrt(5), generator=generator)
            elif "lora_B" in name:
                p.zero_()
    return model


def adapter_parameters(model) -> list:
    """The LoRA adapters' parameters of an adapted model (empty for a plain one)."""
    return [p for name, p in model.named_parameters() if "lora_" in name]


def merge_lora(model):
    """A plain transformers model with the adapters merged into the weights (``W + (α / r) B A``): a full
    copy (the adapted model and the pretrained weights it shares are left as they are), no peft module left."""
    from peft.tuners.lora import LoraLayer

    merged = copy.deepcopy(model)
    for name, module in list(merged.named_modules()):
        if isinstance(module, LoraLayer):
            module.merge()
            parent_name, _, child = name.rpartition(".")
            parent = merged.get_submodule(parent_name) if parent_name else merged
            setattr(parent, child, module.get_base_layer())
    return merged


def effective_weights(model) -> dict:
    """``{parameter name: tensor}`` of the weights the model computes with, named as in the plain model:
    an adapted projection's weight is ``W + (α / r) B A`` (its adapters folded in, nothing changed in place)."""
    out = {}
    deltas = {}
    if adapter_parameters(model):  # peft is imported only for a model that has adapters
        from peft.tuners.lora import LoraLayer
    else:
        LoraLayer = ()  # noqa: N806  (isinstance(x, ()) is False)
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            deltas[f"{name}.base_layer.weight"] = sum(
                module.get_delta_weight(a) for a in module.active_adapters
            )
    for name, p in model.named_parameters():
        if "lora_" in name:
            continue
        t = p.detach()
        if name in deltas:
            t = t + deltas[name].detach()
        out[name.replace(".base_layer.", ".")] = t
    return out
