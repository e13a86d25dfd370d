"""AppTest runs of pages/context.py ("What moves the word") on the real bundled model.

The numbers the page prints are checked against lib.stats.context computed here on the same sentence.
"""

from __future__ import annotations

import numpy as np
import pytest

from lib.inputs.presets import default_preset
from lib.stats.context import MAX_WORDS, layer_cosines, occlusion
from tests.conftest import assert_page_ok, page_test, seed, url_written
from ui.widgets import escape_md

PAGE = "pages/context.py"


def _run(text: str | None = None, target: str | None = None, query: dict | None = None):
    at = page_test(PAGE, preset=default_preset().id) if text is None else page_test(PAGE, text=text, target=target)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()



def _shown(at) -> str:
    return " ".join(m.value for m in at.markdown)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_default_preset_shows_the_models_numbers(encoder):
    at = _run()
    assert_page_ok(at, charts=4)
    p = default_preset()
    first = p.sentence_set().sentences[0]
    occ = occlusion(encoder, first, p.target)
    L = encoder.num_layers
    top = int(occ.ranking(L)[0])
    text = _shown(at)
    assert f"masking “{occ.words[top]}” moves “bank” most (shift **{occ.shift[L, top]:.3f}**" in text
    # the edit defaults to deleting the content word with the largest effect; its cosine is recomputed here
    j = at.session_state["ctx_word"] - 1
    deleted = occ.sentence[: occ.spans[j][0]] + occ.sentence[occ.spans[j][1] :].lstrip(" ")
    v = encoder.target_vectors([deleted], "bank").vectors[0]
    cos = layer_cosines(occ.base, v[None])[-1, 0]
    assert f"“{occ.words[j]}” is deleted" in text and f"**{cos:.3f}**" in text
    # suggested swaps from the other senses, and the sense readout of the labelled preset
    swaps = [b for b in at.button if b.key and b.key.startswith("ctx_swap_")]
    assert swaps and all("→" in b.label for b in swaps)
    assert any("nearest sense" in " ".join(map(str, df.value.columns)) for df in at.dataframe)
    assert at.get("download_button")
    url = url_written(at)
    assert url["ctx_sentence"] == "1" and url["ctx_layer"] == str(L) and url["ctx_replace"] == "mask"
    # beside the shift, the pull towards the own sense: the sense margin (own sense's centroid minus the nearest
    # other's, the centroids built without this sentence) in the sentence minus with the word masked,
    # recomputed here with numpy for the five words shown; positive = the word pulled towards the sense
    ss = p.sentence_set()
    vecs = encoder.target_vectors(list(ss.sentences), p.target).vectors[:, L].astype(np.float64)
    own = ss.senses[0]
    others = range(1, len(ss.sentences))
    cents = {
        s: vecs[[k for k in others if ss.senses[k] == s]].mean(axis=0) for s in sorted(set(ss.senses)) if s
    }

    def margin(v):
        cos = {s: v @ c / (np.linalg.norm(v) * np.linalg.norm(c)) for s, c in cents.items()}
        return cos[own] - max(c for s, c in cos.items() if s != own)

    base = margin(occ.base[L].astype(np.float64))
    (table,) = at.table
    df = table.value
    assert list(df.index) == [escape_md(occ.words[int(k)]) for k in occ.ranking(L)[:5]]
    col = next(c for c in df.columns if c.startswith("pull towards") and "(+: towards)" in c)
    for k, shown in zip(occ.ranking(L)[:5], df[col], strict=True):
        assert float(shown) == pytest.approx(base - margin(occ.moved[int(k), L].astype(np.float64)), abs=6e-4)
    # masked beside deleted: each column is its own occlusion, and the sentence under the table names the
    # shown word whose shift most belongs to the [MASK] itself
    deleted = occlusion(encoder, first, p.target, "")
    for k, m, d in zip(occ.ranking(L)[:5], df["shift, masked"], df["shift, deleted"], strict=True):
        assert m == f"{occ.shift[L, int(k)]:.3f}" and d == f"{deleted.shift[L, int(k)]:.3f}"
    shown = [int(k) for k in occ.ranking(L)[:5]]
    k = min(shown, key=lambda j: deleted.shift[L, j] / occ.shift[L, j])
    assert deleted.shift[L, k] < occ.shift[L, k]
    captions = " ".join(c.value for c in at.caption)
    assert (
        f"Deleting “{escape_md(occ.words[k])}” moves “bank” {deleted.shift[L, k]:.3f}, masking it {occ.shift[L, k]:.3f}"
    ) in captions


def test_a_swap_and_the_controls_do_not_rerun_the_occlusion():
    from ui import cache

    at = _run()
    assert_page_ok(at, charts=4)
    calls = sum(cache.ENCODE_CALLS.values())
    at.slider(key="ctx_layer").set_value(2).run()
    assert_page_ok(at, charts=4)
    assert sum(cache.ENCODE_CALLS.values()) == calls
    swap = next(b for b in at.button if b.key and b.key.startswith("ctx_swap_"))
    word, replacement = (x.strip() for x in swap.label.split("→"))
    swap.click().run()
    assert_page_ok(at, charts=4)
    assert at.session_state["ctx_with"] == replacement
    assert f"“{word}” becomes “{replacement}”" in _shown(at)
    assert url_written(at)["ctx_with"] == replacement


def test_state_comes_from_the_link():
    at = _run(query={"ctx_sentence": "6", "ctx_layer": "3", "ctx_word": "2", "ctx_with": "savings"})
    assert_page_ok(at, charts=4)
    assert at.session_state["ctx_sentence"] == 6 and at.session_state["ctx_layer"] == 3
    assert "becomes “savings”" in _shown(at)
    assert "At layer 3" in _shown(at)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_one_word_context():
    at = _run("river | Muddy bank\nmoney | Bank loans", "bank")
    assert_page_ok(at, charts=4)
    assert "needs at least three context words" in _shown(at)
    at = _run("Bank", "bank")
    assert not at.exception
    assert any("nothing to mask" in w.value for w in at.warning)


def test_a_typed_sentence_with_a_mask_token():
    at = page_test(PAGE, preset=default_preset().id)
    seed(at, ctx_own="The [MASK] sat on the river [bank] .")
    at.run()
    assert_page_ok(at, charts=4)
    caption = " ".join(c.value for c in at.caption)
    assert "The \\[MASK\\] sat on the river **bank**" in caption  # one target; [MASK] is a context word
    assert url_written(at)["ctx_own"] == "The [MASK] sat on the river [bank] ."


@pytest.mark.slow
def test_a_sentence_at_the_length_cap_and_one_beyond():
    words = ("we walked along the green river past old mills and quiet farms " * 6).split()
    at_cap = " ".join(words[: MAX_WORDS - 1]) + " bank ."  # MAX_WORDS - 1 words and "." besides the target
    at = _run(f"river | {at_cap}", "bank")
    assert_page_ok(at, charts=4)
    assert at.session_state["ctx_word"] <= MAX_WORDS
    assert not at.warning
    beyond = " ".join(words[:MAX_WORDS]) + " bank ."
    at = _run(f"river | {beyond}", "bank")
    assert not at.exception
    assert any(f"at most {MAX_WORDS}" in w.value for w in at.warning)


def test_user_text_is_shown_escaped():
    at = _run("money | The *bank* <b>raised</b> rates.\nriver | We sat on the `bank` today.", "bank")
    assert not at.exception
    shown = _shown(at) + " ".join(c.value for c in at.caption)
    assert "<b>" not in shown
    for chart in at.get("plotly_chart"):
        assert "<b>raised" not in chart.proto.spec


def test_bad_replacement_gives_a_message():
    at = page_test(PAGE, preset=default_preset().id, ctx_with="[oops]")
    at.run()
    assert not at.exception
    assert any("square brackets" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) >= 3  # the occlusion charts still draw
    assert np.isfinite(at.session_state["ctx_layer"])


def test_garbled_link_values_give_defaults_and_messages():
    at = _run(
        query={
            "ctx_layer": "abc",
            "ctx_sentence": "-99999",
            "ctx_word": "9" * 300,
            "ctx_replace": "<script>",
            "ctx_own": "[[[ unbalanced",
        }
    )
    assert not at.exception
    assert at.session_state["ctx_layer"] == 6 and at.session_state["ctx_sentence"] == 1
    assert at.session_state["ctx_replace"] == "mask"
    assert any("brackets" in e.value for e in at.error)  # the typed sentence is refused with a message
    at.text_input(key="ctx_own").set_value("").run()
    assert_page_ok(at, charts=4)


def test_attention_vs_effect_is_two_charts_with_the_models_numbers(encoder):
    """Two charts in two columns (stacked on a phone): the words' attention against their shift at the chosen
    layer, and the rank correlation per layer, both equal to lib.stats.context's on the same sentence."""
    import json

    from lib.stats.context import attention_effect_correlation

    at = _run()
    assert_page_ok(at, charts=5)
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    occ = occlusion(encoder, default_preset().sentence_set().sentences[0], default_preset().target)
    rho = attention_effect_correlation(occ)
    (line,) = charts["ctx_correlation"]["data"]
    shown = [np.nan if v is None else v for v in line["y"]]
    np.testing.assert_allclose(shown, rho, atol=1e-6)
    (points,) = charts["ctx_attention"]["data"]
    assert points["text"] == list(occ.words)
    layer = int(charts["ctx_attention"]["layout"]["title"]["text"].split()[1].rstrip(":"))
    xs = points["x"]
    if isinstance(xs, dict):
        import base64

        xs = np.frombuffer(base64.b64decode(xs["bdata"]), dtype=xs["dtype"])
    np.testing.assert_allclose(np.asarray(xs, dtype=float), occ.attention[layer - 1], atol=1e-6)
    assert len(at.columns) >= 2


@pytest.mark.slow
def test_the_decoder_without_a_mask_token_deletes_each_word_and_charts(decoder):
    """A decoder has no mask token and a byte-level tokenizer (no unknown-word piece): the page offers only
    deleting, says nothing of a mask, and charts the shifts the deletion makes (checked against
    lib.stats.context.occlusion with "" on the same sentence). A link asking to mask keeps its request and is
    told why each word is deleted."""
    from lib.models import DECODER_MODEL
    from lib.models.facts import replacement_choices, unknown_piece

    assert decoder.mask_token is None and unknown_piece(decoder.tokenizer) is None
    assert replacement_choices(decoder) == ("delete",)
    at = page_test("pages/context.py")
    seed(at, model=DECODER_MODEL)
    at.run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="ctx_replace").options == ["nothing (delete it)"]
    shown = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown])
    assert "MASK" not in shown and "UNK" not in shown and "deleted instead" not in shown
    assert at.get("plotly_chart")
    p = default_preset()
    occ = occlusion(decoder, p.sentence_set().sentences[0], p.target, "")
    L = decoder.num_layers
    top = int(occ.ranking(L)[0])
    assert f"deleting “{occ.words[top]}” moves “bank” most (shift **{occ.shift[L, top]:.3f}**" in _shown(at)
    assert url_written(at)["ctx_replace"] == "delete"

    asked = _run(query={"ctx_replace": "mask"})
    seed(asked, model=DECODER_MODEL)
    asked.run(timeout=600)
    assert any("never taught a mask token" in c.value and "deleted instead" in c.value for c in asked.caption)
    assert url_written(asked)["ctx_replace"] == "mask"  # the link keeps what it asked for
