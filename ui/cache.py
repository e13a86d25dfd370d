"""The only place with Streamlit caching: the model once per process, encodings per distinct input.

``st.cache_resource`` is used for results as well as the model: encodings are large numpy arrays that
``st.cache_data`` would pickle and copy on every rerun. Our results are frozen dataclasses whose arrays are
read-only, so sharing one object between sessions is safe, and a warm rerun costs a dictionary lookup.
Each cache has a bound on entries so memory stays flat on a hosted copy.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import streamlit as st

from lib.corpus import CorpusStats, compute_corpus_statistics, corpus_statistics
from lib.encoder import (
    DEFAULT_MODEL,
    Encoder,
    Encoding,
    ModelLoadError,
    TargetVectors,
    concat_encodings,
    load_encoder,
)
from lib.memory import release_memory
from lib.targets import TargetError, find_target

# How often each model actually ran (by model name): tests and the benchmark read this to prove that a
# rerun with unchanged input did not run the model again.
ENCODE_CALLS: Counter[str] = Counter()
_failed_models: dict[str, str] = {}
_lock = threading.Lock()


@st.cache_resource(show_spinner="Loading the model (once per server)…", max_entries=3)
def encoder(model_name: str = DEFAULT_MODEL) -> Encoder:
    """The loaded encoder for ``model_name``, shared by every session. Raises ModelLoadError."""
    return load_encoder(model_name)


def try_encoder(model_name: str) -> tuple[Encoder | None, str | None]:
    """(encoder, None) when the model loads, else (None, message). A failed name is not retried."""
    if model_name in _failed_models:
        return None, _failed_models[model_name]
    try:
        return encoder(model_name), None
    except ModelLoadError as err:
        with _lock:
            _failed_models[model_name] = str(err)
        return None, str(err)


@st.cache_resource(show_spinner="Running the model on your sentences…", max_entries=48, ttl=6 * 3600)
def encoding(model_name: str, sentences: tuple[str, ...]) -> Encoding:
    """Every layer's vectors and attentions for ``sentences`` (cleaned text), computed once."""
    with _lock:
        ENCODE_CALLS[model_name] += 1
    out = encoder(model_name).encode(list(sentences))
    release_memory()  # torch's temporaries of the forward pass go back to the OS
    return out


def clean_sentences(sentences: tuple[str, ...], target: str | None) -> tuple[str, ...]:
    """The sentences as the model sees them (brackets removed). Lines without a target are dropped."""
    out = []
    for s in sentences:
        try:
            out.append(find_target(s, target).sentence)
        except TargetError:
            continue
    return tuple(out)


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

    Not cached itself, so it may drive a progress bar; :func:`target_vectors` then finds every chunk in
    the cache.
    """
    clean = clean_sentences(sentences, target)
    done = 0
    for chunk in _chunks(clean):
        encoding(model_name, chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, len(clean))


@st.cache_resource(show_spinner=False, max_entries=48, ttl=6 * 3600)
def target_vectors(model_name: str, sentences: tuple[str, ...], target: str | None) -> TargetVectors:
    """The target's vectors in each sentence (see Encoder.target_vectors), reusing cached encodings.

    Sentences whose target cannot be used are skipped; their messages are in ``.problems`` and ``.kept``
    says which input sentences remain. Changing only the target word does not run the model again. Sets
    larger than CHUNK sentences are encoded (and cached) chunk by chunk.
    """
    parts = [encoding(model_name, chunk) for chunk in _chunks(clean_sentences(sentences, target))]
    merged = concat_encodings(parts) if parts else None
    return encoder(model_name).target_vectors(list(sentences), target, skip_missing=True, encoding=merged)


def set_encoding(model_name: str, clean: tuple[str, ...]) -> Encoding:
    """The encoding of already-cleaned sentences, from the same chunked cache entries target_vectors uses."""
    return concat_encodings([encoding(model_name, chunk) for chunk in _chunks(clean)])


@st.cache_resource(
    show_spinner="Running the model over the reference corpus (once per model and corpus)…",
    max_entries=4,
    ttl=6 * 3600,
)
def corpus_stats(model_name: str, corpus_key: str, _sentences: tuple[str, ...]) -> CorpusStats:
    """Per-layer μ, σ, covariance and a token sample of a reference corpus, once per (model, corpus key).

    ``corpus_key`` identifies the corpus (e.g. "builtin-<id>" or a hash of an upload); the sentences
    themselves are not hashed.
    """
    stats = compute_corpus_statistics(encoder(model_name), _sentences)
    release_memory()  # the corpus's full encoding is dropped; ~230 MB would otherwise stay resident
    return stats


@st.cache_resource(show_spinner=False, max_entries=8, ttl=6 * 3600)
def set_stats(model_name: str, corpus_key: str, _clean: tuple[str, ...]) -> CorpusStats:
    """Statistics of the learner's own (cleaned) sentences, from the encodings the other pages cached."""
    return corpus_statistics(set_encoding(model_name, _clean))


_warm_started = False


def warm_up_in_background() -> None:
    """Once per server process, compile UMAP's numba code in a daemon thread.

    Called by app.py after the first page has rendered, so the warm-up does not compete with the model
    load for the first chart; by the time a learner opens Projections, UMAP is compiled.
    """
    global _warm_started
    with _lock:
        if _warm_started:
            return
        _warm_started = True

    def _run() -> None:
        from lib.projection import warm_up_umap

        WARM_UP["umap_seconds"] = warm_up_umap()
        release_memory()

    import pandas  # noqa: F401  (umap imports pandas; plotly reads sys.modules["pandas"] without the import lock, so a half-imported pandas in the warm-up thread breaks figures other sessions build meanwhile)

    threading.Thread(target=_run, name="context-lens-umap-warmup", daemon=True).start()


WARM_UP: dict[str, float] = {}


# --------------------------------------------------------------------------------- "What moves the word"
# A separate block so the caches above can change (e.g. to a byte budget) without touching this one.
# One entry holds (num_layers + 1) x words floats and the target's vector: a few kB, so 64 entries are small.


@st.cache_resource(show_spinner="Masking each word in turn…", max_entries=64, ttl=6 * 3600)
def occlusion(model_name: str, sentence: str, target: str | None, replacement: str | None):
    """lib.context.occlusion of one sentence (bounded by lib.context.MAX_WORDS / MAX_PIECES), computed once.

    Raises TargetError / ContextError (ValueErrors with a message for the learner); failures are not cached.
    """
    from lib.context import occlusion as run_occlusion

    with _lock:
        ENCODE_CALLS[model_name] += 1
    out = run_occlusion(encoder(model_name), sentence, target, replacement)
    release_memory()
    return out
