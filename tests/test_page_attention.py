"""AppTest runs of pages/attention.py on the real bundled model."""

from __future__ import annotations

import pytest

from lib.inputs.presets import default_preset
from lib.serving.budget import MAX_PIECES_PER_SENTENCE
from tests.conftest import assert_page_ok, page_test, seed

PAGE = "pages/attention.py"


def _run(text: str | None = None, target: str | None = None, **params):
    """Run the page with the default preset, or with our own sentences and target; ``params`` by key, e.g.
    ``attn_compare_box=True`` (the side-by-side expander opened)."""
    if text is None:
        return page_test(PAGE, preset=default_preset().id, **params).run()
    return page_test(PAGE, text=text, target=target, **params).run()


def _side_by_side(at) -> set[str]:
    """The keys of the side-by-side heatmaps the run drew."""
    return {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")} & {"attn_side_a", "attn_side_b"}



def test_preset_sentence():
    at = _run()
    assert_page_ok(at, charts=5)
    preset = default_preset()
    assert not _side_by_side(at)  # the side-by-side expander starts closed and draws nothing
    assert any(e.label.startswith("Side by side") for e in at.expander)  # there to open
    seed(at, attn_compare_box=True)  # what opening it does (on_change reruns the page)
    at.run()
    assert_page_ok(at, charts=7)
    assert _side_by_side(at) == {"attn_side_a", "attn_side_b"}  # the preset has several sentences
    assert at.session_state["attn_sentence"] == 1
    # the side-by-side sentence defaults to another sense than sentence 1
    senses = [sense for sense, _ in preset.rows]
    assert senses[at.session_state["attn_compare"] - 1] != senses[0]
    # the encoder's target sees the words on both sides
    text = " ".join(m.value for m in at.markdown)
    assert "already mixes in its neighbours;" in text and "cannot change it" not in text
    # the maths section reports a tiny difference, never NaN
    metric = at.metric[0]
    assert float(metric.value) < 1e-4


def test_changing_layer_and_head_does_not_run_the_model_again():
    from ui import cache

    at = _run()
    assert_page_ok(at, charts=5)
    calls = sum(cache.ENCODE_CALLS.values())
    at.slider(key="attn_layer").set_value(4).run()
    at.slider(key="attn_head").set_value(7).run()
    at.toggle(key="attn_target_mean").set_value(False).run()
    assert_page_ok(at, charts=5)
    assert sum(cache.ENCODE_CALLS.values()) == calls
    assert "Layer 4, head 7" in " ".join(h.value for h in at.header)


def test_second_sentence_follows_the_first_until_chosen():
    at = _run(
        "money | The bank raised rates.\nriver | We sat on the river bank.\nmoney | A bank loan.",
        "bank",
        attn_compare_box=True,
    )
    assert_page_ok(at, charts=5)
    assert at.session_state["attn_compare"] == 2
    at.selectbox(key="attn_sentence").set_value(2).run()
    assert at.session_state["attn_compare"] == 1  # another sense than "river"
    at.selectbox(key="attn_compare").set_value(3).run()
    at.selectbox(key="attn_sentence").set_value(1).run()
    assert_page_ok(at, charts=5)
    assert at.session_state["attn_compare"] == 3  # the learner's choice is kept


def test_a_link_with_a_compared_sentence_opens_the_side_by_side():
    """Links carry ``attn_compare`` only while the side-by-side is open (and every link with two sentences carried
    it before the side-by-side moved into an expander): such a link opens it on that sentence."""
    at = page_test(PAGE, preset=default_preset().id)
    at.query_params["attn_compare"] = "3"
    at.run()
    assert_page_ok(at, charts=7)
    assert _side_by_side(at) == {"attn_side_a", "attn_side_b"}
    assert at.session_state["attn_compare"] == 3
    assert "in sentence 3 at" in " ".join(m.value for m in at.markdown)


def test_one_word_sentence():
    at = _run("Bank", "bank")
    assert_page_ok(at, charts=5)
    assert any("second sentence" in i.value for i in at.info)


@pytest.mark.slow
def test_sentence_at_the_length_limit():
    words = " ".join(f"the bank {k} lent money to farmers by the river." for k in range(80))
    at = _run(f"{words}\nThe bank raised rates.", "bank")
    assert_page_ok(at, charts=5)
    # the set's sentences are read up to MAX_PIECES_PER_SENTENCE word pieces, and the page says so
    assert any(f"longer than {MAX_PIECES_PER_SENTENCE} word pieces" in w.value for w in at.warning)
    assert any(f"was cut at {MAX_PIECES_PER_SENTENCE} word pieces" in c.value for c in at.caption)
    assert any("labels are printed" in c.value for c in at.caption)


def test_user_text_is_shown_escaped():
    at = _run("money | The *bank* <b>raised</b> rates.\nriver | We sat on the `bank`.", "bank")
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "<b>" not in shown


def test_layer_and_head_come_from_the_link_and_are_clamped():
    at = page_test(PAGE, preset=default_preset().id)
    at.query_params["attn_layer"] = "3"
    at.query_params["attn_head"] = "99"
    at.run()
    assert_page_ok(at, charts=5)
    assert at.session_state["attn_layer"] == 3
    assert at.session_state["attn_head"] == 12  # clamped to the model's 12 heads
    assert "Layer 3, head 12" in " ".join(h.value for h in at.header)


def test_two_sentences_side_by_side_are_two_charts_each_with_its_own_matrix(encoder):
    """Two charts in two columns (Streamlit stacks them on a phone), each with its own sentence's attention at the
    chosen layer and head, on the same fixed 0–1 scale."""
    import json

    import numpy as np

    from lib.models.attention import token_labels

    at = _run(attn_compare_box=True)
    assert_page_ok(at, charts=7)
    at.slider(key="attn_layer").set_value(3).run()
    at.slider(key="attn_head").set_value(6).run()
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    i, j = at.session_state["attn_sentence"] - 1, at.session_state["attn_compare"] - 1
    assert i != j
    sentences = [s for _, s in default_preset().rows]
    for key, k in (("attn_side_a", i), ("attn_side_b", j)):
        enc = encoder.encode([sentences[k]], attentions=True)
        (trace,) = charts[key]["data"]
        z = trace["z"]
        if isinstance(z, dict):  # sent as a typed array
            import base64

            z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(z["shape"])
        np.testing.assert_allclose(np.asarray(z, dtype=float), enc.attentions[0][2, 5], atol=1e-5)
        assert list(trace["x"]) == token_labels(enc.tokens[0])
        assert (trace["zmin"], trace["zmax"]) == (0, 1)
        assert f"Sentence {k + 1}" in charts[key]["layout"]["title"]["text"]
    # both in columns, next to each other on a wide screen
    assert len(at.columns) >= 2
