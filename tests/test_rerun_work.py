"""A rerun that changes nothing costs the server next to nothing: every page, run again with the same input, runs no
model, computes no statistic, builds no figure and makes no cached result again; it finds what its first run made.

The work of one run is counted in the script's own thread (a profile hook around Streamlit's script call):

* **model passes**: calls of a torch module (``nn.Module.__call__``) and ``ui.cache.ENCODE_CALLS``;
* **statistics**: calls of a function of ``lib/stats/`` or ``lib/models/`` (the maths: similarity, readouts,
  attention summaries, the logit lens, ...) or of the lesson's step modules that are handed an array;
* **figures**: charts built (``lib.charts.common.figure``, which every chart builder ends in);
* **results made**: entries put into the results cache (``ui.cache.RESULTS``): anything computed again.

A second test empties the cache between the two runs and sees each kind of work counted, so the counter itself is
checked against a rerun that must work.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.browser._browser import app_pages
from tests.conftest import ROOT, page_test

# every page of app.py; those whose first run needs no model (or stops before it) are quick
QUICK = ("pages/calculator.py", "pages/glossary.py", "pages/board.py", "pages/finetune.py", "pages/lens.py")
PAGES = [
    pytest.param(path, marks=() if path in QUICK else pytest.mark.slow) for path, _title, _default in app_pages()
]
DECODER_PAGES = ["pages/home.py", "pages/layers.py", "pages/attention.py", "pages/lens.py", "pages/context.py"]
LIB = str(ROOT / "lib") + "/"
MATHS = ("stats/", "models/", "teaching/lesson")  # under lib/: a function here handed an array is a statistic
TORCH_MODULE = str(Path("torch") / "nn" / "modules" / "module.py")


def _kind(frame) -> str | None:
    """The kind of work a Python call is (None: not counted)."""
    code = frame.f_code
    path = code.co_filename
    if path.startswith(LIB):
        where = path[len(LIB):]
        if where == "charts/common.py" and code.co_name == "figure":
            return f"figure built ({code.co_name})"
        if where.startswith(MATHS):
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            if any(isinstance(frame.f_locals.get(v), np.ndarray) for v in names):
                return f"statistic ({where}:{code.co_name})"
    elif path.endswith(TORCH_MODULE) and code.co_name == "_call_impl":
        return "model pass (a torch module)"
    return None


@contextlib.contextmanager
def counting(work: Counter):
    """Count the work of every page run inside the block into ``work`` (see the module's docstring)."""
    from streamlit.runtime.scriptrunner import script_runner

    from ui import cache
    from ui.cache import store

    def hook(frame, event, _arg):
        if event == "call":
            kind = _kind(frame)
            if kind is not None:
                work[kind] += 1

    results = store.RESULTS  # the cache the pages read (a test may have put an empty one there)
    original, put = script_runner.exec_func_with_error_handling, results.put

    def run(func, ctx):
        sys.setprofile(hook)
        try:
            return original(func, ctx)
        finally:
            sys.setprofile(None)

    def counted_put(key, value, size=None):
        work[f"result made ({key[0]})"] += 1
        return put(key, value, size)

    calls = sum(cache.ENCODE_CALLS.values())
    script_runner.exec_func_with_error_handling = run
    results.put = counted_put
    try:
        yield work
    finally:
        script_runner.exec_func_with_error_handling = original
        del results.put  # the instance's own method again
        if sum(cache.ENCODE_CALLS.values()) > calls:
            work["model pass (ui.cache.ENCODE_CALLS)"] += sum(cache.ENCODE_CALLS.values()) - calls


def rerun_work(page: str, **seeded) -> Counter:
    """The work a run of ``page`` does when the run before it had the same input."""
    at = page_test(page, **seeded)
    at.run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    at.run(timeout=900)  # a first rerun may still settle what the first run's widgets set (the link's values)
    work: Counter = Counter()
    with counting(work):
        at.run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    return work


@pytest.fixture(autouse=True)
def _app_sized_cache(product_sized_results):
    """What a rerun finds is what the app's own results budget keeps (the tests' cache is larger: conftest)."""


@pytest.mark.parametrize("page", PAGES)
def test_a_rerun_that_changes_nothing_does_no_work(page):
    work = rerun_work(page)
    assert not work, f"{page} did work again on a rerun with nothing changed: {dict(work)}"


@pytest.mark.slow
@pytest.mark.parametrize("page", DECODER_PAGES)
def test_a_rerun_with_the_decoder_does_no_work(decoder, page):
    from lib.models.keys import DECODER_MODEL

    work = rerun_work(page, model=DECODER_MODEL)
    assert not work, f"{page} with the decoder did work again on a rerun with nothing changed: {dict(work)}"


@pytest.mark.slow
def test_the_counter_sees_a_rerun_that_works(encoder, monkeypatch):
    """With the results cache emptied between two runs, the same rerun counts the model's passes, the statistics,
    the figures and the results made again: the test above would fail on a page that recomputes."""
    from lib.serving.budget import ByteLRU, cache_budget_bytes
    from ui.cache import store

    at = page_test("pages/layers.py")
    at.run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    # an empty results cache of the app's size, in place of the test process's shared one (kept for later tests)
    monkeypatch.setattr(store, "RESULTS", ByteLRU(cache_budget_bytes()))
    work: Counter = Counter()
    with counting(work):
        at.run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    kinds = {k.split(" (")[0] for k in work}
    assert {"model pass", "statistic", "figure built", "result made"} <= kinds, dict(work)
    assert work["model pass (ui.cache.ENCODE_CALLS)"] >= 1
    assert work["figure built (figure)"] >= 5  # the section charts of the page's default view
    assert work["statistic (stats/similarity.py:cosine_matrix)"] >= 1
