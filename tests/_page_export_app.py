"""An AppTest script: runs the page named in session state ``_export_page`` inside ui.page_export.recording and
keeps the file "Download this page" would give in ``_export_html`` and those of the page's own export buttons in
``_export_files`` (AppTest cannot press a download button)."""

import runpy

import streamlit as st

from ui import page_export

with page_export.recording() as rec:
    runpy.run_path(st.session_state["_export_page"], run_name="__page__")
st.session_state["_export_html"] = page_export.build_html(rec, page_export.page_meta())
st.session_state["_export_files"] = {key: make() for key, make in rec.files.items()}  # a page's own buttons
