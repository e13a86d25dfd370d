"""Server-side speed settings (a rerun's server CPU): torch's thread count, and the cheap per-run figure copy."""

import plotly.graph_objects as go
import pytest
import torch

from ui import startup, widgets


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(("value", "expected"), [(None, 1), ("2", 2), ("0", 1), ("many", 1)])
def test_torch_threads_from_environment(monkeypatch, restore_threads, value, expected):
    if value is None:
        monkeypatch.delenv("CONTEXT_LENS_TORCH_THREADS", raising=False)
    else:
        monkeypatch.setenv("CONTEXT_LENS_TORCH_THREADS", value)
    assert startup.limit_torch_threads() == expected
    assert torch.get_num_threads() == expected


def test_chart_copy_is_independent_and_equal():
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], texttemplate="%{z}"))
    fig.update_layout(title="t", height=300)
    shown = widgets._copy(fig)
    assert shown is not fig
    assert shown.to_dict() == fig.to_dict()
    shown.data[0].texttemplate = ""
    shown.update_layout(height=500)
    assert fig.data[0].texttemplate == "%{z}"
    assert fig.layout.height == 300


def test_chart_copy_of_a_dict_is_validated():
    with pytest.raises(ValueError):
        widgets._copy({"data": [{"type": "heatmap", "not_a_property": 1}]})


def test_name_weights_names_the_model_once_and_leaves_the_original():
    from lib.charts.layers import trajectory_chart

    fig = trajectory_chart(["0 emb.", "1"], all_pairs=[0.5, 0.6], title="Mean cosine")
    named = widgets.name_weights(fig, "random weights, seed 3")
    assert named.layout.title.text == "Mean cosine (random weights, seed 3)"
    assert named.layout.title.x == 0.0  # the rest of the title kept
    assert widgets.name_weights(named, "random weights, seed 3").layout.title.text == named.layout.title.text
    assert fig.layout.title.text == "Mean cosine"
    untitled = widgets.name_weights({"data": [{"type": "bar", "y": [1]}], "layout": {}}, "random weights, seed 0")
    assert untitled.layout.title.text == "Model with random weights, seed 0"
    tuned = widgets.name_weights({"data": [{"type": "bar", "y": [1]}], "layout": {}}, "fine-tuned on 8 'bank' sentences, top 2 layers, 20 epochs, seed 0")
    assert tuned.layout.title.text == "Model fine-tuned on 8 'bank' sentences, top 2 layers, 20 epochs, seed 0"
    assert [list(t.y) for t in named.data] == [list(t.y) for t in fig.data]


def test_chart_copy_hides_cell_numbers_without_touching_a_shared_figure():
    import numpy as np

    from lib.charts.fitting import fit_cell_text
    from lib.charts.home import before_after_heatmaps

    m = np.eye(12)
    shared = before_after_heatmaps(m, m, [f"s{i}" for i in range(12)], [None] * 12, ("a", "b"))
    shown = fit_cell_text(widgets._copy(shared), 300)  # too narrow for the numbers
    assert {t.texttemplate for t in shown.data} == {""}
    assert {t.texttemplate for t in shared.data} == {"%{text}"}
