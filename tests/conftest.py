"""Shared fixtures: the real bundled model, loaded once per test session."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread for torch's and BLAS's arithmetic in each test process, as the app's server runs (ui.startup): the
# README's command runs a process per core, where a second OpenMP thread only spins against the other process
# (100 CoarseWSD sentences through the encoder beside a busy machine: 6.2 s of CPU with two threads, 1.0 s with
# one), and a test's numbers no longer depend on whether an earlier test in its process started the app.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
# Every figure a test builds is validated property by property (production builds skip it: lib.charts.common).
os.environ.setdefault("CONTEXT_LENS_VALIDATE_FIGURES", "1")
# A page's bug reaches the test (the app's page edge, ui.widgets.guarded, would show a message instead).
os.environ.setdefault("CONTEXT_LENS_SHOW_ERRORS", "1")

# Property tests draw the same examples on every run, so CI cannot fail on a lucky draw.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("context-lens", derandomize=True, database=None)
_hypothesis_settings.load_profile("context-lens")

# The weights variants built above the model layer register themselves (lib.models knows none): a test that reads
# "<id>#finetuned-<recipe>" keys without going through ui/ still resolves them, as the app does.
import lib.finetune.model  # noqa: E402, F401, I001


SHOTS_ENV = "CONTEXT_LENS_SHOTS_DIR"


def pytest_configure(config):
    """One folder for the browser tests' screenshots, made before pytest-xdist starts its workers (they inherit
    the environment), so the run's summary can list every worker's pictures."""
    if not hasattr(config, "workerinput") and not os.environ.get(SHOTS_ENV):
        os.environ[SHOTS_ENV] = tempfile.mkdtemp(prefix="context-lens-shots-")


def pytest_terminal_summary(terminalreporter, config):
    if hasattr(config, "workerinput") or not os.environ.get(SHOTS_ENV):
        return
    folder = Path(os.environ[SHOTS_ENV])
    shots = sorted(folder.glob("*.png"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    if shots:
        terminalreporter.section("browser screenshots")
        for p in shots:
            terminalreporter.write_line(str(p))
    elif folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


# The results and models caches of a test process (ui.cache.store.RESULTS, ui.cache.MODELS): large enough to keep
# what every test of the worker computed and loaded, where the app's default budgets (lib.serving.budget's
# DEFAULT_CACHE_MB, DEFAULT_MODEL_CACHE_MB) made the tests push one another's results and models out and compute or
# load them again (test_model_prose.py alone: 956 results and 11 models dropped at the app's budgets, none at
# 2,000 MB; 68 s, then 59 s; 2026-11-28, commit bfcced1). Set in this process only: the servers and processes the
# tests start keep the app's own budgets, and a test of what the app's budget holds uses product_sized_results
# or product_sized_models.
TEST_CACHE_MB = 2000


@pytest.fixture(scope="session", autouse=True)
def _results_kept_for_the_session():
    from ui import cache
    from ui.cache import store

    for lru in (store.RESULTS, cache.MODELS):
        lru.max_bytes = max(lru.max_bytes, TEST_CACHE_MB * 2**20)


@pytest.fixture
def product_sized_results():
    """The results cache at the app's budget (``CONTEXT_LENS_CACHE_MB``, else the default) while the test runs: its
    most recently used entries that fit, as a cache of that size holds them, for a test of what the app keeps
    between runs (the tests' own cache is larger: :data:`TEST_CACHE_MB`)."""
    from lib.serving.budget import cache_budget_bytes
    from ui.cache import store

    kept = store.RESULTS.max_bytes
    store.RESULTS.max_bytes = cache_budget_bytes()
    store.RESULTS.put(("product_sized_results",), 0)  # an insertion drops the least recently used down to the budget
    try:
        yield store.RESULTS
    finally:
        store.RESULTS.max_bytes = kept


@pytest.fixture
def product_sized_models():
    """The loaded models' cache at the app's budget (``CONTEXT_LENS_MODEL_CACHE_MB``, else the default) while the
    test runs (the tests' own is larger: :data:`TEST_CACHE_MB`)."""
    from lib.serving.budget import model_cache_bytes
    from ui import cache

    kept = cache.MODELS.max_bytes
    cache.MODELS.max_bytes = model_cache_bytes()
    try:
        yield cache.MODELS
    finally:
        cache.MODELS.max_bytes = kept


@pytest.fixture(scope="session")
def encoder():
    """The real bundled all-MiniLM-L6-v2 encoder (eager attention), shared by all tests."""
    from lib.models.encoder import load_encoder

    return load_encoder()


@pytest.fixture(scope="session")
def shuffled_encoder():
    """The control: the trained weights shuffled within each tensor, seed 0 (lib.models.weights)."""
    from lib.models.encoder import load_encoder

    return load_encoder(None, weights="shuffled", seed=0)


@pytest.fixture(scope="session")
def random_encoder():
    """The same architecture and tokenizer with random weights, seed 0 (the "is it real?" control)."""
    from lib.models.encoder import load_encoder

    return load_encoder(None, weights="random", seed=0)


@pytest.fixture(scope="session")
def decoder():
    """The real decoder, a 4-bit copy of SmolLM2-135M-Instruct (eager attention, bfloat16 weights computing in
    float32), shared by all tests.

    Fetched and converted once per machine when its pack is missing (``python -m lib.models download``,
    which CI runs first); never mocked.
    """
    from lib.models import DECODER_MODEL, ModelLoadError, load_model, pack

    try:
        pack.installed_pack()
    except ModelLoadError:
        pack.download()
    return load_model(DECODER_MODEL)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def page_test(
    page: str, *, text: str | None = None, target: str | None = None, preset: str | None = None, **params
):
    """An AppTest of one page file, optionally on a custom sentence set (not yet run).

    ``params`` (page parameters by key) are set with :func:`seed`, the one way tests set page state.

    Pages are tested as files on their own: AppTest loses sidebar widgets after a rerun under
    st.navigation (seen with streamlit 1.67), and the pages read the shared set from session state, which
    ui.session fills with the default preset when app.py has not run.
    """
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page), default_timeout=180)
    if text is not None:
        seed(at, text=text, target=target, **params)
    else:
        seed(at, preset=preset, **params)
    return at


def app_test(**query: str):
    """An AppTest of app.py (the sidebar, the navigation, the start page) opened by a link with ``query`` (not yet
    run): ``app_test(preset="bank", finetuned=key).run()``."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for key, value in query.items():
        at.query_params[key] = value
    return at


# --------------------------------------------------------------------------- a page's session, for AppTest
def _session(at):
    return getattr(at, "session_state", at)  # an AppTest, or its session_state


def seed(
    at,
    *,
    preset: str | None = None,
    text: str | None = None,
    target: str | None = None,
    model: str | None = None,
    presenter: bool | None = None,
    **params: object,
) -> None:
    """Start an AppTest's session (before ``at.run()``) as if the learner had already set it up.

    ``preset`` (an id) or ``text`` (+ ``target``: the learner's own set) chooses the sentence set; ``model``
    (a model key that loads) and ``presenter`` the other shared settings. Any of these marks the session as
    started, so the link's shared keys are not read (the default preset unless a set is given); ``target``
    alone changes the target word of a session already started (between runs). ``params`` are page
    parameters by their key (``seed(at, ctx_own="The [bank] ...")``), used as the session's values, before
    the link's.
    """
    from lib.inputs.presets import default_preset, preset_by_id
    from lib.models.encoder import DEFAULT_MODEL
    from ui import session as s

    state = _session(at)
    if preset is not None or text is not None or model is not None or presenter is not None:
        if text is not None:
            state[s.K_PRESET], state[s.K_TEXT], state[s.K_TARGET] = s.CUSTOM, text, target or ""
        else:
            p = preset_by_id(preset) if preset is not None else default_preset()
            if p is None:
                raise ValueError(f"no preset {preset!r}")
            state[s.K_PRESET], state[s.K_TEXT], state[s.K_TARGET] = p.id, p.text, p.target
        state[s.K_MODEL] = state[s.K_ACTIVE_MODEL] = model or DEFAULT_MODEL
        state[s.K_PRESENTER] = bool(presenter)
        state[s.K_INITIALISED] = True
    elif target is not None:
        state[s.K_TARGET] = target
    for key, value in params.items():
        state[key] = value


def url_written(at) -> dict[str, str]:
    """The page parameters the last run put into the URL (key -> value as a link carries it)."""
    from ui.link import K_PAGE_URL

    state = _session(at)
    return dict(state[K_PAGE_URL]) if K_PAGE_URL in state else {}


def url_notes(at) -> list[str]:
    """What the session's link had wrong (the notes the sidebar shows)."""
    from ui.link import K_URL_NOTES

    state = _session(at)
    return list(state[K_URL_NOTES]) if K_URL_NOTES in state else []


def wait_until(condition, timeout: float = 300.0, step: float = 0.01) -> bool:
    """Poll ``condition()`` until it is true (True) or ``timeout`` seconds have passed (False): a test waits on
    what it needs, never a fixed sleep. The default bound leaves room for a machine busy with other work: a
    condition that holds comes as soon as it holds, so only a failing test waits that long."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


# --------------------------------------------------------------------------- what a page run showed
TEXT_KINDS = ("markdown", "caption", "header", "subheader", "metric", "success", "info")
NAN_OR_INF = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


def page_text(at, *kinds: str) -> str:
    """The text a page run showed, one element a line: its ``kinds`` of element (default :data:`TEXT_KINDS`)."""
    return "\n".join(str(e.value) for kind in (kinds or TEXT_KINDS) for e in at.get(kind))


def assert_page_ok(at, charts: int = 0, *, finite: bool = False) -> None:
    """The run raised nothing, showed no error, drew at least ``charts`` charts; ``finite``: and no NaN or inf
    in its text."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) >= charts, len(at.get("plotly_chart"))
    if finite:
        assert not NAN_OR_INF.search(page_text(at)), "NaN or inf on screen"


def chart_spec(at, index: int = 0) -> dict:
    """The ``index``-th chart a page run sent, as the browser gets it ({"data": [...], "layout": {...}})."""
    import json

    return json.loads(at.get("plotly_chart")[index].proto.spec)


def trace_values(v) -> list:
    """Trace data as a list: plotly sends numpy arrays as base64 typed arrays (``{"bdata", "dtype"}``)."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


@pytest.fixture
def encode_calls(monkeypatch):
    """Counts real forward passes (``Encoder.encode`` calls; the model itself runs unchanged): ``["n"]``."""
    from lib.models.encoder import Encoder

    calls = {"n": 0}
    original = Encoder.encode

    def counting(self, *args, **kwargs):
        calls["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Encoder, "encode", counting)
    return calls


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def board_db_url(request, tmp_path_factory):
    """A database for the class board's tests, once per backend and module: a SQLite file, then a throwaway
    PostgreSQL 15 cluster on 127.0.0.1 (tests/_postgres.py; skipped without its binaries, except under CI)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('board') / 'boards.sqlite'}"
        return
    from tests._postgres import postgres_cluster

    with postgres_cluster() as url:
        yield url


@pytest.fixture(scope="session")
def playwright_driver():
    """One Playwright driver for the whole test session, shared by the browser and the deployment tests: a second
    ``sync_playwright()`` started while the first still runs fails ("Sync API inside the asyncio loop")."""
    from tests.browser._browser import require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p
