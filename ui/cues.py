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
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL
from lib.stats.direction import cue_gaps
from ui import cache, controls
from ui.widgets import chart, escape_md, prose

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
    box = st.expander(
        "Cue before, cue after: the encoder and the decoder side by side",
        icon=":material/compare_arrows:",
        key=open_key(page),
        on_change="rerun",
    )
    with box:
        if box.open:
            _compare(page, ss, model, cues)


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
                lambda tv=tv: cue_gaps(tv.vectors, [ss.senses[i] or None for i in tv.kept], [cues[i] for i in tv.kept]),
            )
        except ContextLensError as err:
            st.info(escape_md(str(err)))
            return
    every = np.concatenate([np.r_[g.before, g.after] for g in results.values()])
    pad = 0.05 * float(every.max() - every.min())
    y_range = (float(every.min()) - pad, float(every.max()) + pad)  # one scale: the two charts compare by eye
    fig_key = (tuple(ss.sentences), tuple(ss.senses), ss.target, tuple(cues), y_range)
    for col, (_, family) in zip(st.columns(2), MODELS, strict=True):
        g = results[family]
        with col:
            chart(
                cache.shared_figure(
                    "cue", (*fig_key, family), lambda g=g, family=family: _figure(ss.target, family, g, y_range)
                ),
                key=f"{page}_cue_{family}",
                share=0.5,
                name_model=False,
            )
    e, d = results["encoder"], results["decoder"]
    verdict = (
        "The decoder separates the senses only when the cue comes first; the encoder separates both halves."
        if d.separates_before and not d.separates_after and e.separates_before and e.separates_after
        else "Here the halves do not split as the course expects; look at the curves."
    )
    prose(
        f"Half the {e.n_before + e.n_after} sentences name the cue **before** “{escape_md(ss.target)}”, half only "
        "**after** it, with the same openings for both senses. Same − different sense cosine: **encoder**, cue "
        f"before peaks at {_peak(e.before)}, cue after at {_peak(e.after)}; **decoder** (a 4-bit copy of SmolLM2), "
        f"cue before peaks at {_peak(d.before)}, cue after stays between {d.after.min():+.2f} and "
        f"{d.after.max():+.2f} at every layer. **{verdict}** Reading left to right, the decoder makes the "
        "word's vector before it reads what follows."
    )


def _figure(target: str, family: str, g, y_range: tuple[float, float]):
    fig, _ = controls.two_model_figure(
        [(f"cue before “{target}”", g.before, "solid"), ("cue only after", g.after, "dash")],
        title=f"The {family}: same − different sense",
        y_title="same − different sense cosine",
        zero_line=True,
        y_range=y_range,
    )
    return fig


def _peak(gap) -> str:
    k = int(np.argmax(gap))
    return f"{gap[k]:+.2f} at layer {k}"
