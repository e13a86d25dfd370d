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

    def wait(w):
        heard.append((w.running, w.queued))
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


# ------------------------------------------------------------------------ lanes: small work never waits for heavy
class Clock:
    """A clock a test moves by hand (the queue's estimates and its patience read it)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def start(target) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


def holder(q, cost, entered: threading.Event, release: threading.Event, **kw):
    """A thread's work: take a job, say so, hold it until released."""

    def run():
        with q.job(cost, **kw):
            entered.set()
            release.wait(10)

    return run


def test_small_jobs_run_beside_a_heavy_job_over_the_whole_budget():
    """A job over the byte budget runs alone in the large lane; small work keeps a reserve of its own beside it,
    so a learner's ordinary set does not wait for it (nor does a second large job start)."""
    q = WorkQueue(max_jobs=2, max_bytes=10 * MB, small_bytes=1 * MB, poll=0.01)
    inside, release = threading.Event(), threading.Event()

    def huge():
        with q.job(500 * MB):
            inside.set()
            release.wait(10)

    t = start(huge)
    assert inside.wait(5)
    with q.job(1 * MB):  # would wait for the huge job before (its bytes filled the budget)
        assert q.running == 2
    second_in = threading.Event()
    second = start(holder(q, 2 * MB, second_in, release, large=True))
    assert wait_until(lambda: q.waiting == 1) and q.running == 1  # the large lane is the huge job's alone
    release.set()
    assert second_in.wait(5)
    t.join(5)
    second.join(5)


def test_a_long_job_gives_its_slot_to_small_work_at_its_next_checkpoint():
    """One slot only: a training-like job passes a checkpoint between steps; a small job that arrives waits
    for the next checkpoint, not for the end, and the long job goes on after it (keeping its bytes)."""
    q = WorkQueue(max_jobs=1, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    steps = {"n": 0}
    stop = threading.Event()

    def train():
        with q.job(50 * MB, large=True, yields=True) as job:
            while not stop.is_set():
                job.checkpoint()
                steps["n"] += 1

    t = start(train)
    assert wait_until(lambda: steps["n"] > 3)
    held: list[int] = []
    with q.job(0):  # the one slot: given back at the long job's checkpoint
        held.append(q.held_bytes)
        mark = steps["n"]
        assert q.running == 1 and t.is_alive()
    assert held == [50 * MB]  # the paused job kept its bytes
    assert wait_until(lambda: steps["n"] > mark)  # and went on afterwards
    stop.set()
    t.join(5)
    assert q.stats().yielded >= 1 and q.running == 0 and q.held_bytes == 0


def test_page_runs_the_queue_does_not_see_hold_large_work_back():
    """Two page runs computing outside any job (figures, readouts) fill two cores: a large job waits for one of
    them to end; a page run that only follows other work (idle) or works on a large set does not count."""
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01, patience=1e9)
    gates = [threading.Event() for _ in range(4)]
    entered = [threading.Event() for _ in range(4)]

    def page(k, kind=None):
        def run():
            with q.interactive():
                if kind == "large":
                    q.mark_large()
                if kind == "idle":
                    with q.idle():
                        entered[k].set()
                        gates[k].wait(10)
                    return
                entered[k].set()
                gates[k].wait(10)

        return run

    pages = [start(page(0)), start(page(2, "idle")), start(page(3, "large"))]
    assert all(e.wait(5) for e in (entered[0], entered[2], entered[3]))
    with q.job(10 * MB):  # one busy page: a core is free for large work
        pass
    pages.append(start(page(1)))
    assert entered[1].wait(5)
    assert q.interactive_now() == 2
    ran, done = threading.Event(), threading.Event()
    large = start(holder(q, 10 * MB, ran, done))
    assert wait_until(lambda: q.waiting == 1) and not ran.is_set()
    with q.job(0):  # small work is not held back
        pass
    gates[0].set()  # one page run ends: the large job starts
    assert ran.wait(5)
    done.set()
    for g in gates:
        g.set()
    for t in [*pages, large]:
        t.join(5)


def test_large_work_waits_for_unseen_page_work_only_so_long():
    """The page work it cannot see may itself wait for the large job: it waits at most ``patience`` seconds."""
    clock = Clock()
    q = WorkQueue(max_jobs=1, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01, patience=2.0, clock=clock)
    release = threading.Event()
    busy = threading.Event()

    def page():
        with q.interactive():
            busy.set()
            release.wait(10)

    p = start(page)
    assert busy.wait(5)
    ran = threading.Event()
    t = start(holder(q, 10 * MB, ran, release))
    assert wait_until(lambda: q.waiting == 1) and not ran.is_set()
    clock.now = 2.5
    assert ran.wait(5)
    release.set()
    for th in (p, t):
        th.join(5)


def test_background_work_goes_last_and_only_on_idle_cores():
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    order: list[str] = []
    release = threading.Event()
    inside = threading.Event()

    def small_holding():
        with q.job(0):
            inside.set()
            release.wait(10)
            order.append("small")

    def background():
        with q.job(0, background=True):
            order.append("background")

    s = start(small_holding)
    assert inside.wait(5)
    b = start(background)
    assert wait_until(lambda: q.waiting == 1)
    assert order == []  # a core is free, but a learner's work runs: the warm-up waits
    release.set()
    for t in (s, b):
        t.join(5)
    assert order == ["small", "background"]


def test_the_wait_is_told_with_an_estimate_from_declared_and_measured_durations():
    """A job declared to take 30 s runs in the one slot: a small job waiting behind it is told ~30 s, then less
    as the clock moves; a job that yields at checkpoints is expected to give its slot at once."""
    clock = Clock()
    q = WorkQueue(max_jobs=1, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01, clock=clock)
    inside, release = threading.Event(), threading.Event()

    def long():
        with q.job(0, large=True, seconds=30.0):
            inside.set()
            release.wait(10)

    t = start(long)
    assert inside.wait(5)
    heard: list = []

    class Seen(Exception):
        pass

    def wait(w):
        heard.append(w)
        if len(heard) == 1:
            clock.now = 20.0
        else:
            raise Seen

    with pytest.raises(Seen), q.job(0, wait=wait):
        pass
    assert heard[0].seconds == pytest.approx(30.0) and heard[0].queued == 0 and heard[0].running == 1
    assert heard[1].seconds == pytest.approx(10.0)
    release.set()
    t.join(5)
    # a measured small job sets the lane's expectation for the next estimates
    with q.job(0):
        clock.now += 4.0
    assert q.expected_seconds("small") == pytest.approx(4.0)


def test_a_job_over_the_budget_waits_for_other_requests_leases_whose_chunks_go_first():
    """Request A leased its bytes; a job over the whole budget (an occlusion on the decoder, say) then waits for A
    to finish (A's chunks go before it: they give A's bytes back), and a lease asked for after it waits behind it."""
    q = WorkQueue(max_jobs=2, max_bytes=100 * MB, small_bytes=1 * MB, poll=0.01)
    events: list[str] = []
    leased, go = threading.Event(), threading.Event()

    def request_a():
        with q.job(80 * MB, slot=False):
            leased.set()
            go.wait(10)
            for _ in range(2):
                with q.job(10 * MB):
                    events.append("A chunk")
        events.append("A done")

    def huge():
        with q.job(150 * MB):
            events.append("huge")

    def request_b():
        with q.job(80 * MB, slot=False):
            events.append("B leased")

    a = start(request_a)
    assert leased.wait(5)
    j = start(huge)
    assert wait_until(lambda: q.waiting == 1)
    b = start(request_b)
    assert wait_until(lambda: q.waiting == 2)
    assert events == []  # the huge job does not start beside A's lease; B's lease waits behind the huge job
    go.set()
    for th in (a, j, b):
        th.join(5)
    assert events == ["A chunk", "A chunk", "A done", "huge", "B leased"]
    assert q.stats().peak_bytes <= 150 * MB
