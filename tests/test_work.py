"""lib.serving.work: the server-wide budget for work in flight (jobs at once, bytes held, small work first)."""

from __future__ import annotations

import threading
import time

import pytest

from lib.serving.work import DEFAULT_WORK_JOBS, DEFAULT_WORK_MB, WorkQueue
from tests.conftest import wait_until

MB = 2**20
LONG = 300  # seconds a thread may take to get its turn on a busy machine: a bound, never a pause


def run_threads(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    assert not any(t.is_alive() for t in threads)


def test_no_more_jobs_or_bytes_at_once_than_the_budget():
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    now = {"jobs": 0, "bytes": 0}
    seen = {"jobs": 0, "bytes": 0}
    lock = threading.Lock()

    def work(cost):
        def run():
            with q.job(cost):
                with lock:
                    now["jobs"] += 1
                    now["bytes"] += cost
                    seen["jobs"] = max(seen["jobs"], now["jobs"])
                    seen["bytes"] = max(seen["bytes"], now["bytes"])
                time.sleep(0.02)
                with lock:
                    now["jobs"] -= 1
                    now["bytes"] -= cost

        return run

    run_threads([work(c * MB) for c in (60, 60, 60, 30, 30, 30, 0, 0)])
    assert seen["jobs"] <= 2 and seen["bytes"] <= 100 * MB
    stats = q.stats()
    assert stats.admitted == 8 and stats.peak_jobs <= 2 and stats.peak_bytes <= 100 * MB
    assert stats.waited >= 1 and q.running == 0 and q.waiting == 0


def test_a_job_over_the_whole_budget_still_runs_alone():
    q = WorkQueue(max_jobs=2, max_bytes=10 * MB, small_bytes=1 * MB, poll=0.01)
    with q.job(50 * MB):
        assert q.running == 1
    assert q.stats().peak_bytes == 50 * MB


def test_small_work_goes_before_waiting_large_work_and_keeps_a_lane():
    """Two large requests queue behind a running one; a small set arriving last starts first, and large work
    never takes the last slot, so the small set does not wait for a large chunk to finish."""
    q = WorkQueue(max_jobs=2, max_bytes=1000 * MB, small_bytes=1 * MB, poll=0.01)
    order: list[str] = []
    release = threading.Event()
    started = threading.Event()

    def large_first():
        with q.job(100 * MB):
            started.set()
            release.wait(LONG)

    def large(name):
        def run():
            with q.job(100 * MB):
                order.append(name)

        return run

    def small():
        with q.job(0):
            order.append("small")

    t0 = threading.Thread(target=large_first)
    t0.start()
    assert started.wait(LONG)
    others = [threading.Thread(target=large("large-1")), threading.Thread(target=large("large-2"))]
    for t in others:
        t.start()
    assert wait_until(lambda: q.waiting == 2, LONG)
    assert order == []  # the second slot is kept for small work
    ts = threading.Thread(target=small)
    ts.start()
    ts.join(LONG)
    assert order == ["small"]  # it ran while the large one still holds its slot
    release.set()
    for t in [t0, *others]:
        t.join(LONG)
    assert order == ["small", "large-1", "large-2"]  # large work in arrival order


def test_work_marked_large_keeps_to_the_large_lane_whatever_its_bytes():
    """A probe on a large set holds few bytes but keeps a core busy: marked large, a second one waits for the
    first instead of taking the small lane, which stays free for an ordinary set."""
    q = WorkQueue(max_jobs=2, max_bytes=1000 * MB, small_bytes=1 * MB, poll=0.01)
    release, started = threading.Event(), threading.Event()
    order: list[str] = []

    def first():
        with q.job(1000, large=True):
            started.set()
            release.wait(LONG)

    def second():
        with q.job(1000, large=True):
            order.append("large")

    t0 = threading.Thread(target=first)
    t0.start()
    assert started.wait(LONG)
    t1 = threading.Thread(target=second)
    t1.start()
    assert wait_until(lambda: q.waiting == 1, LONG)  # the second large job queues behind the first
    assert q.running == 1 and order == []
    with q.job(1000):  # the same bytes, not marked: small work, in the lane kept for it
        order.append("small")
    release.set()
    for t in (t0, t1):
        t.join(LONG)
    assert order == ["small", "large"]
    with q.job(500 * MB, large=False):  # and the other way round: declared small whatever its bytes
        assert q.running == 1


def test_the_waiting_caller_is_told_its_place_and_can_leave():
    """The wait callback hears how many run and wait before it; an exception it raises (Streamlit's stop when
    the learner leaves) takes the job out of the queue, and the queue goes on."""
    q = WorkQueue(max_jobs=1, max_bytes=1000 * MB, small_bytes=1 * MB, poll=0.01)
    heard: list[tuple[int, int]] = []

    class Left(Exception):
        pass

    def wait(running, queued):
        heard.append((running, queued))
        if len(heard) >= 3:
            raise Left

    holding, release = threading.Event(), threading.Event()

    def hold():
        with q.job(0):
            holding.set()
            release.wait(LONG)

    other = threading.Thread(target=hold)
    other.start()
    assert holding.wait(LONG)
    with pytest.raises(Left), q.job(0, wait=wait):
        pass
    release.set()
    other.join(LONG)
    assert heard[0] == (1, 0)  # busy with 1 other request; yours is next
    assert q.stats().cancelled == 1 and q.waiting == 0 and q.running == 0
    with q.job(0):  # nothing left behind
        assert q.running == 1


def test_a_lease_holds_bytes_across_chunks_without_blocking_its_own_chunks():
    """A large request leases its bytes; its chunks take slots inside it; a second large request's lease waits
    for the first, and the first's chunks never wait behind that lease (no deadlock)."""
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    events: list[str] = []

    def request(name):
        def run():
            with q.job(80 * MB, slot=False):
                events.append(f"{name} leased")
                for k in range(3):
                    with q.job(10 * MB):
                        events.append(f"{name} chunk {k}")
                        time.sleep(0.01)
            events.append(f"{name} done")

        return run

    run_threads([request("A"), request("B")])
    first = events[0].split()[0]
    second = "B" if first == "A" else "A"
    assert events.index(f"{first} done") < events.index(f"{second} leased")
    assert q.stats().peak_bytes <= 100 * MB


def test_sizes_from_the_environment():
    q = WorkQueue.from_env({"CONTEXT_LENS_WORK_JOBS": "3", "CONTEXT_LENS_WORK_MB": "64"})
    assert q.max_jobs == 3 and q.max_bytes == 64 * MB and q.small_bytes <= 16 * MB
    d = WorkQueue.from_env({"CONTEXT_LENS_WORK_JOBS": "x", "CONTEXT_LENS_WORK_MB": "-1"})
    assert d.max_jobs == DEFAULT_WORK_JOBS and d.max_bytes == DEFAULT_WORK_MB * MB


def test_a_job_inside_a_job_of_the_same_thread_runs_in_its_slot():
    """Large work never takes the last slot; a large job nested in a large job would wait for itself."""
    q = WorkQueue(max_jobs=2, max_bytes=1000 * MB, small_bytes=1 * MB, poll=0.01)
    with q.job(100 * MB), q.job(100 * MB):
        assert q.running == 1
    assert q.running == 0 and q.stats().admitted == 1


def test_a_lease_whose_thread_ended_is_let_go():
    """A page run that stopped without returning its lease (its thread ended) does not hold the bytes forever."""
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)

    def leave_a_lease():
        q.job(90 * MB, slot=False).__enter__()  # never exited

    t = threading.Thread(target=leave_a_lease)
    t.start()
    t.join(LONG)
    with q.job(90 * MB, slot=False):  # would wait for ever behind the lost lease
        assert q.held_bytes == 90 * MB


def test_a_job_closed_from_another_thread_gives_its_slot_back():
    """A page run's generator can be collected on another thread; closing it there must free what it held."""
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    jobs = {}

    def enter():
        for name, slot in (("slot", True), ("lease", False)):
            jobs[name] = q.job(10 * MB, slot=slot)
            jobs[name].__enter__()

    t = threading.Thread(target=enter)
    t.start()
    t.join(LONG)
    assert q.running == 1 and q.held_bytes == 20 * MB
    for job in jobs.values():
        job.gen.close()  # here, not on the thread that entered it: GeneratorExit runs the job's cleanup
    assert q.running == 0 and q.held_bytes == 0
    with q.job(10 * MB), q.job(10 * MB):  # this thread's nesting count was not touched by the other's
        assert q.running == 1
