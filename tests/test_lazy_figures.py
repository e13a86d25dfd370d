"""Lazy figures (lib.charts.figures.LazyFigure, a rerun's server CPU): production builds every chart as its trace and layout
dicts and sends them without building plotly's objects. The tests validate every figure (conftest), so this
file switches validation off to test the production path: every chart builder of lib/charts gives the same
JSON both ways, plotly's API still works on a lazy figure (it turns into a plotly Figure in place), and the
pages run with validation off."""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import pickle
import threading
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit.elements.plotly_chart  # noqa: F401  (registers Streamlit's default template, as in the app)
from plotly.io.json import to_json_plotly

from lib.charts import common, figures, fitting, home, layers
from lib.charts.figures import Figure, LazyFigure
from tests.browser._browser import chart_pages
from tests.chart_examples import EXAMPLES, RNG, real_inputs
from tests.chart_examples import scales as _scales

SENSES = ["river", "money", "river", None, "money", "bench"]
LABELS = [f"S{i + 1} · <b>{i}</b> & co" for i in range(6)]
NAMES = layers.layer_names(6)


def _r(*shape) -> np.ndarray:
    return RNG.random(shape)


_M = [_r(6, 6) for _ in range(2)]


@pytest.fixture(scope="module")
def real(encoder):
    """Attention and vectors of two real sentences (the bundled model)."""
    return real_inputs(encoder)


CHART_MODULES = (
    "attention",
    "lens",
    "context",
    "controls",
    "finetune",
    "geometry",
    "home",
    "layers",
    "lesson",
    "projection",
    "toy",
)


def _json(fig_or_dict) -> dict:
    """What reaches the browser: the figure's dict as plotly.io.to_json writes it (Streamlit's call)."""
    d = fig_or_dict.to_dict() if isinstance(fig_or_dict, go.Figure) else fig_or_dict
    return json.loads(pio.to_json(d, validate=False))


def _plotly(fig: go.Figure) -> dict:
    """What plotly's own ``to_dict`` of a plotly Figure sends (deep copies, convert_to_base64)."""
    return json.loads(pio.to_json(go.Figure.to_dict(fig), validate=False))


def _both(build, monkeypatch):
    """``build()`` without validation (the app) and with it (the tests), from the same inputs."""
    state = RNG.bit_generator.state
    monkeypatch.delenv(common.VALIDATE_ENV, raising=False)
    lazy = build()
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    RNG.bit_generator.state = state  # the same random input both times
    return lazy, build()


def test_every_chart_builder_is_checked():
    """Each public function of lib/charts that returns a figure has an example in tests/chart_examples.py."""
    found = set()
    for name in CHART_MODULES:
        mod = importlib.import_module(f"lib.charts.{name}")
        for fname, fn in vars(mod).items():
            public = inspect.isfunction(fn) and fn.__module__ == mod.__name__ and not fname.startswith("_")
            if public and "Figure" in str(inspect.signature(fn).return_annotation):
                found.add(f"{name}.{fname}")
    assert found == {k.split("[")[0] for k in EXAMPLES}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_lazy_figure_sends_what_plotly_would(name, real, monkeypatch):
    """Production's lazy figure gives the same JSON as the validated plotly Figure of the tests and as an
    unvalidated plotly Figure of the same dicts (template included), and stays lazy while doing it; so do
    the presenter's copy and the copy fitted to a narrow column (ui.widgets.chart's paths)."""
    lazy, checked = _both(lambda: EXAMPLES[name](real), monkeypatch)
    assert type(lazy) is LazyFigure and type(checked) is Figure and isinstance(lazy, go.Figure)
    sent = _json(lazy)
    assert _scales(sent) == _scales(_json(checked))
    eager = Figure(
        data=figures._containers(lazy._data), layout=figures._containers(lazy._layout), _validate=False
    )
    assert sent == _json(eager)
    assert "template" in sent["layout"] and sent["layout"]["template"] == _json(checked)["layout"]["template"]
    assert _json(lazy) == sent  # a second call (arrays encoded once) sends the same
    assert fitting.cell_text_changes(lazy, 250) == fitting.cell_text_changes(checked, 250)
    monkeypatch.delenv(common.VALIDATE_ENV)
    shown = [common.presenter_layout(lazy), fitting.fit_cell_text(_copy(lazy), 250)]
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    expected = [common.presenter_layout(checked), fitting.fit_cell_text(_copy(checked), 250)]
    for got, want in zip(shown, expected, strict=True):
        assert type(got) is LazyFigure
        assert _scales(_json(got)) == _scales(_json(want))
    assert type(lazy) is LazyFigure  # nothing above needed plotly's objects


def test_arrays_are_sent_as_plotly_sends_them():
    """lib.charts.common's one-pass copy and encoding against plotly's convert_to_base64, on every kind of
    value a figure can hold; an array is encoded once per figure, and the copy never shares a container."""
    import pandas as pd
    from _plotly_utils.utils import convert_to_base64

    value = {
        "z": np.arange(12, dtype=np.float32).reshape(3, 4), "x": np.arange(5), "big": np.arange(3) * 2**40,
        "text": np.array(["a", "<b>"]), "empty": np.array([]), "series": pd.Series([1.5, 2.5]),
        "rows": [np.arange(3.0), [1, 2]], "pair": (0.5, np.float32(0.25)), "range": np.array([0.0, 1.0]),
        "nested": [{"y": np.linspace(0, 1, 4), "mask": np.array([True, False])}], "n": np.int64(3), "s": "t",
        "t": np.arange(12.0).reshape(3, 4).T, "view": np.arange(10, dtype=np.int32)[::3], "u": np.arange(4, dtype=np.uint8),
        "i16": np.arange(3, dtype=np.int16), "f64": np.array([0.1, np.nan, np.inf]), "be": np.arange(3, dtype=">f8"),
    }
    want = copy.deepcopy(value)
    convert_to_base64(want)
    memo: dict = {}
    got = figures._export(value, memo)
    assert json.loads(pio.to_json(got, validate=False)) == json.loads(pio.to_json(want, validate=False))
    assert got["rows"] is not value["rows"] and got["nested"][0] is not value["nested"][0]
    assert isinstance(value["z"], np.ndarray) and isinstance(value["nested"][0]["y"], np.ndarray)  # unchanged
    again = figures._export(value, memo)
    assert again == got and again["z"] is not got["z"]  # same encoding, a new dict each time
    assert memo[id(value["z"])][0] is value["z"]


def _copy(fig):
    spec = figures.figure_dict(fig)
    return common.figure(spec["data"], spec["layout"])


def _pair(monkeypatch):
    """A lazy figure and the unvalidated plotly Figure of the same dicts (what it turns into)."""
    monkeypatch.delenv(common.VALIDATE_ENV, raising=False)
    fig = layers.layer_small_multiples(np.stack([_r(6, 6) for _ in NAMES]), SENSES, NAMES, selected=2)
    eager = Figure(
        data=figures._containers(fig._data), layout=figures._containers(fig._layout), _validate=False
    )
    return fig, eager


@pytest.mark.parametrize(
    "use",
    [
        lambda f: len(f.data),
        lambda f: f.layout.title.text,
        lambda f: f.data[0].z.shape,
        lambda f: f["layout"]["height"],
        lambda f: "layout" in f,
        lambda f: repr(f)[:20],
        lambda f: f.add_trace(go.Scatter(x=[0, 1], y=[1, 0], name="added")) and None,
        lambda f: f.update_traces(showscale=False) and None,
        lambda f: f.update_xaxes(showgrid=False) and None,
        lambda f: setattr(f, "layout", go.Layout(height=300)),
        lambda f: tuple(f.layout.xaxis2.domain),
        lambda f: [t.type for t in f.select_traces()],
    ],
)
def test_plotly_api_on_a_lazy_figure_turns_it_into_a_figure(use, monkeypatch):
    """Anything of plotly's API materialises the figure in place: it is then the plotly Figure of its dicts,
    and the change made through the API is what it sends."""
    fig, eager = _pair(monkeypatch)
    assert use(fig) == use(eager)
    assert type(fig) is Figure and isinstance(fig, go.Figure)
    assert _json(fig) == _json(eager)


def test_a_download_of_a_lazy_figure_leaves_it_lazy(monkeypatch):
    """ui.widgets.download_figure's HTML (plotly's to_html, which reads to_dict) and to_json: the same
    figure as the plotly Figure's, and a shared figure stays lazy for the sessions drawing it."""
    fig, eager = _pair(monkeypatch)
    html = fig.to_html(include_plotlyjs="cdn", full_html=True)
    assert type(fig) is LazyFigure
    sent = fig.to_dict()
    assert to_json_plotly(sent["data"]) in html and to_json_plotly(sent["layout"]) in html
    assert json.loads(fig.to_json()) == _plotly(eager) and type(fig) is LazyFigure


def test_the_cache_counts_a_lazy_figures_encoded_arrays(monkeypatch):
    """lib.serving.budget.figure_nbytes of a lazy figure: its dicts, plus the base64 text it will keep of its arrays
    once sent (counted when the figure enters the cache), so the byte-bounded cache stays bounded."""
    from lib.serving.budget import figure_nbytes, plain_nbytes

    fig, _ = _pair(monkeypatch)
    arrays = sum(t["z"].nbytes for t in fig._data)
    seen: set[int] = set()
    counted = figure_nbytes(fig) - plain_nbytes(fig._data, seen) - plain_nbytes(fig._layout, seen)
    fig.to_dict()
    kept = sum(len(spec["bdata"]) for _, spec in fig._b64.values())
    assert counted == arrays * 4 // 3 and kept <= counted + 4 * len(fig._data)  # up to base64's padding
    assert type(fig) is LazyFigure


def test_a_materialised_figure_is_plotlys(monkeypatch):
    fig, eager = _pair(monkeypatch)
    assert fig.layout.title.text == eager.layout.title.text
    assert fig == eager and [t.z.tolist() for t in fig.data] == [t.z.tolist() for t in eager.data]
    assert figures.materialised(fig) is fig


def test_copies_and_pickles_of_a_lazy_figure_are_plotly_figures(monkeypatch):
    fig, eager = _pair(monkeypatch)
    for other in (copy.deepcopy(fig), pickle.loads(pickle.dumps(fig)), go.Figure(fig)):
        assert _scales(_json(other)) == _scales(_json(eager))  # plotly validates these copies
    assert type(fig) is Figure


UPDATES = [
    {"title": {"font": {"size": 30}}, "height": 777},  # nested dicts merged key by key
    {"xaxis3": {"showgrid": False, "title": {"text": "x"}}, "xaxis1": {"showline": True}},  # subplot axes
    {"shapes": [common.vline(1, {"color": "red"})]},  # a list where there was none
    {"shapes": [common.vline(1, {"color": "red"}), common.hline(2, {"width": 3})]},
    {"annotations": [{"font": {"color": "red"}}]},  # merged into every existing annotation (plotly's rule)
    {"annotations": []},  # leaves them
    {"margin": None, "coloraxis": {"colorbar": {"title": {"text": "cos"}}}},  # None removes a key
    {"paper_bgcolor": "#eee", "legend": {"orientation": "h"}},
]


@pytest.mark.parametrize("changes", UPDATES)
def test_update_layout_on_the_dicts_is_plotlys(changes, monkeypatch):
    """update_layout keeps a lazy figure lazy and changes it as plotly's update_layout changes the Figure,
    twice in a row (a shared figure is updated on every rerun)."""
    fig, eager = _pair(monkeypatch)
    before = copy.deepcopy(fig._layout)
    for _ in range(2):
        assert fig.update_layout(**changes) is fig
        eager.update_layout(**changes)
        assert type(fig) is LazyFigure
        assert _json(fig) == _json(eager)
    fig.update_layout({"height": 500}, width=600)
    eager.update_layout({"height": 500}, width=600)
    assert _json(fig) == _json(eager)
    assert before != fig._layout


def test_update_layout_with_a_path_or_overwrite_goes_through_plotly(monkeypatch):
    fig, eager = _pair(monkeypatch)
    fig.update_layout(title_text="a path")
    eager.update_layout(title_text="a path")
    assert type(fig) is Figure and _json(fig) == _json(eager)
    fig, eager = _pair(monkeypatch)
    fig.update_layout({"title": {"text": "new"}}, overwrite=True)
    eager.update_layout({"title": {"text": "new"}}, overwrite=True)
    assert _json(fig) == _json(eager)


def test_update_layout_never_changes_the_dicts_a_copy_shares(monkeypatch):
    """A copy (figure_dict) shares nested dicts with its original until one of them changes them."""
    fig, _ = _pair(monkeypatch)
    spec = figures.figure_dict(fig)
    other = common.figure(spec["data"], spec["layout"])
    fig.update_layout(title={"text": "changed"}, xaxis={"showgrid": False}, shapes=[{"type": "rect"}])
    assert "title" not in other.to_dict()["layout"] and fig.to_dict()["layout"]["title"]["text"] == "changed"
    assert "showgrid" not in other.to_dict()["layout"].get("xaxis", {})


def test_fitting_a_lazy_copy_leaves_the_original(monkeypatch):
    monkeypatch.delenv(common.VALIDATE_ENV, raising=False)
    fig = home.paired_cosine_heatmaps(
        _M, titles=["a", "b"], zrange=(0.0, 1.0), row_ticks=LABELS, hover={"hovertemplate": "%{z:.3f}"},
        text_max=8, first=1, height=400,
    )
    assert fitting.cell_text_changes(fig, 200)  # too narrow for the numbers
    sent = _json(fig)
    fitted = fitting.fit_cell_text(_copy(fig), 200)
    assert type(fitted) is LazyFigure and fitting.cell_text_changes(fitted, 200) == []
    assert all(t.get("texttemplate") == "" for t in _json(fitted)["data"] if t["type"] == "heatmap")
    assert _json(fig) == sent and type(fig) is LazyFigure


def test_many_sessions_drawing_and_reading_one_figure_at_once(monkeypatch):
    """A shared figure read by many threads (to_dict) while others use plotly's API on it: every reader gets
    the whole figure and the figure is materialised once."""
    fig, eager = _pair(monkeypatch)
    want = _json(eager)
    results, errors = [], []
    start = threading.Barrier(8)

    def work(k: int) -> None:
        try:
            start.wait()
            for _ in range(3):
                results.append(_json(fig) if k % 2 else (len(fig.data), _json(fig))[1])
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 24 and all(r == want for r in results)
    assert type(fig) is Figure


def test_figure_builds_plotly_figures_when_validating(monkeypatch):
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    assert type(common.figure([{"type": "bar", "y": [1]}])) is Figure
    monkeypatch.delenv(common.VALIDATE_ENV)
    data = [{"type": "bar", "y": [1], "name": None}, {"y": [2], "marker": {"color": None}}]  # a type-less scatter
    layout = {"height": None, "xaxis2": {}, "xaxis1": {"title": None, "showgrid": False}, "yaxis3": {"tickfont": {}},
              "yaxis2": {"title": {"text": "y", "font": {}}, "range": (0, 1)}, "title": {"text": None}}
    lazy = common.figure(data, layout)
    assert type(lazy) is LazyFigure
    assert _json(lazy) == _plotly(Figure(data=copy.deepcopy(data), layout=copy.deepcopy(layout), _validate=False))


# ------------------------------------------------------------------ the pages, with validation off (production)
PAGES = [Path(path).stem for path, _title, _default in chart_pages()]  # every page of app.py that charts at once


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "how"), [(p, "default") for p in PAGES] + [("attention", "presenter"), ("layers", "random weights")]
)
def test_pages_send_the_same_charts_without_validation(page, how, monkeypatch):
    """Each page run as in production (lazy figures, none validated) sends the same charts as with the tests'
    validation: the figure caches are emptied between the two runs so each builds its own figures. No figure
    needs plotly's objects on the way (none is materialised). Also in presenter mode (presenter_layout and
    fit_cell_text on every chart) and with a random-weights model (every title renamed: name_weights)."""
    from lib.inputs.presets import default_preset
    from lib.models.encoder import DEFAULT_MODEL, model_key
    from lib.serving.budget import ByteLRU, cache_budget_bytes
    from tests.conftest import page_test, seed
    from ui.cache import store

    built = []
    materialise = LazyFigure.materialise
    monkeypatch.setattr(LazyFigure, "materialise", lambda fig: built.append(type(fig)) or materialise(fig))
    settings = {"presenter": {"presenter": True}, "random weights": {"model": model_key(DEFAULT_MODEL, weights="random")}}

    def specs(results_of: ByteLRU | None = None) -> list[dict]:
        # a results cache of the app's size in place of the test process's shared one (kept for later tests):
        # empty, or holding the results of ``results_of`` but none of its figures, so each run builds its own
        # figures and the second does not compute the page's statistics again (the reference corpus's: ~20 s)
        fresh = ByteLRU(cache_budget_bytes())
        for key, (value, size) in list(results_of._entries.items()) if results_of is not None else ():
            if not (isinstance(key, tuple) and key[:1] == ("figure",)):
                fresh.put(key, value, size=lambda _v, n=size: n)
        monkeypatch.setattr(store, "RESULTS", fresh)
        at = page_test(f"pages/{page}.py")
        seed(at, preset=default_preset().id, **settings.get(how, {}))
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        return [_scales(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]

    monkeypatch.delenv(common.VALIDATE_ENV, raising=False)
    fast = specs()
    assert LazyFigure not in built  # every chart was sent from its dicts
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    checked = specs(results_of=store.RESULTS)
    assert fast and fast == checked
    if how == "random weights":
        titled = [c["layout"]["title"]["text"] for c in fast if c["layout"].get("title")]
        assert titled and all("random weights" in t for t in titled), titled
    if how == "presenter":
        assert all(c["layout"]["font"]["size"] == common.PRESENTER_FONT for c in fast)
