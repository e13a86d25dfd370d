"""Heavy work waits for a click, is bounded in CPU time and stops with its session (ui/cache/finetune.py, the
Fine-tune page, a fine-tuned model's link), and small work runs while it trains: with the real bundled model,
real threads and the real queue."""

from __future__ import annotations

import threading

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from lib.finetune.data import split_set
from lib.finetune.recipe import DEFAULT_HELDOUT, Recipe
from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import parse_sentence_set
from lib.models.encoder import DEFAULT_MODEL
from lib.models.keys import model_key
from lib.serving.work import WorkQueue, WorkRefused
from tests.conftest import ROOT, page_test, url_written, wait_until

PAGE = "pages/finetune.py"
BANK = preset_by_id("bank")


@pytest.fixture
def hosted(monkeypatch):
    """A hosted copy: the decoder listed, as a class's server would (lib.serving.hosting)."""
    monkeypatch.setenv("CONTEXT_LENS_MODELS", "HuggingFaceTB/SmolLM2-135M-Instruct")
    monkeypatch.delenv("CONTEXT_LENS_TRAIN_SECONDS", raising=False)


def _bank():
    return parse_sentence_set(BANK.text, BANK.target, preset_id=BANK.id)


def _split():
    """The bank preset's split as the Fine-tune page makes it (its default share held out, split seed 0)."""
    ss = _bank()
    return split_set(ss.target, ss.sentences, ss.senses, heldout=DEFAULT_HELDOUT / 100, seed=0)


def _recipe(method="top-2", **settings) -> Recipe:
    return Recipe.make(_split().digest, method, num_layers=6, **settings)


def _prepared(recipe: Recipe):
    from ui import cache

    ss = _bank()
    return cache.finetune_prepared(DEFAULT_MODEL, ss.target, ss.sentences, ss.senses, recipe.task, DEFAULT_HELDOUT, 0)


def _texts(at, *kinds) -> str:
    return " ".join(str(e.value).replace("\\", "") for kind in kinds for e in at.get(kind))


def _live(recipe: Recipe):
    from ui.cache import finetune

    return finetune._LIVE.get(("finetune_run", DEFAULT_MODEL, recipe.key))


# ------------------------------------------------------------------------ a link shows the cost, a click trains
@pytest.mark.slow
def test_a_fine_tune_link_never_trains_by_itself_on_a_hosted_copy_and_a_click_opens_its_view(hosted):
    from ui import cache

    link = {"ft_method": "top", "ft_k": "2", "ft_epochs": "3", "ft_seed": "41", "ft_train": "1"}
    recipe = _recipe(epochs=3, seed=41)  # a recipe no other test trains
    before = cache.FINETUNE_RUNS[recipe.key]
    at = page_test(PAGE, preset="bank")
    at.query_params.update(link)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert cache.FINETUNE_RUNS[recipe.key] == before and _live(recipe) is None  # nothing started
    assert not at.get("plotly_chart")
    text = _texts(at, "info")
    split = _split()
    assert (
        f"This link asks to train fine-tuned on {len(split.train)} of the {len(split.sentences)} 'bank' sentences, "
        "top 2 layers, 3 epochs, seed 41" in text
    )
    assert "of this server's CPU" in text and "Press Train to start it" in text
    assert "at most 2 min of CPU" in text  # the hosted limit, and why
    assert url_written(at)["ft_train"] == "1"  # the link still carries its recipe
    at.button(key="ft_go").click().run()  # the click: the view the link was made from
    assert not at.exception, [e.value for e in at.exception]
    assert cache.FINETUNE_RUNS[recipe.key] == before + 1
    assert len(at.get("plotly_chart")) >= 7
    assert "numbers trained" in _texts(at, "markdown")


@pytest.mark.slow
def test_a_fine_tuned_model_link_waits_for_a_click_on_a_hosted_copy(hosted):
    """``?finetuned=<recipe>`` on any page: a server without the weights says so, keeps the recipe in the link,
    shows the pretrained model meanwhile, and trains it again on the click."""
    from streamlit.testing.v1 import AppTest

    from ui import cache

    recipe = _recipe(epochs=2, seed=42)
    key = model_key(DEFAULT_MODEL, "finetuned", recipe.key)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["preset"] = "bank"
    at.query_params["finetuned"] = recipe.key
    at.switch_page("pages/glossary.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert cache.FINETUNE_RUNS[recipe.key] == 0
    assert at.session_state["cl_model_active"] == DEFAULT_MODEL
    info = " ".join(str(w.value) for w in at.sidebar.info).replace("\\", "")
    assert "does not hold its weights now" in info and "of CPU" in info and "at most 2 min" in info
    assert at.query_params["finetuned"] == recipe.key  # the link keeps the recipe while it waits
    at.sidebar.button(key="cl_finetuned_train").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert cache.FINETUNE_RUNS[recipe.key] == 1
    assert at.session_state["cl_model_active"] == key
    assert at.query_params["finetuned"] == recipe.key


@pytest.mark.slow
def test_a_run_over_the_time_limit_is_refused_with_a_message(hosted, encoder, monkeypatch):
    """A run estimated over the server's CPU limit (here 5 s: LoRA for 200 epochs, which fits the memory budget).
    The page says the limit and why, the button is off, nothing trains, and asking the cache directly is refused
    too."""
    from ui import cache

    monkeypatch.setenv("CONTEXT_LENS_TRAIN_SECONDS", "5")
    link = {"ft_method": "lora", "ft_epochs": "200", "ft_train": "1"}
    runs_before = sum(cache.FINETUNE_RUNS.values())
    at = page_test(PAGE, preset="bank")
    at.query_params.update(link)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warning = _texts(at, "warning")
    assert "at most 5 s of CPU, so that a class's pages keep their cores" in warning
    assert "Fewer epochs, fewer sentences or a lighter method" in warning
    assert at.button(key="ft_go").disabled
    assert sum(cache.FINETUNE_RUNS.values()) == runs_before
    recipe = _recipe("lora", epochs=200)
    prepared = _prepared(recipe)
    assert cache.finetune_plan(DEFAULT_MODEL, prepared, recipe).seconds > 5
    with pytest.raises(WorkRefused, match="at most 5 s"):
        cache.finetune_run(DEFAULT_MODEL, prepared, recipe, start=True)


def test_the_cpu_limit_is_the_servers_and_a_local_copy_has_none(monkeypatch):
    from lib.serving.hosting import AUTO_TRAIN_SECONDS, starts_without_click, train_seconds_limit

    monkeypatch.delenv("CONTEXT_LENS_MODELS", raising=False)
    assert train_seconds_limit({}) is None and starts_without_click(AUTO_TRAIN_SECONDS, {})
    assert not starts_without_click(AUTO_TRAIN_SECONDS + 1, {})
    hosted_env = {"CONTEXT_LENS_MODELS": "x"}
    assert train_seconds_limit(hosted_env) == 120 and not starts_without_click(0.1, hosted_env)
    assert train_seconds_limit({**hosted_env, "CONTEXT_LENS_TRAIN_SECONDS": "30"}) == 30
    assert train_seconds_limit({"CONTEXT_LENS_TRAIN_SECONDS": "junk"}) is None


# ------------------------------------------------------------------------ a run ends with its session
def test_a_training_run_stops_when_its_session_ends(encoder, monkeypatch):
    """The session that follows a run leaves (Streamlit stops its script run at a Streamlit call: the tab
    closed, the session expired): with nobody else following, the run stops at its next batch, unfinished and
    not cached, and its thread ends."""
    from ui import cache
    from ui.cache import finetune, store

    monkeypatch.setattr(finetune, "GRACE", 0.0)
    recipe = _recipe(epochs=200, seed=43)
    prepared = _prepared(recipe)
    seen, lives = [], []

    def progress(rep):
        seen.append(rep.epoch)
        lives.append(_live(recipe))
        if rep.epoch >= 1:
            raise StopException  # what the session's next Streamlit call raises once it has ended

    with pytest.raises(StopException):
        cache.finetune_run(DEFAULT_MODEL, prepared, recipe, progress, start=True)
    live = lives[0]
    assert live.done.wait(60) and live.result.run.stopped == "cancelled"
    assert _live(recipe) is None
    assert store.RESULTS.get(("finetune_run", DEFAULT_MODEL, recipe.key)) is None
    assert cache.FINETUNE_RUNS[recipe.key] == 1 and seen[-1] < 200
    assert cache.finetune_run(DEFAULT_MODEL, prepared, recipe, start=False) is None  # nothing to show, nothing starts


def test_a_new_run_of_the_same_session_replaces_the_one_before(encoder, monkeypatch):
    from ui import cache
    from ui.cache import finetune

    monkeypatch.setattr(finetune, "GRACE", 3600.0)  # only the replacement may stop the first run
    monkeypatch.setattr(finetune, "_session_id", lambda: "one-session")
    first, second = _recipe(epochs=200, seed=44), _recipe("head", epochs=2, seed=44)

    def leave(rep):
        raise StopException

    with pytest.raises(StopException):
        cache.finetune_run(DEFAULT_MODEL, _prepared(first), first, leave, start=True)
    live = _live(first)
    assert live is not None and not live.done.is_set()  # still training: its grace has not run out
    result = cache.finetune_run(DEFAULT_MODEL, _prepared(second), second, start=True)
    assert result.run.stopped == "completed"
    assert live.done.wait(60) and live.result.run.stopped == "cancelled"


# ------------------------------------------------------------------------ small work while a run trains
def test_small_jobs_run_while_a_training_run_holds_the_only_slot(encoder, monkeypatch):
    """One slot for everything: a long training run holds it, and a learner's new sentences are still encoded,
    while the run goes on (it gives its slot back between two batches, keeping its bytes)."""
    from ui import cache, work
    from ui.cache import finetune

    q = WorkQueue(max_jobs=1, max_bytes=512 * 2**20, small_bytes=24 * 2**20, poll=0.01)
    monkeypatch.setattr(work, "WORK", q)
    monkeypatch.setattr(finetune, "GRACE", 0.0)
    recipe = _recipe(epochs=200, seed=45)
    prepared = _prepared(recipe)
    leave = threading.Event()
    errors: list[BaseException] = []

    def follow():
        def progress(rep):
            if leave.is_set():
                raise StopException

        try:
            cache.finetune_run(DEFAULT_MODEL, prepared, recipe, progress, start=True)
        except StopException:
            pass
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    assert wait_until(lambda: _live(recipe) is not None and _live(recipe).steps > 2, timeout=60)
    live = _live(recipe)
    sentences = tuple(f"A learner's own bank sentence {k} while a run trains." for k in range(3))
    out = cache.encoding(DEFAULT_MODEL, sentences)
    assert out.sentences == sentences
    assert not live.done.is_set() and q.stats().yielded >= 1  # the run gave way and is still training
    steps = live.steps
    assert wait_until(lambda: live.steps > steps, timeout=60)  # and went on after the small job
    leave.set()
    t.join(60)
    assert live.done.wait(60) and not errors


# ------------------------------------------------------------------------ warm presets
@pytest.mark.slow
def test_a_hosted_copy_warms_every_preset_so_the_first_class_runs_no_model(encoder, monkeypatch):
    """The warm-up computes each preset on each served model once (a model it cannot load is skipped); the
    Start page of a preset then runs no model at all, even after large work made room in the cache. A local
    copy starts no warm-up."""
    from lib.inputs.presets import load_presets
    from lib.serving import budget
    from lib.serving.budget import ByteLRU, cache_budget_bytes
    from ui import cache, startup
    from ui.cache import store

    assert startup.warm_presets({}) is False  # hosted mode off: nothing starts
    monkeypatch.setenv("CONTEXT_LENS_MODELS", "no-such/model-here")
    monkeypatch.setattr(store, "RESULTS", ByteLRU(cache_budget_bytes()))  # room for the warm-up's share
    monkeypatch.setattr(startup, "WARM_NICE", 0)  # on a machine shared with other work, the lowest would crawl
    t = threading.Thread(target=startup._warm_presets, args=(300.0,))  # its own thread: it lowers its priority
    t.start()
    t.join(600)
    assert startup.WARM_UP["presets"]["sets"] == len(load_presets())
    for p in load_presets():
        ss = parse_sentence_set(p.text, p.target, preset_id=p.id)
        key = ("target_vectors", DEFAULT_MODEL, tuple(ss.sentences), ss.target, budget.MAX_PIECES_PER_SENTENCE)
        assert key in store.RESULTS, p.id
    store.RESULTS.make_room(2**40)  # large work making room later spares what the warm-up computed
    runs = cache.ENCODE_CALLS[DEFAULT_MODEL]
    at = page_test("pages/home.py", preset="kiwi")
    at.run()
    assert not at.exception and at.get("plotly_chart")
    assert cache.ENCODE_CALLS[DEFAULT_MODEL] == runs  # every number of its first charts was ready
