"""AppTest runs of pages/projections.py on the real bundled model."""

from __future__ import annotations

import pytest

from lib.inputs.presets import default_preset
from tests.conftest import assert_page_ok, chart_spec, page_test, page_text, trace_values, wait_until

PAGE = "pages/projections.py"






def test_pca_default_shows_map_layers_and_csv(encode_calls):
    at = page_test(PAGE, preset=default_preset().id).run()
    assert_page_ok(at, charts=2, finite=True)
    fig = chart_spec(at)
    n = len(default_preset().rows)
    assert sum(len(trace_values(t["x"])) for t in fig["data"]) == n  # one point per sentence
    assert {t["name"] for t in fig["data"]} == {"money", "river", "rely"}
    assert "of variance" in fig["layout"]["xaxis"]["title"]["text"]  # explained variance on the axes
    assert "same sense" in page_text(at)
    # downloads: CSV with one row per sentence
    assert at.get("download_button")
    # moving the controls does not run the model again
    calls = encode_calls["n"]
    at.slider(key="proj_layer").set_value(0).run()
    at.radio(key="proj_dims").set_value(3).run()
    assert_page_ok(at, charts=2, finite=True)
    assert encode_calls["n"] == calls
    assert chart_spec(at)["data"][0]["type"] == "scatter3d"


def _umap_warmed_up(timeout: float = 300.0) -> None:
    """Start this process's UMAP warm-up (as the page does) and wait for it: while it runs the page draws PCA."""
    from ui import startup

    startup.warm_up_in_background()
    assert wait_until(lambda: startup.umap_status() != "warming", timeout, step=0.1)
    assert startup.umap_status() == "ready"


@pytest.mark.parametrize("method", [pytest.param("umap", marks=pytest.mark.slow), "tsne"])  # UMAP: ~20 s
def test_nonlinear_methods_run_and_are_reproducible(method):
    if method == "umap":
        _umap_warmed_up()  # both runs below must draw UMAP, not the PCA shown while the warm-up runs
    at = page_test(PAGE, preset=default_preset().id, proj_method=method, proj_across=False)
    at.run()
    assert_page_ok(at, charts=1, finite=True)
    first = [trace_values(t["x"]) for t in chart_spec(at)["data"]]
    at2 = page_test(PAGE, preset=default_preset().id, proj_method=method, proj_across=False)
    at2.run()
    assert [trace_values(t["x"]) for t in chart_spec(at2)["data"]] == first  # fixed seed
    assert chart_spec(at2)["layout"]["xaxis"]["title"]["text"] == {"umap": "UMAP 1", "tsne": "t-SNE 1"}[method]


def test_context_points_and_preparation():
    at = page_test(PAGE, preset=default_preset().id, proj_context=True, proj_prep="zscore", proj_across=False)
    at.run()
    assert_page_ok(at, charts=1, finite=True)
    names = [t["name"] for t in chart_spec(at)["data"]]
    assert names[0] == "other word pieces"
    assert "z-scored" in " ".join(h.value for h in at.header)
    at.selectbox(key="proj_prep").set_value("topk").run()
    assert_page_ok(at, charts=1, finite=True)
    assert "top 4 components removed" in " ".join(h.value for h in at.header)


def test_two_sentences_say_what_is_needed():
    at = page_test(PAGE, text="a | The bank opened.\nb | We sat by the bank.", target="bank").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("at least 3 points" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_small_set_clamps_and_no_labels():
    text = "The bank opened.\nWe sat by the bank.\nThe bank closed early."
    at = page_test(PAGE, text=text, target="bank", proj_method="tsne")
    at.run()
    assert_page_ok(at, charts=2, finite=True)
    assert any("perplexity was set to" in c.value for c in at.caption)
    assert "Label sentences with a sense" in page_text(at)
