"""Context Lens: the entry point. Sets up the page, the shared sidebar and the navigation.

Run with:  streamlit run app.py
The process is tuned once (ui.startup.start, also called by serve.py); the model loads on the first page that
needs it (once per server).
"""

from pathlib import Path

import streamlit as st

from ui import page_export, session, sidebar, startup, style, timing, work
from ui.widgets import guarded

ROOT = Path(__file__).resolve().parent
ICON = ROOT / "assets" / "icon.png"

PAGES = [
    ("pages/home.py", "Start here", ":material/home:", True),
    ("pages/layers.py", "Layer by layer", ":material/stacked_line_chart:", False),
    ("pages/attention.py", "Attention", ":material/visibility:", False),
    ("pages/context.py", "What moves the word", ":material/swap_horiz:", False),
    ("pages/anisotropy.py", "Anisotropy", ":material/explore:", False),
    ("pages/lens.py", "Logit lens", ":material/search:", False),
    ("pages/projections.py", "Projections", ":material/scatter_plot:", False),
    ("pages/finetune.py", "Fine-tune", ":material/model_training:", False),
    ("pages/calculator.py", "Attention by hand", ":material/calculate:", False),
    ("pages/lesson.py", "Guided lesson", ":material/school:", False),
    ("pages/board.py", "Class board", ":material/groups:", False),
    ("pages/glossary.py", "Glossary", ":material/menu_book:", False),
]

startup.start()  # once per process (serve.py has done it already when it is the entry)
_timer = timing.start()
presenter_url = st.query_params.get("presenter") in ("1", "true")
st.set_page_config(
    page_title="Context Lens",
    page_icon=str(ICON),  # a file of the app's own: a :material/…: icon makes the browser fetch it from Google
    layout="wide",
    initial_sidebar_state="collapsed" if presenter_url else "auto",  # "auto": collapsed on a phone
)

session.begin_run()
session.init_session()
pages = [
    st.Page(str(ROOT / path), title=title, icon=icon, default=default)
    for path, title, icon, default in PAGES
    if (ROOT / path).exists()
]
nav = st.navigation(pages)
with work.page_run():  # the work queue counts this run while it computes outside its jobs (ui/work.py)
    sidebar.render()
    style.apply()
    try:
        with page_export.recording() as shown:  # what the page shows, for its "Download this page" button
            guarded(nav.run)  # the page edge: a bug is logged, the learner reads a message, never a traceback
        page_export.offer(shown)
    finally:
        work.end_run()  # a large run's garbage collected, then its leases given back (ui/work.py)
        session.finish_run()
        startup.freeze_heap()  # once the model (and later UMAP) is loaded: full collections skip those objects
        timing.stop(_timer, nav.url_path)
