"""A set's encodings: one model run per distinct sentence, large sets chunk by chunk, the target's vectors.

A set is encoded **without** attention weights (they are num_layers × num_heads × n² floats per sentence);
:func:`sentence_attention` encodes the one or two sentences a page shows with them. The model pass runs in a slot
of the server's work queue (ui/work.py), and a large set's vectors are leased for the page's run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable

import streamlit as st

from lib.inputs.sentences import clean_sentences as _clean_sentences
from lib.models.base import Encoding, TargetVectors, TransformerModel, concat_encodings
from lib.serving import budget
from lib.serving.memory import release_memory
from ui import work
from ui.cache import store
from ui.cache.models import encoder
from ui.cache.store import ENCODE_CALLS, _cached, _lock
from ui.work import attention_floats, heavy, in_script_run, lease_for_run, model_job_cost, pass_cost


def _sentence_key(model_name: str, sentence: str) -> tuple:
    """The store.RESULTS key of one sentence's encoding (read up to the per-sentence cap in force)."""
    return ("sentence", model_name, sentence, budget.MAX_PIECES_PER_SENTENCE)


def _attention_key(model_name: str, sentence: str) -> tuple:
    """The store.RESULTS key of one sentence's encoding **with** attentions (:func:`sentence_attention`)."""
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
        cost = model_job_cost(enc, pieces, attention_floats(enc, pieces) if attentions else 0)
        with heavy(cost):  # the server's work budget (lib.serving.work): waits its turn, with a message
            with _lock:
                ENCODE_CALLS[model_name] += 1
            out = enc.encode(list(new), attentions=attentions, max_tokens=cap, progress=report)
            release_memory()  # torch's temporaries of the forward pass go back to the OS
        for i, s in enumerate(new):
            one = out.subset([i])  # the same arrays, no copy
            if attentions:
                store.RESULTS.put(_attention_key(model_name, s), one)
                one = dataclasses.replace(one, attentions=None)
            fresh[s] = one
            store.RESULTS.put(key(s), one)
        return new  # the batch's entry holds only its sentences' text (counted by plain_nbytes)

    found = {s: store.RESULTS.get(key(s)) for s in dict.fromkeys(sentences)}
    new = tuple(s for s, hit in found.items() if hit is None)
    if new:
        cached = len(found) - len(new)
        report = None if progress is None else (lambda done, _n: progress(cached + done, len(found)))
        shown = spinner and in_script_run()  # a background thread (the warm-up) shows nothing
        with st.spinner("Running the model on your sentences…") if shown else contextlib.nullcontext():
            store.RESULTS.get_or_compute(
                ("encoded", model_name, new, cap), lambda: encode_new(new, report), budget.plain_nbytes
            )
        for s in new:
            found[s] = fresh.get(s) or store.RESULTS.get(key(s))
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
        with heavy(model_job_cost(enc, pieces, attention_floats(enc, pieces))):
            with _lock:
                ENCODE_CALLS[model_name] += 1
            return enc.encode([sentence], attentions=True, max_tokens=cap)

    cap = budget.MAX_PIECES_PER_SENTENCE
    return _cached(_attention_key(model_name, sentence), run)


def clean_sentences(sentences: tuple[str, ...], target: str | None) -> tuple[str, ...]:
    """The sentences as the model sees them (brackets removed). Lines without a target are dropped."""
    return _clean_sentences(sentences, target, bad="drop")


CHUNK = 50  # sentences per model call: large sets are encoded (and cached) chunk by chunk
LEASE_CHECK_CHARS = 2000  # a set of fewer sentences but more characters is weighed in bytes (target_vectors)


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
    if all(_sentence_key(model_name, s) in store.RESULTS for s in clean):
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
    if len(clean) > CHUNK or sum(map(len, clean)) > LEASE_CHECK_CHARS:
        # A large set's vectors (every word piece's, every layer: ~10.5 kB a piece, 70 kB on the decoder) stay
        # in the page's hands for its whole run, cached or not: a lease of their bytes for the run (ui.work),
        # taken before the cache entry's lock, so a few tabs' large sets (and second models) are held one tab at
        # a time. Large in sentences, or in bytes: 27 long sentences at the decoder's budget hold ~0.2 GB.
        pieces = _cached(
            ("set_pieces", model_name, clean, budget.MAX_PIECES_PER_SENTENCE),
            lambda: sum(min(n, budget.MAX_PIECES_PER_SENTENCE) for n in enc.piece_counts(clean)),
        )
        cost = pass_cost(enc, pieces)
        if len(clean) > CHUNK or cost > work.WORK.small_bytes:
            lease_for_run(cost)
    return _cached(key, run)


def set_encoding(model_name: str, clean: tuple[str, ...]) -> Encoding:
    """The encoding of already-cleaned sentences, from the same chunked cache entries target_vectors uses."""
    return concat_encodings([encoding(model_name, chunk) for chunk in _chunks(clean)])


def encode_ahead(model_name: str, sentences: tuple[str, ...], target: str) -> None:
    """Encode the sentences not cached yet, in one batch and without a spinner: the class board's queue, every
    refresh, so that accepting them costs a cache lookup. Sentences without the target are left out."""
    clean = clean_sentences(sentences, target)
    if clean and not all(_sentence_key(model_name, s) in store.RESULTS for s in clean):
        encoding(model_name, clean, spinner=False)

