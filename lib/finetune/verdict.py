"""A run's result in plain words, from its numbers, with the course's remedies one step away.

"train 100 %, held-out 58 %: it memorised the training sentences" is said when the training accuracy is
high and the held-out accuracy is within reach of what always guessing the commonest training sense scores
(``chance``): at most one standard deviation of a guesser's score above it, and at least one sentence
(:func:`near_chance`). Each remedy is a new :class:`~lib.finetune.recipe.Recipe` (the page's button
runs it): the course's smaller rate, fewer epochs (or early stopping on held-out loss), freezing more; for a
run that has not learnt its training sentences, more epochs, a larger rate, unfreezing more.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from lib.finetune.recipe import DEFAULT_LR, MAX_EPOCHS, Recipe

__all__ = ["Remedy", "Verdict", "majority_rate", "near_chance", "verdict"]

LEARNT = 0.8  # training accuracy from which the training sentences count as learnt
GAP = 0.25  # train minus held-out accuracy from which it learnt them "far better" than new ones


@dataclass(frozen=True)
class Remedy:
    """One change to try: ``label`` (a button's words), ``why`` (one sentence) and the ``recipe`` it runs
    (None for advice no setting carries out, e.g. "write more sentences")."""

    label: str
    why: str
    recipe: Recipe | None


@dataclass(frozen=True)
class Verdict:
    """kind: "memorised" | "overfit" | "underfit" | "generalises"; text: the sentence the page shows;
    the numbers it states: train_acc, heldout_acc (of the weights kept), chance (always the commonest
    training sense, scored on the held-out sentences), n_train, n_heldout; remedies to try."""

    kind: str
    text: str
    train_acc: float
    heldout_acc: float
    chance: float
    n_train: int
    n_heldout: int
    remedies: tuple[Remedy, ...]


def majority_rate(train_senses, heldout_senses) -> float:
    """Share of the held-out sentences whose sense is the commonest among the training ones (ties: the
    first in sorted order): the accuracy of a model that learnt nothing but the label counts."""
    counts = Counter(train_senses)
    top = max(sorted(counts), key=lambda s: counts[s])
    return float(np.mean([s == top for s in heldout_senses])) if len(heldout_senses) else 0.0


def near_chance(chance: float, n: int) -> float:
    """How far above ``chance`` a held-out accuracy on ``n`` sentences may lie and still be chance: one
    standard deviation of a guesser's accuracy, sqrt(c (1 - c) / n), and at least one sentence (1 / n)."""
    n = max(int(n), 1)
    return max(1.0 / n, float(np.sqrt(chance * (1.0 - chance) / n)))


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def verdict(run, num_layers: int) -> Verdict:
    """Read a :class:`~lib.finetune.train.TrainedRun`: its kept weights' accuracies against chance."""
    split = run.prepared.split
    final = run.final
    tr, ho = final.train_acc, final.heldout_acc
    n_tr, n_ho = len(split.train), len(split.heldout)
    chance = majority_rate([split.senses[i] for i in split.train], [split.senses[i] for i in split.heldout])
    nums = f"train {_pct(tr)}, held-out {_pct(ho)}"
    if tr < LEARNT:
        kind = "underfit"
        text = f"{nums}: it has not learnt even the training sentences yet."
    elif ho <= chance + near_chance(chance, n_ho) + 1e-9:
        kind = "memorised"
        text = (
            f"{nums} (always guessing the commonest sense scores {_pct(chance)}): it memorised the training "
            "sentences."
        )
    elif tr - ho >= GAP:
        kind = "overfit"
        text = f"{nums}: it learnt the training sentences far better than new ones."
    else:
        kind = "generalises"
        text = f"{nums}: what it learnt carries over to sentences it never saw."
    if n_ho < 10:
        text += (
            f" With {n_ho} held-out sentence{'s' if n_ho != 1 else ''}, each is {_pct(1 / max(n_ho, 1))} of "
            "the score: compare seeds before trusting it."
        )
    if run.stopped == "cancelled":
        text = f"Stopped after epoch {final.epoch} of {run.recipe.epochs}. " + text
    return Verdict(kind, text, tr, ho, chance, n_tr, n_ho, tuple(_remedies(run, kind, num_layers)))


def _remedies(run, kind: str, num_layers: int) -> list[Remedy]:
    r = run.recipe
    m = r.parsed
    out: list[Remedy] = []
    if kind in ("memorised", "overfit"):
        if m.trains_model:
            out.append(Remedy("smaller learning rate", "Smaller steps keep the model nearer what pre-training "
                              "learnt.", replace(r, lr=r.lr / 5)))  # fmt: skip
        else:
            out.append(Remedy("smaller learning rate", "Smaller steps stop the head before it fits every "
                              "sentence.", replace(r, head_lr=r.head_lr / 5)))  # fmt: skip
        best = min(run.history[1:], key=lambda e: e.heldout_loss, default=None)
        if best is not None and best.epoch < r.epochs:
            out.append(Remedy(f"{best.epoch} epochs", f"Held-out loss was lowest after epoch {best.epoch}; "
                              "training longer only fitted the training sentences.",
                              replace(r, epochs=best.epoch)))  # fmt: skip
        if not r.patience:
            out.append(Remedy("early stopping", "Stop when the held-out loss has not improved for 3 epochs and "
                              "keep the best weights.", replace(r, patience=3)))  # fmt: skip
        fewer = _freeze_more(r, num_layers)
        if fewer is not None:
            out.append(Remedy("freeze more", "Fewer trainable weights have less room to memorise.", fewer))
        out.append(Remedy("more sentences", "Write more sentences of each sense: small data overfits fast.", None))
    elif kind == "underfit":
        if r.epochs < MAX_EPOCHS:
            out.append(Remedy("more epochs", "It was still learning when it stopped.",
                              replace(r, epochs=min(MAX_EPOCHS, 2 * r.epochs))))  # fmt: skip
        if m.trains_model:
            out.append(Remedy("larger learning rate", "Larger steps reach a fit sooner.", replace(r, lr=min(0.1, r.lr * 3))))
        out.append(Remedy("larger head rate", "The head starts from nothing and may need larger steps.",
                          replace(r, head_lr=min(1.0, r.head_lr * 3))))  # fmt: skip
        more = _unfreeze_more(r, num_layers)
        if more is not None:
            out.append(Remedy("unfreeze more", "More trainable layers can reshape the vectors more.", more))
    return out


def _freeze_more(r: Recipe, num_layers: int) -> Recipe | None:
    m = r.parsed
    if m.kind == "full":
        return replace(r, method="top-2")
    if m.kind == "top":
        return replace(r, method=f"top-{m.k // 2}") if m.k > 1 else replace(r, method="head", layer=num_layers, lr=0.0)
    if m.kind == "lora":
        return replace(r, rank=r.rank // 2) if r.rank > 1 else None
    return None


def _unfreeze_more(r: Recipe, num_layers: int) -> Recipe | None:
    m = r.parsed
    if m.kind in ("head", "mix"):
        return replace(r, method="top-1", layer=-1, lr=DEFAULT_LR["top"])
    if m.kind == "top" and m.k < num_layers:
        return replace(r, method=f"top-{min(num_layers, 2 * m.k)}")
    if m.kind == "lora":
        return replace(r, rank=min(64, 2 * r.rank))
    return None
