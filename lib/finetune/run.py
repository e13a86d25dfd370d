"""One fine-tuning run from a labelled set to its result: split, train, open the model, compare, read out.

The page, the command line and the benchmark all go through :func:`finetune` (or its two steps,
:func:`prepare_set` and :func:`run_recipe`, when the pretrained vectors come from a cache)::

    from lib.finetune.run import finetune
    result = finetune(encoder, sentence_set, method="top-2", epochs=20, seed=0, progress=print)
    result.run.history[-1].heldout_acc    # the last epoch
    result.comparison.cka                 # (L + 1,) pretrained vs fine-tuned, per hidden state
    result.verdict.text                   # "train 100 %, held-out 75 %: ..."
    result.encoder                        # an Encoder the app opens (None for head and mix)
    result.as_json()                      # what ``python -m lib.finetune --json`` prints
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from lib.finetune.compare import LayerComparison, compare_layers
from lib.finetune.data import Prepared, Split, prepare, split_set
from lib.finetune.model import finetuned_encoder, held_bytes
from lib.finetune.recipe import Recipe
from lib.finetune.train import TRAIN_THREADS, TrainedRun, torch_threads, train
from lib.finetune.verdict import Verdict, verdict

__all__ = ["FineTuneResult", "finetune", "prepare_set", "run_recipe"]


@dataclass(frozen=True)
class FineTuneResult:
    """A run and what it did. ``encoder``: the fine-tuned model as an Encoder (None for head and mix, and
    for a cancelled run); ``comparison`` None for a cancelled run; ``held_bytes``: what the fine-tuned model
    and head hold beyond the pretrained model; ``seconds``: training, opening and comparing."""

    recipe: Recipe
    split: Split
    run: TrainedRun
    encoder: object | None
    comparison: LayerComparison | None
    verdict: Verdict
    held_bytes: int
    seconds: float
    model_name: str

    @property
    def name(self) -> str:
        return self.recipe.describe(len(self.split.train), self.split.target)

    def as_json(self) -> dict:
        """The run as JSON-ready data: ``epochs[]`` (epoch, train_acc, heldout_acc, train_loss, heldout_loss),
        ``layers[]`` (layer, cka, weight_change and the before/after figures), the split, the verdict."""
        r = self.run
        out = {
            "model": self.model_name,
            "name": self.name,
            "recipe": self.recipe.key,
            "model_key": getattr(self.encoder, "name", None),
            "task": self.recipe.task,
            "method": self.recipe.method,
            "classes": list(self.split.classes),
            "split": self.split.listing(),
            "epochs": [e.as_dict() for e in r.history],
            "best_epoch": r.best_epoch,
            "stopped": r.stopped,
            "layers": self.comparison.rows() if self.comparison is not None else [],
            "mix_weights": [round(float(x), 6) for x in r.mix] if r.mix is not None else None,
            "mix_gamma": round(r.gamma, 6) if r.mix is not None else None,
            "verdict": {
                "kind": self.verdict.kind,
                "text": self.verdict.text,
                "chance": round(self.verdict.chance, 6),
                "remedies": [
                    {"label": m.label, "why": m.why, "recipe": m.recipe.key if m.recipe else None}
                    for m in self.verdict.remedies
                ],
            },
            "trained_parameters": r.trained_parameters,
            "held_bytes": self.held_bytes,
            "seconds": round(self.seconds, 3),
        }
        return out


def prepare_set(encoder, sentence_set, *, task: str = "token", heldout: int = 33, split_seed: int = 0,
                vectors=None) -> Prepared:  # fmt: skip
    """Split a :class:`~lib.inputs.sentences.SentenceSet` (``heldout`` percent of each sense held out) and read
    it with the pretrained ``encoder`` (``vectors``: its TargetVectors of the set, when cached)."""
    split = split_set(
        sentence_set.target, sentence_set.sentences, sentence_set.senses, heldout=heldout / 100, seed=split_seed
    )
    return prepare(encoder, split, task, vectors=vectors)


def run_recipe(encoder, prepared: Prepared, recipe: Recipe, *, progress=None, cancel=None,
               compare: bool = True, threads: int | None = TRAIN_THREADS) -> FineTuneResult:  # fmt: skip
    """Train ``recipe``, open the fine-tuned model, compare it with the pretrained one and read the result
    (``threads``: as :func:`lib.finetune.train.train`)."""
    with torch_threads(threads):  # the comparison's model pass too: one core, as the training
        return _run_recipe(encoder, prepared, recipe, progress, cancel, compare)


def _run_recipe(encoder, prepared, recipe, progress, cancel, compare) -> FineTuneResult:
    t0 = time.perf_counter()
    run = train(encoder, prepared, recipe, progress=progress, cancel=cancel, threads=None)
    ft = finetuned_encoder(encoder, run) if run.stopped != "cancelled" else None
    comparison = None
    if compare and run.stopped != "cancelled":
        after = prepared.encoding
        if ft is not None:
            after = ft.encode(list(prepared.encoding.sentences), attentions=False)
        comparison = compare_layers(encoder.model, prepared, run.model, after, encoder.num_layers)
    return FineTuneResult(
        recipe=recipe,
        split=prepared.split,
        run=run,
        encoder=ft,
        comparison=comparison,
        verdict=verdict(run, encoder.num_layers),
        held_bytes=held_bytes(encoder, run),
        seconds=time.perf_counter() - t0,
        model_name=encoder.name,
    )


def finetune(encoder, sentence_set, method: str = "top-2", *, task: str = "token", heldout: int = 33,
             split_seed: int = 0, progress=None, cancel=None, vectors=None, **settings) -> FineTuneResult:  # fmt: skip
    """Split, prepare and run in one call; ``settings`` are :meth:`Recipe.make`'s (lr, head_lr, epochs,
    patience, batch, seed, layer, rank)."""
    prepared = prepare_set(encoder, sentence_set, task=task, heldout=heldout, split_seed=split_seed, vectors=vectors)
    recipe = Recipe.make(
        prepared.split.digest, method, num_layers=encoder.num_layers, task=task, heldout=heldout,
        split_seed=split_seed, **settings,
    )  # fmt: skip
    return run_recipe(encoder, prepared, recipe, progress=progress, cancel=cancel)
