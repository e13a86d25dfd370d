"""The Streamlit edge of admission control (lib.serving.work): heavy work waits its turn with a message that says so.

``with heavy(cost):`` around a model pass, a projection or an occlusion takes a slot of the process's one
:data:`WORK` queue. While the job waits, the page shows "The server is busy with 3 other requests; yours is
next, in about 10 s." in place, updated a few times a second; the moment it starts the message goes. Each update
is a Streamlit call, so when the learner leaves or changes the input (Streamlit stops the script run at its next
call) the waiting job leaves the queue, and a chunked job stops between chunks. Work started outside a script
run (a training worker, the warm-up) waits without a message.

app.py runs every page inside :func:`page_run`: the queue counts a page computing outside any job (building
figures, reading out) as a core in use, so large work gives way to it (lib.serving.work).

Cost estimates (bytes held while the job runs) are here too, from sizes known before the job starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from lib.serving.budget import MAX_PIECES_PER_SENTENCE, memory_limit_bytes
from lib.serving.memory import collect_garbage, release_memory, resident_bytes
from lib.serving.work import Job, Wait, WorkQueue
from lib.stats.baseline import PAIR_BLOCK
from lib.stats.context import variants_per_slice

WORK = WorkQueue.from_env()  # the process's one queue (CONTEXT_LENS_WORK_JOBS, CONTEXT_LENS_WORK_MB)


def about(seconds: float) -> str:
    """A duration as a learner reads it: "a few seconds", "about 20 s", "about 3 min"."""
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {5 * round(seconds / 5):.0f} s"
    return f"about {max(2, round(seconds / 60)):.0f} min"


def busy_message(w: Wait) -> str:
    """What a waiting learner reads: how many requests the server is busy with, whether theirs is next, and
    when it should start (the queue's estimate: lib.serving.work.WorkQueue's declared and measured durations)."""
    n = w.running + w.queued
    turn = "yours is next" if w.queued == 0 else f"{w.queued} of them wait before yours"
    return (
        f"The server is busy with {n} other request{'s' if n != 1 else ''}; {turn}, in {about(w.seconds)} by "
        "its estimate. It starts by itself."
    )


def in_script_run() -> bool:
    """Whether the calling thread runs a Streamlit script (a page), where a message can be shown."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    return get_script_run_ctx(suppress_warning=True) is not None


@contextmanager
def heavy(cost: int, *, lease: bool = False, large: bool | None = None, background: bool = False,
          seconds: float | None = None, yields: bool = False) -> Iterator[Job]:  # fmt: skip
    """Hold a slot of :data:`WORK` for work holding ``cost`` bytes; show the wait message while it waits.

    ``lease=True``: hold the bytes only, across a request's chunks (each chunk takes its own slot inside).
    ``large``: large work whatever its bytes (lib.serving.work.WorkQueue.job), e.g. seconds of CPU on a large set;
    by default every job of a run that works on a large set (:func:`lease_for_run`) is large, the rest are
    judged by their bytes. ``background``, ``seconds``, ``yields``: as WorkQueue.job (the warm-up; a training
    run's estimate and its checkpoints). Yields the :class:`lib.serving.work.Job` (``job.checkpoint()``).
    """
    _run.work_bytes = getattr(_run, "work_bytes", 0) + int(cost)
    if large is None and getattr(_run, "large", False):
        large = True
    if not lease and not background and (large or (large is None and cost > WORK.small_bytes)):
        heavy_run()  # the rest of this page run computes at a lower OS priority
    box = None
    shown = in_script_run()

    def waiting(w: Wait) -> None:
        nonlocal box
        if not shown:
            return
        if box is None:
            box = st.empty()
        box.info(busy_message(w), icon=":material/hourglass_top:")

    try:
        with WORK.job(cost, wait=waiting, slot=not lease, large=large, background=background, seconds=seconds,
                      yields=yields) as job:  # fmt: skip
            if box is not None:
                box.empty()
                box = None
            if cost > WORK.small_bytes:
                make_room(cost)
            yield job
    finally:
        if box is not None:
            box.empty()
        if not lease:
            release_memory()  # the job's temporaries go back to the OS, not into glibc's heap (lib.serving.memory)


MEMORY_LIMIT = memory_limit_bytes()  # what a hosted copy aims to stay under (CONTEXT_LENS_MEMORY_MB); None: no limit
_room_makers: list[Callable[[int], int]] = []  # who can give memory back: the results cache (ui.cache.store)


def register_room_maker(drop: Callable[[int], int]) -> None:
    """``drop(nbytes)`` frees about ``nbytes`` of held results and returns what it freed (ui.cache.store registers
    the results cache's least recently used entries)."""
    if drop not in _room_makers:
        _room_makers.append(drop)


def make_room(cost: int, limit: int | None = None) -> int:
    """Before large work that will hold ``cost`` bytes: when the process's resident memory and the cost pass the
    limit (:data:`MEMORY_LIMIT`), drop cached results, least recently used first, until they would fit, and
    give their memory back; returns the bytes dropped. The cache's own budget (CONTEXT_LENS_CACHE_MB) and the
    work budget are kept apart, so a full cache beside a set at the word-piece budget and its pass went past
    1.4 GB on a server holding both models (benchmarks/crowd.py, 2026-11-28: 0.96 GB after the warm-up, 0.2
    GB of results, a 0.2 GB decoder set); a copy under memory pressure recomputes a result sooner instead."""
    limit = MEMORY_LIMIT if limit is None else int(limit)
    over = 0 if limit is None else resident_bytes() + int(cost) - limit
    if over <= 0:
        return 0
    dropped = sum(drop(over) for drop in list(_room_makers))
    if dropped:
        collect_garbage()  # what the dropped entries held goes back to the OS now
        logging.getLogger("context_lens").info(
            "made room: %d MB of results dropped before %d MB of work", dropped >> 20, int(cost) >> 20
        )
    return dropped


_run = threading.local()  # the leases and heavy work of the current script run (a script run is one thread)
COLLECT_AFTER_BYTES = 16 * 2**20  # a run whose heavy work declared this much ends with a full collection


def lease_for_run(cost: int) -> None:
    """Hold ``cost`` bytes of :data:`WORK` until the current script run ends (:func:`end_run`, which app.py
    calls when a page has run; lib.serving.work lets a lease go when its thread has ended, e.g. a page run on its own).

    For what a page keeps in hand for its whole run, e.g. a large set's vectors (and its second model's): a
    few tabs opening large sets then hold them one tab at a time, and the others wait their turn with the
    busy message. Take it *before* entering any cache computation (a lease waited for while holding a
    cache entry's lock could wait for the run that needs that entry). From then on every job of the run is
    large work (:func:`heavy`): its statistics and projections of hundreds of sentences wait in the large
    lane, not in the one kept for ordinary sets. A run whose set goes through ``n`` models
    (:func:`models_per_set`) leases ``n × cost`` at its first call, so one tab's comparison is admitted whole;
    a run that holds a lease already passes (its second model does not wait for its first).
    """
    _run.large = True  # the run works on a large set: its jobs are large work, the small lane stays free
    WORK.mark_large()  # and its computing outside the queue is not counted as a learner's interactive work
    heavy_run()
    held = getattr(_run, "leases", None)
    if held:
        return
    lease = heavy(cost * getattr(_run, "models", 1), lease=True)
    lease.__enter__()
    _run.leases = [lease]


def _release(held: list) -> None:
    while held:
        held.pop().__exit__(None, None, None)


def models_per_set(n: int) -> None:
    """The current script run reads its sentence set through ``n`` models (a comparison: 2); see lease_for_run."""
    _run.models = max(1, int(n))


def log_queue(every: float = 0.5) -> bool:
    """With ``CONTEXT_LENS_WORK_LOG=1``, once per process: a daemon thread logs the queue and the process's
    resident memory every ``every`` seconds while anything runs or waits (benchmarks/crowd.py reads it to say
    what was running when memory peaked). Returns whether it started one."""
    global _logging
    if os.environ.get("CONTEXT_LENS_WORK_LOG", "").strip() != "1" or _logging:
        return False
    _logging = True
    import time

    log = logging.getLogger("context_lens")

    def run() -> None:
        while True:
            snap = WORK.snapshot()
            if snap["running"] or snap["waiting"] or snap["pages"]:
                log.info("work queue: rss_mb=%d %s", resident_bytes() >> 20, snap)
            time.sleep(every)

    threading.Thread(target=run, name="context-lens-work-log", daemon=True).start()
    return True


_logging = False


HEAVY_NICE = 10  # the OS priority of a page run that does large work, for the rest of that run (0 = as others)


def heavy_run() -> None:
    """The current page run does large work (a large set, a long occlusion, a large upload): the rest of the run
    is large work. Its jobs take the large lane, even the small ones (a slot of the small lane held by a
    low-priority thread would keep a learner's job waiting), its computing outside the queue is not counted as
    a learner's, and its thread computes at a lower OS priority (:data:`HEAVY_NICE`), figures and readouts
    included, which the work queue does not run. A new learner's page run then gets the cores first. A
    Streamlit script run has a thread of its own (the next run starts afresh); elsewhere (a test calling a
    page's code, a worker) nothing changes."""
    if getattr(_run, "niced", False) or not in_script_run() or threading.current_thread() is threading.main_thread():
        return
    _run.niced = True
    _run.large = True
    WORK.mark_large()
    lower_priority(HEAVY_NICE)


def lower_priority(n: int) -> None:
    """Lower the calling thread's OS priority by ``n`` (Linux keeps a nice value per thread): a background thread
    (training, the warm-up) then gives way to the pages' threads at the OS too. Nothing where it cannot."""
    if n > 0:
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), n)


@contextmanager
def page_run() -> Iterator[None]:
    """A learner's page run (app.py): counted by the queue while it computes outside any job."""
    with WORK.interactive():
        yield


def end_run() -> None:
    """End the current script run's hold on memory (app.py, after every page run, the page's own run over).

    What the page's top-level names held is garbage now: no widget the session keeps points into the page's
    namespace (pages hand widgets only data and ui functions: tests/test_bounds.py checks it), but the
    namespace is a reference cycle. A run whose heavy work declared at least :data:`COLLECT_AFTER_BYTES`
    (a large set's lease, a model pass over a large set, a comparison's second model) frees it with a full
    collection (lib.serving.memory.collect_garbage), and only then lets go of its leases: the bytes a lease
    counted are gone before the next tab may take them. A run that only read the cache pays nothing.
    """
    worked, _run.work_bytes = getattr(_run, "work_bytes", 0), 0
    try:
        if worked >= COLLECT_AFTER_BYTES:
            collect_garbage()
    finally:
        _release(getattr(_run, "leases", None) or [])
        _run.models = 1
        _run.large = False


# ----------------------------------------------------------------------------------- cost estimates
FLOAT = 4  # bytes per float32


def attention_floats(enc, pieces: list[int]) -> int:
    """Floats of the attention weights of sentences of ``pieces`` word pieces each: L × H × n² apiece."""
    return sum(n * n for n in pieces) * enc.num_layers * enc.num_heads


def pass_cost(enc, pieces: int, attentions: int = 0) -> int:
    """Bytes a model pass of ``enc`` (lib.models.encoder.Encoder) over ``pieces`` word pieces keeps: every layer's
    vectors, plus ``attentions`` floats of attention weights kept. What the pass holds while it runs besides is
    :func:`forward_cost`; a job running one declares both (:func:`model_job_cost`)."""
    hidden = int(getattr(enc.model.config, "hidden_size", 768))
    return (pieces * enc.num_hidden_states * hidden + attentions) * FLOAT


FORWARD_FIXED = 8 * 2**20  # what any forward pass holds besides its batch (the libraries' scratch)


def forward_cost(enc, pieces: list[int]) -> int:
    """Bytes a model pass over sentences of ``pieces`` word pieces holds *while it runs*, besides what it keeps:
    one batch at a time (at most the family's batch of word pieces, lib.models.base.plan_batches), whose every
    layer's tensors sit beside their copy out (2 × (L + 1) × hidden floats a piece), with a layer's feed-forward
    activations (4 × hidden) and attention scores (3 × heads × the longest sentence's length), plus
    :data:`FORWARD_FIXED`. Measured 2026-11-27 against the peak resident memory of a pass (tests/test_work_cost.py):
    a batch of 512 pieces of 128 holds 27–33 MB on the encoder (31 estimated); 183 pieces of the bank preset 8–11
    MB (14). The decoder's batch is 256 pieces and a large batch's copy takes its freed layers' place
    (lib.models.base._unpad), so it holds less than counted here: 2026-11-28, 210 pieces of 105 held 25–29 MB (41),
    16 sentences of 105 pieces 30 MB beside the 115 MB they keep (48)."""
    if not pieces:
        return 0
    batch = min(int(sum(pieces)), int(enc._batch_pieces()))
    longest = min(max(int(n) for n in pieces), batch)
    per_piece = 2 * enc.num_hidden_states * enc.hidden_size + 4 * enc.hidden_size + 3 * enc.num_heads * longest
    return batch * per_piece * FLOAT + FORWARD_FIXED


def model_job_cost(enc, pieces: list[int], attentions: int = 0) -> int:
    """Bytes a job that runs ``enc`` over sentences of ``pieces`` word pieces (keeping ``attentions`` floats of
    attention weights) holds at its peak: what the pass keeps (:func:`pass_cost`) and what it holds while it runs
    (:func:`forward_cost`)."""
    return pass_cost(enc, int(sum(pieces)), attentions) + forward_cost(enc, pieces)


def corpus_cost(enc, pieces: int) -> int:
    """Bytes lib.inputs.corpus.compute_corpus_statistics holds on a corpus cut to ``pieces`` word pieces: the
    vectors it keeps twice (gathered, then joined), a chunk's pass, each layer's covariance in eigen form
    ((L + 1) × hidden × min(hidden, pieces) float32 eigenvectors, kept: fewer vectors than dimensions have at
    most that many directions with variance, lib.stats.geometry.fit_covariance) with one layer's float64
    scratch, and one layer's vectors in float64. Measured 2026-11-28 against the peak resident memory (a fresh
    process, a second run): the reference corpus on the encoder (5,758 pieces) 178 MB (174 estimated; 147–182
    in earlier runs), its first 24 sentences on the decoder (355) 97 MB (129; 162 MB when every layer kept
    hidden² float64 eigenvectors)."""
    longest = max(1, min(MAX_PIECES_PER_SENTENCE, int(pieces)))  # the chunk's batch: sentences up to the cap
    columns = enc.hidden_size * min(enc.hidden_size, max(1, int(pieces)))  # one layer's eigenvectors
    square = enc.num_hidden_states * columns * 4 + 4 * columns * 8
    return (2 * pass_cost(enc, pieces) + forward_cost(enc, [longest] * max(1, int(pieces) // longest)) + square
            + int(pieces) * enc.hidden_size * 8)


def projection_cost(n: int, hidden: int) -> int:
    """Bytes a 2-D/3-D map of ``n`` points of ``hidden`` dimensions holds: the float64 points and a few n × n
    distance matrices (t-SNE, the neighbour check)."""
    return 8 * n * hidden * 2 + 3 * 8 * n * n


def profile_cost(n: int, num_hidden_states: int, hidden: int) -> int:
    """Bytes lib.stats.layer_profile.layer_profile holds on ``n`` target vectors of ``num_hidden_states`` layers and
    ``hidden`` dimensions: a few (L + 1) × n × n float64 matrices and two (n, L + 1, hidden) sentence vectors, the
    readout's float64 copies of the vectors with their pooled ones (about ten), and the random baseline's blocks of
    pairs (lib.stats.baseline); the per-sentence statistics work a layer at a time. Measured 2026-11-27 against the
    peak resident memory (tests/test_work_cost.py): 27 long sentences on the decoder 65 MB (69 estimated)."""
    k = int(num_hidden_states)
    pooled = n * (k + 2) * hidden * 8
    return 2 * k * n * (n + hidden) * 8 + 10 * pooled + 4 * PAIR_BLOCK * (k + 2) * hidden * 8


def occlusion_cost(enc, words: int, pieces: int) -> int:
    """Bytes lib.stats.context.occlusion holds on a sentence of ``pieces`` word pieces and ``words`` context words:
    the sentence's pass with its attentions, then one slice of variants at a time (its pass, kept and running),
    and the target's vectors in every variant (gathered, then joined). Measured 2026-11-27 against the peak
    resident memory (tests/test_work_cost.py): a 60-word sentence on the decoder 108 MB (~280 MB before the
    variants ran in slices)."""
    step = min(int(words), variants_per_slice(pieces))
    return (
        pass_cost(enc, pieces, attention_floats(enc, [pieces]))
        + model_job_cost(enc, [pieces] * step)
        + 2 * int(words) * enc.num_hidden_states * enc.hidden_size * FLOAT
    )
