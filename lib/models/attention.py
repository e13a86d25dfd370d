"""What attention weights say, summarised for a page: where the target looks, who looks at it, how much goes
to the special tokens, and labels for a chart's axes.

Everything here works on one sentence's attention weights (plain numpy arrays from a
:class:`lib.models.base.Encoding`); no Streamlit, no model run. Rebuilding those weights from the model's
own W_Q, W_K, W_V is :mod:`lib.models.recompute`.

- `target_attention` summarises where the target word looks and who looks at it, per layer and head.
- `special_token_share` measures how much attention goes to [CLS], [SEP] and punctuation per layer and head,
  the pattern described by Clark et al. (2019), "What does BERT look at?"; which pieces are special comes
  from the tokenizer's mask (`Encoding.special`) and which special piece is which from its ids
  (`Encoder.special_roles`), never from their text. `special_attention` is the share of all special pieces.
- `first_position_share` and `weight_above_diagonal`: the attention sink and the causal mask, as numbers.
- `token_labels` / `downsample_labels` make unique, readable axis labels ("bank·6" and "bank·10" stay apart);
  `pool_attention` shrinks a long sentence's matrices for a thumbnail.

Shapes use n = number of word pieces in the sentence (incl. [CLS]/[SEP]), L = number of layers,
H = number of heads.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.models.base import SpecialRoles

__all__ = [
    "FirstPositionShare",
    "PooledAttention",
    "SpecialTokenShare",
    "TargetAttention",
    "contrast_sentence_index",
    "downsample_labels",
    "entropy_fraction",
    "first_position_share",
    "is_punctuation",
    "mean_over_heads",
    "most_attended",
    "pool_attention",
    "shown_token",
    "special_attention",
    "special_token_share",
    "strongest_keys",
    "target_attention",
    "token_labels",
    "weight_above_diagonal",
]


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
