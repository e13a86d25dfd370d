"""Links made before the controls were declared once still open the same view, and every control read from a link is written back.

Each case is a link as the app wrote it before the change (every URL key of the page, non-default values).
Opening it must set the page's controls to those values, and the URL the page writes (ui.link.sync_url,
read with ``tests.conftest.url_written`` before app.py writes it) must carry the same values, so copying the address bar
gives the same view again. The shared keys (preset, target, text, model, weights, seed, presenter,
toolong) are covered by tests/test_app_shell.py and tests/test_guards_app.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lib.inputs.presets import default_preset
from lib.models.encoder import DEFAULT_MODEL
from tests.conftest import app_test, page_test, seed, url_notes, url_written

pytestmark = pytest.mark.slow

RANDOM0 = f"{DEFAULT_MODEL}#random-0"

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
            "layers_norms": "1",
            "layers_sentence": "2",
            "layers_compare": "1",  # ui.controls.compare_picker: a second model beside the first
            "layers_other": RANDOM0,
        },
        {
            "layers_layer": 3,
            "layers_pooling": "layer",
            "layers_view": "all",
            "layers_adjust": True,
            "layers_pairs": True,
            "layers_reference": True,
            "layers_norms": True,
            "layers_sentence": 2,
            "layers_compare": True,
            "layers_other": RANDOM0,
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
    "pages/finetune.py": (
        {
            "ft_task": "mean",
            "ft_method": "lora",
            "ft_k": "3",
            "ft_layer": "4",
            "ft_rank": "4",
            "ft_lr": "0.0002",
            "ft_hlr": "0.003",
            "ft_epochs": "5",
            "ft_seed": "3",
            "ft_early": "1",
        },
        {
            "ft_task": "mean",
            "ft_method": "lora",
            "ft_k": 3,
            "ft_layer": 4,
            "ft_rank": 4,
            "ft_lr": 0.0002,
            "ft_hlr": 0.003,
            "ft_epochs": 5,
            "ft_seed": 3,
            "ft_early": True,
            "ft_data": "set",  # a link made before the page chose its sentences trained on the sentences in use
        },
    ),
    "pages/context.py": (
        {
            "ctx_sentence": "6",
            "ctx_layer": "4",
            "ctx_replace": "unk",
            "ctx_word": "2",
            "ctx_with": "savings",
        },
        {"ctx_sentence": 6, "ctx_layer": 4, "ctx_replace": "unk", "ctx_word": 2, "ctx_with": "savings"},
    ),
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
    assert not url_notes(at), url_notes(at)  # no key was refused
    for key, value in expected.items():
        assert at.session_state[key] == value, key
    written = url_written(at)
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
from ui import link
PARAMS = [
    link.Param("t_int", "int", 5, lo=0, hi=10),
    link.Param("t_choice", "choice", "x", choices=("x", "y")),
    link.Param("t_bool", "bool", False),
    link.Param("t_float", "float", 0.5, lo=0.0, hi=1.0),
    link.Param("t_text", "text", "", max_chars=4),
    link.Param("t_local", "int", 3, lo=0, hi=9, in_url=False),
    link.Param("t_short", "text", "", omit_default=True),
]
link.init_params(PARAMS)
st.write(repr(tuple(st.session_state[c.key] for c in PARAMS)))
link.sync_params(PARAMS, {"t_bool": False})
st.write(repr(link.page_params()))
"""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_string(script, default_timeout=60)
    at.query_params.update({"t_int": "99", "t_choice": "y", "t_bool": "1", "t_text": "abcdef", "t_local": "7"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # clamped to hi, the link's choice, the link's bool, the default float, cut text; t_local ignores the link
    assert at.markdown[0].value == repr((10, "y", True, 0.5, "abcd", 3, ""))
    written = at.markdown[1].value
    # t_local never goes into the link, t_short not while it is at its default (empty)
    assert written == repr({"t_int": "10", "t_choice": "y", "t_bool": "0", "t_float": "0.5", "t_text": "abcd"})


# ------------------------------------------------------------------------------------------- the view a link opens
# Links as teachers shared them before the controls were declared once, and what the page must show.
BANK = default_preset()


def _bank_sentence(k: int) -> str:
    return BANK.sentence_set().sentences[k - 1]


def _before_target(sentence: str) -> str:
    from lib.models.targets import find_target
    from ui.widgets import escape_md

    return escape_md(sentence[: find_target(sentence, BANK.target).start])


def _md(text: str) -> str:
    from ui.widgets import escape_md

    return escape_md(text)


def _texts(at, *kinds) -> str:
    """The page's text of these kinds, glossary links read as their text ("[layer 0](glossary#layer-0)")."""
    text = "\n".join(str(e.value) for kind in kinds for e in at.get(kind))
    return re.sub(r"\[([^\]]*)\]\(glossary#[^)]*\)", r"\1", text)


def _attention_views():
    yield {"attn_sentence": "3", "attn_layer": "2", "attn_head": "5"}, [
        ("header", "Layer 2, head 5: who looks at whom"),
        ("caption", "Sentence 3 as the model reads it"),
        ("markdown", "The head enlarged above, layer 2, head 5, is row 2, column 5"),
        ("markdown", "In layer 2, mean over heads, apart from itself"),  # attn_target_mean defaults to on
    ]
    yield {"attn_head": "2", "attn_target_mean": "0", "attn_sentence": "2", "attn_compare": "1"}, [
        ("header", "Layer 1, head 2: who looks at whom"),
        ("markdown", "In layer 1, head 2, apart from itself"),
        ("markdown", "“bank” in sentence 2 looks most at"),
        ("markdown", "in sentence 1 at"),
    ]


def _context_views():
    yield {"ctx_sentence": "2", "ctx_layer": "0", "ctx_replace": "delete"}, [
        ("caption", _before_target(_bank_sentence(2))),
        ("markdown", "At layer 0 (input), deleting “"),
    ]
    own = "Herons wait on the quiet bank of the canal."
    yield {"ctx_own": own, "ctx_replace": "unk", "ctx_layer": "5"}, [
        ("caption", _before_target(own)),
        ("markdown", "At layer 5, replacing by [UNK] “"),
    ]
    yield {"ctx_sentence": "6", "ctx_edited": "We spread a blanket on the [bank] and watched the money."}, [
        ("markdown", f"When the sentence becomes “{_md('We spread a blanket on the bank and watched the money.')}”"),
    ]
    yield {"ctx_sentence": "6", "ctx_word": "2", "ctx_with": "savings"}, [
        ("markdown", "becomes “savings”"),
    ]


def _calculator_views():
    yield {"calc_d": "3", "calc_temperature": "2.5"}, [
        ("markdown", "The temperature 2.5 divides each score first: above 1 it flattens the contrast."),
        ("table", "dim 3"),
    ]
    yield {"calc_use_pos": "0", "calc_scale": "1", "calc_causal": "1", "calc_block": "1"}, [
        ("subheader", "Step 1 · Input X = E"),
        ("subheader", "Step 4 · Scale and mask"),
        ("markdown", "The causal mask hides every key after the query"),
        ("header", "5. Residual, LayerNorm and a tiny feed-forward network"),
    ]


def _lesson_views():
    from lib.teaching import lesson

    steps = lesson.STEPS
    yield {"lesson_step": "3", "lesson_done": "5"}, [
        ("header", f"Step 3 of {len(steps)}: {steps[2].title}"),
        ("progress", f"2 of {len(steps) - 1} questions solved"),
    ]
    yield {"lesson_step": "0", "lesson_done": "2"}, [  # clamped to the first step
        ("header", f"Step 1 of {len(steps)}: {steps[0].title}"),
        ("progress", f"1 of {len(steps) - 1} questions solved"),
    ]


VIEWS = [
    *(("pages/attention.py", link, want) for link, want in _attention_views()),
    *(("pages/context.py", link, want) for link, want in _context_views()),
    *(("pages/calculator.py", link, want) for link, want in _calculator_views()),
    *(("pages/lesson.py", link, want) for link, want in _lesson_views()),
]


@pytest.mark.parametrize(
    ("page", "link", "want"), VIEWS, ids=[f"{p.split('/')[1][:-3]}-{k}" for k, (p, _, _) in enumerate(VIEWS)]
)
def test_an_old_link_shows_its_view(page, link, want):
    at = page_test(page, preset=BANK.id)
    for k, v in link.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for kind, fragment in want:
        if kind == "table":
            shown = " ".join(" ".join(map(str, t.value.columns)) for t in at.table)
        elif kind == "progress":
            shown = " ".join(str(p.proto.text) for p in at.get("progress"))
        else:
            shown = _texts(at, kind)
        assert fragment in shown, (kind, fragment, shown[:2000])


def test_seed_starts_a_session_that_does_not_read_the_links_shared_keys():
    """tests.conftest.seed: the tests' public way into a session (no private keys)."""
    import sys

    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    script = """
import streamlit as st
from ui import link, session
ss = session.sentence_set()
st.write(repr((ss.target, session.model_name(), session.presenter(), st.session_state.get("attn_layer"))))
link.Param("attn_layer", "int", 1, lo=1, hi=6).init()
st.write(repr(st.session_state["attn_layer"]))
"""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_string(script, default_timeout=120)
    seed(at, presenter=True, attn_layer=9)
    at.query_params.update({"preset": "apple", "attn_layer": "3"})  # a started session reads neither
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.markdown[0].value == repr((BANK.target, DEFAULT_MODEL, True, 9))
    assert at.markdown[1].value == "6"  # a seeded value is still clamped by its control
    assert url_notes(at) == [] and url_written(at) == {}


def test_a_class_board_link_opens_its_board(tmp_path, monkeypatch):
    """The two links `python -m lib.board create` prints (student: ?room=CODE; teacher: ?room=CODE&key=KEY) open
    the student's and the teacher's view; the room is written back, the teacher key never is."""
    from lib import board as lb

    url = f"sqlite:///{tmp_path / 'boards.sqlite'}"
    monkeypatch.setenv("CONTEXT_LENS_DB", url)
    store = lb.BoardStore(url)
    new = store.create_board("bank", "money, river")
    store.dispose()
    for link, teacher in (({"room": new.board.code}, False), ({"room": new.board.code, "key": new.key}, True)):
        at = page_test("pages/board.py", preset=default_preset().id)
        for k, v in link.items():
            at.query_params[k] = v
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert url_written(at) == {"room": new.board.code}
        assert bool(at.get("button") and any(b.key == "board_delete" for b in at.button)) is teacher
        assert any(b.key == "board_send" for b in at.button) is not teacher


def test_a_logit_lens_link_opens_its_view_and_is_written_back(decoder):
    """The Logit lens page's keys (lens_sentence, lens_words) with the decoder: read, kept, written back."""
    from lib.models import DECODER_MODEL

    at = page_test("pages/lens.py", preset=BANK.id, model=DECODER_MODEL)
    at.query_params.update({"lens_sentence": "3", "lens_words": "river, loan"})
    at.run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    assert not url_notes(at), url_notes(at)
    assert at.session_state["lens_sentence"] == 3 and at.session_state["lens_words"] == "river, loan"
    written = url_written(at)
    assert written.get("lens_sentence") == "3" and written.get("lens_words") == "river, loan"
    assert "Sentence 3" in _texts(at, "caption")


def _bank_recipe(**settings):
    """The recipe of a run on the bank preset, made without training it."""
    from lib.finetune.data import split_set
    from lib.finetune.recipe import Recipe
    from lib.inputs.presets import preset_by_id
    from lib.inputs.sentences import parse_sentence_set

    p = preset_by_id("bank")
    ss = parse_sentence_set(p.text, p.target, preset_id=p.id)
    digest = split_set(ss.target, ss.sentences, ss.senses, seed=0).digest
    return ss, Recipe.make(digest, "top-2", num_layers=6, **settings)


def test_a_fine_tuned_model_link_carries_the_recipe_and_trains_it_again(encoder):
    """``?finetuned=<recipe>`` opens the fine-tuned model on every page: a server that never trained it trains it
    (the link carries no weights), and the weights are those of the same recipe trained outside the app, bit for bit."""
    from lib.finetune.run import finetune
    from lib.models import load_model
    from lib.models.keys import model_key

    ss, recipe = _bank_recipe(epochs=2, seed=7)  # a recipe no other test trains
    key = model_key(DEFAULT_MODEL, "finetuned", recipe.key)
    at = app_test(preset="bank", finetuned=recipe.key).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["cl_model_active"] == key
    assert at.query_params["finetuned"] == recipe.key and "weights" not in at.query_params
    assert "fine-tuned on 6 of the 12 'bank' sentences (left out here), top 2 layers, 2 epochs, seed 7" in " ".join(
        w.value for w in at.sidebar.warning
    ).replace("\\", "")
    opened = dict(load_model(key).model.named_parameters())
    again = finetune(encoder, ss, "top-2", epochs=2, seed=7)
    assert again.recipe.key == recipe.key
    for name, w in again.run.model.named_parameters():
        assert np.array_equal(w.detach().numpy(), opened[name].detach().numpy()), name


def test_a_fine_tuned_model_link_on_other_sentences_says_why_it_cannot_open():
    _, recipe = _bank_recipe(epochs=2, seed=8)
    at = app_test(preset="kiwi", finetuned=recipe.key).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["cl_model_active"] == DEFAULT_MODEL
    assert "trained on other sentences" in " ".join(e.value for e in at.sidebar.error)
    assert "finetuned" not in at.query_params


def test_a_link_to_real_sentences_opens_them_or_says_the_data_is_not_here(monkeypatch, tmp_path):
    """``?preset=coarsewsd-crane`` (the Fine-tune page's default task, opened on every page) opens the same
    sentences on a server that has CoarseWSD-20, and says why not on one that has not (a Docker image)."""
    from lib.inputs import presets, wsd_data

    if presets.data_preset("crane") is not None:
        at = page_test("pages/layers.py")
        at.query_params["preset"] = "coarsewsd-crane"
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state["cl_preset"] == "coarsewsd-crane" and not url_notes(at)
        assert at.session_state["cl_text"] == presets.data_preset("crane").text
    monkeypatch.setattr(wsd_data, "SHARED_DATA", tmp_path)
    presets.data_preset.cache_clear()
    try:
        at = page_test("pages/layers.py")
        at.query_params["preset"] = "coarsewsd-crane"
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state["cl_preset"] == "bank"
        assert any("CoarseWSD-20, which is not on this server" in n for n in url_notes(at))
    finally:
        presets.data_preset.cache_clear()
