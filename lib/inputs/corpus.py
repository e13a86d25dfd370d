"""The reference corpus: neutral text whose token vectors give the statistics for the fixes in §5.

Anisotropy is a property of the whole space, so it is measured on many ordinary tokens, not on the
learner's handful of target words: the mean, per-dimension σ and covariance per layer come from every
(non-special) word piece of the corpus, and anisotropy from a sample of *distinct* word pieces (one
occurrence per word piece, so a frequent word like "the" cannot dominate the average).

    >>> from lib.models.encoder import load_encoder
    >>> enc = load_encoder()
    >>> corpus = load_reference_corpus()                  # assets/reference_corpus.txt
    >>> stats = corpus_statistics(enc.encode(list(corpus.sentences[:40]), attentions=False))
    >>> stats.mean.shape == stats.std.shape == (enc.num_hidden_states, enc.hidden_size)   # μ, σ per layer
    True
    >>> len(stats.fits) == enc.num_hidden_states          # a CovarianceFit per layer: μ, Σ in eigen form
    True
    >>> stats.sample.shape[0] == enc.num_hidden_states    # (L + 1, n_sample, hidden) distinct-token vectors
    True

No streamlit here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.errors import ContextLensError
from lib.models.targets import strip_markup
from lib.paths import ASSETS
from lib.stats.geometry import (
    CovarianceFit,
    MassivePeaks,
    MassiveValues,
    anisotropy,
    fit_covariance,
    remove_top_components,
    standardize,
    whiten,
)

DEFAULT_CORPUS_PATH = ASSETS / "reference_corpus.txt"
# A decoder's statistics come from the corpus's first sentences only: it costs ~8-9x the encoder per sentence
# in a batch (benchmarks/decoder_speed.py), so the 381-sentence reference corpus would take it ~15 s of CPU
DECODER_CORPUS_SENTENCES = 24
MAX_SENTENCES = 1000  # an uploaded corpus is cut here (the model runs once over all of it)
MAX_SENTENCE_CHARS = 2_000  # a corpus sentence is cut here before anything tokenizes it: the model reads at
# most lib.serving.budget.MAX_PIECES_PER_SENTENCE (128) word pieces of it anyway. One 2 MB line without a full stop was
# tokenized whole before it was cut (5 s of CPU, +330 MB).
DEFAULT_SAMPLE_SIZE = 500  # distinct word pieces used for the mean cosine: 124,750 pairs
# The four ways of measuring similarity that the Anisotropy page compares (course §5). "none" is the one
# name for untreated vectors everywhere (the Projections page's "proj_prep=none" links use it too).
UNTREATED = "none"
TREATMENTS = {
    UNTREATED: "raw",
    "zscore": "z-scored (§5.1)",
    "whiten": "whitened (§5.2)",
    "topk": "top components removed",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(A-Z0-9])")


class CorpusError(ContextLensError):
    """The corpus cannot be used; the message says what to do."""


@dataclass(frozen=True)
class CorpusText:
    """Sentences ready to encode.

    sentences: one sentence per entry (comments and blank lines removed)
    corpus_id: short hash of the sentences; with the model name it identifies cached statistics
    notes:     messages for the learner, e.g. that a long upload was cut
    """

    sentences: tuple[str, ...]
    corpus_id: str
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.sentences)


def corpus_id(sentences: Sequence[str]) -> str:
    """A short stable hash of the sentences (12 hex digits)."""
    h = hashlib.sha256("\n".join(sentences).encode("utf-8")).hexdigest()
    return h[:12]


def parse_corpus_file(data: bytes) -> tuple[CorpusText, str | None]:
    """An uploaded plain-text file as a corpus (:func:`parse_corpus_text`), and a note when the file was not
    UTF-8 (lib.inputs.upload.decode_text_file). Raises UploadError for a binary file, CorpusError for one without
    sentences."""
    from lib.inputs.upload import decode_text_file

    text, encoding_note = decode_text_file(data)
    return parse_corpus_text(text), encoding_note


def parse_corpus_text(text: str, max_sentences: int = MAX_SENTENCES) -> CorpusText:
    """Plain text -> sentences. Lines starting with '#' are comments; blank lines are skipped; a line
    holding several sentences (a pasted paragraph) is split after '.', '!' or '?'. Square brackets
    (target markup on the sentence-set page) are removed.

    Only the first ``max_sentences`` are kept (the rest are counted), each cut at :data:`MAX_SENTENCE_CHARS`
    characters, so nothing downstream (the tokenizer, the budget's word-piece count) sees more.

    Raises CorpusError when nothing usable remains.
    """
    sentences: list[str] = []
    total = cut = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = strip_markup(line, strict=False)[0]
        for part in _SENTENCE_END.split(line):
            part = " ".join(part.split())
            if not part:
                continue
            total += 1
            if len(sentences) < max_sentences:
                cut += len(part) > MAX_SENTENCE_CHARS
                sentences.append(part[:MAX_SENTENCE_CHARS])
    if not sentences:
        raise CorpusError(
            "The corpus has no sentences. Give plain text with one sentence per line "
            "(lines starting with # are ignored)."
        )
    notes: list[str] = []
    if cut:
        notes.append(
            f"{cut:,} sentence{'s are' if cut != 1 else ' is'} longer than {MAX_SENTENCE_CHARS:,} characters; "
            f"only {'their' if cut != 1 else 'its'} first {MAX_SENTENCE_CHARS:,} are read."
        )
    if total > max_sentences:
        notes.append(f"The corpus has {total:,} sentences; the first {max_sentences:,} are used.")
    return CorpusText(sentences=tuple(sentences), corpus_id=corpus_id(sentences), notes=tuple(notes))


def load_reference_corpus(path: str | Path | None = None) -> CorpusText:
    """The built-in reference corpus (assets/reference_corpus.txt), or another text file."""
    p = Path(path) if path is not None else DEFAULT_CORPUS_PATH
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise CorpusError(f"The reference corpus file {p.name} is missing; reinstall the app.") from err
    return parse_corpus_text(text)


@dataclass(frozen=True)
class CorpusStats:
    """Per-layer statistics of a corpus's token vectors (special tokens such as [CLS]/[SEP] excluded).

    model_name:    the encoder the vectors came from
    n_sentences:   sentences encoded
    n_tokens:      token vectors behind mean/std/fits (all non-special word pieces)
    mean:          (num_layers + 1, hidden) float64, μ per layer
    std:           (num_layers + 1, hidden) float64, σ per layer (population, as in course §5.1)
    fits:          num_layers + 1 CovarianceFit (μ, Σ in eigen form, float32 eigenvectors, whitening shrinkage
                   and note)
    sample:        (num_layers + 1, n_sample, hidden) float32: one occurrence of each of n_sample distinct
                   word pieces; the same occurrences in every layer
    sample_tokens: (n_sample,) the word pieces of `sample`
    mean_norm:     (num_layers + 1,) mean Euclidean length of the token vectors per layer
    notes:         messages for the learner, e.g. that the corpus was cut to the word-piece budget
    massive:       lib.stats.geometry.MassiveValues of the corpus (position 0's largest value, the ordinary
                   word pieces that carry massive values too), None for statistics made without it
    typical_mean, typical_std: (num_hidden_states, hidden) μ and σ per layer without the word pieces that
                   carry massive values (``massive.words``), None when none does: a statistic shown both ways
    sample_massive: (n_sample,) bool, True for a sample word piece that carries massive values
    """

    model_name: str
    n_sentences: int
    n_tokens: int
    mean: np.ndarray
    std: np.ndarray
    fits: tuple[CovarianceFit, ...]
    sample: np.ndarray
    sample_tokens: tuple[str, ...]
    mean_norm: np.ndarray
    notes: tuple[str, ...] = ()
    massive: MassiveValues | None = None
    typical_mean: np.ndarray | None = None
    typical_std: np.ndarray | None = None
    sample_massive: np.ndarray | None = None

    @property
    def n_massive(self) -> int:
        """How many of the corpus's word pieces carry massive values (left out of ``typical_*``)."""
        return 0 if self.massive is None else len(self.massive.words)

    @property
    def num_hidden_states(self) -> int:
        """L + 1 (the embedding output is index 0), as ``Encoder.num_hidden_states``."""
        return int(self.mean.shape[0])

    @property
    def hidden(self) -> int:
        return int(self.mean.shape[1])

    @property
    def variance(self) -> np.ndarray:
        """(num_layers + 1, hidden) σ² per layer and dimension (population)."""
        return self.std**2

    def covariance(self, layer: int) -> np.ndarray:
        """Σ at `layer`, (hidden, hidden)."""
        return self.fits[layer].covariance

    def treat(self, X, layer: int, treatment: str, k: int = 0) -> np.ndarray:
        """Apply one of TREATMENTS to vectors X (n, hidden) of `layer`, with this corpus's statistics.

        "none": X unchanged; "zscore": (x - μ) / σ; "whiten": Σ^(-1/2) (x - μ) (regularized as the fit
        says); "topk": centre and remove the top-k principal directions. Returns float64 (n, hidden).
        """
        if treatment == UNTREATED:
            return np.asarray(X, dtype=np.float64)
        if treatment == "zscore":
            return standardize(X, self.mean[layer], self.std[layer])
        if treatment == "whiten":
            return whiten(X, self.fits[layer])
        if treatment == "topk":
            return remove_top_components(X, k, self.fits[layer])
        raise ValueError(f"Unknown treatment {treatment!r}; choose one of {', '.join(TREATMENTS)}.")


def corpus_statistics(
    encoding,
    *,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    seed: int = 0,
) -> CorpusStats:
    """μ, σ, covariance per layer and a distinct-token sample, from an `lib.models.encoder.Encoding`.

    Special tokens are excluded. The sample takes, for each distinct word piece (by id), one
    occurrence chosen at random (fixed seed); if there are more than `sample_size` distinct pieces, a
    random `sample_size` of them. Raises CorpusError when fewer than two distinct word pieces remain
    (anisotropy compares pairs). Attentions are not needed (an encoding made with attentions=False works).
    """
    tokens = _TokenVectors()
    tokens.add(encoding)
    return tokens.statistics(encoding.model_name, sample_size=sample_size, seed=seed)


class _TokenVectors:
    """The non-special word pieces' vectors of several encodings, kept as float32 (the Encodings are not)."""

    def __init__(self) -> None:
        self.per_sentence: list[np.ndarray] = []  # (L+1, k_i, hidden) float32
        self.ids: list[np.ndarray] = []
        self.tokens: list[str] = []
        self.n_sentences = 0
        self.peaks = MassivePeaks()

    def add(self, encoding) -> None:
        for hs, ids, special, toks in zip(
            encoding.hidden_states, encoding.token_ids, encoding.special, encoding.tokens, strict=True
        ):
            self.n_sentences += 1
            keep = ~np.asarray(special, dtype=bool)
            if len(toks) > 1:
                self.peaks.add(hs, special, toks)
            if not keep.any():
                continue
            self.per_sentence.append(np.asarray(hs)[:, keep, :].astype(np.float32))
            self.ids.append(np.asarray(ids)[keep])
            self.tokens.extend(t for t, k in zip(toks, keep, strict=True) if k)

    def statistics(self, model_name: str, *, sample_size: int, seed: int, notes=()) -> CorpusStats:
        if not self.per_sentence:
            raise CorpusError("The corpus has no words the model could read. Give it some plain sentences.")
        H = np.concatenate(self.per_sentence, axis=1)  # (L+1, n_tokens, hidden) float32
        self.per_sentence = []
        ids = np.concatenate(self.ids)
        num_hidden_states, n_tokens, _ = H.shape

        # one random occurrence of each distinct word piece, then at most sample_size of them
        rng = np.random.default_rng(seed)
        order = rng.permutation(n_tokens)
        _, first = np.unique(ids[order], return_index=True)
        picks = order[first]
        if picks.size < 2:
            raise CorpusError(
                f"The corpus has only {picks.size} distinct word piece; anisotropy compares pairs of different "
                "tokens. Use a longer text."
            )
        if picks.size > sample_size:
            picks = rng.choice(picks, size=sample_size, replace=False)
        picks = np.sort(picks)

        massive = self.peaks.summary() if self.peaks.ordinary else None
        # the word pieces that carry massive values: each one's largest |value| over every layer and dimension
        peak = np.zeros(n_tokens, dtype=np.float32)
        for layer in range(num_hidden_states):
            np.maximum(peak, np.abs(H[layer]).max(axis=1), out=peak)
        is_massive = peak > massive.threshold if massive is not None else np.zeros(n_tokens, dtype=bool)
        typical = ~is_massive if 0 < int(is_massive.sum()) < n_tokens - 1 else None

        # float64 one layer at a time: a whole-corpus float64 copy would double the peak memory
        means, stds, fits, norms, t_means, t_stds = [], [], [], [], [], []
        for layer in range(num_hidden_states):
            X = H[layer].astype(np.float64)  # (n_tokens, hidden)
            means.append(X.mean(axis=0))
            stds.append(X.std(axis=0))
            norms.append(np.linalg.norm(X, axis=1).mean())
            fits.append(fit_covariance(X, float32_vectors=True))  # held in the results cache: half the bytes
            if typical is not None:
                t_means.append(X[typical].mean(axis=0))
                t_stds.append(X[typical].std(axis=0))
        return CorpusStats(
            model_name=model_name,
            n_sentences=self.n_sentences,
            n_tokens=int(n_tokens),
            mean=np.stack(means),
            std=np.stack(stds),
            fits=tuple(fits),
            sample=H[:, picks, :].astype(np.float32),
            sample_tokens=tuple(self.tokens[i] for i in picks),
            mean_norm=np.array(norms),
            notes=tuple(notes),
            massive=massive,
            typical_mean=np.stack(t_means) if typical is not None else None,
            typical_std=np.stack(t_stds) if typical is not None else None,
            sample_massive=is_massive[picks].copy(),
        )


def compute_corpus_statistics(
    encoder,
    corpus: CorpusText | Sequence[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    seed: int = 0,
    chunk: int = 64,
) -> CorpusStats:
    """Encode the corpus with `encoder` and return its statistics.

    The corpus is encoded ``chunk`` sentences at a time without attentions, each sentence read up to
    :data:`lib.serving.budget.MAX_PIECES_PER_SENTENCE` word pieces and the corpus up to
    :data:`lib.serving.budget.MAX_CORPUS_PIECES` (``CorpusStats.notes`` says what was cut). Only the non-special word
    pieces' vectors are kept between chunks; no Encoding is kept.
    """
    from lib.serving.budget import MAX_PIECES_PER_SENTENCE

    sentences = corpus.sentences if isinstance(corpus, CorpusText) else tuple(corpus)
    if not sentences:
        raise CorpusError("The corpus has no sentences.")
    cut = corpus_budget(encoder, sentences, chunk=chunk)
    sentences = sentences[: cut.kept]
    tokens = _TokenVectors()
    for start in range(0, len(sentences), chunk):
        part = list(sentences[start : start + chunk])
        tokens.add(encoder.encode(part, attentions=False, max_tokens=MAX_PIECES_PER_SENTENCE))
        if progress is not None:
            progress(min(start + chunk, len(sentences)), len(sentences))
    notes = (cut.message,) if cut.message else ()
    return tokens.statistics(encoder.name, sample_size=sample_size, seed=seed, notes=notes)


def bounded_corpus(model, sentences: Sequence[str], key: str) -> tuple[tuple[str, ...], str, str | None]:
    """The sentences a model's corpus statistics use, their cache key, and a note for the page (None if uncut).

    An encoder uses them all (the word-piece budget, :func:`corpus_budget`, still applies); a left-to-right
    decoder (``model.family == "decoder"``) the first :data:`DECODER_CORPUS_SENTENCES`, so the page finishes
    in bounded time; the key gains their number, so the cut and the whole never share a cache entry.
    """
    sentences = tuple(sentences)
    n = DECODER_CORPUS_SENTENCES
    if getattr(model, "family", None) != "decoder" or len(sentences) <= n:
        return sentences, key, None
    note = (
        f"This model's statistics come from the corpus's first {n} of {len(sentences):,} sentences (it costs "
        "about seven times the encoder per word piece): a smaller sample, rougher numbers."
    )
    return sentences[:n], f"{key}-first{n}", note


def corpus_budget(encoder, corpus: CorpusText | Sequence[str], *, chunk: int = 64):
    """What of the corpus :func:`compute_corpus_statistics` encodes: a :class:`lib.serving.budget.BudgetCut` (sentences
    kept, those read only up to :data:`lib.serving.budget.MAX_PIECES_PER_SENTENCE` word pieces, and its ``message``).

    Needs only the tokenizer (``encoder.piece_counts``), and only the corpus's first sentences (until the
    budget is full), so a page can say what is cut in a fraction of a second, before the model's pass over
    the rest.
    """
    from lib.serving import budget
    from lib.serving.budget import MAX_PIECES_PER_SENTENCE, fit_to_budget

    sentences = corpus.sentences if isinstance(corpus, CorpusText) else tuple(corpus)
    per_set = budget.pieces_for_model(budget.MAX_CORPUS_PIECES, encoder)  # a decoder's: the same bytes, fewer pieces
    counts = _piece_counts(encoder.piece_counts, sentences, MAX_PIECES_PER_SENTENCE, per_set, chunk)
    return fit_to_budget(counts, per_sentence=MAX_PIECES_PER_SENTENCE, per_set=per_set, n_sentences=len(sentences))


def _piece_counts(count, sentences: Sequence[str], per_sentence: int, per_set: int, chunk: int) -> list[int]:
    """Word pieces ([CLS] and [SEP] included) of the corpus's first sentences, as many as
    :func:`lib.serving.budget.fit_to_budget` needs to decide the cut: tokenized ``chunk`` at a time, until the
    capped pieces pass ``per_set`` (and at least two are counted). A 2 MB upload cut at 6,000 word pieces
    is ~50 sentences read twice (here and by the model), not 1,000 tokenized to be thrown away.
    """
    counts: list[int] = []
    total = 0
    for start in range(0, len(sentences), max(1, chunk)):
        part = list(sentences[start : start + chunk])
        for k in count(part):
            counts.append(k)
            total += min(k, per_sentence)
        if total > per_set and len(counts) >= 2:
            break
    return counts


def anisotropy_curves(stats: CorpusStats, k: int) -> dict[str, np.ndarray]:
    """Mean cosine of the distinct-token sample at every layer under each of TREATMENTS.

    Returns treatment key -> (num_layers + 1,) values in [-1, 1]. The statistics come from the same
    corpus as the sample, so whitening drives the value to about 0 by construction; the interesting
    numbers are the raw curve and how far z-scoring (which only rescales each axis) gets.
    """
    return {
        t: np.array(
            [anisotropy(stats.treat(stats.sample[layer], layer, t, k)) for layer in range(stats.num_hidden_states)]
        )
        for t in TREATMENTS
    }


@dataclass(frozen=True)
class WithoutMassive:
    """One layer's anisotropy statistics with and without the word pieces that carry massive values.

    n: how many of the corpus's word pieces carry them (left out of the ``*_without`` numbers); words: their
    word pieces, largest first; top_dims / top_share: the three dimensions with the largest variance and
    their share of it, over every word piece (``top_dims``, ``top_share``) and without them
    (``top_dims_without``, ``top_share_without``); cosine / cosine_without: the mean cosine of the distinct-piece
    sample, all of it and without them; dim: the dimension that adds most to that mean cosine, with its
    share (``dim_cosine``, ``dim_cosine_without``), mean and σ both ways.
    """

    n: int
    words: tuple[str, ...]
    top_dims: tuple[int, ...]
    top_share: float
    top_dims_without: tuple[int, ...]
    top_share_without: float
    cosine: float
    cosine_without: float
    dim: int
    dim_cosine: float
    dim_cosine_without: float
    dim_mean: float
    dim_std: float
    dim_mean_without: float
    dim_std_without: float


def without_massive(stats: CorpusStats, layer: int) -> WithoutMassive | None:
    """The page's per-layer statistics both ways (:class:`WithoutMassive`), or None when no word piece of the
    corpus carries massive values (then there is only one way to say them)."""
    from lib.stats.geometry import rogue_dimensions, top_variance_share

    if stats.typical_std is None or stats.typical_mean is None or stats.sample_massive is None:
        return None
    keep = ~np.asarray(stats.sample_massive, dtype=bool)
    X = stats.sample[layer]
    every = rogue_dimensions(X, top=3)
    typical = rogue_dimensions(X[keep], top=3) if keep.sum() >= 2 else every
    dims, share = top_variance_share(stats.variance[layer], 3)
    dims2, share2 = top_variance_share(stats.typical_std[layer] ** 2, 3)
    j = int(np.argmax(every.cosine_contribution))
    return WithoutMassive(
        n=stats.n_massive,
        words=tuple(w[2] for w in stats.massive.words) if stats.massive is not None else (),
        top_dims=dims,
        top_share=share,
        top_dims_without=dims2,
        top_share_without=share2,
        cosine=float(every.cosine_contribution.sum()),
        cosine_without=float(typical.cosine_contribution.sum()),
        dim=j,
        dim_cosine=float(every.cosine_contribution[j]),
        dim_cosine_without=float(typical.cosine_contribution[j]),
        dim_mean=float(stats.mean[layer][j]),
        dim_std=float(stats.std[layer][j]),
        dim_mean_without=float(stats.typical_mean[layer][j]),
        dim_std_without=float(stats.typical_std[layer][j]),
    )
