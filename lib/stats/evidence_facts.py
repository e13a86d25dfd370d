"""What the evidence card (lib.stats.evidence) knows about a set besides the word's vectors, and how a page
gathers it: :class:`CardFacts`, filled by :func:`card_facts` from a Layer by layer profile, the set's target
vectors, the readout against chance and :func:`split_word_counts` (how the model's tokenizer cuts the set's words
and the reference corpus's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lib.models.encoder import TargetVectors
    from lib.stats.chance import ReadoutChance
    from lib.stats.layer_profile import LayerProfile


@dataclass(frozen=True)
class CardFacts:
    """What the card needs to know about the set besides the two representations' vectors (all optional:
    a field left out makes its check say "not checked").

    model:            the model's name
    pieces:           per sentence, the target's word pieces
    static_min:       the lowest cosine between the target's input word-piece embeddings (< 1: its forms differ)
    truncated:        sentences cut at the word-piece cap
    context_words:    per sentence, how many words it has besides the target
    split:            (words split into several word pieces, words, words read as the unknown piece) in the set
    reference_split:  the same in the reference corpus (general English), by the same tokenizer
    self_similarity:  the target's mean cosine with itself in the other sentences, at the chosen representation
    context_similarity: its mean cosine with the rest of its own sentence there (lib.stats.contextuality)
    baseline:         the cosine of random pairs of other word pieces there (anisotropy)
    readout:          (accuracy, chance's 95th percentile) of the leave-one-out sense readout there
    comparison_notes: further sentences for the Comparison field (e.g. which layer and which sentence
                      vector read the sense best)
    piece_pooling:    how the model makes a split word's vector ("mean" or "last", the model's
                      ``piece_pooling``)
    layer_zero:       what the model's layer 0 holds, in words (lib.models.facts.layer_zero_holds)
    causal:           True for a left-to-right model: two sentences identical up to the target give it the
                      same vector, which the surprise rules then explain
    target_ends:      per sentence, where the target ends (a character index): what a left-to-right model has
                      read when it makes the target's vector is the sentence up to there
    """

    model: str = ""
    pieces: tuple[tuple[str, ...], ...] = ()
    static_min: float | None = None
    truncated: int = 0
    context_words: tuple[int, ...] = ()
    split: tuple[int, int, int] | None = None
    reference_split: tuple[int, int, int] | None = None
    self_similarity: float | None = None
    context_similarity: float | None = None
    baseline: float | None = None
    readout: tuple[float, float] | None = None
    comparison_notes: tuple[str, ...] = ()
    piece_pooling: str = "mean"
    layer_zero: str = "the word piece and its position"
    causal: bool = False
    target_ends: tuple[int, ...] = ()



def split_word_counts(tokenizer, sentences: Sequence[str]) -> tuple[int, int, int]:
    """(words the tokenizer cuts into several word pieces, words, words read as its unknown piece) in
    ``sentences``: words of letters only (lib.stats.context.WORD_RE), counted through the tokenizer's
    character offsets (a piece is the word's when their characters overlap: a byte-level tokenizer's " bank"
    includes the space before it). ``tokenizer``: a Hugging Face fast tokenizer."""
    from lib.stats.context import split_words

    if not sentences:
        return 0, 0, 0
    out = tokenizer(list(sentences), add_special_tokens=False, return_offsets_mapping=True)
    unk = getattr(tokenizer, "unk_token_id", None)
    n_split = n_words = n_unk = 0
    for text, offsets, ids in zip(sentences, out["offset_mapping"], out["input_ids"], strict=True):
        offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        ids = np.asarray(ids)
        for word, a, b in split_words(text):
            if not word.isalpha():
                continue
            # a piece belongs to the word when their characters overlap: a byte-level piece's offsets take in
            # the space before its word (" bank" starts one character early), so containment would miss it
            inside = (offs[:, 0] < b) & (offs[:, 1] > a) & (offs[:, 1] > offs[:, 0])
            k = int(inside.sum())
            if k == 0:
                continue
            n_words += 1
            n_split += k > 1
            n_unk += bool(unk is not None and (ids[inside] == unk).any())
    return n_split, n_words, n_unk


def card_facts(
    profile: LayerProfile,
    tv: TargetVectors,
    r: int,
    *,
    model: str = "",
    chance: ReadoutChance | None = None,
    split: tuple[int, int, int] | None = None,
    reference_split: tuple[int, int, int] | None = None,
    comparison_notes: Sequence[str] = (),
    model_facts=None,
) -> CardFacts:
    """The :class:`CardFacts` of a Layer by layer profile at representation ``r`` (an index on its R axis).

    tv: the set's target vectors (their spans and encoding); chance: the readout against chance over the
    same R axis; split / reference_split: :func:`split_word_counts` of the set and of the reference corpus;
    model_facts: the loaded model (lib.models.base.TransformerModel), whose facts (``piece_pooling``,
    ``causal``, what its layer 0 holds) the card's sentences follow.
    """
    from lib.models.facts import layer_zero_holds
    from lib.stats.context import split_words

    said = {}
    if model_facts is not None:
        said = {
            "piece_pooling": model_facts.piece_pooling,
            "layer_zero": layer_zero_holds(model_facts),
            "causal": bool(model_facts.causal),
        }

    words = tuple(
        sum(1 for w, a, b in split_words(sp.sentence) if (b <= sp.start or a >= sp.end) and any(ch.isalnum() for ch in w))
        for sp in tv.spans
    )
    context = profile.target_context
    return CardFacts(
        model=model,
        pieces=tuple(tuple(sp.pieces) for sp in tv.spans),
        static_min=float(profile.static_cosines.min()) if len(tv.spans) > 1 else None,
        truncated=int(sum(bool(t) for t in tv.encoding.truncated)),
        context_words=words,
        split=split,
        reference_split=reference_split,
        self_similarity=None if profile.self_similarity is None else float(profile.self_similarity[r]),
        context_similarity=None if context is None else float(context[r]),
        baseline=None if profile.baseline is None else float(profile.baseline.mean[r]),
        readout=None if chance is None else (float(chance.accuracy[r]), float(chance.shuffled_p95[r])),
        comparison_notes=tuple(comparison_notes),
        target_ends=tuple(int(sp.end) for sp in tv.spans),
        **said,
    )
