"""AppTest runs of pages/calculator.py (the toy attention calculator; it needs no model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import assert_page_ok, seed

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "calculator.py")


def _run() -> AppTest:
    return AppTest.from_file(PAGE, default_timeout=120).run()


def _edit(at: AppTest, name: str, row: int, column: str, value: str) -> AppTest:
    """Type `value` into one cell of a matrix editor (E, P, W_Q, ...) and rerun."""
    key = f"calc_{name}_v{at.session_state['calc_version']}"
    seed(at, **{key: {"edited_rows": {row: {column: value}}, "added_rows": [], "deleted_rows": []}})
    return at.run()


def _table(at: AppTest, columns: list[str], first_index: str | None = None, which: int = 0):
    """The `which`-th st.table whose columns are `columns` (and whose first row is `first_index`)."""
    found = [
        t.value
        for t in at.table
        if list(t.value.columns) == columns and (first_index is None or str(t.value.index[0]) == first_index)
    ]
    assert found, f"no table with columns {columns}"
    return found[which]


def _codes(at: AppTest) -> str:
    return "\n".join(c.value for c in at.code)



def _no_nan_or_inf_on_screen(at: AppTest) -> None:
    for t in at.table:
        text = " ".join(str(v) for v in t.value.to_numpy().ravel()).lower()
        assert "nan" not in text and "inf" not in text
    shown = " ".join(m.value for m in at.markdown).lower() + _codes(at).lower()
    assert " nan" not in shown and "[nan" not in shown and " inf" not in shown


def test_default_is_the_course_example():
    at = _run()
    assert_page_ok(at, charts=3)
    X = _table(at, ["dim 1", "dim 2"], "The")
    assert X.loc["The"].tolist() == ["1.1", "0"] and X.loc["sat"].tolist() == ["1.1", "1.1"]
    S = _table(at, ["The", "cat", "sat"])
    assert S.loc["sat"].tolist() == ["1.21", "1.21", "2.42"]
    out = _table(at, ["v1", "v2"], which=-1)  # V comes first, the output last
    assert out.loc["The"].tolist() == ["0.9573", "0.6214"]  # 2.2·e^1.21/(1 + 2e^1.21), by hand in the lib test
    codes = _codes(at)
    assert "Q[cat] · K[sat] = 0·1.1 + 1.1·1.1 = 1.21" in codes
    assert "weight[cat, sat] = 3.3535 / 7.707 = 0.4351" in codes
    assert [s.value for s in at.subheader if s.value.startswith("Step")][-1].startswith("Step 8")
    assert not at.session_state["calc_scale"] and not at.session_state["calc_causal"]
    _no_nan_or_inf_on_screen(at)


def test_edited_values_update_every_step():
    at = _run()
    at = _edit(at, "E", 0, "dim 1", "2")  # e(The) = [2, 0]
    assert_page_ok(at, charts=3)
    assert _table(at, ["dim 1", "dim 2"], "The").loc["The"].tolist() == ["2.1", "0"]
    # S[The, sat] = 2.1·1.1 + 0·1.1 = 2.31
    assert _table(at, ["The", "cat", "sat"]).loc["The"].tolist() == ["4.41", "0", "2.31"]
    # the same cell followed through the steps
    at.selectbox(key="calc_row").set_value(0).run()
    assert "Q[The] · K[sat] = 2.1·1.1 + 0·1.1 = 2.31" in _codes(at)


def test_toggles_scale_mask_temperature_and_block():
    at = _run()
    at.toggle(key="calc_scale").set_value(True)
    at.toggle(key="calc_causal").set_value(True)
    at.number_input(key="calc_temperature").set_value(0.5)
    at.toggle(key="calc_block").set_value(True)
    at.run()
    assert_page_ok(at, charts=3)
    scores = _table(at, ["The", "cat", "sat"], which=1)  # after Q Kᵀ: scaled and masked
    assert scores.loc["The"].tolist() == ["0.8556", "masked", "masked"]  # 1.21/√2, then the mask
    codes = _codes(at)
    assert "÷ √2" in codes and "causal mask" in codes  # the followed cell S[cat, sat] is masked
    assert "exp(S[cat, sat]) = exp(−∞) = 0" in codes
    at.selectbox(key="calc_row").set_value(2)
    at.selectbox(key="calc_col").set_value(0)
    at.run()
    assert "exp(0.8556 / 0.5) = " in _codes(at)  # S[sat, The] = 1.21/√2; temperature divides before exp
    assert any(h.value.startswith("5. Residual") for h in at.header)
    at.radio(key="calc_picture").set_value("after the whole block").run()
    assert_page_ok(at, charts=3)
    _no_nan_or_inf_on_screen(at)


@pytest.mark.parametrize(
    "typed, fragment",
    [("abc", "not a number"), ("", "empty"), ("nan", "NaN"), ("inf", "infinite"), ("1e400", "infinite")],
)
def test_bad_cell_keeps_the_last_valid_state(typed, fragment):
    at = _run()
    at = _edit(at, "E", 1, "dim 2", "3")  # a valid edit first: e(cat) = [0, 3]
    assert not at.error
    at = _edit(at, "E", 1, "dim 2", typed)
    assert not at.exception
    assert any(fragment in e.value and "row 'cat'" in e.value for e in at.error), [e.value for e in at.error]
    assert any("last valid" in w.value for w in at.warning)
    # the steps still show e(cat) = [0, 3], i.e. X[cat] = [0, 3.1]
    assert _table(at, ["dim 1", "dim 2"], "The").loc["cat"].tolist() == ["0", "3.1"]
    assert len(at.get("plotly_chart")) >= 3
    _no_nan_or_inf_on_screen(at)
    # fixing the cell updates again
    at = _edit(at, "E", 1, "dim 2", "1/2")
    assert not at.error
    assert _table(at, ["dim 1", "dim 2"], "The").loc["cat"].tolist() == ["0", "0.6"]


def test_huge_values_stay_finite():
    at = _run()
    at = _edit(at, "E", 0, "dim 1", "1e6")
    assert_page_ok(at, charts=3)
    weights_sum_note = " ".join(m.value for m in at.markdown)
    assert "Row cat" in weights_sum_note
    _no_nan_or_inf_on_screen(at)


def test_tokens_width_and_reset():
    at = _run()
    at.text_input(key="calc_tokens").set_value("the dog saw the cat").run()
    assert_page_ok(at, charts=3)
    X = _table(at, ["dim 1", "dim 2"], "the (1)")
    assert list(X.index) == ["the (1)", "dog", "saw", "the (4)", "cat"]
    E = at.data_editor(key=f"calc_E_v{at.session_state['calc_version']}").value
    assert list(E.index) == ["the", "dog", "saw", "cat"]  # a repeated word shares one embedding row

    at.text_input(key="calc_tokens").set_value("one").run()
    assert any("2 to 6 tokens" in e.value for e in at.error)
    assert list(_table(at, ["dim 1", "dim 2"], "the (1)").index)[-1] == "cat"  # last valid sentence kept

    at.text_input(key="calc_tokens").set_value("The cat sat").run()
    at.selectbox(key="calc_d").set_value(3).run()
    assert_page_ok(at, charts=3)
    assert _table(at, ["dim 1", "dim 2", "dim 3"], "The").loc["The"].tolist() == ["1.1", "0", "0"]
    assert any("dimensions 1 and 2 only" in c.value for c in at.caption)

    at.button(key="calc_reset").click().run()
    assert_page_ok(at, charts=3)
    assert at.session_state["calc_d"] == 2 and at.session_state["calc_tokens"] == "The cat sat"
    assert _table(at, ["dim 1", "dim 2"], "The").loc["cat"].tolist() == ["0", "1.1"]


def test_projection_matrix_edit():
    at = _run()
    at = _edit(at, "W_Q", 0, "out 2", "1")  # W_Q = [[1, 1], [0, 1]]
    assert_page_ok(at, charts=3)
    # Q[The] = [1.1, 0]·W_Q = [1.1, 1.1]; S[The, The] = 1.1·1.1 + 1.1·0 = 1.21, S[The, cat] = 1.1·1.1 = 1.21
    assert _table(at, ["The", "cat", "sat"]).loc["The"].tolist() == ["1.21", "1.21", "2.42"]
    assert "W_Q ≠ W_K" in " ".join(m.value for m in at.markdown)


def test_warm_up_exercise():
    at = _run()
    lines = " ".join(m.value for m in at.markdown)
    assert "[0.5, 0.5] + [0.3, -0.2] = **[0.8, 0.3]**" in lines  # lesson 002's expected output
    at.button(key="calc_warm_apple").click().run()
    assert not at.exception
    assert any("fruit" in i.value and "apple" in i.value for i in at.info)
    at.button(key="calc_warm_answer").click().run()
    assert_page_ok(at, charts=3)
    lines = " ".join(m.value for m in at.markdown)
    assert "apple in a fruit context" in lines and "apple in a company context" in lines


def test_apple_answer_moves_towards_food_and_technology_markers():
    """Every number true: the shown answer pulls fruit-apple to the food marker, company-apple to technology."""
    import json
    import re

    at = _run()
    at.button(key="calc_warm_answer").click().run()
    assert_page_ok(at, charts=3)
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    markers = {}
    for trace in fig["data"]:
        for t, x, y in zip(trace.get("text") or [], trace.get("x") or [], trace.get("y") or [], strict=False):
            if t and trace.get("marker", {}).get("symbol") == "diamond":  # the fixed reference words
                markers[t] = (float(x), float(y))
    assert "pear (food)" in markers and "laptop (technology)" in markers
    text = " ".join(m.value for m in at.markdown)

    def result(ctx: str) -> tuple[float, float]:
        m = re.search(rf"apple in a {ctx} context: .*? = \*\*\[([-\d.]+), ([-\d.]+)\]\*\*", text)
        return float(m.group(1)), float(m.group(2))

    def nearest(p: tuple[float, float]) -> str:
        return min(markers, key=lambda k: (markers[k][0] - p[0]) ** 2 + (markers[k][1] - p[1]) ** 2)

    assert nearest(result("fruit")) == "pear (food)"
    assert nearest(result("company")) == "laptop (technology)"


def test_a_followed_cell_that_no_longer_exists_goes_back_to_the_default_cell():
    at = _run()
    at.text_input(key="calc_tokens").set_value("the dog saw the old cat").run()
    at.selectbox(key="calc_row").set_value(5).run()
    at.selectbox(key="calc_col").set_value(4).run()
    at.text_input(key="calc_tokens").set_value("The cat sat").run()  # rows 5 and 4 are gone
    assert_page_ok(at, charts=3)
    assert at.session_state["calc_row"] == 1 and at.session_state["calc_col"] == 2  # S[cat, sat], as at the start
    at.text_input(key="calc_tokens").set_value("The cat").run()  # the default column is gone too: clamped
    assert_page_ok(at, charts=3)
    assert at.session_state["calc_row"] == 1 and at.session_state["calc_col"] == 1


def test_ties_and_the_models_scaling_are_said_as_the_numbers_are():
    """The course's example has a tie in row "cat" (S[cat, cat] = S[cat, sat] = 1.21): the text names both.
    The scaling note gives the default model's own √d_k (hidden size over heads, from its configuration)."""
    import json

    import numpy as np

    from lib.models.encoder import default_model_path
    from lib.teaching import toy_attention as ta

    at = _run()
    assert_page_ok(at, charts=3)
    text = " ".join(m.value for m in at.markdown)
    X = np.array([ta.COURSE_EMBEDDINGS[t] for t in ta.COURSE_TOKENS]) + np.array(ta.COURSE_POSITIONS)
    S = X @ X.T  # Q = K = X, no scaling
    row = S[1]  # "cat"
    tied = [ta.COURSE_TOKENS[j] for j in np.flatnonzero(np.isclose(row, row.max()))]
    assert len(tied) == 2  # the course's example ties cat with sat
    assert f"the largest score is {row.max():.2f}, with {' and '.join(tied)} (a tie)" in text
    cfg = json.loads((default_model_path() / "config.json").read_text())
    d_k = cfg["hidden_size"] // cfg["num_attention_heads"]
    assert f"the app's default model by √{d_k} ≈ {np.sqrt(d_k):.2f}" in text
    assert "BERT divides by √d_k = 8" not in text and "Here the token **" in text
