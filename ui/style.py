"""The app's own CSS: the rules every screen needs, and presenter mode's large type for a projector."""

from __future__ import annotations

import streamlit as st

from ui import session

# Presenter mode: large type for a projector, and every page's main chart in the upper half of a 1280 x 720
# screen (tests/browser/test_browser_screens.py measures it). Sizes are in px on Streamlit's own 16-px root, so
# its rem-based gaps and paddings stay compact; the title and its "About this page" share one row (so do a
# section heading and the expander right after it: the heading leaves the expander's 360 px free), and
# radio options sit side by side.
PRESENTER_CSS = """
<style>
[data-testid="stHeader"] { height: 40px !important; min-height: 40px !important; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding: 44px 2rem 4rem 2rem !important; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 8px !important; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 22px !important; line-height: 1.45 !important; }
h1 { font-size: 34px !important; line-height: 44px !important; padding: 0 !important; }
h2 { font-size: 28px !important; line-height: 32px !important; padding: 0 !important; }
[data-testid="stHeading"] [data-testid="stMarkdownContainer"] { margin-bottom: 0 !important; }
h3 { font-size: 24px !important; padding: 4px 0 0 0 !important; }
/* captions: larger and dark (Streamlit draws them at 60% opacity, which fades away on a projector) */
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 18px !important; color: #222 !important; opacity: 1 !important; }
/* widgets: labels, chosen values, dropdown options, radio options, buttons, expanders */
[data-testid="stWidgetLabel"] p { font-size: 18px !important; }
[data-testid="stSelectbox"] input, [data-testid="stNumberInputField"],
[data-testid="stTextInput"] input, [data-testid="stTextArea"] textarea { font-size: 19px !important; }
[role="listbox"] [role="option"] { font-size: 19px !important; }
[data-testid="stRadio"] label p { font-size: 20px !important; }
[data-testid="stRadio"] [role="radiogroup"] { flex-direction: row !important; flex-wrap: wrap !important; column-gap: 18px !important; }
button p { font-size: 19px !important; }
[data-testid="stMain"] button { min-height: 36px !important; }
[data-testid="stElementContainer"]:has([data-testid="stCheckbox"]) + [data-testid="stElementContainer"]:has([data-testid="stCheckbox"]) { margin-top: -8px !important; }
[data-testid="stExpander"] summary { padding-top: 6px !important; padding-bottom: 6px !important; }
[data-testid="stExpander"] summary p { font-size: 19px !important; }
[data-testid="stProgress"] p { font-size: 18px !important; }
[data-testid="stTableStyledTable"] td, [data-testid="stTableStyledTable"] th { font-size: 18px !important; }
[data-testid="stElementContainer"]:has(h1, h2):has(+ [data-testid="stLayoutWrapper"] > [data-testid="stExpander"]) :is(h1, h2) { padding-right: 360px !important; }
[data-testid="stElementContainer"]:has(h1, h2) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { width: 340px !important; margin-left: auto !important; }
[data-testid="stElementContainer"]:has(h1) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { margin-top: -52px !important; }
[data-testid="stElementContainer"]:has(h2) + [data-testid="stLayoutWrapper"]:has(> [data-testid="stExpander"]) { margin-top: -40px !important; }
</style>
"""


# Always: numbers in heatmap cells that plotly shrank below 9 px to fit a narrow screen are hidden (hover
# still shows each value; lib.charts.fitting.fit_cell_text does the same on the server for the assumed width).
_TINY_CELL_TEXT = ",\n".join(
    f'.js-plotly-plot .heatmap-label text[style*="font-size: {px}px;"]' for px in range(1, 9)
)
BASE_CSS = f"""
<style>
{_TINY_CELL_TEXT} {{ display: none; }}
/* a disabled control's label: dimmed, but still readable (4.5:1 on white; Streamlit draws it at 2.6:1) */
label[data-testid="stWidgetLabel"][disabled] p {{ color: #595959 !important; }}
/* display formulas: no scroll region of their own (keyboard users could not scroll it); smaller on phones */
.katex-display {{ overflow: visible !important; }}
@media (max-width: 640px) {{ .katex-display {{ font-size: 0.85em; }} }}
/* a text area's "Ctrl+Enter" hint and character counter: under the box, not over its last line (a long text
   ran under the counter while it was typed) */
[data-testid="stTextArea"] [data-testid="InputInstructions"] {{ position: static !important; text-align: right; }}
</style>
"""


def apply() -> None:
    """The rules every screen needs, and large type for a projector in presenter mode (static CSS of ours, no
    user text). app.py calls it on every run."""
    st.html(BASE_CSS + (PRESENTER_CSS if session.presenter() else ""))
