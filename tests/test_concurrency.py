"""Thirty students at once: eight threads share the one encoder (as the Streamlit cache shares it).

HF fast tokenizers are Rust objects that raise "RuntimeError: Already borrowed" when two threads use one
at the same time (e.g. one pads while the other truncates); the encoder's lock must prevent that, and
the results must be exactly what the same calls give one after another.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lib.inputs.presets import load_presets

N_THREADS = 8


def _run_threads(run) -> None:
    """``run(k)`` on N_THREADS threads at once; fails if one of them hangs (a deadlock)."""
    threads = [threading.Thread(target=run, args=(k,)) for k in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung (deadlock?)"


def _jobs():
    """Different inputs per thread: different lengths and batch sizes, so padding differs between calls."""
    presets = load_presets()
    jobs = []
    for k in range(N_THREADS):
        p = presets[k % len(presets)]
        sents = [s for _, s in p.rows][: 3 + k]
        jobs.append((p.target, sents))
    return jobs


def _work(encoder, target, sents):
    enc = encoder.encode(sents)
    V = encoder.word_vectors(sents, target)
    return enc, V


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_eight_threads_give_the_sequential_results(encoder):
    jobs = _jobs()
    expected = [_work(encoder, t, s) for t, s in jobs]

    rounds = 2  # each thread does its job twice, the second time interleaved with other threads' first
    barrier = threading.Barrier(N_THREADS)
    results: list[list] = [[] for _ in jobs]
    errors: list[BaseException] = []

    def run(k: int) -> None:
        target, sents = jobs[k]
        try:
            barrier.wait(timeout=120)  # all threads start together
            for _ in range(rounds):
                results[k].append(_work(encoder, target, sents))
        except BaseException as err:  # collected and reported in the main thread
            errors.append(err)

    _run_threads(run)
    assert not [e for e in errors if "Already borrowed" in str(e)], errors
    assert not errors, errors

    for k, (enc0, V0) in enumerate(expected):
        assert len(results[k]) == rounds
        for enc, V in results[k]:
            # exactly: the same input through the same model on the same thread count gives the same floats
            np.testing.assert_array_equal(V, V0)
            assert enc.tokens == enc0.tokens
            assert enc.truncated == enc0.truncated
            for a, b in zip(enc.hidden_states, enc0.hidden_states, strict=True):
                np.testing.assert_array_equal(a, b)
            for a, b in zip(enc.attentions, enc0.attentions, strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_tokenizer_is_shared_safely_under_many_small_calls(encoder):
    """Threads hammer encode with short batches that need padding (the most tokenizer calls per second).

    Each encode calls the tokenizer twice with different padding/truncation settings, which the Rust
    tokenizer stores on itself; without the encoder's lock another thread's call changes them mid-way
    ("Already borrowed", or a batch left unpadded). Checked: with the lock removed this test fails.
    """
    pairs = [
        ("Bank.", "The bank opened today, early in the morning."),
        ("We sat on the bank.", "Bank on it."),
        ("The river bank flooded after the storm last night.", "A bank."),
    ]
    expected = [encoder.encode(list(p)).hidden_states for p in pairs]
    errors: list[BaseException] = []
    mismatches: list[int] = []
    barrier = threading.Barrier(N_THREADS)

    def run(k: int) -> None:
        try:
            barrier.wait(timeout=120)
            for r in range(40):
                i = (k + r) % len(pairs)
                got = encoder.encode(list(pairs[i])).hidden_states
                if not all(np.array_equal(a, b) for a, b in zip(got, expected[i], strict=True)):
                    mismatches.append(i)
        except BaseException as err:
            errors.append(err)

    _run_threads(run)
    assert not errors, errors[:3]
    assert not mismatches


RACE_SCRIPT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from ui import startup
import plotly.graph_objects as go

assert "pandas" not in sys.modules, "this check needs a process where pandas is not imported yet"
startup.warm_up_in_background()  # what Projections does when a learner first chooses UMAP
errors, n, t0 = [], 0, time.time()
while time.time() - t0 < 120:
    try:  # what the next page (any session) does meanwhile: build a figure
        go.Figure(go.Heatmap(z=[[1.0, 0.5], [0.5, 1.0]], x=["a", "b"], y=["a", "b"]))
    except Exception as err:
        errors.append(repr(err)[:200])
    n += 1
    pd = sys.modules.get("pandas")
    if pd is not None and hasattr(pd, "Series") and hasattr(pd, "Index") and time.time() - t0 > 2:
        break
print(json.dumps({"figures": n, "errors": len(errors), "first": errors[:1]}))
"""


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_umap_warm_up_does_not_break_figures_built_meanwhile():
    """The background UMAP warm-up imports umap -> pandas. plotly's validators read sys.modules["pandas"]
    without the import lock, so while that thread is half-way through importing pandas every figure
    built by another session fails with "partially initialized module 'pandas' has no attribute
    'Series'". Runs in a fresh interpreter (pandas must not be imported yet)."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run(
        [sys.executable, "-c", RACE_SCRIPT, str(ROOT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == 0, result
