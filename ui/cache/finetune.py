"""Fine-tuning runs (pages/finetune.py, a fine-tuned model's link): once per process and recipe, shared, each
started by a learner's click, bounded in CPU time, stopped when nobody follows it any more.

A run is keyed by its model and recipe (the recipe names the set by its digest, the task, the split and every
setting), computed once per process and shared: a class watching the teacher's run follows its epochs as they
come (_LiveRun), and a finished run is in the results cache.

**Before it starts** :func:`finetune_plan` says what it would cost: CPU seconds (lib.finetune.cost.run_seconds,
corrected by this process's own runs, :data:`PACE`) and bytes (run_cost), and whether this server runs it: a
hosted copy refuses a run over its CPU limit (lib.serving.hosting.train_seconds_limit) or over the work
budget's bytes, with a message that says the limit, why, and what fits (lib.serving.work.WorkRefused).
:func:`finetune_run` with ``start=False`` only finds a run (finished, or under way for another session): a page
opened by a link calls it so, and shows the cost and the Train button; ``start=True`` comes after the click.

**While it runs** it trains in a daemon thread of its own, in a large slot of the work queue (lib.serving.work),
passing the queue's checkpoint between every two batches: it gives its slot to small work that waits and pauses
while page runs fill the cores. It stops at the next batch when it has used :data:`OVERRUN` times the CPU limit
(the estimate was off), and when no session has followed it for :data:`GRACE` seconds: every session that
shows the run (the one that started it and any other) follows it from its own script run, and Streamlit stops
that script run when the tab closes, the session expires or the learner changes the input. A session follows
one run at a time; starting another replaces it (the one left behind stops unless others follow it). On a
hosted copy the thread runs at a lower OS priority (:data:`TRAIN_NICE`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

from lib.models.keys import parse_model_key
from lib.serving import budget
from lib.serving.hosting import hosted_mode, starts_without_click, train_seconds_limit
from lib.serving.memory import release_memory
from lib.serving.work import Wait, WorkRefused
from ui import work
from ui.cache import store
from ui.cache.encodings import target_vectors
from ui.cache.models import encoder
from ui.cache.store import _cached, _lock

GRACE = 5.0  # seconds a run goes on with nobody following it (a rerun of the same page picks it up again)
OVERRUN = 1.25  # a run stops when it has used this many times the CPU limit
TRAIN_NICE = 10  # the training thread's OS priority on a hosted copy (0 = as the pages'; 19 = lowest)
FINETUNE_RUNS: Counter[str] = Counter()  # training runs started, by recipe key (tests: a shared run trains once)
_log = logging.getLogger("context_lens")


def _pace():
    from lib.finetune.cost import Pace

    global PACE
    if PACE is None:
        PACE = Pace()
    return PACE


PACE = None  # lib.finetune.cost.Pace of this process's runs (made on first use: lib.finetune imports torch)


class _LiveRun:
    """A run in progress: the epochs reported so far, the batches passed, whether it waits for the queue, who
    follows it, and how it ended (``result``, ``error``, ``reason`` "limit" when stopped at the CPU limit)."""

    def __init__(self, epochs: int, batches: int) -> None:
        self.history: list = []
        self.done = threading.Event()
        self.cancel = threading.Event()
        self.result = None
        self.error: BaseException | None = None
        self.reason: str | None = None
        self.wait: Wait | None = None
        self.started = False
        self.steps = 0
        self.epochs = epochs
        self.batches = max(1, batches)  # per epoch
        self.watchers = 0
        self.left_at: float | None = None  # when its last follower left (None: followed, or not yet)

    def orphaned(self) -> bool:
        with _lock:
            return self.watchers == 0 and self.left_at is not None and time.monotonic() - self.left_at >= GRACE

    def status(self) -> str | None:
        """A line for whoever follows it: its wait for the queue, or where a long epoch stands."""
        w = self.wait
        if w is not None:
            n = w.running + w.queued
            return (
                f"Waiting for the server: busy with {n} other request{'s' if n != 1 else ''}; training starts in "
                f"{work.about(w.seconds)} by its estimate."
            )
        if not self.started:
            return None
        epoch = min(self.epochs, max(0, len(self.history) - 1) + 1)
        batch = min(self.batches, self.steps - (epoch - 1) * self.batches)
        return f"Epoch {epoch} of {self.epochs}: batch {max(1, batch)} of {self.batches}. Learners' pages go first."


_LIVE: dict[tuple, _LiveRun] = {}
_SESSION_RUN: dict[str, tuple] = {}  # session id -> the run it started last (a new one replaces it)


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


@dataclass(frozen=True)
class Plan:
    """What a run would cost and whether this server runs it.

    seconds: estimated CPU seconds on this server (its own pace); nbytes: what it holds while it trains;
    limit:   the server's CPU limit for one run (None: none); refusal: why the server will not run it (None: it
    will); state: "done" (in the cache), "live" (under way for a session) or None (it would start now).
    """

    seconds: float
    nbytes: int
    limit: float | None
    refusal: str | None
    state: str | None

    @property
    def free(self) -> bool:
        """Showing it costs nothing: it is finished or under way already."""
        return self.state is not None

    @property
    def starts_by_itself(self) -> bool:
        """A link may start it without a click (lib.serving.hosting.starts_without_click)."""
        return self.free or (self.refusal is None and starts_without_click(self.seconds))


def limit_text(limit: float) -> str:
    """The limit and why, as a page says it."""
    return (
        f"This server gives one training run at most {work.about(limit).removeprefix('about ')} of CPU, so that a "
        "class's pages keep their cores."
    )


def _state(model_name: str, recipe) -> str | None:
    key = ("finetune_run", model_name, recipe.key)
    if store.RESULTS.get(key) is not None:
        return "done"
    with _lock:
        live = _LIVE.get(key)
    return "live" if live is not None and not live.done.is_set() and not live.cancel.is_set() else None


def finetune_plan(model_name: str, prepared, recipe, runs: int = 1) -> Plan:
    """What ``runs`` runs of ``recipe`` on ``prepared`` would cost here (see the module), and whether they may."""
    from lib.finetune.cost import run_cost, run_seconds

    enc = encoder(model_name)
    seconds = run_seconds(enc, prepared, recipe).seconds * _pace().factor() * max(1, runs)
    nbytes = run_cost(enc, prepared, recipe)
    limit = train_seconds_limit()
    refusal = None
    if limit is not None and seconds > limit:
        refusal = (
            f"Training this would take {work.about(seconds)} of this server's CPU. {limit_text(limit)} Fewer "
            "epochs, fewer sentences or a lighter method (the top layers, LoRA, a head on one layer) fit."
        )
    elif hosted_mode() and nbytes > work.WORK.max_bytes:
        refusal = (
            f"This run would hold about {nbytes / 2**20:,.0f} MB while it trains; this server gives one job at most "
            f"{work.WORK.max_bytes / 2**20:,.0f} MB, so that a class's pages keep their memory. Unfreezing the top "
            "layers or LoRA fits (or run the app on your own computer)."
        )
    return Plan(seconds, nbytes, limit, refusal, _state(model_name, recipe))


class _Gate:
    """``cancel`` for lib.finetune.train: asked before every batch, it passes the queue's checkpoint and says
    whether the run must stop (nobody follows it, or it used its CPU)."""

    def __init__(self, live: _LiveRun, job, limit: float | None):
        self.live, self.job, self.limit = live, job, limit
        self.cpu0 = time.thread_time()

    def _stop(self) -> bool:
        live = self.live
        if not live.cancel.is_set() and live.orphaned():
            live.cancel.set()
        return live.cancel.is_set()

    def is_set(self) -> bool:
        if self._stop():
            return True
        self.job.checkpoint(stop=self._stop)
        self.live.steps += 1
        if self.limit is not None and time.thread_time() - self.cpu0 > self.limit * OVERRUN:
            self.live.reason = "limit"
            self.live.cancel.set()
        return self._stop()


class _Left(Exception):
    """Nobody follows the run any more while it waits for the queue."""


def _start(live: _LiveRun, key: tuple, model_name: str, prepared, recipe, plan: Plan) -> None:
    """Train ``recipe`` in a daemon thread (see the module); ``live`` records how it goes."""
    from lib.finetune.cost import run_seconds
    from lib.finetune.model import keep
    from lib.finetune.run import run_recipe

    def waiting(w: Wait) -> None:
        live.wait = w
        if live.orphaned():
            raise _Left

    def train() -> None:
        work.lower_priority(TRAIN_NICE if hosted_mode() else 0)
        try:
            enc = encoder(model_name)
            with work.WORK.job(plan.nbytes, wait=waiting, large=True, seconds=plan.seconds, yields=True) as job:
                live.wait = None
                live.started = True
                with _lock:
                    FINETUNE_RUNS[recipe.key] += 1
                gate = _Gate(live, job, plan.limit)
                result = run_recipe(enc, prepared, recipe, progress=live.history.append, cancel=gate)
                used = time.thread_time() - gate.cpu0
                release_memory()
            if result.run.stopped != "cancelled":
                store.RESULTS.put(key, result, _result_nbytes)
                keep(model_name, result.run)
                raw = run_seconds(enc, prepared, recipe)
                _pace().record(raw.seconds - (recipe.epochs - (len(result.run.history) - 1)) * raw.per_epoch, used)
            live.result = result
        except _Left:
            live.cancel.set()
        except BaseException as err:  # noqa: BLE001 - handed to the sessions that follow the run
            live.error = err
            if not isinstance(err, ValueError):
                _log.exception("training run %s failed", recipe.key)
        finally:
            live.wait = None
            live.done.set()
            with _lock:
                if _LIVE.get(key) is live:
                    del _LIVE[key]

    threading.Thread(target=train, name="context-lens-train", daemon=True).start()


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def _follow(live: _LiveRun, progress: Callable | None, where) -> None:
    """Show ``live``'s epochs as they come until it ends; while this script run follows it, it counts as a
    follower. Every second at least one Streamlit call: the learner leaving stops the script run there."""
    note = (where if where is not None else st).empty() if work.in_script_run() else None
    seen, shown, last = 0, None, 0.0
    with _lock:
        live.watchers += 1
        live.left_at = None
    try:
        with work.WORK.idle():  # following is sleeping: the queue does not count it as a page computing
            while True:
                finished = live.done.wait(0.25)
                new = live.history[seen:]
                seen += len(new)
                if progress is not None:
                    for rep in new:
                        progress(rep)
                text = None if finished else live.status()
                if note is not None and (text != shown or time.monotonic() - last >= 1.0):
                    if text:
                        note.caption(text)
                    else:
                        note.empty()
                    shown, last = text, time.monotonic()
                if finished:
                    break
    finally:
        with _lock:
            live.watchers -= 1
            if live.watchers == 0:
                live.left_at = time.monotonic()
    if note is not None:
        note.empty()


def finetune_run(model_name: str, prepared, recipe, progress: Callable | None = None, *, start: bool = True,
                 where=None):  # fmt: skip
    """lib.finetune.run.run_recipe of ``recipe`` on ``prepared``, once per process (RESULTS) and shared.

    ``start=False``: only a finished run, or one under way (followed to its end); None when there is neither.
    ``start=True`` (a learner clicked): starts it when there is neither, after :func:`finetune_plan` allows it
    (else raises WorkRefused with the plan's message). ``progress(report)`` gets every
    :class:`lib.finetune.train.EpochReport` of the run from the start; a line under it (in ``where``, a Streamlit
    container, else the page) says when the run waits for the queue. A run stopped at the CPU limit raises
    WorkRefused; one whose followers all left is not cached, and ``start=False`` then gives None. The fine-tuned
    model is kept openable (lib.finetune.model.keep).
    """
    from lib.finetune.model import keep

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
            if live is not None and (live.done.is_set() or live.cancel.is_set()):
                live = None  # it is ending: a new one may start
        if live is None:
            if not start:
                return None
            plan = finetune_plan(model_name, prepared, recipe)
            if plan.refusal is not None:
                raise WorkRefused(plan.refusal)
            _replace_previous(key)
            with _lock:
                live = _LIVE.get(key)
                if live is None or live.done.is_set() or live.cancel.is_set():
                    batches = -(-len(prepared.split.train) // max(1, recipe.batch))
                    live = _LIVE[key] = _LiveRun(recipe.epochs, batches)
                    _start(live, key, model_name, prepared, recipe, plan)
        _follow(live, progress, where)
        if live.error is not None:
            raise live.error
        if live.reason == "limit":
            limit = train_seconds_limit() or 0.0
            raise WorkRefused(
                f"Training stopped after epoch {len(live.history) - 1} of {recipe.epochs}: it had used "
                f"{work.about(limit * OVERRUN)} of CPU, past this server's limit. {limit_text(limit)} Fewer epochs, "
                "fewer sentences or a lighter method fit."
            )
        if live.result is not None and live.result.run.stopped != "cancelled":
            return live.result
        if not start:
            return None
        # its followers had left and it stopped: this session asked for it, so it starts again


def _replace_previous(key: tuple) -> None:
    """This session starts ``key``: the run it started before stops now unless another session follows it."""
    sid = _session_id()
    if sid is None:
        return
    with _lock:
        before = _SESSION_RUN.get(sid)
        _SESSION_RUN[sid] = key
        old = _LIVE.get(before) if before is not None and before != key else None
        if old is not None and old.watchers == 0:
            old.cancel.set()
        while len(_SESSION_RUN) > 1024:
            del _SESSION_RUN[next(iter(_SESSION_RUN))]


def finetune_open(model_key_: str, target: str, sentences: tuple[str, ...], senses: tuple[str | None, ...],
                  progress: Callable | None = None, *, start: bool = True, where=None) -> Plan | None:  # fmt: skip
    """Make a fine-tuned model key (``<id>#finetuned-<recipe>``) openable by :func:`encoder`: train its recipe
    on the set again when this process no longer holds it (deterministic: the same weights).

    None when the model opens; else the :class:`Plan` of training it again, which ``start=False`` (no click
    yet) or the server's refusal left undone. Raises FineTuneError when the set is not the one the recipe was
    trained on (its digest differs)."""
    from lib.finetune.data import FineTuneError, set_digest
    from lib.finetune.model import kept
    from lib.finetune.recipe import Recipe

    key = parse_model_key(model_key_)
    if key.weights != "finetuned" or kept(key.key):
        return None
    recipe = Recipe.from_key(str(key.value))
    if set_digest(target, sentences, [str(s) for s in senses]) != recipe.digest:
        raise FineTuneError(
            "This fine-tuned model was trained on other sentences than the ones in use, so it cannot be made "
            "again here: open the link it came from, or fine-tune on these sentences on the Fine-tune page."
        )
    prepared = finetune_prepared(key.base, target, sentences, senses, recipe.task, recipe.heldout, recipe.split_seed)
    plan = finetune_plan(key.base, prepared, recipe)
    may_start = plan.refusal is None and (start or starts_without_click(plan.seconds))
    if not (may_start or plan.free):
        return plan
    if finetune_run(key.base, prepared, recipe, progress, start=may_start, where=where) is None:
        return finetune_plan(key.base, prepared, recipe)
    return None


def finetune_seeds(model_name: str, prepared, recipe, seeds: tuple[int, ...], progress: Callable | None = None,
                   *, start: bool = True):  # fmt: skip
    """lib.finetune.seeds.seed_spread of ``recipe`` under ``seeds``, each run shared with :func:`finetune_run`
    and its frozen head (the run on screen is one of them), one after the other. ``progress(seed, report)``.
    None when ``start``
    is False and a run is neither finished nor under way."""
    from lib.finetune.seeds import seed_spread

    runs, heads = {}, {}
    for s in seeds:
        cb = None if progress is None else (lambda rep, s=s: progress(s, rep))
        result = finetune_run(model_name, prepared, recipe.with_seed(int(s)), cb, start=start)
        if result is None:
            return None
        runs[int(s)] = result.run
        if result.baseline is not None:
            heads[int(s)] = result.baseline
    return seed_spread(encoder(model_name), prepared, recipe, seeds, done=runs, heads_done=heads)
