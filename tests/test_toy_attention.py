"""lib.teaching.toy_attention: the course's worked example by hand, torch as a reference, a softmax that never overflows."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from lib.teaching.toy_attention import (
    COURSE_EMBEDDINGS,
    COURSE_POSITIONS,
    COURSE_TOKENS,
    AttentionSteps,
    ToyAttentionError,
    attention_steps,
    contextualize,
    default_embedding,
    default_position,
    encoder_block,
    format_number,
    parse_cell,
    parse_matrix,
    parse_tokens,
    step_facts,
    token_summaries,
    unique_labels,
    worked_cell,
)

# --- the course example (manual section 9), worked by hand ---------------------------------------------
# e(The) = [1, 0], e(cat) = [0, 1], e(sat) = [1, 1]; p1 = [0.1, 0], p2 = [0, 0.1], p3 = [0.1, 0.1]
# X = E + P = [[1.1, 0], [0, 1.1], [1.1, 1.1]];  Q = K = V = X (identity projections), no scaling.
COURSE_X = [[1.1, 0.0], [0.0, 1.1], [1.1, 1.1]]

# S = X Xᵀ:  The·The = 1.1² = 1.21, The·cat = 0, The·sat = 1.1² = 1.21,
#            cat·cat = 1.21, cat·sat = 1.21, sat·sat = 1.1² + 1.1² = 2.42
COURSE_S = [[1.21, 0.0, 1.21], [0.0, 1.21, 1.21], [1.21, 1.21, 2.42]]

# exp(1.21) = 3.3534846525..., exp(0) = 1, exp(2.42) = 11.2458593148...
A = 3.3534846525490236
B = 11.245859314881844
COURSE_EXP = [[A, 1.0, A], [1.0, A, A], [A, A, B]]

# row sums: The and cat: 1 + 2·exp(1.21) = 7.7069693051; sat: 2·exp(1.21) + exp(2.42) = 17.9528286200
COURSE_ROW_SUMS = [7.706969305098047, 7.706969305098047, 17.95282861997989]

# weights = exp / row sum:  3.35348/7.70697 = 0.43512, 1/7.70697 = 0.12975,
#                           3.35348/17.95283 = 0.18679, 11.24586/17.95283 = 0.62641
W_BIG, W_SMALL, W_SAT_OTHER, W_SAT_SELF = 0.43512365494056693, 0.12975269011886614, 0.18679422187637304, 0.626411556247254
COURSE_WEIGHTS = [[W_BIG, W_SMALL, W_BIG], [W_SMALL, W_BIG, W_BIG], [W_SAT_OTHER, W_SAT_OTHER, W_SAT_SELF]]

# output = weights · V:
#   The: 0.43512·[1.1, 0] + 0.12975·[0, 1.1] + 0.43512·[1.1, 1.1] = [2.2·0.43512, 1.1·(0.43512 + 0.12975)]
#      = [0.95727, 0.62136];  cat is the mirror image [0.62136, 0.95727]
#   sat: 0.18679·[1.1, 0] + 0.18679·[0, 1.1] + 0.62641·[1.1, 1.1] = 1.1·(0.18679 + 0.62641)·[1, 1] = [0.89453, 0.89453]
COURSE_OUTPUT = [
    [0.9572720408692473, 0.6213639795653765],
    [0.6213639795653765, 0.9572720408692473],
    [0.8945263559359898, 0.8945263559359898],
]


def test_hand_values_are_what_the_comments_say():
    """The literals above are the hand derivation, re-derived here with math.exp (not with the code under test)."""
    assert math.exp(1.21) == pytest.approx(A, abs=1e-12)
    assert math.exp(2.42) == pytest.approx(B, abs=1e-12)
    assert COURSE_ROW_SUMS[0] == pytest.approx(1 + 2 * A, abs=1e-12)
    assert COURSE_ROW_SUMS[2] == pytest.approx(2 * A + B, abs=1e-12)
    assert math.isclose(W_BIG, A / (1 + 2 * A), abs_tol=1e-12)
    assert math.isclose(W_SAT_SELF, B / (2 * A + B), abs_tol=1e-12)
    assert COURSE_OUTPUT[0][0] == pytest.approx(2.2 * W_BIG, abs=1e-12)


def course_steps(**kwargs) -> AttentionSteps:
    E = np.array([COURSE_EMBEDDINGS[t] for t in COURSE_TOKENS])
    P = np.array(COURSE_POSITIONS)
    return attention_steps(E + P, **kwargs)


def test_course_example_every_step():
    s = course_steps()
    np.testing.assert_allclose(s.X, COURSE_X, atol=1e-12)
    for M in (s.Q, s.K, s.V):
        np.testing.assert_allclose(M, COURSE_X, atol=1e-12)
    np.testing.assert_allclose(s.raw_scores, COURSE_S, atol=1e-12)
    np.testing.assert_allclose(s.scores, COURSE_S, atol=1e-12)  # no scaling, no mask
    np.testing.assert_allclose(s.exp_shift, [0, 0, 0])  # small scores: plain exp, as by hand
    np.testing.assert_allclose(s.exp_scores, COURSE_EXP, rtol=1e-10)
    np.testing.assert_allclose(s.row_sums, COURSE_ROW_SUMS, rtol=1e-10)
    np.testing.assert_allclose(s.weights, COURSE_WEIGHTS, rtol=1e-10)
    np.testing.assert_allclose(s.output, COURSE_OUTPUT, rtol=1e-10)
    assert s.scale_factor == 1.0 and s.temperature == 1.0 and not s.causal


def test_course_example_scaled_and_causal_by_hand():
    s = course_steps(scale=True)
    # ÷ √2: 1.21/√2 = 0.85560, 2.42/√2 = 1.71120
    np.testing.assert_allclose(s.scores[2], [1.21 / math.sqrt(2), 1.21 / math.sqrt(2), 2.42 / math.sqrt(2)])
    a, b = math.exp(1.21 / math.sqrt(2)), math.exp(2.42 / math.sqrt(2))
    np.testing.assert_allclose(s.weights[2], [a / (2 * a + b), a / (2 * a + b), b / (2 * a + b)], rtol=1e-10)

    c = course_steps(causal=True)
    # The sees only itself; cat sees The (score 0) and itself (1.21); sat sees all three, as without the mask.
    assert np.isneginf(c.scores[0, 1]) and np.isneginf(c.scores[0, 2]) and np.isneginf(c.scores[1, 2])
    np.testing.assert_allclose(c.weights[0], [1, 0, 0])
    np.testing.assert_allclose(c.weights[1], [1 / (1 + A), A / (1 + A), 0], rtol=1e-10)
    np.testing.assert_allclose(c.weights[2], COURSE_WEIGHTS[2], rtol=1e-10)
    np.testing.assert_allclose(c.output[0], COURSE_X[0])  # attending only to itself leaves The unchanged


def test_step_facts_of_the_course_example_by_hand():
    f = step_facts(course_steps(), 1)  # row "cat": S = [0, 1.21, 1.21]
    assert f.identity_projections and f.same_query_key and f.symmetric_scores
    assert f.largest_score == (2, 2)  # sat·sat = 2.42
    assert f.row_best == 1  # the tie 1.21 = 1.21 goes to the earlier key
    assert f.d_k == 2 and f.sqrt_d_k == pytest.approx(math.sqrt(2))
    assert f.exp_ratio == pytest.approx(A / 1.0)  # exp(1.21) / exp(0)
    assert f.row_sum_error < 1e-12
    # a causal mask: row "The" sees only itself, so the ratio of its one exp is 1
    assert step_facts(course_steps(causal=True), 0).exp_ratio == pytest.approx(1.0)
    # W_Q ≠ W_K: neither identity nor symmetric
    X = np.array(COURSE_X)
    g = step_facts(attention_steps(X, W_q=np.array([[1.0, 0.0], [1.0, 1.0]])), 0)
    assert not g.identity_projections and not g.same_query_key and not g.symmetric_scores


def test_temperature_divides_scores_before_softmax():
    t2 = course_steps(temperature=2.0)
    np.testing.assert_allclose(t2.scores, COURSE_S)  # scores are before the temperature
    # row The at T = 2: exp(0.605), exp(0), exp(0.605)
    e = math.exp(0.605)
    np.testing.assert_allclose(t2.weights[0], [e / (1 + 2 * e), 1 / (1 + 2 * e), e / (1 + 2 * e)], rtol=1e-10)
    # a very low temperature approaches "all weight on the best key"
    cold = course_steps(temperature=0.01)
    np.testing.assert_allclose(cold.weights[2], [0, 0, 1], atol=1e-12)


def test_projections_and_shapes():
    X = np.array(COURSE_X)
    Wq = [[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]]  # (2, 3)
    Wk = [[0.5, 0.0, 1.0], [1.0, 1.0, 0.0]]
    Wv = [[2.0], [3.0]]  # (2, 1)
    s = attention_steps(X, Wq, Wk, Wv)
    assert s.Q.shape == (3, 3) and s.K.shape == (3, 3) and s.V.shape == (3, 1) and s.output.shape == (3, 1)
    # by hand: Q[The] = [1.1·1, 1.1·2, 0] = [1.1, 2.2, 0]; K[cat] = [0 + 1.1, 1.1, 0] = [1.1, 1.1, 0]
    np.testing.assert_allclose(s.Q[0], [1.1, 2.2, 0.0])
    np.testing.assert_allclose(s.K[1], [1.1, 1.1, 0.0])
    assert s.raw_scores[0, 1] == pytest.approx(1.1 * 1.1 + 2.2 * 1.1)
    np.testing.assert_allclose(s.V[:, 0], [2.2, 3.3, 5.5])


@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_torch_scaled_dot_product_attention(scale, causal, seed):
    rng = np.random.default_rng(seed)
    n, d, d_k, d_v = int(rng.integers(2, 7)), int(rng.integers(2, 5)), 3, 2
    X = rng.normal(size=(n, d)) * 2
    Wq, Wk, Wv = rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k)), rng.normal(size=(d, d_v))
    temperature = [1.0, 0.5, 3.0][seed]
    s = attention_steps(X, Wq, Wk, Wv, scale=scale, causal=causal, temperature=temperature)

    t = torch.from_numpy
    q, k, v = t(X @ Wq), t(X @ Wk), t(X @ Wv)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], is_causal=causal, scale=(1 / math.sqrt(d_k) if scale else 1.0) / temperature
    )[0].numpy()
    np.testing.assert_allclose(s.output, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s.weights.sum(axis=1), np.ones(n), atol=1e-12)
    assert (s.weights >= 0).all()


def test_identity_when_projection_is_none_matches_torch_self_attention():
    X = np.random.default_rng(5).normal(size=(4, 3))
    s = attention_steps(X, scale=True)
    xt = torch.from_numpy(X)[None]
    ref = torch.nn.functional.scaled_dot_product_attention(xt, xt, xt)[0].numpy()
    np.testing.assert_allclose(s.output, ref, rtol=1e-10)


def test_encoder_block_matches_torch_layer_norm():
    X = np.array(COURSE_X)
    A = np.array(COURSE_OUTPUT)
    W1 = np.array([[1.0, -1.0, 0.5], [0.5, 1.0, -1.0]])
    W2 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = encoder_block(X, A, W1=W1, W2=W2)
    ln = torch.nn.functional.layer_norm
    h1 = ln(torch.from_numpy(X + A), (2,), eps=1e-5)
    ffn = torch.relu(h1 @ torch.from_numpy(W1)) @ torch.from_numpy(W2)
    ref = ln(h1 + ffn, (2,), eps=1e-5).numpy()
    np.testing.assert_allclose(b.output, ref, rtol=1e-10)
    # in d = 2 LayerNorm leaves only the sign of x1 - x2: The (x1 > x2) -> about [1, -1]; sat (x1 = x2) -> [0, 0]
    np.testing.assert_allclose(b.norm1[0], [1, -1], atol=1e-4)
    np.testing.assert_allclose(b.norm1[2], [0, 0], atol=1e-12)


# --- numerically stable softmax ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "X",
    [
        [[1e6, 0.0], [0.0, 1e6]],  # scores 1e12: exp overflows unless shifted
        [[1e3, 0.0], [-1e3, 0.0]],  # scores ±1e6 in the same row
        [[1e-3, 0.0], [1e-3, 0.0]],  # all-equal rows
        [[-1e6, 0.0], [0.0, 0.0]],  # a row of zeros next to a huge one
    ],
)
def test_extreme_values_give_weights_without_warnings(X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = attention_steps(X)
    assert np.isfinite(s.weights).all() and np.isfinite(s.output).all()
    np.testing.assert_allclose(s.weights.sum(axis=1), 1.0)


def test_extreme_values_by_hand():
    # Scores [[1e12, 0], [0, 1e12]]: each token puts all its weight on itself.
    s = attention_steps([[1e6, 0.0], [0.0, 1e6]])
    np.testing.assert_allclose(s.weights, [[1, 0], [0, 1]])
    assert s.exp_shift.tolist() == [1e12, 1e12]
    # Row of scores 1e6 and -1e6: X = [[1e3, 0], [-1e3, 0]] gives S = [[1e6, -1e6], [-1e6, 1e6]].
    s = attention_steps([[1e3, 0.0], [-1e3, 0.0]])
    np.testing.assert_allclose(s.weights, [[1, 0], [0, 1]])
    # Equal scores in a row: uniform weights, 1/n each.
    s = attention_steps([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(s.weights, np.full((3, 3), 1 / 3))
    # All scores very negative: X = [[1e3, 0], [-1e3, 0]] with W_K = -I flips the signs.
    s = attention_steps([[1e3, 0.0], [-1e3, 0.0]], W_k=[[-1.0, 0.0], [0.0, -1.0]])
    np.testing.assert_allclose(s.weights, [[0, 1], [1, 0]])


@pytest.mark.parametrize(
    "X, fragment",
    [
        ([[1.0, float("nan")], [0.0, 1.0]], "row 1, column 2"),
        ([[1.0, 0.0], [float("inf"), 1.0]], "row 2, column 1"),
        ([[1.0, "cat"], [0.0, 1.0]], "numbers only"),
        ([], "at least 1 × 1"),
        ([1.0, 2.0], "rows × columns"),
        ([[1e200, 0.0], [0.0, 1.0]], "too large"),
    ],
)
def test_bad_input_gives_a_clear_error(X, fragment):
    with pytest.raises(ToyAttentionError, match=fragment):
        attention_steps(X)


def test_bad_parameters_give_clear_errors():
    X = COURSE_X
    with pytest.raises(ToyAttentionError, match="above 0"):
        attention_steps(X, temperature=0)
    with pytest.raises(ToyAttentionError, match="above 0"):
        attention_steps(X, temperature=float("nan"))
    with pytest.raises(ToyAttentionError, match="2 rows"):
        attention_steps(X, W_q=np.eye(3))
    with pytest.raises(ToyAttentionError, match="same number of columns"):
        attention_steps(X, W_q=np.ones((2, 3)), W_k=np.ones((2, 2)))
    with pytest.raises(ToyAttentionError, match="too small"):
        attention_steps([[1e100, 0.0], [0.0, 1.0]], temperature=1e-250)
    assert issubclass(ToyAttentionError, ValueError)


# --- parsing typed cells and tokens ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value", [("0.5", 0.5), (" -1e6 ", -1e6), ("1/4", 0.25), ("1,5", 1.5), ("−2", -2.0), (3, 3.0)]
)
def test_parse_cell_accepts_numbers(text, value):
    assert parse_cell(text, "cell") == value


@pytest.mark.parametrize(
    "text, fragment",
    [("", "empty"), (None, "empty"), ("abc", "'abc', which is not a number"), ("nan", "NaN"), ("inf", "infinite"),
     ("1/0", "not a number"), (float("nan"), "NaN"), (True, "type a number")],
)
def test_parse_cell_rejects_with_location(text, fragment):
    with pytest.raises(ToyAttentionError, match=fragment) as err:
        parse_cell(text, "E, row 'cat', column 'e2',")
    assert "row 'cat'" in str(err.value)


def test_parse_matrix_names_the_bad_cell():
    assert parse_matrix([["1", "0"], ["0.5", "2"]], "E", ["a", "b"], ["x", "y"]).tolist() == [[1, 0], [0.5, 2]]
    with pytest.raises(ToyAttentionError, match="row 'b', column 'y'"):
        parse_matrix([["1", "0"], ["0.5", "two"]], "E", ["a", "b"], ["x", "y"])


def test_tokens_and_labels():
    assert parse_tokens(" The  cat sat ") == ("The", "cat", "sat")
    with pytest.raises(ToyAttentionError, match="2 to 6 tokens"):
        parse_tokens("cat")
    with pytest.raises(ToyAttentionError, match="2 to 6 tokens"):
        parse_tokens("a b c d e f g")
    assert unique_labels(["the", "cat", "the"]) == ["the (1)", "cat", "the (3)"]


def test_defaults_reproduce_the_course():
    assert [default_embedding(t, 2) for t in COURSE_TOKENS] == [[1, 0], [0, 1], [1, 1]]
    assert default_embedding("sat", 4) == [1, 1, 0, 0]
    assert default_embedding("the", 2) == [1, 0]  # the course's word, whatever the capitalisation
    assert [default_position(i, 2) for i in range(3)] == [[0.1, 0], [0, 0.1], [0.1, 0.1]]  # p1..p3
    assert default_embedding("mat", 3) == default_embedding("mat", 3)  # stable across calls
    assert all(v in (-1, -0.5, 0, 0.5, 1) for v in default_embedding("mat", 4))


def test_format_number_never_shows_nan_or_inf():
    assert format_number(1.21) == "1.21"
    assert format_number(3.3534846525) == "3.3535"
    assert format_number(-0.0) == "0"
    assert format_number(1e12) == "1e+12"
    assert format_number(-np.inf) == "masked"
    assert "nan" not in format_number(float("nan")).lower()
    assert "inf" not in format_number(np.inf).lower()


def test_worked_cell_writes_the_course_arithmetic():
    s = course_steps()
    E = np.array([COURSE_EMBEDDINGS[t] for t in COURSE_TOKENS])
    text = worked_cell(s, list(COURSE_TOKENS), 1, 2, embeddings=E, positions=np.array(COURSE_POSITIONS))
    assert "X[cat] = e(cat) + p2 = [0, 1] + [0, 0.1] = [0, 1.1]" in text["X"]
    assert "Q[cat] · K[sat] = 0·1.1 + 1.1·1.1 = 1.21" in text["scores"]
    assert text["exp"] == "exp(1.21) = 3.3535"
    assert text["row_sum"] == "sum over row cat = 1 + 3.3535 + 3.3535 = 7.707"
    assert text["weights"] == "weight[cat, sat] = 3.3535 / 7.707 = 0.4351"
    assert text["output"].endswith("= [0.6214, 0.9573]")
    masked = worked_cell(course_steps(causal=True, scale=True), list(COURSE_TOKENS), 0, 2)
    assert "÷ √2" in masked["scores"] and "causal mask" in masked["scores"]
    assert masked["exp"] == "exp(S[The, sat]) = exp(−∞) = 0"


def test_token_summaries_report_ties_and_movement():
    summaries = token_summaries(course_steps(), list(COURSE_TOKENS))
    the, _, sat = summaries
    assert the.top_labels == ("The", "sat") and the.top_weight == pytest.approx(W_BIG)
    assert sat.top_labels == ("sat",) and sat.self_weight == pytest.approx(W_SAT_SELF)
    # The moves from [1.1, 0] to [0.95727, 0.62136]: distance sqrt(0.14273² + 0.62136²) = 0.63755
    assert the.moved == pytest.approx(math.hypot(1.1 - COURSE_OUTPUT[0][0], COURSE_OUTPUT[0][1]))


def test_contextualize_is_the_lessons_warm_up():
    # lesson 002: bank [0.5, 0.5] + finance [0.3, -0.2] = [0.8, 0.3]; + nature [-0.2, 0.3] = [0.3, 0.8]
    np.testing.assert_allclose(contextualize([0.5, 0.5], [0.3, -0.2]), [0.8, 0.3])
    np.testing.assert_allclose(contextualize([0.5, 0.5], [-0.2, 0.3]), [0.3, 0.8])
    with pytest.raises(ToyAttentionError, match="same"):
        contextualize([0.5, 0.5], [0.1])


# --- figures -----------------------------------------------------------------------------------------


def test_vector_arrows_figure():
    from lib.charts.toy import vector_arrows

    s = course_steps()
    fig = vector_arrows(s.X, s.output, ["The", "<b>cat</b>", "sat"])
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1  # true lengths and angles
    assert len(fig.layout.annotations) == 6  # an input and an output arrow per token
    texts = [t for trace in fig.data if trace.text is not None for t in trace.text]
    assert "&lt;b&gt;cat&lt;/b&gt;" in texts and "<b>cat</b>" not in texts  # user text is escaped
    x_range, y_range = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert x_range[0] < 0 < 1.1 < x_range[1] and y_range[0] < 0 < 1.1 < y_range[1]
    assert x_range[1] - x_range[0] == pytest.approx(y_range[1] - y_range[0])
    for trace in fig.data[:3]:  # the two labels of a token never take the same place
        assert trace.textposition[0] != trace.textposition[1]


def test_warmup_arrows_draws_only_complete_rows():
    from lib.charts.toy import warmup_arrows

    fig = warmup_arrows(
        ["bank", "bank", "apple"], ["finance", "nature", "fruit"],
        np.array([[0.5, 0.5], [0.5, 0.5], [0.3, 0.3]]),
        np.array([[0.8, 0.3], [0.3, 0.8], [np.nan, np.nan]]),
        references={"money": (0.9, 0.1)},
    )
    # base arrows: bank once, apple once; contextual arrows: the two complete bank rows
    assert len(fig.layout.annotations) == 4
    assert fig.layout.yaxis.scaleanchor == "x"


def test_a_tip_label_fits_beside_its_tip_on_a_phone():
    """"bank | finance" right of its tip at x = 0.8 and "bank | nature" left of its tip at x = 0.3: the x range
    leaves each its pixels on a phone's plot (characters x 6.8 px + 12 px of 264 px; "finance" was cut there)."""
    from lib.charts.toy import (
        LABEL_GAP_PX,
        LABEL_PX_PER_CHAR,
        MAX_WIDENING,
        PHONE_PLOT_PX,
        _room_for_labels,
        warmup_arrows,
    )

    fig = warmup_arrows(
        ["bank", "bank"], ["finance", "nature"], np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([[0.8, 0.3], [0.3, 0.8]]),
        references={"money": (0.9, 0.1), "river": (0.1, 0.9)},
    )
    x0, x1 = fig.layout.xaxis.range
    share = lambda text: (len(text) * LABEL_PX_PER_CHAR + LABEL_GAP_PX) / PHONE_PLOT_PX  # noqa: E731
    assert x1 - 0.8 >= share("bank | finance") * (x1 - x0) - 1e-6
    assert 0.3 - x0 >= share("bank | nature") * (x1 - x0) - 1e-6
    # by hand: one label of share 1/4 right of x = 1 in [0, 1] needs x1 - 1 >= (x1 - 0) / 4: x1 = 4/3
    chars = (PHONE_PLOT_PX / 4 - LABEL_GAP_PX) / LABEL_PX_PER_CHAR
    assert _room_for_labels(0.0, 1.0, [(1.0, chars)], []) == pytest.approx((0.0, 4 / 3))
    assert _room_for_labels(0.0, 1.0, [], [(0.0, chars)]) == pytest.approx((-1 / 3, 1.0))
    assert _room_for_labels(-5.0, 5.0, [(1.0, chars)], []) == (-5.0, 5.0)  # room enough: unchanged
    # two long labels facing each other cannot both fit: the range stops at MAX_WIDENING times its width
    lo, hi = _room_for_labels(0.0, 1.0, [(0.6, 30)], [(0.4, 30)])
    assert hi - lo == pytest.approx(MAX_WIDENING) and lo < 0 < 1 < hi

def test_switches_are_keyword_only():
    X = [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(TypeError):
        attention_steps(X, None, None, None, True)  # scale must be named
    s = attention_steps(X, scale=True, causal=True, temperature=2.0)
    np.testing.assert_allclose(s.weights.sum(axis=1), 1.0)


# --- ToyInputs: the calculator's last valid inputs -------------------------------------------


def test_toy_inputs_course_example_is_the_worked_example():
    from lib.teaching.toy_attention import ToyInputs

    inputs = ToyInputs.course_example()
    assert inputs.tokens == COURSE_TOKENS and inputs.ffn == {}
    np.testing.assert_allclose(inputs.x(use_positions=True), COURSE_X)
    np.testing.assert_allclose(inputs.x(use_positions=False), [COURSE_EMBEDDINGS[t] for t in COURSE_TOKENS])
    steps = inputs.steps(use_positions=True)
    np.testing.assert_allclose(steps.raw_scores, np.array(COURSE_X) @ np.array(COURSE_X).T)
    direct = attention_steps(COURSE_X, None, None, None, scale=True, temperature=2.0)
    np.testing.assert_allclose(inputs.steps(use_positions=True, scale=True, temperature=2.0).output, direct.output)


def test_toy_inputs_from_tables_expands_one_row_per_token_and_keeps_the_ffn():
    from lib.teaching.toy_attention import ToyInputs

    words = ["the", "cat"]
    E = np.array([[1.0, 0.0], [0.0, 2.0]])
    P = np.array([[0.1, 0.0], [0.0, 0.1], [0.2, 0.2]])
    W = {"W_Q": np.eye(2), "W_K": np.eye(2), "W_V": 2 * np.eye(2)}
    W1 = np.array([[1.0, -1.0], [0.5, 1.0]])
    inputs = ToyInputs.from_tables(["the", "cat", "the"], words, E, P, W, {"W1": W1, "W2": None})
    np.testing.assert_allclose(inputs.embeddings, [[1, 0], [0, 2], [1, 0]])
    np.testing.assert_allclose(inputs.x(use_positions=True), [[1.1, 0], [0, 2.1], [1.2, 0.2]])
    assert list(inputs.ffn) == ["W1"] and inputs.W2 is None
    steps = inputs.steps(use_positions=False, causal=True)
    assert steps.weights[0, 1] == 0.0  # causal: the first token sees only itself
    block = inputs.block(steps.output, use_positions=False)
    expected = encoder_block(inputs.embeddings, steps.output, W1=W1)
    np.testing.assert_allclose(block.output, expected.output)
    with pytest.raises(ToyAttentionError):
        inputs.steps(use_positions=False, temperature=0.0)


def test_vector_arrows_margins_hold_their_labels_from_the_start():
    """The arrows chart's margins are set for its axes' labels and titles (plotly's automargin, left to find them,
    drew it four times per change): at least what ui.plotly_look would size for the same axes unconstrained."""
    from lib.charts.toy import vector_arrows
    from ui.plotly_look import presize_margins, themed_spec

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = vector_arrows(X, X @ np.array([[0.6, 0.4], [0.3, 0.7]]), ["The", "cat", "sat"])
    spec = themed_spec(fig)
    free = {**spec, "layout": dict(spec["layout"])}
    for axis in ("xaxis", "yaxis"):
        free["layout"][axis] = {k: v for k, v in spec["layout"][axis].items() if k not in ("constrain", "scaleanchor")}
    free["layout"]["margin"] = {**spec["layout"]["margin"], "l": 0, "b": 0}
    need = presize_margins(free, 704)["layout"]["margin"]
    assert need["l"] > 40 and need["b"] > 40  # the estimate ran
    assert spec["layout"]["margin"]["l"] >= need["l"] and spec["layout"]["margin"]["b"] >= need["b"]
