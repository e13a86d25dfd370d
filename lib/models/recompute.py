"""Attention recomputed from the model's own weights: the maths behind the numbers the model returns.

Works on one sentence of a :class:`lib.models.base.Encoding` (plain numpy arrays) and the model's projection
weights; no Streamlit, no model run. :func:`recompute_attention` rebuilds one layer's attention from that
layer's input hidden states and the layer's W_Q, W_K, W_V (and biases): Q = H·W_Q + b_Q, K = H·W_K + b_K,
V = H·W_V + b_V, then softmax(QKᵀ/√d_k) per head, and reports how far that is from what the model returned.
It dispatches on the model's layout: a BERT-family encoder (absolute positions, added before the first
layer), or a Llama-style decoder (Llama, SmolLM2, Mistral, Qwen2/3), whose layer first applies its input
RMSNorm, then rotates Q and K by position (rotary position embeddings, RoPE), shares each key/value head among
several query heads (grouped-query attention) and masks every key after the query (causal mask).
:func:`llama_layout` and :func:`projection_bias` tell a page which formula to write.

What the attention weights *say* (where the target looks, the share of special tokens, labels for a chart's
axes) is in :mod:`lib.models.attention`.

Shapes use n = number of word pieces in the sentence (incl. [CLS]/[SEP]), L = number of layers,
H = number of heads, d_k = hidden size / H.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError

__all__ = [
    "AttentionRecomputation",
    "UnsupportedArchitectureError",
    "apply_rotary",
    "llama_layout",
    "projection_bias",
    "recompute_attention",
    "rms_norm",
    "rotary_angles",
    "softmax",
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
      max_abs_diff:   float                      max |weights - model_weights|; ~1e-7 to 1e-6 in float32, ~1e-2
                                                 for a decoder computing in bfloat16 (it rounds its arithmetic
                                                 and the weights it returns to 8 significant bits)
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
    Computed in float64, so `max_abs_diff` measures the model's own rounding: ~1e-7 for the encoder, ~1e-6
    for the decoder (float32 arithmetic), ~1e-2 for a decoder computing in bfloat16
    (``CONTEXT_LENS_DECODER_DTYPE=bfloat16``). A decoder's layer is recomputed with its causal mask, RoPE and
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
