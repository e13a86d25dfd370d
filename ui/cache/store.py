"""The results cache: one byte-bounded LRU for every result of the process, and its small helpers.

Every result (encodings, target vectors, statistics, parsed uploads, the pages' profiles, curves and projections,
shared figures) sits in :data:`RESULTS`, one :class:`lib.serving.budget.ByteLRU` for the whole process, bounded by
what its entries hold (lib.serving.budget.sizeof; ``CONTEXT_LENS_CACHE_MB``, default 200). Results are frozen
dataclasses whose arrays are read-only (:func:`_freeze`), so sharing one object between sessions is safe, and a
warm rerun costs a dictionary lookup.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Callable

import numpy as np
import streamlit as st

from lib.inputs.corpus import CorpusText, load_reference_corpus
from lib.serving import budget
from lib.serving.budget import ByteLRU, cache_budget_bytes
from ui.work import in_script_run, register_room_maker

# How often each model actually ran (by model name): tests and the benchmark read this to prove that a
# rerun with unchanged input did not run the model again.
ENCODE_CALLS: Counter[str] = Counter()
RESULTS = ByteLRU(cache_budget_bytes())  # every cached result of the process, bounded by bytes
register_room_maker(RESULTS.make_room)  # and by the process's memory: large work drops the oldest first (ui.work)
_lock = threading.Lock()
_log = logging.getLogger("context_lens")


def _cached(key: tuple, compute: Callable[[], object], spinner: str | None = None, size=None):
    """``RESULTS.get_or_compute`` with a spinner while a missing entry is computed."""
    hit = RESULTS.get(key)
    if hit is not None:
        return hit
    if spinner is None or not in_script_run():  # a background thread (the warm-up) shows nothing
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


def computed(kind: str, key: tuple, compute: Callable[[], object], spinner: str | None = None):
    """``compute()`` once per (``kind``, ``key``) for the whole process: a page's numbers made from results cached
    already (a statistic of the set's vectors, a sentence's attention summaries, the evidence card), so that a
    rerun with nothing changed finds them instead of computing them again. ``key`` must name everything the
    result is made from (the model, the sentences, their senses, the target, the controls it depends on); a
    result that raises is not kept."""
    return _cached(("computed", kind, *key), compute, spinner)


def frame(kind: str, key: tuple, build: Callable[[], object]):
    """The table ``build()`` returns (a pandas DataFrame) as the Arrow table Streamlit sends, made once per
    (``kind``, ``key``): ``st.table`` and ``st.dataframe`` send an Arrow table as it is, where a DataFrame costs
    its construction and a conversion (~2 ms each) on every rerun. ``key`` names everything the table shows."""

    def run():
        import pyarrow as pa
        from streamlit.dataframe_util import convert_pandas_df_to_arrow_table

        table = convert_pandas_df_to_arrow_table(build())  # Streamlit's own conversion: the bytes sent are the same
        return table if isinstance(table, pa.Table) else pa.Table.from_pandas(table)

    return _cached(("frame", kind, *key), run, size=lambda t: int(t.nbytes) + 512)


def glossary_links(text: str, already: frozenset[str]) -> tuple[str, frozenset[str]]:
    """lib.teaching.glossary.link_terms of ``text`` with the glossary, given the anchors the page linked before:
    (the text with its links, the anchors it linked), once per text and ``already`` (every page's prose, every run:
    ~1 ms each to find the terms)."""
    from lib.teaching.glossary import link_terms, load_glossary

    def run():
        out, linked = link_terms(text, load_glossary(), set(already))
        return out, frozenset(linked)

    return _cached(("glossary", text, already), run)


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


class SharedFigure:
    """A plotly figure built once per input and shared by every session (see :func:`shared_figure`), with what is
    made from it to draw it (:meth:`memo`): the spec sent to the browser for each screen, the figure with a layer
    chart's marks. Neither the figure nor what is made from it is changed once made.
    """

    def __init__(self, fig) -> None:
        self.fig = fig
        self._memo: dict = {}

    def memo(self, key: tuple, make: Callable[[], object]):
        """``make()`` once per ``key`` for this figure (two sessions at once may both make it: the same value)."""
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = make()
        return hit


def _shared_figure_nbytes(shared: SharedFigure) -> int:
    # the figure, and what is made from it to draw it (ui.widgets.chart: the spec sent for a screen or two,
    # which shares the figure's arrays; a layer chart's marked copy): counted as the figure once more
    return 2 * budget.figure_nbytes(shared.fig)


def shared_figure(kind: str, key: tuple, _build: Callable[[], object]) -> SharedFigure:
    """The figure ``_build()`` returns, built once per (kind, key) for the whole process.

    For charts that do not change with a page's controls: a rerun (a slider moved elsewhere on the page)
    then skips building the figure. ``key`` must name everything the figure is made from (model, sentences,
    target, labels...); ``kind`` names the chart. Draw it with ui.widgets.chart or layer_chart, never change it. The figures live in the same byte-bounded RESULTS cache as every other result, counted by
    lib.serving.budget.figure_nbytes (their arrays, hover text and numbers), so a class's figures cannot grow the
    process past ``CONTEXT_LENS_CACHE_MB`` either.
    """
    return _cached(("figure", kind, key), lambda: SharedFigure(_build()), size=_shared_figure_nbytes)


