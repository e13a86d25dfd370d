"""lib/models/attention.py and recompute.py: hand-computed tiny cases, then the real bundled model (fixture `encoder`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.models.attention import (
    contrast_sentence_index,
    downsample_labels,
    is_punctuation,
    mean_over_heads,
    most_attended,
    pool_attention,
    special_attention,
    special_token_share,
    strongest_keys,
    target_attention,
    token_labels,
)
from lib.models.encoder import SpecialRoles
from lib.models.recompute import UnsupportedArchitectureError, recompute_attention, softmax

# ----------------------------------------------------------------------------- hand-computed cases


def test_softmax_by_hand():
    # exp(0) : exp(ln 3) = 1 : 3
    np.testing.assert_allclose(softmax(np.array([0.0, math.log(3.0)])), [0.25, 0.75])
    # a huge shift must not overflow
    np.testing.assert_allclose(softmax(np.array([1000.0, 1000.0])), [0.5, 0.5])


def test_target_attention_by_hand():
    # one layer, one head, tokens 0..2; the target is split over pieces 1 and 2
    a = np.array(
        [
            [
                [
                    [1.0, 0.0, 0.0],
                    [0.2, 0.3, 0.5],
                    [0.6, 0.4, 0.0],
                ]
            ]
        ]
    )  # (L=1, H=1, 3, 3)
    ta = target_attention(a, [1, 2])
    # target's row = mean of rows 1 and 2
    np.testing.assert_allclose(ta.attends_to[0, 0], [0.4, 0.35, 0.25])
    np.testing.assert_allclose(ta.attends_to_mean[0].sum(), 1.0)
    # attention each token gives to the target = sum of columns 1 and 2
    np.testing.assert_allclose(ta.attended_by[0, 0], [0.0, 0.8, 0.4])
    assert ta.token_indices == (1, 2)


def test_target_attention_rejects_bad_positions():
    a = np.full((1, 1, 3, 3), 1 / 3)
    with pytest.raises(ValueError, match="brackets"):
        target_attention(a, [])
    with pytest.raises(IndexError):
        target_attention(a, [3])


BERT_ROLES = SpecialRoles(opening=frozenset({101}), closing=frozenset({102}))
ROBERTA_ROLES = SpecialRoles(opening=frozenset({0}), closing=frozenset({2}))


def test_special_token_share_by_hand():
    tokens = ["[CLS]", "hi", ",", "there", "[SEP]"]
    ids = [101, 7632, 1010, 2045, 102]
    special = [True, False, False, False, True]
    n = len(tokens)
    uniform = np.full((2, 3, n, n), 1.0 / n)  # every query spreads evenly over 5 keys
    s = special_token_share(uniform, tokens, special, ids=ids, roles=BERT_ROLES)
    np.testing.assert_allclose(s.cls, 0.2)
    np.testing.assert_allclose(s.sep, 0.2)
    np.testing.assert_allclose(s.punctuation, 0.2)
    np.testing.assert_allclose(s.other, 0.4)  # "hi" and "there"
    np.testing.assert_allclose(s.cls_mean + s.sep_mean + s.punctuation_mean + s.other_mean, 1.0)
    assert s.cls.shape == (2, 3) and s.cls_mean.shape == (2,)
    np.testing.assert_allclose(s.cls_sep_mean, 0.4)

    # all attention on [SEP]
    to_sep = np.zeros((1, 1, n, n))
    to_sep[..., n - 1] = 1.0
    s = special_token_share(to_sep, tokens, special, ids=ids, roles=BERT_ROLES)
    np.testing.assert_allclose(s.sep, 1.0)
    np.testing.assert_allclose(s.cls + s.punctuation + s.other, 0.0)
    np.testing.assert_allclose(s.cls_sep_mean, 1.0)
    np.testing.assert_allclose(special_attention(to_sep, special), 1.0)

    # the mask decides what is special and the ids which is which, never the text or the place: a typed
    # "[SEP]" that the tokenizer did not mark is an ordinary piece; RoBERTa's <s> ... </s> are [CLS] and [SEP]
    # by their ids; a [CLS] id at the end is still [CLS]
    s = special_token_share(to_sep, tokens, [True, False, False, False, False], ids=ids, roles=BERT_ROLES)
    np.testing.assert_allclose(s.other, 1.0)
    roberta = ["<s>", "hi", ",", "there", "</s>"]
    s = special_token_share(to_sep, roberta, special, ids=[0, 20, 6, 89, 2], roles=ROBERTA_ROLES)
    np.testing.assert_allclose(s.sep, 1.0)
    s = special_token_share(to_sep, tokens, special, ids=[102, *ids[1:4], 101], roles=BERT_ROLES)
    np.testing.assert_allclose(s.cls, 1.0)
    np.testing.assert_allclose(s.sep, 0.0)
    with pytest.raises(ValueError, match="special flags"):
        special_token_share(uniform, tokens, special[:-1], ids=ids, roles=BERT_ROLES)
    with pytest.raises(ValueError, match="ids"):
        special_token_share(uniform, tokens, special, ids=ids[:-1], roles=BERT_ROLES)


def test_is_punctuation():
    assert is_punctuation(".") and is_punctuation(",") and is_punctuation("##.") and is_punctuation("'")
    assert is_punctuation("?!")
    assert not is_punctuation("bank") and not is_punctuation("[CLS]") and not is_punctuation("##s")
    assert not is_punctuation("3") and not is_punctuation("")


def test_token_labels_keep_repeated_tokens_apart():
    tokens = ["[CLS]", "the", "bank", "by", "the", "bank", "[SEP]"]
    labels = token_labels(tokens)
    assert len(set(labels)) == len(tokens)
    assert labels[2] != labels[5]
    assert labels[2].startswith("bank") and labels[5].startswith("bank")


def test_byte_level_marks_read_as_a_space_and_a_line_break():
    labels = token_labels(["<|im_start|>", "The", "Ġbank", "Ġriver", "bank", "Ċ", "##ing"])
    assert labels == ["<|im_start|>·0", "The·1", "␣bank·2", "␣river·3", "bank·4", "↵·5", "##ing·6"]


@pytest.mark.parametrize("n", [0, 1, 5, 40, 41, 100, 130, 512])
def test_downsample_labels(n):
    labels = [f"t{i}" for i in range(n)]
    pos, text = downsample_labels(labels, max_labels=40)
    assert len(pos) <= 40
    assert text == [labels[p] for p in pos]
    assert pos == sorted(set(pos))
    if n:
        assert pos[0] == 0 and pos[-1] == n - 1
    if n <= 40:
        assert pos == list(range(n))


def test_pool_attention_by_hand():
    a = np.array(
        [
            [0.5, 0.5, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.1, 0.1, 0.4, 0.4],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
    p = pool_attention(a, max_size=2)
    # block (rows 0-1, cols 0-1): rows sum within the block to 1 and 1, mean = 1.0; etc.
    np.testing.assert_allclose(p.weights, [[1.0, 0.0], [0.1, 0.9]])
    np.testing.assert_array_equal(p.edges, [0, 2, 4])
    assert p.pooled
    assert p.block_labels(["a", "b", "c", "d"]) == ["a…b", "c…d"]
    same = pool_attention(a, max_size=4)
    assert not same.pooled
    np.testing.assert_allclose(same.weights, a)


def test_pool_attention_keeps_rows_summing_to_one():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 130, 130))
    a /= a.sum(axis=-1, keepdims=True)
    p = pool_attention(a, max_size=48)
    assert p.weights.shape == (2, 3, 48, 48)
    np.testing.assert_allclose(p.weights.sum(axis=-1), 1.0)


def test_contrast_sentence_index():
    senses = ("money", "money", "river", None)
    assert contrast_sentence_index(senses, 0) == 2
    assert contrast_sentence_index(senses, 2) == 0
    assert contrast_sentence_index(senses, 3) == 0  # unknown sense: the next sentence
    assert contrast_sentence_index((None, None, None), 1) == 2
    assert contrast_sentence_index(("a",), 0) is None


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_unknown_architecture_gives_a_clear_error():
    from transformers import GPT2Config, GPT2Model

    tiny = GPT2Model(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10, n_positions=8))

    class FakeEncoding:  # just arrays: (L+1, n, hidden) and (L, H, n, n)
        hidden_states = (np.zeros((2, 3, 8), dtype=np.float32),)
        attentions = (np.full((1, 2, 3, 3), 1 / 3, dtype=np.float32),)

    with pytest.raises(UnsupportedArchitectureError, match="BERT-family"):
        recompute_attention(tiny, FakeEncoding(), 0, 0)


# ----------------------------------------------------------------------------- the real model

SENTENCES = [
    "We sat on the river bank and watched the bank of clouds.",
    "The bank raised its interest rates again, and customers complained.",
    "Bank",
]


@pytest.fixture(scope="module")
def encoding(encoder):
    return encoder.encode(SENTENCES)


@pytest.mark.parametrize("layer", [0, 2, 5])
@pytest.mark.parametrize("head", [0, 5, 11])
def test_recomputation_matches_model(encoder, encoding, layer, head):
    layer = min(layer, encoder.num_layers - 1)
    head = min(head, encoder.num_heads - 1)
    for i in range(len(SENTENCES)):
        r = recompute_attention(encoder, encoding, i, layer, head)
        n = len(encoding.tokens[i])
        assert r.weights.shape == (n, n) and r.model_weights.shape == (n, n)
        assert r.q.shape == r.k.shape == r.v.shape == (n, encoder.hidden_size // encoder.num_heads)
        assert r.max_abs_diff < 1e-4
        np.testing.assert_allclose(r.weights, encoding.attentions[i][layer, head], atol=1e-4)
        np.testing.assert_allclose(r.weights.sum(axis=-1), 1.0, atol=1e-6)
        assert r.rows_summing_to_one() == n
        assert np.isfinite(r.scores).all()


def test_recomputation_all_heads(encoder, encoding):
    for layer in range(encoder.num_layers):
        r = recompute_attention(encoder, encoding, 0, layer)
        n = len(encoding.tokens[0])
        assert r.weights.shape == (encoder.num_heads, n, n)
        assert r.max_abs_diff < 1e-4
        # the scores are Q·Kᵀ/√d_k: check one entry by hand from q and k
        expected = float(r.q[3, 1] @ r.k[3, 2]) / math.sqrt(r.d_k)
        assert r.scores[3, 1, 2] == pytest.approx(expected)
        # the page's worked table: dot products of query 1 with every key, then ÷ √d_k gives the scores
        assert r.dot_products(1).shape == (encoder.num_heads, n)
        np.testing.assert_allclose(r.dot_products(1) / r.scale, r.scores[:, 1, :], rtol=1e-5, atol=1e-6)
        one = recompute_attention(encoder, encoding, 0, layer, 3)
        np.testing.assert_allclose(one.dot_products(1), r.dot_products(1)[3], rtol=1e-6)


def test_recomputation_rejects_bad_layer_and_head(encoder, encoding):
    with pytest.raises(IndexError):
        recompute_attention(encoder, encoding, 0, encoder.num_layers)
    with pytest.raises(IndexError):
        recompute_attention(encoder, encoding, 0, 0, head=encoder.num_heads)


def test_displayed_matrices_rows_sum_to_one(encoder, encoding):
    for i in range(len(SENTENCES)):
        att = encoding.attentions[i]  # (L, H, n, n): every heatmap and overview cell
        np.testing.assert_allclose(att.sum(axis=-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(mean_over_heads(att).sum(axis=-1), 1.0, atol=1e-5)
        ta = target_attention(att, [1])
        np.testing.assert_allclose(ta.attends_to.sum(axis=-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(ta.attends_to_mean.sum(axis=-1), 1.0, atol=1e-5)
        s = special_token_share(
            att, encoding.tokens[i], encoding.special[i], ids=encoding.token_ids[i], roles=encoder.special_roles
        )
        to_special = att[..., encoding.special[i]].sum(axis=-1).mean(axis=(1, 2))  # (L,): heads and queries
        np.testing.assert_allclose(s.cls_sep_mean, to_special, atol=1e-6)
        np.testing.assert_allclose(special_attention(att, encoding.special[i]), to_special, atol=1e-6)
        # [CLS] is the first piece and [SEP] the last: the tokenizer's roles put them there
        np.testing.assert_allclose(s.cls, att[..., 0].mean(axis=-1), atol=1e-6)
        np.testing.assert_allclose(s.sep, att[..., -1].mean(axis=-1), atol=1e-6)
        total = s.cls + s.sep + s.punctuation + s.other
        np.testing.assert_allclose(total, 1.0, atol=1e-5)


def test_real_labels_unique_with_repeated_words(encoding):
    tokens = encoding.tokens[0]
    assert tokens.count("bank") == 2 and tokens.count("the") >= 2
    labels = token_labels(tokens)
    assert len(set(labels)) == len(labels)


def test_long_sentence_over_100_word_pieces(encoder):
    words = " ".join(f"the bank number {i} lent money to the farmer by the river," for i in range(12))
    enc = encoder.encode([words + " and that was all."])
    tokens = enc.tokens[0]
    n = len(tokens)
    assert n > 100
    labels = token_labels(tokens)
    assert len(set(labels)) == n
    pos, text = downsample_labels(labels, max_labels=40)
    assert len(pos) <= 40 and pos[-1] == n - 1
    last = encoder.num_layers - 1
    r = recompute_attention(encoder, enc, 0, last, head=0)
    assert r.weights.shape == (n, n)  # the data is not downsampled
    assert r.max_abs_diff < 1e-4
    ta = target_attention(enc.attentions[0], [tokens.index("bank")])
    assert ta.attends_to.shape == (encoder.num_layers, encoder.num_heads, n)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_sentence_at_the_length_limit(encoder):
    enc = encoder.encode(["bank " * (encoder.max_tokens + 20)])
    assert enc.truncated[0]
    n = len(enc.tokens[0])
    assert n == encoder.max_tokens
    r = recompute_attention(encoder, enc, 0, 1, head=3)
    assert r.max_abs_diff < 1e-4
    assert len(set(token_labels(enc.tokens[0]))) == n


# ----------------------------------------------------------------------------- the figures


def _heatmaps(fig):
    return [t for t in fig.data if t.type == "heatmap"]


def _overview_blocks(fig, num_layers: int, num_heads: int, size: int) -> np.ndarray:
    """The overview's squares cut out of its one heatmap: (L, H + 1, size, size); the gaps between them NaN."""
    from lib.charts.attention import overview_grid

    (trace,) = _heatmaps(fig)
    z = np.asarray(trace.z, dtype=float)
    grid = overview_grid(num_layers, num_heads, size)
    assert z.shape == grid.shape == (len(trace.y), len(trace.x))
    assert len(set(trace.x)) == len(trace.x) and len(set(trace.y)) == len(trace.y)  # categories stay apart
    blocks = np.stack(
        [
            np.stack([z[grid.row0(i) : grid.row0(i) + size, grid.col0(j) : grid.col0(j) + size] for j in range(grid.cols)])
            for i in range(num_layers)
        ]
    )
    assert np.isfinite(blocks).all() and np.isnan(z).sum() == z.size - blocks.size  # every other cell is a gap
    return blocks


def test_figures_show_row_stochastic_matrices_on_a_fixed_scale(encoder, encoding):
    from lib.charts.attention import (
        attention_heatmap,
        attention_overview,
        overview_grid,
        special_token_share_chart,
        target_attention_bars,
        target_attention_by_layer,
    )

    att0, att1 = encoding.attentions[0], encoding.attentions[1]
    lab0, lab1 = token_labels(encoding.tokens[0]), token_labels(encoding.tokens[1])
    single = attention_heatmap(att0[1, 2], lab0, title="layer 2, head 3")
    overview = attention_overview(att0, lab0, selected=(1, 2))
    other = attention_heatmap(att1[1, 2], lab1, title="the second sentence")  # the page's side by side
    (trace,) = _heatmaps(single)
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert len(set(trace.x)) == len(lab0) == len(trace.x)
    assert "%{z:.4f}" in trace.hovertemplate
    assert (overview.layout.coloraxis.cmin, overview.layout.coloraxis.cmax) == (0.0, 1.0)
    assert [(t.zmin, t.zmax) for t in _heatmaps(other)] == [(0.0, 1.0)]  # the same scale: compared by eye
    for fig in (single, other):
        for t in _heatmaps(fig):
            np.testing.assert_allclose(np.asarray(t.z).sum(axis=-1), 1.0, atol=1e-5)
    # the overview: one heatmap whose squares are each head's matrix and, last, the mean over heads
    blocks = _overview_blocks(overview, encoder.num_layers, encoder.num_heads, len(lab0))
    assert blocks.shape == (encoder.num_layers, encoder.num_heads + 1, len(lab0), len(lab0))
    np.testing.assert_allclose(blocks[:, :-1], att0, atol=1e-6)
    np.testing.assert_allclose(blocks[:, -1], np.asarray(att0, dtype=float).mean(axis=1), atol=1e-6)
    (outline,) = overview.layout.shapes  # selected=(1, 2): layer 2, head 3
    grid = overview_grid(encoder.num_layers, encoder.num_heads, len(lab0))
    assert outline.x0 < grid.col0(2) < grid.col0(2) + len(lab0) - 1 < outline.x1 < grid.col0(3)
    assert outline.y0 < grid.row0(1) < grid.row0(1) + len(lab0) - 1 < outline.y1 < grid.row0(2)

    ta = target_attention(att0, [encoding.tokens[0].index("bank")])
    bars = target_attention_bars(ta.attends_to_mean[1], ta.attended_by_mean[1], lab0, ta.token_indices)
    np.testing.assert_allclose(np.sum(bars.data[0].y), 1.0, atol=1e-5)
    by_layer = target_attention_by_layer(ta.attends_to_mean, ta.attended_by_mean, lab0)
    np.testing.assert_allclose(np.asarray(by_layer.data[0].z).sum(axis=-1), 1.0, atol=1e-5)
    share = special_token_share_chart(
        special_token_share(
            att0, encoding.tokens[0], encoding.special[0], ids=encoding.token_ids[0], roles=encoder.special_roles
        )
    )
    np.testing.assert_allclose(np.sum([t.y for t in share.data], axis=0), 1.0, atol=1e-5)


def test_long_sentence_figures_thin_labels_not_data(encoder):
    from lib.charts.attention import MAX_TICK_LABELS, attention_heatmap, attention_overview

    enc = encoder.encode([" ".join(f"the bank {i} by the river, " for i in range(25))])
    n = len(enc.tokens[0])
    assert n > 100
    labels = token_labels(enc.tokens[0])
    fig = attention_heatmap(enc.attentions[0][0, 0], labels)
    (trace,) = _heatmaps(fig)
    assert np.asarray(trace.z).shape == (n, n)  # all data
    assert len(fig.layout.xaxis.tickvals) <= MAX_TICK_LABELS < n  # fewer labels
    overview = attention_overview(enc.attentions[0], labels, max_tokens=40)
    blocks = _overview_blocks(overview, encoder.num_layers, encoder.num_heads, 40)
    np.testing.assert_allclose(blocks.sum(axis=-1), 1.0, atol=1e-5)  # pooled: 40 blocks a side, rows still sum to 1


def test_token_labels_turn_unless_each_fits_its_column_on_a_phone():
    """Seven short word pieces ("[CLS]·0 the·1 bank·2 raised·3 …") printed level ran into each other on a phone."""
    from lib.charts.attention import _CHAR_PX, _PHONE_PLOT_PX, attention_heatmap, target_attention_bars

    seven = ["[CLS]·0", "the·1", "bank·2", "raised·3", "rates·4", ".·5", "[SEP]·6"]
    three = ["[CLS]·0", "bank·1", "[SEP]·2"]
    nine = [f"w·{k}" for k in range(9)]
    # the cases below stand on either side of the rule: a label wider than its column, and one that fits
    assert _CHAR_PX * len("raised·3") > _PHONE_PLOT_PX / 7 and _CHAR_PX * len("[CLS]·0") + 6 <= _PHONE_PLOT_PX / 3
    for labels, angle in ((seven, -60), (three, 0), (nine, -60)):
        n = len(labels)
        heat = attention_heatmap(np.full((n, n), 1 / n), labels)
        bars = target_attention_bars(np.full(n, 1 / n), np.full(n, 0.5), labels, [1])
        assert heat.layout.xaxis.tickangle == angle, labels
        assert {bars.layout.xaxis.tickangle, bars.layout.xaxis2.tickangle} == {angle}, labels


def test_labels_with_markup_are_escaped():
    from lib.charts.attention import attention_heatmap

    fig = attention_heatmap(np.eye(2), ["<b>x</b>·0", "&·1"])
    assert "<b>" not in fig.data[0].x[0] and "&lt;b&gt;" in fig.data[0].x[0]


def test_most_attended_averages_the_targets_rows_and_skips_its_own_pieces():
    w = np.array(
        [
            [0.1, 0.2, 0.3, 0.4],
            [0.5, 0.1, 0.1, 0.3],
            [0.0, 0.9, 0.05, 0.05],
            [0.25, 0.25, 0.25, 0.25],
        ]
    )
    # target = pieces 1 and 2: mean row (0.25, 0.5, 0.075, 0.175); piece 1 is its own, so key 0 wins
    k, weight = most_attended(w, [1, 2])
    assert k == 0 and weight == pytest.approx(0.25)
    assert most_attended(w, [3]) == (0, pytest.approx(0.25))  # a four-way tie: the earliest key
    assert most_attended(w[:1, :1], [0]) == (0, pytest.approx(0.1))  # only itself: itself


def test_rows_summing_to_one_counts_rows_by_hand():
    from lib.models.recompute import AttentionRecomputation

    weights = np.array([[0.5, 0.5], [0.7, 0.2]])
    z = np.zeros((2, 2))
    rec = AttentionRecomputation(0, 0, 2, z, z, z, z, weights, weights, 0.0)
    assert rec.rows_summing_to_one() == 1


def test_strongest_keys_by_hand():
    row = np.array([0.1, 0.4, 0.1, 0.3, 0.1])
    assert strongest_keys(row) == [1, 3, 0]  # ties go to the earlier key
    assert strongest_keys(row, k=10) == [1, 3, 0, 2, 4]


def test_entropy_fraction_by_hand():
    from lib.models.attention import entropy_fraction

    uniform = np.full((1, 2, 4, 4), 0.25)
    peaked = np.zeros((1, 1, 4, 4))
    peaked[..., 0] = 1.0
    half = np.zeros((1, 1, 4, 4))
    half[..., :2] = 0.5  # entropy log 2 of log 4
    out = entropy_fraction(np.concatenate([uniform[:, :1], uniform[:, :1]], axis=0))
    np.testing.assert_allclose(out, [1.0, 1.0])
    np.testing.assert_allclose(entropy_fraction(peaked), [0.0], atol=1e-9)
    np.testing.assert_allclose(entropy_fraction(half), [0.5])
    np.testing.assert_allclose(entropy_fraction(np.ones((3, 2, 1, 1))), [1.0, 1.0, 1.0])
