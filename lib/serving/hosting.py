"""Hosted mode: which models a hosted copy may load, and how large a model may be.

Set ``CONTEXT_LENS_MODELS="id1,id2"`` on a server a class reaches through links. Then:

* only the bundled default and the listed Hugging Face ids are accepted (model box and ``?model=``);
  a folder on the server's disk is never looked at;
* every refusal and every load failure gives the same message, :data:`HOSTED_REFUSAL`, so a link cannot
  tell an existing folder from a missing one (no probing of the file system);
* a model with fresh random weights (``<id>#random-<seed>``, the old control) is refused: each seed is a new
  model to build and keep, and the shuffled control answers the same question.

A visitor from another machine (``local=False``: ui.visitor, lib.serving.clients.on_this_machine) is held to
these rules even when ``CONTEXT_LENS_MODELS`` is unset, with the bundled default and the decoder pack
(:data:`OFFERED_TO_VISITORS`) as the list: the README's plain command on a lecturer's laptop lets the class on
the laptop's network open neither the laptop's folders nor a download. The lecturer, at the laptop, keeps
everything.

Independently of hosted mode, a model's parameter count is estimated from its configuration
(``AutoConfig``, a few kB) before its weights are read, and a model above ``CONTEXT_LENS_MAX_PARAMS``
(default :data:`DEFAULT_MAX_PARAMS`) is refused.

**Heavy work starts with a click.** A link never starts training on a hosted copy: it carries the recipe, and
the page shows what pressing Train will cost. A training run there is limited to ``CONTEXT_LENS_TRAIN_SECONDS``
of CPU (default :data:`DEFAULT_TRAIN_SECONDS`), so that one tab cannot hold a core for hours beside a class. A
local copy (one user, hosted mode off) has no limit unless it is set, and a link there trains on its own only
when its estimate is at most :data:`AUTO_TRAIN_SECONDS`. No streamlit here.
"""

from __future__ import annotations

import os

DEFAULT_MAX_PARAMS = 150_000_000  # bert-base (110 M) fits; bert-large (335 M) does not
DEFAULT_TRAIN_SECONDS = 120.0  # CPU seconds of one training run on a hosted copy: the bank preset's top-2 run of
# 20 epochs takes ~2 s, LoRA on 200 sentences ~70 s; every weight on 200 sentences for 20 epochs (~3 min) does not fit
AUTO_TRAIN_SECONDS = 10.0  # on a local copy, a link whose run is estimated under this trains without a click
HOSTED_REFUSAL = (
    "That model is not available on this server; the app keeps the current model. "
    "Ask whoever runs it which models it offers."
)
MODEL_REFUSAL = HOSTED_REFUSAL  # the app's one message for any model it cannot load, hosted mode or not
# (ui.cache.try_encoder): a missing folder, an existing folder that is no model and a missing id read the
# same, so a link cannot probe the server's disk; the reason goes to the server's log
_DEFAULT_ALIASES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "default")
OFFERED_TO_VISITORS = ("HuggingFaceTB/SmolLM2-135M-Instruct",)  # beside the default, when no list is set
REFUSED_VARIANTS = ("random",)  # weights variants a hosted copy never builds


def allowed_models(environ: dict[str, str] | None = None, *, local: bool = True) -> tuple[str, ...] | None:
    """The ids in ``CONTEXT_LENS_MODELS`` (comma-separated); unset, None (hosted mode off) for a visitor at this
    machine and :data:`OFFERED_TO_VISITORS` for one from another machine."""
    env = os.environ if environ is None else environ
    raw = env.get("CONTEXT_LENS_MODELS")
    if raw is None or not raw.strip():
        return None if local else OFFERED_TO_VISITORS
    return tuple(x.strip() for x in raw.split(",") if x.strip())


def hosted_mode(environ: dict[str, str] | None = None, *, local: bool = True) -> bool:
    return allowed_models(environ, local=local) is not None


def model_allowed(name: str | None, environ: dict[str, str] | None = None, *, local: bool = True) -> bool:
    """True when the model id ``name`` may be loaded: always outside hosted mode; else the default or a listed id.

    ``name`` is an id, not a model key: a variant's key (``<id>#shuffled-<seed>``, lib.models.keys) is allowed
    when its id is (same architecture and size, other weights) and :func:`variant_allowed` allows its weights,
    so a caller holding a key asks about ``lib.models.keys.base_model_id(key)`` and the key's weights (this
    module sits below the models and knows no keys).
    """
    allowed = allowed_models(environ, local=local)
    if allowed is None:
        return True
    wanted = (name or "").strip()
    return wanted in ("", *_DEFAULT_ALIASES) or wanted in allowed


def variant_allowed(weights: str, environ: dict[str, str] | None = None, *, local: bool = True) -> bool:
    """Whether weights of the kind ``weights`` ("trained", "shuffled", "random", ...) may be made: a hosted copy
    never builds a :data:`REFUSED_VARIANTS` one."""
    return allowed_models(environ, local=local) is None or weights not in REFUSED_VARIANTS


def max_parameters(environ: dict[str, str] | None = None) -> int:
    """The parameter limit from ``CONTEXT_LENS_MAX_PARAMS`` (a positive whole number), else the default."""
    env = os.environ if environ is None else environ
    raw = (env.get("CONTEXT_LENS_MAX_PARAMS") or "").strip().replace("_", "")
    try:
        value = int(float(raw)) if raw else DEFAULT_MAX_PARAMS
    except ValueError:
        return DEFAULT_MAX_PARAMS
    return value if value > 0 else DEFAULT_MAX_PARAMS


def estimate_parameters(config) -> int:
    """Parameters of a transformer from its configuration (embeddings + layers), to within a few %.

    BERT-family encoder: embeddings (vocab + positions + token types) × hidden; each layer: Q, K, V and
    output projections (4 h² + 4 h), the feed-forward block (2 h·i + i + h) and two LayerNorms (4 h).
    Llama-style decoder (rotary positions, no position table): Q and output projections (2 h²), K and V
    shrunk by grouped-query attention (2 h·kv·d), a gated feed-forward block (3 h·i), two norms (2 h);
    an untied output head adds vocab × h. SmolLM2-135M: 134.5 M.
    """
    h = int(getattr(config, "hidden_size", 0) or 0)
    layers = int(getattr(config, "num_hidden_layers", 0) or 0)
    inter = int(getattr(config, "intermediate_size", 0) or 4 * h)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    if getattr(config, "rope_parameters", None) or getattr(config, "rope_theta", None):
        heads = int(getattr(config, "num_attention_heads", 1) or 1)
        kv = int(getattr(config, "num_key_value_heads", 0) or heads)
        d = int(getattr(config, "head_dim", 0) or h // heads)
        per_layer = 2 * h * heads * d + 2 * h * kv * d + 3 * h * inter + 2 * h
        head = 0 if getattr(config, "tie_word_embeddings", True) else vocab * h
        return vocab * h + layers * per_layer + h + head
    positions = int(getattr(config, "max_position_embeddings", 0) or 0)
    types = int(getattr(config, "type_vocab_size", 0) or 0)
    embeddings = (vocab + positions + types) * h + 2 * h
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h
    return embeddings + layers * per_layer


def train_seconds_limit(environ: dict[str, str] | None = None) -> float | None:
    """CPU seconds one training run may take: ``CONTEXT_LENS_TRAIN_SECONDS`` (a positive number) when set, else
    :data:`DEFAULT_TRAIN_SECONDS` on a hosted copy and no limit (None) on a local one."""
    env = os.environ if environ is None else environ
    raw = (env.get("CONTEXT_LENS_TRAIN_SECONDS") or "").strip()
    try:
        value = float(raw) if raw else 0.0
    except ValueError:
        value = 0.0
    if value > 0 and value != float("inf"):
        return value
    return DEFAULT_TRAIN_SECONDS if hosted_mode(environ) else None


def starts_without_click(estimated_seconds: float, environ: dict[str, str] | None = None) -> bool:
    """Whether work a link asks for may start as the page opens: never on a hosted copy; on a local one, when
    it is estimated at most :data:`AUTO_TRAIN_SECONDS` of CPU."""
    return not hosted_mode(environ) and estimated_seconds <= AUTO_TRAIN_SECONDS
