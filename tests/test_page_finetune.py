"""The Fine-tune page in AppTest, with the real bundled model: it opens on real sentences split three ways,
trains, says what the run's numbers say beside the frozen head, refuses sets it cannot split in plain words, runs
the random-label control in one click, and its fine-tuned model opens on Layer by layer without the sentences it
was fitted to."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from lib.finetune.default_task import WORD, task_preset
from lib.finetune.run import finetune
from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import parse_sentence_set
from lib.models.encoder import DEFAULT_MODEL
from lib.models.keys import model_key
from tests.conftest import page_test, url_written

pytestmark = pytest.mark.slow

PAGE = "pages/finetune.py"
EPOCHS = 3  # few epochs: the page's numbers, not the model's quality, are under test
HAS_DATA = task_preset() is not None


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)  # drop markdown escapes


def _texts(at, *kinds) -> str:
    return " ".join(_plain(str(e.value)) for kind in kinds for e in at.get(kind))


@pytest.fixture(scope="module")
def trained():
    """The page after Train on the bank preset (top 2 layers, EPOCHS epochs, seed 0)."""
    at = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="ft_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def independent(encoder):
    """The same run made by lib.finetune directly, outside the app."""
    p = preset_by_id("bank")
    ss = parse_sentence_set(p.text, p.target, preset_id=p.id)
    return finetune(encoder, ss, "top-2", epochs=EPOCHS, seed=0)


@pytest.mark.skipif(not HAS_DATA, reason="CoarseWSD-20 is not beside the checkout")
def test_the_page_opens_on_real_sentences_split_three_ways_before_training():
    at = page_test(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ft_data"] == "wsd"
    frames = at.dataframe
    assert len(frames) == 3  # train, validation and test, all listed
    train, val, test = (f.value for f in frames)
    rows = task_preset().rows
    assert len(train) + len(val) + len(test) == len(rows) and len(test) >= 20
    listed = [tuple(r) for f in (train, val, test) for r in f[["sense", "sentence"]].itertuples(index=False)]
    assert sorted(listed) == sorted(rows)  # disjoint, and together the whole set
    assert set(train["sense"]) == set(val["sense"]) == set(test["sense"])  # every sense in every set
    assert not at.get("plotly_chart")  # nothing trains until asked
    assert f"Ready: fine-tuned on {len(train)} of the {len(rows)} '{WORD}' sentences" in _texts(at, "caption")
    assert url_written(at)["ft_data"] == "wsd"


def test_without_the_data_the_page_says_so_and_uses_the_sentences_in_use(monkeypatch, tmp_path):
    from lib.inputs import presets, wsd_data

    monkeypatch.setattr(wsd_data, "SHARED_DATA", tmp_path)  # a copy without ../shared/data (a Docker image)
    presets.data_preset.cache_clear()
    try:
        at = page_test(PAGE, ft_data="wsd")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert "are not on this server" in _texts(at, "caption")
        frames = at.dataframe
        assert sum(len(f.value) for f in frames) == len(preset_by_id("bank").rows)
        fresh = page_test(PAGE)
        fresh.run()
        assert fresh.session_state["ft_data"] == "set"
    finally:
        presets.data_preset.cache_clear()


def test_an_own_set_opens_on_the_sentences_in_use():
    at = page_test(PAGE, preset="kiwi")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ft_data"] == "set"
    assert sum(len(f.value) for f in at.dataframe) == len(preset_by_id("kiwi").rows)


def test_training_shows_the_runs_numbers_beside_the_head(trained, independent):
    at = trained
    text = _texts(at, "warning", "success")
    assert independent.verdict.text in text
    assert f"The frozen head on the same split scores {100 * independent.baseline.test_acc:.0f} % on test" in text
    moved = [f"L{i}" for i in np.flatnonzero(independent.comparison.weight_change)]
    assert moved == ["L5", "L6"]
    md = _texts(at, "markdown")
    assert f"Weights changed in: {', '.join(moved)};" in md
    assert f"{independent.run.trained_parameters:,} numbers trained" in md
    comp = independent.comparison
    changed = [f"L{i} ({comp.cka[i]:.2f})" for i in range(7) if comp.status(i) == "changed"]
    assert f"Geometry changed (CKA above the band, below 0.99): {', '.join(changed) or 'no layer'}." in md
    assert len(at.get("plotly_chart")) >= 7  # loss, accuracy, layer change, readout, anisotropy, gap, 2 maps
    acc = json.loads(at.get("plotly_chart")[1].proto.spec)
    star = [t for t in acc["data"] if t.get("name") == "test (once)"]
    assert star and star[0]["y"] == [pytest.approx(independent.run.test_acc)]
    cka = json.loads(at.get("plotly_chart")[2].proto.spec)
    band = [t for t in cka["data"] if t.get("fill") == "tonexty"]
    assert band and band[0]["y"] == pytest.approx(list(comp.floor_high))
    written = url_written(at)
    assert written["ft_train"] == "1" and written["ft_epochs"] == str(EPOCHS) and written["ft_method"] == "top"


def test_the_fine_tuned_model_opens_on_layer_by_layer_without_its_training_sentences(trained, independent):
    at = trained
    at.button(key="ft_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    recipe_key = independent.recipe.key
    assert at.session_state["cl_finetuned"] == recipe_key
    key = model_key(DEFAULT_MODEL, "finetuned", recipe_key)
    layers = page_test("pages/layers.py", preset="bank", model=key)
    layers.run()
    assert not layers.exception, [e.value for e in layers.exception]
    split = independent.split
    assert f"This model was fine-tuned on {len(split.train)} of these 12 sentences" in _texts(layers, "info")
    heatmaps = [json.loads(c.proto.spec)["data"][0] for c in layers.get("plotly_chart")]
    sizes = {len(t["z"]) for t in heatmaps if t.get("type") == "heatmap"}
    assert sizes == {len(split.heldout)}  # the similarity matrices hold the 6 sentences it never trained on
    name = "fine-tuned on 6 of the 12 'bank' sentences (left out here), top 2 layers, 3 epochs, seed 0"
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in layers.get("plotly_chart")]
    assert titles and all(name in t.replace("<br>", " ") for t in titles)  # every chart says which model it shows


def test_a_second_session_with_the_same_run_does_not_train_again(trained, independent):
    from ui import cache

    runs = cache.FINETUNE_RUNS[independent.recipe.key]
    assert runs >= 1
    watcher = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS, ft_train=True)  # the teacher's run
    watcher.run()
    assert not watcher.exception, [e.value for e in watcher.exception]
    assert independent.verdict.text in _texts(watcher, "warning", "success")
    assert cache.FINETUNE_RUNS[independent.recipe.key] == runs


def test_a_finished_run_offers_clear_not_stop_and_train_shows_it_again_without_training(trained, independent):
    from ui import cache

    at = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS, ft_train=True)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    keys = {b.key for b in at.button}
    assert "ft_clear" in keys and "ft_stop" not in keys
    assert at.get("plotly_chart")
    runs = cache.FINETUNE_RUNS[independent.recipe.key]
    at.button(key="ft_clear").click().run()
    assert not at.exception and not at.get("plotly_chart")
    assert "Training stopped" not in _texts(at, "alert", "info")
    at.button(key="ft_go").click().run()
    assert at.get("plotly_chart") and cache.FINETUNE_RUNS[independent.recipe.key] == runs


def test_a_remedy_is_one_click_away(trained, independent):
    fixes = [r for r in independent.verdict.remedies if r.recipe is not None]
    assert fixes, independent.verdict.kind
    first = fixes[0]
    at = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS, ft_train=True)
    at.run()
    at.button(key=f"ft_fix_{first.label}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ft_epochs"] == first.recipe.epochs
    assert at.session_state["ft_early"] == bool(first.recipe.patience)
    if first.recipe.parsed.trains_model:
        assert at.session_state["ft_lr"] == pytest.approx(first.recipe.lr)


def test_the_random_label_control_is_one_click_away(trained, independent):
    at = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS, ft_train=True)
    at.run()
    at.button(key="ft_control").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ft_shuffled"] is True and at.session_state["ft_early"] is False
    assert url_written(at)["ft_shuffled"] == "1"
    assert "on its shuffled labels" in _texts(at, "warning", "success")
    assert "ft_control" not in {b.key for b in at.button}  # the control has no control of its own


def test_three_seeds_compare_with_the_head_seed_by_seed(trained, independent, encoder):
    from lib.finetune.seeds import seed_spread

    at = page_test(PAGE, preset="bank", ft_data="set", ft_epochs=EPOCHS, ft_train=True)
    at.run()
    at.button(key="ft_seeds_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    prep = independent.run.prepared
    spread = seed_spread(encoder, prep, independent.recipe, (0, 1, 2), done={0: independent.run},
                         heads_done={0: independent.baseline})  # fmt: skip
    judged = independent.with_spread(spread)
    text = _texts(at, "success", "info")
    assert spread.text()[1:] in text and judged.verdict.compared in text
    assert ("beats the head" in text) == judged.verdict.comparison.beats
    chart = json.loads(at.get("plotly_chart")[-1].proto.spec)
    head = [t for t in chart["data"] if t["name"] == "frozen head, test"][0]
    assert head["y"] == pytest.approx(list(spread.head_test_acc))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("money | The bank lent us money.\nmoney | The bank closed early.\nmoney | A bank.", "at least two senses"),
        (
            "money | The bank lent us money.\nmoney | The bank closed early.\nmoney | A bank.\nriver | We sat on the bank.",
            "has only 1 sentence",
        ),
        ("The bank lent us money.\nWe sat on the bank.\nThe bank closed.", "sense | sentence"),
    ],
    ids=["one sense", "one sentence", "no labels"],
)
def test_a_set_that_cannot_be_split_gets_a_plain_message(text, message):
    at = page_test(PAGE, text=text, target="bank")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert message in _texts(at, "error")
    assert "ft_go" not in [b.key for b in at.button]


def test_the_decoder_fine_tunes_with_lora_and_compares_its_31_hidden_states(decoder):
    from lib.models import DECODER_MODEL

    at = page_test(PAGE, preset="bank", model=DECODER_MODEL, ft_data="set", ft_method="lora", ft_epochs=1)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert decoder.family == "decoder"
    at.button(key="ft_go").click().run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    cka = json.loads(at.get("plotly_chart")[2].proto.spec)
    assert len(cka["data"][-1]["x"]) == 31  # the weight change of every hidden state
    assert "numbers trained" in _texts(at, "markdown")
