"""AppTest runs of pages/projections.py on the real bundled model."""

from __future__ import annotations

import base64
import json
import re
import time

import numpy as np
import pytest

from lib.inputs.presets import default_preset
from lib.models.encoder import Encoder
from tests.conftest import page_test

PAGE = "pages/projections.py"
BAD_NUMBER = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


@pytest.fixture
def encode_calls(monkeypatch):
    """Counts real forward passes (the model itself runs unchanged)."""
    calls = {"n": 0}
    original = Encoder.encode

    def counting(self, *args, **kwargs):
        calls["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Encoder, "encode", counting)
    return calls


def _text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [h.value for h in at.header]
    return "\n".join(parts)


def _assert_ok(at, charts: int = 2) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) >= charts
    assert not BAD_NUMBER.search(_text(at)), "NaN or inf on screen"


def _figure(at, index: int = 0) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def _values(v) -> list[float]:
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def test_pca_default_shows_map_layers_and_csv(encode_calls):
    at = page_test(PAGE, preset=default_preset().id).run()
    _assert_ok(at)
    fig = _figure(at)
    n = len(default_preset().rows)
    assert sum(len(_values(t["x"])) for t in fig["data"]) == n  # one point per sentence
    assert {t["name"] for t in fig["data"]} == {"money", "river", "rely"}
    assert "of variance" in fig["layout"]["xaxis"]["title"]["text"]  # explained variance on the axes
    assert "same sense" in _text(at)
    # downloads: CSV with one row per sentence
    assert at.get("download_button")
    # moving the controls does not run the model again
    calls = encode_calls["n"]
    at.slider(key="proj_layer").set_value(0).run()
    at.radio(key="proj_dims").set_value(3).run()
    _assert_ok(at)
    assert encode_calls["n"] == calls
    assert _figure(at)["data"][0]["type"] == "scatter3d"


def _umap_warmed_up(timeout: float = 300.0) -> None:
    """Start this process's UMAP warm-up (as the page does) and wait for it: while it runs the page draws PCA."""
    from ui import startup

    startup.warm_up_in_background()
    deadline = time.monotonic() + timeout
    while startup.umap_status() == "warming" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert startup.umap_status() == "ready"


@pytest.mark.parametrize("method", [pytest.param("umap", marks=pytest.mark.slow), "tsne"])  # UMAP: ~20 s
def test_nonlinear_methods_run_and_are_reproducible(method):
    if method == "umap":
        _umap_warmed_up()  # both runs below must draw UMAP, not the PCA shown while the warm-up runs
    at = page_test(PAGE, preset=default_preset().id, proj_method=method, proj_across=False)
    at.run()
    _assert_ok(at, charts=1)
    first = [_values(t["x"]) for t in _figure(at)["data"]]
    at2 = page_test(PAGE, preset=default_preset().id, proj_method=method, proj_across=False)
    at2.run()
    assert [_values(t["x"]) for t in _figure(at2)["data"]] == first  # fixed seed
    assert _figure(at2)["layout"]["xaxis"]["title"]["text"] == {"umap": "UMAP 1", "tsne": "t-SNE 1"}[method]


def test_context_points_and_preparation():
    at = page_test(PAGE, preset=default_preset().id, proj_context=True, proj_prep="zscore", proj_across=False)
    at.run()
    _assert_ok(at, charts=1)
    names = [t["name"] for t in _figure(at)["data"]]
    assert names[0] == "other word pieces"
    assert "z-scored" in " ".join(h.value for h in at.header)
    at.selectbox(key="proj_prep").set_value("topk").run()
    _assert_ok(at, charts=1)
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
    _assert_ok(at)
    assert any("perplexity was set to" in c.value for c in at.caption)
    assert "Label sentences with a sense" in _text(at)
