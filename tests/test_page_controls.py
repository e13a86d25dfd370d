"""AppTests for the "is it real?" controls: random weights from the link and the sidebar, the probe and the
second model on Layer by layer, the neighbour check and the 3-seeds view on Projections."""

from __future__ import annotations

import json
import re

import pandas  # noqa: F401  (see test_concurrency: the UMAP warm-up thread must not be the first to import it)
import pytest
from streamlit.testing.v1 import AppTest

from lib.models.encoder import DEFAULT_MODEL
from tests.conftest import ROOT, page_test, seed, url_written
from ui.controls import CONTROL_TEXT

pytestmark = pytest.mark.slow
RANDOM0 = f"{DEFAULT_MODEL}#random-0"


def titles(at) -> list[str]:
    """Each chart's title as read: a title too wide for a phone is sent on two lines (ui.plotly_look.wrap_title)."""
    out = []
    for c in at.get("plotly_chart"):
        title = json.loads(c.proto.spec).get("layout", {}).get("title", {})
        text = title.get("text", "") if isinstance(title, dict) else str(title)
        out.append(re.sub(r"<br\s*/?>", " ", text))
    return out


def test_link_with_random_weights_names_them_everywhere():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"preset": "apple", "weights": "random", "seed": "3"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["cl_model_active"] == f"{DEFAULT_MODEL}#random-3"
    assert at.sidebar.radio(key="cl_weights").value == "random"
    assert at.sidebar.number_input(key="cl_seed").value == 3
    assert any("Random weights (seed 3)" in w.value for w in at.sidebar.warning)
    assert {k: at.query_params[k] for k in at.query_params} == {"preset": "apple", "weights": "random", "seed": "3"}
    shown = titles(at)
    titled = [t for t in shown if t]  # the start page's charts may all be untitled: the headings below name them
    assert all("random weights, seed 3" in t for t in titled), shown
    # Home's two heatmaps have no title of their own: the bold heading above each names the weights, once
    headings = [m.value for m in at.markdown if m.value.startswith("**Layer ")]
    assert len(headings) == 2 and all(h.count("random weights, seed 3") == 1 for h in headings), headings
    assert shown.count("") == 2, shown


def test_a_bad_weights_link_falls_back_with_a_note():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update({"weights": "pretrained", "seed": "-4"})
    at.run()
    assert not at.exception
    assert at.session_state["cl_model_active"] == DEFAULT_MODEL
    notes = " ".join(w.value for w in at.sidebar.warning)
    assert "weights" in notes and "seed" in notes
    assert "weights" not in {k for k in at.query_params}


def test_layers_probe_and_two_models():
    at = page_test("pages/layers.py")
    seed(at, preset="apple", model=RANDOM0)
    at.query_params["layers_compare"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "A trained probe, and its control" in [h.value for h in at.subheader]
    text = " ".join(m.value for m in at.markdown)
    assert "selectivity" not in text and "null" in text and "shuffled senses" in text
    shown = titles(at)
    # every chart names the random weights; the comparison names both models itself
    for t in shown:
        assert "random weights, seed 0" in t.replace("\\", ""), t
    assert any("random weights, seed 0 vs trained weights" in t for t in shown)
    # the default second model is the trained twin of the random one, and the link keeps the choice
    assert at.text_input(key="layers_other").value == DEFAULT_MODEL
    page_url = url_written(at)
    assert page_url["layers_compare"] == "1" and page_url["layers_other"] == DEFAULT_MODEL
    assert "Blue: **" in text and "red, dashed" in text


def test_projections_neighbour_check_and_three_seeds():
    at = page_test("pages/projections.py", preset="bank")
    at.query_params.update({"proj_method": "tsne", "proj_seeds": "1", "proj_across": "0"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption) + " ".join(w.value for w in at.warning)
    assert "nearest neighbours" in captions and "random layout would keep about 45%" in captions
    assert "The same map from three random starts" in [h.value for h in at.subheader]
    assert any("three seeds" in t for t in titles(at))
    assert url_written(at)["proj_seeds"] == "1"
    # PCA has no seed: the toggle is disabled and the view is not drawn
    at.radio(key="proj_method").set_value("pca").run()
    assert at.toggle(key="proj_seeds").disabled
    assert "The same map from three random starts" not in [h.value for h in at.subheader]


def test_anisotropy_section_1_says_how_the_control_compares():
    """With section 4 comparing the trained weights and their shuffled control (the default second model),
    section 1 names both peaks, read off the comparison chart's raw curves, and calls the control far more
    anisotropic only when it is."""
    import re

    import numpy as np

    at = page_test("pages/anisotropy.py", preset="bank")
    at.query_params["aniso_compare"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    compare = next(
        json.loads(c.proto.spec) for c in at.get("plotly_chart") if "shuffled weights, seed 0" in json.dumps(
            json.loads(c.proto.spec).get("layout", {}).get("title", {})
        )
    )
    from tests.conftest import trace_values as _values

    raw = {t["name"].split(" · ")[0]: np.asarray(_values(t["y"])) for t in compare["data"] if t["name"].endswith("· raw")}
    trained = raw[DEFAULT_MODEL]
    random_ = raw[f"{DEFAULT_MODEL} (shuffled weights, seed 0)"]
    note = next(m.value for m in at.markdown if m.value.startswith("**Trained or control (section 4).**"))
    pt, pr = trained.max(), random_.max()
    assert f"peaks at {pr:.2f} (layer {int(np.argmax(random_))})" in note
    assert f"trained weights at {pt:.2f} (layer {int(np.argmax(trained))})" in note
    far = pr >= 2 * pt and pr - pt >= 0.1
    assert ("far more anisotropic" in note) == far
    if far:
        assert re.search(rf"{pr / pt:.1f} times as high", note)
    # it stands in section 1: before section 2's header in the page's order
    order = [getattr(e, "value", "") for e in at.main]
    i_note = next(i for i, v in enumerate(order) if str(v).startswith("**Trained or control"))
    i_two = next(i for i, v in enumerate(order) if str(v).startswith("2. Rogue dimensions"))
    assert i_note < i_two


def test_layers_probe_on_the_pooled_vector(encoder):
    """With "mean of last 4 layers" chosen, the probe and its control also run on that pooled vector; the
    numbers match lib.stats.probe on the mean of hidden states L-3..L computed here."""
    import numpy as np

    from lib.inputs.presets import preset_by_id
    from lib.stats.probe import probe_layers

    at = page_test("pages/layers.py", preset="apple")
    at.query_params["layers_pooling"] = "last4"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    ss = preset_by_id("apple").sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    L = encoder.num_layers
    pooled = tv.vectors[:, L - 3 : L + 1, :].mean(axis=1)
    p = probe_layers(pooled[:, None, :], [ss.senses[i] for i in tv.kept])
    table = next(t.value for t in at.table if "null (mean)" in t.value.columns)
    row = next(r for r in table.index if "last 4" in r)
    assert list(table.loc[row]) == [f"{p.accuracy[0]:.0%}", f"{p.shuffled[0]:.0%}", f"{p.shuffled_high[0]:.0%}"]
    at.radio(key="layers_pooling").set_value("layer").run()
    table = next(t.value for t in at.table if "null (mean)" in t.value.columns)
    assert not any("last 4" in r for r in table.index)
    assert np.isfinite(p.accuracy).all()


def test_the_control_card_says_what_the_control_keeps_and_its_numbers_match(encoder):
    """Layer by layer, comparing with the default second model (the shuffled weights): the page says what the
    control keeps and removes, and its table's entropy and shift are lib.stats.context.context_use of both models."""
    import numpy as np

    from lib.inputs.presets import preset_by_id
    from lib.models.encoder import load_encoder
    from lib.stats.context import context_use, context_use_phrase

    at = page_test("pages/layers.py", preset="bank")
    at.query_params["layers_compare"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="layers_other").value == f"{DEFAULT_MODEL}#shuffled-0"
    text = " ".join(m.value for m in at.markdown)
    assert "**Shuffled weights** keep the architecture" in text and "removes everything training arranged" in text
    table = next(t.value for t in at.table if "attention entropy, layer 1" in t.value.columns)
    ss = preset_by_id("bank").sentence_set()
    shuffled = load_encoder(None, weights="shuffled", seed=0)
    uses = []
    for enc, row in ((encoder, "trained weights"), (shuffled, "shuffled weights, seed 0")):
        use = context_use(enc, list(ss.sentences), ss.target)
        uses.append(use)
        got = table.loc[row]
        assert got.iloc[0] == f"{use.entropy[0]:.2f}" and got.iloc[1] == f"{use.entropy[-1]:.2f}"
        assert got.iloc[2] == f"{use.shift.min():.3f}–{use.shift.max():.3f}"
    # the card no longer claims the control keeps attention as sharp; it says what the numbers show
    assert "as sharp" not in CONTROL_TEXT["shuffled"] and "Keeping the scale does not keep" in CONTROL_TEXT["shuffled"]
    plain = re.sub(r"\[([^\]]*)\]\(glossary#[^)]*\)", r"\1", text)  # glossary links read as their text
    assert context_use_phrase(*uses, "the control") in plain
    # the README states the same numbers (the control's entropy in the layers where it is flatter, and the shift)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    trained, control = uses
    flatter = np.flatnonzero(control.entropy > trained.entropy + 0.05)
    layers = f"layers {flatter[0] + 1}–{flatter[-1] + 1}"
    assert len(flatter) == flatter[-1] - flatter[0] + 1  # one run of layers, as the README says
    ent = f"{control.entropy[flatter].min():.2f}–{control.entropy[flatter].max():.2f}"
    ent_t = f"{trained.entropy[flatter].min():.2f}–{trained.entropy[flatter].max():.2f}"
    assert f"attention entropy in {layers} is {ent} of uniform (trained {ent_t})" in readme
    shifts = f"{control.shift.min():.3f}–{control.shift.max():.3f} (trained {trained.shift.min():.3f}–{trained.shift.max():.3f})"
    assert f"moves *bank* by at most {shifts}" in readme
