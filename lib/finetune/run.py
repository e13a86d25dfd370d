"""One fine-tuning run from a labelled set to its result: split, train, open the model, compare, read out.

The page, the command line and the benchmark all go through :func:`finetune` (or its two steps,
:func:`prepare_set` and :func:`run_recipe`, when the pretrained vectors come from a cache)::

    from lib.finetune.run import finetune
    result = finetune(encoder, sentence_set, method="top-2", epochs=10, seed=0, progress=print)
    result.run.history[-1].validation_acc # the last epoch, on the validation sentences
    result.run.test_acc                   # the kept weights on the test sentences, scored once
    result.baseline.test_acc              # the frozen head on the same split (lib.finetune.baseline)
    result.comparison.cka                 # (L + 1,) pretrained vs fine-tuned, per hidden state
    result.comparison.floor_high          # (L + 1,) the top of CKA's floor band at this n and d
    result.verdict.text                   # "Train 100 %, validation 83 %, test 79 % ..."
    result.encoder                        # an Encoder the app opens (None for head and mix)
    result.as_json()                      # what ``python -m lib.finetune --json`` prints
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from lib.finetune.baseline import baseline_run
from lib.finetune.compare import LayerComparison, compare_layers
from lib.finetune.data import Prepared, Split, prepare, split_set
from lib.finetune.model import finetuned_encoder, held_bytes
from lib.finetune.recipe import DEFAULT_HELDOUT, Recipe
from lib.finetune.train import TRAIN_THREADS, TrainedRun, torch_threads, train
from lib.finetune.verdict import Verdict, verdict

__all__ = ["FineTuneResult", "finetune", "prepare_set", "run_recipe"]


@dataclass(frozen=True)
class FineTuneResult:
    """A run and what it did. ``encoder``: the fine-tuned model as an Encoder (None for head and mix, and
    for a cancelled run); ``comparison`` None for a cancelled run; ``baseline``: the frozen head's run on the
    same split and seed (None when not asked for, or for a cancelled run); ``held_bytes``: what the fine-tuned
    model and head hold beyond the pretrained model; ``seconds``: training, the baseline, opening and comparing."""

    recipe: Recipe
    split: Split
    run: TrainedRun
    encoder: object | None
    comparison: LayerComparison | None
    verdict: Verdict
    held_bytes: int
    seconds: float
    model_name: str
    baseline: TrainedRun | None = None
    num_layers: int = 0

    @property
    def name(self) -> str:
        return self.recipe.describe(len(self.split.train), self.split.target, n_set=len(self.split.sentences))

    def with_spread(self, spread) -> FineTuneResult:
        """The same result, its verdict read with the runs under several seeds (:func:`lib.finetune.seeds.seed_spread`)."""
        return replace(self, verdict=verdict(self.run, self.num_layers, baseline=self.baseline, spread=spread))

    def as_json(self) -> dict:
        """The run as JSON-ready data: ``epochs[]`` (epoch, train and validation loss and accuracy; ``heldout_*``
        the validation's under their earlier name), ``test_acc``, ``baseline`` (the frozen head on the same
        split), ``layers[]`` (layer, cka, cka_floor, weight_change and the before/after figures), the split's
        three sets, the verdict."""
        r = self.run
        listing = self.split.listing()
        out = {
            "model": self.model_name,
            "name": self.name,
            "recipe": self.recipe.key,
            "model_key": getattr(self.encoder, "name", None),
            "task": self.recipe.task,
            "method": self.recipe.method,
            "shuffled_labels": self.recipe.shuffled,
            "classes": list(self.split.classes),
            "split": {**listing, "heldout": listing["validation"] + listing["test"]},
            "epochs": [e.as_dict() for e in r.history],
            "best_epoch": r.best_epoch,
            "stopped": r.stopped,
            "train_acc": round(r.final.train_acc, 6),
            "validation_acc": round(r.final.validation_acc, 6),
            "test_acc": _num(r.test_acc),
            "test_loss": _num(r.test_loss),
            "baseline": None if self.baseline is None else {
                "method": "head",
                "layer": self.baseline.recipe.layer,
                "recipe": self.baseline.recipe.key,
                "best_epoch": self.baseline.best_epoch,
                "validation_acc": round(self.baseline.final.validation_acc, 6),
                "test_acc": _num(self.baseline.test_acc),
            },
            "majority_test_acc": round(self.verdict.chance, 6),
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


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else round(float(x), 6)


def prepare_set(encoder, sentence_set, *, task: str = "token", heldout: int = DEFAULT_HELDOUT, split_seed: int = 0,
                vectors=None) -> Prepared:  # fmt: skip
    """Split a :class:`~lib.inputs.sentences.SentenceSet` (``heldout`` percent of each sense held out for
    validation and test) and read it with the pretrained ``encoder`` (``vectors``: its TargetVectors of the
    set, when cached)."""
    split = split_set(
        sentence_set.target, sentence_set.sentences, sentence_set.senses, heldout=heldout / 100, seed=split_seed
    )
    return prepare(encoder, split, task, vectors=vectors)


def run_recipe(encoder, prepared: Prepared, recipe: Recipe, *, progress=None, cancel=None,
               compare: bool = True, baseline: bool = True, threads: int | None = TRAIN_THREADS) -> FineTuneResult:  # fmt: skip
    """Train ``recipe``, train the frozen head on the same split (``baseline``), open the fine-tuned model,
    compare it with the pretrained one and read the result (``threads``: as :func:`lib.finetune.train.train`)."""
    with torch_threads(threads):  # the comparison's model pass too: one core, as the training
        return _run_recipe(encoder, prepared, recipe, progress, cancel, compare, baseline)


def _run_recipe(encoder, prepared, recipe, progress, cancel, compare, with_baseline) -> FineTuneResult:
    t0 = time.perf_counter()
    run = train(encoder, prepared, recipe, progress=progress, cancel=cancel, threads=None)
    done = run.stopped != "cancelled"
    head = baseline_run(encoder, prepared, recipe) if with_baseline and done else None
    ft = finetuned_encoder(encoder, run) if done else None
    comparison = None
    if compare and done:
        after = prepared.encoding
        if ft is not None:  # cut where the pretrained reading was cut (the app reads at most 128 pieces a sentence)
            longest = max(len(t) for t in prepared.encoding.token_ids)
            after = ft.encode(list(prepared.encoding.sentences), attentions=False, max_tokens=longest)
        comparison = compare_layers(encoder.model, prepared, run.model, after, encoder.num_layers)
    return FineTuneResult(
        recipe=recipe,
        split=prepared.split,
        run=run,
        encoder=ft,
        comparison=comparison,
        verdict=verdict(run, encoder.num_layers, baseline=head),
        held_bytes=held_bytes(encoder, run),
        seconds=time.perf_counter() - t0,
        model_name=encoder.name,
        baseline=head,
        num_layers=encoder.num_layers,
    )


def finetune(encoder, sentence_set, method: str = "top-2", *, task: str = "token", heldout: int = DEFAULT_HELDOUT,
             split_seed: int = 0, progress=None, cancel=None, vectors=None, **settings) -> FineTuneResult:  # fmt: skip
    """Split, prepare and run in one call; ``settings`` are :meth:`Recipe.make`'s (lr, head_lr, epochs,
    patience, batch, seed, layer, rank)."""
    prepared = prepare_set(encoder, sentence_set, task=task, heldout=heldout, split_seed=split_seed, vectors=vectors)
    recipe = Recipe.make(
        prepared.split.digest, method, num_layers=encoder.num_layers, task=task, heldout=heldout,
        split_seed=split_seed, **settings,
    )  # fmt: skip
    return run_recipe(encoder, prepared, recipe, progress=progress, cancel=cancel)
