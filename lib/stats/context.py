"""What moves the word: mask or swap one context word and measure how far the target's vector moves.

The experiment behind the course's argument ("the context pushes the word toward one meaning"), run on
the real model:

    >>> from lib.models.encoder import load_encoder
    >>> enc = load_encoder()
    >>> occ = occlusion(enc, "We sat on the grassy river [bank] and watched the boats .")
    >>> occ.words
    ('We', 'sat', 'on', 'the', 'grassy', 'river', 'and', 'watched', 'the', 'boats', '.')
    >>> occ.shift.shape == (enc.num_layers + 1, len(occ.words))   # 1 - cosine(target, target with the word masked)
    True
    >>> float(abs(occ.shift[0]).max())   # layer 0: no attention yet, so no word moves the target
    0.0

Words are the sentence's whitespace/punctuation words (``don't`` is one word, ``.`` is one), found with a
regular expression on the text and mapped to word pieces through the tokenizer's character offsets. The
target's own word is never listed.

**Masking keeps the positions aligned.** With the default replacement every word piece of the word becomes
the tokenizer's mask token (``kiwi`` = ``ki ##wi`` becomes ``[MASK] [MASK]``), so the edited sentence has
exactly as many word pieces as the original, every other word piece keeps its position, and the only
change the model sees is the word itself. (One ``[MASK]`` for the whole word would shift the positions of
everything after it, and part of the measured "effect" would be that shift.) Consequently the shift at
layer 0 (word piece + position, before any attention) is 0: the context only reaches the target through
attention. Any other replacement text (``"savings"``, or ``""`` to delete the word) replaces the whole
word; the piece count may then change, and the target is found again in the edited text through its
character span, so it is always the same word that is compared.

The variants run without attention weights (``enc.encode(variants, attentions=False)``), a slice of about one
forward batch at a time (:data:`VARIANT_PIECES` word pieces) of which only the target's vectors are kept; the
original sentence is encoded once more on its own with attention weights, for the target's attention to
each word. A 20-word sentence costs the model passes of 20 sentences plus one.

Attention is not explanation: the attention a word receives and the effect of removing it are different
measurements, and they often disagree (Jain & Wallace 2019, "Attention is not Explanation";
Wiegreffe & Pinter 2019, "Attention is not not Explanation"). :func:`attention_effect_correlation` measures
how far they agree here, per layer. What an edit does to the word's sense (the nearest sense average per layer,
each word's pull towards a sense, swaps to try) is lib.stats.context_senses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.models.encoder import Encoder
from lib.models.targets import (
    SPECIAL_TOKENS_IN_TEXT,
    CharSpan,
    TargetError,
    find_target,
    has_markup,
    pieces_for_span,
    short,
)
from lib.stats.chance import layer_runs
from lib.stats.similarity import unit_rows

# Bounds: one occlusion runs the model on one sentence per context word.
MAX_WORDS = 60  # context words (each is one sentence in the batch)
MAX_PIECES = 128  # word pieces of the sentence, [CLS] and [SEP] included
MAX_REPLACEMENT_CHARS = 40
# Word pieces of variants encoded at a time (about one forward batch): of each slice only the target's vectors
# are kept, so the experiment holds one slice's hidden states, not every variant's (a 60-word sentence on a
# 31-layer, 576-wide model: ~280 MB at once, against ~35 MB a slice)
VARIANT_PIECES = 512

# A special token as written, a word (letters/digits, with inner apostrophes: "don't", "river's"), or one
# punctuation mark.
_SPECIAL_RE = "|".join(re.escape(t) for t in SPECIAL_TOKENS_IN_TEXT)
WORD_RE = re.compile(rf"{_SPECIAL_RE}|\w+(?:['’]\w+)*|[^\w\s]")


class ContextError(ContextLensError):
    """The sentence cannot be used for the experiment (too long, no context words, bad replacement).

    The message says what to do.
    """


@dataclass(frozen=True)
class Word:
    """One context word: its text, its character span in the sentence and its word pieces there."""

    text: str
    start: int
    end: int
    pieces: tuple[int, ...]


@dataclass(frozen=True)
class Occlusion:
    """How far the target moves when each context word is replaced, per layer.

    sentence:    the sentence as encoded (brackets removed)
    target:      the target word as written; target_span: its (start, end) in ``sentence``;
                 target_pieces: its word-piece positions in the sentence
    words:       the context words in order (the target's own word is not one of them)
    spans:       (start, end) of each word in ``sentence``
    pieces:      the word-piece positions of each word in the original encoding
    tokens:      the original sentence's word pieces, [CLS] and [SEP] included
    replacement: what each word was replaced by ("[MASK]" per word piece by default, deleted ("") by default
                 for a model without a mask token; "" = deleted)
    variants:    the edited sentences, one per word (the target marked in [brackets])
    shift:       float64 (num_layers + 1, n_words): 1 - cosine(original target vector, edited one),
                 in [0, 2]; layer 0 is the embedding output
    attention:   float64 (num_layers, n_words): the target's attention to each word in the original
                 sentence, in layer l + 1: mean over heads and over the target's word pieces, summed over
                 the word's pieces (a row of the full matrix sums to 1 over all word pieces)
    base:        float32 (num_layers + 1, hidden): the target's vector in the original sentence
    moved:       float32 (n_words, num_layers + 1, hidden): the target's vector with each word replaced
    target_changed: per word, True when the edit changed the target's own word pieces (deleting the first
                 word of "The bank ..." leaves a byte-level tokenizer's "bank" without its leading space: another
                 piece of the vocabulary), so the shift measures another piece, not only a missing word
    """

    sentence: str
    target: str
    target_span: tuple[int, int]
    target_pieces: tuple[int, ...]
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    pieces: tuple[tuple[int, ...], ...]
    tokens: tuple[str, ...]
    replacement: str
    variants: tuple[str, ...]
    shift: np.ndarray
    attention: np.ndarray
    base: np.ndarray
    moved: np.ndarray | None = None
    target_changed: tuple[bool, ...] = ()

    @property
    def before_target(self) -> tuple[int, ...]:
        """Indices of the context words that come before the target in the sentence."""
        return tuple(j for j, (_, end) in enumerate(self.spans) if end <= self.target_span[0])

    @property
    def num_layers(self) -> int:
        return self.shift.shape[0] - 1

    @property
    def after_target(self) -> tuple[int, ...]:
        """Indices of the context words that come after the target in the sentence."""
        return tuple(j for j, (start, _) in enumerate(self.spans) if start >= self.target_span[1])

    @property
    def after_target_change(self) -> float:
        """The largest change of any number of the target's vector, any layer, when a word after it is replaced:
        exactly 0.0 for a left-to-right model (its target never sees a later word) on one torch thread, as the
        server runs; on more, BLAS may split a batch's products otherwise than one sentence's, and it is float32
        rounding (~1e-4 of the largest value). NaN with no such word."""
        after = list(self.after_target)
        if not after or self.moved is None:
            return float("nan")
        return float(np.abs(self.moved[after] - self.base[None]).max())

    def ranking(self, layer: int) -> np.ndarray:
        """Word indices by shift at ``layer``, largest first (ties: earlier word first)."""
        return np.argsort(-self.shift[layer], kind="stable")

    def half_effect_layer(self, word: int) -> int:
        """The first hidden-state layer where ``word``'s shift reaches half its last-layer value
        (``num_layers`` when it never does, e.g. a NaN shift)."""
        reached = np.flatnonzero(self.shift[:, word] >= 0.5 * self.shift[-1, word])
        return int(reached[0]) if len(reached) else self.num_layers

    def to_csv(self) -> str:
        """The shifts and attentions as CSV: one row per word, one column per layer. Words that a
        spreadsheet would read as a formula ("=", "+", "-", "@") are written as text (lib.serving.export)."""
        from lib.serving.export import csv_text

        L = self.num_layers
        header = (
            ["position", "word", "word_pieces"]
            + [f"shift_layer_{k}" for k in range(L + 1)]
            + [f"attention_layer_{k}" for k in range(1, L + 1)]
        )
        rows = (
            [j + 1, word, " ".join(self.tokens[p] for p in self.pieces[j])]
            + [f"{x:.6f}" for x in self.shift[:, j]]
            + [f"{x:.6f}" for x in self.attention[:, j]]
            for j, word in enumerate(self.words)
        )
        return csv_text(rows, header=header)


# --------------------------------------------------------------------------------------------------
# Words and edits
# --------------------------------------------------------------------------------------------------


def split_words(sentence: str) -> list[tuple[str, int, int]]:
    """The sentence's words and punctuation marks with their character spans, in order."""
    return [(m.group(), m.start(), m.end()) for m in WORD_RE.finditer(sentence)]


def mark(sentence: str, start: int, end: int) -> str:
    """``sentence`` with ``[start, end)`` in square brackets (the target markup)."""
    return sentence[:start] + "[" + sentence[start:end] + "]" + sentence[end:]


def edit(
    sentence: str, target: tuple[int, int], span: tuple[int, int], replacement: str
) -> tuple[str, CharSpan]:
    """Replace ``sentence[span]`` by ``replacement`` ("" deletes the word and one space next to it).

    Returns the edited sentence with the target in brackets, and the target's span in the edited, clean
    text. ``span`` must not overlap the target.
    """
    (ts, te), (a, b) = target, span
    if a < te and b > ts:
        raise ValueError("the edited word overlaps the target")
    if replacement == "":
        # take one neighbouring space with the word, so no double space (or leading space) is left
        if b < len(sentence) and sentence[b] == " ":
            b += 1
        elif a > 0 and sentence[a - 1] == " ":
            a -= 1
    new = sentence[:a] + replacement + sentence[b:]
    delta = len(replacement) - (b - a)
    if a >= te:  # the edit is after the target: the target keeps its place
        new_ts, new_te = ts, te
    else:
        new_ts, new_te = ts + delta, te + delta
    return mark(new, new_ts, new_te), CharSpan(new, new_ts, new_te, True)


def check_replacement(replacement: str) -> str:
    """A replacement typed by a learner, stripped; raises ContextError when it cannot be used."""
    text = " ".join((replacement or "").split())
    if len(text) > MAX_REPLACEMENT_CHARS:
        raise ContextError(
            f"The replacement is longer than {MAX_REPLACEMENT_CHARS} characters. Type one word or a few."
        )
    if has_markup(text):
        raise ContextError(
            "The replacement contains square brackets. Type plain words (special tokens such as [MASK] are "
            "fine); the target is already marked."
        )
    return text


def context_words(enc: Encoder, span: CharSpan, offsets: np.ndarray, special: np.ndarray) -> list[Word]:
    """The context words of ``span.sentence`` (not overlapping the target) that the model saw.

    offsets: (n_tokens, 2) and special: (n_tokens,) bool of the sentence's encoding (``Encoding.special``).
    """
    out = []
    for text, a, b in split_words(span.sentence):
        if a < span.end and b > span.start:
            continue  # the target's own word
        pieces = pieces_for_span(offsets, a, b, special=special)
        if pieces:
            out.append(Word(text, a, b, pieces))
    return out


# --------------------------------------------------------------------------------------------------
# Occlusion
# --------------------------------------------------------------------------------------------------


def _target_vectors(enc: Encoder, encoding, spans: Sequence[CharSpan]) -> np.ndarray:
    """(n, num_layers + 1, hidden): the target's vector in each encoded sentence, made as the model makes it
    (``TargetSpan.vector_indices``: the mean of its pieces for an encoder, the last piece for a decoder)."""
    located = enc.locate(encoding, list(spans))
    return np.stack(
        [encoding.hidden_states[i][:, list(sp.vector_indices), :].mean(axis=1) for i, sp in enumerate(located)]
    )


def layer_cosines(base: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine per layer between ``base`` (K, H) and each of ``others`` (n, K, H): (K, n) in [-1, 1]."""
    ub = unit_rows(base)  # (K, H)
    uo = unit_rows(others)  # (n, K, H)
    return np.clip(np.einsum("kh,nkh->kn", ub, uo), -1.0, 1.0)


def resolve_replacement(enc: Encoder, replacement: str | None) -> str:
    """None means the tokenizer's mask token, or "" (the word deleted) for a model never taught one (a decoder)."""
    if replacement is None:
        mask = getattr(enc.tokenizer, "mask_token", None)
        return mask or ""
    return check_replacement(replacement)


def occlusion(
    enc: Encoder,
    sentence: str,
    target: str | None = None,
    replacement: str | None = None,
    *,
    max_words: int = MAX_WORDS,
    max_pieces: int = MAX_PIECES,
) -> Occlusion:
    """Replace each context word of ``sentence`` in turn and measure how far the target moves, per layer.

    ``sentence`` marks its target in [brackets] or contains ``target``. ``replacement`` None = the mask
    token, once per word piece of the word (positions stay aligned; see the module docstring); any special
    token is used the same way; other text replaces the whole word ("" deletes it).

    Raises TargetError when the target is missing and ContextError (a ValueError) when the sentence has no
    context word or is longer than ``max_pieces`` word pieces / ``max_words`` words.
    """
    return _occlusion(enc, sentence, target, replacement, max_words=max_words, max_pieces=max_pieces)[0]


def _occlusion(enc: Encoder, sentence: str, target, replacement, *, max_words: int, max_pieces: int):
    """:func:`occlusion`, and the original sentence's Encoding (with its attentions) it was measured on."""
    span = find_target(sentence, target)
    clean = span.sentence
    rep = resolve_replacement(enc, replacement)
    per_piece = rep in SPECIAL_TOKENS_IN_TEXT or rep == getattr(enc.tokenizer, "mask_token", None)

    n_pieces = enc.piece_counts([clean])[0]
    if n_pieces > max_pieces:
        raise ContextError(
            f"This sentence has {n_pieces} word pieces; the experiment takes at most {max_pieces} (it runs "
            "the model once per word). Shorten the sentence or pick a shorter one."
        )
    original = enc.encode([clean], attentions=True)
    words = context_words(enc, span, original.offsets[0], original.special[0])
    if not words:
        raise ContextError(
            f"“{short(clean)}” has no word besides the target, so there is nothing to mask. Add a few words "
            "around it."
        )
    if len(words) > max_words:
        raise ContextError(
            f"This sentence has {len(words)} words besides the target; the experiment takes at most "
            f"{max_words}. Shorten the sentence."
        )
    tspan = (span.start, span.end)
    variants, vspans = [], []
    for w in words:
        text = " ".join([rep] * len(w.pieces)) if per_piece else rep
        marked, vspan = edit(clean, tspan, (w.start, w.end), text)
        variants.append(marked)
        vspans.append(vspan)
    base = _target_vectors(enc, original, [span])[0]  # (K, H)
    own = tuple(int(x) for x in original.token_ids[0][list(enc.locate(original, [span])[0].token_indices)])
    moved_parts, changed = [], []
    step = variants_per_slice(n_pieces)
    for i in range(0, len(vspans), step):  # a slice of variants at a time: only their target's vectors are kept
        part = vspans[i : i + step]
        batch = enc.encode([v.sentence for v in part], attentions=False)
        moved_parts.append(_target_vectors(enc, batch, part))  # (slice, K, H)
        changed += [
            tuple(int(x) for x in batch.token_ids[k][list(sp.token_indices)]) != own
            for k, sp in enumerate(enc.locate(batch, part))
        ]
        del batch  # every layer of every word piece of the slice: the bulk of the experiment's memory
    moved = np.concatenate(moved_parts)  # (n, K, H)
    changed = tuple(changed)
    shift = 1.0 - layer_cosines(base, moved)  # (K, n)

    target_pieces = enc.locate(original, [span])[0].token_indices
    att = original.attentions[0]  # (L, heads, T, T)
    rows = att[:, :, list(target_pieces), :].mean(axis=(1, 2))  # (L, T)
    attention = np.stack([rows[:, list(w.pieces)].sum(axis=1) for w in words], axis=1)  # (L, n)

    result = Occlusion(
        sentence=clean,
        target=span.word,
        target_span=tspan,
        target_pieces=tuple(target_pieces),
        words=tuple(w.text for w in words),
        spans=tuple((w.start, w.end) for w in words),
        pieces=tuple(w.pieces for w in words),
        tokens=tuple(original.tokens[0]),
        replacement=rep,
        variants=tuple(variants),
        shift=np.clip(shift, 0.0, 2.0),
        attention=attention.astype(np.float64),
        base=base.astype(np.float32),
        moved=_frozen(moved),
        target_changed=changed,
    )
    return result, original


def variants_per_slice(pieces: int) -> int:
    """Variants of a sentence of ``pieces`` word pieces encoded at a time (:data:`VARIANT_PIECES` pieces, at
    least one sentence)."""
    return max(1, VARIANT_PIECES // max(1, int(pieces)))


def _frozen(a: np.ndarray) -> np.ndarray:
    out = np.array(a, dtype=np.float32)
    out.setflags(write=False)  # shared between sessions through the cache
    return out


@dataclass(frozen=True)
class ContextUse:
    """How much of its context a model takes in, over a set of sentences (the control's check).

    entropy: float64 (num_layers,): attention rows' entropy as a fraction of uniform, mean over heads, rows
             and sentences (lib.models.attention.entropy_fraction); 1.0 = attention spread evenly
    shift:   float64 (n_sentences,): per sentence, the largest shift of the target at the last layer when one
             context word is masked (occlusion), 1 - cosine
    """

    entropy: np.ndarray
    shift: np.ndarray


def context_use(enc: Encoder, sentences: Sequence[str], target: str | None = None) -> ContextUse:
    """Attention entropy and the largest occlusion shift per sentence, for ``enc`` over ``sentences``.

    Sentences that cannot be measured (no target, too long) are left out; ContextError when none can.
    """
    from lib.models.attention import entropy_fraction

    entropies, shifts = [], []
    for s in sentences:
        try:  # the occlusion's own run of the sentence has its attentions: no second run for the entropy
            occ, original = _occlusion(enc, s, target, None, max_words=MAX_WORDS, max_pieces=MAX_PIECES)
        except (TargetError, ContextError):
            continue
        entropies.append(entropy_fraction(original.attentions[0]))
        shifts.append(float(np.nanmax(occ.shift[-1])))
    if not shifts:
        raise ContextError("None of the sentences can be measured: each needs the target and a few other words.")
    return ContextUse(entropy=np.mean(entropies, axis=0), shift=np.asarray(shifts, dtype=np.float64))


# Attention entropies (fractions of uniform) closer than this count as "as sharp"; median largest shifts
# within this factor of each other count as "about as far".
ENTROPY_TIE = 0.05
SHIFT_RATIO_TIE = 1.25


def _span(values: np.ndarray, digits: int = 2) -> str:
    lo, hi = f"{float(np.min(values)):.{digits}f}", f"{float(np.max(values)):.{digits}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def context_use_phrase(trained: ContextUse, control: ContextUse, name: str = "the control") -> str:
    """How much context ``control`` takes in beside ``trained`` (the same sentences), in two sentences whose
    every word follows the numbers: where its attention is flatter or sharper (entropy differing by more
    than ``ENTROPY_TIE`` of uniform, per layer) and whether one masked word moves its target less or more
    (the median over sentences of the largest last-layer shift, beyond a factor ``SHIFT_RATIO_TIE``)."""
    et, ec = np.asarray(trained.entropy, dtype=np.float64), np.asarray(control.entropy, dtype=np.float64)
    if et.shape != ec.shape:
        raise ValueError("the two models must have the same number of layers")
    flatter = np.flatnonzero(ec > et + ENTROPY_TIE)
    sharper = np.flatnonzero(ec < et - ENTROPY_TIE)
    parts = []
    for idx, word in ((flatter, "flatter"), (sharper, "sharper")):
        if len(idx):
            parts.append(
                f"{word} in {layer_runs(idx + 1)} (entropy {_span(ec[idx])} of uniform, trained {_span(et[idx])})"
            )
    if parts:
        first = f"Attention in {name} is " + "; ".join(parts)
        rest = sorted(set(range(len(et))) - set(flatter) - set(sharper))
        if rest:
            first += f"; about as sharp in {layer_runs([k + 1 for k in rest])}"
    else:
        first = f"Attention in {name} is as sharp as in the trained model in every layer (entropy within {ENTROPY_TIE:.2f})"
    mt, mc = float(np.median(trained.shift)), float(np.median(control.shift))
    if mc * SHIFT_RATIO_TIE < mt:
        how = "less"
    elif mc > mt * SHIFT_RATIO_TIE:
        how = "more"
    else:
        how = "about as far"
    return (
        f"{first}. Masking one word moves its target {how}: the largest shift per sentence has median "
        f"{mc:.3f} ({_span(control.shift, 3)}), trained {mt:.3f} ({_span(trained.shift, 3)})."
    )


# --------------------------------------------------------------------------------------------------
# Attention vs effect
# --------------------------------------------------------------------------------------------------


def rank(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``values`` (ties get the mean of their ranks), as for Spearman's correlation."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(v, kind="stable")
    ranks = np.empty(len(v), dtype=np.float64)
    ranks[order] = np.arange(1, len(v) + 1)
    for x in np.unique(v):
        tie = v == x
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two equal-length vectors; NaN with fewer than 3 values or a constant."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) != len(b):
        raise ValueError("the two vectors differ in length")
    if len(a) < 3:
        return float("nan")
    ra, rb = rank(a), rank(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = np.sqrt((ra @ ra) * (rb @ rb))
    return float(ra @ rb / denom) if denom > 1e-12 else float("nan")


def attention_effect_correlation(occ: Occlusion, words: Sequence[int] | None = None) -> np.ndarray:
    """(num_layers,) Spearman correlation, per layer l = 1..L, between the target's attention to each word
    in layer l and the shift that masking the word causes in the output of layer l (NaN when undefined).

    ``words``: the word indices to correlate over (default all). A left-to-right model's target neither
    attends to nor is moved by a word after it, so those words tie at 0 on both sides and would make any
    two orders agree: pass ``occ.before_target`` for such a model."""
    idx = list(range(len(occ.words))) if words is None else [int(j) for j in words]
    return np.array([spearman(occ.attention[k, idx], occ.shift[k + 1, idx]) for k in range(occ.num_layers)])


__all__ = [
    "MAX_PIECES",
    "MAX_WORDS",
    "ContextError",
    "Occlusion",
    "TargetError",
    "attention_effect_correlation",
    "check_replacement",
    "edit",
    "layer_cosines",
    "occlusion",
    "spearman",
    "split_words",
]
