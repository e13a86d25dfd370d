"""Fine-tuning runs (pages/finetune.py, a fine-tuned model's link): once per process and recipe, shared."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import numpy as np
import streamlit as st

from lib.models.keys import parse_model_key
from lib.serving import budget
from lib.serving.memory import release_memory
from ui.cache import store
from ui.cache.encodings import target_vectors
from ui.cache.models import encoder
from ui.cache.store import _cached, _lock
from ui.work import heavy

# --------------------------------------------------------------------------- fine-tuning (pages/finetune.py)
# A run is keyed by its model and recipe (the recipe names the set by its digest, the task, the split and every
# setting), computed once per process and shared: a class watching the teacher's run waits for that one run
# and follows its epochs as they come (_LiveRun). It trains in a slot of the work queue, costed by
# lib.finetune.cost.run_cost (weights, gradients, optimizer state, activations); the script run that trains is
# the session's one run (Streamlit runs a session's script once at a time), and it stops at the next epoch when
# the learner leaves or changes the input (the progress callback's Streamlit call raises).


class _LiveRun:
    """A run in progress: the epochs reported so far (appended by the training session), and when it ended."""

    def __init__(self) -> None:
        self.history: list = []
        self.done = threading.Event()
        self.result = None


_LIVE: dict[tuple, _LiveRun] = {}
FINETUNE_RUNS: Counter[str] = Counter()  # training runs started, by recipe key (tests: a shared run trains once)


def finetune_prepared(model_name: str, target: str, sentences: tuple[str, ...], senses: tuple[str | None, ...],
                      task: str, heldout: int, split_seed: int):  # fmt: skip
    """lib.finetune.run.prepare_set of the set (split and the pretrained task vectors), once per input.

    ``model_name``: a model with trained weights. Raises FineTuneError (not cached) for a set that cannot be
    split (one sense, a sense with one sentence, unlabelled lines)."""
    from lib.finetune.data import prepare, split_set

    def run():
        split = split_set(target, sentences, senses, heldout=heldout / 100, seed=split_seed)
        tv = target_vectors(model_name, sentences, target)
        return prepare(encoder(model_name), split, task, vectors=tv if len(tv.kept) == len(sentences) else None)

    key = ("finetune_prepared", model_name, target, sentences, senses, task, heldout, split_seed)
    return _cached(key, run, size=lambda p: p.features.nbytes + budget.plain_nbytes(p.split.sentences))


def _result_nbytes(result) -> int:
    """What a FineTuneResult holds of its own: the fine-tuned layers or adapters, the head, the comparison."""
    c = result.comparison
    arrays = 0 if c is None else sum(v.nbytes for v in vars(c).values() if isinstance(v, np.ndarray))
    return int(result.held_bytes + arrays + 4096)


def finetune_run(model_name: str, prepared, recipe, progress: Callable | None = None):
    """lib.finetune.run.run_recipe of ``recipe`` on ``prepared``, once per process (RESULTS) and shared.

    ``progress(report)`` gets every :class:`lib.finetune.train.EpochReport` of the run, from the start, whether
    this session trains it or watches another session train it. A cancelled run (the trainer left) is not
    cached; its watchers start it again. The fine-tuned model is kept openable (lib.finetune.model.keep).
    """
    from lib.finetune.cost import run_cost
    from lib.finetune.model import keep
    from lib.finetune.run import run_recipe

    key = ("finetune_run", model_name, recipe.key)
    while True:
        hit = store.RESULTS.get(key)
        if hit is not None:
            keep(model_name, hit.run)
            if progress is not None:
                for rep in hit.run.history:
                    progress(rep)
            return hit
        with _lock:
            live = _LIVE.get(key)
            owner = live is None
            if owner:
                live = _LIVE[key] = _LiveRun()
        if owner:
            break
        seen = 0
        while True:  # another session trains this run: follow its epochs
            finished = live.done.wait(0.25)
            new = live.history[seen:]
            seen += len(new)
            for rep in new:
                if progress is not None:
                    progress(rep)
            if progress is None:
                st.empty()  # a Streamlit call: the learner leaving stops the wait here
            if finished:
                break
        if live.result is not None:
            return live.result
        # the trainer left or its run failed: try again (this session may train it now)

    def report(rep):
        live.history.append(rep)
        if progress is not None:
            progress(rep)

    try:
        enc = encoder(model_name)
        # large work whatever its bytes (seconds of CPU): it never takes the slot kept for an ordinary set
        with heavy(run_cost(enc, prepared, recipe), large=True):
            with _lock:
                FINETUNE_RUNS[recipe.key] += 1
            result = run_recipe(enc, prepared, recipe, progress=report)
            release_memory()
        if result.run.stopped != "cancelled":
            store.RESULTS.put(key, result, _result_nbytes)
            keep(model_name, result.run)
        live.result = result
        return result
    finally:
        live.done.set()
        with _lock:
            _LIVE.pop(key, None)


def finetune_open(model_key_: str, target: str, sentences: tuple[str, ...], senses: tuple[str | None, ...],
                  progress: Callable | None = None) -> None:  # fmt: skip
    """Make a fine-tuned model key (``<id>#finetuned-<recipe>``) openable by :func:`encoder`: train its recipe
    on the set again when this process no longer holds it (deterministic: the same weights).

    Raises FineTuneError when the set is not the one the recipe was trained on (its digest differs)."""
    from lib.finetune.data import FineTuneError, set_digest
    from lib.finetune.model import kept
    from lib.finetune.recipe import Recipe

    key = parse_model_key(model_key_)
    if key.weights != "finetuned" or kept(key.key):
        return
    recipe = Recipe.from_key(str(key.value))
    if set_digest(target, sentences, [str(s) for s in senses]) != recipe.digest:
        raise FineTuneError(
            "This fine-tuned model was trained on other sentences than the ones in use, so it cannot be made "
            "again here: open the link it came from, or fine-tune on these sentences on the Fine-tune page."
        )
    prepared = finetune_prepared(key.base, target, sentences, senses, recipe.task, recipe.heldout, recipe.split_seed)
    finetune_run(key.base, prepared, recipe, progress)


def finetune_seeds(model_name: str, prepared, recipe, seeds: tuple[int, ...], progress: Callable | None = None):
    """lib.finetune.seeds.seed_spread of ``recipe`` under ``seeds``, each run shared with :func:`finetune_run`
    (the run on screen is one of them). ``progress(seed, report)``."""
    from lib.finetune.seeds import seed_spread

    runs = {}
    for s in seeds:
        cb = None if progress is None else (lambda rep, s=s: progress(s, rep))
        runs[int(s)] = finetune_run(model_name, prepared, recipe.with_seed(int(s)), cb).run
    return seed_spread(encoder(model_name), prepared, recipe, seeds, done=runs)
