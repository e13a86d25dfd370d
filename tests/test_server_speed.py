"""Server-side speed settings (issue 16): torch's thread count, and the cheap per-run figure copy."""

import plotly.graph_objects as go
import pytest
import torch

from ui import cache, widgets


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
    assert cache.limit_torch_threads() == expected
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
