"""The same run under several seeds: how much of a result is the data and how much the luck of the draw.

On small data fine-tuning swings with the seed (Mosbach et al. 2021: the initialisation and the data order
alone move the accuracy); a single run is an anecdote. :func:`seed_spread` trains one recipe under each seed
(the split stays the same, so only the training's own randomness changes) and gives the spread of
held-out accuracy.
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
    """seeds: (S,); train_acc, heldout_acc: (S,) of each run's kept weights; runs: the S TrainedRuns.
    spread = max - min of held-out accuracy; std its standard deviation (population, ddof 0)."""

    seeds: tuple[int, ...]
    train_acc: np.ndarray
    heldout_acc: np.ndarray
    runs: tuple[TrainedRun, ...]

    @property
    def spread(self) -> float:
        return float(self.heldout_acc.max() - self.heldout_acc.min())

    @property
    def std(self) -> float:
        return float(self.heldout_acc.std())

    @property
    def mean(self) -> float:
        return float(self.heldout_acc.mean())

    def text(self) -> str:
        """"held-out 75 % to 100 % over seeds 0, 1, 2 (mean 83 %)", or "held-out 100 % under every seed ..."."""
        seeds = ", ".join(str(s) for s in self.seeds)
        lo, hi = self.heldout_acc.min(), self.heldout_acc.max()
        if hi - lo < 1e-9:
            return f"held-out {100 * lo:.0f} % under every seed ({seeds})"
        return f"held-out {100 * lo:.0f} % to {100 * hi:.0f} % over seeds {seeds} (mean {100 * self.mean:.0f} %)"

    def as_dict(self) -> dict:
        return {
            "seeds": list(self.seeds),
            "train_acc": [round(float(x), 6) for x in self.train_acc],
            "heldout_acc": [round(float(x), 6) for x in self.heldout_acc],
            "heldout_spread": round(self.spread, 6),
            "heldout_std": round(self.std, 6),
        }


def seed_spread(
    encoder,
    prepared,
    recipe: Recipe,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    *,
    progress: Callable[[int, EpochReport], bool | None] | None = None,
    cancel=None,
    done: dict[int, TrainedRun] | None = None,
) -> SeedSpread:
    """Train ``recipe`` under each of ``seeds``; ``progress(seed, report)`` as :func:`lib.finetune.train.train`.

    ``done``: runs already made, by seed (the run the learner watched), reused instead of trained again.
    """
    runs = []
    for s in seeds:
        if done and int(s) in done:
            runs.append(done[int(s)])
            continue
        cb = None if progress is None else (lambda rep, s=s: progress(int(s), rep))
        runs.append(train(encoder, prepared, recipe.with_seed(int(s)), progress=cb, cancel=cancel))
    return SeedSpread(
        seeds=tuple(int(s) for s in seeds),
        train_acc=np.array([r.final.train_acc for r in runs]),
        heldout_acc=np.array([r.final.heldout_acc for r in runs]),
        runs=tuple(runs),
    )
