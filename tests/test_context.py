"""lib/stats/context.py and context_senses.py: occlusion of context words on the real bundled model, what it does
to the word's sense, and their small helpers by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from lib.inputs.sentences import parse_sentence_set
from lib.models.targets import MarkupError, find_target, strip_markup
from lib.stats.context import (
    MAX_PIECES,
    ContextError,
    Occlusion,
    attention_effect_correlation,
    check_replacement,
    edit,
    layer_cosines,
    occlusion,
    rank,
    spearman,
    split_words,
    variants_per_slice,
)
from lib.stats.context_senses import (
    FUNCTION_WORDS,
    sense_centroids,
    sense_flip,
    suggested_swaps,
    top_content_word,
)
from tests.conftest import ROOT

ROOT_INTRO = ROOT / "assets" / "intro"

# Clear sentences of our own, one per sense, with the words that carry the sense.
CLEAR = [
    ("bank", "money", "I deposited my salary at the bank.", {"salary", "deposited"}),
    ("bank", "river", "The fishermen pulled their boat up onto the muddy bank.", {"muddy", "fishermen", "boat"}),
    ("bat", "animal", "The vampire bat drinks blood from sleeping cattle.", {"vampire", "blood", "cattle"}),
    ("bat", "sports", "The baseball bat cracked against the fastball.", {"baseball", "fastball", "cracked"}),
]


@pytest.fixture(scope="module")
def river(encoder) -> Occlusion:
    return occlusion(encoder, "We sat on the grassy river [bank] and watched the boats .")


# ------------------------------------------------------------------------------------------ the model


@pytest.mark.parametrize("target,sense,sentence,sense_words", CLEAR, ids=[c[1] for c in CLEAR])
def test_a_sense_word_moves_the_target_most_and_a_function_word_is_not_first(
    encoder, target, sense, sentence, sense_words
):
    occ = occlusion(encoder, sentence, target)
    top2 = [occ.words[j].lower() for j in occ.ranking(encoder.num_layers)[:2]]
    assert set(top2) & sense_words, (sense, top2)
    first = top2[0]
    assert first not in FUNCTION_WORDS and first.isalpha(), (sense, first)


def test_the_target_itself_is_not_listed(encoder, river):
    assert river.words == ("We", "sat", "on", "the", "grassy", "river", "and", "watched", "the", "boats", ".")
    assert "bank" not in [w.lower() for w in river.words]
    ts, te = river.target_span
    assert river.sentence[ts:te] == "bank"
    assert all(b <= ts or a >= te for a, b in river.spans)
    flat = {p for ps in river.pieces for p in ps}
    assert not flat & set(river.target_pieces)
    assert river.shift.shape == (encoder.num_layers + 1, len(river.words))
    assert river.attention.shape == (encoder.num_layers, len(river.words))
    # a target inside a longer word (here "banks") is left out as a whole word
    occ = occlusion(encoder, "Two [bank]s of the river .")
    assert occ.words == ("Two", "of", "the", "river", ".")


def test_batch_equals_single(encoder, river):
    """Each column of the shift, computed in one batch, equals encoding that variant on its own."""
    for j in (0, 5, len(river.words) - 1):
        alone = encoder.target_vectors([river.variants[j]]).vectors[0]  # (L + 1, H)
        cos = layer_cosines(river.base, alone[None])[:, 0]
        assert np.allclose(1.0 - cos, river.shift[:, j], atol=1e-4), j


def test_a_long_sentence_is_run_in_slices_and_each_variant_equals_its_own_run(encoder):
    """The variants of a long sentence run a slice at a time (only the target's vectors kept); every column,
    the first and last of each slice included, equals that variant encoded on its own."""
    filler = " ".join(["we", "walked", "along", "the", "quiet", "river", "and", "watched", "small", "boats"] * 4)
    occ = occlusion(encoder, f"The [bank] by the water {filler} end .")
    step = variants_per_slice(len(occ.tokens))
    assert step < len(occ.words)  # more than one slice
    edges = sorted({j for k in range(0, len(occ.words), step) for j in (k, min(k + step, len(occ.words)) - 1)})
    assert len(edges) >= 4
    for j in edges:
        alone = encoder.target_vectors([occ.variants[j]]).vectors[0]  # (L + 1, H)
        cos = layer_cosines(occ.base, alone[None])[:, 0]
        assert np.allclose(1.0 - cos, occ.shift[:, j], atol=1e-4), j
    assert occ.moved.shape == (len(occ.words), encoder.num_hidden_states, encoder.hidden_size)
    assert not any(occ.target_changed)  # masking never touches the target's own pieces


def test_masking_keeps_positions_so_layer_0_does_not_move(encoder, river):
    assert np.all(river.shift >= 0) and np.all(river.shift <= 2)
    assert np.allclose(river.shift[0], 0.0, atol=1e-6)  # the context arrives only through attention
    assert river.shift[-1].max() > 0.01
    n = len(river.tokens)
    for v in river.variants:
        assert "[MASK]" in v and v.count("[bank]") == 1
        clean = strip_markup(v)[0]
        assert len(encoder.encode([clean], attentions=False).tokens[0]) == n


def test_a_split_word_is_masked_piece_by_piece(encoder):
    occ = occlusion(encoder, "The kiwi fell near the [bank] .")
    j = occ.words.index("kiwi")
    assert len(occ.pieces[j]) == 2  # ki ##wi
    assert "[MASK] [MASK] fell" in occ.variants[j]


def test_a_replacement_that_changes_the_piece_count_still_finds_the_target(encoder):
    s = "We sat on the river [bank] ."
    deleted = occlusion(encoder, s, replacement="")
    longer = occlusion(encoder, s, replacement="extraordinarily")
    for occ in (deleted, longer):
        for v in occ.variants:
            span = find_target(v, None)
            assert span.word == "bank"
    assert deleted.variants[deleted.words.index("river")] == "We sat on the [bank] ."
    assert np.all(np.isfinite(longer.shift))


def test_attention_is_the_targets_row_summed_over_each_words_pieces(encoder, river):
    out = encoder.encode([river.sentence])
    att = out.attentions[0]  # (L, heads, T, T)
    t = list(river.target_pieces)
    for j in (4, 5):
        expected = att[:, :, t, :][:, :, :, list(river.pieces[j])].sum(axis=-1).mean(axis=(1, 2))
        assert np.allclose(river.attention[:, j], expected, atol=1e-6)
    # the words' shares plus the target's own, [CLS] and [SEP] add up to 1 per layer
    rest = att[:, :, t, :].mean(axis=(1, 2))  # (L, T)
    own = rest[:, t].sum(axis=1) + rest[:, 0] + rest[:, -1]
    assert np.allclose(river.attention.sum(axis=1) + own, 1.0, atol=1e-5)


def test_attention_effect_correlation_matches_scipy(river):
    rho = attention_effect_correlation(river)
    assert rho.shape == (river.num_layers,)
    for k in range(river.num_layers):
        ref = spearmanr(river.attention[k], river.shift[k + 1]).statistic
        assert rho[k] == pytest.approx(ref, abs=1e-9)


def test_limits_and_bad_input_give_messages(encoder):
    long = " ".join(["word"] * (MAX_PIECES + 5)) + " [bank]"
    with pytest.raises(ContextError, match="word pieces"):
        occlusion(encoder, long)
    with pytest.raises(ContextError, match="nothing to mask"):
        occlusion(encoder, "[bank]")
    with pytest.raises(ContextError, match="brackets"):
        occlusion(encoder, "the [bank] .", replacement="[x]")
    with pytest.raises(ValueError, match="no “bank”"):
        occlusion(encoder, "No target here.", "bank")


def test_to_csv_has_one_row_per_word(river):
    lines = river.to_csv().strip().splitlines()
    assert len(lines) == 1 + len(river.words)
    assert lines[0].startswith("position,word,word_pieces,shift_layer_0")
    assert lines[6].split(",")[1] == "river"


# ------------------------------------------------------------------------------------------ special tokens


def test_special_tokens_typed_in_brackets_are_tokens_not_targets(encoder):
    span = find_target("The [MASK] sat on the river [bank]", "bank")
    assert span.sentence == "The [MASK] sat on the river bank" and span.word == "bank" and span.marked
    assert find_target("A [CLS] b [SEP] c [UNK] d [PAD] bank", "bank").word == "bank"
    assert find_target("The [[MASK]] sat", None).word == "[MASK]"
    tv = encoder.target_vectors(["The [MASK] sat on the river [bank]"])
    assert "[MASK]" in tv.encoding.tokens[0] and tv.spans[0].pieces == ("bank",)
    ss = parse_sentence_set("river | The [MASK] sat on the river [bank].", "bank")
    assert len(ss) == 1 and not ss.problems and "[MASK]" in ss.labels[0]
    # written in lower case it is not the special token, so it is markup as before
    with pytest.raises(MarkupError):
        find_target("The [mask] sat on the river [bank]", "bank")
    occ = occlusion(encoder, "The [MASK] sat on the river [bank] .")
    assert "[MASK]" in occ.words


# ------------------------------------------------------------------------------------------ by hand


def test_split_words_and_edit_by_hand():
    assert [w for w, _, _ in split_words("Don't bank on it, [MASK].")] == [
        "Don't", "bank", "on", "it", ",", "[MASK]", "."
    ]  # fmt: skip
    s = "We sat on the bank ."
    marked, span = edit(s, (14, 18), (7, 9), "")  # delete "on"
    assert marked == "We sat the [bank] ." and span.word == "bank"
    marked, span = edit(s, (14, 18), (3, 6), "lounged")
    assert marked == "We lounged on the [bank] ." and span.sentence[span.start : span.end] == "bank"
    marked, _ = edit(s, (14, 18), (19, 20), "!")  # after the target
    assert marked == "We sat on the [bank] !"
    with pytest.raises(ValueError):
        edit(s, (14, 18), (14, 18), "x")
    assert check_replacement("  two   words ") == "two words"
    with pytest.raises(ContextError):
        check_replacement("x" * 41)


def test_rank_and_spearman_by_hand():
    assert rank(np.array([10.0, 30.0, 20.0, 20.0])).tolist() == [1.0, 4.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 2], [2, 1]))
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_sense_centroids_leave_the_edited_sentence_out_and_flip_by_hand():
    v = np.zeros((4, 2, 2))
    v[0, :, 0] = 1.0  # river
    v[1, :, 0] = 1.0  # river
    v[2, :, 1] = 1.0  # money
    v[3, :, :] = [[1.0, 0.0], [0.0, 1.0]]  # money: looks like river at layer 0
    c = sense_centroids(v, ["river", "river", "money", "money"], exclude=3)
    assert c.names == ("river", "money") and c.sizes == (2, 1)
    assert c.nearest(v[3]) == ("river", "money")
    assert sense_centroids(v, ["river", None, "river", None]) is None
    assert sense_flip(["river"] * 4, ["river", "river", "money", "money"]) == 2
    assert sense_flip(["river"] * 4, ["money", "river", "money", "money"]) == 2
    assert sense_flip(["river"] * 3, ["money", "money", "river"]) is None


def test_suggested_swaps_take_the_strongest_word_of_the_other_senses(encoder, river):
    money = occlusion(encoder, "I deposited my salary at the bank.", "bank")
    swaps = suggested_swaps(river, [("money", money)], target="bank")
    j = top_content_word(river, "bank")
    assert river.words[j] not in FUNCTION_WORDS
    assert len(swaps) == 1 and swaps[0].index == j and swaps[0].sense == "money"
    assert swaps[0].replacement == money.words[top_content_word(money, "bank")]


def test_an_edit_that_keeps_the_word_keeps_the_vector_and_a_real_edit_moves_it(encoder, river):
    j = river.words.index("river")
    same, _ = edit(river.sentence, river.target_span, river.spans[j], "river")
    swapped, _ = edit(river.sentence, river.target_span, river.spans[j], "savings")
    v = encoder.target_vectors([same, swapped]).vectors
    cos = layer_cosines(river.base, v)  # (L + 1, 2)
    assert np.allclose(cos[:, 0], 1.0, atol=1e-5)
    assert cos[-1, 1] < 0.99


def test_csv_cells_that_look_like_formulas_are_text(encoder):
    occ = occlusion(encoder, "=cmd - @home + the [bank] .")
    rows = occ.to_csv().splitlines()[1:]
    words = [r.split(",")[1] for r in rows]
    assert "'=" in words and "'-" in words and "'@" in words and "'+" in words
    assert all(not w.startswith(("=", "+", "-", "@")) for w in words)


def test_half_effect_layer_by_hand(river):
    from dataclasses import replace

    shift = np.array([[0.0, 0.0, np.nan], [0.1, 0.3, np.nan], [0.25, 0.35, np.nan], [0.5, 0.4, np.nan]])
    occ = replace(river, shift=shift)
    assert occ.half_effect_layer(0) == 2  # 0.25 >= 0.5 * 0.5 first at layer 2
    assert occ.half_effect_layer(1) == 1  # 0.3 >= 0.2
    assert occ.half_effect_layer(2) == occ.num_layers == 3  # never reached
    assert int(river.ranking(river.num_layers)[0]) == int(np.argmax(river.shift[-1]))


def test_context_use_matches_occlusion_and_the_attention_rows(encoder):
    """context_use: the largest last-layer occlusion shift per sentence, and each row's entropy over log n."""
    from lib.stats.context import context_use, occlusion

    sentences = ["We sat on the grassy river [bank] .", "The bank raised its rates .", "No target here ."]
    use = context_use(encoder, sentences, "bank")
    assert use.shift.shape == (2,)  # the sentence without the target is left out
    for k, s in enumerate(sentences[:2]):
        occ = occlusion(encoder, s, "bank")
        assert use.shift[k] == pytest.approx(float(occ.shift[-1].max()))
    att = [encoder.encode([occlusion(encoder, s, "bank").sentence]).attentions[0] for s in sentences[:2]]
    by_hand = np.mean(
        [[np.mean([-(row * np.log(row)).sum() / np.log(len(row)) for row in a[layer].reshape(-1, a.shape[-1])])
          for layer in range(a.shape[0])] for a in att],
        axis=0,
    )
    np.testing.assert_allclose(use.entropy, by_hand, atol=1e-6)
    with pytest.raises(ContextError):
        context_use(encoder, ["No target here ."], "bank")


@pytest.mark.slow  # 24 occlusions
def test_a_masked_word_is_not_an_absent_word(encoder):
    """The intro's and the glossary's claim: [MASK] is a word piece the model reads, so part of a masked word's
    shift is the [MASK] itself. On the bank sentences at the last layer, deleting a word moves the target
    less than masking it, for most words and most of all for function words ("the", "of")."""
    from lib.inputs.presets import preset_by_id
    from lib.stats.context import occlusion

    ss = preset_by_id("bank").sentence_set()
    ratios, function_ratios = [], []
    for s in ss.sentences:
        masked, deleted = occlusion(encoder, s, ss.target), occlusion(encoder, s, ss.target, "")
        assert masked.words == deleted.words  # the same words, one edit each
        L = masked.num_layers
        assert np.allclose(masked.shift[0], 0) and not np.allclose(deleted.shift[0], 0)  # positions move
        for j, w in enumerate(masked.words):
            if w.isalpha() and masked.shift[L, j] > 0:
                r = deleted.shift[L, j] / masked.shift[L, j]
                ratios.append(r)
                if w.lower() in FUNCTION_WORDS:
                    function_ratios.append(r)
    assert np.median(ratios) < 1 and np.median(function_ratios) < np.median(ratios)
    intro = " ".join((ROOT_INTRO / "context.md").read_text(encoding="utf-8").split())
    assert "{how}" in intro  # the page fills it as the model hides a word (pages/context.py)
    page = " ".join((ROOT / "pages" / "context.py").read_text(encoding="utf-8").split())
    assert "a masked word is not an absent one" in page and "masked language modelling" in page


def test_sense_pull_sign_on_a_hand_made_case():
    """Two senses in two dimensions: the target sits on the money side; masking a money word moves it to the
    middle (it was pulling towards money: positive), masking a river word moves it further to money (it was
    pulling away: negative)."""
    from lib.stats.context import Occlusion
    from lib.stats.context_senses import SenseCentroids, sense_pull

    base = np.array([[1.0, 0.0], [1.0, 0.5]])  # (K = 2, H = 2); layer 1: cos money .894, river .447
    moved = np.array([[[1.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])  # word 0: middle; word 1: money
    occ = Occlusion(
        sentence="cash bank reeds", target="bank", target_span=(5, 9), target_pieces=(2,), words=("cash", "reeds"),
        spans=((0, 4), (10, 15)), pieces=((1,), (3,)), tokens=("[CLS]", "cash", "bank", "reeds", "[SEP]"),
        replacement="[MASK]", variants=("", ""), shift=np.zeros((2, 2)), attention=np.zeros((1, 2)),
        base=base, moved=moved,
    )  # fmt: skip
    cents = SenseCentroids(("money", "river"), np.array([[[1.0, 0.0]] * 2, [[0.0, 1.0]] * 2]), (1, 1))
    pull = sense_pull(occ, cents, "money", 1)
    before = 1 / np.sqrt(1.25) - 0.5 / np.sqrt(1.25)  # margin in the sentence: cos money − cos river
    assert pull[0] == pytest.approx(before - 0.0) and pull[0] > 0  # "cash" pulled towards money
    assert pull[1] == pytest.approx(before - 1.0) and pull[1] < 0  # "reeds" pulled away from it
    assert sense_pull(occ, cents, "river", 1)[0] == pytest.approx(-pull[0])  # two senses: the mirror image


def test_sense_pull_by_hand(encoder):
    """The margin (cosine with the own sense's centroid minus the nearest other's) in the sentence minus with
    each word masked, recomputed from the occlusion's vectors with plain numpy; and the page shows it."""
    from lib.inputs.presets import preset_by_id
    from lib.stats.context import occlusion
    from lib.stats.context_senses import sense_centroids, sense_pull

    ss = preset_by_id("bank").sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    cents = sense_centroids(tv.vectors, ss.senses, exclude=0)
    occ = occlusion(encoder, ss.sentences[0], ss.target)
    own, layer = ss.senses[0], encoder.num_layers
    got = sense_pull(occ, cents, own, layer)

    def margin(v):
        cos = {
            name: float(v @ c / (np.linalg.norm(v) * np.linalg.norm(c)))
            for name, c in zip(cents.names, cents.centroids[:, layer, :], strict=True)
        }
        return cos[own] - max(x for name, x in cos.items() if name != own)

    want = [margin(occ.base[layer].astype(np.float64)) - margin(occ.moved[k, layer].astype(np.float64)) for k in range(len(occ.words))]
    np.testing.assert_allclose(got, want, atol=1e-6)
    with pytest.raises(ValueError):
        sense_pull(occ, cents, "no such sense", layer)


def test_context_use_phrase_says_what_the_numbers_say():
    from lib.stats.chance import layer_runs
    from lib.stats.context import ContextUse, context_use_phrase

    trained = ContextUse(np.array([0.74, 0.44, 0.46, 0.56]), np.array([0.035, 0.104, 0.178]))
    flat = ContextUse(np.array([0.78, 0.87, 0.92, 0.40]), np.array([0.009, 0.017, 0.031]))
    text = context_use_phrase(trained, flat, "the control")
    assert text.startswith("Attention in the control is flatter in layers 2 and 3 (entropy 0.87–0.92 of uniform, trained 0.44–0.46)")
    assert "sharper in layer 4 (entropy 0.40 of uniform, trained 0.56)" in text and "about as sharp in layer 1" in text
    assert "moves its target less: the largest shift per sentence has median 0.017 (0.009–0.031), trained 0.104 (0.035–0.178)" in text
    same = ContextUse(trained.entropy + 0.01, trained.shift * 1.1)
    text = context_use_phrase(trained, same)
    assert "as sharp as in the trained model in every layer" in text and "about as far" in text
    assert "more" in context_use_phrase(trained, ContextUse(trained.entropy, trained.shift * 2))
    assert layer_runs([2, 3, 4, 6]) == "layers 2–4 and 6" and layer_runs([5]) == "layer 5"
    assert layer_runs([1, 2]) == "layers 1 and 2"
    with pytest.raises(ValueError):
        context_use_phrase(trained, ContextUse(np.ones(2), trained.shift))


def test_pull_notes_say_what_a_rule_can_see():
    """A word whose deletion leaves the target nearer its sense pulled it away (said, with the position move a
    deletion before the target makes); the word that moves the target most but pulls it little is said too;
    a left-to-right model's later words give the rounding a pull must beat."""
    from lib.stats.context_senses import pull_noise, pull_notes

    occ = Occlusion(
        sentence="sat river bank now", target="bank", target_span=(10, 14), target_pieces=(3,),
        words=("sat", "river", "now"), spans=((0, 3), (4, 9), (15, 18)), pieces=((1,), (2,), (4,)),
        tokens=("<s>", "sat", "river", "bank", "now"), replacement="", variants=("", "", ""),
        shift=np.array([[0.0, 0.0, 0.0], [0.3, 0.05, 0.0001]]), attention=np.zeros((1, 3)),
        base=np.zeros((2, 2)), moved=np.zeros((3, 2, 2)),
    )  # fmt: skip
    pull = np.array([0.004, -0.007, 0.0002])
    assert occ.before_target == (0, 1) and occ.after_target == (2,)
    assert pull_noise(occ, pull, causal=True) == pytest.approx(0.0002)
    notes = pull_notes(occ, pull, [0, 1, 2], "river", True, causal=True, layer=1)
    assert notes[0].startswith("Without “river” the target sits *nearer* the “river” average (pull -0.007)")
    assert "one place to the left" in notes[0]  # deleted, and before the target
    assert len(notes) == 1  # "sat" moves it most and pulls it most: nothing more to say
    masked = pull_notes(occ, pull, [0, 1, 2], "river", False, causal=False, layer=1)
    assert "one place to the left" not in masked[0]
    # the word that moves it most pulls it least: the shift is mostly not a change of sense
    notes = pull_notes(occ, np.array([0.001, 0.02, 0.0]), [0, 1], "river", True, causal=True, layer=1)
    assert notes == ["“sat” moves the target most but pulls it only +0.001 towards “river”; “river” pulls it most "
                     "(+0.020): the shift counts any change of the vector, and most of this one is not a change of "
                     "sense."]  # fmt: skip


def test_attention_effect_correlation_over_chosen_words(river):
    idx = [0, 2, 3, 5]
    rho = attention_effect_correlation(river, idx)
    for k in range(river.num_layers):
        ref = spearmanr(river.attention[k, idx], river.shift[k + 1, idx]).statistic
        assert rho[k] == pytest.approx(ref, abs=1e-9)


@pytest.mark.slow  # the decoder over a sentence's variants
def test_deleting_the_first_word_changes_a_byte_level_targets_piece(decoder):
    occ = occlusion(decoder, "The bank approved our loan.", "bank")
    tok = decoder.tokenizer
    # by hand: "bank" at the start of a text is another piece than " bank" after a word
    assert tok.tokenize("bank approved") [0] != tok.tokenize("The bank approved")[1]
    assert occ.target_changed == tuple(j == 0 for j in range(len(occ.words)))
