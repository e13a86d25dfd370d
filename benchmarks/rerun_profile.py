"""Server CPU of a page's rerun, measured inside Streamlit's script thread (target: ≤ 0.1 s).

    PYTHONPATH=. python benchmarks/rerun_profile.py [attention context calculator lesson projections
        layers anisotropy home lens]
        [--repeats 3] [--profile 25] [--lesson-steps] [--model HuggingFaceTB/SmolLM2-135M-Instruct]

Each page runs in AppTest with the default preset: two warm-up runs, then ``--repeats`` plain reruns and
``--repeats`` interactions (one control changed per run). The figure is the CPU time (``time.thread_time``)
of the script thread while it executes the page, i.e. around Streamlit's ``exec_func_with_error_handling``;
it leaves out what AppTest and the server do after the script (no websocket here, no post-script gc).
``--profile N`` also prints the N most expensive functions (cumulative) over the measured reruns.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from streamlit.testing.v1 import AppTest  # noqa: E402

from benchmarks.runs import measure_script_thread  # noqa: E402

CPU, PROFILER = measure_script_thread()  # each page run's script-thread CPU; PROFILER[0]: an optional cProfile


def _interactions(page: str):
    """A function that changes one control of ``page`` on an AppTest (call k = 0, 1, 2 …)."""
    if page == "attention":
        return lambda at, k: at.slider(key="attn_head").set_value(2 + k % 10).run()
    if page == "context":
        return lambda at, k: at.slider(key="ctx_layer").set_value(k % 6).run()
    if page == "calculator":
        return lambda at, k: at.toggle(key="calc_scale").set_value(k % 2 == 0).run()
    if page == "lesson":
        return lambda at, k: at.button(key="lesson_next" if k % 2 == 0 else "lesson_back").click().run()
    if page == "projections":
        return lambda at, k: at.slider(key="proj_layer").set_value(k % 6).run()
    if page == "layers":
        return lambda at, k: at.slider(key="layers_layer").set_value(3 + k % 2).run()
    if page == "anisotropy":
        return lambda at, k: at.slider(key="aniso_layer").set_value(3 + k % 2).run()
    if page in ("home", "lens"):  # no control that reruns cheaply: a plain rerun (the "r" key)
        return lambda at, k: at.run()
    raise ValueError(page)


PAGE_FILES = {
    "attention": "attention.py",
    "context": "context.py",
    "calculator": "calculator.py",
    "lesson": "lesson.py",
    "projections": "projections.py",
    "layers": "layers.py",
    "anisotropy": "anisotropy.py",
    "home": "home.py",
    "lens": "lens.py",
}


def measure(page: str, repeats: int, profile: int, model: str | None = None) -> dict:
    at = AppTest.from_file(str(ROOT / "pages" / PAGE_FILES[page]), default_timeout=900)
    if model:  # the session as a learner who chose the model has it (tests.conftest.seed)
        from tests.conftest import seed

        seed(at, model=model)
    at.run()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    PROFILER[0] = cProfile.Profile() if profile else None
    CPU.clear()
    for _ in range(repeats):
        at.run()
    rerun = list(CPU)
    CPU.clear()
    act = _interactions(page)
    for k in range(repeats):
        act(at, k)
    interact = list(CPU)
    assert not at.exception, [e.value for e in at.exception]
    if profile:
        out = io.StringIO()
        pstats.Stats(PROFILER[0], stream=out).sort_stats("cumulative").print_stats(profile)
        print(out.getvalue())
    PROFILER[0] = None
    return {"rerun": rerun, "interaction": interact}


def lesson_steps(repeats: int) -> None:
    """The lesson's rerun CPU on each step (a step draws its own charts)."""
    from lib.teaching.lesson import STEPS

    at = AppTest.from_file(str(ROOT / "pages" / "lesson.py"), default_timeout=300)
    print("| lesson step | rerun CPU (median) | runs |")
    print("| --- | ---: | --- |")
    for k, step in enumerate(STEPS, start=1):
        at.session_state["lesson_step"] = k
        at.run()
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        CPU.clear()
        for _ in range(repeats):
            at.run()
        runs = " ".join(f"{v:.3f}" for v in CPU)
        print(f"| {k}. {step.id} | {statistics.median(CPU):.3f} s | {runs} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pages", nargs="*", default=list(PAGE_FILES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--lesson-steps", action="store_true", help="also each step of the guided lesson")
    ap.add_argument("--model", default=None, help="a model key for the pages (default: the bundled encoder)")
    args = ap.parse_args()
    floor = AppTest.from_string("import streamlit as st\nst.title('empty')")
    floor.run()
    CPU.clear()
    for _ in range(args.repeats):
        floor.run()
    print(f"floor (empty page): {statistics.median(CPU):.4f} s")
    print(f"load average: {os.getloadavg()[0]:.2f}; model: {args.model or 'the bundled encoder'}")
    print("| page | rerun CPU (median) | interaction CPU (median) | runs |")
    print("| --- | ---: | ---: | --- |")
    for page in args.pages:
        r = measure(page, args.repeats, args.profile, args.model)
        runs = " ".join(f"{v:.3f}" for v in r["rerun"] + r["interaction"])
        print(
            f"| {page} | {statistics.median(r['rerun']):.3f} s | {statistics.median(r['interaction']):.3f} s | {runs} |",
            flush=True,
        )
    if args.lesson_steps:
        lesson_steps(args.repeats)


if __name__ == "__main__":
    main()
