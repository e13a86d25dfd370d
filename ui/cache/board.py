"""The class board's store: one engine and its connection pool per process."""

from __future__ import annotations

import streamlit as st


@st.cache_resource(show_spinner=False, max_entries=4)
def board_store(url: str):
    """lib.board.BoardStore at ``url`` (lib.board.default_url()): one engine and its connection pool per process,
    which deletes expired boards every few minutes (BoardStore.start_purging) while the process runs."""
    from lib.board import BoardStore

    store = BoardStore(url)
    store.start_purging()
    return store


