"""The model interface every family implements, and the data it returns.

Still one concept at 700 lines: the interface, its shared implementation and the records it returns.

Two families sit behind it: the BERT-family **encoder** (lib/models/encoder.py: reads the whole sentence at
once, both directions) and the Llama / GPT-2 / Qwen-style **decoder** (lib/models/decoder.py: reads left to
right, each position sees only itself and what came before). A page asks the model, never guesses::

    m = lib.models.load_model(name)
    m.family                    # "encoder" | "decoder"
    m.reads                     # "both directions" | "left to right"
    m.causal                    # True for a decoder: no position sees a later one
    m.piece_pooling             # "mean" (encoder) | "last" (decoder): how a split word becomes one vector
    m.sink                      # AttentionSink (decoder: position 0) | None
    m.final_norm_in_last_state  # True when hidden_states[-1] already has the final norm applied
    m.num_layers, m.num_hidden_states, m.num_heads, m.num_kv_heads, m.head_dim, m.hidden_size, m.max_tokens
    m.mask_token                # "[MASK]" for an encoder; None for a decoder (it was never taught one)
    m.positions                 # "absolute" (BERT, GPT-2: a learned row added at the input) | "rotary" (Llama,
                                #   Qwen: queries and keys rotated inside attention) | "relative"
    m.tied_output_head          # True when the output head is the input embedding table (SmolLM2, GPT-2)
    m.special_roles             # SpecialRoles: which special ids open / close a sentence

    enc = m.encode(["The bank of the river flooded."])      # Encoding, one entry per sentence
    enc.hidden_states[i]   # float32 (num_hidden_states, n_i, hidden); index 0 = embedding output
    enc.attentions[i]      # float32 (num_layers, num_heads, n_i, n_i); rows sum to 1; a decoder's is
                           #   lower-triangular (every weight above the diagonal is exactly 0)
    enc.special[i]         # bool (n_i,): the positions left out of every similarity (see Encoding)
    tv = m.target_vectors(sentences, "bank")                # TargetVectors: (n, num_hidden_states, hidden)

The shared implementation (batching by word pieces, unpadding into read-only per-sentence arrays, locating
the target, pooling its pieces, the static embedding) lives in :class:`TransformerModel`; a family overrides
only the hooks (``_body``, ``_forward_inputs``, ``_special_mask``, ``_vector_pieces``, ``_refuse_target``,
``_batch_pieces``) and says its class attributes. Arrays out are always float32, whatever the weights' dtype.

Invariants every family keeps (tests/test_encoder.py, tests/test_decoder.py): per-sentence arrays hold no
padding; a sentence encoded alone or in a batch gives the same vectors (within float32 rounding: 1e-4 for
the encoder, 1e-4 of a vector's largest value for the decoder); one lock guards tokenizer + forward pass, so threads
may share one model; arrays are read-only, so encodings can be shared between sessions through the cache.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lib.errors import ContextLensError
from lib.models.keys import model_key, parse_model_key
from lib.models.targets import (
    CharSpan,
    TargetError,
    TargetNotFoundError,
    TargetTruncatedError,
    find_target,
    pieces_for_span,
    short,
    strip_markup,
)
from lib.serving.memory import release_memory

__all__ = [
    "AttentionSink",
    "Encoding",
    "SpecialRoles",
    "TargetSpan",
    "TargetVectors",
    "TransformerModel",
    "WeightsSource",
    "concat_encodings",
    "plan_batches",
    "positions_of",
    "tied_output_head",
]

# Word pieces per forward pass, padding included (plan_batches): 4 sentences of 128, or 32 of 16. The pass's
# transient memory grows with it (~45 kB a padded piece for the encoder: hidden states, attention scores,
# the feed-forward layer); 512 costs no more CPU than 2,048 and saves ~0.1 GB at the peak of a long set
# (benchmarks/README.md). A family may choose its own (``_batch_pieces``).
BATCH_PIECES = 512
# How encode() calls the tokenizer: padded tensors, cut at the length limit, with the character offsets
# (to find the target) and the tokenizer's own special-token mask (Encoding.special).
TOKENIZER_OPTIONS = {
    "return_tensors": "pt",
    "padding": True,
    "truncation": True,
    "return_offsets_mapping": True,
    "return_special_tokens_mask": True,
    "return_overflowing_tokens": False,
}
# How encode() asks the tokenizer for lengths alone (no masks: a long set's lists are large)
LENGTHS_ONLY = {"add_special_tokens": True, "return_attention_mask": False, "return_token_type_ids": False}


@dataclass(frozen=True)
class Encoding:
    """Every layer's vectors and attentions for a list of sentences, one entry per sentence.

    sentences[i]:     the text that was encoded (brackets removed)
    tokens[i]:        list[str] of word pieces, including [CLS]/[SEP] (or a decoder's start token)
    token_ids[i]:     int64 (n_tokens_i,)
    offsets[i]:       int64 (n_tokens_i, 2) character offsets into sentences[i]; (0, 0) for special tokens
    special[i]:       bool (n_tokens_i,) True for the tokenizer's special tokens ([CLS], [SEP], a decoder's start
                      token; its ``special_tokens_mask``): the positions left out of every similarity. For a decoder
                      without a start token, position 0 too (the first word is the sink: ``AttentionSink``)
    hidden_states[i]: float32 (num_layers + 1, n_tokens_i, hidden); index 0 = embedding output; for a decoder
                      the last one has the final norm applied (``final_norm_in_last_state``)
    attentions[i]:    float32 (num_layers, num_heads, n_tokens_i, n_tokens_i); each row sums to 1; a causal
                      model's is lower-triangular (row = query, column = key; nothing above the diagonal).
                      ``attentions`` is None when the encoding was made with ``attentions=False``.
    truncated[i]:     True when the sentence was longer than the model's limit and was cut
    Arrays are read-only: the encoding is shared between sessions through the cache.
    """

    model_name: str
    sentences: tuple[str, ...]
    tokens: tuple[list[str], ...]
    token_ids: tuple[np.ndarray, ...]
    offsets: tuple[np.ndarray, ...]
    special: tuple[np.ndarray, ...]
    hidden_states: tuple[np.ndarray, ...]
    attentions: tuple[np.ndarray, ...] | None
    truncated: tuple[bool, ...]

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def num_hidden_states(self) -> int:
        """L + 1: the hidden-state axis of every ``hidden_states[i]`` (index 0 = embedding output)."""
        return int(self.hidden_states[0].shape[0]) if self.hidden_states else 0

    def subset(self, idx: Sequence[int]) -> Encoding:
        """The same encoding restricted to the sentences at ``idx``, in that order (no recomputation)."""

        def pick(seq):
            return tuple(seq[i] for i in idx)

        return Encoding(
            model_name=self.model_name,
            sentences=pick(self.sentences),
            tokens=pick(self.tokens),
            token_ids=pick(self.token_ids),
            offsets=pick(self.offsets),
            special=pick(self.special),
            hidden_states=pick(self.hidden_states),
            attentions=pick(self.attentions) if self.attentions is not None else None,
            truncated=pick(self.truncated),
        )

    @property
    def any_truncated(self) -> bool:
        return any(self.truncated)


@dataclass(frozen=True)
class TargetSpan:
    """Where the target sits in one sentence.

    sentence: the encoded text (brackets removed); sentence[start:end] is the target word as written.
    token_indices: positions of its word pieces in the encoding (>= 1 piece).
    pieces: the word pieces themselves, e.g. ("pitch", "##er") for a split word, ("Ġriver", "bank") in BPE.
    vector_indices: the pieces its vector is made of (``TransformerModel.piece_pooling``): all of
        ``token_indices`` for an encoder (averaged), the last one for a decoder (the only piece that has
        seen the whole word). Empty means all of them.
    """

    sentence: str
    start: int
    end: int
    token_indices: tuple[int, ...]
    pieces: tuple[str, ...]
    marked: bool
    vector_indices: tuple[int, ...] = ()

    def __post_init__(self):
        if not self.vector_indices:
            object.__setattr__(self, "vector_indices", tuple(self.token_indices))

    @property
    def word(self) -> str:
        return self.sentence[self.start : self.end]

    @property
    def is_split(self) -> bool:
        return len(self.pieces) > 1


@dataclass(frozen=True)
class TargetVectors:
    """The target word's vectors in each sentence.

    vectors: float32 (n_sentences, num_layers + 1, hidden): the target's vector per layer, the mean of its
             pieces in ``TargetSpan.vector_indices`` (encoder: every piece; decoder: the last one)
    static:  float32 (n_sentences, hidden): the model's input word-piece embedding of the same pieces (their
             mean), before position embeddings and any norm: the same for every sentence when the target is
             the same word
    spans:   one TargetSpan per kept sentence
    encoding: the Encoding of the kept sentences (cleaned text)
    kept:    indices into the input list of the sentences that are here
    problems: messages for the input sentences that were skipped (only with skip_missing=True)
    """

    vectors: np.ndarray
    static: np.ndarray
    spans: tuple[TargetSpan, ...]
    encoding: Encoding
    kept: tuple[int, ...]
    problems: tuple[str, ...] = ()

    @property
    def split_targets(self) -> list[TargetSpan]:
        return [s for s in self.spans if s.is_split]


def plan_batches(lengths: Sequence[int], max_pieces: int) -> list[list[int]]:
    """Group sentence indices into batches of at most ``max_pieces`` word pieces each, padding included.

    ``lengths[i]``: sentence i's length in word pieces as the model reads it (after truncation). Sorted by
    length (ties in input order), a batch grows while (its size) × (its longest sentence) fits ``max_pieces``;
    a longer sentence is a batch alone; every index appears once. A pass's memory grows with the batch's padded
    size, so bounding pieces bounds it whatever the set: short sentences run many at a time, long ones few.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (len(current) + 1) * max(int(lengths[i]), 1) > max_pieces:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


TRIM_BYTES, TRIM_LAYERS = 8 * 2**20, 8  # a batch this large gives freed memory back every 8 layers copied (~1 ms)


def _unpad(layers: list, lengths: Sequence[int]) -> list[np.ndarray]:
    """Each sentence ``j`` of a batch, its first ``lengths[j]`` (real) word pieces, as a new read-only float32
    array (layers, t, H) or (layers, heads, t, t), from ``layers``, a list of the model's (B, T, H) or (B, heads,
    T, T) tensors. The list is emptied as it is read, and a large batch's freed layers and scratch go back to the
    OS as it is (a 512-piece decoder batch held ~30 MB of scratch and its layers beside their copy, measured
    2026-11-28): nothing of the batch (padding, other sentences) stays alive with the arrays."""
    cuts = [(slice(None), slice(0, t), slice(0, t)) if layers[0].dim() == 4 else (slice(0, t),) for t in lengths]
    outs = [np.empty((len(layers), *layers[0][j][cut].shape), dtype=np.float32) for j, cut in enumerate(cuts)]
    trim = layers[0].nbytes * len(layers) >= TRIM_BYTES and release_memory()  # the pass's scratch goes back
    for k in range(len(layers)):
        layer, layers[k] = layers[k], None
        for j, cut in enumerate(cuts):
            outs[j][k] = layer[j][cut].float().numpy()
        if trim and k % TRIM_LAYERS == TRIM_LAYERS - 1:
            release_memory()  # a layer's tensor (~1 MB) sits in malloc's heap when freed: give it back as we go
    return [_readonly(o) for o in outs]


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class SpecialRoles:
    """Which special token ids open a sentence and which close or separate one, as the tokenizer says.

    opening: its ``cls_token_id`` and ``bos_token_id`` ([CLS] in BERT, ``<s>`` in RoBERTa)
    closing: its ``sep_token_id`` and ``eos_token_id`` ([SEP], ``</s>``)
    An id the tokenizer gives both roles counts as opening.
    """

    opening: frozenset[int]
    closing: frozenset[int]

    @classmethod
    def of(cls, tokenizer) -> SpecialRoles:
        """Ask a (transformers) tokenizer for its roles; a role it has no token for is empty."""

        def ids(*names: str) -> frozenset[int]:
            found = (getattr(tokenizer, name, None) for name in names)
            return frozenset(int(i) for i in found if isinstance(i, int))

        opening = ids("cls_token_id", "bos_token_id")
        return cls(opening=opening, closing=ids("sep_token_id", "eos_token_id") - opening)


def _refuse_bare_string(sentences) -> None:
    if isinstance(sentences, str):
        raise TypeError(
            "Pass a list of sentences, not one string (a string would be read one character at a time): "
            f"use [{short(sentences, 40)!r}]."
        )


def concat_encodings(parts: Sequence[Encoding]) -> Encoding:
    """One Encoding from several (e.g. a large set encoded in chunks), in order; no recomputation."""
    if not parts:
        raise ValueError("No encodings to join.")
    if len(parts) == 1:
        return parts[0]
    fields = ("sentences", "tokens", "token_ids", "offsets", "special", "hidden_states", "truncated")
    joined = {f: tuple(x for e in parts for x in getattr(e, f)) for f in fields}
    with_att = all(e.attentions is not None for e in parts)
    joined["attentions"] = tuple(x for e in parts for x in e.attentions) if with_att else None
    return Encoding(model_name=parts[0].model_name, **joined)




@dataclass(frozen=True)
class AttentionSink:
    """Where a left-to-right model puts the attention it has no use for: position 0 of every sentence.

    Every later position can see position 0 and softmax must put its weight somewhere, so trained decoders
    send most of it there (0.55-0.91 of it in SmolLM2's layers 13-30) and the vector at position 0 grows huge
    (~25,000 in a few dimensions, "massive activations"). Such a vector is no word's meaning: it is left out
    of every similarity (``Encoding.special`` is True there) and a page says so.

    position: always 0
    token:    the token the model puts there when Context Lens prepends one (the tokenizer's BOS,
              "<|im_start|>" for SmolLM2), None when the model has no BOS and the sentence's first word is
              the sink (Qwen-style); such a first word cannot be the target
    added:    True when the BOS was prepended by Context Lens (the tokenizer alone would add none)
    """

    position: int
    token: str | None
    added: bool

    @property
    def note(self) -> str:
        """One sentence for a page: what sits at position 0 and that it is left out."""
        if self.token is not None:
            return (
                f"Each sentence starts with the start token {self.token}: it collects the attention that has "
                "nowhere else to go (the attention sink) and is left out of every similarity."
            )
        return (
            "This model has no start token, so each sentence's first word collects the attention that has "
            "nowhere else to go (the attention sink): it is left out of every similarity and cannot be the target."
        )


def positions_of(config) -> str:
    """How a model of ``config`` gives a word piece its place: "rotary", "relative" or "absolute".

    "rotary" when the config sets rotary parameters (Llama, Qwen, Mistral, GPT-NeoX: ``rope_parameters``,
    ``rope_theta``, ``rotary_dim``...); "relative" for BERT's ``relative_key`` variants; otherwise "absolute",
    a learned position embedding added to the word piece's at the input (BERT, GPT-2, OPT).

    >>> from transformers import BertConfig, GPT2Config, LlamaConfig
    >>> positions_of(BertConfig()), positions_of(GPT2Config()), positions_of(LlamaConfig())
    ('absolute', 'absolute', 'rotary')
    """
    kind = getattr(config, "position_embedding_type", None)
    if kind in ("relative_key", "relative_key_query"):
        return "relative"
    rotary = ("rope_parameters", "rope_theta", "rope_scaling", "rotary_dim", "rotary_pct", "rotary_emb_base")
    if any(getattr(config, name, None) for name in rotary):
        return "rotary"
    return "absolute"


def tied_output_head(model) -> bool:
    """True when ``model``'s output head shares its weight tensor with the input embedding table.

    Read from the weights, not the config: the head's weight and the embedding's are one tensor (the same
    storage). A model loaded without a head (transformers' ``AutoModel``, as the encoder is) has none: False.
    """
    get_out = getattr(model, "get_output_embeddings", None)
    head = get_out() if callable(get_out) else None
    emb = model.get_input_embeddings()
    w_head, w_in = getattr(head, "weight", None), getattr(emb, "weight", None)
    if w_head is None or w_in is None:
        return False
    return w_head is w_in or (w_head.shape == w_in.shape and w_head.data_ptr() == w_in.data_ptr())


class WeightsSource:
    """What a weights variant (lib.models.keys.Variant.build) is made from: the model's config and weights.

    config():            the model's transformers config
    pretrained():        the trained model, a fresh copy (eager attention, the family's dtype)
    from_config(config): an untrained model of that config (the initialiser's weights), the family's class
    """

    def __init__(self, config: Callable, pretrained: Callable, from_config: Callable):
        self.config = config
        self.pretrained = pretrained
        self.from_config = from_config


class TransformerModel(ABC):
    """A loaded transformer (encoder or decoder) with eager attention. Make one with :func:`lib.models.load_model`.

    Attributes every family has (a page reads them, never a family's name):
      name:              the model key the caches use: the id, plus ``#shuffled-<seed>`` / ``#random-<seed>``
                         for a control (lib.models.keys)
      base_name, display_name ("<id> (shuffled weights, seed 0)"), weights (trained or a variant's name), seed
      family:            "encoder" or "decoder"
      reads:             "both directions" or "left to right"
      causal:            True when no position sees a later one (a decoder)
      piece_pooling:     "mean": a word split into pieces is the mean of its pieces (every piece saw the whole
                         sentence); "last": the word's last piece alone, the only one that has seen the whole
                         word in a left-to-right model
      sink:              :class:`AttentionSink` (a decoder: position 0, left out of similarity) or None
      final_norm_in_last_state: True when ``hidden_states[-1]`` already has the model's final norm applied (Llama,
                         GPT-2, Qwen): a readout through the output head must not norm it again. False for the
                         encoder (BERT normalises inside every layer and has no final norm)
      num_layers (L), num_hidden_states (L + 1), num_heads (query heads), num_kv_heads (key/value heads: fewer
      than num_heads with grouped-query attention), head_dim, hidden_size, max_tokens (the longest input in
      word pieces, special tokens included)
      mask_token:        the tokenizer's mask token ("[MASK]"), None when the model was never taught one
      positions:         how a word piece gets its place (:func:`positions_of`, read from the config):
                         "absolute" (a learned position row added to the word piece's at the input: BERT,
                         GPT-2), "rotary" (queries and keys rotated by position inside every attention layer;
                         nothing is added at the input: Llama, Qwen, SmolLM2), "relative" (BERT's relative-key
                         variants: inside attention too)
      tied_output_head:  True when the output head (hidden -> one logit per word piece) is the input embedding
                         table itself, read from the weights (:func:`tied_output_head`); False when the head
                         has weights of its own or the model was loaded without one (the encoder)
      layer_zero:        what hidden state 0 holds, in words for a chart's title ("word piece + position + segment")
      special_roles:     :class:`SpecialRoles`, which special ids open and close a sentence
      model, tokenizer:  the transformers objects (for recomputation and the logit lens)
    """

    family: ClassVar[str]
    reads: ClassVar[str]
    causal: ClassVar[bool]
    piece_pooling: ClassVar[str]
    final_norm_in_last_state: ClassVar[bool]

    def __init__(self, name: str, model, tokenizer, *, weights: str = "trained", seed=0):
        key = parse_model_key(model_key(name, weights, seed))
        self.name = key.key
        self.base_name = key.base
        self.weights = key.weights
        self.seed = key.value if key.weights != "trained" else 0
        self.display_name = key.label
        self.model = model
        self.tokenizer = tokenizer
        cfg = model.config
        self.num_layers = int(cfg.num_hidden_layers)  # L transformer layers
        self.num_hidden_states = self.num_layers + 1  # L + 1 hidden states: index 0 = embedding output
        self.num_heads = int(cfg.num_attention_heads)
        self.num_kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.num_heads)
        self.hidden_size = int(cfg.hidden_size)
        self.head_dim = int(getattr(cfg, "head_dim", None) or self.hidden_size // self.num_heads)
        limits = [getattr(cfg, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
        limits = [int(x) for x in limits if x and x < 100_000]
        self.max_tokens = min(limits) if limits else 512
        self.special_roles = SpecialRoles.of(tokenizer)  # which special ids open / close a sentence
        self.mask_token = getattr(tokenizer, "mask_token", None)
        self.positions = positions_of(cfg)
        self.tied_output_head = tied_output_head(model)
        self.layer_zero = "word piece + position embeddings"
        self.sink: AttentionSink | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, layers={self.num_layers}, heads={self.num_heads}, "
            f"hidden={self.hidden_size}, max_tokens={self.max_tokens})"
        )

    # ------------------------------------------------------------------ hooks a family overrides
    def _batch_pieces(self) -> int:
        """Word pieces per forward pass, padding included (see :func:`plan_batches`)."""
        return BATCH_PIECES

    def _body(self):
        """The transformers module encode() runs: the model without an output head."""
        return self.model

    def _forward_inputs(self, enc) -> dict:
        """The tokenizer's tensors as the body's forward() takes them."""
        return dict(enc)

    def _special_mask(self, special) -> np.ndarray:
        """bool (B, T): the positions left out of similarity, from the tokenizer's mask (B, T)."""
        return special

    @abstractmethod
    def _vector_pieces(self, token_indices: tuple[int, ...]) -> tuple[int, ...]:
        """Which of a target's word pieces its vector is made of (averaged): all, or the last one."""

    def _refuse_target(self, encoding: Encoding, i: int, span: CharSpan) -> None:
        """Raise TargetError when sentence ``i``'s target cannot be read (e.g. it sits on the attention sink)."""
        return None

    # ------------------------------------------------------------------ encoding
    def piece_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in word pieces as the model would read it uncut (special tokens included).

        Every use of the shared tokenizer goes through the model's lock: a call sets the tokenizer's
        truncation and padding on the tokenizer itself, so two sessions tokenizing at once with different
        settings could read each other's (a budget counted on cut lengths, a batch left uncut).
        """
        with self._lock:
            ids = self.tokenizer(list(texts), truncation=False, **LENGTHS_ONLY)["input_ids"]
        return [len(x) for x in ids]

    def encode(
        self,
        sentences: Sequence[str],
        *,
        attentions: bool = True,
        progress: Callable[[int, int], None] | None = None,
        max_tokens: int | None = None,
    ) -> Encoding:
        """Run the model once over ``sentences`` and return every layer's vectors (and attentions).

        ``attentions=False`` skips the attention weights (``Encoding.attentions`` is then None): they are
        ``num_layers × num_heads × n²`` floats per sentence, far more than the hidden states of a long set.

        Square brackets (target markup) are removed first. Sentences longer than ``max_tokens`` word pieces
        (default and upper bound: the model's limit ``self.max_tokens``) are truncated (``Encoding.truncated``
        says which). ``progress(done, total)`` is called after each batch. Raises ContextLensError for an
        empty list and TypeError for a bare string (a string is a sequence of characters: pass ``[sentence]``).
        Padding is on the right (safe for a causal model: a real position never sees a later one).
        """
        import torch

        _refuse_bare_string(sentences)
        texts = [strip_markup(s)[0] for s in sentences]
        if not texts:
            raise ContextLensError("No sentences to encode. Write at least one sentence.")
        n = len(texts)
        limit = self.max_tokens if max_tokens is None else max(2, min(int(max_tokens), self.max_tokens))
        lengths_full = self.piece_counts(texts)  # for the batches, and to tell which sentences get cut
        results: list[tuple | None] = [None] * n
        done = 0
        body = self._body()
        for idx in plan_batches([min(k, limit) for k in lengths_full], self._batch_pieces()):
            batch = [texts[i] for i in idx]
            with self._lock, torch.inference_mode():
                enc = self.tokenizer(batch, max_length=limit, **TOKENIZER_OPTIONS)
                offsets = enc.pop("offset_mapping")
                special_all = self._special_mask(enc.pop("special_tokens_mask").numpy().astype(bool))
                out = body(**self._forward_inputs(enc), output_hidden_states=True, output_attentions=attentions)
            if attentions and not out.attentions:
                raise RuntimeError(
                    "The model returned no attention weights. Load it with attn_implementation='eager'."
                )
            # each sentence's part is copied into an array of its own without padding, a layer at a time
            hs, att = list(out.hidden_states), (list(out.attentions) if attentions else None)
            del out
            lengths = [int(t) for t in enc["attention_mask"].sum(dim=1)]
            ids_all, off_all = enc["input_ids"].numpy(), offsets.numpy()
            del enc  # the batch's tensors go before the next batch runs
            states = _unpad(hs, lengths)
            weights = _unpad(att, lengths) if att is not None else [None] * len(idx)
            del hs, att
            for j, (i, t) in enumerate(zip(idx, lengths, strict=True)):
                ids = ids_all[j, :t].astype(np.int64)
                results[i] = (
                    self.tokenizer.convert_ids_to_tokens(ids.tolist()),
                    _readonly(ids),
                    _readonly(off_all[j, :t].astype(np.int64)),
                    _readonly(special_all[j, :t].copy()),
                    states[j],
                    weights[j],
                    lengths_full[i] > limit,
                )
            done += len(idx)
            if progress is not None:
                progress(done, n)
        return Encoding(
            model_name=self.name,
            sentences=tuple(texts),
            tokens=tuple(r[0] for r in results),
            token_ids=tuple(r[1] for r in results),
            offsets=tuple(r[2] for r in results),
            special=tuple(r[3] for r in results),
            hidden_states=tuple(r[4] for r in results),
            attentions=tuple(r[5] for r in results) if attentions else None,
            truncated=tuple(bool(r[6]) for r in results),
        )

    # ------------------------------------------------------------------ targets
    def static_embeddings(self, token_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """float32 (n, hidden): the input word-piece embeddings of ``token_ids`` (no position, no norm).

        Rows are read from the model's embedding table as they are needed (a decoder's table is 49,152 × 576;
        a float32 copy of it would cost 113 MB).
        """
        import torch

        ids = torch.as_tensor(np.asarray(token_ids, dtype=np.int64))
        with torch.inference_mode():
            rows = self.model.get_input_embeddings().weight[ids].float().numpy()
        return _readonly(rows)

    def locate(self, encoding: Encoding, spans: Sequence[CharSpan]) -> list[TargetSpan]:
        """Map character spans (from :func:`lib.models.targets.find_target`) to word pieces of ``encoding``.

        Raises TargetTruncatedError when the target was cut off by the length limit, and the family's own
        TargetError when the target cannot be read (a decoder without a start token: the first word).
        """
        located = []
        for i, span in enumerate(spans):
            self._refuse_target(encoding, i, span)
            idx = pieces_for_span(encoding.offsets[i], span.start, span.end, special=encoding.special[i])
            if not idx:
                raise TargetTruncatedError(
                    f"The target “{short(span.word, 30)}” in “{short(span.sentence)}” lies beyond the first "
                    f"{len(encoding.tokens[i])} word pieces, the most the model reads of it, so it was cut off. "
                    "Shorten the sentence.",
                    span.sentence,
                )
            pieces = tuple(encoding.tokens[i][k] for k in idx)
            located.append(TargetSpan(sentence=span.sentence, start=span.start, end=span.end, token_indices=idx,
                                      pieces=pieces, marked=span.marked, vector_indices=self._vector_pieces(idx)))
        return located

    def target_vectors(
        self,
        sentences: Sequence[str],
        target: str | None = None,
        *,
        skip_missing: bool = False,
        progress: Callable[[int, int], None] | None = None,
        encoding: Encoding | None = None,
    ) -> TargetVectors:
        """The target's vectors in each sentence, with where it was found.

        ``target`` may be None when every sentence marks its target in [brackets]. A sentence without the
        target raises :class:`TargetError` naming the sentence, unless ``skip_missing`` is True: then it is
        left out and its message is in ``problems``. ``encoding`` may be passed when the cleaned sentences
        were already encoded (it must be the encoding of exactly those sentences, in order). The vector is
        the mean of the pieces in ``TargetSpan.vector_indices`` (``piece_pooling``: all, or the last one).
        """
        _refuse_bare_string(sentences)
        if not sentences:
            raise ContextLensError("No sentences given. Write at least one sentence that contains the target.")
        char_spans: list[CharSpan] = []
        kept: list[int] = []
        problems: list[str] = []
        for i, s in enumerate(sentences):
            try:
                char_spans.append(find_target(s, target))
                kept.append(i)
            except TargetError as err:
                if not skip_missing:
                    raise
                problems.append(str(err))
        if not kept:
            raise TargetNotFoundError(
                "None of the sentences contains the target. " + (problems[0] if problems else ""), ""
            )
        clean = [sp.sentence for sp in char_spans]
        if encoding is None:
            encoding = self.encode(clean, progress=progress)
        elif list(encoding.sentences) != clean:
            raise ValueError("The encoding passed does not belong to these sentences.")
        if skip_missing:
            spans, keep2 = [], []
            for j, sp in enumerate(char_spans):
                try:
                    spans.extend(self.locate(encoding.subset([j]), [sp]))
                    keep2.append(j)
                except TargetError as err:
                    problems.append(str(err))
            if not keep2:
                raise TargetTruncatedError(problems[-1], "")
            if len(keep2) < len(char_spans):
                encoding = encoding.subset(keep2)
                kept = [kept[j] for j in keep2]
        else:
            spans = self.locate(encoding, char_spans)
        n, L1 = len(spans), self.num_hidden_states
        vectors = np.empty((n, L1, self.hidden_size), dtype=np.float32)
        static = np.empty((n, self.hidden_size), dtype=np.float32)
        for i, sp in enumerate(spans):
            idx = list(sp.vector_indices)
            vectors[i] = encoding.hidden_states[i][:, idx, :].mean(axis=1)
            static[i] = self.static_embeddings(encoding.token_ids[i][idx]).mean(axis=0)
        return TargetVectors(vectors=_readonly(vectors), static=_readonly(static), spans=tuple(spans),
                             encoding=encoding, kept=tuple(kept), problems=tuple(problems))

    def word_vectors(self, sentences: Sequence[str], target: str | None = None) -> np.ndarray:
        """float32 (n_sentences, num_layers + 1, hidden): the target's vector per sentence and layer.

        A word split into several word pieces is the mean of its pieces (encoder) or its last piece
        (decoder): see ``piece_pooling``. Raises TargetError (a ValueError) naming the first sentence
        without the target.
        """
        return self.target_vectors(sentences, target).vectors
