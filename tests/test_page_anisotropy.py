"""AppTest runs of pages/anisotropy.py on the real bundled model and the built-in reference corpus."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from lib.inputs.presets import default_preset, preset_by_id
from tests.conftest import NAN_OR_INF, assert_page_ok, chart_spec, page_test, page_text, trace_values

PAGE = "pages/anisotropy.py"






@pytest.mark.slow  # over ~5 s of CPU
def test_default_preset_with_builtin_corpus(encode_calls):
    at = page_test(PAGE, preset=default_preset().id).run()
    assert_page_ok(at, charts=4, finite=True)
    # curves (4 treatments + BERT-base overlay), dimensions, norms, before/after matrices
    curves = chart_spec(at, 0)
    assert len(curves["data"]) == 5
    assert [len(trace_values(t["y"])) for t in curves["data"][:4]] == [7] * 4
    bert = trace_values(curves["data"][4]["y"])
    assert len(bert) == 13 and bert[11] == pytest.approx(0.675)
    assert "contrastive objective" in page_text(at)
    assert len(at.metric) == 5  # sense labels: same, different, gap, then the scale-free AUC and readout

    # moving the controls does not run the model again
    calls = encode_calls["n"]
    at.slider(key="aniso_layer").set_value(6).run()
    at.selectbox(key="aniso_treatment").set_value("whiten").run()
    at.slider(key="aniso_k").set_value(0).run()
    at.selectbox(key="aniso_treatment").set_value("topk").run()
    at.toggle(key="aniso_bert").set_value(False).run()
    assert_page_ok(at, charts=4, finite=True)
    assert encode_calls["n"] == calls
    assert len(chart_spec(at, 0)["data"]) == 4  # overlay off
    assert "top 0 components removed" in page_text(at)


def test_raw_curve_is_above_corrected_curves():
    at = page_test(PAGE, preset=default_preset().id).run()
    assert_page_ok(at, charts=4, finite=True)
    traces = {t["name"]: trace_values(t["y"]) for t in chart_spec(at, 0)["data"]}
    raw = traces["raw"]
    z = traces["z-scored (§5.1)"]
    # the middle layers of the bundled model are clearly anisotropic, and z-scoring lowers that
    assert max(raw) > 0.1
    assert all(zi < ri for zi, ri in zip(z[1:], raw[1:], strict=True))


def test_one_sentence_set_as_corpus_is_guarded():
    at = page_test(PAGE, text="The river bank was muddy after the storm.", target="bank", aniso_corpus="set")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    text = page_text(at)
    assert not NAN_OR_INF.search(text)
    assert "your 1 sentence" in text
    assert "regularized" in text  # fewer word pieces than dimensions: whitening is regularized and says so
    # the word's section needs two sentences and says so
    assert any("at least 2" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) >= 3


def test_upload_choice_without_file_falls_back():
    at = page_test(PAGE, preset=default_preset().id, aniso_corpus="upload")
    at.run()
    assert_page_ok(at, charts=4, finite=True)
    assert any(".txt file" in i.value for i in at.info)


def test_user_text_is_escaped():
    at = page_test(PAGE, text="a | The *bank* <b>x</b> opened.\nb | We sat by the bank.", target="bank").run()
    assert_page_ok(at, charts=4, finite=True)
    for m in at.markdown:
        assert "<b>" not in m.value


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_scale_free_measure_next_to_the_gap(encoder):
    """Every number true: the pair-ranking AUC and the readout stand next to the gap, before and after."""
    import itertools

    from lib.inputs.corpus import compute_corpus_statistics, load_reference_corpus
    from lib.stats.similarity import cosine_matrix

    at = page_test(PAGE, preset="bank").run()
    assert_page_ok(at, charts=4, finite=True)
    layer = at.session_state["aniso_layer"]
    metrics = {m.label: m for m in at.metric}
    auc_label = next(lab for lab in metrics if lab.startswith("pair ranking (AUC)"))
    shown_after = float(metrics[auc_label].value)
    # independent: every (same-sense, different-sense) pair comparison, counted by hand
    p = preset_by_id("bank").sentence_set()
    tv = encoder.target_vectors(list(p.sentences), p.target)
    senses = [p.senses[i] for i in tv.kept]
    stats = compute_corpus_statistics(encoder, load_reference_corpus().sentences)
    X = tv.vectors[:, layer, :]

    def auc(cos):
        same, diff = [], []
        for i, j in itertools.combinations(range(len(senses)), 2):
            (same if senses[i] == senses[j] else diff).append(cos[i, j])
        wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in same for b in diff)
        return wins / (len(same) * len(diff))

    before = auc(cosine_matrix(X))
    after = auc(cosine_matrix(stats.treat(X, layer, "zscore", at.session_state["aniso_k"])))
    # the two matrices on screen (two charts, one per column) are these, on one colour range
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    shown = {}
    for key, m in (("aniso_matrix_raw", cosine_matrix(X)), ("aniso_matrix_treated", cosine_matrix(stats.treat(X, layer, "zscore", at.session_state["aniso_k"])))):
        (trace,) = charts[key]["data"]
        z = trace["z"]
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(m.shape) if isinstance(z, dict) else z
        np.testing.assert_allclose(np.asarray(z, dtype=float), m, atol=1e-4)
        shown[key] = (trace["zmin"], trace["zmax"])
    assert shown["aniso_matrix_raw"] == shown["aniso_matrix_treated"]
    assert shown_after == pytest.approx(after, abs=6e-4)
    assert f"{before:.3f}" in metrics[auc_label].delta
    text = page_text(at)
    assert f"{after:.3f}" == metrics[auc_label].value
    if abs(after - before) < 0.02:
        assert "here they barely move, so the fix mostly rescales" in text
    else:
        assert f"the AUC moves {'up' if after > before else 'down'} by {abs(after - before):.3f}" in text
    # the raw peak is named, and called mild only when it is
    assert "This model's raw peak, " in text


def test_an_uploaded_corpus_over_the_budget_says_what_is_cut_once(monkeypatch):
    """A hosted server's CPU: the budget's cut is said as soon as the file is read (before the model's pass), once,
    and the statistics are those of the sentences it names."""
    from lib.serving import budget

    monkeypatch.setattr(budget, "MAX_CORPUS_PIECES", 300)
    lines = [f"Line {k}: the [river] flows past the old mill near town number {k}." for k in range(40)]
    lines[1] = "word " * 200  # longer than one sentence may be
    data = ("# a comment\n" + "\n".join(lines) + "\n").encode("utf-8")
    at = page_test(PAGE, preset=default_preset().id, aniso_corpus="upload")
    at.run()
    at.file_uploader(key="aniso_upload").set_value(("corpus.txt", data, "text/plain")).run()
    assert_page_ok(at, charts=4, finite=True)
    cut = [i.value.replace("\\", "") for i in at.info if "word pieces one set may use" in i.value]
    assert len(cut) == 1, [i.value for i in at.info]
    kept = int(re.search(r"only its first (\d+) of 40 sentences", cut[0]).group(1))
    assert 3 <= kept < 40 and "1 sentence is longer than 128 word pieces" in cut[0]
    assert f"from {kept} sentences" in page_text(at)  # the caption under the curves: the statistics' sentences
    assert "the uploaded file (40 sentences)" in page_text(at).replace("\\", "")  # escaped for markdown


def test_the_layer_slider_moves_a_mark_and_leaves_the_curves_and_lengths_as_sent():
    """The curves and the vector lengths mark the chosen layer with a style rule, not in their figures, so the
    browser keeps them as drawn when only the layer moves (a slider's redraw time); what does change with the layer changes."""
    at = page_test(PAGE, preset=default_preset().id).run()
    assert_page_ok(at, charts=4, finite=True)

    def specs() -> dict[str, str]:
        return {c.proto.id.rsplit("-", 1)[-1]: c.proto.spec for c in at.get("plotly_chart")}

    def marks() -> dict[str, int]:
        css = "\n".join(h.proto.body for h in at.get("html"))
        return {k: int(i) for k, i in re.findall(r'\.st-key-(\w+) \.shape-group\[data-index="(\d+)"\] path', css)}

    at.slider(key="aniso_layer").set_value(2).run()
    before, marks2 = specs(), marks()
    at.slider(key="aniso_layer").set_value(5).run()
    after, marks5 = specs(), marks()
    for key in ("aniso_curves", "aniso_norms"):
        assert before[key] == after[key], key  # the same figure, byte for byte
        assert (marks2[key], marks5[key]) == (2, 5), key
    # shape j is layer j's mark (ui.widgets.layer_chart), invisible in the figure itself, at layer j on both
    for key in ("aniso_curves", "aniso_norms"):
        mark = json.loads(after[key])["layout"]["shapes"][5]
        assert (mark["x0"], mark["x1"], mark["opacity"]) == (5, 5, 0), key
    for key in ("aniso_matrix_raw", "aniso_matrix_treated"):
        assert before[key] != after[key], key  # the matrices themselves are the layer's
