"""A run's result in plain words, from its numbers: the test score beside its floors, a diagnosis, and the
course's remedies one step away.

The three sets keep their jobs here too (:mod:`lib.finetune.data`):

* the **diagnosis** (``kind``) and every **remedy** read the training and validation numbers only: "memorised"
  when the training accuracy is high and the validation accuracy is within reach of what always guessing the
  commonest training sense scores (:func:`near_chance`: one standard deviation of a guesser's score, and at
  least one sentence), "overfit" when training is far ahead of validation, "underfit" when not even the
  training sentences are learnt, else "generalises";
* the **test** score is reported, once, beside two floors on the same test sentences: always guessing the
  commonest training sense (``chance``), and the frozen model with a linear head on its top layer trained on
  the same split (the ``baseline``, :func:`lib.finetune.baseline.baseline_run`). With runs under several seeds
  (:class:`lib.finetune.seeds.SeedSpread`) the comparison says how the margin over the head varies with them:
  "beats the head by 8 points (seeds 0, 1, 2: 4 to 12)" only when every seed's margin is above 0 and their mean
  above the spread of the method's test score; otherwise "no better than the head".

Each remedy is a new :class:`~lib.finetune.recipe.Recipe` (the page's button runs it), chosen by the diagnosis:
fewer epochs or early stopping only when the validation score was better earlier; for a memorised set whose
validation never left chance, more sentences or a frozen model (a smaller rate or fewer epochs cannot find what
the training sentences do not hold); for the random-label control, the true labels again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from lib.finetune.recipe import DEFAULT_LR, MAX_EPOCHS, Recipe

__all__ = ["Comparison", "Remedy", "Verdict", "compare_with_head", "majority_rate", "near_chance", "verdict"]

LEARNT = 0.8  # training accuracy from which the training sentences count as learnt
GAP = 0.25  # train minus validation accuracy from which it learnt them "far better" than new ones


@dataclass(frozen=True)
class Remedy:
    """One change to try: ``label`` (a button's words), ``why`` (one sentence) and the ``recipe`` it runs
    (None for advice no setting carries out, e.g. "write more sentences")."""

    label: str
    why: str
    recipe: Recipe | None


@dataclass(frozen=True)
class Comparison:
    """The method's test accuracy against the frozen head's on the same split.

    margins: (S,) test accuracy minus the head's, one per seed run (one value for a single run)
    seeds:   (S,) the seeds
    spread:  max - min of the method's test accuracy over the seeds (0 for a single run)
    beats:   True when every margin is above 0 and their mean above ``spread`` (always False for one run:
             one seed cannot show a spread)
    """

    margins: tuple[float, ...]
    seeds: tuple[int, ...]
    spread: float
    beats: bool

    @property
    def mean(self) -> float:
        return float(np.mean(self.margins))

    def text(self) -> str:
        """The comparison in one clause, in points: "beats the head by 8 points (seeds 0, 1, 2: 4 to 12)"."""
        pts = _points(self.mean)
        if len(self.margins) == 1:
            if self.mean > 0:
                return (f"{pts} above the head with seed {self.seeds[0]}; one seed is an anecdote: train three "
                        "to see whether it holds")  # fmt: skip
            return f"no better than the head ({_signed(self.mean)} with seed {self.seeds[0]})"
        seeds = ", ".join(str(s) for s in self.seeds)
        lo, hi = min(self.margins), max(self.margins)
        span = f"seeds {seeds}: {_signed(lo)} to {_signed(hi)}" if hi - lo > 1e-9 else f"{_signed(lo)} under seeds {seeds}"
        if self.beats:
            return f"beats the head by {pts} ({span}; the method's own spread over the seeds is {_points(self.spread)})"
        return f"no better than the head ({span}; the method's own spread over the seeds is {_points(self.spread)})"


@dataclass(frozen=True)
class Verdict:
    """kind: "memorised" | "overfit" | "underfit" | "generalises" (from training and validation only);
    text: the sentences the page shows; the numbers they state: train_acc, validation_acc, test_acc (NaN for a
    stopped run), chance (always the commonest training sense, scored on the test sentences),
    validation_chance (the same on the validation sentences), head_test_acc (the frozen head's, None when
    not run), comparison (None without a head) and ``compared``, its sentence in ``text`` ("" without it),
    n_train, n_validation, n_test; remedies to try."""

    kind: str
    text: str
    compared: str
    train_acc: float
    validation_acc: float
    test_acc: float
    chance: float
    validation_chance: float
    head_test_acc: float | None
    comparison: Comparison | None
    n_train: int
    n_validation: int
    n_test: int
    remedies: tuple[Remedy, ...]

    @property
    def heldout_acc(self) -> float:
        """The validation accuracy under its earlier name."""
        return self.validation_acc


def majority_rate(train_senses, heldout_senses) -> float:
    """Share of the held-out sentences whose sense is the commonest among the training ones (ties: the
    first in sorted order): the accuracy of a model that learnt nothing but the label counts."""
    counts = Counter(train_senses)
    top = max(sorted(counts), key=lambda s: counts[s])
    return float(np.mean([s == top for s in heldout_senses])) if len(heldout_senses) else 0.0


def near_chance(chance: float, n: int) -> float:
    """How far above ``chance`` an accuracy on ``n`` sentences may lie and still be chance: one standard
    deviation of a guesser's accuracy, sqrt(c (1 - c) / n), and at least one sentence (1 / n)."""
    n = max(int(n), 1)
    return max(1.0 / n, float(np.sqrt(chance * (1.0 - chance) / n)))


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _points(x: float) -> str:
    p = round(100 * abs(x))
    return f"{p} point{'s' if p != 1 else ''}"


def _signed(x: float) -> str:
    p = round(100 * x)
    return f"{'+' if p > 0 else '−' if p < 0 else '±'}{abs(p)} point{'s' if abs(p) != 1 else ''}"


def compare_with_head(test_accs, head_test_accs, seeds) -> Comparison:
    """:class:`Comparison` of the method's test accuracies with the head's, seed by seed (same order)."""
    acc = np.asarray(test_accs, dtype=float)
    margins = acc - np.asarray(head_test_accs, dtype=float)
    spread = float(acc.max() - acc.min()) if len(acc) > 1 else 0.0
    beats = len(acc) > 1 and bool(np.all(margins > 1e-9)) and float(margins.mean()) > spread + 1e-9
    return Comparison(tuple(float(m) for m in margins), tuple(int(s) for s in seeds), spread, beats)


def verdict(run, num_layers: int, *, baseline=None, spread=None) -> Verdict:
    """Read a :class:`~lib.finetune.train.TrainedRun` (see the module).

    ``baseline``: the frozen head's run on the same split and seed (:func:`lib.finetune.baseline.baseline_run`),
    None to leave the comparison out; ``spread``: a :class:`lib.finetune.seeds.SeedSpread` of the same recipe
    with the head under each seed, whose test scores then make the comparison."""
    split = run.prepared.split
    final = run.final
    tr, va, te = final.train_acc, final.validation_acc, run.test_acc
    n_tr, n_va, n_te = len(split.train), len(split.validation), len(split.test)
    train_senses = [split.senses[i] for i in split.train]
    chance = majority_rate(train_senses, [split.senses[i] for i in split.test])
    chance_v = majority_rate(train_senses, [split.senses[i] for i in split.validation])
    near_v = chance_v + near_chance(chance_v, n_va) + 1e-6  # accuracies are float32 means: 2/3 is 0.6666667
    if tr < LEARNT:
        kind = "underfit"
    elif va <= near_v:
        kind = "memorised"
    elif tr - va >= GAP:
        kind = "overfit"
    else:
        kind = "generalises"
    shuffled = " on its shuffled labels" if run.recipe.shuffled else ""
    if run.stopped == "cancelled":
        text = (
            f"Stopped after epoch {final.epoch} of {run.recipe.epochs}: train {_pct(tr)}{shuffled}, validation "
            f"{_pct(va)}. A stopped run is not scored on its test sentences."
        )
        return Verdict(kind, text, "", tr, va, te, chance, chance_v, None, None, n_tr, n_va, n_te,
                       tuple(_remedies(run, kind, num_layers, near_v, baseline)))  # fmt: skip
    parts = [
        f"Train {_pct(tr)}{shuffled}, validation {_pct(va)}, test {_pct(te)} ({n_te} test sentence"
        f"{'s' if n_te != 1 else ''}, scored once with the weights kept)."
    ]
    head_te, comparison = None, None
    if spread is not None and spread.head_test_acc is not None:
        comparison = compare_with_head(spread.test_acc, spread.head_test_acc, spread.seeds)
        head_te = float(spread.head_test_acc[list(spread.seeds).index(run.recipe.seed)]) if run.recipe.seed in spread.seeds else None
    elif baseline is not None:
        comparison = compare_with_head([te], [baseline.test_acc], [run.recipe.seed])
    if baseline is not None and head_te is None:
        head_te = float(baseline.test_acc)
    floors = f"always guessing the commonest sense scores {_pct(chance)}"
    if head_te is not None:
        compared = (f"The frozen head on the same split scores {_pct(head_te)} on test, and {floors}: this run is "
                    f"{comparison.text()}.")  # fmt: skip
    else:
        compared = floors[0].upper() + floors[1:] + "."
    parts.append(compared)
    if kind == "underfit":
        parts.append("It has not learnt even the training sentences yet.")
    elif kind == "memorised" and run.recipe.shuffled:
        parts.append(
            "It memorised the training sentences: their labels were shuffled, so nothing it learnt can carry "
            "over, and validation and test stay near chance. This is what memorising looks like."
        )
    elif kind == "memorised":
        parts.append(
            f"It memorised the training sentences: validation stays near chance ({_pct(chance_v)} for always "
            "guessing the commonest sense)."
        )
    elif kind == "overfit":
        parts.append("It learnt the training sentences far better than the validation ones.")
    else:
        parts.append("What it learnt carries over to the validation sentences it never trained on.")
    if n_te < 10:
        parts.append(f"With {n_te} test sentence{'s' if n_te != 1 else ''}, each is {_pct(1 / max(n_te, 1))} of the score.")
    return Verdict(kind, " ".join(parts), compared, tr, va, te, chance, chance_v, head_te, comparison, n_tr, n_va, n_te,
                   tuple(_remedies(run, kind, num_layers, near_v, baseline)))  # fmt: skip


def _head_recipe(r: Recipe, num_layers: int) -> Recipe:
    from lib.finetune.baseline import baseline_recipe

    return baseline_recipe(r, num_layers)


def _remedies(run, kind: str, num_layers: int, near_v: float, baseline) -> list[Remedy]:
    """The remedies for ``kind``, chosen from the training and validation numbers only."""
    r = run.recipe
    m = r.parsed
    out: list[Remedy] = []
    later = run.history[1:]
    best = min(later, key=lambda e: e.validation_loss, default=None)
    was_better = best is not None and best.epoch < r.epochs and best.validation_acc > run.final.validation_acc
    if kind == "memorised" and r.shuffled:
        out.append(Remedy("true labels", "Train on the sentences' real senses again: the same run, labels "
                          "unshuffled.", replace(r, shuffled=False)))  # fmt: skip
        return out
    if kind == "memorised" and max((e.validation_acc for e in later), default=0.0) <= near_v:
        # validation never left chance: fewer epochs or smaller steps cannot find what the sentences do not hold
        if m.trains_model:
            out.append(Remedy("frozen head", "A head on the frozen vectors has the least room to memorise: "
                              "it can only read what pre-training put there.", _head_recipe(r, num_layers)))  # fmt: skip
        elif m.kind == "head" and r.layer != num_layers:
            out.append(Remedy("top layer", f"Read layer {num_layers}: a lower layer may hold less of the sense.",
                              replace(r, layer=num_layers)))  # fmt: skip
        out.append(Remedy("more sentences", "Write more sentences of each sense: what is learnt from a few "
                          "sentences rarely carries over.", None))  # fmt: skip
        return out
    if kind in ("memorised", "overfit"):
        if was_better:
            out.append(Remedy(f"{best.epoch} epochs", f"Validation loss was lowest after epoch {best.epoch}; "
                              "training longer only fitted the training sentences.",
                              replace(r, epochs=best.epoch)))  # fmt: skip
            if not r.patience:
                out.append(Remedy("early stopping", "Stop when the validation loss has not improved for 3 epochs "
                                  "and keep the best weights.", replace(r, patience=3)))  # fmt: skip
        if m.trains_model:
            out.append(Remedy("smaller learning rate", "Smaller steps keep the model nearer what pre-training "
                              "learnt.", replace(r, lr=r.lr / 5)))  # fmt: skip
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
    elif m.trains_model and baseline is not None and baseline.final.validation_acc >= run.final.validation_acc:
        out.append(Remedy("frozen head", "On the validation sentences the frozen head does as well: training "
                          "the model adds nothing there.", _head_recipe(r, num_layers)))  # fmt: skip
    return out


def _freeze_more(r: Recipe, num_layers: int) -> Recipe | None:
    m = r.parsed
    if m.kind == "full":
        return replace(r, method="top-2")
    if m.kind == "top":
        return replace(r, method=f"top-{m.k // 2}") if m.k > 1 else _head_recipe(r, num_layers)
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
