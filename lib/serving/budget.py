"""The server's budgets: how much text one set may send through the model, and how many bytes results keep.

A hosted copy serves a whole class from one process, so no single input may take it down:

* **Word pieces.** Each sentence of a set is read up to :data:`MAX_PIECES_PER_SENTENCE` word pieces
  ([CLS] and [SEP] included), and a set up to :data:`MAX_SET_PIECES` word pieces in all
  (``CONTEXT_LENS_MAX_SET_PIECES``, default :data:`DEFAULT_SET_PIECES`); an uploaded reference corpus up to
  :data:`MAX_CORPUS_PIECES`. Whatever is cut is said once
  (:func:`fit_to_budget` returns the message) and the rest is kept. With the default model one word piece
  costs (6 + 1) × 384 float32 = 10.5 kB of hidden states, so a full set of 20,000 holds about 210 MB. Another
  model gets the same bytes (:func:`pieces_for_model`): the decoder keeps 31 × 576 floats a piece (70 kB), so
  it reads 3,010 word pieces of a set and 903 of a corpus.
* **Models.** Loaded models sit in their own byte-bounded :class:`ByteLRU` (``CONTEXT_LENS_MODEL_CACHE_MB``,
  default :data:`DEFAULT_MODEL_CACHE_MB`), each counted by its weights' bytes (:func:`model_nbytes`): a
  fourth model evicts the least recently used one instead of adding to the process.
* **Bytes.** Cached results (encodings, target vectors, statistics, parsed uploads, the pages' profiles,
  shared figures) live in one :class:`ByteLRU` whose budget is ``CONTEXT_LENS_CACHE_MB`` (default
  :data:`DEFAULT_CACHE_MB`): the least recently used entries are dropped when what they hold passes the
  budget. One sizing rule, :func:`sizeof`, measures every entry (arrays, text, lists, frames, figures), so
  nothing is stored uncounted.
* **Lists built from user input** (the lines of a set or the rows of an upload that were left out) keep
  their first :data:`MAX_LISTED` items and a count of the rest, in memory and on screen.
* **Work in flight** (model passes, projections, occlusion) is bounded by :mod:`lib.serving.work`.
* **Failed model names** are remembered in a small :class:`ExpiringDict` (bounded, entries expire), so a
  link cannot grow the server's memory by naming ever new models.

No streamlit here; ``ui/cache/`` wires these into the app.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, fields, is_dataclass

import numpy as np

from lib.serving.hosting import hosted_mode

MAX_PIECES_PER_SENTENCE = 128  # word pieces per sentence of a set, [CLS] and [SEP] included
DEFAULT_SET_PIECES = 20_000  # word pieces per set (a typed, linked or uploaded set, or a reference corpus)
# when CONTEXT_LENS_MAX_SET_PIECES is not set: the 500 sentences the sentence box and an upload accept, at
# CoarseWSD-20's length (median 31-35 word pieces; 500 sentences of "bank", "java" or "apple" are 17,600-
# 19,900). Measured (benchmarks/README.md, a hosted server's memory): 500 such sentences on the Layer by layer page add
# ~360 MB at the peak. The model's time grows with it (the lock is taken per batch of 512 word pieces, so other
# students' runs interleave).
DEFAULT_CACHE_MB = 200  # the process's cache budget when CONTEXT_LENS_CACHE_MB is not set: with the work budget
# (lib.serving.work) a process stayed within 1.2 GB under a hostile crowd, 1.11-1.19 GB (benchmarks/crowd_results.json;
# 1.15-1.20 GB with 250 MB). An ordinary class's sets are ~2 MB of hidden states each.
MAX_LISTED = 20  # problems kept (and shown) per list built from user input; the rest are only counted. A
# 2 MB upload of junk lines listed every one of its ~1 M problems: ~0.46 GB kept per file, ~143 MB sent.


def _positive_env(name: str, default: float, environ: dict[str, str] | None = None) -> float:
    """``environ[name]`` as a positive number, else ``default`` (unset, empty, not a number, or ≤ 0)."""
    env = os.environ if environ is None else environ
    raw = (env.get(name) or "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = default
    return value if value > 0 and value != float("inf") else default


def set_pieces_budget(environ: dict[str, str] | None = None) -> int:
    """Word pieces per set from ``CONTEXT_LENS_MAX_SET_PIECES`` (a positive number), else the default.

    Never below MAX_PIECES_PER_SENTENCE: a set always holds at least one whole sentence.
    """
    return max(MAX_PIECES_PER_SENTENCE, int(_positive_env("CONTEXT_LENS_MAX_SET_PIECES", DEFAULT_SET_PIECES, environ)))


MAX_SET_PIECES = set_pieces_budget()  # read once at import, like the cache budget
REFERENCE_FLOATS_PER_PIECE = 7 * 384  # what the word-piece budgets were measured with: the bundled encoder's
# hidden states, (6 layers + the embeddings) × 384 dims a piece


def floats_per_piece(model) -> int:
    """Floats of hidden states one word piece of ``model`` keeps: (num_layers + 1) × hidden size.

    all-MiniLM-L6-v2: 7 × 384 = 2,688 (10.5 kB); SmolLM2-135M: 31 × 576 = 17,856 (70 kB), 6.6 times as much.
    """
    return int(model.num_hidden_states) * int(model.hidden_size)


def pieces_for_model(pieces: int, model) -> int:
    """A word-piece budget set for the bundled encoder, for ``model``: the same bytes of hidden states.

    ``pieces × 2,688 / floats_per_piece(model)``, never below one sentence (MAX_PIECES_PER_SENTENCE, unless
    ``pieces`` itself is smaller), never above ``pieces`` (a smaller model does not get more than the budget says). The decoder (31 × 576 a piece)
    reads 20,000 → 3,010 word pieces per set and 6,000 → 903 of a reference corpus.
    """
    pieces = int(pieces)
    scaled = pieces * REFERENCE_FLOATS_PER_PIECE // max(1, floats_per_piece(model))
    return max(min(pieces, MAX_PIECES_PER_SENTENCE), min(pieces, scaled))


def set_pieces_for(model, models: int = 1) -> int:
    """Word pieces of a set ``model`` may read when ``models`` models read the set in one run (a comparison: 2)."""
    return max(1, pieces_for_model(MAX_SET_PIECES, model) // max(1, int(models)))
MAX_CORPUS_PIECES = 6_000  # word pieces of an uploaded reference corpus (Anisotropy): its statistics (mean,
# spread, a 384 x 384 covariance per layer) are steady long before that, and the statistics' float64 work on
# every word piece's vectors peaked at 1.46 GB of server memory with a 20,000-piece corpus (benchmarks/README.md)


@dataclass(frozen=True)
class BudgetCut:
    """What of a set fits the word-piece budget.

    kept:           how many sentences (a prefix of the set, in order) are used
    shortened:      indices (among the kept) of sentences read only up to the per-sentence cap
    pieces:         word pieces of the kept sentences after the per-sentence cap
    shortened_note: one plain sentence about the shortened sentences, or ""
    dropped_note:   one plain sentence about the sentences left out, or ""
    """

    kept: int
    shortened: tuple[int, ...]
    pieces: int
    shortened_note: str = ""
    dropped_note: str = ""

    @property
    def message(self) -> str:
        """Everything that was cut, said once ("" when nothing was)."""
        return " ".join(x for x in (self.shortened_note, self.dropped_note) if x)


def fit_to_budget(
    piece_counts: Sequence[int],
    *,
    per_sentence: int | None = None,
    per_set: int | None = None,
    n_sentences: int | None = None,
) -> BudgetCut:
    """Keep the longest prefix of a set whose word pieces (each capped at ``per_sentence``) fit ``per_set``.

    ``piece_counts[i]`` is sentence i's length in word pieces with [CLS] and [SEP]. At least one sentence is
    always kept (it is capped like the others). The caps default to this module's constants, read at call
    time (tests set small ones). ``n_sentences``: the set's number of sentences when ``piece_counts`` covers only
    its first ones (enough of them to pass ``per_set``); by default ``len(piece_counts)``.
    """
    per_sentence = MAX_PIECES_PER_SENTENCE if per_sentence is None else per_sentence
    per_set = MAX_SET_PIECES if per_set is None else per_set
    total, kept, shortened = 0, 0, []
    for i, n in enumerate(piece_counts):
        capped = min(int(n), per_sentence)
        if kept and total + capped > per_set:
            break
        total += capped
        kept += 1
        if n > per_sentence:
            shortened.append(i)
    n_all = len(piece_counts) if n_sentences is None else max(int(n_sentences), len(piece_counts))
    shortened_note = (
        f"{len(shortened)} sentence{'s are' if len(shortened) != 1 else ' is'} longer than {per_sentence} word "
        f"pieces: the model reads only {'their' if len(shortened) != 1 else 'its'} first {per_sentence}."
        if shortened
        else ""
    )
    dropped_note = (
        f"The set is longer than the {per_set:,} word pieces one set may use, so only its first {kept} of "
        f"{n_all} sentences are used; the other {n_all - kept} were left out."
        if kept < n_all
        else ""
    )
    return BudgetCut(kept, tuple(shortened), total, shortened_note, dropped_note)


# --------------------------------------------------------------------------- bytes
DEFAULT_MODEL_CACHE_MB = 480  # models kept loaded at once (CONTEXT_LENS_MODEL_CACHE_MB): the bundled encoder
# (91 MB in float32), its shuffled or random control (91 MB) and the decoder (269 MB in bfloat16) fit together;
# a fourth model (the decoder's control, a folder) evicts the least recently used one, which loads again when asked


def model_cache_bytes(environ: dict[str, str] | None = None) -> int:
    """The loaded models' budget in bytes from ``CONTEXT_LENS_MODEL_CACHE_MB``, else the default."""
    return int(_positive_env("CONTEXT_LENS_MODEL_CACHE_MB", DEFAULT_MODEL_CACHE_MB, environ) * 1024 * 1024)


def model_nbytes(model) -> int:
    """Bytes of a loaded model's weights: every parameter and buffer of ``model.model`` (a torch module), each
    storage once (a decoder's output head tied to its embedding table counts once). No torch import here."""
    module = getattr(model, "model", model)
    seen: set[int] = set()
    total = 0
    for t in [*module.parameters(), *module.buffers()]:
        ptr = t.untyped_storage().data_ptr()
        if ptr in seen:
            continue
        seen.add(ptr)
        total += int(t.untyped_storage().nbytes())
    return total + 64


def cache_budget_bytes(environ: dict[str, str] | None = None) -> int:
    """The cache budget in bytes from ``CONTEXT_LENS_CACHE_MB`` (a positive number), else the default."""
    return int(_positive_env("CONTEXT_LENS_CACHE_MB", DEFAULT_CACHE_MB, environ) * 1024 * 1024)


DEFAULT_MEMORY_MB = 1250  # the resident memory a hosted copy aims to stay under (CONTEXT_LENS_MEMORY_MB): large
# work that would pass it drops cached results first (ui.work.make_room). A container is given 1.5 GB
# (docs/hosting.md); a server holding both models is ~0.96 GB after its warm-up, a decoder set at the budget ~0.2 GB


def memory_limit_bytes(environ: dict[str, str] | None = None) -> int | None:
    """The memory the process aims to stay under, in bytes: ``CONTEXT_LENS_MEMORY_MB`` when set, else the default
    on a hosted copy (``CONTEXT_LENS_MODELS`` set) and no limit (None) on a copy at one's own machine, where a
    larger model alone may pass it and every large job would then empty the cache."""
    env = os.environ if environ is None else environ
    mb = _positive_env("CONTEXT_LENS_MEMORY_MB", 0.0, env) or (DEFAULT_MEMORY_MB if hosted_mode(env) else 0)
    return int(mb * 1024 * 1024) if mb else None


def nbytes(obj, _seen: set[int] | None = None) -> int:
    """Bytes of the numpy arrays reachable from ``obj`` (dataclasses, tuples, lists, dicts), each array once.

    Arrays that are views count their base's bytes once: a conservative upper bound of what ``obj`` keeps
    alive.
    """
    seen = set() if _seen is None else _seen
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if id(base) in seen:
            return 0
        seen.add(id(base))
        return int(base.nbytes)
    if is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name), seen) for f in fields(obj))
    if isinstance(obj, (tuple, list)):
        return sum(nbytes(x, seen) for x in obj)
    if isinstance(obj, dict):
        return sum(nbytes(v, seen) for v in obj.values())
    return 0


def sizeof(obj, _seen: set[int] | None = None) -> int:
    """The one sizing rule of everything the server keeps: approximate bytes held by ``obj``.

    numpy arrays (a view counts its base once), strings and bytes, numbers, lists/tuples/sets/dicts of them,
    frozen result dataclasses (their fields), pandas frames and series (their deep memory use) and plotly
    figures (:func:`figure_nbytes`). Each container and array is counted once. Sizes follow CPython's (a str
    ~49 bytes + its characters, a float 24, a list or dict slot 8-64); any other object counts 64 bytes
    (a lock, a model reference: what it points to is kept elsewhere and counted there).
    The results cache (:class:`ByteLRU`) measures every entry with it, so nothing is stored uncounted.
    """
    seen = set() if _seen is None else _seen
    if isinstance(obj, np.ndarray):
        return nbytes(obj, seen)
    if isinstance(obj, str):
        return 49 + len(obj)
    if isinstance(obj, (bytes, bytearray)):
        return 33 + len(obj)
    if isinstance(obj, (int, float, bool, np.generic)) or obj is None:
        return 24
    if id(obj) in seen:
        return 0
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        seen.add(id(obj))
        if isinstance(obj, dict):
            return 64 + sum(64 + sizeof(k, seen) + sizeof(v, seen) for k, v in obj.items())
        return 56 + sum(8 + sizeof(x, seen) for x in obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        seen.add(id(obj))
        return 64 + sum(sizeof(getattr(obj, f.name), seen) for f in fields(obj))
    memory_usage = getattr(obj, "memory_usage", None)
    if callable(memory_usage) and type(obj).__module__.startswith("pandas"):
        seen.add(id(obj))
        used = memory_usage(deep=True)
        return 64 + int(used.sum() if hasattr(used, "sum") else used)
    if hasattr(obj, "_data") and hasattr(obj, "_layout"):
        seen.add(id(obj))
        return figure_nbytes(obj)
    return 64


plain_nbytes = sizeof  # the name the figure counts were written with


def figure_nbytes(fig) -> int:
    """Approximate bytes a plotly figure holds: its traces' and layout's data (arrays, text, numbers).

    Reads the figure's own storage (``_data``/``_layout``: no copy, unlike ``to_dict``); any other object
    counts as :func:`nbytes` of it. A lazy figure (lib.charts.figures.LazyFigure) also keeps the base64 text
    of its arrays (those that are dict values) once it has been sent: 4/3 of their own bytes more.
    """
    data, layout = getattr(fig, "_data", None), getattr(fig, "_layout", None)
    if data is None and layout is None:
        return nbytes(fig)
    seen: set[int] = set()
    total = sizeof(data, seen) + sizeof(layout, seen)
    if getattr(fig, "_b64", None) is not None:
        total += _array_bytes([data, layout], set()) * 4 // 3
    return total


def _array_bytes(obj, seen: set[int]) -> int:
    """Bytes of the numpy arrays that are dict values in nested dicts and lists of dicts (what a lazy figure
    base64-encodes), each array once, a view counted as its own size. Lists of plain values are skipped."""
    if isinstance(obj, dict):
        total = 0
        for v in obj.values():
            if isinstance(v, np.ndarray):
                if id(v) not in seen:
                    seen.add(id(v))
                    total += int(v.nbytes)
            elif isinstance(v, (dict, list, tuple)):
                total += _array_bytes(v, seen)
        return total
    if isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (dict, list, tuple)):
        return sum(_array_bytes(x, seen) for x in obj)
    return 0


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the bytes its entries hold (:func:`sizeof`).

    ``get_or_compute(key, compute)`` returns the cached value or computes it (one computation per key at a
    time: a second caller waits for the first). After each insertion the least recently used entries are
    dropped until the total is within ``max_bytes``; the newest entry is always kept, even when it alone is
    larger than the budget, so the caller gets its result. ``size`` defaults to :func:`sizeof` (arrays, text,
    lists, frames, figures: nothing is stored uncounted); ``put`` and ``get_or_compute`` take a ``size`` of
    their own for a value that knows its size better.
    """

    def __init__(self, max_bytes: int, size: Callable[[object], int] | None = None):
        self.max_bytes = int(max_bytes)
        self._size = sizeof if size is None else size
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self.total_bytes = 0
        self.evictions = 0
        self._kept: set[Hashable] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, default=None):
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return default
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value, size: Callable[[object], int] | None = None) -> None:
        size = int((size or self._size)(value))
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.total_bytes -= old[1]
            self._entries[key] = (value, size)
            self.total_bytes += size
            while self.total_bytes > self.max_bytes and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.total_bytes -= dropped
                self.evictions += 1

    def make_room(self, nbytes: int) -> int:
        """Drop the least recently used entries until ``nbytes`` have gone (or nothing is left but the entries
        :meth:`keep` names); return the bytes dropped. For work about to hold more than the process can spare
        (ui.work.make_room)."""
        dropped = 0
        with self._lock:
            for key in [k for k in self._entries if k not in self._kept]:
                if dropped >= nbytes:
                    break
                _, size = self._entries.pop(key)
                self.total_bytes -= size
                dropped += size
                self.evictions += 1
        return dropped

    def keep(self, keys) -> None:
        """Spare these keys' entries when making room (their budget still bounds them): the presets a hosted copy
        computed at its start, which every new learner's first charts read."""
        with self._lock:
            self._kept.update(keys)

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._entries)

    def get_or_compute(
        self, key: Hashable, compute: Callable[[], object], size: Callable[[object], int] | None = None
    ):
        missing = object()
        value = self.get(key, missing)
        if value is not missing:
            return value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            value = self.get(key, missing)
            if value is missing:
                value = compute()
                self.put(key, value, size)
            with self._lock:
                self._key_locks.pop(key, None)  # later callers find the value (or start afresh)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.total_bytes = 0


class ExpiringDict:
    """At most ``max_entries`` items, each forgotten ``ttl`` seconds after it was set (oldest dropped first)."""

    def __init__(self, max_entries: int = 64, ttl: float = 600.0, clock: Callable[[], float] = time.monotonic):
        self.max_entries = max_entries
        self.ttl = ttl
        self._clock = clock
        self._items: OrderedDict[Hashable, tuple[float, object]] = OrderedDict()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._items:
            key, (t, _) = next(iter(self._items.items()))
            if now - t < self.ttl:
                break
            self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._items)

    def get(self, key: Hashable, default=None):
        with self._lock:
            self._expire(self._clock())
            hit = self._items.get(key)
            return default if hit is None else hit[1]

    def __contains__(self, key: Hashable) -> bool:
        marker = object()
        return self.get(key, marker) is not marker

    def __setitem__(self, key: Hashable, value) -> None:
        with self._lock:
            now = self._clock()
            self._items.pop(key, None)
            self._items[key] = (now, value)
            self._expire(now)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
