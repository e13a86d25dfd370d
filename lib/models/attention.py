"""Attention, from the numbers the model returns back to the maths that produced them.

Everything here works on one sentence of an `lib.models.encoder.Encoding` (plain numpy arrays) plus, for the
recomputation, the model's own projection weights. No Streamlit, no model run:

- `recompute_attention` rebuilds one layer's attention from that layer's input hidden states and the
  layer's W_Q, W_K, W_V (and biases): Q = H·W_Q + b_Q, K = H·W_K + b_K, V = H·W_V + b_V, then
  softmax(QKᵀ/√d_k) per head, and reports how far that is from what the model returned. It dispatches on
  the model's layout: a BERT-family encoder (absolute positions, added before the first layer), or a
  Llama-style decoder (Llama, SmolLM2, Mistral, Qwen2/3), whose layer first applies its input RMSNorm, then
  rotates Q and K by position (rotary position embeddings, RoPE), shares each key/value head among several
  query heads (grouped-query attention) and masks every key after the query (causal mask).
- `target_attention` summarises where the target word looks and who looks at it, per layer and head.
- `special_token_share` measures how much attention goes to [CLS], [SEP] and punctuation per layer and head,
  the pattern described by Clark et al. (2019), "What does BERT look at?"; which pieces are special comes
  from the tokenizer's mask (`Encoding.special`) and which special piece is which from its ids
  (`Encoder.special_roles`), never from their text. `special_attention` is the share of all special pieces.
- `token_labels` / `downsample_labels` make unique, readable axis labels ("bank·6" and "bank·10" stay apart).

Shapes use n = number of word pieces in the sentence (incl. [CLS]/[SEP]), L = number of layers,
H = number of heads, d_k = hidden size / H.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.models.base import SpecialRoles

__all__ = [
    "AttentionRecomputation",
    "PooledAttention",
    "FirstPositionShare",
    "SpecialTokenShare",
    "TargetAttention",
    "UnsupportedArchitectureError",
    "contrast_sentence_index",
    "downsample_labels",
    "first_position_share",
    "weight_above_diagonal",
    "mean_over_heads",
    "pool_attention",
    "recompute_attention",
    "softmax",
    "special_attention",
    "special_token_share",
    "target_attention",
    "token_labels",
]


class UnsupportedArchitectureError(ContextLensError):
    """The model's attention layers are not laid out in a way `recompute_attention` knows."""


# --------------------------------------------------------------------------------------------------
# Recomputing attention from the weights
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionRecomputation:
    """One layer's self-attention rebuilt from its input and the model's weights.

    With `head` given, the head axis is dropped; with `head=None` every head is kept:
      q, k, v:        (H, n, d_k)  or (n, d_k)   queries, keys, values (H·W + b, split into heads)
      scores:         (H, n, n)    or (n, n)     QKᵀ/√d_k, before the softmax
      weights:        (H, n, n)    or (n, n)     softmax of `scores` over keys; every row sums to 1
      model_weights:  (H, n, n)    or (n, n)     the attention the model itself returned
      max_abs_diff:   float                      max |weights - model_weights|; ~1e-7 in float32, ~1e-2 for a
                                                 bfloat16 decoder (the model rounds its own arithmetic and the
                                                 weights it returns to 8 significant bits)
      causal:         True when every key after the query was masked (weights above the diagonal are 0;
                      ``scores`` are kept unmasked, before the mask and the softmax)
      rotary:         True when Q and K were rotated by position (RoPE) before the dot products
      num_kv_heads:   key/value heads; fewer than the query heads with grouped-query attention, where
                      query head h uses key/value head h // (num_heads / num_kv_heads); ``k`` and ``v`` are
                      given per query head (each shared head repeated), so every shape above holds
    Rows are queries (the token that looks), columns are keys (the token looked at).
    """

    layer: int
    head: int | None
    d_k: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    model_weights: np.ndarray
    max_abs_diff: float
    causal: bool = False
    rotary: bool = False
    num_kv_heads: int | None = None

    @property
    def scale(self) -> float:
        """√d_k, what the dot products are divided by."""
        return float(np.sqrt(self.d_k))

    def dot_products(self, query: int) -> np.ndarray:
        """(n,) or (H, n): the query row's dot products q·k with every key, before the division by √d_k."""
        return np.einsum("...d,...kd->...k", self.q[..., query, :], self.k)

    def rows_summing_to_one(self, tol: float = 1e-6) -> int:
        """How many query rows of `weights` sum to 1 within ``tol`` (over all heads when head is None)."""
        return int(np.sum(np.abs(self.weights.sum(axis=-1) - 1) < tol))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along `axis` (subtracts the row maximum first)."""
    x = np.asarray(x, dtype=np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def _unwrap_model(obj):
    """The transformers model inside an `Encoder` (its `.model`), or `obj` itself if it already is one."""
    model = getattr(obj, "model", obj)
    return getattr(model, "base_model", model)


def _projections(model, layer: int):
    """(query, key, value) nn.Linear modules of `layer` and the number of heads, for known layouts.

    BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, MiniLM: model.encoder.layer[l].attention.self.{query,key,value}
    DistilBERT:                                        model.transformer.layer[l].attention.{q_lin,k_lin,v_lin}
    """
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", "unknown")
    position_type = getattr(config, "position_embedding_type", "absolute")
    if position_type not in (None, "absolute"):
        raise UnsupportedArchitectureError(
            f"This {model_type} model uses '{position_type}' position embeddings inside attention, which "
            "the recomputation does not model. Pick a BERT-family model with absolute positions."
        )
    encoder = getattr(model, "encoder", None)
    layers = getattr(encoder, "layer", None)
    if layers is not None:
        self_attn = getattr(getattr(layers[0], "attention", None), "self", None)
        if self_attn is not None and all(hasattr(self_attn, a) for a in ("query", "key", "value")):
            if not 0 <= layer < len(layers):
                raise IndexError(f"layer must be 0..{len(layers) - 1}, got {layer}")
            sa = layers[layer].attention.self
            return sa.query, sa.key, sa.value, int(sa.num_attention_heads)
    transformer = getattr(model, "transformer", None)
    layers = getattr(transformer, "layer", None)
    if layers is not None and hasattr(getattr(layers[0], "attention", None), "q_lin"):
        if not 0 <= layer < len(layers):
            raise IndexError(f"layer must be 0..{len(layers) - 1}, got {layer}")
        att = layers[layer].attention
        return att.q_lin, att.k_lin, att.v_lin, int(att.n_heads)
    raise UnsupportedArchitectureError(
        f"Recomputing attention from the weights is implemented for BERT-family encoders (BERT, RoBERTa, "
        f"ELECTRA, MiniLM, DistilBERT) and Llama-style decoders (Llama, SmolLM2, Mistral, Qwen), not for "
        f"'{model_type}' ({type(model).__name__}). The heatmaps still show the model's own attention; pick "
        "one of those for the maths check."
    )


def _linear(hidden: np.ndarray, linear, rows: slice) -> np.ndarray:
    """hidden (n, d_in) @ W[rows]ᵀ + b[rows] for a torch nn.Linear (which stores W as (d_out, d_in)).

    Only the output columns in `rows` are computed (one head's slice). -> (n, len(rows))
    """
    w = linear.weight.detach()[rows].float().cpu().numpy().astype(np.float64)
    out = hidden @ w.T
    if linear.bias is not None:
        out = out + linear.bias.detach()[rows].float().cpu().numpy().astype(np.float64)
    return out


def recompute_attention(encoder, encoding, sentence_index: int, layer: int, head: int | None = None):
    """Rebuild layer `layer`'s attention for one sentence from its input hidden states and the weights.

    encoder:        a loaded model (`lib.models.load_model`: encoder or decoder) or a transformers model whose
                    weights produced `encoding`
    encoding:       the `Encoding` of the sentence (hidden_states[i]: (L + 1, n, hidden),
                    attentions[i]: (L, H, n, n))
    sentence_index: which sentence of the encoding
    layer:          0-based attention layer; its input is hidden_states[i][layer]
    head:           0-based head, or None for all heads

    The attention mask is all ones: per-sentence arrays hold only that sentence's real word pieces (padding
    keys get exactly zero weight in the model, so dropping them changes nothing).
    Computed in float64, so `max_abs_diff` measures the model's own rounding: ~1e-7 for a float32 encoder,
    ~1e-2 for a bfloat16 decoder. A decoder's layer is recomputed with its causal mask, RoPE and
    grouped-query attention (`causal`, `rotary`, `num_kv_heads` on the result).
    Returns an `AttentionRecomputation`. Raises `UnsupportedArchitectureError` for unknown layouts.
    """
    if encoding.attentions is None:
        raise ValueError(
            "This encoding has no attention weights: encode the sentence with attentions=True "
            "(ui.cache.sentence_attention does)."
        )
    hidden_states = np.asarray(encoding.hidden_states[sentence_index])
    model_attn = np.asarray(encoding.attentions[sentence_index])
    num_layers = model_attn.shape[0]
    if not 0 <= layer < num_layers:
        raise IndexError(f"layer must be 0..{num_layers - 1}, got {layer}")
    body = _unwrap_model(encoder)
    if _llama_layers(body) is not None:
        return _recompute_llama(body, hidden_states, model_attn, layer, head)
    q_lin, k_lin, v_lin, num_heads = _projections(body, layer)
    if head is not None and not 0 <= head < num_heads:
        raise IndexError(f"head must be 0..{num_heads - 1}, got {head}")

    h_in = hidden_states[layer].astype(np.float64)  # (n, hidden): the input of this layer
    n = h_in.shape[0]
    d_k = int(q_lin.weight.shape[0]) // num_heads
    heads = range(num_heads) if head is None else [head]
    # Head h owns output columns h·d_k .. (h+1)·d_k - 1 of each projection; compute only the heads asked for.
    cols = slice(heads[0] * d_k, (heads[-1] + 1) * d_k)

    def project(linear) -> np.ndarray:  # -> (heads, n, d_k)
        return _linear(h_in, linear, cols).reshape(n, len(heads), d_k).transpose(1, 0, 2)

    q, k, v = project(q_lin), project(k_lin), project(v_lin)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)  # (heads, n, n)
    weights = softmax(scores, axis=-1)  # (heads, n, n)
    model_weights = model_attn[layer][cols.start // d_k : cols.stop // d_k].astype(np.float64)
    # one head was computed (heads == [head]): its arrays are the first of each
    return _recomputed(
        layer, head, int(d_k), (q, k, v, scores, weights, model_weights), 0 if head is not None else None
    )


def _recomputed(
    layer: int, head: int | None, d_k: int, arrays: tuple, pick: int | None, **flags
) -> AttentionRecomputation:
    """The recomputation's record from its ``(q, k, v, scores, weights, model_weights)``, each ``(H, ...)``.

    With ``pick`` the record holds that head's arrays alone; ``max_abs_diff`` compares what it holds."""
    if pick is not None:
        arrays = tuple(a[pick] for a in arrays)
    q, k, v, scores, weights, model_weights = arrays
    max_abs_diff = float(np.max(np.abs(weights - model_weights))) if weights.size else 0.0
    return AttentionRecomputation(
        layer=layer,
        head=head,
        d_k=d_k,
        q=q,
        k=k,
        v=v,
        scores=scores,
        weights=weights,
        model_weights=model_weights,
        max_abs_diff=max_abs_diff,
        **flags,
    )


def _llama_layers(body):
    """The decoder layers of a Llama-style body (``layers[l].self_attn.q_proj``), else None."""
    layers = getattr(body, "layers", None)
    if layers is None or not len(layers):
        return None
    attn = getattr(layers[0], "self_attn", None)
    if attn is None or not all(hasattr(attn, a) for a in ("q_proj", "k_proj", "v_proj")):
        return None
    return layers


def llama_layout(encoder) -> bool:
    """True for a Llama-style decoder (RMSNorm before attention, rotary positions on queries and keys)."""
    return _llama_layers(_unwrap_model(encoder)) is not None


def projection_bias(encoder) -> bool:
    """True when the model adds a bias to its queries, keys and values (BERT, GPT-2, Qwen2), False when not
    (Llama, SmolLM2): what the page's formula writes."""
    layers = _llama_layers(_unwrap_model(encoder))
    if layers is None:
        return True  # BERT-family and GPT-2 layouts carry biases
    return getattr(layers[0].self_attn.q_proj, "bias", None) is not None


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm (Llama): each row divided by its root mean square (plus eps under the root), times ``weight``."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotary_angles(config, n: int, head_dim: int, rotary=None) -> tuple[np.ndarray, np.ndarray, float]:
    """(cos, sin, scaling): RoPE's (n, head_dim) tables for positions 0..n-1.

    Default RoPE: frequency i (0 ≤ i < head_dim/2) is θ^(-2i/head_dim) with θ = ``rope_theta``; position p
    turns each pair of coordinates (j, j + head_dim/2) by the angle p·freq_j. Another RoPE type (Llama 3's
    scaled frequencies) takes the frequencies the model precomputed (its rotary module's ``inv_freq``).
    """
    params = getattr(config, "rope_parameters", None) or {}
    rope_type = params.get("rope_type", "default")
    scaling = 1.0
    if rope_type == "default":
        theta = float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
        inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    elif rotary is not None and hasattr(rotary, "inv_freq"):
        inv_freq = rotary.inv_freq.detach().double().cpu().numpy()
        scaling = float(getattr(rotary, "attention_scaling", 1.0))
    else:
        raise UnsupportedArchitectureError(
            f"This model rotates positions with '{rope_type}' RoPE, which the recomputation does not model."
        )
    angles = np.outer(np.arange(n, dtype=np.float64), inv_freq)  # (n, head_dim/2)
    emb = np.concatenate([angles, angles], axis=-1)  # (n, head_dim)
    return np.cos(emb) * scaling, np.sin(emb) * scaling, scaling


def apply_rotary(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x (..., n, head_dim) rotated by position: x·cos + rotate_half(x)·sin, rotate_half(a, b) = (-b, a)."""
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def _weight(module) -> np.ndarray:
    return module.weight.detach().float().cpu().numpy().astype(np.float64)


def _recompute_llama(body, hidden_states: np.ndarray, model_attn: np.ndarray, layer: int, head: int | None):
    """`recompute_attention` for a Llama-style decoder layer (see the module docstring)."""
    config = body.config
    layers = _llama_layers(body)
    if not 0 <= layer < len(layers):
        raise IndexError(f"layer must be 0..{len(layers) - 1}, got {layer}")
    block = layers[layer]
    attn = block.self_attn
    num_heads = int(config.num_attention_heads)
    num_kv = int(getattr(config, "num_key_value_heads", None) or num_heads)
    d_k = int(getattr(config, "head_dim", None) or config.hidden_size // num_heads)
    if head is not None and not 0 <= head < num_heads:
        raise IndexError(f"head must be 0..{num_heads - 1}, got {head}")
    n = hidden_states.shape[1]
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True) and n > int(window):
        raise UnsupportedArchitectureError(
            f"This model attends only to the last {window} positions, and the sentence is longer; the "
            "recomputation models full causal attention."
        )
    if float(getattr(config, "partial_rotary_factor", 1.0) or 1.0) != 1.0:
        raise UnsupportedArchitectureError(
            "This model rotates only part of each head (partial RoPE), which the recomputation does not model."
        )
    norm = block.input_layernorm
    eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))
    x = rms_norm(hidden_states[layer].astype(np.float64), _weight(norm), eps)  # (n, hidden)
    everything = slice(None)
    q = _linear(x, attn.q_proj, everything).reshape(n, num_heads, d_k).transpose(1, 0, 2)
    k = _linear(x, attn.k_proj, everything).reshape(n, num_kv, d_k).transpose(1, 0, 2)
    v = _linear(x, attn.v_proj, everything).reshape(n, num_kv, d_k).transpose(1, 0, 2)
    for name, arr in (("q_norm", q), ("k_norm", k)):  # Qwen3 normalises each head's Q and K before RoPE
        qk_norm = getattr(attn, name, None)
        if qk_norm is not None:
            arr[...] = rms_norm(arr, _weight(qk_norm), float(getattr(qk_norm, "variance_epsilon", 1e-6)))
    cos, sin, _ = rotary_angles(config, n, d_k, getattr(body, "rotary_emb", None))
    q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    group = num_heads // num_kv
    k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)  # query head h uses kv head h // group
    scale = float(getattr(attn, "scaling", d_k**-0.5))
    scores = q @ k.transpose(0, 2, 1) * scale  # (H, n, n)
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    weights = softmax(np.where(future, -np.inf, scores), axis=-1)
    model_weights = model_attn[layer].astype(np.float64)
    arrays = (q, k, v, scores, weights, model_weights)
    return _recomputed(layer, head, d_k, arrays, head, causal=True, rotary=True, num_kv_heads=num_kv)


# --------------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------------


def mean_over_heads(attentions: np.ndarray) -> np.ndarray:
    """(L, H, n, n) -> (L, n, n): the average head per layer. Rows still sum to 1 (mean of distributions)."""
    return np.asarray(attentions).mean(axis=1)


def entropy_fraction(attentions: np.ndarray) -> np.ndarray:
    """(L, H, n, n) -> (L,): each attention row's entropy over the uniform row's (log n), mean over heads and rows.

    1.0 means every row spreads its weight equally over the n word pieces (the layer averages the sentence);
    lower means the rows pick words. A one-piece sentence has no choice to make: 1.0.
    """
    a = np.asarray(attentions, dtype=np.float64)
    n = a.shape[-1]
    if n < 2:
        return np.ones(a.shape[0])
    p = np.clip(a, 1e-12, 1.0)
    return (-(p * np.log(p)).sum(axis=-1) / np.log(n)).mean(axis=(1, 2))


@dataclass(frozen=True)
class TargetAttention:
    """Where the target word looks, and who looks at it, in every layer and head.

    For a target split into several word pieces, `attends_to` averages the pieces' rows (so it still sums
    to 1: one distribution over keys), and `attended_by` sums the pieces' columns (the share of each query's
    attention that lands anywhere on the target word, between 0 and 1).
      token_indices:          positions of the target's word pieces
      attends_to:             (L, H, n)  attention from the target to every token
      attended_by:            (L, H, n)  attention from every token to the target
      attends_to_mean:        (L, n)     `attends_to` averaged over heads; rows sum to 1
      attended_by_mean:       (L, n)     `attended_by` averaged over heads
    """

    token_indices: tuple[int, ...]
    attends_to: np.ndarray
    attended_by: np.ndarray
    attends_to_mean: np.ndarray
    attended_by_mean: np.ndarray


def target_attention(attentions: np.ndarray, token_indices: Sequence[int]) -> TargetAttention:
    """Summarise one sentence's attention (L, H, n, n) around the target's word pieces `token_indices`."""
    attentions = np.asarray(attentions, dtype=np.float64)
    idx = tuple(int(i) for i in token_indices)
    n = attentions.shape[-1]
    if not idx:
        raise ValueError("The target has no word pieces in this sentence; mark the word in [brackets].")
    if any(not 0 <= i < n for i in idx):
        raise IndexError(f"target positions {idx} are outside the sentence's {n} word pieces")
    sel = list(idx)
    attends_to = attentions[:, :, sel, :].mean(axis=2)  # (L, H, n)
    attended_by = attentions[:, :, :, sel].sum(axis=3)  # (L, H, n)
    return TargetAttention(
        token_indices=idx,
        attends_to=attends_to,
        attended_by=attended_by,
        attends_to_mean=attends_to.mean(axis=1),
        attended_by_mean=attended_by.mean(axis=1),
    )


def most_attended(weights: np.ndarray, token_indices: Sequence[int]) -> tuple[int, float]:
    """(key, weight): the word piece the target looks at most in one head's weights (n, n).

    The target's rows (its word pieces ``token_indices``) are averaged; its own pieces are left out unless
    they are all there is. Ties go to the earlier piece.
    """
    w = np.asarray(weights, dtype=np.float64)
    row = w[list(token_indices)].mean(axis=0)
    own = set(int(i) for i in token_indices)
    candidates = [k for k in range(len(row)) if k not in own] or list(range(len(row)))
    k = max(candidates, key=lambda c: row[c])
    return k, float(row[k])


def strongest_keys(row: np.ndarray, k: int = 3) -> list[int]:
    """The ``k`` keys a query row (n,) gives most attention to, largest first (ties: the earlier key first)."""
    order = np.argsort(-np.asarray(row, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


def is_punctuation(token: str) -> bool:
    """True if a word piece is made only of punctuation ("." "," "##." "'"), ignoring WordPiece/BPE marks."""
    core = token.removeprefix("##").lstrip("Ġ▁")
    return bool(core) and all(unicodedata.category(ch).startswith("P") for ch in core)


def _over_heads(part: str) -> property:
    """A read-only property: the (L, H) field ``part`` averaged over heads, (L,)."""
    return property(lambda self: getattr(self, part).mean(axis=1), doc=f"(L,) ``{part}`` averaged over heads")


@dataclass(frozen=True)
class SpecialTokenShare:
    """How much attention goes to [CLS], [SEP], punctuation and everything else (Clark et al. 2019).

    Each value is the attention a query gives to that kind of key, averaged over all queries, so the
    four parts add up to 1 for every layer and head.
      cls, sep, punctuation, other:   (L, H)
      *_mean (properties):            (L,)   averaged over heads; cls_sep_mean = cls_mean + sep_mean
      opening_label, closing_label:   what to call the two kinds of special key on a page: "[CLS]" / "[SEP]"
                                      for BERT, the start token's own text (e.g. "<|im_start|>") for a decoder,
                                      taken from the tokens at the opening / closing positions; closing_label
                                      is "" when the sentence has no closing special token (a decoder's)
    """

    cls: np.ndarray
    sep: np.ndarray
    punctuation: np.ndarray
    other: np.ndarray
    opening_label: str = "[CLS]"
    closing_label: str = "[SEP]"

    cls_mean = _over_heads("cls")
    sep_mean = _over_heads("sep")
    punctuation_mean = _over_heads("punctuation")
    other_mean = _over_heads("other")

    @property
    def cls_sep_mean(self) -> np.ndarray:
        """(L,) attention landing on [CLS] or [SEP] (every special token), averaged over heads and queries."""
        return self.cls_mean + self.sep_mean


def _attention_to(attentions: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(L, H): the attention a query gives to the keys in ``mask`` (n,), averaged over the n queries."""
    return attentions[..., mask].sum(axis=-1).mean(axis=-1)


def special_attention(attentions: np.ndarray, special: Sequence[bool]) -> np.ndarray:
    """(L,) the share of one sentence's attention (L, H, n, n) that lands on special tokens.

    Averaged over heads and queries. special: (n,) bool, the tokenizer's special-token mask
    (``Encoding.special``). Equals ``special_token_share(...).cls_sep_mean``, and needs no ids: it does not
    ask which special token is which.
    """
    attentions = np.asarray(attentions, dtype=np.float64)
    is_special = np.asarray(special, dtype=bool)
    if len(is_special) != attentions.shape[-1]:
        n = attentions.shape[-1]
        raise ValueError(f"got {len(is_special)} special flags for attention over {n} positions")
    return _attention_to(attentions, is_special).mean(axis=-1)


def special_token_share(
    attentions: np.ndarray,
    tokens: Sequence[str],
    special: Sequence[bool],
    *,
    ids: Sequence[int],
    roles: SpecialRoles,
) -> SpecialTokenShare:
    """Split one sentence's attention (L, H, n, n) by the kind of key token: [CLS], [SEP], punctuation, other.

    tokens: the n word pieces (for punctuation); special: (n,) bool, the tokenizer's special-token mask
    (``Encoding.special``), which alone decides what is special; ids: the n token ids
    (``Encoding.token_ids``); roles: the tokenizer's own answer to which special id opens a sentence
    (``Encoder.special_roles``). A special piece whose id opens a sentence counts as [CLS] (``<s>`` in
    RoBERTa), every other special piece as [SEP] (``</s>``, or a special token with no role), so
    [CLS] + [SEP] is all the attention to special pieces. Never the token's text.
    """
    attentions = np.asarray(attentions, dtype=np.float64)
    n = attentions.shape[-1]
    is_special = np.asarray(special, dtype=bool)
    if len(tokens) != n or len(is_special) != n or len(ids) != n:
        raise ValueError(
            f"got {len(tokens)} tokens, {len(ids)} ids and {len(is_special)} special flags for attention "
            f"over {n} positions"
        )
    is_cls = is_special & np.isin(np.asarray(ids, dtype=np.int64), list(roles.opening))
    is_sep = is_special & ~is_cls
    is_punct = np.array([is_punctuation(t) for t in tokens], dtype=bool) & ~is_special
    is_other = ~(is_cls | is_sep | is_punct)

    def share(mask: np.ndarray) -> np.ndarray:  # (L, H)
        return _attention_to(attentions, mask)

    def label(mask: np.ndarray, default: str) -> str:
        names = sorted({tokens[k] for k in np.flatnonzero(mask)})
        return " / ".join(names) if names else default

    return SpecialTokenShare(
        cls=share(is_cls),
        sep=share(is_sep),
        punctuation=share(is_punct),
        other=share(is_other),
        opening_label=label(is_cls, "[CLS]"),
        closing_label=label(is_sep, ""),  # "": the sentence has no closing special token (a decoder's)
    )


@dataclass(frozen=True)
class FirstPositionShare:
    """The attention that later positions give to position 0 ([CLS] in BERT, the start token in a decoder).

    per_layer: (L,)  the weight on key 0, averaged over heads and over the queries 1..n-1 (position 0's own
                     row is left out: in a causal model it can only look at itself)
    uniform:   float the same average if every query spread its weight evenly over what it may see:
               1/n for every query of an encoder, 1/(t+1) for query t of a causal model
    """

    per_layer: np.ndarray
    uniform: float


def weight_above_diagonal(attentions: np.ndarray) -> float:
    """The largest weight any query gives to a later key, over every layer and head of (..., n, n).

    0.0 exactly for a causal model (its mask sets those scores to −∞ before the softmax); an encoder's is
    well above 0.
    """
    a = np.asarray(attentions)
    n = a.shape[-1]
    above = np.triu(np.ones((n, n), dtype=bool), 1)
    return float(a[..., above].max()) if n > 1 else 0.0


def first_position_share(attentions: np.ndarray, *, causal: bool) -> FirstPositionShare:
    """How much attention queries 1..n-1 give to position 0, per layer, for one sentence (L, H, n, n).

    ``causal``: the model's mask (``TransformerModel.causal``), for the even-spread comparison. Needs n >= 2.
    """
    a = np.asarray(attentions, dtype=np.float64)
    n = a.shape[-1]
    if n < 2:
        raise ValueError("a sentence of one word piece has no later position to look at position 0")
    per_layer = a[:, :, 1:, 0].mean(axis=(1, 2))
    t = np.arange(1, n)
    uniform = float(np.mean(1.0 / (t + 1))) if causal else 1.0 / n
    return FirstPositionShare(per_layer=per_layer, uniform=uniform)


# --------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------


_BYTE_MARKS = str.maketrans({"Ġ": "␣", "Ċ": "↵", "ĉ": "⇥"})  # byte-level BPE's space, line break, tab


def shown_token(token: str) -> str:
    """A word piece as a chart shows it: byte-level BPE (GPT-2, Llama 3, SmolLM2) writes the space before a word
    as "Ġ" and a line break as "Ċ"; they are shown as "␣" and "↵", and a no-break space (its two bytes, "Âł") as
    "⍽", so it does not pass for a space. WordPiece tokens never hold those marks."""
    return token.replace("Âł", "⍽").translate(_BYTE_MARKS)


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One unique label per position: "token·position" (e.g. "[CLS]·0", "bank·6", "bank·10"; "␣bank·3" for a
    byte-level piece, see :func:`shown_token`).

    Chart axes treat labels as categories, so two "bank"s must not share a label or their rows merge.
    """
    return [f"{shown_token(tok)}·{i}" for i, tok in enumerate(tokens)]


def downsample_labels(labels: Sequence[str], max_labels: int = 40) -> tuple[list[int], list[str]]:
    """Which axis labels to print when there are too many to read: every k-th, always the first and last.

    Only the printed tick labels are thinned; every row and column of the data stays in the chart.
    Returns (positions, labels) of the ticks to show.
    """
    n = len(labels)
    if max_labels < 2:
        raise ValueError("max_labels must be at least 2")
    if n <= max_labels:
        return list(range(n)), list(labels)
    step = int(np.ceil((n - 1) / (max_labels - 1)))
    positions = list(range(0, n, step))
    if positions[-1] != n - 1:
        if n - 1 - positions[-1] < step / 2:
            positions[-1] = n - 1
        else:
            positions.append(n - 1)
    return positions, [labels[p] for p in positions]


@dataclass(frozen=True)
class PooledAttention:
    """Attention matrices shrunk to at most `max_size` × `max_size` blocks, for thumbnails only.

    weights: (..., m, m)  row block = mean over its queries, column block = sum over its keys, so every row
                          still sums to 1 (it is the attention of an average query in the block).
    edges:   (m + 1,)     token positions where the blocks start; block b covers edges[b]..edges[b+1]-1
    """

    weights: np.ndarray
    edges: np.ndarray

    @property
    def pooled(self) -> bool:
        return len(self.edges) - 1 < int(self.edges[-1])

    def block_labels(self, labels: Sequence[str]) -> list[str]:
        """A label per block: the token's own label, or "first…last" for a block of several tokens."""
        out = []
        for a, b in zip(self.edges[:-1], self.edges[1:], strict=True):
            out.append(labels[a] if b - a == 1 else f"{labels[a]}…{labels[b - 1]}")
        return out


def pool_attention(weights: np.ndarray, max_size: int = 48) -> PooledAttention:
    """Shrink (..., n, n) attention to (..., m, m) with m <= max_size, keeping rows summing to 1.

    Used only where a small picture of a long sentence is needed (the all-heads overview); the large
    heatmaps always show every token.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[-1]
    m = min(n, max_size)
    edges = np.linspace(0, n, m + 1).round().astype(int)
    if m == n:
        return PooledAttention(weights=weights, edges=edges)
    cols = np.add.reduceat(weights, edges[:-1], axis=-1)  # (..., n, m): sum over each key block
    sizes = np.diff(edges)
    rows = np.add.reduceat(cols, edges[:-1], axis=-2) / sizes[:, None]  # (..., m, m): mean over queries
    return PooledAttention(weights=rows, edges=edges)


def contrast_sentence_index(senses: Sequence[str | None], index: int) -> int | None:
    """The sentence to show next to sentence `index`: the first one with a different known sense,
    else the next other sentence; None if there is only one sentence."""
    n = len(senses)
    if n < 2:
        return None
    own = senses[index]
    if own is not None:
        for j in range(n):
            if j != index and senses[j] is not None and senses[j] != own:
                return j
    return (index + 1) % n
