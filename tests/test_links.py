"""Links made before issue 15 still open the same view, and every control read from a link is written back.

Each case is a link as the app wrote it before the change (every URL key of the page, non-default values).
Opening it must set the page's controls to those values, and the URL the page writes (ui.state.sync_url,
held in ``_cl_page_url`` until app.py writes it) must carry the same values, so copying the address bar
gives the same view again. The shared keys (preset, target, text, model, weights, seed, presenter,
toolong) are covered by tests/test_app_shell.py and tests/test_guards_app.py.
"""

from __future__ import annotations

import pytest

from lib.presets import default_preset
from tests.conftest import page_test

pytestmark = pytest.mark.slow

# page -> (link as written before the change, the session values it must give)
OLD_LINKS = {
    "pages/layers.py": (
        {
            "layers_layer": "3",
            "layers_pooling": "layer",
            "layers_view": "all",
            "layers_adjust": "1",
            "layers_pairs": "1",
            "layers_reference": "1",
            "layers_sentence": "2",
        },
        {
            "layers_layer": 3,
            "layers_pooling": "layer",
            "layers_view": "all",
            "layers_adjust": True,
            "layers_pairs": True,
            "layers_reference": True,
            "layers_sentence": 2,
        },
    ),
    "pages/attention.py": (
        {"attn_sentence": "2", "attn_layer": "3", "attn_head": "4", "attn_target_mean": "0", "attn_compare": "1"},
        {"attn_sentence": 2, "attn_layer": 3, "attn_head": 4, "attn_target_mean": False, "attn_compare": 1},
    ),
    "pages/projections.py": (
        {
            "proj_method": "pca",
            "proj_dims": "3",
            "proj_layer": "2",
            "proj_prep": "none",  # "none" has meant the untreated vectors since before the rename
            "proj_k": "2",
            "proj_context": "1",
            "proj_across": "0",
            "proj_seeds": "0",
        },
        {
            "proj_method": "pca",
            "proj_dims": 3,
            "proj_layer": 2,
            "proj_prep": "none",
            "proj_k": 2,
            "proj_context": True,
            "proj_across": False,
            "proj_seeds": False,
        },
    ),
    "pages/calculator.py": (
        {
            "calc_d": "3",
            "calc_use_pos": "0",
            "calc_scale": "1",
            "calc_causal": "1",
            "calc_block": "1",
            "calc_temperature": "2.5",
        },
        {
            "calc_d": 3,
            "calc_use_pos": False,
            "calc_scale": True,
            "calc_causal": True,
            "calc_block": True,
            "calc_temperature": 2.5,
        },
    ),
    "pages/anisotropy.py": (
        {"aniso_corpus": "builtin", "aniso_layer": "2", "aniso_treatment": "whiten", "aniso_k": "3", "aniso_bert": "0"},
        {"aniso_corpus": "builtin", "aniso_layer": 2, "aniso_treatment": "whiten", "aniso_k": 3, "aniso_bert": False},
    ),
    "pages/lesson.py": ({"lesson_step": "2", "lesson_done": "1"}, {"lesson_step": 2, "lesson_done": 1}),
}


def _as_url(value: object) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("page", list(OLD_LINKS), ids=[p.split("/")[1][:-3] for p in OLD_LINKS])
def test_an_old_link_opens_the_same_view_and_is_written_back(page):
    link, expected = OLD_LINKS[page]
    at = page_test(page, preset=default_preset().id)
    for k, v in link.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.session_state["_cl_url_notes"], at.session_state["_cl_url_notes"]  # no key was refused
    for key, value in expected.items():
        assert at.session_state[key] == value, key
    written = at.session_state["_cl_page_url"]
    for key, value in expected.items():
        if page == "pages/lesson.py" and key == "lesson_done":
            continue  # the lesson writes the steps solved in this session, not the link's (see pages/lesson.py)
        assert written.get(key) == _as_url(value), (key, written.get(key))


def test_a_control_declared_once_is_read_clamped_and_written_back():
    import sys

    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    script = """
import streamlit as st
from ui import state
CONTROLS = [
    state.Control("t_int", "int", 5, lo=0, hi=10),
    state.Control("t_choice", "choice", "x", choices=("x", "y")),
    state.Control("t_bool", "bool", False),
    state.Control("t_float", "float", 0.5, lo=0.0, hi=1.0),
    state.Control("t_text", "text", "", max_chars=4),
    state.Control("t_local", "int", 3, lo=0, hi=9, in_url=False),
]
state.init_controls(CONTROLS)
st.write(repr(tuple(st.session_state[c.key] for c in CONTROLS)))
state.sync_controls(CONTROLS, {"t_bool": False})
st.write(repr(st.session_state["_cl_page_url"]))
"""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_string(script, default_timeout=60)
    at.query_params.update({"t_int": "99", "t_choice": "y", "t_bool": "1", "t_text": "abcdef", "t_local": "7"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # clamped to hi, the link's choice, the link's bool, the default float, cut text; t_local ignores the link
    assert at.markdown[0].value == repr((10, "y", True, 0.5, "abcd", 3))
    written = at.markdown[1].value
    assert written == repr({"t_int": "10", "t_choice": "y", "t_bool": "0", "t_float": "0.5", "t_text": "abcd"})
