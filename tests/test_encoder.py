"""lib/models/encoder.py on the real bundled model (session fixture ``encoder``): shapes, alignment, errors.

Expected values come from the model's own arrays read another way (numpy over ``hidden_states``, the
embedding matrix, the tokenizer), never from numbers copied out of a previous run.
"""

from __future__ import annotations

import numpy as np
import pytest

from lib.errors import ContextLensError
from lib.inputs.presets import preset_by_id
from lib.models.encoder import (
    DEFAULT_MODEL,
    Encoder,
    Encoding,
    ModelLoadError,
    SpecialRoles,
    TargetVectors,
    concat_encodings,
    load_encoder,
    plan_batches,
)
from lib.models.targets import (
    MarkupError,
    TargetError,
    TargetNotFoundError,
    TargetTruncatedError,
    pieces_for_span,
)

BANK = [
    "The bank raised its rates.",
    "We sat on the river bank and watched the ducks for a long, quiet afternoon.",
    "You can bank on it.",
]


# ----------------------------------------------------------------------------------- the model itself
def test_default_model_attributes(encoder):
    assert isinstance(encoder, Encoder)
    assert encoder.name == DEFAULT_MODEL
    assert (encoder.num_layers, encoder.num_heads, encoder.hidden_size) == (6, 12, 384)
    assert encoder.max_tokens == 512
    cfg = encoder.model.config
    assert cfg.num_hidden_layers == encoder.num_layers
    assert cfg.hidden_size == encoder.hidden_size
    assert encoder.tokenizer.is_fast
    assert "MiniLM" in repr(encoder)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name", ["no-such-org/no-such-model-xyz", "not a model name!", "../../../etc/passwd" * 20]
)
def test_unknown_model_raises_model_load_error(name):
    # downloads are off by default, so a missing id fails at once instead of retrying for a minute
    with pytest.raises(ModelLoadError) as info:
        load_encoder(name)
    assert str(info.value)  # a message a learner can read
    assert "Traceback" not in str(info.value)


# ----------------------------------------------------------------------------------- encode: shapes
def test_encode_shapes_dtypes_and_specials(encoder):
    out = encoder.encode(BANK)
    assert isinstance(out, Encoding)
    assert len(out) == len(BANK)
    L, H, heads = encoder.num_layers, encoder.hidden_size, encoder.num_heads
    for i, s in enumerate(BANK):
        n = len(out.tokens[i])
        assert out.sentences[i] == s
        assert out.tokens[i][0] == "[CLS]" and out.tokens[i][-1] == "[SEP]"
        assert out.token_ids[i].shape == (n,) and out.token_ids[i].dtype == np.int64
        assert out.offsets[i].shape == (n, 2)
        assert out.hidden_states[i].shape == (L + 1, n, H)
        assert out.hidden_states[i].dtype == np.float32
        assert out.attentions[i].shape == (L, heads, n, n)
        assert out.attentions[i].dtype == np.float32
        assert out.truncated[i] is False
        # the tokens are exactly the tokenizer's, with no padding left in
        assert out.tokens[i] == encoder.tokenizer.convert_ids_to_tokens(encoder.tokenizer(s)["input_ids"])
        assert np.isfinite(out.hidden_states[i]).all()
        assert not out.hidden_states[i].flags.writeable  # shared through the cache: read-only
    assert not out.any_truncated


def test_attention_rows_sum_to_one(encoder):
    out = encoder.encode(BANK)
    for att in out.attentions:
        np.testing.assert_allclose(att.sum(axis=-1), 1.0, atol=1e-5)
        assert (att >= 0).all()


def test_batch_equals_single(encoder):
    # sentences of different lengths are padded together in a batch; padding must not leak into results
    batch = encoder.encode(BANK)
    for i, s in enumerate(BANK):
        alone = encoder.encode([s])
        assert alone.tokens[0] == batch.tokens[i]
        np.testing.assert_allclose(alone.hidden_states[0], batch.hidden_states[i], atol=1e-4)
        np.testing.assert_allclose(alone.attentions[0], batch.attentions[i], atol=1e-4)


def test_more_sentences_than_one_batch_keep_input_order(encoder):
    sents = [f"Sentence {'very ' * (k % 7)}number {k} is about the bank." for k in range(20)]
    out = encoder.encode(sents)
    assert list(out.sentences) == sents
    for i in (0, 7, 19):
        alone = encoder.encode([sents[i]])
        np.testing.assert_allclose(alone.hidden_states[0], out.hidden_states[i], atol=1e-4)


def test_plan_batches_bounds_the_padded_pieces_of_every_batch():
    lengths = [3, 128, 17, 17, 5, 128, 40, 128, 2, 64, 9, 128, 128, 200]
    for cap in (1, 50, 128, 256, 512):
        batches = plan_batches(lengths, cap)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each sentence once
        for b in batches:
            longest = max(lengths[i] for i in b)
            assert len(b) == 1 or len(b) * longest <= cap  # only a sentence alone may pass the cap
            assert [lengths[i] for i in b] == sorted(lengths[i] for i in b)
        flat = [lengths[i] for b in batches for i in b]
        assert flat == sorted(flat)  # batches run from short to long, so each pads little
    # short sentences share a batch, long ones run a few at a time
    assert [len(b) for b in plan_batches([16] * 64 + [128] * 8, 512)] == [32, 32, 4, 4]


def test_encode_equals_the_model_called_directly_on_the_same_batches(encoder, monkeypatch):
    # encode() copies each layer's part of a sentence straight out of the model's per-layer tensors; the
    # numbers must be exactly those of the model's own output for the same padded batch, read the old way
    # (all layers stacked, then sliced), padding and truncation included
    import torch

    import lib.models.encoder as module

    monkeypatch.setattr(module, "_BATCH_PIECES", 40)  # several batches of different sizes
    sents = [
        "The bank raised its rates.",
        "We sat on the river bank and watched the ducks for a long, quiet afternoon by the water.",
        "Bank.",
        "You can bank on it, said the teller at the bank.",
        "The bank by the river flooded in spring.",
    ]
    limit = 16
    out = encoder.encode(sents, attentions=True, max_tokens=limit)
    lengths = [min(len(x), limit) for x in encoder.tokenizer(sents)["input_ids"]]
    batches = plan_batches(lengths, 40)
    assert len(batches) > 1
    for idx in batches:
        batch = [sents[i] for i in idx]
        enc = encoder.tokenizer(batch, max_length=limit, padding=True, truncation=True, return_tensors="pt")
        with torch.inference_mode():
            ref = encoder.model(**enc, output_hidden_states=True, output_attentions=True)
        hs = torch.stack(ref.hidden_states, dim=1).numpy()
        att = torch.stack(ref.attentions, dim=1).numpy()
        for j, i in enumerate(idx):
            t = int(enc["attention_mask"][j].sum())
            assert out.hidden_states[i].shape == (encoder.num_hidden_states, t, encoder.hidden_size)
            np.testing.assert_array_equal(out.hidden_states[i], hs[j, :, :t, :])
            np.testing.assert_array_equal(out.attentions[i], att[j, :, :, :t, :t])
            assert out.hidden_states[i].flags.c_contiguous and not out.hidden_states[i].flags.writeable
    assert out.truncated == tuple(len(x) > limit for x in encoder.tokenizer(sents)["input_ids"])
    # and every sentence still matches itself encoded alone (batches change nothing beyond float noise)
    for i, s in enumerate(sents):
        alone = encoder.encode([s], attentions=False, max_tokens=limit)
        np.testing.assert_allclose(alone.hidden_states[0], out.hidden_states[i], atol=1e-4)


def test_encode_refuses_a_bare_string_and_an_empty_list(encoder):
    with pytest.raises(TypeError, match=r"list of sentences.*\['The bank raised its rates.'\]"):
        encoder.encode("The bank raised its rates.")
    with pytest.raises(TypeError, match="list of sentences"):
        encoder.target_vectors("The bank raised its rates.", "bank")
    with pytest.raises(ContextLensError):
        encoder.encode([])
    assert len(encoder.encode(["The bank raised its rates."])) == 1


def test_special_mask_comes_from_the_tokenizer(encoder):
    out = encoder.encode(["The bank raised its rates.", "Hi", "We sat on the [bank] for a long, long time."])
    special_ids = set(encoder.tokenizer.all_special_ids)
    for ids, special, tokens in zip(out.token_ids, out.special, out.tokens, strict=True):
        assert special.dtype == bool and special.shape == ids.shape and not special.flags.writeable
        np.testing.assert_array_equal(special, [int(i) in special_ids for i in ids])
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        assert special[0] and special[-1] and not special[1:-1].any()  # no padding, nothing else special
    # a special token is exactly one with an empty character span in this tokenizer
    for offs, special in zip(out.offsets, out.special, strict=True):
        np.testing.assert_array_equal(special, offs[:, 1] <= offs[:, 0])



def test_special_roles_come_from_the_tokenizer(encoder):
    """Which special id opens a sentence and which closes it: the tokenizer's own cls/bos and sep/eos ids."""
    from types import SimpleNamespace

    roles = encoder.special_roles
    tok = encoder.tokenizer
    assert roles.opening == {tok.cls_token_id} and roles.closing == {tok.sep_token_id}
    out = encoder.encode(["The bank raised its rates."])
    assert int(out.token_ids[0][0]) in roles.opening and int(out.token_ids[0][-1]) in roles.closing
    # a RoBERTa-like tokenizer: <s> is both cls and bos (opening), </s> both sep and eos; none missing
    roberta = SimpleNamespace(cls_token_id=0, bos_token_id=0, sep_token_id=2, eos_token_id=2)
    assert SpecialRoles.of(roberta) == SpecialRoles(opening=frozenset({0}), closing=frozenset({2}))
    # a decoder-like one with one id for both: it opens, and nothing is left to close
    gpt = SimpleNamespace(cls_token_id=None, bos_token_id=7, sep_token_id=None, eos_token_id=7)
    assert SpecialRoles.of(gpt) == SpecialRoles(opening=frozenset({7}), closing=frozenset())

def test_pieces_for_span_takes_no_special_piece_whatever_its_offsets():
    # [CLS] bank ##s [SEP]; a tokenizer that gave [SEP] a non-empty span would still not have it chosen
    offsets = np.array([[0, 0], [0, 4], [4, 5], [4, 5]])
    special = [True, False, False, True]
    assert pieces_for_span(offsets, 0, 5, special=special) == (1, 2)
    assert pieces_for_span(offsets, 4, 5, special=special) == (2,)
    assert pieces_for_span(offsets, 5, 9, special=special) == ()
    with pytest.raises(ValueError, match="special flags"):
        pieces_for_span(offsets, 0, 5, special=special[:3])


def test_subset_and_concat_keep_every_field_aligned(encoder):
    out = encoder.encode(["The bank raised its rates.", "Hi", "We sat on the river bank."])
    sub = out.subset([2, 0])
    assert sub.sentences == (out.sentences[2], out.sentences[0])
    for field in ("token_ids", "offsets", "special", "hidden_states", "attentions"):
        for got, i in zip(getattr(sub, field), (2, 0), strict=True):
            np.testing.assert_array_equal(got, getattr(out, field)[i])
    assert sub.tokens == (out.tokens[2], out.tokens[0]) and sub.truncated == (out.truncated[2], out.truncated[0])
    joined = concat_encodings([out.subset([0]), out.subset([1, 2])])
    assert joined.sentences == out.sentences and len(joined.special) == 3
    assert out.num_hidden_states == encoder.num_hidden_states == encoder.num_layers + 1


def test_model_load_message_says_whether_downloads_were_tried(monkeypatch):
    import transformers

    def refuse(*args, **kwargs):
        raise OSError("not found")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", staticmethod(refuse))
    monkeypatch.delenv("CONTEXT_LENS_ALLOW_DOWNLOADS", raising=False)
    with pytest.raises(ModelLoadError, match=r"downloads are off") as off:
        load_encoder("someone/no-such-model")
    assert isinstance(off.value, ContextLensError)
    monkeypatch.setenv("CONTEXT_LENS_ALLOW_DOWNLOADS", "1")
    with pytest.raises(ModelLoadError, match="could not be downloaded") as on:
        load_encoder("someone/no-such-model")
    assert "downloads are off" not in str(on.value)


def test_encode_strips_brackets(encoder):
    out = encoder.encode(["We sat on the river [bank]."])
    assert out.sentences[0] == "We sat on the river bank."
    assert "[" not in "".join(t for t in out.tokens[0] if t not in ("[CLS]", "[SEP]"))


# ----------------------------------------------------------------------------------- targets
def test_word_vectors_are_the_targets_hidden_states(encoder):
    V = encoder.word_vectors(BANK, target="bank")
    assert V.shape == (3, encoder.num_layers + 1, encoder.hidden_size)
    assert V.dtype == np.float32
    out = encoder.encode(BANK)
    for i in range(3):
        k = out.tokens[i].index("bank")  # 'bank' is one word piece in this vocabulary
        np.testing.assert_allclose(V[i], out.hidden_states[i][:, k, :], atol=1e-5)


def test_target_vectors_spans(encoder):
    tv = encoder.target_vectors(BANK, "bank")
    assert isinstance(tv, TargetVectors)
    assert tv.kept == (0, 1, 2) and tv.problems == ()
    for i, sp in enumerate(tv.spans):
        assert sp.word.lower() == "bank"
        assert sp.pieces == ("bank",)
        assert tv.encoding.tokens[i][sp.token_indices[0]] == "bank"
        assert not sp.marked and not sp.is_split
    assert tv.split_targets == []


def test_bracket_spans_mark_other_forms(encoder):
    sents = ["The river [banks] were flooded.", "She works in [banking] now.", "The bank opened."]
    tv = encoder.target_vectors(sents, "bank")
    assert [sp.word for sp in tv.spans] == ["banks", "banking", "bank"]
    assert [sp.marked for sp in tv.spans] == [True, True, False]
    assert tv.spans[0].sentence == "The river banks were flooded."
    assert tv.encoding.sentences[1] == "She works in banking now."
    for i, sp in enumerate(tv.spans):
        # the chosen pieces spell the marked word (WordPiece, uncased)
        spelled = "".join(p.removeprefix("##") for p in sp.pieces)
        assert spelled == sp.word.lower()
        expected = tv.encoding.hidden_states[i][:, list(sp.token_indices), :].mean(axis=1)
        np.testing.assert_allclose(tv.vectors[i], expected, atol=1e-6)


def test_bracket_multiword_span(encoder):
    tv = encoder.target_vectors(["He sat on the [river bank] all day."], None)
    sp = tv.spans[0]
    assert sp.word == "river bank"
    assert sp.pieces == ("river", "bank")


def test_kiwi_is_split_and_its_vector_is_the_mean_of_the_pieces(encoder):
    p = preset_by_id("kiwi")
    sentences = [s for _, s in p.rows]
    tv = encoder.target_vectors(sentences, p.target)
    hs = tv.encoding.hidden_states
    for i, sp in enumerate(tv.spans):
        assert sp.pieces == ("ki", "##wi")
        assert sp.is_split
        toks = tv.encoding.tokens[i]
        k = toks.index("ki")
        assert toks[k + 1] == "##wi"
        assert sp.token_indices == (k, k + 1)
        expected = (hs[i][:, k, :].astype(np.float64) + hs[i][:, k + 1, :]) / 2
        np.testing.assert_allclose(tv.vectors[i], expected, atol=1e-5)
        # static: the mean of the two pieces' rows of the input embedding matrix
        W = encoder.model.get_input_embeddings().weight.detach().numpy()
        ids = encoder.tokenizer.convert_tokens_to_ids(["ki", "##wi"])
        np.testing.assert_allclose(tv.static[i], W[ids].mean(axis=0), atol=1e-6)
    assert len(tv.split_targets) == len(sentences)


def test_static_embedding_is_the_same_in_every_sentence(encoder):
    tv = encoder.target_vectors(BANK, "bank")
    s = tv.static.astype(np.float64)
    for i in range(1, len(BANK)):
        assert np.array_equal(tv.static[0], tv.static[i])
        cos = s[0] @ s[i] / (np.linalg.norm(s[0]) * np.linalg.norm(s[i]))
        assert cos == pytest.approx(1.0, abs=1e-12)
    # ...while the contextual vectors in the last layer differ
    last = tv.vectors[:, -1, :]
    assert not np.allclose(last[0], last[1])
    # and static is the embedding matrix row of 'bank', not the layer-0 output (which adds position + LN)
    W = encoder.model.get_input_embeddings().weight.detach().numpy()
    np.testing.assert_array_equal(tv.static[0], W[encoder.tokenizer.convert_tokens_to_ids("bank")])
    assert not np.allclose(tv.static[0], tv.vectors[0, 0])


def test_missing_target_names_the_sentence(encoder):
    sents = ["The bank raised its rates.", "Nothing to see in this one."]
    with pytest.raises(TargetError) as info:
        encoder.word_vectors(sents, target="bank")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, TargetNotFoundError)
    assert "Nothing to see in this one." in str(info.value)
    assert info.value.sentence == sents[1]


def test_skip_missing_keeps_the_good_sentences(encoder):
    sents = ["The bank raised its rates.", "Nothing to see here.", "We sat on the bank."]
    tv = encoder.target_vectors(sents, "bank", skip_missing=True)
    assert tv.kept == (0, 2)
    assert len(tv.problems) == 1 and "Nothing to see here." in tv.problems[0]
    assert tv.vectors.shape[0] == 2 and len(tv.encoding) == 2


def test_bad_markup_raises_markup_error(encoder):
    with pytest.raises(MarkupError):
        encoder.word_vectors(["The [bank raised rates."], "bank")
    with pytest.raises(MarkupError):
        encoder.word_vectors(["The [bank] and the [bank]."], "bank")


def test_long_input_is_truncated(encoder):
    long_sentence = "The bank " + "really " * 700 + "ended."
    out = encoder.encode([long_sentence, "Short bank."])
    assert out.truncated == (True, False)
    assert out.any_truncated
    assert len(out.tokens[0]) == encoder.max_tokens
    assert out.tokens[0][-1] == "[SEP]"
    assert out.hidden_states[0].shape[1] == encoder.max_tokens
    # the target near the start is still usable
    V = encoder.word_vectors([long_sentence], "bank")
    assert np.isfinite(V).all()


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_target_beyond_the_limit_raises_truncated_error(encoder):
    late = "It " + "really " * 700 + "was the bank."
    with pytest.raises(TargetTruncatedError) as info:
        encoder.word_vectors([late, "The bank opened."], "bank")
    assert "512" in str(info.value)
    # with skip_missing the sentence is dropped with that message, the other one stays
    tv = encoder.target_vectors([late, "The bank opened."], "bank", skip_missing=True)
    assert tv.kept == (1,)
    assert any("512" in p for p in tv.problems)


def test_every_tokenizer_use_waits_for_the_encoders_lock(encoder):
    """The tokenizer keeps its truncation/padding settings on itself: piece_counts (the budgets, the context
    experiment) must not run while encode() has set them for its own batch in another session."""
    import threading

    done = threading.Event()
    counts: list[list[int]] = []

    def count():
        counts.append(encoder.piece_counts(["The bank raised its rates.", "word " * 600]))
        done.set()

    with encoder._lock:  # another session's encode() in progress
        worker = threading.Thread(target=count)
        worker.start()
        assert not done.wait(0.5)  # it waits for the lock
    assert done.wait(60)
    worker.join()
    want = [len(encoder.tokenizer.tokenize("The bank raised its rates.")) + 2, 602]
    assert counts == [want]  # the uncut length, more than the model's 512
