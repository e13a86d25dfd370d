"""The evidence card on a page (lib.stats.evidence): its five fields, its table of sentence pairs, CSV and Markdown.

:func:`evidence_section` is an expander that makes and shows the card only while it is open
(ui.widgets.expander_while_open): the card's pairs, its domain check (the tokenizer over the reference corpus) and
its tables cost nothing on a rerun with the expander closed, and its text is not part of the page's prose until
the learner asks for it.
"""

from __future__ import annotations

import streamlit as st

from lib.inputs.corpus import CorpusError
from lib.stats.evidence import evidence_card
from lib.stats.evidence_facts import card_facts
from ui import cache, session
from ui.widgets import escape_md, expander_while_open, prose


def evidence_section(
    page: str, key: tuple, ss, tv, prof, r: int, rep: str, short_rep: str, *, model: str, chance, comparison_notes
) -> None:
    """The expander with the evidence card of the word's vectors at representation ``r`` (named ``rep``, in a
    narrow column ``short_rep``) against layer 0.

    ``key``: what the set's results are made from (ui.analysis.Analysis.key); ``prof``: its LayerProfile;
    ``chance``: its readout against shuffled labels (lib.stats.chance.ReadoutChance) or None;
    ``comparison_notes``: sentences the card's comparison field adds (the page's other checks).
    Widget keys: ``<page>_card_box`` (the expander), ``<page>_card_csv``, ``<page>_card_md``.
    """
    expander_while_open(
        "The evidence card: what these sentences show, and the pairs behind it",
        lambda: _card(page, key, ss, tv, prof, r, rep, short_rep, model, chance, tuple(comparison_notes)),
        key=f"{page}_card_box",
        icon=":material/fact_check:",
    )


def _reference_split(model: str):
    try:
        return cache.split_counts(model, cache.reference_corpus().sentences)
    except CorpusError:  # the reference corpus is missing: the domain check says it cannot compare
        return None


def _card(page, key, ss, tv, prof, r, rep, short_rep, model, chance, comparison_notes) -> None:
    import pandas as pd

    senses = [s or None for s in ss.senses]

    def make():
        facts = card_facts(
            prof,
            tv,
            r,
            model=session.model_display(model),
            chance=chance,
            split=cache.split_counts(model, tuple(ss.clean_sentences)),
            reference_split=_reference_split(model),
            comparison_notes=comparison_notes,
            model_facts=cache.encoder(model),
        )
        return evidence_card(
            prof.vectors[:, 0, :],
            prof.vectors[:, r, :],
            ss.clean_sentences,
            senses,
            target=ss.target,
            first_name="layer 0",
            chosen_name=rep,
            cosines=(prof.cosines[0], prof.cosines[r]),
            facts=facts,
        )

    card = cache.computed("evidence", (*key, r, rep), make)
    fields = card.fields()  # st.table reads Markdown: the set's words are escaped
    st.table(pd.DataFrame({"on your sentences": [escape_md(t) for _, t in fields]}, index=[f for f, _ in fields]))
    if not card.rows:
        return
    rows = card.rows
    marked = set(card.surprising_rows())
    chosen_col = f"cosine at {rep}"
    st.dataframe(
        pd.DataFrame(
            {
                "": ["★" if k in marked else "" for k in range(len(rows))],
                "pair": [f"S{x.i + 1} – S{x.j + 1}" for x in rows],
                "senses": [f"{x.sense_a} / {x.sense_b}" if x.sense_a else "" for x in rows],
                "cosine at layer 0": [x.cosine_first for x in rows],
                chosen_col: [x.cosine_chosen for x in rows],
                "sentence A": [x.sentence_a for x in rows],
                "sentence B": [x.sentence_b for x in rows],
            }
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "cosine at layer 0": st.column_config.NumberColumn(
                "layer 0", help="cosine at the embedding layer", format="%.3f", width="small"
            ),
            chosen_col: st.column_config.NumberColumn(short_rep, help=f"cosine at {rep}", format="%.3f", width="small"),
            "sentence A": st.column_config.TextColumn(width="large"),
            "sentence B": st.column_config.TextColumn(width="large"),
        },
    )
    d1, d2 = st.columns(2)
    stem = f"evidence_{''.join(ch for ch in ss.target if ch.isalnum()) or 'word'}"
    d1.download_button("Download CSV", card.to_csv(), f"{stem}.csv", "text/csv", key=f"{page}_card_csv")
    d2.download_button("Download Markdown", card.to_markdown(), f"{stem}.md", "text/markdown", key=f"{page}_card_md")
    prose(f"Each pair's cosine at layer 0 and at {rep}; ★ the pairs of a surprising result.", caption=True)
