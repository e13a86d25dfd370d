"""Cue before, cue after: a preset's set through the encoder and the decoder side by side (Layer by layer).

Half the preset's sentences name the words that decide the target's sense before it, half only after it. A
decoder reads left to right, so it can separate the senses only in the first half; an encoder reads both ways.
The section sits in an expander that runs only while open: the second model runs on a click, never by itself.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from lib.errors import ContextLensError
from lib.inputs.presets import preset_by_id
from lib.models.facts import described
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL
from lib.stats.direction import cue_gaps, cue_phrase
from ui import cache, controls
from ui.widgets import chart, escape_md, expander_while_open, prose

MODELS = ((DEFAULT_MODEL, "encoder"), (DECODER_MODEL, "decoder"))


def preset_cues(ss) -> list[str | None] | None:
    """Each sentence's cue ("before"/"after") when the set comes from a preset that says so, else None."""
    preset = preset_by_id(ss.preset_id) if ss.preset_id else None
    if preset is None or not preset.cues:
        return None
    cues = preset.cue_of(ss.sentences)
    return cues if any(cues) else None


def open_key(page: str) -> str:
    """The session key of ``page``'s cue expander (True while it is open)."""
    return f"{page}_cue_box"


def is_open(page: str) -> bool:
    """Whether ``page``'s cue section runs this time (known before the page reads its set)."""
    return bool(st.session_state.get(open_key(page)))


def cue_section(page: str, ss, model: str, cues: list[str | None]) -> None:
    """The expander; open, the same set through the encoder and the decoder, side by side: which half does each
    separate? Each model's curves are computed once per set (ui.cache.computed), each chart built once."""
    expander_while_open(
        "Cue before, cue after: the encoder and the decoder side by side",
        lambda: _compare(page, ss, model, cues),
        key=open_key(page),
        icon=":material/compare_arrows:",
    )


def _compare(page: str, ss, model: str, cues: list[str | None]) -> None:
    results = {}
    for name, family in MODELS:
        loaded, err = cache.try_encoder(name) if name != model else (cache.encoder(model), None)
        if loaded is None:
            st.info(f"The {family} is not available here: " + escape_md(err or "it could not be loaded."))
            return
        tv = cache.target_vectors(loaded.name, ss.sentences, ss.target)
        key = (loaded.name, tuple(ss.sentences), tuple(ss.senses), ss.target, tuple(cues))
        try:
            results[family] = cache.computed(
                "cue_gaps",
                key,
                lambda tv=tv: cue_gaps(
                    tv.vectors, [ss.senses[i] or None for i in tv.kept], [cues[i] for i in tv.kept],
                    openings=[sp.sentence[: sp.end] for sp in tv.spans],
                ),  # fmt: skip
            )
        except ContextLensError as err:
            st.info(escape_md(str(err)))
            return
    fig_key = (tuple(ss.sentences), tuple(ss.senses), ss.target, tuple(cues))
    for col, (_, family) in zip(st.columns(2), MODELS, strict=True):
        g = results[family]
        with col:
            chart(
                cache.shared_figure(
                    "cue", (*fig_key, family), lambda g=g, family=family: _figure(ss.target, family, g)
                ),
                key=f"{page}_cue_{family}",
                share=0.5,
                name_model=False,
            )
    prose(cue_phrase(results["encoder"], results["decoder"], escape_md(ss.target),
                     escape_md(described(cache.encoder(DECODER_MODEL)))))  # fmt: skip


def _figure(target: str, family: str, g):
    fig, _ = controls.two_model_figure(  # each model on its own scale: their cosine floors differ
        [(f"cue before “{target}”", g.before, "solid"), ("cue only after", g.after, "dash"),
         ("shuffled senses (95th pct.)", np.maximum(g.before_null, g.after_null), "dot")],
        title=f"The {family}: same − different sense",
        y_title="same − different sense cosine",
        zero_line=True,
    )  # fmt: skip
    return fig
