"""Context Lens behind Streamlit's ASGI entry: the same app, with its front-end files served compressed.

Run with:  streamlit run serve.py        (the app itself is app.py; `streamlit run app.py` works too)

`streamlit run` finds the ``st.App`` below and runs it with uvicorn. The app, its pages, links and
configuration are exactly those of ``app.py``; the differences are who answers ``/static/...`` (Streamlit's
own JavaScript, CSS and fonts): ui.static_files, compressed once and kept in memory, instead of Streamlit's
uncompressed file reads (see docs/hosting.md for the measured difference), and the class board's signed student
cookie on each page's HTML (ui.student_cookie: a student's caps survive a reload or a new tab). Once the server
has started, a hosted copy computes its presets in the background (ui.startup.warm_presets).
"""

import contextlib
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config, file_util

from ui import startup
from ui.static_files import CompressedStaticFiles
from ui.student_cookie import StudentCookie

startup.start()  # the process's tuning, once, before the first session (app.py's call then does nothing)

_base = (config.get_option("server.baseUrlPath") or "").strip("/")
_static_prefix = f"/{_base}/static/" if _base else "/static/"



@contextlib.asynccontextmanager
async def _lifespan(_app):
    startup.warm_presets()  # a hosted copy only: every preset on every model it serves, in the background
    yield None


app = st.App(
    str(Path(__file__).resolve().parent / "app.py"),
    lifespan=_lifespan,
    middleware=[
        Middleware(CompressedStaticFiles, str(Path(file_util.get_static_dir()) / "static"), prefix=_static_prefix),
        Middleware(StudentCookie, path=f"/{_base}/" if _base else "/"),
    ],
)
