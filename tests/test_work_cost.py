"""ui/work.py's job estimates against what the jobs really hold: the peak resident memory of a fresh process
running each large job kind on the real models (a long set, a long sentence's occlusion, a set's layer profile,
the reference corpus's statistics).

The work queue admits heavy jobs by these estimates (lib.serving.work), so an estimate below the real peak lets
the server pass its memory bound; one far above it makes jobs wait for nothing. Each job runs in a fresh Python
process (nothing of the test run's other work in its memory), its peak read from the kernel (VmHWM, reset
through /proc/self/clear_refs just before the job), with glibc's malloc set as the server sets it (ui.startup).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

# Over by at most this much: the estimates are fitted to the pass, not to malloc's rounding
OVER = 1.15
SLACK_MB = 8.0
# and never absurdly high: a job declared at three times its peak would keep others waiting for nothing
UNDER = 3.0

MEASURE = r"""
import gc, json, sys
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from lib.inputs.corpus import bounded_corpus, compute_corpus_statistics, corpus_budget, load_reference_corpus
from lib.models import load_model
from lib.serving.memory import fix_mmap_threshold, limit_arenas, release_memory
from lib.stats.baseline import other_token_masks
from lib.stats.context import MAX_PIECES, MAX_WORDS, occlusion
from lib.stats.layer_profile import layer_profile
from ui.work import corpus_cost, model_job_cost, occlusion_cost, profile_cost

torch.set_num_threads(1)  # as the server runs
threadpool_limits(1)  # numpy's BLAS too (ui.startup.limit_blas_threads): more threads, more buffers of their own
limit_arenas()  # and glibc's malloc as the server sets it (ui.startup): without the fixed mmap threshold, freed
fix_mmap_threshold()  # hidden states stay in the heap and a set's peak wanders by ~25 MB from run to run


def kb(key):
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(key))
    return int(line.split()[1]) / 1024


def peak(fn):
    gc.collect()
    release_memory()
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from what is resident now
    base = kb("VmRSS")
    out = fn()
    return out, kb("VmHWM") - base


model, n, words = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
enc = load_model(model)
cap = 128
sentences = [f"The bank {k} of the set " + "!" * 385 for k in range(n)]  # each cut at 128 word pieces
senses = [f"s{k % 2}" for k in range(n)]
filler = " ".join(["we", "walked", "along", "the", "quiet", "river", "and", "watched", "small", "boats"] * 6)
long_sentence = "The [bank] by the water " + " ".join(filler.split()[: words - 5]) + " end"
enc.encode(sentences[:2], attentions=False, max_tokens=cap)  # the first pass's one-off allocations
occlusion(enc, "We sat on the river [bank] today .")
out = {}

pieces = [min(p, cap) for p in enc.piece_counts(sentences)]
encoding, rise = peak(lambda: enc.encode(sentences, attentions=False, max_tokens=cap))
out["set"] = [rise, model_job_cost(enc, pieces) / 2**20]

tv = enc.target_vectors(sentences, "bank", skip_missing=True, encoding=encoding)
e, targets = tv.encoding, [sp.token_indices for sp in tv.spans]
_, rise = peak(lambda: layer_profile(
    tv.vectors, tv.static, senses, e.hidden_states, other_masks=other_token_masks(e.special, targets),
    word_masks=other_token_masks(e.special, [()] * n), tokens=e.tokens, special=e.special, target_indices=targets))
out["profile"] = [rise, profile_cost(n, enc.num_hidden_states, enc.hidden_size) / 2**20]
del tv, e, encoding

p = min(enc.piece_counts([long_sentence.replace("[", "").replace("]", "")])[0], MAX_PIECES)
w = min(len(long_sentence.split()), MAX_WORDS)  # as ui.cache.stats.occlusion counts them
occ, rise = peak(lambda: occlusion(enc, long_sentence))
assert len(occ.words) <= w, (len(occ.words), w)
out["occlusion"] = [rise, occlusion_cost(enc, w, p) / 2**20]
del occ

corpus = bounded_corpus(enc, load_reference_corpus().sentences, "reference")[0]  # what Anisotropy reads
compute_corpus_statistics(enc, corpus[:4])  # the first covariance fits' one-off allocations (LAPACK's workspace)
stats, rise = peak(lambda: compute_corpus_statistics(enc, corpus))
out["corpus"] = [rise, corpus_cost(enc, corpus_budget(enc, corpus).pieces) / 2**20]
del stats
print(json.dumps(out))
"""


def _measure(model: str, n: int, words: int) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, model, str(n), str(words)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(measured: dict[str, list[float]]) -> None:
    for kind, (rise, estimate) in measured.items():
        assert rise <= OVER * estimate + SLACK_MB, f"{kind}: held {rise:.0f} MB, estimated {estimate:.0f} MB"
        assert estimate <= UNDER * max(rise, SLACK_MB), f"{kind}: held {rise:.0f} MB, estimated {estimate:.0f} MB"


def test_the_encoders_large_jobs_hold_what_they_declare():
    from lib.models import DEFAULT_MODEL

    _check(_measure(DEFAULT_MODEL, 78, 60))


def test_the_decoders_large_jobs_hold_what_they_declare():
    from lib.models import DECODER_MODEL, ModelLoadError, pack

    try:  # the pack, as the decoder fixture makes sure of it (without loading it into this process)
        pack.installed_pack()
    except ModelLoadError:
        pack.download()
    _check(_measure(DECODER_MODEL, 27, 60))
