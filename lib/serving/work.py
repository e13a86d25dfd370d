"""Admission control for heavy work: one server-wide budget for what is being computed right now.

The results cache (lib.serving.budget.ByteLRU) bounds what the server *keeps*; this module bounds what it *holds
while computing*: model passes, projections, occlusion, the second model. Every such job declares what it
will hold (``cost``, bytes: its outputs and temporaries, estimated from its size before it starts) and asks
:class:`WorkQueue` for a slot. A job starts when

* fewer than ``max_jobs`` jobs run (``CONTEXT_LENS_WORK_JOBS``, default :data:`DEFAULT_WORK_JOBS`: the
  cores of a small host; more only time-slice the same cores and hold more memory at once), and
* the bytes of the running jobs plus its own fit ``max_bytes`` (``CONTEXT_LENS_WORK_MB``, default
  :data:`DEFAULT_WORK_MB`); a job larger than the whole budget runs alone, so it still runs.

Otherwise it waits its turn, and the caller is told how many requests are ahead of it (the page says "busy
with 3 other requests, yours is next"). Order: **small jobs first** (``cost`` at most ``small_bytes``: an
ordinary class set of a few sentences), then large ones first come, first served; and large jobs never take
the last slot (a lane is kept for small work), so a class's ordinary sets are not starved by one tab's
heavy requests.

Fairness per session comes from the callers: a large request is split into chunks (a set's chunks of
sentences, one occlusion sentence, one projection layer), and each chunk asks for its own slot, so one tab
holds the cores for one chunk at a time (a few seconds) and others' work interleaves. A waiting caller's
``wait`` callback runs every ``poll`` seconds; whatever it raises (Streamlit stops a script run that way when
the learner leaves or changes the input) leaves the queue cleanly.

No streamlit here: ``ui/work.py`` shows the wait message.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lib.serving.budget import _positive_env

DEFAULT_WORK_JOBS = 2  # heavy jobs at once (a two-core host)
DEFAULT_WORK_MB = 220  # bytes held by running jobs: a full set's lease (20,000 word pieces, ~210 MB; a
# comparison's two half sets the same) fits. With the 200 MB results cache, the libraries and two models
# (~0.75 GB), a hostile crowd peaked at 1.11-1.19 GB (benchmarks/crowd_results.json)
SMALL_JOB_MB = 24  # a job up to this many MB is "small": an ordinary set (8 sentences, ~2 MB of hidden
# states) and a sentence's attentions, but not a 500-sentence set's chunk (~60 MB) or an occlusion of a
# 60-word sentence (~20-40 MB)


@dataclass(frozen=True)
class WorkStats:
    """What the queue has seen since it was made (tests and benchmarks read it).

    admitted:   jobs started
    waited:     jobs that had to wait before starting
    cancelled:  jobs that left the queue while waiting (their caller stopped)
    peak_jobs:  most jobs running at once
    peak_bytes: most declared bytes running at once (a lone job over the budget counts its own)
    """

    admitted: int
    waited: int
    cancelled: int
    peak_jobs: int
    peak_bytes: int


class WorkQueue:
    """At most ``max_jobs`` jobs and ``max_bytes`` declared bytes running at once; small jobs go first.

    Use ``with queue.job(cost, wait=callback): ...`` around the heavy work. ``wait(running, queued)`` is
    called while the job waits (at once, then every ``poll`` seconds): how many jobs run and how many waiting
    ones go before it (0: it is next); it is not called when the job starts at once.
    """

    def __init__(self, max_jobs: int, max_bytes: int, small_bytes: int, *, poll: float = 0.25):
        self.max_jobs = max(1, int(max_jobs))
        self.max_bytes = max(1, int(max_bytes))
        self.small_bytes = int(small_bytes)
        self.poll = poll
        self._cond = threading.Condition()
        self._order = itertools.count()
        self._waiting: dict[int, tuple[bool, bool]] = {}  # ticket -> (slot, small), in arrival order
        self._running: dict[int, tuple[bool, int]] = {}  # jobs that hold a slot and their bytes
        self._held: dict[int, tuple[int, threading.Thread]] = {}  # leases: bytes and the thread holding them
        self._slots: dict[int, int] = {}  # thread id -> slots it holds (a nested job runs in its slot)
        self._admitted = self._waited = self._cancelled = self._peak_jobs = self._peak_bytes = 0

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
    def held_bytes(self) -> int:
        """Declared bytes of the running jobs and the leases."""
        return sum(c for _, c in self._running.values()) + sum(c for c, _ in self._held.values())

    def _purge(self) -> None:
        """Let go of the leases whose thread has ended without returning them (a page run that stopped)."""
        for ticket in [t for t, (_, th) in self._held.items() if not th.is_alive()]:
            del self._held[ticket]

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def stats(self) -> WorkStats:
        with self._cond:
            return WorkStats(self._admitted, self._waited, self._cancelled, self._peak_jobs, self._peak_bytes)

    def _before(self, ticket: int, slot: bool, small: bool) -> int:
        """Waiting tickets served before ``ticket``. Jobs and leases queue apart (a chunk of a request that
        holds a lease never waits behind another request's lease); among jobs, every small one goes before a
        large one, and otherwise first come, first served."""
        return sum(
            1
            for t, (slot2, small2) in self._waiting.items()
            if t != ticket and slot2 == slot and ((small2 and t < ticket) if small else (small2 or t < ticket))
        )

    def _fits(self, small: bool, cost: int, slot: bool) -> bool:
        if slot and len(self._running) >= self.max_jobs:
            return False
        if slot and not small and self.max_jobs > 1:
            large = sum(1 for s, _ in self._running.values() if not s)
            if large >= self.max_jobs - 1:  # the last slot is kept for small work
                return False
        if slot and not self._running:
            return True  # a job always runs when none does, even over the budget (its lease was granted)
        if not slot and not self._held:
            return True  # likewise the first lease
        return self.held_bytes + cost <= self.max_bytes

    def _may_start(self, ticket: int, small: bool, cost: int, slot: bool = True) -> bool:
        self._purge()
        return self._fits(small, cost, slot) and self._before(ticket, slot, small) == 0

    # ----------------------------------------------------------------------------------- use
    @contextmanager
    def job(
        self,
        cost: int,
        *,
        wait: Callable[[int, int], None] | None = None,
        slot: bool = True,
        large: bool | None = None,
    ) -> Iterator[None]:
        """Hold a slot for work that holds ``cost`` bytes while it runs; wait for one first if needed.

        ``large``: whether the job is large work (it never takes the last slot, and waits behind small work);
        by default, whether ``cost`` is over ``small_bytes``. Work that holds few bytes but keeps a core busy
        for seconds (a sense probe on hundreds of sentences) says ``large=True``, so an ordinary set's small
        jobs keep their lane beside it.

        ``slot=False`` takes a *lease*: the bytes only, held across the chunks of one request (a large set's
        vectors, gathered chunk by chunk), each chunk then asking for a slot of its own. Leases wait in the
        same queue; only the first lease may pass the byte budget; a lease whose thread has ended is let go. A job
        asked for inside a job of the same thread runs in the outer job's slot (a thread never waits for itself).
        """
        cost = max(0, int(cost))
        small = slot and (cost <= self.small_bytes if large is None else not large)
        owner = threading.get_ident()  # the job may be closed from another thread (a generator collected there)
        if slot and self._slots.get(owner, 0):  # already in a slot: waiting for a second could deadlock
            yield
            return
        with self._cond:
            ticket = next(self._order)
            self._waiting[ticket] = (slot, small)
        started = False
        try:
            with self._cond:
                waited = False
                while not self._may_start(ticket, small, cost, slot):
                    waited = True
                    running, queued = self.running, self._before(ticket, slot, small)
                    if wait is not None:
                        self._cond.release()
                        try:
                            wait(running, queued)
                        finally:
                            self._cond.acquire()
                        if self._may_start(ticket, small, cost, slot):
                            break
                    self._cond.wait(self.poll)
                del self._waiting[ticket]
                if slot:
                    self._running[ticket] = (small, cost)
                else:
                    self._held[ticket] = (cost, threading.current_thread())
                started = True
                self._admitted += 1
                self._waited += waited
                self._peak_jobs = max(self._peak_jobs, len(self._running))
                self._peak_bytes = max(self._peak_bytes, self.held_bytes)
                if slot:
                    self._slots[owner] = self._slots.get(owner, 0) + 1
            yield
        finally:
            with self._cond:
                if started:
                    self._running.pop(ticket, None)
                    self._held.pop(ticket, None)
                    if slot:
                        left = self._slots.pop(owner, 1) - 1
                        if left:
                            self._slots[owner] = left
                elif self._waiting.pop(ticket, None) is not None:
                    self._cancelled += 1
                self._cond.notify_all()
