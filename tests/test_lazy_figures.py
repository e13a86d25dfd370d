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
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit.elements.plotly_chart  # noqa: F401  (registers Streamlit's default template, as in the app)
from plotly.io.json import to_json_plotly

from lib.charts import (
    attention,
    common,
    context,
    figures,
    fitting,
    home,
    layers,
    lens,
    lesson,
    projection,
    toy,
)
from lib.charts.figures import Figure, LazyFigure
from lib.models.attention import special_token_share, target_attention, token_labels
from tests.test_charts_layers import BUILDERS as LAYER_BUILDERS
from tests.test_charts_layers import RNG as LAYERS_RNG
from tests.test_charts_layers import _scales

RNG = np.random.default_rng(16)
SENSES = ["river", "money", "river", None, "money", "bench"]
LABELS = [f"S{i + 1} · <b>{i}</b> & co" for i in range(6)]
NAMES = layers.layer_names(6)


def _r(*shape) -> np.ndarray:
    return RNG.random(shape)


@pytest.fixture(scope="module")
def real(encoder):
    """Attention and vectors of two real sentences (the bundled model)."""
    enc = encoder.encode(["We sat on the river bank & watched.", "The bank raised its <rates> again."])
    att = enc.attentions[0]
    labels = token_labels(enc.tokens[0])
    ta = target_attention(att, [enc.tokens[0].index("bank")])
    pos = [toks.index("bank") for toks in enc.tokens]
    coords = [np.stack([enc.hidden_states[i][j, p, :3] for i, p in enumerate(pos)] * 2) for j in range(7)]
    return SimpleNamespace(
        enc=enc, att=att, labels=labels, ta=ta, coords=coords,
        share=special_token_share(
            att, enc.tokens[0], enc.special[0], ids=enc.token_ids[0], roles=encoder.special_roles
        ),
    )


# Inputs are drawn once, here, so that a builder called twice (validated and not) gets the same ones.
_W = [f"w<{i}>" for i in range(7)]
_SHIFT, _ATT, _STRIP, _CORR, _COS7 = _r(7), _r(7), _r(7, 7), _r(6) * 2 - 1, _r(7)
_XY, _ACC, _CHANCE = _r(2, 6), [_r(7), _r(7)], [_r(7) * 0.5, None]
_POOL = _r(4, 7)
_PAIRS, _SAME = _r(15), RNG.random(15) > 0.5
_X3, _Y3 = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
_M = [_r(6, 6) for _ in range(2)]
_FP6, _FP12, _LENS, _LENS_TOP = _r(6), _r(12), _r(7, 2), _r(7)


def _suite(name: str):
    """A builder of tests/test_charts_layers.py (it draws its own inputs from that module's RNG)."""
    return lambda real: LAYER_BUILDERS[name]()


BUILDERS = {
    "attention.attention_heatmap": lambda r: attention.attention_heatmap(r.att[2, 3], r.labels, title="<t>"),
    "attention.attention_overview": lambda r: attention.attention_overview(r.att, r.labels, selected=(1, 2)),
    "attention.attention_overview[pooled]": lambda r: attention.attention_overview(
        r.att, r.labels, max_tokens=4
    ),
    "attention.target_attention_bars": lambda r: attention.target_attention_bars(
        r.ta.attends_to_mean[2], r.ta.attended_by_mean[2], r.labels, r.ta.token_indices, title="t"
    ),
    "attention.target_attention_by_layer": lambda r: attention.target_attention_by_layer(
        r.ta.attends_to_mean, r.ta.attended_by_mean, r.labels
    ),
    "attention.special_token_share_chart": lambda r: attention.special_token_share_chart(r.share, head=3),
    "attention.first_position_chart": lambda r: attention.first_position_chart(
        [("a <b>", _FP6, 0.2), ("b", _FP12, 0.1)], title="<t>"
    ),
    "lens.lens_word_chart": lambda r: lens.lens_word_chart(_LENS, ["river", "<b>"], _LENS_TOP, title="<t>"),
    "context.shift_bars": lambda r: context.shift_bars(_W, _SHIFT, _ATT, title="s"),
    "context.word_bars": lambda r: context.word_bars(_W, _ATT, axis_title="attention", title="w"),
    "context.shift_strip": lambda r: context.shift_strip(_W, _STRIP, NAMES, title="s"),
    "context.attention_vs_shift": lambda r: context.attention_vs_shift(_W, _ATT, _SHIFT, layer=3, title="a"),
    "context.correlation_by_layer": lambda r: context.correlation_by_layer(_CORR, layer=3),
    "context.edit_by_layer": lambda r: context.edit_by_layer(
        _COS7, NAMES, ["river"] * 4 + ["money"] * 3, ["money"] * 7, ["river", "money"], title="e"
    ),
    "controls.probe_chart": _suite("probe_chart"),
    "controls.two_model_chart": _suite("two_model_chart"),
    "geometry.anisotropy_by_layer": _suite("anisotropy_by_layer"),
    "geometry.similarity_before_after": _suite("similarity_before_after"),
    "geometry.dimension_profile": _suite("dimension_profile"),
    "geometry.norms_by_layer": _suite("norms_by_layer"),
    "geometry.gap_bars": _suite("gap_bars"),
    "home.paired_cosine_heatmaps": lambda r: home.paired_cosine_heatmaps(
        _M,
        titles=["a", "<b>"],
        zrange=(0.0, 1.0),
        row_ticks=LABELS,
        hover={"hovertemplate": "%{z:.3f}"},
        text_max=8,
        first=1,
        height=400,
    ),
    "home.before_after_heatmaps": _suite("before_after_heatmaps"),
    "home.similarity_heatmap": _suite("home_similarity_heatmap"),
    "layers.similarity_heatmap": _suite("similarity_heatmap"),
    "layers.layer_small_multiples": _suite("layer_small_multiples"),
    "layers.trajectory_chart": _suite("trajectory_chart"),
    "layers.static_contextual_chart": _suite("static_contextual_chart"),
    "layers.ethayarajh_chart": _suite("ethayarajh_chart"),
    "layers.readout_chart": _suite("readout_chart"),
    "layers.show_layer_mark": lambda r: layers.show_layer_mark(
        layers.readout_chart(
            layers.layer_names(6), np.linspace(0.3, 0.9, 7), 0.4, best=6, pooled=("last 4", 0.7), all_marks=True
        ),
        7,
    ),
    "lesson.centroid_scatter": lambda r: lesson.centroid_scatter(
        _XY[0],
        _XY[1],
        ["river", "money"] * 3,
        LABELS,
        [str(i) for i in range(6)],
        "river",
        "money",
        highlight=[1],
        title="c",
    ),
    "lesson.readout_lines": lambda r: lesson.readout_lines(
        ["a", "<b>"], _ACC, [0.5, 0.6], title="r", chance=_CHANCE
    ),
    "lesson.pooling_panels": lambda r: lesson.pooling_panels(*_POOL, title="p"),
    "lesson.pair_strip": lambda r: lesson.pair_strip(
        _PAIRS, _SAME, [f"p{i}" for i in range(15)], highlight={2: "x"}
    ),
    "projection.projection_scatter": lambda r: projection.projection_scatter(
        r.coords[6][:4, :2],
        ["river", "money", None, "river"],
        LABELS[:4],
        ["1", "2", "3", "4"],
        context=r.coords[3][:, :2],
        context_hover=["c"] * 4,
        axis_titles=("PC1", "PC2"),
        title="p",
    ),
    "projection.projection_scatter[3d]": lambda r: projection.projection_scatter(
        r.coords[6][:4], ["river", "money", None, "river"], LABELS[:4], ["1", "2", "3", "4"]
    ),
    "projection.empty_map": lambda r: projection.empty_map("Accept three sentences <b>to</b> see the map"),
    "projection.projection_small_multiples": lambda r: projection.projection_small_multiples(
        [c[:4, :2] for c in r.coords],
        ["river", "money", "money", "river"],
        LABELS[:4],
        ["1", "2", "3", "4"],
        [f"layer {j}" for j in range(7)],
        cols=3,
    ),
    "toy.vector_arrows": lambda r: toy.vector_arrows(_X3, _Y3, ["The", "<b>cat</b>", "sat"], title="v"),
    "toy.warmup_arrows": lambda r: toy.warmup_arrows(
        ["bank", "bank", "apple"],
        ["finance", "nature", "fruit"],
        np.array([[0.5, 0.5], [0.5, 0.5], [0.3, 0.3]]),
        np.array([[0.8, 0.3], [0.3, 0.8], [np.nan, np.nan]]),
        references={"money": (0.9, 0.1)},
    ),
}
CHART_MODULES = (
    "attention",
    "lens",
    "context",
    "controls",
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
    state = LAYERS_RNG.bit_generator.state
    monkeypatch.delenv(common.VALIDATE_ENV, raising=False)
    lazy = build()
    monkeypatch.setenv(common.VALIDATE_ENV, "1")
    LAYERS_RNG.bit_generator.state = state  # the same random input for the builders of test_charts_layers
    return lazy, build()


def test_every_chart_builder_is_checked():
    """Each public function of lib/charts that returns a figure has an entry in BUILDERS."""
    found = set()
    for name in CHART_MODULES:
        mod = importlib.import_module(f"lib.charts.{name}")
        for fname, fn in vars(mod).items():
            public = inspect.isfunction(fn) and fn.__module__ == mod.__name__ and not fname.startswith("_")
            if public and "Figure" in str(inspect.signature(fn).return_annotation):
                found.add(f"{name}.{fname}")
    assert found == {k.split("[")[0] for k in BUILDERS}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_lazy_figure_sends_what_plotly_would(name, real, monkeypatch):
    """Production's lazy figure gives the same JSON as the validated plotly Figure of the tests and as an
    unvalidated plotly Figure of the same dicts (template included), and stays lazy while doing it; so do
    the presenter's copy and the copy fitted to a narrow column (ui.widgets.chart's paths)."""
    lazy, checked = _both(lambda: BUILDERS[name](real), monkeypatch)
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
PAGES = ["home", "attention", "layers", "context", "projections", "anisotropy", "calculator", "lesson"]


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
    from tests.conftest import page_test, seed
    from ui import cache

    built = []
    materialise = LazyFigure.materialise
    monkeypatch.setattr(LazyFigure, "materialise", lambda fig: built.append(type(fig)) or materialise(fig))
    settings = {"presenter": {"presenter": True}, "random weights": {"model": model_key(DEFAULT_MODEL, weights="random")}}

    def specs() -> list[dict]:
        cache.RESULTS.clear()
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
    checked = specs()
    assert fast and fast == checked
    if how == "random weights":
        assert all("random weights" in c["layout"]["title"]["text"] for c in fast if c["layout"].get("title"))
    if how == "presenter":
        assert all(c["layout"]["font"]["size"] == common.PRESENTER_FONT for c in fast)
