"""The frozen baseline every method is compared with: a linear head on the pretrained model's top layer, trained
on the same split to its lowest validation loss.

The head reads hidden state L of the frozen model (the probe: what pre-training already put there, read by a
linear classifier), learns at :data:`HEAD_LR` for up to :data:`EPOCHS` epochs and keeps the weights of the
epoch of least validation loss (early stopping after :data:`PATIENCE` epochs without a better one): trained
as well as the validation sentences can tell, so a method that beats it beats the probe, not a head stopped
short. It never runs the model (the split's pretrained vectors are all it reads): well under a second on a
hundred sentences. Its test score is read once, like every run's.
"""

from __future__ import annotations

from dataclasses import replace

from lib.finetune.recipe import Recipe

__all__ = ["EPOCHS", "HEAD_LR", "PATIENCE", "baseline_recipe", "baseline_run"]

HEAD_LR = 1e-2  # ten times the page's head rate: it has only its own numbers to fit, and early stopping guards it
EPOCHS = 100
PATIENCE = 10


def baseline_recipe(recipe: Recipe, num_layers: int) -> Recipe:
    """The head's recipe for the same set, task, split, batch and seed as ``recipe`` (true labels)."""
    return replace(recipe, method="head", layer=num_layers, rank=0, lr=0.0, head_lr=HEAD_LR, epochs=EPOCHS,
                   patience=PATIENCE, shuffled=False)  # fmt: skip


def baseline_run(encoder, prepared, recipe: Recipe, *, threads=None):
    """Train :func:`baseline_recipe` of ``recipe`` on ``prepared``: a :class:`~lib.finetune.train.TrainedRun`."""
    from lib.finetune.train import train

    return train(encoder, prepared, baseline_recipe(recipe, encoder.num_layers), threads=threads)
