"""Context Lens: the entry point. Sets up the page, the shared sidebar and the navigation.

Run with:  streamlit run app.py
Nothing heavy is imported here; the model loads on the first page that needs it (once per server).
"""

from pathlib import Path

import streamlit as st

from ui import state

ROOT = Path(__file__).resolve().parent

PAGES = [
    ("pages/home.py", "Start here", "🏠", True),
    ("pages/layers.py", "Layer by layer", "📈", False),
    ("pages/attention.py", "Attention", "🔦", False),
    ("pages/anisotropy.py", "Anisotropy", "🧭", False),
    ("pages/projections.py", "Projections", "🗺️", False),
    ("pages/calculator.py", "Attention by hand", "🧮", False),
    ("pages/lesson.py", "Guided lesson", "🎓", False),
]

presenter_url = st.query_params.get("presenter") in ("1", "true")
st.set_page_config(
    page_title="Context Lens",
    page_icon="🔎",
    layout="wide",
    initial_sidebar_state="collapsed" if presenter_url else "expanded",
)

state.begin_run()
state.init_session()
pages = [
    st.Page(str(ROOT / path), title=title, icon=icon, default=default)
    for path, title, icon, default in PAGES
    if (ROOT / path).exists()
]
nav = st.navigation(pages)
state.render_sidebar()
state.apply_presenter_style()
try:
    nav.run()
finally:
    state.finish_run()
