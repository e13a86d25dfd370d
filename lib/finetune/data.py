"""The labelled set split into three disjoint sets, and what the model reads from each.

A set of ``sense | sentence`` lines (at least two senses, each with at least three sentences) is split per
sense, so every set holds every sense (stratified); each set has one job:

* **train**: the sentences the weights are fitted to;
* **validation**: watched after every epoch; early stopping and every remedy look at it, and only at it;
* **test**: scored once, with the weights the run kept, and never used to choose anything.

A seeded share of each sense is held out (half by default) and divided between validation and test; the rest
trains. The split and the pretrained model's vectors are all a training run needs:

* the task ``token``: the target word's sense from its vector, pooled as the model pools a word's pieces
  (``piece_pooling``: the mean of its pieces for an encoder, its last piece for a decoder);
* the task ``cls``: the sentence's label from its first token's ([CLS]) vector (a model that reads both
  directions only: a left-to-right model's first token has seen nothing else);
* the task ``mean``: the sentence's label from the mean of its ordinary word pieces (special ones left out,
  as :func:`lib.stats.pooling.sentence_vectors`).

Each task is a weighting of a sentence's word pieces (:attr:`Prepared.pool`): the same weights pool the
pretrained vectors, the fine-tuned ones and, in training, the top layer's output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.models.targets import short

__all__ = [
    "DEFAULT_HELDOUT",
    "TASKS",
    "FineTuneError",
    "Prepared",
    "Split",
    "prepare",
    "fitted_indices",
    "set_digest",
    "split_set",
]

TASKS = {
    "token": "the target word's sense from its vector",
    "cls": "the sentence's label from its [CLS] vector",
    "mean": "the sentence's label from the mean of its word pieces",
}
DEFAULT_HELDOUT = 1 / 2  # half of each sense held out, split between validation and test: bank's 4 a sense -> 2, 1, 1
MIN_PER_SENSE = 3  # one sentence to train on, one to validate, one to test


class FineTuneError(ContextLensError):
    """The set or the settings cannot support a fine-tuning run; the message says what to change."""


def set_digest(target: str, sentences: Sequence[str], senses: Sequence[str]) -> str:
    """A short fingerprint (10 hex digits) of a labelled set: the same target, sentences and labels in the same
    order give the same digest, any change another."""
    blob = json.dumps([target, list(sentences), list(senses)], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:10]


@dataclass(frozen=True)
class Split:
    """A labelled set split into three disjoint sets (see the module).

    target:    the target word
    sentences: (n,) every labelled sentence, as written (markup kept), in the set's order
    senses:    (n,) their labels
    train, validation, test: indices into ``sentences``, ascending; together every index exactly once
    seed, heldout_share: what chose the held-out (validation and test) sentences
    digest:    :func:`set_digest` of the set (not of the split: the recipe carries the split's seed and share)
    """

    target: str
    sentences: tuple[str, ...]
    senses: tuple[str, ...]
    train: tuple[int, ...]
    validation: tuple[int, ...]
    test: tuple[int, ...]
    seed: int
    heldout_share: float
    digest: str

    @property
    def heldout(self) -> tuple[int, ...]:
        """Every sentence the weights were not fitted to: validation and test, ascending."""
        return tuple(sorted(self.validation + self.test))

    @property
    def classes(self) -> tuple[str, ...]:
        """The sense names, sorted: class c of the head is ``classes[c]``."""
        return tuple(sorted(set(self.senses)))

    @property
    def labels(self) -> np.ndarray:
        """(n,) int64 class index of each sentence."""
        names = self.classes
        return np.array([names.index(s) for s in self.senses], dtype=np.int64)

    def part_of(self, i: int) -> str:
        """"train", "validation" or "test": the set sentence ``i`` belongs to."""
        if i in self.train:
            return "train"
        return "validation" if i in self.validation else "test"

    def listing(self) -> dict[str, list[dict[str, str]]]:
        """The three sets listed: ``{"train": [{"sense", "sentence"}, ...], "validation": [...], "test": [...]}``."""
        return {
            part: [{"sense": self.senses[i], "sentence": self.sentences[i]} for i in idx]
            for part, idx in (("train", self.train), ("validation", self.validation), ("test", self.test))
        }


def split_set(
    target: str,
    sentences: Sequence[str],
    senses: Sequence[str | None],
    *,
    heldout: float = DEFAULT_HELDOUT,
    seed: int = 0,
) -> Split:
    """Split a labelled set, per sense: ``round(heldout × n_s)`` of sense s's ``n_s`` sentences (at least two,
    at most ``n_s - 1``) are held out, drawn by ``seed``; of those, half go to validation (the larger half,
    when odd, to test) and the rest of the sense trains.

    The training sentences are those a two-way split of the same share and seed held in: held-out sentences
    are drawn first, then divided.

    Raises :class:`FineTuneError` when a sentence has no label, when there are fewer than two senses, or when
    a sense has fewer than three sentences (it could not be trained on, validated and tested).
    """
    if len(sentences) != len(senses):
        raise ValueError(f"{len(senses)} labels for {len(sentences)} sentences")
    if not 0.0 < float(heldout) < 1.0:
        raise FineTuneError(f"The held-out share must lie between 0 and 1; got {heldout}.")
    if any(not s for s in senses):
        raise FineTuneError(
            "Fine-tuning learns from labels: write every line as “sense | sentence” (some have no sense)."
        )
    names = sorted(set(senses))
    if len(names) < 2:
        raise FineTuneError("Fine-tuning needs at least two senses to tell apart; this set has one.")
    for name in names:
        n = sum(1 for s in senses if s == name)
        if n < MIN_PER_SENSE:
            raise FineTuneError(
                f"The sense “{short(name, 40)}” has only {n} sentence{'s' if n != 1 else ''}: add "
                f"{'another' if n == MIN_PER_SENSE - 1 else 'two more'} (one trains, one validates, one tests), "
                "or remove it."
            )
    rng = np.random.default_rng(int(seed))
    validation: list[int] = []
    test: list[int] = []
    for name in names:
        idx = np.array([i for i, s in enumerate(senses) if s == name])
        k = min(max(2, int(round(float(heldout) * len(idx)))), len(idx) - 1)
        drawn = [int(i) for i in rng.permutation(idx)[:k]]
        n_test = k - k // 2
        test.extend(drawn[:n_test])
        validation.extend(drawn[n_test:])
    held = set(validation) | set(test)
    return Split(
        target=target,
        sentences=tuple(sentences),
        senses=tuple(str(s) for s in senses),
        train=tuple(i for i in range(len(sentences)) if i not in held),
        validation=tuple(sorted(validation)),
        test=tuple(sorted(test)),
        seed=int(seed),
        heldout_share=float(heldout),
        digest=set_digest(target, sentences, [str(s) for s in senses]),
    )


def fitted_indices(target: str, sentences: Sequence[str], senses: Sequence[str | None], *, heldout_percent: int,
                   split_seed: int, digest: str) -> tuple[int, ...] | None:  # fmt: skip
    """The indices of the sentences a run fitted its weights to (the training set of its split), or None when
    this is not the set the run was made on (its :func:`set_digest` is not ``digest``)."""
    if set_digest(target, sentences, [str(s) for s in senses]) != digest:
        return None
    return split_set(target, sentences, senses, heldout=heldout_percent / 100, seed=split_seed).train


@dataclass(frozen=True)
class Prepared:
    """A split with what the pretrained model read from it: everything a training run starts from.

    split:    the :class:`Split`
    task:     one of :data:`TASKS`
    encoding: the pretrained model's :class:`~lib.models.encoder.Encoding` of every sentence (split order)
    pool:     per sentence ``(n_i,)`` float32 weights over its word pieces, summing to 1: the task's vector of
              a sentence at any layer is ``pool[i] @ hidden_states[i][layer]``
    features: ``(n, L + 1, H)`` float32: that vector at every hidden state of the pretrained model
    """

    split: Split
    task: str
    encoding: object
    pool: tuple[np.ndarray, ...]
    features: np.ndarray

    @property
    def num_hidden_states(self) -> int:
        return int(self.features.shape[1])


def pool_weights(task: str, n_pieces: int, special: np.ndarray, target_pieces: Sequence[int], *,
                 causal: bool = False) -> np.ndarray:  # fmt: skip
    """One sentence's word-piece weights for ``task``: the target's pieces (``token``: the pieces its vector is
    made of, ``TargetSpan.vector_indices``), the first piece (``cls``, which must be special and read by a
    model that is not ``causal``), or the ordinary pieces (``mean``), each averaged. (n_pieces,) float32."""
    w = np.zeros(n_pieces, dtype=np.float32)
    if task == "token":
        w[list(target_pieces)] = 1.0
    elif task == "cls":
        if causal:
            raise FineTuneError(
                "This model reads left to right, so its first token has seen nothing of the sentence: use the "
                "task “mean” (or “token”) for a sentence's label."
            )
        if not bool(special[0]):
            raise FineTuneError("This model's sentences do not start with a [CLS] token; use the task “mean”.")
        w[0] = 1.0
    elif task == "mean":
        w[~np.asarray(special, dtype=bool)] = 1.0
    else:
        raise FineTuneError(f"The task must be one of {', '.join(TASKS)}; got “{short(str(task), 20)}”.")
    return w / w.sum()


def prepare(encoder, split: Split, task: str = "token", *, vectors=None) -> Prepared:
    """Read the split's sentences with the pretrained ``encoder`` and pool them for ``task``.

    ``vectors``: the :class:`~lib.models.encoder.TargetVectors` of exactly ``split.sentences`` when already
    computed (the app's cache); otherwise they are computed here. Raises :class:`FineTuneError` for an
    unknown task.
    """
    if task not in TASKS:
        raise FineTuneError(f"The task must be one of {', '.join(TASKS)}; got “{short(str(task), 20)}”.")
    tv = vectors if vectors is not None else encoder.target_vectors(list(split.sentences), split.target)
    if len(tv.kept) != len(split.sentences):
        raise ValueError("the vectors passed do not cover every sentence of the split")
    enc = tv.encoding
    pool = tuple(
        pool_weights(task, len(enc.tokens[i]), enc.special[i], tv.spans[i].vector_indices,
                     causal=bool(getattr(encoder, "causal", False)))
        for i in range(len(enc))
    )
    features = np.stack(
        [np.einsum("t,kth->kh", pool[i], enc.hidden_states[i]) for i in range(len(enc))]
    ).astype(np.float32)
    return Prepared(split=split, task=task, encoding=enc, pool=pool, features=features)
