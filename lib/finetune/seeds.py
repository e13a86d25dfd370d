"""The same run under several seeds: how much of a result is the data and how much the luck of the draw.

On small data fine-tuning swings with the seed (Mosbach et al. 2021: the initialisation and the data order
alone move the accuracy); a single run is an anecdote. :func:`seed_spread` trains one recipe under each seed
(the split stays the same, so only the training's own randomness changes), and with ``baseline=True`` the frozen
head under the same seeds (:mod:`lib.finetune.baseline`), so the method's margin over the head is read seed by
seed. Test accuracies are each run's one test score, with the weights it kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lib.finetune.recipe import Recipe
from lib.finetune.train import EpochReport, TrainedRun, train

__all__ = ["DEFAULT_SEEDS", "SeedSpread", "seed_spread"]

DEFAULT_SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class SeedSpread:
    """seeds: (S,); train_acc, validation_acc, test_acc: (S,) of each run's kept weights; runs: the S
    TrainedRuns; head_test_acc: (S,) the frozen head's test accuracy under the same seeds (None when not run),
    head_runs its runs. spread = max - min of test accuracy; std its standard deviation (population, ddof 0)."""

    seeds: tuple[int, ...]
    train_acc: np.ndarray
    validation_acc: np.ndarray
    test_acc: np.ndarray
    runs: tuple[TrainedRun, ...]
    head_test_acc: np.ndarray | None = None
    head_runs: tuple[TrainedRun, ...] = ()

    @property
    def heldout_acc(self) -> np.ndarray:
        """The validation accuracies under their earlier name."""
        return self.validation_acc

    @property
    def spread(self) -> float:
        return float(self.test_acc.max() - self.test_acc.min())

    @property
    def std(self) -> float:
        return float(self.test_acc.std())

    @property
    def mean(self) -> float:
        return float(self.test_acc.mean())

    def text(self) -> str:
        """"test 75 % to 100 % over seeds 0, 1, 2 (mean 83 %)", or "test 100 % under every seed (0, 1, 2)"."""
        seeds = ", ".join(str(s) for s in self.seeds)
        lo, hi = self.test_acc.min(), self.test_acc.max()
        if hi - lo < 1e-9:
            return f"test {100 * lo:.0f} % under every seed ({seeds})"
        return f"test {100 * lo:.0f} % to {100 * hi:.0f} % over seeds {seeds} (mean {100 * self.mean:.0f} %)"

    def as_dict(self) -> dict:
        out = {
            "seeds": list(self.seeds),
            "train_acc": [round(float(x), 6) for x in self.train_acc],
            "validation_acc": [round(float(x), 6) for x in self.validation_acc],
            "heldout_acc": [round(float(x), 6) for x in self.validation_acc],
            "test_acc": [round(float(x), 6) for x in self.test_acc],
            "test_spread": round(self.spread, 6),
            "test_std": round(self.std, 6),
        }
        if self.head_test_acc is not None:
            out["head_test_acc"] = [round(float(x), 6) for x in self.head_test_acc]
        return out


def seed_spread(
    encoder,
    prepared,
    recipe: Recipe,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    *,
    progress: Callable[[int, EpochReport], bool | None] | None = None,
    cancel=None,
    done: dict[int, TrainedRun] | None = None,
    baseline: bool = True,
    heads_done: dict[int, TrainedRun] | None = None,
) -> SeedSpread:
    """Train ``recipe`` under each of ``seeds``; ``progress(seed, report)`` as :func:`lib.finetune.train.train`.

    ``done``: runs already made, by seed (the run the learner watched), reused instead of trained again;
    ``baseline``: also train the frozen head under each seed (``heads_done`` reused the same way).
    """
    from lib.finetune.baseline import baseline_recipe

    runs, heads = [], []
    for s in seeds:
        if done and int(s) in done:
            runs.append(done[int(s)])
        else:
            cb = None if progress is None else (lambda rep, s=s: progress(int(s), rep))
            runs.append(train(encoder, prepared, recipe.with_seed(int(s)), progress=cb, cancel=cancel))
        if baseline:
            if heads_done and int(s) in heads_done:
                heads.append(heads_done[int(s)])
            else:
                heads.append(train(encoder, prepared, baseline_recipe(recipe.with_seed(int(s)), encoder.num_layers)))
    return SeedSpread(
        seeds=tuple(int(s) for s in seeds),
        train_acc=np.array([r.final.train_acc for r in runs]),
        validation_acc=np.array([r.final.validation_acc for r in runs]),
        test_acc=np.array([r.test_acc for r in runs]),
        runs=tuple(runs),
        head_test_acc=np.array([h.test_acc for h in heads]) if baseline else None,
        head_runs=tuple(heads),
    )
