"""Bring your own sentences: a CSV or TSV file of labelled sentences, checked row by row, made the session's set.

:func:`upload_section` is an expander that runs its content only while it is open (ui.widgets.expander_while_open): a
page that shows it closed pays nothing for it on a rerun, and its help text is not part of the page's prose.
"""

from __future__ import annotations

import streamlit as st

from lib.inputs.upload import FORMAT_HELP, MAX_UPLOAD_MB, UploadError, parse_upload
from ui import cache, session, work
from ui.widgets import escape_md, expander_while_open, prose

EXAMPLE = (
    "sense,sentence\nmoney,The bank approved the loan.\n"
    'river,"We sat on the bank, watching the boats."\nrely,You can [bank] on her.'
)


LARGE_UPLOAD_BYTES = 256 * 1024  # a file this large (~10,000 rows) is read at a lower OS priority (ui.work.heavy_run)


def upload_section(page: str, current_target: str) -> None:
    """The upload expander of ``page`` (its widgets' key prefix): the file, the target word to follow, what was
    read and what was left out, and a button that makes the file's sentences the set of every page.

    Widget keys: ``<page>_upload_box`` (the expander: open or not), ``<page>_upload`` (the file),
    ``<page>_upload_target``, ``<page>_upload_apply``.
    """
    expander_while_open(
        "Bring your own sentences: upload a CSV or TSV file",
        lambda: _upload(page, current_target),
        key=f"{page}_upload_box",
        icon=":material/upload_file:",
    )


def _upload(page: str, current_target: str) -> None:
    import pandas as pd

    prose(FORMAT_HELP + " Bad rows are listed and left out:")
    st.code(EXAMPLE, language="text")
    k_target = f"{page}_upload_target"
    if k_target not in st.session_state:
        st.session_state[k_target] = current_target
    c1, c2 = st.columns([3, 1])
    up = c1.file_uploader(
        "CSV or TSV file", type=["csv", "tsv", "tab", "txt"], key=f"{page}_upload", max_upload_size=MAX_UPLOAD_MB
    )
    target = c2.text_input(
        "Target word",
        key=k_target,
        max_chars=100,
        help="The word to follow in every row; a row may mark another form in [brackets].",
    )
    if up is None:
        return
    if up.size > LARGE_UPLOAD_BYTES:
        work.heavy_run()  # reading a large file is seconds of CPU: a new learner's page goes first
    try:
        res = cache.parsed_upload(
            f"set|{target}|{up.name}", up.getvalue(), lambda data: parse_upload(data, target, up.name)
        )
    except UploadError as err:
        st.error(escape_md(str(err)))
        return
    senses = res.senses
    st.success(
        f"{len(res)} usable sentence{'s' if len(res) != 1 else ''} in {escape_md(up.name)}"
        + (f", senses: {escape_md(', '.join(senses[:8]))}" if senses else ", no sense labels")
        + (f"; {res.left_out:,} row{'s' if res.left_out != 1 else ''} left out (below)." if res.left_out else ".")
    )
    for note in res.notes:
        st.info(escape_md(note))
    if res.problems:  # the first MAX_LISTED of them (lib.inputs.upload), and how many more
        st.dataframe(
            pd.DataFrame({"line": [p.line for p in res.problems], "problem": [p.message for p in res.problems]}),
            hide_index=True,
            width="stretch",
            height=min(300, 36 * len(res.problems) + 40),
        )
        if res.left_out > len(res.problems):
            st.caption(f"The first {len(res.problems)} of {res.left_out:,} rows left out are listed.")
    st.button(
        f"Use these {len(res)} sentences (on every page)",
        key=f"{page}_upload_apply",
        type="primary",
        on_click=session.set_sentences,
        args=(res.to_text(), " ".join(target.split()), f"the {len(res)} sentences uploaded from {up.name}"),
    )
