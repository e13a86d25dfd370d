"""The only place with Streamlit caching: the model once per process, results per distinct input.

Every cached entry point of the app lives here and nowhere else (the process's tuning and warm-ups: ui.startup).

The loaded models sit in :data:`MODELS`, a byte-bounded LRU of their weights. Every result (encodings, target vectors, statistics, parsed uploads,
the pages' profiles, curves and projections, shared figures) sits in one :class:`lib.serving.budget.ByteLRU` for the
whole process, bounded by what its entries hold (lib.serving.budget.sizeof; ``CONTEXT_LENS_CACHE_MB``, default 200): a
class of sessions cannot grow the server past it, whatever they type. The work that makes a result (a model
pass, a projection, an occlusion) runs in a slot of the server's work queue (ui/work.py), so memory while
computing is bounded too. Results are frozen dataclasses whose arrays are read-only, so sharing one object between sessions is
safe, and a warm rerun costs a dictionary lookup.

A set is encoded **without** attention weights (they are num_layers × num_heads × n² floats per sentence);
:func:`sentence_attention` encodes the one or two sentences a page shows with them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Callable

import numpy as np
import streamlit as st

from lib.inputs.corpus import (
    CorpusStats,
    CorpusText,
    compute_corpus_statistics,
    corpus_budget,
    corpus_statistics,
    load_reference_corpus,
)
from lib.inputs.corpus import anisotropy_curves as _anisotropy_curves
from lib.inputs.sentences import clean_sentences as _clean_sentences
from lib.models import load_model
from lib.models.base import Encoding, TargetVectors, TransformerModel, concat_encodings
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL, ModelLoadError, parse_model_key
from lib.serving import budget
from lib.serving.budget import ByteLRU, ExpiringDict, cache_budget_bytes
from lib.serving.hosting import MODEL_REFUSAL, hosted_mode, model_allowed
from lib.serving.memory import release_memory
from lib.stats.baseline import other_token_masks
from lib.stats.layer_profile import LayerProfile
from lib.stats.layer_profile import layer_profile as _layer_profile
from lib.stats.probe import ProbeResult, probe_layers
from lib.stats.projection import NeighbourCheck, Projection, neighbour_check, project, project_layers
from ui import visitor
from ui.work import attention_floats, heavy, lease_for_run, pass_cost, projection_cost

# How often each model actually ran (by model name): tests and the benchmark read this to prove that a
# rerun with unchanged input did not run the model again.
ENCODE_CALLS: Counter[str] = Counter()
RESULTS = ByteLRU(cache_budget_bytes())  # every cached result of the process, bounded by bytes
_failed_models = ExpiringDict(max_entries=64, ttl=600.0)  # a link cannot grow this list without bound
_lock = threading.Lock()
_log = logging.getLogger("context_lens")


# The loaded models, shared by every session: counted by their weights' bytes (lib.serving.budget.model_nbytes) and
# evicted least recently used first past CONTEXT_LENS_MODEL_CACHE_MB, like every other result. One load per model
# at a time (a second session asking waits for the first's load). A session still using an evicted model keeps
# its reference until its run ends; the next run loads it again.
MODELS = ByteLRU(budget.model_cache_bytes(), size=budget.model_nbytes)


def encoder(model_name: str = DEFAULT_MODEL) -> TransformerModel:
    """The loaded model for ``model_name`` (an encoder or a decoder: lib.models.load_model), shared by every
    session, kept in :data:`MODELS`. Raises ModelLoadError (not kept)."""
    hit = MODELS.get(model_name)
    if hit is not None:
        return hit
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    spin = st.spinner("Loading the model (once per server)…") if get_script_run_ctx() else contextlib.nullcontext()
    with spin:
        return MODELS.get_or_compute(model_name, lambda: load_model(model_name))


def try_encoder(model_name: str) -> tuple[TransformerModel | None, str | None]:
    """(model, None) when the model loads, else (None, message). A failed name is not retried for a while.

    In hosted mode (``CONTEXT_LENS_MODELS`` set, or a visitor from another machine: ui.visitor) a name off the
    list is refused before anything is looked up. Hosted mode or not, every refusal or failure gives the same message (lib.serving.hosting.MODEL_REFUSAL), so a
    link cannot probe the server's disk (``?model=/etc`` and ``?model=/nonexistent`` read the same); the
    reason goes to the server's log. The one exception: the decoder pack (``DECODER_MODEL``) not fetched yet
    says so in its own sentence (lib.models.pack.MISSING), which tells nothing about the disk.
    """
    local = visitor.local()
    if hosted_mode(local=local) and not model_allowed(model_name, local=local):
        return None, MODEL_REFUSAL
    failed = _failed_models.get(model_name)
    if failed is not None:
        return None, failed
    try:
        return encoder(model_name), None
    except ModelLoadError as err:
        from lib.models.pack import MISSING

        _log.info("model %r refused: %s", model_name[:200], err)
        try:
            is_pack = parse_model_key(model_name).base == DECODER_MODEL
        except ModelLoadError:
            is_pack = False
        if is_pack and str(err) == MISSING:  # not remembered: once fetched, the next try loads it
            return None, MISSING
        _failed_models[model_name] = MODEL_REFUSAL
        return None, MODEL_REFUSAL


def context_use(model_name: str, sentences: tuple[str, ...], target: str | None):
    """lib.stats.context.context_use (attention entropy, largest occlusion shift per sentence), computed once.

    Raises ContextError when no sentence can be measured; failures are not cached.
    """
    from lib.stats.context import context_use as run

    def compute():
        out = run(encoder(model_name), sentences, target)
        release_memory()
        return out

    return _cached(("context_use", model_name, sentences, target), compute, "Masking each word in turn…")


def _cached(key: tuple, compute: Callable[[], object], spinner: str | None = None, size=None):
    """``RESULTS.get_or_compute`` with a spinner while a missing entry is computed."""
    hit = RESULTS.get(key)
    if hit is not None:
        return hit
    if spinner is None:
        return RESULTS.get_or_compute(key, compute, size)
    with st.spinner(spinner):
        return RESULTS.get_or_compute(key, compute, size)


def lesson_numbers(step: str, model_name: str, compute: Callable[[], object]):
    """A guided-lesson step's numbers, computed once per server and model (the byte-bounded results cache).

    Only for results that depend on nothing but the model: the lesson's sentence sets are fixed presets, and
    ``model_name`` is the model key (random weights and their seed included).
    """
    return _cached(("lesson", step, model_name), compute)


def parsed_upload(kind: str, data: bytes, parse: Callable[[bytes], object]):
    """``parse(data)`` once per file content and ``kind`` (what else the parse depends on, e.g. the target),
    in the byte-bounded results cache: an uploaded file stays in its widget across reruns, and decoding and
    splitting a 2 MB file on every rerun cost ~0.05 s each time. A parse that raises is not cached."""
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    return _cached(("upload", kind, digest), lambda: parse(data))


@functools.cache
def reference_corpus() -> CorpusText:
    """The built-in reference corpus, read and parsed once per process (lib.inputs.corpus.load_reference_corpus).

    A missing file raises CorpusError each time it is asked for (an exception is not cached)."""
    return load_reference_corpus()


def _sentence_key(model_name: str, sentence: str) -> tuple:
    """The RESULTS key of one sentence's encoding (read up to the per-sentence cap in force)."""
    return ("sentence", model_name, sentence, budget.MAX_PIECES_PER_SENTENCE)


def _attention_key(model_name: str, sentence: str) -> tuple:
    """The RESULTS key of one sentence's encoding **with** attentions (:func:`sentence_attention`)."""
    return ("attention", model_name, sentence, budget.MAX_PIECES_PER_SENTENCE)


# A small set is encoded with its attentions, kept per sentence for the Attention page: the model computes them
# anyway (eager attention), copying them out costs nothing measurable (8 sentences: 0.033 s of CPU either way),
# and a learner who opens Attention next needs no model run of their own (two single-sentence runs, ~0.02 s of
# CPU and a spinner, per new student). "Small": at most ATTENTIONS_WITH_SET new sentences whose attentions
# (layers × heads × n² float32 each) come to at most ATTENTIONS_WITH_SET_BYTES, the size of what the Attention
# page would compute for its one or two sentences anyway; a larger set is encoded without them (memory).
ATTENTIONS_WITH_SET = 16
ATTENTIONS_WITH_SET_BYTES = 4 * 1024 * 1024


def _keep_attentions(enc: TransformerModel, pieces: list[int]) -> bool:
    return len(pieces) <= ATTENTIONS_WITH_SET and attention_floats(enc, pieces) * 4 <= ATTENTIONS_WITH_SET_BYTES


def encoding(
    model_name: str,
    sentences: tuple[str, ...],
    progress: Callable[[int, int], None] | None = None,
    *,
    spinner: bool = True,
) -> Encoding:
    """Every layer's vectors for ``sentences`` (cleaned text), without attentions, computed once per sentence.

    Each sentence is cached on its own (a sentence encoded alone or in a batch gives the same vectors, see
    lib/models/encoder.py), so a set that shares sentences with one seen before (a learner editing one line of a
    preset, a class starting from the same preset) runs the model only on its new sentences, all of them in
    one call. Sessions asking for the same new sentences at the same moment wait for one model run. Each
    sentence is read up to MAX_PIECES_PER_SENTENCE word pieces (``Encoding.truncated`` says which were cut).
    ``progress(ready, total)``: after each batch of the model's run, how many of the distinct sentences are
    ready (the cached ones count from the start); not called when this session waits for another's run.
    ``spinner=False`` runs without the spinner (the class board encodes its queue ahead, on a projected page).
    """
    cap = budget.MAX_PIECES_PER_SENTENCE
    key = functools.partial(_sentence_key, model_name)
    fresh: dict[str, Encoding] = {}  # this call's own results: a set larger than the cache still gets them

    def encode_new(new: tuple[str, ...], report: Callable[[int, int], None] | None = None) -> tuple[str, ...]:
        enc = encoder(model_name)
        pieces = [min(n, cap) for n in enc.piece_counts(new)]
        attentions = _keep_attentions(enc, pieces)
        cost = pass_cost(enc, sum(pieces), attention_floats(enc, pieces) if attentions else 0)
        with heavy(cost):  # the server's work budget (lib.serving.work): waits its turn, with a message
            with _lock:
                ENCODE_CALLS[model_name] += 1
            out = enc.encode(list(new), attentions=attentions, max_tokens=cap, progress=report)
            release_memory()  # torch's temporaries of the forward pass go back to the OS
        for i, s in enumerate(new):
            one = out.subset([i])  # the same arrays, no copy
            if attentions:
                RESULTS.put(_attention_key(model_name, s), one)
                one = dataclasses.replace(one, attentions=None)
            fresh[s] = one
            RESULTS.put(key(s), one)
        return new  # the batch's entry holds only its sentences' text (counted by plain_nbytes)

    found = {s: RESULTS.get(key(s)) for s in dict.fromkeys(sentences)}
    new = tuple(s for s, hit in found.items() if hit is None)
    if new:
        cached = len(found) - len(new)
        report = None if progress is None else (lambda done, _n: progress(cached + done, len(found)))
        with st.spinner("Running the model on your sentences…") if spinner else contextlib.nullcontext():
            RESULTS.get_or_compute(
                ("encoded", model_name, new, cap), lambda: encode_new(new, report), budget.plain_nbytes
            )
        for s in new:
            found[s] = fresh.get(s) or RESULTS.get(key(s))
        lost = tuple(s for s in new if found[s] is None)  # another session's run, evicted meanwhile: again
        if lost:
            encode_new(lost)
            found.update({s: fresh[s] for s in lost})
    return concat_encodings([found[s] for s in sentences])


def sentence_attention(model_name: str, sentence: str) -> Encoding:
    """One cleaned sentence encoded **with** attentions (``attentions[0]``: (L, H, n, n)), cached.

    Read up to the same MAX_PIECES_PER_SENTENCE word pieces as the set, so its word pieces are those of
    the set's encoding (the target's token indices carry over). A sentence of a small set is usually found
    here already: :func:`encoding` keeps its attentions from the set's own model run (ATTENTIONS_WITH_SET).
    """

    def run() -> Encoding:
        enc = encoder(model_name)
        pieces = [min(n, cap) for n in enc.piece_counts([sentence])]
        with heavy(pass_cost(enc, pieces[0], attention_floats(enc, pieces))):
            with _lock:
                ENCODE_CALLS[model_name] += 1
            return enc.encode([sentence], attentions=True, max_tokens=cap)

    cap = budget.MAX_PIECES_PER_SENTENCE
    return _cached(_attention_key(model_name, sentence), run)


def clean_sentences(sentences: tuple[str, ...], target: str | None) -> tuple[str, ...]:
    """The sentences as the model sees them (brackets removed). Lines without a target are dropped."""
    return _clean_sentences(sentences, target, bad="drop")


CHUNK = 50  # sentences per model call: large sets are encoded (and cached) chunk by chunk


def _chunks(clean: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [clean[i : i + CHUNK] for i in range(0, len(clean), CHUNK)]


def encode_in_chunks(
    model_name: str,
    sentences: tuple[str, ...],
    target: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Make sure every chunk of a large set is encoded (cached), calling ``progress(done, total)``.

    ``progress(0, total)`` comes first, before the model runs, then one call after each batch of the model
    (a few sentences: lib.models.encoder.plan_batches) and each chunk, never twice with the same count; when every
    sentence is cached already, nothing is called (a rerun shows no bar). Not cached itself, so it may drive
    a progress bar; :func:`target_vectors` then finds every chunk in the cache.
    """
    clean = clean_sentences(sentences, target)
    if all(_sentence_key(model_name, s) in RESULTS for s in clean):
        return  # every sentence is cached: nothing to run, nothing to show
    if progress is None:
        for chunk in _chunks(clean):
            encoding(model_name, chunk)
        return
    shown = [-1]

    def show(done: int) -> None:
        if done != shown[0]:
            shown[0] = done
            progress(done, len(clean))

    show(0)
    done = 0
    for chunk in _chunks(clean):
        size = len(chunk)
        encoding(model_name, chunk, lambda ready, total, done=done, size=size: show(done + size * ready // total))
        done += size
        show(done)


def target_vectors(model_name: str, sentences: tuple[str, ...], target: str | None) -> TargetVectors:
    """The target's vectors in each sentence (see TransformerModel.target_vectors), reusing cached encodings.

    Sentences whose target cannot be used are skipped; their messages are in ``.problems`` and ``.kept``
    says which input sentences remain. Changing only the target word does not run the model again. Sets
    larger than CHUNK sentences are encoded (and cached) chunk by chunk.
    """

    def run() -> TargetVectors:
        parts = [encoding(model_name, chunk) for chunk in _chunks(clean)]
        merged = concat_encodings(parts) if parts else None
        return enc.target_vectors(list(sentences), target, skip_missing=True, encoding=merged)

    key = ("target_vectors", model_name, sentences, target, budget.MAX_PIECES_PER_SENTENCE)
    clean = clean_sentences(sentences, target)
    enc = encoder(model_name)
    if len(clean) > CHUNK:
        # A large set's vectors (every word piece's, every layer: ~10.5 kB a piece) stay in the page's hands
        # for its whole run, cached or not: a lease of their bytes for the run (ui.work), taken before the
        # cache entry's lock, so a few tabs' large sets (and second models) are held one tab at a time.
        pieces = _cached(
            ("set_pieces", model_name, clean, budget.MAX_PIECES_PER_SENTENCE),
            lambda: sum(min(n, budget.MAX_PIECES_PER_SENTENCE) for n in enc.piece_counts(clean)),
        )
        lease_for_run(pass_cost(enc, pieces))
    return _cached(key, run)


def set_encoding(model_name: str, clean: tuple[str, ...]) -> Encoding:
    """The encoding of already-cleaned sentences, from the same chunked cache entries target_vectors uses."""
    return concat_encodings([encoding(model_name, chunk) for chunk in _chunks(clean)])


def corpus_stats(model_name: str, corpus_key: str, _sentences: tuple[str, ...]) -> CorpusStats:
    """Per-layer μ, σ, covariance and a token sample of a reference corpus, once per (model, corpus key).

    ``corpus_key`` identifies the corpus (e.g. "builtin-<id>" or a hash of an upload); the sentences
    themselves are not hashed.
    """

    def run() -> CorpusStats:
        enc = encoder(model_name)
        hidden = int(getattr(enc.model.config, "hidden_size", 768))
        with heavy(pass_cost(enc, budget.MAX_CORPUS_PIECES) + 3 * enc.num_hidden_states * hidden * hidden * 8):
            stats = compute_corpus_statistics(enc, _sentences)
            release_memory()  # the corpus's encodings are dropped; their heap goes back to the OS
        return stats

    return _cached(
        ("corpus_stats", model_name, corpus_key),
        run,
        "Running the model over the reference corpus (once per model and corpus)…",
    )


def corpus_cut(model_name: str, corpus_key: str, _sentences: tuple[str, ...]):
    """lib.inputs.corpus.corpus_budget of a reference corpus (the tokenizer only), once per (model, corpus key): what
    :func:`corpus_stats` will keep, known before the model runs, so the page can say it at once."""
    return _cached(
        ("corpus_cut", model_name, corpus_key), lambda: corpus_budget(encoder(model_name), _sentences)
    )


def set_stats(model_name: str, corpus_key: str, _clean: tuple[str, ...]) -> CorpusStats:
    """Statistics of the learner's own (cleaned) sentences, from the encodings the other pages cached."""
    return _cached(("set_stats", model_name, corpus_key), lambda: corpus_statistics(set_encoding(model_name, _clean)))


# --------------------------------------------------------------------------------- "What moves the word"
# One entry holds (num_layers + 1) x words floats and the target's vector: a few kB, kept in the same
# byte-bounded RESULTS cache as every other result.


def occlusion(model_name: str, sentence: str, target: str | None, replacement: str | None):
    """lib.stats.context.occlusion of one sentence (bounded by lib.stats.context.MAX_WORDS / MAX_PIECES), computed once.

    Raises TargetError / ContextError (ValueErrors with a message for the learner); failures are not cached.
    """
    from lib.stats.context import MAX_PIECES, MAX_WORDS
    from lib.stats.context import occlusion as run_occlusion

    def run():
        enc = encoder(model_name)
        pieces = min(enc.piece_counts([sentence])[0], MAX_PIECES)
        words = min(len(sentence.split()), MAX_WORDS) + 1  # one variant per context word, and the original
        with heavy(pass_cost(enc, words * pieces, attention_floats(enc, [pieces]))):  # one sentence a slot
            with _lock:
                ENCODE_CALLS[model_name] += 1
            out = run_occlusion(enc, sentence, target, replacement)
            release_memory()
        return out

    return _cached(("occlusion", model_name, sentence, target, replacement), run, "Masking each word in turn…")


def probe(
    model_name: str,
    sentences: tuple[str, ...],
    senses: tuple[str | None, ...],
    target: str | None,
    vectors,
    *,
    kind: str = "layers",
) -> ProbeResult:
    """lib.stats.probe.probe_layers on the target's vectors (n, K, d), once per (model, sentences, senses, target,
    kind). ``kind`` names the vectors: "layers" for the L + 1 layers, a pooling ("last4", "all") for that
    pooled vector alone (n, 1, d).

    Raises ProbeError (not cached) when the labels cannot be probed. The result is a few kB.
    Computed in a slot of the work queue: on a large set it is seconds of CPU (a logistic regression per layer
    and fold, twice), so it is large work there (:func:`statistic_slot`).
    """

    def run() -> ProbeResult:
        with statistic_slot(vectors):
            return probe_layers(vectors, list(senses))

    return _cached(
        ("probe", model_name, sentences, senses, target) + ((kind,) if kind != "layers" else ()),
        run,
        "Training the sense probe and its shuffled-label control (once per set)…",
    )


def statistic_slot(vectors):
    """A work-queue slot for a statistic of ``vectors`` (n, K, H) that costs CPU rather than bytes (the probe,
    the readout against chance): large work when the set is larger than a chunk of an ordinary class's sets
    (:data:`CHUNK` sentences), so a tab computing it on hundreds of sentences leaves the small lane to
    everyone else's ordinary sets."""
    shape = np.shape(vectors)
    return heavy(8 * int(np.prod(shape)), large=bool(shape) and shape[0] > CHUNK)


class SharedFigure:
    """A plotly figure built once per input and shared by every session (see :func:`shared_figure`).

    ``lock`` serialises the few runs that change its layout (e.g. an outline) just before drawing it.
    """

    def __init__(self, fig) -> None:
        self.fig = fig
        self.lock = threading.Lock()


def _shared_figure_nbytes(shared: SharedFigure) -> int:
    return budget.figure_nbytes(shared.fig)


def shared_figure(kind: str, key: tuple, _build: Callable[[], object]) -> SharedFigure:
    """The figure ``_build()`` returns, built once per (kind, key) for the whole process.

    For charts that do not change with a page's controls: a rerun (a slider moved elsewhere on the page)
    then skips building the figure. ``key`` must name everything the figure is made from (model, sentences,
    target, labels...); ``kind`` names the chart. Draw it with ui.widgets.shared_chart, never mutate it
    elsewhere. The figures live in the same byte-bounded RESULTS cache as every other result, counted by
    lib.serving.budget.figure_nbytes (their arrays, hover text and numbers), so a class's figures cannot grow the
    process past ``CONTEXT_LENS_CACHE_MB`` either.
    """
    return _cached(("figure", kind, key), lambda: SharedFigure(_build()), size=_shared_figure_nbytes)


# --------------------------------------------------------------------------- readouts against chance
def readout_chance(
    model_name: str,
    sentences: tuple[str, ...],
    senses: tuple[str | None, ...],
    target: str | None,
    kind: str,
    vectors,
):
    """lib.stats.chance.readout_chance of ``vectors`` (a few kB), once per set, in the RESULTS cache.

    The key names the vectors instead of hashing them: ``kind`` says which ones they are ("layers" for the
    target's layers plus the pooled ones, "target" for the layers alone), so two views of one set do not
    share an entry.
    """
    from lib.stats.chance import readout_chance as _readout_chance

    def run():
        with statistic_slot(vectors):
            return _readout_chance(vectors, list(senses))

    return _cached(
        ("readout_chance", model_name, sentences, senses, target, kind),
        run,
        "Shuffling the sense labels for the chance band…",
    )


# --------------------------------------------------------------------------- per-page results
# The pages' own results, in the same byte-bounded RESULTS cache as every other result.


def layer_profile(
    model: str, sentences: tuple[str, ...], senses: tuple[str | None, ...], target: str, _tv: TargetVectors
) -> LayerProfile:
    """lib.stats.layer_profile.layer_profile of the set (Layer by layer), keyed by model, sentences, senses, target.

    In the byte-bounded RESULTS cache like every other result (32 MB at 500 sentences), computed in a slot of
    the work queue."""

    def run() -> LayerProfile:
        enc = _tv.encoding
        targets = [sp.token_indices for sp in _tv.spans]
        n = len(targets)
        # a few (L + 1) × n × n float64 matrices, and two (n, L + 1, hidden) sentence vectors ([CLS], mean)
        with heavy(2 * enc.num_hidden_states * n * (n + _tv.vectors.shape[-1]) * 8):
            return _layer_profile(
                _tv.vectors,
                _tv.static,
                list(senses),
                enc.hidden_states,
                other_masks=other_token_masks(enc.special, targets),
                word_masks=other_token_masks(enc.special, [()] * len(targets)),
                tokens=enc.tokens,
                special=enc.special,
                target_indices=targets,
            )

    key = ("layer_profile", model, sentences, senses, target, budget.MAX_PIECES_PER_SENTENCE)
    return _cached(key, run, "Comparing the vectors at every layer…")


def split_counts(model_name: str, sentences: tuple[str, ...]) -> tuple[int, int, int]:
    """lib.stats.evidence.split_word_counts of ``sentences`` by the model's tokenizer (no model pass), once per
    model and sentences: the evidence card's domain check, for the set and for the reference corpus."""
    from lib.stats.evidence import split_word_counts

    return _cached(("split_counts", model_name, sentences), lambda: split_word_counts(encoder(model_name).tokenizer, sentences))


def evidence(key: tuple, compute: Callable[[], object]):
    """The Layer by layer page's evidence card, once per ``key`` (model, sentences, senses, target and the
    chosen representation): choosing its pairs among every pair of a large set costs tens of milliseconds,
    and most reruns (a new pair view, a toggle) do not change it."""
    return _cached(("evidence", *key), compute)


def anisotropy_curves(model_name: str, corpus_key: str, k: int, _stats: CorpusStats) -> dict[str, np.ndarray]:
    """lib.inputs.corpus.anisotropy_curves (Anisotropy), keyed by model, corpus and k: {treatment: (L+1,)}."""
    return _cached(("anisotropy_curves", model_name, corpus_key, k), lambda: _anisotropy_curves(_stats, k))


def _array_key(X: np.ndarray) -> tuple:
    """A cache key for an array's contents: its shape, dtype and a 128-bit hash of its bytes."""
    X = np.ascontiguousarray(X)
    return (X.shape, X.dtype.str, hashlib.blake2b(X.tobytes(), digest_size=16).hexdigest())


def _freeze(result):
    """A shared result with read-only arrays (one object serves every session)."""
    for value in vars(result).values() if dataclasses.is_dataclass(result) else ():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return result


def projection(X: np.ndarray, method: str, dims: int, seed: int = 0) -> Projection:
    """lib.stats.projection.project of X (n, hidden) (Projections), keyed by the array's contents, in RESULTS."""

    def run() -> Projection:
        with heavy(projection_cost(*np.shape(X))):
            return _freeze(project(X, method, dims, seed=seed))

    return _cached(("projection", _array_key(X), method, dims, seed), run)


def projection_check(X: np.ndarray, coords: np.ndarray) -> NeighbourCheck:
    """lib.stats.projection.neighbour_check(X, coords, k=5) (Projections), keyed by both arrays' contents."""

    def run() -> NeighbourCheck:
        with heavy(projection_cost(*np.shape(X))):
            return _freeze(neighbour_check(X, coords, k=5))

    return _cached(("projection_check", _array_key(X), _array_key(coords)), run)


def projection_layers(H: np.ndarray, method: str, progress: Callable[[int, int], None] | None = None):
    """lib.stats.projection.project_layers(H, method, 2) of H (L+1, n, hidden) (Projections), in RESULTS.

    One layer per slot of the work queue (a t-SNE of 500 points is a few seconds): a long request re-enters
    the queue between layers, and stops there when the learner leaves. ``progress(done, total)`` after each.
    """
    _, n, hidden = np.shape(H)

    @contextlib.contextmanager
    def each_layer(layer: int):
        with heavy(projection_cost(n, hidden)):
            yield
        if progress is not None:
            progress(layer + 1, int(np.shape(H)[0]))

    return _cached(
        ("projection_layers", _array_key(H), method),
        lambda: tuple(_freeze(p) for p in project_layers(H, method, 2, step=each_layer)),
    )


# --------------------------------------------------------------------------- the class board
@st.cache_resource(show_spinner=False, max_entries=4)
def board_store(url: str):
    """lib.board.BoardStore at ``url`` (lib.board.default_url()): one engine and its connection pool per process,
    which deletes expired boards every few minutes (BoardStore.start_purging) while the process runs."""
    from lib.board import BoardStore

    store = BoardStore(url)
    store.start_purging()
    return store


def sense_readout(model_name: str, sentences: tuple[str, ...], senses: tuple[str, ...], target: str, vectors):
    """lib.stats.readout.leave_one_out_readout of ``vectors`` (the target's, (n, L + 1, H)), once per set: the
    class board's "nearest sense" of each accepted sentence, shared by the teacher and every student."""
    from lib.stats.readout import leave_one_out_readout

    return _cached(
        ("sense_readout", model_name, sentences, senses, target), lambda: leave_one_out_readout(vectors, list(senses))
    )


def encode_ahead(model_name: str, sentences: tuple[str, ...], target: str) -> None:
    """Encode the sentences not cached yet, in one batch and without a spinner: the class board's queue, every
    refresh, so that accepting them costs a cache lookup. Sentences without the target are left out."""
    clean = clean_sentences(sentences, target)
    if clean and not all(_sentence_key(model_name, s) in RESULTS for s in clean):
        encoding(model_name, clean, spinner=False)


def logit_lens(model_name: str, sentence: str, target: str | None, words: tuple[str, ...], _vectors: np.ndarray):
    """lib.models.lens.logit_lens of the target's vectors ``_vectors`` (K, hidden) in ``sentence``, once per
    (model, sentence, target, words): the output head's 49,152 logits per layer cost a second of CPU."""
    from lib.models.lens import logit_lens as run

    return _cached(
        ("logit_lens", model_name, sentence, target, words),
        lambda: run(encoder(model_name), _vectors, top_k=5, words=words),
        "Reading every layer through the output head…",
    )


# --------------------------------------------------------------------------- fine-tuning (pages/finetune.py)
# A run is keyed by its model and recipe (the recipe names the set by its digest, the task, the split and every
# setting), computed once per process and shared: a class watching the teacher's run waits for that one run
# and follows its epochs as they come (_LiveRun). It trains in a slot of the work queue, costed by
# lib.finetune.cost.run_cost (weights, gradients, optimizer state, activations); the script run that trains is
# the session's one run (Streamlit runs a session's script once at a time), and it stops at the next epoch when
# the learner leaves or changes the input (the progress callback's Streamlit call raises).


class _LiveRun:
    """A run in progress: the epochs reported so far (appended by the training session), and when it ended."""

    def __init__(self) -> None:
        self.history: list = []
        self.done = threading.Event()
        self.result = None


_LIVE: dict[tuple, _LiveRun] = {}
FINETUNE_RUNS: Counter[str] = Counter()  # training runs started, by recipe key (tests: a shared run trains once)


def finetune_prepared(model_name: str, target: str, sentences: tuple[str, ...], senses: tuple[str | None, ...],
                      task: str, heldout: int, split_seed: int):  # fmt: skip
    """lib.finetune.run.prepare_set of the set (split and the pretrained task vectors), once per input.

    ``model_name``: a model with trained weights. Raises FineTuneError (not cached) for a set that cannot be
    split (one sense, a sense with one sentence, unlabelled lines)."""
    from lib.finetune.data import prepare, split_set

    def run():
        split = split_set(target, sentences, senses, heldout=heldout / 100, seed=split_seed)
        tv = target_vectors(model_name, sentences, target)
        return prepare(encoder(model_name), split, task, vectors=tv if len(tv.kept) == len(sentences) else None)

    key = ("finetune_prepared", model_name, target, sentences, senses, task, heldout, split_seed)
    return _cached(key, run, size=lambda p: p.features.nbytes + budget.plain_nbytes(p.split.sentences))


def _result_nbytes(result) -> int:
    """What a FineTuneResult holds of its own: the fine-tuned layers or adapters, the head, the comparison."""
    c = result.comparison
    arrays = 0 if c is None else sum(v.nbytes for v in vars(c).values() if isinstance(v, np.ndarray))
    return int(result.held_bytes + arrays + 4096)


def finetune_run(model_name: str, prepared, recipe, progress: Callable | None = None):
    """lib.finetune.run.run_recipe of ``recipe`` on ``prepared``, once per process (RESULTS) and shared.

    ``progress(report)`` gets every :class:`lib.finetune.train.EpochReport` of the run, from the start, whether
    this session trains it or watches another session train it. A cancelled run (the trainer left) is not
    cached; its watchers start it again. The fine-tuned model is kept openable (lib.finetune.model.keep).
    """
    from lib.finetune.cost import run_cost
    from lib.finetune.model import keep
    from lib.finetune.run import run_recipe

    key = ("finetune_run", model_name, recipe.key)
    while True:
        hit = RESULTS.get(key)
        if hit is not None:
            keep(model_name, hit.run)
            if progress is not None:
                for rep in hit.run.history:
                    progress(rep)
            return hit
        with _lock:
            live = _LIVE.get(key)
            owner = live is None
            if owner:
                live = _LIVE[key] = _LiveRun()
        if owner:
            break
        seen = 0
        while True:  # another session trains this run: follow its epochs
            finished = live.done.wait(0.25)
            new = live.history[seen:]
            seen += len(new)
            for rep in new:
                if progress is not None:
                    progress(rep)
            if progress is None:
                st.empty()  # a Streamlit call: the learner leaving stops the wait here
            if finished:
                break
        if live.result is not None:
            return live.result
        # the trainer left or its run failed: try again (this session may train it now)

    def report(rep):
        live.history.append(rep)
        if progress is not None:
            progress(rep)

    try:
        enc = encoder(model_name)
        # large work whatever its bytes (seconds of CPU): it never takes the slot kept for an ordinary set
        with heavy(run_cost(enc, prepared, recipe), large=True):
            with _lock:
                FINETUNE_RUNS[recipe.key] += 1
            result = run_recipe(enc, prepared, recipe, progress=report)
            release_memory()
        if result.run.stopped != "cancelled":
            RESULTS.put(key, result, _result_nbytes)
            keep(model_name, result.run)
        live.result = result
        return result
    finally:
        live.done.set()
        with _lock:
            _LIVE.pop(key, None)


def finetune_open(model_key_: str, target: str, sentences: tuple[str, ...], senses: tuple[str | None, ...],
                  progress: Callable | None = None) -> None:  # fmt: skip
    """Make a fine-tuned model key (``<id>#finetuned-<recipe>``) openable by :func:`encoder`: train its recipe
    on the set again when this process no longer holds it (deterministic: the same weights).

    Raises FineTuneError when the set is not the one the recipe was trained on (its digest differs)."""
    from lib.finetune.data import FineTuneError, set_digest
    from lib.finetune.model import kept
    from lib.finetune.recipe import Recipe

    key = parse_model_key(model_key_)
    if key.weights != "finetuned" or kept(key.key):
        return
    recipe = Recipe.from_key(str(key.value))
    if set_digest(target, sentences, [str(s) for s in senses]) != recipe.digest:
        raise FineTuneError(
            "This fine-tuned model was trained on other sentences than the ones in use, so it cannot be made "
            "again here: open the link it came from, or fine-tune on these sentences on the Fine-tune page."
        )
    prepared = finetune_prepared(key.base, target, sentences, senses, recipe.task, recipe.heldout, recipe.split_seed)
    finetune_run(key.base, prepared, recipe, progress)


def finetune_seeds(model_name: str, prepared, recipe, seeds: tuple[int, ...], progress: Callable | None = None):
    """lib.finetune.seeds.seed_spread of ``recipe`` under ``seeds``, each run shared with :func:`finetune_run`
    (the run on screen is one of them). ``progress(seed, report)``."""
    from lib.finetune.seeds import seed_spread

    runs = {}
    for s in seeds:
        cb = None if progress is None else (lambda rep, s=s: progress(s, rep))
        runs[int(s)] = finetune_run(model_name, prepared, recipe.with_seed(int(s)), cb).run
    return seed_spread(encoder(model_name), prepared, recipe, seeds, done=runs)
