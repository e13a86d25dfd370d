"""The server process: its tuning, done once from the entry point, and the work it starts in the background.

:func:`start` runs once per process, from serve.py (as Streamlit imports it) and app.py (the first run, for
``streamlit run app.py``), never at the import of a module: fewer malloc arenas, numpy's BLAS and torch on one
thread each, and the hosted-model policy written to the log. After each page run app.py calls
:func:`freeze_heap` (``gc.freeze`` once the model, and later UMAP, is loaded). Pages start the background
warm-ups they need (:func:`warm_up_in_background` for UMAP, :func:`warm_up_board` for the class board's map).
A hosted copy computes every preset for every model it serves once after it starts (:func:`warm_presets`,
from serve.py's start), so the first class of the day does not pay for it.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time

from lib.serving.budget import _positive_env
from lib.serving.hosting import allowed_models, hosted_mode
from lib.serving.lazy import load
from lib.serving.memory import fix_mmap_threshold, limit_arenas, release_memory

_lock = threading.Lock()
_started = False
_frozen_stages: set[str] = set()
_warm_started = False
_board_warm: set[str] = set()
WARM_UP: dict[str, float] = {}  # "umap_seconds" once the UMAP warm-up has finished


def start() -> bool:
    """Tune the process once (arenas first, then BLAS and torch threads) and log the hosted-model policy.

    Returns True on the call that did it, False after. Idempotent and cheap after the first call, so app.py
    may call it on every run."""
    global _started
    with _lock:
        if _started:
            return False
        _started = True
    limit_arenas()  # fewer glibc malloc arenas for the server's many threads (lib/serving/memory.py), first thing
    fix_mmap_threshold()  # large blocks in memory maps of their own, returned to the OS when freed (same module)
    limit_blas_threads()
    limit_torch_threads()
    log_to_stderr()
    # pandas before any session: plotly reads sys.modules["pandas"] without the import lock, so a session's first
    # import of it (a table, the board's PCA) half-way while another session builds a figure broke that figure
    # ("partially initialized module 'pandas'": a teacher's board page, once, on a busy machine)
    import pandas  # noqa: F401

    from ui.work import log_queue

    log_queue()  # CONTEXT_LENS_WORK_LOG=1 only
    models = allowed_models()
    logging.getLogger("context_lens").info(
        "hosted mode off: any model this machine has may be loaded"
        if models is None
        else f"hosted mode: the bundled model and {', '.join(models) or 'no other'} (CONTEXT_LENS_MODELS)"
    )
    return True


def log_to_stderr() -> None:
    """The app's own log ("context_lens": why a model was refused, the hosted policy, the warm-up) at INFO on
    the server's standard error, as Streamlit logs its own; Python would otherwise print only its warnings."""
    log = logging.getLogger("context_lens")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


# --------------------------------------------------------------------------- threads
def limit_blas_threads() -> int:
    """Run numpy's BLAS (OpenBLAS) on ``CONTEXT_LENS_BLAS_THREADS`` threads (default 1); returns the number.

    The same reasoning as torch's threads (below): a server answers many small requests at once. Measured on
    the shared two-core box (a hosted server's CPU): the reference corpus's seven 384 x 384 covariance fits (5,796 word
    pieces) took 7.5-9.3 s of CPU with BLAS's default two threads spinning against the other processes,
    0.45 s with one; the Anisotropy corpus upload took 23-25 s of server CPU.
    """
    from threadpoolctl import threadpool_limits

    try:
        n = max(1, int(os.environ.get("CONTEXT_LENS_BLAS_THREADS", "1")))
    except ValueError:
        n = 1
    threadpool_limits(limits=n, user_api="blas")  # process-wide until changed; not a context here
    # threadpool_limits reaches only the BLAS libraries loaded so far; scipy (loaded with scikit-learn or UMAP
    # when a learner first projects) brings its own OpenBLAS, which reads this variable when it loads.
    os.environ["OPENBLAS_NUM_THREADS"] = str(n)
    return n


def limit_torch_threads() -> int:
    """Run torch's forward passes on ``CONTEXT_LENS_TORCH_THREADS`` threads (default 1); returns the number.

    A server serves many small requests (a class's 8-sentence sets) at once, not one large one: with torch's
    default of one intra-op thread per core, each forward pass on a shared two-core box spent as much CPU
    in OpenMP's threads synchronising (spinning while the other core was busy) as in the work itself.
    Measured with benchmarks/browser_bench.py's class section: a new student cost the server 2.5-2.9 s of
    CPU with 2 threads, 1.2-1.7 s with 1. Set it higher for a host that serves one user large sets.
    """
    import torch

    try:
        n = max(1, int(os.environ.get("CONTEXT_LENS_TORCH_THREADS", "1")))
    except ValueError:
        n = 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


# --------------------------------------------------------------------------- the heap
def freeze_heap() -> str | None:
    """Move the long-lived objects out of the garbage collector's way, once per stage and process.

    The model, torch, transformers and plotly leave ~500,000 objects that live as long as the server; every
    full collection (Python's own, or Streamlit's after each script run) walks all of them. ``gc.freeze()``
    puts the objects alive now into a permanent generation that collections skip. Called by app.py after each
    page run: once when the model is loaded ("model"), once more when the UMAP warm-up has imported
    umap, numba and pandas ("umap"). A collection first, so garbage is not frozen with them. Returns the
    stage frozen now, or None. ``CONTEXT_LENS_GC_FREEZE=0`` switches it off (the benchmark's "before").
    """
    if os.environ.get("CONTEXT_LENS_GC_FREEZE", "1").strip() == "0":
        return None
    if "umap_seconds" in WARM_UP:
        stage = "umap"
    elif "torch" in sys.modules and _model_ran():
        stage = "model"
    else:
        return None
    with _lock:
        if stage in _frozen_stages:
            return None
        _frozen_stages.add(stage)
        _frozen_stages.add("model")  # a later "model" call has nothing left to do
    gc.collect()
    gc.freeze()
    return stage


def _model_ran() -> bool:
    from ui.cache import ENCODE_CALLS  # imported once a run has happened: start() stays light

    return sum(ENCODE_CALLS.values()) > 0


# --------------------------------------------------------------------------- background warm-ups
def warm_up_in_background() -> None:
    """Once per server process, compile UMAP's numba code in a daemon thread.

    Called by the Projections page the first time a learner chooses UMAP (the page shows PCA meanwhile and
    switches by itself): importing umap, numba and pynndescent and compiling costs ~0.3 GB of memory and
    10-25 s of one core, which a server where nobody chooses UMAP never pays.
    """
    global _warm_started
    with _lock:
        if _warm_started:
            return
        _warm_started = True

    def _run() -> None:
        from lib.stats.projection import warm_up_umap

        WARM_UP["umap_seconds"] = warm_up_umap()
        release_memory()

    import pandas  # noqa: F401  (umap imports pandas; plotly reads sys.modules["pandas"] without the import lock, so a half-imported pandas in the warm-up thread breaks figures other sessions build meanwhile)

    # What the page draws meanwhile (the PCA map and its neighbour check) is imported here, before the warm-up's
    # `import umap` holds lib.serving.lazy's import lock for a few seconds: the PCA map does not wait for it.
    load("sklearn.decomposition")
    load("sklearn.manifold")
    threading.Thread(target=_run, name="context-lens-umap-warmup", daemon=True).start()


def umap_status() -> str:
    """'ready' when the background warm-up has compiled UMAP, 'warming' while it runs, else 'idle'.

    'idle' means no warm-up runs in this process (a page run on its own, or a failed warm-up): computing a
    UMAP then does the import and compilation itself (and shows any error).
    """
    if "umap_seconds" in WARM_UP:
        return "ready"
    if any(t.name == "context-lens-umap-warmup" and t.is_alive() for t in threading.enumerate()):
        return "warming"
    return "idle"


def warm_up_board(model_name: str) -> None:
    """Once per process, when a teacher opens a board: import scikit-learn's PCA (the board's map) in a daemon
    thread, so the first accepted sentences are not charted after a cold import (~0.7 s of CPU)."""
    with _lock:
        if model_name in _board_warm:
            return
        _board_warm.add(model_name)

    def _run() -> None:
        load("sklearn.decomposition")

    import pandas  # noqa: F401  (imported here, not half-way in the thread while plotly reads it: warm_up_in_background)

    threading.Thread(target=_run, name="context-lens-board-warmup", daemon=True).start()


# --------------------------------------------------------------------------- warm presets
DEFAULT_WARM_SECONDS = 300.0  # CPU seconds the preset warm-up may use (CONTEXT_LENS_WARM_SECONDS)
WARM_SHARE = 0.5  # the warm-up stops once the results cache is this full: the class's own sets need the rest
WARM_NICE = 19  # the warm-up thread's OS priority: the lowest


def warm_presets(environ: dict[str, str] | None = None) -> bool:
    """On a hosted copy, once per process: compute every preset for every model it serves in a daemon thread
    (``context-lens-warm-presets``), so that the first class of the day finds its first charts' numbers ready.

    Per preset and model, what a learner's first charts need: the set's encodings (with each sentence's
    attentions: ui.cache.encoding keeps them for small sets), the target's vectors, Layer by layer's profile
    and the readouts against chance of the Start page and Layer by layer. The default model first, the default
    preset first. Bounded: each preset is one job in the work queue's background lane (it starts only when no
    learner's work waits or runs), the thread runs at the lowest OS priority, it stops after
    ``CONTEXT_LENS_WARM_SECONDS`` of CPU (default :data:`DEFAULT_WARM_SECONDS`) or once the results cache is
    :data:`WARM_SHARE` full, and a model that cannot be loaded is skipped. When it ends it logs
    "warm presets: ..." and records its numbers in ``WARM_UP["presets"]``. Returns whether it started one."""
    global _presets_started
    if not hosted_mode(environ):
        return False
    with _lock:
        if _presets_started:
            return False
        _presets_started = True
    import pandas  # noqa: F401  (imported here, not half-way in the thread while plotly reads it: warm_up_in_background)

    limit = _positive_env("CONTEXT_LENS_WARM_SECONDS", DEFAULT_WARM_SECONDS, environ)
    threading.Thread(target=_warm_presets, args=(limit,), name="context-lens-warm-presets", daemon=True).start()
    return True


_presets_started = False


def _warm_presets(limit: float) -> None:
    from lib.inputs.presets import load_presets
    from lib.inputs.sentences import parse_sentence_set
    from lib.models.keys import DEFAULT_MODEL, ModelLoadError
    from lib.models.targets import TargetError
    from ui import cache, work

    work.lower_priority(WARM_NICE)
    log = logging.getLogger("context_lens")
    cpu0, wall0 = time.thread_time(), time.monotonic()
    models = list(dict.fromkeys([DEFAULT_MODEL, *(allowed_models() or ())]))
    done, stopped = 0, ""
    for model in models:
        try:
            cache.encoder(model)
        except ModelLoadError as err:
            log.info("warm presets: %s skipped (%s)", model, err)
            continue
        for p in load_presets():
            if time.thread_time() - cpu0 > limit:
                stopped = f", stopped at its limit of {limit:.0f} s of CPU"
                break
            if cache.store.RESULTS.total_bytes > WARM_SHARE * cache.store.RESULTS.max_bytes:
                stopped = f", stopped with the results cache {100 * WARM_SHARE:.0f} % full"
                break
            try:
                with work.heavy(0, background=True):  # every job inside runs in this background slot
                    _warm_one(cache, model, parse_sentence_set(p.text, p.target, preset_id=p.id))
                done += 1
            except (TargetError, ValueError) as err:
                log.info("warm presets: %s on %s skipped (%s)", p.id, model, err)
        if stopped:
            break
    cache.store.RESULTS.keep(cache.store.RESULTS.keys())  # large work makes room by dropping other results first
    WARM_UP["presets"] = {"sets": done, "cpu_s": round(time.thread_time() - cpu0, 1),
                          "wall_s": round(time.monotonic() - wall0, 1)}  # fmt: skip
    log.info(
        "warm presets: %d preset sets on %d model(s) in %.1f s of CPU (%.1f s)%s",
        done, len(models), WARM_UP["presets"]["cpu_s"], WARM_UP["presets"]["wall_s"], stopped,
    )  # fmt: skip


def _warm_one(cache, model: str, ss) -> None:
    """What the first charts of a preset need, computed (and cached) as the pages ask for it."""
    tv = cache.target_vectors(model, ss.sentences, ss.target)
    if len(tv.kept) < len(ss):
        ss = ss.subset(tv.kept)
    if len(ss) < 2:
        return
    senses = tuple(s or None for s in ss.senses)
    prof = cache.layer_profile(model, tuple(ss.sentences), senses, ss.target, tv)
    if ss.has_senses:
        cache.readout_chance(model, tuple(ss.sentences), tuple(ss.senses), ss.target, "target", tv.vectors)
        cache.readout_chance(model, tuple(ss.sentences), senses, ss.target, "layers", prof.vectors)
