"""The app shell (app.py + ui/session.py, ui/link.py, ui/sidebar.py + ui/cache/) in AppTest: sidebar, links in and out, caching.

Only app.py's first run is inspected: AppTest (streamlit 1.67) loses the sidebar's widgets on a rerun
under st.navigation, so reruns are tested on page files (``page_test``).
"""

from __future__ import annotations

import random
import re
import string

import pandas  # noqa: F401  (see test_concurrency: the UMAP warm-up thread must not be the first to import it)
import pytest
from streamlit.testing.v1 import AppTest

from lib.inputs.presets import default_preset, preset_by_id
from lib.inputs.sentences import pack_text, unpack_text
from lib.models.encoder import DEFAULT_MODEL
from tests.conftest import ROOT, app_test, page_test, seed

pytestmark = pytest.mark.slow


def run_app(query: dict[str, str] | None = None) -> AppTest:
    at = app_test(**(query or {})).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def query(at: AppTest) -> dict[str, str]:
    return {k: at.query_params[k] for k in at.query_params}


def test_home_with_the_shared_sidebar():
    at = run_app()
    bank = default_preset()
    assert at.title[0].value == "Context Lens"
    assert at.sidebar.selectbox(key="cl_preset").value == bank.id
    assert at.sidebar.text_input(key="cl_target").value == bank.target
    assert at.sidebar.text_area(key="cl_text").value == bank.text
    assert at.sidebar.text_input(key="cl_model").value == DEFAULT_MODEL
    assert at.sidebar.toggle(key="cl_presenter").value is False
    assert at.get("plotly_chart")
    assert not at.error and not at.sidebar.warning
    caption = " ".join(c.value for c in at.sidebar.caption)
    assert f"{len(bank.rows)} sentences" in caption
    # the address bar holds a link to this view
    assert query(at) == {"preset": bank.id}


def test_preset_link_and_split_word_note():
    at = run_app({"preset": "kiwi"})
    assert at.session_state["cl_preset"] == "kiwi"
    assert at.sidebar.text_area(key="cl_text").value == preset_by_id("kiwi").text
    captions = re.sub(r"\\(.)", r"\1", " ".join(c.value for c in at.caption))  # drop markdown escapes
    assert "(ki + ##wi)" in captions
    assert query(at)["preset"] == "kiwi"


def test_custom_set_link_round_trip():
    text = (
        "money | The bank raised rates.\nmoney | The bank closed early.\n"
        "river | We sat on the river bank.\nriver | Ducks swam by the muddy bank."
    )
    at = run_app({"target": "bank", "text": pack_text(text)})
    assert at.session_state["cl_preset"] == "custom"
    assert at.sidebar.text_area(key="cl_text").value == text
    q = query(at)
    assert q["target"] == "bank"
    assert unpack_text(q["text"]) == text
    assert "preset" not in q
    # a sense-labelled set gets the same/different-sense reading
    assert "same-sense pairs average" in " ".join(m.value for m in at.markdown)


def test_a_hand_typed_plain_text_link_opens_its_sentences_and_is_written_back_packed():
    text = "The bank raised its rates.\nWe sat on the river bank."
    at = run_app({"target": "bank", "text": text})  # what a teacher types: words, not the packed form
    assert not at.exception
    assert at.session_state["cl_preset"] == "custom"
    assert at.sidebar.text_area(key="cl_text").value == text
    assert not any("garbled" in w.value for w in at.sidebar.warning)
    q = query(at)
    assert unpack_text(q["text"]) == text  # the address bar now carries the app's own form


def test_unlabelled_set_suggests_labels():
    text = "The bank raised rates.\nWe sat on the river bank.\nBank on it."
    at = run_app({"target": "bank", "text": pack_text(text)})
    assert "Label your sentences with senses" in " ".join(m.value for m in at.markdown)


def test_presenter_link():
    at = run_app({"presenter": "1"})
    assert at.session_state["cl_presenter"] is True
    assert not [m for m in at.markdown if m.proto.allow_html]  # no unsafe markdown at all
    styles = [h.proto.body for h in at.get("html")]
    assert any("font-size: 22px" in b for b in styles)  # the presenter's large type (our own CSS only)
    assert all(b.strip().startswith("<style>") for b in styles)
    assert query(at).get("presenter") == "1"


def _long_custom_set() -> str:
    rng = random.Random(0)

    def words() -> str:
        return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(9))

    text = "\n".join(f"{words()} bank {words()}." for _ in range(60))
    assert len(pack_text(text)) > 6_000  # random letters do not compress
    return text


def _app_with_set(text: str, target: str, **extra) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    seed(at, text=text, target=target, model=DEFAULT_MODEL, **extra)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_set_too_long_for_a_link_keeps_the_other_settings():
    at = _app_with_set(_long_custom_set(), "bank")
    q = query(at)
    assert q.get("target") == "bank" and "text" not in q


def test_a_set_too_long_for_a_link_says_so_at_once():
    # ui/session.py sets the flag in finish_run(), after sidebar.render() has drawn the caption, so the
    # learner is told only after the next interaction
    at = _app_with_set(_long_custom_set(), "bank")
    assert "too long to put in a link" in " ".join(c.value for c in at.sidebar.caption)


def test_the_too_long_note_goes_away_with_a_short_set():
    # the flag "_cl_too_long_for_url" is set but never cleared: after going back to a short set the
    # sidebar keeps saying the set is too long for a link
    at = _app_with_set(_long_custom_set(), "bank")
    seed(at, text="money | The bank raised rates.\nriver | We sat on the bank.", target="bank")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "text" in query(at)
    assert "too long to put in a link" not in " ".join(c.value for c in at.sidebar.caption)


def test_the_model_runs_once_per_distinct_set():
    from ui import cache

    text = "money | The bank raised its rates today.\nriver | The otters played by the bank all morning."
    at = page_test("pages/home.py", text=text, target="bank")
    before = sum(cache.ENCODE_CALLS.values())
    at.run()
    assert not at.exception
    after_first = sum(cache.ENCODE_CALLS.values())
    assert after_first - before <= 1  # 0 if another test already encoded this set
    at.run()
    at.run()
    assert sum(cache.ENCODE_CALLS.values()) == after_first
    # changing only the target word to another one in the same sentences reuses the encoding too
    seed(at, target="the")
    at.run()
    assert not at.exception
    assert sum(cache.ENCODE_CALLS.values()) == after_first


def test_url_helpers_clamp_and_fall_back():
    """url_int/url_float/url_choice/url_bool on a tiny script: clamped, defaults on garbage, notes."""
    script = """
import streamlit as st
from tests.conftest import seed, url_notes
from ui import link
seed(st.session_state, presenter=False)  # a started session: the link's shared keys are not read
a = link.url_int("t_int", 3, 1, 5)
b = link.url_float("t_float", 0.5, 0.0, 1.0)
c = link.url_choice("t_choice", "x", ["x", "y"])
d = link.url_bool("t_bool", False)
st.write(repr((a, b, c, d)))
st.write(repr(url_notes(st.session_state)))
"""
    import sys

    if str(ROOT) not in sys.path:  # the script imports ui from the repo root
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_string(script, default_timeout=60)
    at.query_params.update({"t_int": "99", "t_float": "nan", "t_choice": "z", "t_bool": "maybe"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.markdown[0].value == repr((5, 0.5, "x", False))
    notes = at.markdown[1].value
    for key in ("t_float", "t_choice", "t_bool"):
        assert key in notes


def test_a_model_that_fails_is_said_under_its_box_and_the_box_goes_back():
    """A link's model that cannot load: the message sits right under the model's box (before the weights and
    the seed), names the name tried and the model still in use, and the box shows that model again."""
    at = run_app({"model": "no-such-org/no-such-model"})
    assert at.session_state["cl_model_active"] == DEFAULT_MODEL
    assert at.sidebar.text_input(key="cl_model").value == DEFAULT_MODEL
    (err,) = [e.value for e in at.sidebar.error]
    from ui.widgets import escape_md

    assert escape_md("no-such-org/no-such-model") in err and "Still using the previous model" in err
    order = [getattr(el, "key", None) or el.type for el in at.sidebar]
    assert order.index("error") < order.index("cl_weights")  # under the box, above the other controls
