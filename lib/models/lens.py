"""The logit lens (decoder only): every layer's vector read out through the model's own final norm and head.

A decoder's last layer turns the vector at a position into a guess of the *next* token: the final norm, then
the output head (``lm_head``), then a softmax over the vocabulary. The logit lens (nostalgebraist, 2020)
applies that same readout to the vector after *every* layer, to see when the next-token guess takes
shape. It is a readout, not what a layer "thinks": the head was trained on the last layer's vectors only, and
what a layer knows may be there in a form this head cannot read. Yet the readings are not noise: in SmolLM2
the middle layers already guess plausible next words for the position ("bank" -> " of", " and", ","), and
those guesses converge towards the last layer's (:attr:`LogitLens.follows_top`: by default the lens follows
the last layer's own top guesses down the layers). Where the head is the input embedding table itself
(``tied_output_head``), the input layer's vector read through it gives the word piece back: layer 0
"guesses" the word itself.

``hidden_states[-1]`` already has the final norm applied (``Decoder.final_norm_in_last_state``), so the lens
norms every hidden state but the last; norming the last again would change it (RMSNorm is not idempotent
once its learned scale is applied) and give nonsense. At the last layer the lens is therefore exactly the
model's own next-token logits (tests/test_decoder.py checks it against the model's forward pass).

The norm and head run in the model's own modules and arithmetic (float32 products of its bfloat16 weights, the
head a block of the vocabulary at a time: lib/models/decoder.py), on the float32 vectors of an ``Encoding``, so
the readout is the model's own arithmetic. Logits are computed here only: ``encode`` runs the model's body
without its head (the head alone is ~28 M multiply-adds a word piece).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.models.targets import short

__all__ = ["LensError", "LogitLens", "lens_logits", "logit_lens", "probability_text", "shown_token", "word_token"]


class LensError(ContextLensError):
    """The logit lens cannot be read for this model or these words; the message says why."""


@dataclass(frozen=True)
class LogitLens:
    """The next-token readout at one position after every layer.

    K = num_hidden_states (L + 1: index 0 is the embedding output), k = top_k, w = the words asked about.
      top_ids:     int64 (K, k)     the k most probable next tokens after each layer, most probable first
      top_tokens:  K tuples of k strings, each token as text (" river": a leading space is part of the token)
      top_probs:   float32 (K, k)   their probabilities (softmax over the whole vocabulary)
      words:       the words asked about, as given
      word_ids:    int64 (w,)       the token each word is read as: the first piece of " <word>" (a word that
                   follows another starts with a space), see ``word_split``
      word_tokens: w strings        those tokens as text
      word_split:  w bools          True when the word is more than one token (its first piece is read)
      word_probs:  float32 (K, w)   each word's probability as the next token after each layer
      normed:      bool (K,)        True where the lens applied the final norm (every layer but the last,
                                    which the model has normed already)
      follows_top: True when ``words`` are the last layer's own top guesses (no words were named)
    """

    top_ids: np.ndarray
    top_tokens: tuple[tuple[str, ...], ...]
    top_probs: np.ndarray
    words: tuple[str, ...]
    word_ids: np.ndarray
    word_tokens: tuple[str, ...]
    word_split: tuple[bool, ...]
    word_probs: np.ndarray
    normed: np.ndarray
    follows_top: bool = False

    @property
    def num_hidden_states(self) -> int:
        return int(self.top_ids.shape[0])

    @property
    def settled_from(self) -> int:
        """The first hidden-state index from which the top next token is the last layer's, at every layer after."""
        final = int(self.top_ids[-1, 0])
        k = self.num_hidden_states - 1
        while k > 0 and int(self.top_ids[k - 1, 0]) == final:
            k -= 1
        return k


def _require_decoder(model) -> None:
    if getattr(model, "family", None) != "decoder":
        raise LensError(
            "The logit lens reads a left-to-right model's next-token guess; this model is an encoder, which "
            "has no next-token head. Choose the decoder."
        )


def lens_logits(model, vectors: np.ndarray) -> np.ndarray:
    """float32 (K, vocab): the output head's logits for each layer's vector at one position.

    ``model``: a :class:`lib.models.decoder.Decoder`; ``vectors``: (K, hidden) with K = num_hidden_states,
    one position's hidden states (e.g. ``Encoding.hidden_states[i][:, t]`` or ``TargetVectors.vectors[i]``).
    Every row but the last goes through the model's final norm first (the last is normed already).
    """
    import torch

    _require_decoder(model)
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2 or v.shape != (model.num_hidden_states, model.hidden_size):
        raise ValueError(f"vectors must be ({model.num_hidden_states}, {model.hidden_size}); got {v.shape}")
    head, norm = model.output_head, model.final_norm
    dtype = norm.weight.dtype  # the dtype the model's vectors are computed in (float32, or bfloat16 throughout)
    with torch.inference_mode():
        h = torch.from_numpy(v.copy()).to(dtype)
        h = torch.cat([norm(h[:-1]), h[-1:]], dim=0) if model.final_norm_in_last_state else norm(h)
        return head(h).float().numpy()


def word_token(tokenizer, word: str) -> tuple[int, str, bool]:
    """(token id, its text, split?) for a word read as the next token: the first piece of " <word>"."""
    text = word.strip()
    ids = tokenizer(" " + text, add_special_tokens=False)["input_ids"]
    if not text or not ids:
        raise LensError("Name a word to follow, e.g. river or account.")
    return int(ids[0]), tokenizer.convert_tokens_to_string([tokenizer.convert_ids_to_tokens(int(ids[0]))]), len(ids) > 1


def logit_lens(
    model, vectors: np.ndarray, *, top_k: int = 5, words: Sequence[str] = (), follow_top: int = 0
) -> LogitLens:
    """The logit lens at one position: the top next tokens after every layer and the probability of ``words``.

    ``vectors``: (num_hidden_states, hidden), one position's hidden states (the target's vector:
    ``TargetVectors.vectors[i]``, its last piece). ``words`` (at most 10, each at most 40 characters): words
    the learner names ("river", "account"); each is read as its first token (``LogitLens.word_split`` says
    when that is only part of it). With no ``words``, ``follow_top`` > 0 follows the last layer's own
    ``follow_top`` most probable tokens instead (``follows_top``; ``words`` are then their texts). Raises
    LensError for an encoder or an empty word.
    """
    _require_decoder(model)
    words = tuple(str(w) for w in words)
    if len(words) > 10:
        raise LensError("Name at most 10 words to follow.")
    for w in words:
        if len(w.strip()) > 40:
            raise LensError(f"“{short(w, 30)}” is too long for one word: name words of at most 40 characters.")
    logits = lens_logits(model, vectors).astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    k = max(1, min(int(top_k), probs.shape[1]))
    top = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    tok = model.tokenizer
    top_tokens = tuple(
        tuple(tok.convert_tokens_to_string([t]) for t in tok.convert_ids_to_tokens(row.tolist())) for row in top
    )
    follows = not words and follow_top > 0
    if follows:
        ids = top[-1, : min(int(follow_top), k)] if follow_top <= k else np.argsort(-probs[-1], kind="stable")[:follow_top]
        found = [(int(i), tok.convert_tokens_to_string([tok.convert_ids_to_tokens(int(i))]), False) for i in ids]
        words = tuple(f[1] for f in found)
    else:
        found = [word_token(tok, w) for w in words]
    word_ids = np.array([f[0] for f in found], dtype=np.int64)
    K = probs.shape[0]
    normed = np.ones(K, dtype=bool)
    if model.final_norm_in_last_state:
        normed[-1] = False
    return LogitLens(
        top_ids=_ro(top.astype(np.int64)),
        top_tokens=top_tokens,
        top_probs=_ro(np.take_along_axis(probs, top, axis=1).astype(np.float32)),
        words=words,
        word_ids=_ro(word_ids),
        word_tokens=tuple(f[1] for f in found),
        word_split=tuple(f[2] for f in found),
        word_probs=_ro(probs[:, word_ids].astype(np.float32) if words else np.zeros((K, 0), np.float32)),
        normed=_ro(normed),
        follows_top=follows,
    )


def shown_token(text: str) -> str:
    """A token's text as a page can show it: a line break as "↵", a tab as "⇥", a space it starts with as "␣",
    a no-break space as "⍽" (another piece of the vocabulary than a space).

    "␣bank" (a word of its own) and "bank" (glued to what comes before) are two pieces of the vocabulary; with
    the space written plainly they would look the same.

    >>> shown_token(" bank"), shown_token("bank"), shown_token("\\n"), shown_token("  "), shown_token("\\xa0")
    ('␣bank', 'bank', '↵', '␣␣', '⍽')
    """
    out = text.replace("\n", "↵").replace("\t", "⇥").replace("\xa0", "⍽")
    if not out.strip(" "):
        return "␣" * max(1, len(out))
    body = out.lstrip(" ")
    return "␣" * (len(out) - len(body)) + body


def probability_text(p: float) -> str:
    """A probability for a sentence: "31%" from 1 % up, "0.42%" from 0.01 %, else "3.1e-06"."""
    p = float(p)
    if p >= 0.01:
        return f"{p:.0%}"
    if p >= 1e-4:
        return f"{p:.2%}"
    return f"{p:.1e}"


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a
