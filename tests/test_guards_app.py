"""The input budget and the learner's text, in the app: small caps so the guards trip on small sets.

A link, a paste and an upload over the word-piece budget each give one plain message and keep the
sentences that fit (a chart is still drawn); picking a preset keeps the learner's own sentences one click
away; a set too long for a link says so to whoever opens the link.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from lib.inputs.presets import default_preset, load_presets
from lib.inputs.sentences import pack_text
from lib.models.encoder import DEFAULT_MODEL
from lib.serving import budget
from tests.conftest import ROOT, page_test, seed
from ui import session

pytestmark = pytest.mark.slow

SET_CAP = 90  # word pieces per set in these tests (each sentence below is 10-11 with [CLS] and [SEP])
SENTENCES = [f"{'money' if k % 2 else 'river'} | The bank number {k} opened early." for k in range(20)]
TEXT = "\n".join(SENTENCES)


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(budget, "MAX_SET_PIECES", SET_CAP)


def _expected_kept(encoder) -> int:
    clean = [s.split("|", 1)[1].strip() for s in SENTENCES]
    counts = [len(x) for x in encoder.tokenizer(clean)["input_ids"]]
    kept = budget.fit_to_budget(counts, per_set=SET_CAP).kept
    assert 2 <= kept < len(SENTENCES)
    return kept


def _warnings(at: AppTest) -> str:
    return "\n".join(re.sub(r"\\(.)", r"\1", str(w.value)) for w in at.warning)


def _assert_cut_said_once_and_rest_kept(at: AppTest, kept: int) -> None:
    assert not at.exception, [e.value for e in at.exception]
    msg = f"only its first {kept} of {len(SENTENCES)} sentences are used"
    assert _warnings(at).count(msg) == 1, _warnings(at)
    assert at.get("plotly_chart"), "the sentences that fit are still shown"


def _app() -> AppTest:
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)


def test_a_link_over_budget_says_so_and_keeps_the_rest(small_budget, encoder):
    at = _app()
    at.query_params["target"] = "bank"
    at.query_params["text"] = pack_text(TEXT)
    at.run()
    _assert_cut_said_once_and_rest_kept(at, _expected_kept(encoder))
    assert f"“bank” in {_expected_kept(encoder)} sentences" in " ".join(s.value for s in at.subheader)


def test_a_paste_over_budget_says_so_and_keeps_the_rest(small_budget, encoder):
    at = page_test("pages/home.py", text=TEXT, target="bank").run()
    _assert_cut_said_once_and_rest_kept(at, _expected_kept(encoder))


def test_an_upload_over_budget_says_so_and_keeps_the_rest(small_budget, encoder):
    at = page_test("pages/layers.py", preset=default_preset().id, layers_upload_box=True).run()
    csv = "sense,sentence\n" + "\n".join(",".join(x.strip() for x in s.split("|")) for s in SENTENCES)
    at.file_uploader(key="layers_upload").set_value(("many.csv", csv.encode(), "text/csv")).run()
    at.button(key="layers_upload_apply").click().run()
    _assert_cut_said_once_and_rest_kept(at, _expected_kept(encoder))


@pytest.mark.parametrize("page, key", [("pages/layers.py", "layers_compare"), ("pages/anisotropy.py", "aniso_compare")])
def test_a_comparison_reads_half_the_budget_with_each_model_and_says_why(small_budget, encoder, page, key):
    """Two models reading one set hold what one set alone holds: each reads half the word-piece budget."""
    clean = [s.split("|", 1)[1].strip() for s in SENTENCES]
    counts = [len(x) for x in encoder.tokenizer(clean)["input_ids"]]
    half = budget.fit_to_budget(counts, per_set=SET_CAP // 2).kept
    assert 2 <= half < _expected_kept(encoder)
    at = page_test(page, text=TEXT, target="bank", **({"aniso_corpus": "set"} if "aniso" in page else {}))
    at.query_params[key] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = _warnings(at)
    assert said.count(f"only its first {half} of {len(SENTENCES)} sentences are used") == 1, said
    assert "With a second model on, each model reads at most 45 word pieces of the set (half of the 90 one" in said
    assert at.get("plotly_chart")
    at.toggle(key=key).set_value(False).run()  # one model again: the whole budget
    said = _warnings(at)
    assert f"only its first {_expected_kept(encoder)} of" in said and "a second model on" not in said


def test_long_sentences_are_read_up_to_the_cap_and_said_once(monkeypatch):
    monkeypatch.setattr(budget, "MAX_PIECES_PER_SENTENCE", 12)
    long = "The bank " + "by the long and winding river " * 6 + "opened."
    at = page_test("pages/home.py", text=f"{long}\nThe bank closed.\nWe sat on the bank.", target="bank").run()
    assert not at.exception
    assert _warnings(at).count("1 sentence is longer than 12 word pieces") == 1
    assert at.get("plotly_chart")


# ------------------------------------------------------------------------------------- the learner's text
def _sidebar_app() -> AppTest:
    def script():
        from ui import session, sidebar

        session.init_session()
        sidebar.render()
        session.finish_run()

    return AppTest.from_function(script, default_timeout=300)


def test_picking_a_preset_keeps_my_sentences_one_click_away():
    mine = "money | My bank gave me a loan.\nriver | The bank was muddy."
    at = _sidebar_app()
    seed(at, text=mine, target="bank", model=DEFAULT_MODEL)
    at.run()
    assert not at.exception and not [b for b in at.button if b.key == "cl_back_to_own"]
    other = next(p for p in load_presets() if p.text != mine)
    at.selectbox(key="cl_preset").set_value(other.id).run()
    assert at.session_state["cl_text"] == other.text
    at.button(key="cl_back_to_own").click().run()
    assert at.session_state["cl_text"] == mine and at.session_state["cl_target"] == "bank"
    assert at.session_state["cl_preset"] == "custom"
    assert not [b for b in at.button if b.key == "cl_back_to_own"]  # nothing left to go back to


def test_sentence_box_has_max_chars():
    from lib.inputs.sentences import MAX_TEXT_CHARS

    at = _sidebar_app().run()
    assert at.text_area(key="cl_text").max_chars == MAX_TEXT_CHARS


def test_a_set_too_long_for_a_link_marks_the_link_and_the_link_says_so(monkeypatch):
    monkeypatch.setattr(session, "MAX_PACKED_IN_URL", 20)
    at = _sidebar_app()
    seed(at, text=TEXT, target="bank", model=DEFAULT_MODEL)
    at.run()
    assert at.query_params.get("toolong") in ("1", ["1"]) and "text" not in at.query_params
    # whoever opens that link is told, instead of silently getting the default preset
    opened = _sidebar_app()
    opened.query_params["target"] = "bank"
    opened.query_params["toolong"] = "1"
    opened.run()
    notes = " ".join(w.value for w in opened.sidebar.warning)
    assert "too long to travel in a link" in notes
    assert opened.session_state["cl_preset"] == default_preset().id


def test_an_upload_longer_than_the_sentence_box_keeps_whole_lines_and_says_so(monkeypatch):
    monkeypatch.setattr(session, "MAX_TEXT_CHARS", 400)
    at = page_test("pages/layers.py", preset=default_preset().id, layers_upload_box=True).run()
    rows = [f"river,The bank {k} of the wide and slow river was green." for k in range(20)]
    csv = ("sense,sentence\n" + "\n".join(rows)).encode()
    at.file_uploader(key="layers_upload").set_value(("long.csv", csv, "text/csv")).run()
    at.button(key="layers_upload_apply").click().run()
    assert not at.exception
    text = at.session_state["cl_text"]
    assert len(text) <= 400 and text.endswith(".")  # whole lines only
    n_kept = text.count("\n") + 1
    assert _warnings(at).count(f"only the first {n_kept} of 20 lines were kept") == 1
    assert at.get("plotly_chart")


# ------------------------------------------------------------------------- said before the model runs
def _in_page_order(node):
    """Every element under ``node`` in the order the page shows them (depth first, in index order)."""
    children = getattr(node, "children", None)
    if children is None:
        yield node
        return
    for _, child in sorted(children.items()):
        yield from _in_page_order(child)


def test_the_budget_message_comes_before_the_chart(small_budget, encoder):
    at = _app()
    at.query_params["target"] = "bank"
    at.query_params["text"] = pack_text(TEXT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    msg = f"only its first {_expected_kept(encoder)} of {len(SENTENCES)} sentences are used"
    kinds = [(el.type, re.sub(r"\\(.)", r"\1", str(getattr(el, "value", "")))) for el in _in_page_order(at.main)]
    said = [i for i, (kind, value) in enumerate(kinds) if kind == "warning" and msg in value]
    charts = [i for i, (kind, _) in enumerate(kinds) if kind == "plotly_chart"]
    assert len(said) == 1 and charts, kinds
    assert said[0] < charts[0]


def test_the_budget_message_is_on_the_page_before_the_model_runs(small_budget, encoder, monkeypatch):
    # a model run that never returns (here: fails) still leaves the learner the message about their set,
    # because it is written from the tokenizer's counts before the model is asked for anything
    import lib.models.encoder as module

    def no_model(self, *args, **kwargs):
        raise RuntimeError("the model is not reached in this test")

    monkeypatch.setattr(module.Encoder, "encode", no_model)
    fresh = [s.replace("opened early", "closed late for the test of the message") for s in SENTENCES]
    at = page_test("pages/home.py", text="\n".join(fresh), target="bank").run()
    assert at.exception, "the model was asked for the set"
    clean = [s.split("|", 1)[1].strip() for s in fresh]
    kept = budget.fit_to_budget([len(x) for x in encoder.tokenizer(clean)["input_ids"]], per_set=SET_CAP).kept
    assert kept < len(fresh)
    assert _warnings(at).count(f"only its first {kept} of {len(fresh)} sentences are used") == 1
    assert not at.get("plotly_chart")


def test_a_large_set_shows_its_progress_from_before_the_model_runs_and_after_each_batch(encoder, monkeypatch):
    import lib.models.encoder as module
    from ui import cache

    sentences = tuple(f"The bank number {k} had a progress bar today." for k in range(10))
    pieces = {len(x) for x in encoder.tokenizer(list(sentences))["input_ids"]}
    assert len(pieces) == 1
    monkeypatch.setattr(cache.encodings, "CHUNK", 4)
    monkeypatch.setattr(module, "_BATCH_PIECES", 2 * pieces.pop())  # two sentences a batch, two batches a chunk
    seen: list[tuple[int, int, int]] = []  # (done, total, model runs so far)
    cache.encode_in_chunks(
        DEFAULT_MODEL, sentences, "bank", lambda d, t: seen.append((d, t, cache.ENCODE_CALLS[DEFAULT_MODEL]))
    )
    runs = cache.ENCODE_CALLS[DEFAULT_MODEL]
    assert [(d, t) for d, t, _ in seen] == [(k, 10) for k in (0, 2, 4, 6, 8, 10)]
    assert seen[0][2] == runs - 3  # the first call came before the model ran on any chunk
    # a rerun (everything cached) shows no bar at all
    seen.clear()
    cache.encode_in_chunks(DEFAULT_MODEL, sentences, "bank", lambda d, t: seen.append((d, t, 0)))
    assert seen == [] and cache.ENCODE_CALLS[DEFAULT_MODEL] == runs
