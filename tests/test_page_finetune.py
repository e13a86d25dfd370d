"""The Fine-tune page in AppTest, with the real bundled model: it trains, says what the run's numbers say,
refuses sets it cannot split in plain words, and its fine-tuned model opens on Layer by layer."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from lib.finetune.run import finetune
from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import parse_sentence_set
from lib.models.encoder import DEFAULT_MODEL
from lib.models.keys import model_key
from tests.conftest import page_test, url_written

pytestmark = pytest.mark.slow

PAGE = "pages/finetune.py"
EPOCHS = 3  # few epochs: the page's numbers, not the model's quality, are under test


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)  # drop markdown escapes


def _texts(at, *kinds) -> str:
    return " ".join(_plain(str(e.value)) for kind in kinds for e in at.get(kind))


@pytest.fixture(scope="module")
def trained():
    """The page after Train on the bank preset (top 2 layers, EPOCHS epochs, seed 0)."""
    at = page_test(PAGE, preset="bank", ft_epochs=EPOCHS)
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


def test_the_page_lists_the_split_before_training():
    at = page_test(PAGE, preset="bank")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frames = at.dataframe
    assert len(frames) == 2  # training and held-out sentences, both listed
    train, held = frames[0].value, frames[1].value
    assert len(train) + len(held) == len(preset_by_id("bank").rows)
    assert set(train["sense"]) == set(held["sense"])  # stratified: every sense on both sides
    assert not at.get("plotly_chart")  # nothing trains until asked
    assert "Ready: fine-tuned on" in _texts(at, "caption")


def test_training_shows_the_runs_numbers(trained, independent):
    at = trained
    text = _texts(at, "warning", "success")
    assert independent.verdict.text in text
    moved = [f"L{i}" for i in np.flatnonzero(independent.comparison.weight_change)]
    assert moved == ["L5", "L6"]
    assert f"Weights changed in: {', '.join(moved)};" in _texts(at, "markdown")
    assert f"{independent.run.trained_parameters:,} numbers trained" in _texts(at, "markdown")
    assert len(at.get("plotly_chart")) >= 7  # loss, accuracy, layer change, readout, anisotropy, gap, 2 maps
    written = url_written(at)
    assert written["ft_train"] == "1" and written["ft_epochs"] == str(EPOCHS) and written["ft_method"] == "top"


def test_the_fine_tuned_model_opens_on_layer_by_layer(trained, independent):
    at = trained
    at.button(key="ft_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    recipe_key = independent.recipe.key
    assert at.session_state["cl_finetuned"] == recipe_key
    key = model_key(DEFAULT_MODEL, "finetuned", recipe_key)
    layers = page_test("pages/layers.py", preset="bank", model=key)
    layers.run()
    assert not layers.exception, [e.value for e in layers.exception]
    name = independent.name  # "fine-tuned on 8 'bank' sentences, top 2 layers, 3 epochs, seed 0"
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in layers.get("plotly_chart")]
    assert titles and all(name in t.replace("<br>", " ") for t in titles)  # every chart says which model it shows


def test_a_second_session_with_the_same_run_does_not_train_again(trained, independent):
    from ui import cache

    runs = cache.FINETUNE_RUNS[independent.recipe.key]
    assert runs >= 1
    watcher = page_test(PAGE, preset="bank", ft_epochs=EPOCHS, ft_train=True)  # a student opening the teacher's run
    watcher.run()
    assert not watcher.exception, [e.value for e in watcher.exception]
    assert independent.verdict.text in _texts(watcher, "warning", "success")
    assert cache.FINETUNE_RUNS[independent.recipe.key] == runs


def test_a_finished_run_offers_clear_not_stop_and_train_shows_it_again_without_training(trained, independent):
    from ui import cache

    at = page_test(PAGE, preset="bank", ft_epochs=EPOCHS, ft_train=True)
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
    at = trained
    at.button(key=f"ft_fix_{first.label}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ft_epochs"] == first.recipe.epochs
    assert at.session_state["ft_early"] == bool(first.recipe.patience)
    if first.recipe.parsed.trains_model:
        assert at.session_state["ft_lr"] == pytest.approx(first.recipe.lr)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("money | The bank lent us money.\nmoney | The bank closed early.", "at least two senses"),
        (
            "money | The bank lent us money.\nmoney | The bank closed early.\nriver | We sat on the bank.",
            "has only one sentence",
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


def test_the_decoder_gets_a_sentence_saying_why_not(decoder):
    from lib.models import DECODER_MODEL

    at = page_test(PAGE, preset="bank", model=DECODER_MODEL)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert decoder.family == "decoder"
    assert "Fine-tuning works on encoders so far" in _texts(at, "markdown")
    assert "ft_go" not in [b.key for b in at.button]
