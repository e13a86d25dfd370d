"""The pages' statistics of a set, each computed once per input in the results cache, in a slot of the work queue."""

from __future__ import annotations

import numpy as np

from lib.inputs.corpus import CorpusStats, compute_corpus_statistics, corpus_budget, corpus_statistics
from lib.inputs.corpus import anisotropy_curves as _anisotropy_curves
from lib.models.base import TargetVectors
from lib.serving import budget
from lib.serving.memory import release_memory
from lib.stats.baseline import other_token_masks
from lib.stats.layer_profile import LayerProfile
from lib.stats.layer_profile import layer_profile as _layer_profile
from lib.stats.probe import ProbeResult, probe_layers
from ui.cache.encodings import CHUNK, set_encoding
from ui.cache.models import encoder
from ui.cache.store import ENCODE_CALLS, _cached, _lock
from ui.work import corpus_cost, heavy, occlusion_cost, profile_cost


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



def corpus_stats(model_name: str, corpus_key: str, _sentences: tuple[str, ...]) -> CorpusStats:
    """Per-layer μ, σ, covariance and a token sample of a reference corpus, once per (model, corpus key).

    ``corpus_key`` identifies the corpus (e.g. "builtin-<id>" or a hash of an upload); the sentences
    themselves are not hashed.
    """

    def run() -> CorpusStats:
        enc = encoder(model_name)
        cut = corpus_cut(model_name, corpus_key, _sentences)  # what the pass will read (the tokenizer only)
        with heavy(corpus_cost(enc, cut.pieces)):
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
    from lib.stats.context import MAX_PIECES, MAX_WORDS, VARIANT_PIECES
    from lib.stats.context import occlusion as run_occlusion

    def run():
        enc = encoder(model_name)
        pieces = min(enc.piece_counts([sentence])[0], MAX_PIECES)
        words = min(len(sentence.split()), MAX_WORDS)  # one variant per context word
        # a long sentence is seconds of CPU (more than a slice of variants): large work, beside the small lane
        large = True if words * pieces > VARIANT_PIECES else None
        with heavy(occlusion_cost(enc, words, pieces), large=large):  # one sentence a slot
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
        with heavy(profile_cost(n, enc.num_hidden_states, _tv.vectors.shape[-1])):
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
    """lib.stats.evidence_facts.split_word_counts of ``sentences`` by the model's tokenizer (no model pass), once per
    model and sentences: the evidence card's domain check, for the set and for the reference corpus."""
    from lib.stats.evidence_facts import split_word_counts

    return _cached(("split_counts", model_name, sentences), lambda: split_word_counts(encoder(model_name).tokenizer, sentences))


def anisotropy_curves(model_name: str, corpus_key: str, k: int, _stats: CorpusStats) -> dict[str, np.ndarray]:
    """lib.inputs.corpus.anisotropy_curves (Anisotropy), keyed by model, corpus and k: {treatment: (L+1,)}."""
    return _cached(("anisotropy_curves", model_name, corpus_key, k), lambda: _anisotropy_curves(_stats, k))


def sense_readout(model_name: str, sentences: tuple[str, ...], senses: tuple[str, ...], target: str, vectors):
    """lib.stats.readout.leave_one_out_readout of ``vectors`` (the target's, (n, L + 1, H)), once per set: the
    class board's "nearest sense" of each accepted sentence, shared by the teacher and every student."""
    from lib.stats.readout import leave_one_out_readout

    return _cached(
        ("sense_readout", model_name, sentences, senses, target), lambda: leave_one_out_readout(vectors, list(senses))
    )


def logit_lens(model_name: str, sentence: str, target: str | None, words: tuple[str, ...], _vectors: np.ndarray):
    """lib.models.lens.logit_lens of the target's vectors ``_vectors`` (K, hidden) in ``sentence``, once per
    (model, sentence, target, words): the output head's 49,152 logits per layer cost a second of CPU. No words:
    it follows the last layer's three top guesses."""
    from lib.models.lens import logit_lens as run

    return _cached(
        ("logit_lens", model_name, sentence, target, words),
        lambda: run(encoder(model_name), _vectors, top_k=5, words=words, follow_top=0 if words else 3),
        "Reading every layer through the output head…",
    )


