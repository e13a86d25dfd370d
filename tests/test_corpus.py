"""lib/inputs/corpus.py: parsing, the built-in corpus, and per-layer statistics (hand case + real model)."""

from __future__ import annotations

import numpy as np
import pytest

from lib.inputs.corpus import (
    DEFAULT_CORPUS_PATH,
    CorpusError,
    CorpusText,
    compute_corpus_statistics,
    corpus_statistics,
    load_reference_corpus,
    parse_corpus_text,
)
from lib.models.encoder import Encoding
from lib.stats.geometry import anisotropy

# ---------------------------------------------------------------- parsing


def test_parse_skips_comments_and_blank_lines_and_splits_paragraphs():
    text = "# a comment\n\nThe cat sat. The dog ran!\n  Is it [raining]?  \n#another\n"
    c = parse_corpus_text(text)
    assert c.sentences == ("The cat sat.", "The dog ran!", "Is it raining?")
    assert c.notes == ()
    assert len(c.corpus_id) == 12


def test_parse_does_not_split_inside_numbers_or_abbreviations_without_space():
    assert parse_corpus_text("It costs 3.50 euros.").sentences == ("It costs 3.50 euros.",)


def test_corpus_id_depends_on_text_only():
    a = parse_corpus_text("One.\nTwo.")
    b = parse_corpus_text("# header\nOne.\n\nTwo.\n")
    c = parse_corpus_text("One.\nThree.")
    assert a.corpus_id == b.corpus_id != c.corpus_id


def test_parse_empty_says_what_to_do():
    with pytest.raises(CorpusError, match="one sentence per line"):
        parse_corpus_text("# only a comment\n\n")


def test_parse_caps_long_uploads_with_a_note():
    c = parse_corpus_text("\n".join(f"Sentence number {i}." for i in range(30)), max_sentences=10)
    assert len(c) == 10 and "first 10" in c.notes[0]


def test_builtin_corpus_is_large_and_varied():
    if not DEFAULT_CORPUS_PATH.exists():
        pytest.skip("assets/reference_corpus.txt is not written yet")
    c = load_reference_corpus()
    assert len(c) >= 300
    assert len(set(c.sentences)) == len(c)  # no duplicates
    assert not any(s.startswith("#") for s in c.sentences)


def test_missing_corpus_file_says_so(tmp_path):
    with pytest.raises(CorpusError, match="missing"):
        load_reference_corpus(tmp_path / "nope.txt")


# ---------------------------------------------------------------- statistics, hand-computed


def _hand_encoding() -> Encoding:
    """Two 'sentences' with hand-written 2-D vectors in 2 layers; [CLS]/[SEP] are marked special."""
    cls = [0, 0]
    s1 = np.array(
        [
            [[100, 100], [1, 0], [3, 0], [100, 100]],  # layer 0: [CLS] a b [SEP]
            [[100, 100], [0, 1], [0, 3], [100, 100]],  # layer 1
        ],
        dtype=np.float32,
    )
    s2 = np.array([[[100, 100], [5, 4], [100, 100]], [[100, 100], [4, 5], [100, 100]]], dtype=np.float32)
    return Encoding(
        model_name="hand",
        sentences=("a b", "a"),
        tokens=(["[CLS]", "a", "b", "[SEP]"], ["[CLS]", "a", "[SEP]"]),
        token_ids=(np.array([101, 7, 8, 102]), np.array([101, 7, 102])),
        offsets=(np.array([cls, [0, 1], [2, 3], cls]), np.array([cls, [0, 1], cls])),
        special=(np.array([True, False, False, True]), np.array([True, False, True])),
        hidden_states=(s1, s2),
        attentions=(np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 3, 3))),
        truncated=(False, False),
    )


def test_statistics_by_hand():
    st = corpus_statistics(_hand_encoding())
    # special tokens excluded: layer 0 tokens are (1,0), (3,0), (5,4)
    assert st.n_tokens == 3 and st.n_sentences == 2 and st.num_hidden_states == 2 and st.hidden == 2
    np.testing.assert_allclose(st.mean[0], [3.0, 4 / 3])
    np.testing.assert_allclose(st.std[0], [np.sqrt(8 / 3), np.sqrt(32 / 9)])
    np.testing.assert_allclose(st.variance[0], [8 / 3, 32 / 9])  # population variance of (1, 3, 5), (0, 0, 4)
    np.testing.assert_allclose(st.mean[1], [4 / 3, 3.0])
    np.testing.assert_allclose(st.mean_norm[0], (1 + 3 + np.sqrt(41)) / 3)
    np.testing.assert_allclose(st.covariance(0), np.cov(np.array([[1, 0], [3, 0], [5, 4]]).T, bias=True))
    # distinct word pieces: "a" (two occurrences, one kept) and "b"
    assert sorted(st.sample_tokens) == ["a", "b"]
    assert st.sample.shape == (2, 2, 2)
    # 3 vectors in 2 dimensions: the covariance is invertible, no regularization needed
    assert st.fits[0].shrinkage == 0.0


def test_sample_uses_the_same_occurrences_in_every_layer():
    st = corpus_statistics(_hand_encoding())
    b = st.sample_tokens.index("b")
    np.testing.assert_array_equal(st.sample[:, b], [[3, 0], [0, 3]])
    a = st.sample_tokens.index("a")
    assert [tuple(st.sample[0, a]), tuple(st.sample[1, a])] in ([(1, 0), (0, 1)], [(5, 4), (4, 5)])


def _massive_encoding() -> Encoding:
    """Seven ordinary word pieces in 3-D, one of them with a massive value (900 in dimension 2, 100 times the
    typical largest value); a special start token first in each sentence."""
    rows = np.array(
        [[1, 2, 0], [2, 1, 0], [1, 1, 1], [3, 1, 0], [1, 3, 0], [2, 2, 1], [1, 0, 900]], dtype=np.float32
    )
    hs = [np.stack([np.vstack([[5, 5, 5], rows[a:b]])] * 2) for a, b in ((0, 4), (4, 7))]  # 2 layers alike
    toks = (["<s>", "a", "b", "c", "d"], ["<s>", "e", "f", "g"])
    return Encoding(
        model_name="hand",
        sentences=("a b c d", "e f g"),
        tokens=toks,
        token_ids=tuple(np.arange(len(t)) + 10 * i for i, t in enumerate(toks)),
        offsets=tuple(np.zeros((len(t), 2), dtype=np.int64) for t in toks),
        special=tuple(np.array([True] + [False] * (len(t) - 1)) for t in toks),
        hidden_states=tuple(hs),
        attentions=None,
        truncated=(False, False),
    )


def test_statistics_with_and_without_the_massive_word_pieces_by_hand():
    from lib.inputs.corpus import without_massive
    from lib.stats.geometry import top_variance_share

    st = corpus_statistics(_massive_encoding(), sample_size=100)
    rows = np.array([[1, 2, 0], [2, 1, 0], [1, 1, 1], [3, 1, 0], [1, 3, 0], [2, 2, 1], [1, 0, 900]], dtype=float)
    typical = rows[:6]
    assert st.n_massive == 1 and st.massive.words[0][2] == "g"
    np.testing.assert_allclose(st.mean[0], rows.mean(axis=0))
    np.testing.assert_allclose(st.typical_mean[0], typical.mean(axis=0))
    np.testing.assert_allclose(st.typical_std[0], typical.std(axis=0))
    assert st.sample_massive.tolist() == [t == "g" for t in st.sample_tokens]
    wm = without_massive(st, 0)
    dims, share = top_variance_share(typical.var(axis=0), 3)
    assert wm.top_dims_without == dims and wm.top_share_without == pytest.approx(share)
    assert wm.top_share == pytest.approx(1.0) and wm.top_dims[0] == 2  # every variance is the 900's...
    assert rows.var(axis=0)[2] / rows.var(axis=0).sum() > 0.99  # ...almost all of it in dimension 2
    u = typical / np.linalg.norm(typical, axis=1, keepdims=True)
    cos = u @ u.T
    assert wm.cosine_without == pytest.approx(cos[np.triu_indices(6, 1)].mean())
    # a corpus without massive values has one way to say its numbers
    assert without_massive(corpus_statistics(_hand_encoding()), 0) is None


def test_one_distinct_token_is_rejected():
    enc = _hand_encoding()
    only_a = Encoding(
        model_name="hand",
        sentences=enc.sentences[1:],
        tokens=enc.tokens[1:],
        token_ids=enc.token_ids[1:],
        offsets=enc.offsets[1:],
        special=enc.special[1:],
        hidden_states=enc.hidden_states[1:],
        attentions=enc.attentions[1:],
        truncated=enc.truncated[1:],
    )
    with pytest.raises(CorpusError, match="distinct word piece"):
        corpus_statistics(only_a)


# ---------------------------------------------------------------- the real model


def test_real_model_one_sentence_corpus_is_regularized_and_finite(encoder):
    st = compute_corpus_statistics(encoder, CorpusText(("The river bank was muddy after the rain.",), "x"))
    assert st.n_sentences == 1
    assert st.num_hidden_states == encoder.num_hidden_states and st.hidden == encoder.hidden_size
    assert st.n_tokens < encoder.hidden_size
    for fit in st.fits:
        assert fit.shrinkage > 0 and "vectors for" in fit.note  # fewer vectors than dimensions
    for arr in (st.mean, st.std, st.sample, st.mean_norm):
        assert np.all(np.isfinite(arr))
    assert "[CLS]" not in st.sample_tokens and "[SEP]" not in st.sample_tokens


def test_real_model_statistics_match_the_encoding(encoder):
    sentences = ["The bank raised its rates.", "We sat on the river bank.", "Birds sing at dawn."]
    enc = encoder.encode(sentences)
    st = corpus_statistics(enc, sample_size=5, seed=1)
    layer = encoder.num_layers
    rows = np.concatenate([hs[layer, 1:-1] for hs in enc.hidden_states])  # drop [CLS] and [SEP]
    np.testing.assert_allclose(st.mean[layer], rows.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(st.std[layer], rows.std(axis=0), rtol=1e-4, atol=1e-6)
    assert st.sample.shape == (encoder.num_layers + 1, 5, encoder.hidden_size)
    assert len(set(st.sample_tokens)) == 5  # distinct word pieces
    # each sampled vector is a real token vector of the corpus at that layer
    for v in st.sample[layer]:
        assert np.min(np.abs(rows - v).max(axis=1)) < 1e-6
    assert -1.0 <= anisotropy(st.sample[layer]) <= 1.0


def test_statistics_are_reproducible(encoder):
    enc = encoder.encode(["A cat sat on a warm mat by the door.", "Rain fell on the quiet town."])
    a = corpus_statistics(enc, sample_size=6, seed=0)
    b = corpus_statistics(enc, sample_size=6, seed=0)
    assert a.sample_tokens == b.sample_tokens
    np.testing.assert_array_equal(a.sample, b.sample)


# ---------------------------------------------------------------- treatments


def test_treat_uses_the_corpus_statistics():
    st = corpus_statistics(_hand_encoding())
    X = np.array([[3.0, 4 / 3], [5.0, 4.0]])
    np.testing.assert_allclose(st.treat(X, 0, "none"), X)
    np.testing.assert_allclose(st.treat(X, 0, "zscore")[0], [0.0, 0.0])  # the corpus mean maps to 0
    np.testing.assert_allclose(st.treat(X, 0, "zscore")[1], (X[1] - st.mean[0]) / st.std[0])
    top = st.fits[0].eigenvectors[:, :1]
    np.testing.assert_allclose(st.treat(X, 0, "topk", k=1) @ top, 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="Unknown treatment"):
        st.treat(X, 0, "sphereize")


def test_anisotropy_curves_real_model(encoder):
    from lib.inputs.corpus import TREATMENTS, anisotropy_curves

    enc = encoder.encode(
        [
            "Water boils at a lower temperature on a mountain.",
            "She scored the winning goal in extra time.",
            "The committee approved the new budget on Monday.",
            "Bread rises because yeast releases gas.",
        ]
    )
    st = corpus_statistics(enc)
    curves = anisotropy_curves(st, k=2)
    assert set(curves) == set(TREATMENTS)
    for values in curves.values():
        assert values.shape == (encoder.num_layers + 1,)
        assert np.all(np.isfinite(values)) and np.all(np.abs(values) <= 1.0)
    # centring alone (part of every fix) removes the shared direction: the fixes sit below raw
    for t in ("zscore", "whiten", "topk"):
        assert np.all(curves[t][1:] < curves["none"][1:])


# The corpus fits keep float32 eigenvectors: what the page shows (three decimals) against float64 ones.
# Measured on the reference corpus, both bundled models: 1e-8
FLOAT32_FIT_ATOL = 1e-6


@pytest.mark.parametrize("sentences", [8, 60])  # fewer word pieces than dimensions (shrinkage), and more
def test_float32_eigenvectors_give_the_float64_numbers(encoder, sentences):
    import dataclasses

    from lib.inputs.corpus import TREATMENTS, anisotropy_curves
    from lib.stats.geometry import fit_covariance
    from lib.stats.similarity import cosine_matrix

    enc = encoder.encode(list(load_reference_corpus().sentences[:sentences]), attentions=False)
    st = corpus_statistics(enc)
    assert all(f.eigenvectors.dtype == np.float32 for f in st.fits)
    pairs = list(zip(enc.hidden_states, enc.special, strict=True))
    rows = [
        np.concatenate([hs[layer][~np.asarray(sp, dtype=bool)] for hs, sp in pairs])
        for layer in range(encoder.num_hidden_states)
    ]  # every non-special word piece's vector, as the statistics read them (float32)
    exact = dataclasses.replace(st, fits=tuple(fit_covariance(r.astype(np.float32)) for r in rows))
    assert (st.n_tokens <= encoder.hidden_size) == (sentences == 8)
    got, want = anisotropy_curves(st, 4), anisotropy_curves(exact, 4)
    for t in TREATMENTS:
        np.testing.assert_allclose(got[t], want[t], rtol=0, atol=FLOAT32_FIT_ATOL)
    sentences_x = ["We sat by the [bank].", "The bank raised rates.", "A bank of fog."]
    X = encoder.target_vectors(sentences_x, "bank").vectors
    for layer in range(encoder.num_hidden_states):
        for t in ("whiten", "topk"):
            np.testing.assert_allclose(
                cosine_matrix(st.treat(X[:, layer], layer, t, 4)),
                cosine_matrix(exact.treat(X[:, layer], layer, t, 4)),
                rtol=0,
                atol=FLOAT32_FIT_ATOL,
            )


# ---------------------------------------------------------------- the budget, known before the model runs
@pytest.mark.parametrize("per_set", [20, 60, 150, 100_000])
@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_corpus_budget_counts_only_what_the_cut_needs(encoder, monkeypatch, per_set, chunk):
    """A hosted server's CPU: the corpus's word pieces are counted a chunk at a time until the budget is full, not
    all 1,000 sentences of a 2 MB upload; the cut (and its message) is the one of counting every sentence."""
    from lib.inputs.corpus import corpus_budget
    from lib.serving import budget

    sentences = [f"Sentence {k} says {'very ' * (k % 7)}little about the weather today." for k in range(15)]
    sentences[2] = "word " * 300  # longer than a sentence may be: read up to MAX_PIECES_PER_SENTENCE
    monkeypatch.setattr(budget, "MAX_CORPUS_PIECES", per_set)
    counts = [len(ids) for ids in encoder.tokenizer(sentences, add_special_tokens=True)["input_ids"]]
    expected = budget.fit_to_budget(counts, per_set=per_set)
    calls = []
    original = encoder.tokenizer.__class__.__call__

    def counting(self, texts, *args, **kwargs):
        calls.append(len(texts))
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(encoder.tokenizer.__class__, "__call__", counting)
    cut = corpus_budget(encoder, sentences, chunk=chunk)
    assert cut == expected
    if per_set < 100_000:  # a budget the corpus passes: its tail is never tokenized
        assert 0 < cut.kept < len(sentences) and f"first {cut.kept} of {len(sentences)}" in cut.message
        assert sum(calls) <= max(cut.kept + 1, 2) + chunk - 1  # up to the sentence that did not fit, in chunks
    else:
        assert cut.kept == len(sentences) and "left out" not in cut.message


def test_an_uploaded_corpus_file_is_decoded_then_split_and_a_binary_one_refused():
    from lib.inputs.corpus import parse_corpus_file
    from lib.inputs.upload import UploadError

    corpus, note = parse_corpus_file("Le café était fermé. Il pleuvait.\n# a comment\n".encode("latin-1"))
    assert corpus.sentences == ("Le café était fermé.", "Il pleuvait.") and note  # not UTF-8: said
    corpus, note = parse_corpus_file(b"One sentence here.\nAnother one.")
    assert len(corpus) == 2 and note is None
    with pytest.raises(UploadError):
        parse_corpus_file(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
