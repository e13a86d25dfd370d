"""The session's analysis: the current set's target vectors for a page, with every message on the way.

:func:`analysis` is what most pages start from. It reads the shared set (ui.session), says what the budget cut
from it, shows a progress bar while a large set runs through the model (ui.cache, chunk by chunk), drops the
sentences whose target cannot be used (and says which), warns about sentences longer than the model reads,
and stops the page with a clear message when too few sentences remain. With a fine-tuned model in use, the
sentences it was fitted to (its training set) are left out, and the page says so: a separation shown on the
sentences a model was trained to separate measures the training, not the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from lib.inputs.sentences import SentenceSet
from lib.models.encoder import Encoder, TargetError, TargetVectors
from lib.models.keys import parse_model_key
from lib.serving import budget
from ui import cache, session
from ui.widgets import escape_md


@dataclass(frozen=True)
class Analysis:
    """What most pages need: the usable set (aligned with ``vectors``) and the target's vectors."""

    set: SentenceSet
    vectors: TargetVectors
    model: str

    @property
    def encoder(self) -> Encoder:
        """The loaded model (cached once per server)."""
        return cache.encoder(self.model)

    @property
    def key(self) -> tuple:
        """What the vectors are made from (the model, the usable sentences as written, their senses, the target and
        the word-piece cap): the start of the key of every result a page makes from them (ui.cache.computed,
        ui.cache.shared_figure)."""
        return (self.model, self.set.sentences, self.set.senses, self.set.target, budget.MAX_PIECES_PER_SENTENCE)

    def computed(self, kind: str, *view, compute: Callable[[], object]):
        """``compute()`` once per set (:attr:`key`) and ``view`` (whatever else it depends on: a layer, a sentence, a
        switch), found again by every rerun and session (ui.cache.computed)."""
        return cache.computed(kind, (*self.key, *view), compute)

    def figure(self, kind: str, *view, build: Callable[[], object]) -> cache.SharedFigure:
        """The chart ``build()`` returns, built once per set and ``view`` and shared (ui.cache.shared_figure): draw it
        with ui.widgets.chart or layer_chart, which send it as made before."""
        return cache.shared_figure(kind, (*self.key, *view), build)


def usable(model: str, ss: SentenceSet) -> tuple[SentenceSet, TargetVectors]:
    """``ss`` without the sentences whose target cannot be used (each said), and their target vectors from the cache.

    Stops the page with the reason when the target cannot be used at all (a word the model splits, say)."""
    try:
        tv = cache.target_vectors(model, ss.sentences, ss.target)
    except TargetError as err:
        st.error(escape_md(str(err)))
        st.stop()
    if len(tv.kept) < len(ss):
        for msg in tv.problems:
            st.warning(escape_md(msg))
        ss = ss.subset(tv.kept)
    return ss, tv


def _without_fitted(model: str, ss: SentenceSet, tv: TargetVectors) -> tuple[SentenceSet, TargetVectors]:
    """``ss`` without the sentences a fine-tuned ``model`` was fitted to (said in a sentence); as it is for
    any other model."""
    key = parse_model_key(model)
    if key.weights != "finetuned":
        return ss, tv
    from lib.finetune.data import FineTuneError, fitted_indices
    from lib.finetune.recipe import Recipe

    try:
        recipe = Recipe.from_key(str(key.value))
    except FineTuneError:
        return ss, tv
    fitted = fitted_indices(ss.target, ss.sentences, ss.senses, heldout_percent=recipe.heldout,
                            split_seed=recipe.split_seed, digest=recipe.digest)  # fmt: skip
    if not fitted:
        return ss, tv
    fitted_set = set(fitted)
    keep = [i for i in range(len(ss)) if i not in fitted_set]
    st.info(
        f"This model was fine-tuned on {len(fitted)} of these {len(ss)} sentences. They are left out here: this "
        f"page shows only the {len(keep)} sentences it never trained on."
    )
    return usable(model, ss.subset(keep))


def analysis(min_sentences: int = 1) -> Analysis:
    """The current set's target vectors from the cache; shows a clear message and stops the page otherwise."""
    ss = session.sentence_set()
    if len(ss) < min_sentences:
        if len(ss) == 0:
            st.info(
                "There are no usable sentences yet. Pick a preset in the sidebar, or type sentences that "
                "contain the target word (one per line)."
            )
        else:
            st.info(
                f"This view compares sentences, so it needs at least {min_sentences}; the set has {len(ss)}. "
                "Add sentences in the sidebar or pick a preset."
            )
        st.stop()
    model = session.model_name()
    for note in (session.text_cut_note(), session.budget_note()):  # what was cut from the set, and why
        if note:
            st.warning(escape_md(note))
    if len(ss) > cache.CHUNK:
        # said before the model starts (the budget's message above, then this bar), so a large set shows at
        # once what happens to it; the bar shows 0 of n before the model runs and moves after each batch
        bar = st.empty()

        def show(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Running the model: {done} of {total} sentences…")

        cache.encode_in_chunks(model, ss.sentences, ss.target, show)
        bar.empty()
    ss, tv = usable(model, ss)
    ss, tv = _without_fitted(model, ss, tv)
    if len(ss) < min_sentences:  # enough were given (above), so some were left out
        st.info(f"Too few usable sentences remain ({len(ss)}); this view needs {min_sentences}.")
        st.stop()
    if tv.encoding.any_truncated:
        n = sum(tv.encoding.truncated)
        limit = min(cache.encoder(model).max_tokens, budget.MAX_PIECES_PER_SENTENCE)
        st.warning(
            f"{n} sentence{'s are' if n != 1 else ' is'} longer than {limit} word pieces, the most the model "
            f"reads of one sentence here: the model never saw the end of {'them' if n != 1 else 'it'}."
        )
    return Analysis(set=ss, vectors=tv, model=model)
