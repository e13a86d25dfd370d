"""Admission control for heavy work: one server-wide budget for what is being computed right now.

The results cache (lib.serving.budget.ByteLRU) bounds what the server *keeps*; this module bounds what it *holds
while computing* (model passes, projections, occlusion, the second model, training) and decides *who computes
first*. Every job declares what it will hold (``cost``, bytes, estimated from its size before it starts) and asks
:class:`WorkQueue` for a slot. There are three lanes:

* **small** (interactive): a job of at most ``small_bytes`` (an ordinary class set of a few sentences, a
  sentence's attentions), unless its caller says it is large work. Small work goes before everything else, may
  use every slot, and is not counted against the byte budget of heavy work: it has a reserve of its own
  (``small_bytes`` per slot), so no heavy job, however large, makes a learner's first chart wait for memory;
* **large** (heavy): everything else. Large work never takes the last slot (``max_jobs - 1`` of them at once), and
  the bytes of the large jobs and leases running together fit ``max_bytes`` (``CONTEXT_LENS_WORK_MB``, default
  :data:`DEFAULT_WORK_MB`); a large job over the whole budget runs alone in the large lane (no other large job or
  lease beside it: it waits its turn in line with the leases), while small work goes on beside it;
* **background** (the warm-up a hosted copy does after it starts): only when nothing else waits and no large job
  runs, and only while the cores are free of the learners' work.

``max_jobs`` is ``CONTEXT_LENS_WORK_JOBS`` (default :data:`DEFAULT_WORK_JOBS`: the cores of a small host; more
only time-slice the same cores and hold more memory at once).

**Work the queue does not run** is counted too: a page run that builds figures, reads out or parses an upload
holds a core without a slot. A script run declares itself with :meth:`WorkQueue.interactive`; while it computes
outside any job (not waiting in the queue, not inside a job) it counts as a core in use. A large job does not
start, and a long one pauses at its next :meth:`Job.checkpoint`, while small work and such page runs already
fill the cores; it waits at most :data:`OUTSIDE_PATIENCE` seconds each time for the work it cannot see (that
work may itself be waiting for the large job's result), so it always gets on.

**Long jobs yield.** A long job (training) calls :meth:`Job.checkpoint` between its steps: when small work waits
for a slot, the job gives its slot back (keeping its bytes) and takes one again after the small work has
started, ahead of later large work; when only unseen page work fills the cores it pauses in place.

**Waiting is told honestly.** A waiting caller's ``wait`` callback gets a :class:`Wait` every ``poll`` seconds:
how many jobs run, how many wait before it, and an estimate of the seconds until it starts, from the jobs'
declared durations and the durations the queue has measured for each lane. Whatever the callback raises
(Streamlit stops a script run that way when the learner leaves or changes the input) leaves the queue cleanly.

Fairness per session comes from the callers: a large request is split into chunks (a set's chunks of
sentences, one occlusion sentence, one projection layer, one training step), and each chunk asks for its
own slot or passes a checkpoint, so one tab holds a core for one chunk at a time.

No streamlit here: ``ui/work.py`` shows the wait message.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lib.errors import ContextLensError
from lib.serving.budget import _positive_env

DEFAULT_WORK_JOBS = 2  # jobs at once (a two-core host)
DEFAULT_WORK_MB = 220  # bytes held by running large jobs and leases: a full set's lease (20,000 word pieces,
# ~210 MB; a comparison's two half sets the same) fits. With the 200 MB results cache, the libraries and two
# models (~0.75 GB), a hostile crowd peaked at 1.11-1.19 GB (benchmarks/crowd_results.json)
SMALL_JOB_MB = 48  # a job up to this many MB is "small": an ordinary set on either model (the bank preset's
# 12 sentences: ~15 MB on the encoder, ~45 MB on the decoder, its forward pass's working memory counted:
# ui.work.model_job_cost) and a sentence's attentions, but not a 500-sentence set's chunk (~100 MB). Work
# that holds few bytes but runs for seconds (a long sentence's occlusion) says it is large
OUTSIDE_PATIENCE = 2.0  # seconds a large job gives way, each time, to page work the queue does not run
SMALL, LARGE, BACKGROUND = "small", "large", "background"
_LANE_ORDER = {SMALL: 0, LARGE: 1, BACKGROUND: 2}
_FIRST_GUESS = {SMALL: 1.0, LARGE: 5.0, BACKGROUND: 5.0}  # seconds a job takes before the queue has seen one


class WorkRefused(ContextLensError):
    """Work this server will not run, or stopped: over its limit of CPU seconds or memory for one job. The
    message says what the limit is, why, and what fits."""


@dataclass(frozen=True)
class WorkStats:
    """What the queue has seen since it was made (tests and benchmarks read it).

    admitted:   jobs started
    waited:     jobs that had to wait before starting
    cancelled:  jobs that left the queue while waiting (their caller stopped)
    peak_jobs:  most jobs running at once
    peak_bytes: most declared bytes running at once (a lone job over the budget counts its own)
    yielded:    times a long job gave its slot back to small work at a checkpoint
    """

    admitted: int
    waited: int
    cancelled: int
    peak_jobs: int
    peak_bytes: int
    yielded: int = 0


@dataclass(frozen=True)
class Wait:
    """What a waiting caller is told: ``running`` jobs, ``queued`` ones that start before it (0: it is next), and
    ``seconds``, an estimate of the wait (from declared and measured durations)."""

    running: int
    queued: int
    seconds: float


class _Entry:
    """One ticket: a job waiting, running or paused, or a lease."""

    __slots__ = ("cost", "expected", "lane", "outside_since", "pausable", "slot", "started", "thread", "ticket")

    def __init__(self, ticket: int, lane: str, cost: int, slot: bool, expected: float | None, pausable: bool):
        self.ticket = ticket
        self.lane = lane
        self.cost = cost
        self.slot = slot
        self.expected = expected
        self.pausable = pausable
        self.thread = threading.get_ident()
        self.started = 0.0
        self.outside_since: float | None = None


class Job:
    """A running job, as ``with queue.job(...) as job`` hands it out: long work calls :meth:`checkpoint`."""

    def __init__(self, queue: WorkQueue | None, entry: _Entry | None):
        self._queue = queue
        self._entry = entry

    def checkpoint(self, stop: Callable[[], bool] | None = None) -> float:
        """Between two steps of long work: give way to interactive work (see the module); returns the seconds
        paused. ``stop()`` is asked while paused: True ends the pause at once (the caller then stops)."""
        if self._queue is None or self._entry is None:
            return 0.0
        return self._queue._checkpoint(self._entry, stop)


class WorkQueue:
    """At most ``max_jobs`` jobs at once, large work within ``max_bytes``; small work first (see the module).

    Use ``with queue.job(cost, wait=callback) as job: ...`` around the heavy work. ``wait(Wait)`` is called while
    the job waits (at once, then every ``poll`` seconds); it is not called when the job starts at once.
    """

    def __init__(self, max_jobs: int, max_bytes: int, small_bytes: int, *, poll: float = 0.25,
                 patience: float = OUTSIDE_PATIENCE, clock: Callable[[], float] = time.monotonic):  # fmt: skip
        self.max_jobs = max(1, int(max_jobs))
        self.max_bytes = max(1, int(max_bytes))
        self.small_bytes = int(small_bytes)
        self.small_reserve = self.small_bytes * self.max_jobs  # what small work may hold beside large work
        self.poll = poll
        self.patience = patience
        self._clock = clock
        self._cond = threading.Condition()
        self._order = itertools.count()
        self._waiting: dict[int, _Entry] = {}  # in arrival order
        self._running: dict[int, _Entry] = {}  # jobs that hold a slot
        self._paused: dict[int, _Entry] = {}  # long jobs that gave their slot back at a checkpoint (bytes kept)
        self._held: dict[int, tuple[int, threading.Thread]] = {}  # leases: bytes and the thread holding them
        self._slots: dict[int, int] = {}  # thread id -> slots it holds (a nested job runs in its slot)
        self._outside: dict[int, str] = {}  # threads in interactive(): "busy", "large" (large work) or "idle"
        self._seconds: dict[str, float] = {}  # measured duration of a job, per lane (moving average)
        self._admitted = self._waited = self._cancelled = self._peak_jobs = self._peak_bytes = self._yielded = 0

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> WorkQueue:
        """A queue sized by ``CONTEXT_LENS_WORK_JOBS`` and ``CONTEXT_LENS_WORK_MB`` (else the defaults)."""
        jobs = int(_positive_env("CONTEXT_LENS_WORK_JOBS", DEFAULT_WORK_JOBS, environ))
        mb = _positive_env("CONTEXT_LENS_WORK_MB", DEFAULT_WORK_MB, environ)
        return cls(jobs, int(mb * 2**20), min(int(SMALL_JOB_MB * 2**20), int(mb * 2**20) // 4))

    # ----------------------------------------------------------------------------------- state
    @property
    def running(self) -> int:
        return len(self._running)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def held_bytes(self) -> int:
        """Declared bytes of the running and paused jobs and the leases."""
        return self._job_bytes(None) + sum(c for c, _ in self._held.values())

    def _job_bytes(self, small: bool | None) -> int:
        jobs = itertools.chain(self._running.values(), self._paused.values())
        return sum(e.cost for e in jobs if small is None or (e.lane == SMALL) == small)

    def _large_bytes(self) -> int:
        return self._job_bytes(False) + sum(c for c, _ in self._held.values())

    def stats(self) -> WorkStats:
        with self._cond:
            return WorkStats(self._admitted, self._waited, self._cancelled, self._peak_jobs, self._peak_bytes,
                             self._yielded)  # fmt: skip

    def expected_seconds(self, lane: str = SMALL) -> float:
        """How long a job of ``lane`` has taken lately (a moving average of the measured ones)."""
        return self._seconds.get(lane, _FIRST_GUESS[lane])

    def _purge(self) -> None:
        """Let go of the leases whose thread has ended without returning them (a page run that stopped)."""
        for ticket in [t for t, (_, th) in self._held.items() if not th.is_alive()]:
            del self._held[ticket]

    def _outside_busy(self, exclude: int | None = None) -> int:
        """Page runs computing outside the queue now (not large work, not waiting, not in a job)."""
        queued = {e.thread for e in self._waiting.values()} | {e.thread for e in self._paused.values()}
        return sum(
            1
            for tid, state in self._outside.items()
            if state == "busy" and tid != exclude and tid not in self._slots and tid not in queued
        )

    def _holds_lease(self, thread: int) -> bool:
        return any(th.ident == thread for _, th in self._held.values())

    def _before(self, e: _Entry) -> int:
        """Waiting tickets served before ``e``. Among jobs: small before large before background, and within a
        lane first come, first served (a paused job keeps its place), except that the chunks of a request that
        holds a lease go before other large jobs (they finish work already admitted, and give its bytes back).
        A lease waits behind earlier large jobs of threads without a lease and they behind earlier leases (one
        line for whatever adds bytes to the large lane); a chunk never waits behind another request's lease."""
        rank = _LANE_ORDER[e.lane]
        holder = e.slot and e.lane == LARGE and self._holds_lease(e.thread)
        adds = not e.slot or (e.lane == LARGE and not holder)  # it adds bytes to the large lane
        n = 0
        for o in self._waiting.values():
            if o is e:
                continue
            if o.slot != e.slot:
                o_adds = not o.slot or (o.lane == LARGE and not self._holds_lease(o.thread))
                n += adds and o_adds and o.ticket < e.ticket
                continue
            if e.slot and e.lane == LARGE and o.lane == LARGE:
                o_holder = self._holds_lease(o.thread)
                if o_holder != holder:
                    n += o_holder
                    continue
            o_rank = _LANE_ORDER[o.lane]
            n += o_rank < rank or (o_rank == rank and o.ticket < e.ticket)
        return n

    def _fits(self, e: _Entry, resuming: bool) -> bool:
        if not e.slot:
            return not self._held or self._large_bytes() + e.cost <= self.max_bytes  # the first lease always
        if len(self._running) >= self.max_jobs:
            return False
        if e.lane == SMALL:
            return (
                not self._running
                or self._job_bytes(True) + e.cost <= self.small_reserve
                or self.held_bytes + e.cost <= self.max_bytes
            )
        heavy = [o for o in self._running.values() if o.lane != SMALL]
        if self.max_jobs > 1 and len(heavy) >= self.max_jobs - 1:
            return False  # the last slot is kept for small work
        if e.lane == BACKGROUND and (heavy or self._paused or self._outside_busy(e.thread) or self._running):
            return False  # background work only on idle cores
        if not resuming and self._large_bytes() + e.cost > self.max_bytes:
            if self._holds_lease(e.thread):
                if heavy:
                    return False  # a chunk of a leased request runs when no other large job does
            elif self._large_bytes() > 0:
                return False  # a job over the budget runs alone: no other large job nor lease beside it
        return self._cores_for(e)

    def _cores_for(self, e: _Entry) -> bool:
        """Whether a core is free for large work beside the page runs the queue does not see (waits at most
        ``patience`` seconds for them)."""
        if self._outside_busy(e.thread) + len(self._running) < self.max_jobs:
            e.outside_since = None
            return True
        now = self._clock()
        if e.outside_since is None:
            e.outside_since = now
        return now - e.outside_since >= self.patience

    def _may_start(self, e: _Entry, resuming: bool = False) -> bool:
        self._purge()
        return self._before(e) == 0 and self._fits(e, resuming)

    # ----------------------------------------------------------------------------------- estimates
    def _expected(self, e: _Entry) -> float:
        return e.expected if e.expected is not None else self.expected_seconds(e.lane)

    def _eta(self, e: _Entry) -> float:
        """Seconds until ``e`` starts, if the jobs before it take what they declared or what their lane took
        lately: the running jobs' remaining time, then the waiting ones before it in order, on ``max_jobs``
        slots (large work on all but one). A long job that yields counts as a checkpoint's wait for small work."""
        now = self._clock()
        usable = self.max_jobs if e.lane == SMALL or self.max_jobs == 1 else self.max_jobs - 1
        free: list[float] = []
        for o in self._running.values():
            if e.lane == SMALL and o.pausable:
                continue  # it gives its slot back at its next checkpoint
            left = max(0.5, self._expected(o) - (now - o.started))
            if e.lane == SMALL or o.lane != SMALL:
                free.append(left)
        free = sorted(free)[:usable]
        free += [0.0] * (usable - len(free))
        heapq.heapify(free)
        ahead = sorted((o for o in self._waiting.values() if o is not e and o.slot == e.slot),
                       key=lambda o: (_LANE_ORDER[o.lane], o.ticket))  # fmt: skip
        for o in ahead[: self._before(e)]:
            heapq.heappush(free, heapq.heappop(free) + self._expected(o))
        return float(free[0]) if free else 0.0

    # ----------------------------------------------------------------------------------- use
    @contextmanager
    def job(
        self,
        cost: int,
        *,
        wait: Callable[[Wait], None] | None = None,
        slot: bool = True,
        large: bool | None = None,
        background: bool = False,
        seconds: float | None = None,
        yields: bool = False,
    ) -> Iterator[Job]:
        """Hold a slot for work that holds ``cost`` bytes while it runs; wait for one first if needed.

        ``large``: whether the job is large work (it never takes the last slot, and waits behind small work);
        by default, whether ``cost`` is over ``small_bytes``. Work that holds few bytes but keeps a core busy
        for seconds (a sense probe on hundreds of sentences) says ``large=True``, so an ordinary set's small
        jobs keep their lane beside it. ``background=True``: warm-up work, after everything else.
        ``seconds``: how long the job should take (a training run's estimate), for the wait others are told;
        without it the lane's measured average is used. ``yields=True``: the job calls :meth:`Job.checkpoint`
        between its steps (a small job waiting behind it is told it starts at the next one).

        ``slot=False`` takes a *lease*: the bytes only, held across the chunks of one request (a large set's
        vectors, gathered chunk by chunk), each chunk then asking for a slot of its own. Leases wait in the
        same queue; only the first lease may pass the byte budget; a lease whose thread has ended is let go. A job
        asked for inside a job of the same thread runs in the outer job's slot (a thread never waits for itself).
        """
        cost = max(0, int(cost))
        if background:
            lane = BACKGROUND
        elif slot and (cost <= self.small_bytes if large is None else not large):
            lane = SMALL
        else:
            lane = LARGE
        owner = threading.get_ident()  # the job may be closed from another thread (a generator collected there)
        if slot and self._slots.get(owner, 0):  # already in a slot: waiting for a second could deadlock
            yield Job(None, None)
            return
        e = _Entry(next(self._order), lane, cost, slot, seconds, pausable=yields)
        with self._cond:
            self._waiting[e.ticket] = e
        started = False
        try:
            with self._cond:
                waited = self._wait_turn(e, wait)
                del self._waiting[e.ticket]
                e.started = self._clock()
                if slot:
                    self._running[e.ticket] = e
                    self._slots[owner] = self._slots.get(owner, 0) + 1
                else:
                    self._held[e.ticket] = (cost, threading.current_thread())
                started = True
                self._admitted += 1
                self._waited += waited
                self._peak_jobs = max(self._peak_jobs, len(self._running))
                self._peak_bytes = max(self._peak_bytes, self.held_bytes)
            yield Job(self, e)
        finally:
            with self._cond:
                if started:
                    self._running.pop(e.ticket, None)
                    self._paused.pop(e.ticket, None)
                    self._waiting.pop(e.ticket, None)  # a paused job stopped while waiting to resume
                    self._held.pop(e.ticket, None)
                    if slot:
                        left = self._slots.pop(owner, 1) - 1
                        if left:
                            self._slots[owner] = left
                        if not e.pausable:  # a long job's duration says nothing of the next chunk's
                            took = self._clock() - e.started
                            before = self._seconds.get(lane)
                            self._seconds[lane] = took if before is None else 0.7 * before + 0.3 * took
                elif self._waiting.pop(e.ticket, None) is not None:
                    self._cancelled += 1
                self._cond.notify_all()

    def _wait_turn(self, e: _Entry, wait: Callable[[Wait], None] | None, resuming: bool = False,
                   stop: Callable[[], bool] | None = None) -> bool:  # fmt: skip
        """Block (holding the condition) until ``e`` may start; True when it had to wait."""
        waited = False
        while not self._may_start(e, resuming):
            waited = True
            if stop is not None and stop():
                break
            if wait is not None:
                info = Wait(len(self._running), self._before(e), self._eta(e))
                self._cond.release()
                try:
                    wait(info)
                finally:
                    self._cond.acquire()
                if self._may_start(e, resuming):
                    break
            self._cond.wait(self.poll)
        return waited

    def _checkpoint(self, e: _Entry, stop: Callable[[], bool] | None) -> float:
        """See :meth:`Job.checkpoint`."""
        if not e.slot or e.lane == SMALL:
            return 0.0
        t0 = self._clock()
        with self._cond:
            e.pausable = True
            while not (stop is not None and stop()):
                self._purge()
                if any(o.slot and o.lane == SMALL for o in self._waiting.values()):
                    self._yield_slot(e, stop)
                elif (
                    self._outside_busy(e.thread) + len(self._running) - 1 >= self.max_jobs
                    and self._clock() - t0 < self.patience
                ):
                    self._cond.wait(self.poll)  # page work fills the cores: pause in place, for a while
                else:
                    break
        return self._clock() - t0

    def _yield_slot(self, e: _Entry, stop: Callable[[], bool] | None) -> None:
        """Give the slot back (keeping the bytes) and queue again at the job's old place in its lane."""
        if self._running.pop(e.ticket, None) is None:
            return
        self._paused[e.ticket] = e
        self._slots[e.thread] = self._slots.get(e.thread, 1) - 1
        self._yielded += 1
        self._waiting[e.ticket] = e
        self._cond.notify_all()
        try:
            self._wait_turn(e, None, resuming=True, stop=stop)
        finally:
            self._waiting.pop(e.ticket, None)
            self._paused.pop(e.ticket, None)
            self._running[e.ticket] = e
            self._slots[e.thread] = self._slots.get(e.thread, 0) + 1
            e.outside_since = None

    @contextmanager
    def interactive(self) -> Iterator[None]:
        """The calling thread runs a learner's page (a script run): while it computes outside any job, it counts
        as a core in use (see the module). Large work sets :meth:`mark_large` for the rest of the run."""
        tid = threading.get_ident()
        with self._cond:
            self._outside[tid] = "busy"
        try:
            yield
        finally:
            with self._cond:
                self._outside.pop(tid, None)
                self._cond.notify_all()

    def mark_large(self, large: bool = True) -> None:
        """The calling thread's page run works on a large set: its own computing is large work, not counted as
        a learner's interactive work (it waits in the large lane like the rest of the run)."""
        tid = threading.get_ident()
        with self._cond:
            if tid in self._outside:
                self._outside[tid] = "large" if large else "busy"
                self._cond.notify_all()

    @contextmanager
    def idle(self) -> Iterator[None]:
        """The calling page run sleeps while it follows work done elsewhere (another session's training): it
        is not counted as a core in use meanwhile."""
        tid = threading.get_ident()
        with self._cond:
            before = self._outside.get(tid)
            if before is not None:
                self._outside[tid] = "idle"
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                if before is not None and tid in self._outside:
                    self._outside[tid] = before

    def snapshot(self) -> dict:
        """The queue now, for a log line: jobs running by lane, their MB, leases' MB, waiting, page runs."""
        with self._cond:
            lanes = [e.lane for e in self._running.values()]
            return {
                "running": {lane: lanes.count(lane) for lane in (SMALL, LARGE, BACKGROUND) if lane in lanes},
                "paused": len(self._paused),
                "jobs_mb": round(self._job_bytes(None) / 2**20),
                "leases_mb": round(sum(c for c, _ in self._held.values()) / 2**20),
                "waiting": len(self._waiting),
                "pages": self._outside_busy(),
            }

    def interactive_now(self) -> int:
        """Page runs computing outside the queue right now (benchmarks and tests read it)."""
        with self._cond:
            return self._outside_busy()
