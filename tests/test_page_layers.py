"""AppTest runs of pages/layers.py on the real bundled model."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import assert_page_ok, seed, url_written

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "layers.py")


def _app(text: str | None = None, target: str | None = None, **params) -> AppTest:
    """The page (not yet run), on ``text`` when given; ``params`` by key, e.g. ``layers_card_box=True`` (the
    evidence card's expander open) or ``layers_upload_box=True`` (the upload's)."""
    at = AppTest.from_file(PAGE, default_timeout=240)
    if text is not None:
        seed(at, text=text, target=target)
    seed(at, **params)
    return at



def _markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def _encoder_calls() -> int:
    from ui import cache

    return sum(cache.ENCODE_CALLS.values())


def test_preset_shows_every_section():
    at = _app().run()
    assert_page_ok(at, charts=5)  # matrix, static vs contextual, trajectories, Ethayarajh, readout
    text = _markdown(at)
    assert "(every pair: cosine 1.00)" in text  # the static embedding is one vector for all sentences
    assert "same-sense minus different-sense gap" in text
    assert "Best: **layer" in text
    pairs = re.search(r"([\d,]+) pairs sampled as Ethayarajh", "\n".join(c.value for c in at.caption))
    assert pairs and int(pairs.group(1).replace(",", "")) > 100  # the number of pairs, thousands and all
    downloads = {b.key for b in at.get("download_button")}
    assert {"layers_matrix_download", "layers_trajectories_download"} <= downloads  # charts as HTML
    page_url = url_written(at)
    assert page_url["layers_layer"] == str(at.session_state["layers_layer"])
    assert page_url["layers_pooling"] == "layer"
    # the evidence card and the upload wait in their expanders, run only when opened
    assert not {"layers_card_csv", "layers_card_md"} & downloads
    assert not at.get("file_uploader") and not [t for t in at.table if "on your sentences" in t.value.columns]
    seed(at, layers_card_box=True)
    at.run()
    downloads = {b.key for b in at.get("download_button")}
    assert {"layers_card_csv", "layers_card_md"} <= downloads  # evidence card as CSV and Markdown
    _whole(_card(at))


def test_the_similarity_chart_comes_first():
    """After the title and the introduction, the widgets and the section-1 chart come before any other text."""
    at = _app().run()
    main = list(at.main)  # every element and block, in page order
    kinds = [type(e).__name__ for e in main]
    chart_at = next(i for i, e in enumerate(main) if e.type == "plotly_chart")
    assert kinds.index("Title") < chart_at
    text = ("Markdown", "Caption", "Expander", "Info", "Warning", "Success", "Error")
    before = [e for e in main[:chart_at] if type(e).__name__ in text]
    assert len(before) == 1 and "follows **one word" in before[0].value, before  # the introduction alone


def test_controls_do_not_run_the_model_again():
    at = _app().run()
    assert_page_ok(at, charts=5)
    calls = _encoder_calls()
    at.slider(key="layers_layer").set_value(2).run()
    at.radio(key="layers_pooling").set_value("last4").run()
    at.radio(key="layers_view").set_value("all").run()
    at.toggle(key="layers_adjust").set_value(True).run()
    at.toggle(key="layers_pairs").set_value(True).run()
    at.toggle(key="layers_reference").set_value(True).run()
    at.selectbox(key="layers_sentence").set_value(3).run()
    at.radio(key="layers_pooling").set_value("all").run()
    assert_page_ok(at, charts=5)
    assert _encoder_calls() == calls
    assert url_written(at)["layers_pooling"] == "all"
    assert url_written(at)["layers_view"] == "all"
    assert "mean of all layers" in _markdown(at)


def test_controls_start_from_the_link():
    at = _app()
    at.query_params["layers_layer"] = "2"
    at.query_params["layers_pooling"] = "last4"
    at.query_params["layers_view"] = "nonsense"
    at.run()
    assert_page_ok(at, charts=5)
    assert at.session_state["layers_layer"] == 2
    assert at.session_state["layers_pooling"] == "last4"
    assert at.session_state["layers_view"] == "one"


def test_the_vector_length_per_layer_opens_from_a_link_and_is_the_models(encoder):
    from lib.inputs.presets import default_preset

    at = _app()
    at.query_params["layers_norms"] = "1"
    at.query_params["layers_layer"] = "2"
    at.run()
    assert_page_ok(at, charts=6)
    assert at.session_state["layers_norms"] is True and url_written(at)["layers_norms"] == "1"
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-layers_lengths"))
    bars = json.loads(chart.proto.spec)["data"][0]["y"]
    ss = default_preset().sentence_set()
    v = encoder.target_vectors(list(ss.sentences), ss.target).vectors.astype(np.float64)  # (n, L + 1, H)
    want = [float(np.mean([np.sqrt(np.sum(v[i, k] ** 2)) for i in range(len(v))])) for k in range(v.shape[1])]
    np.testing.assert_allclose(bars, want, rtol=1e-4)
    L = len(want) - 1
    assert f"{want[0]:.1f} at layer 0, **{want[L]:.1f} at layer {L}**" in _markdown(at)
    assert "layers_lengths_download" in {b.key for b in at.get("download_button")}
    at.toggle(key="layers_norms").set_value(False).run()
    assert url_written(at)["layers_norms"] == "0"
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("-layers_lengths")]


def test_without_labels():
    text = "\n".join(
        [
            "The bank raised its rates again.",
            "We had a picnic on the bank of the river.",
            "She works at a bank downtown.",
            "The boat drifted to the far bank.",
        ]
    )
    at = _app(text, "bank").run()
    assert_page_ok(at, charts=4)  # no readout chart without labels
    assert any("needs sense labels" in i.value for i in at.info)
    assert "Without sense labels" in _markdown(at)


def test_two_sentences():
    at = _app("money | The bank closed.\nriver | The river bank flooded.", "bank").run()
    assert_page_ok(at, charts=4)
    assert any("at least two senses with two or more" in i.value for i in at.info)


def test_one_sentence_asks_for_more():
    at = _app("money | The bank closed.", "bank").run()
    assert not at.exception
    assert any("at least 2" in i.value for i in at.info)


def test_upload_keeps_good_rows_and_lists_bad_ones():
    at = _app(layers_upload_box=True).run()
    data = (
        b"sense,sentence\n"
        b"money,The bank approved the loan.\n"
        b"money,She paid the cheque into the bank.\n"
        b"river,Reeds grew along the bank of the canal.\n"
        b"river,We fished from the muddy bank.\n"
        b"river,This row has no target word.\n"
    )
    at.file_uploader(key="layers_upload").set_value(("mine.csv", data, "text/csv")).run()
    assert not at.exception
    assert any("4 usable sentence" in s.value for s in at.success)
    problems = next(d.value for d in at.dataframe if "line" in d.value.columns)
    assert list(problems["line"]) == [6]
    at.button(key="layers_upload_apply").click().run()
    assert_page_ok(at, charts=5)
    assert at.session_state["cl_preset"] == "custom"
    assert any("4 sentences uploaded from mine" in c.value for c in at.caption)
    options = at.selectbox(key="layers_sentence").options
    assert len(options) == 4 and options[0].startswith("S1 · The bank approved")


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("empty.csv", b"", "empty"),
        ("sheet.csv", b"PK\x03\x04" + bytes(200), "Excel"),
        ("bad.csv", b"money,No target here.\n", "No row of the file could be used"),
    ],
)
def test_unusable_upload_gives_a_clear_error_and_the_page_still_works(name, data, words):
    at = _app(layers_upload_box=True).run()
    at.file_uploader(key="layers_upload").set_value((name, data, "text/csv")).run()
    assert not at.exception
    assert any(words in e.value for e in at.error)
    assert len(at.get("plotly_chart")) >= 5


def _many_sentences(n: int) -> bytes:
    """``n`` distinct labelled sentences (half money, half river) as a CSV file."""
    money = [
        "approved the loan",
        "raised its rates",
        "closed the branch",
        "froze the account",
        "sent a letter",
    ]
    river = ["was covered in reeds", "was muddy after rain", "was steep and rocky", "flooded in spring"]
    who = ["old", "local", "small", "central", "busy", "quiet", "northern", "eastern", "new", "famous"]
    when = [
        "on Monday",
        "on Friday",
        "in the morning",
        "late at night",
        "in May",
        "in winter",
        "last year",
        "at dawn",
    ]
    money_rows = [f"money,The {w} bank {m} {t}." for w, m, t in itertools.product(who, money, when)]
    river_rows = [
        f"river,The {w} bank of the stream {r} {t}." for w, r, t in itertools.product(who, river, when)
    ]
    rows = [x for pair in zip(money_rows, river_rows, strict=False) for x in pair][:n]
    assert len(set(rows)) == n
    return ("sense,sentence\n" + "\n".join(rows) + "\n").encode()


@pytest.mark.slow
def test_500_uploaded_sentences_render_and_reuse_the_encoding(monkeypatch):
    from lib.serving import budget

    # 500 sentences of ~13 word pieces (~6,500): within the default set budget of 20,000, set here anyway so
    # this test of drawing 500 sentences does not depend on it (tests/test_guards_app.py checks the cut)
    monkeypatch.setattr(budget, "MAX_SET_PIECES", 20_000)
    at = _app(layers_upload_box=True).run()
    at.file_uploader(key="layers_upload").set_value(("big.csv", _many_sentences(500), "text/csv")).run()
    assert any("500 usable sentence" in s.value for s in at.success)
    at.button(key="layers_upload_apply").click().run()
    assert_page_ok(at, charts=5)
    assert len(at.selectbox(key="layers_sentence").options) == 500
    calls = _encoder_calls()
    at.slider(key="layers_layer").set_value(3).run()
    at.radio(key="layers_view").set_value("all").run()
    at.radio(key="layers_pooling").set_value("last4").run()
    assert_page_ok(at, charts=5)
    assert _encoder_calls() == calls
    assert any("80 of the 500 sentences" in c.value for c in at.caption)


def test_user_text_is_escaped_and_nothing_shows_nan():
    text = (
        "<b>money</b> | The <script>alert(1)</script> bank closed.\n"
        "<b>money</b> | A bank *loan* with [links](http://x).\n"
        "river | The river bank flooded.\n"
        "river | A muddy bank | again."
    )
    at = _app(text, "bank").run()
    assert_page_ok(at, charts=5)
    specs = "".join(json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart"))
    assert "<script" not in specs and "&lt;script&gt;" in specs  # the sentence label, escaped for plotly
    assert "&lt;b&gt;money&lt;/b&gt;" in specs  # the sense label on the heatmap ticks
    assert "NaN" not in specs and "Infinity" not in specs
    shown = "\n".join(
        str(e.value) for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind)
    )
    assert not re.search(r"\b(nan|inf)\b", shown, re.IGNORECASE)
    assert "<script" not in shown


def test_a_typed_mask_token_keeps_its_brackets_on_the_page():
    """Only target markup is removed (lib.models.targets.strip_markup): a typed [MASK] stays "[MASK]" in labels."""
    import json

    text = "river | The [MASK] sat on the river [bank].\nmoney | The bank raised rates.\nriver | A muddy bank."
    at = _app(text, "bank").run()
    assert_page_ok(at, charts=3)
    shown = [json.dumps(json.loads(c.proto.spec), ensure_ascii=False) for c in at.get("plotly_chart")]
    shown += [m.value for m in at.markdown] + [c.value for c in at.caption]
    shown += [df.value.to_csv() for df in at.dataframe] + [t.value.to_csv() for t in at.table]
    found = [s for s in shown if "MASK" in s]
    assert found, "the sentence with [MASK] is shown somewhere"
    for s in found:
        assert re.search(r"(?<!\[)(?<!\\\[)MASK", s) is None, s[:300]


def test_a_long_set_lists_its_sentences_in_a_grid_with_the_text_as_typed():
    from ui.widgets import TABLE_MAX_ROWS

    n = TABLE_MAX_ROWS + 10
    lines = [f"{'money' if k % 2 else 'river'} | Row {k}: the *bank* <b>{k}</b> by the [bank]." for k in range(n)]
    at = _app("\n".join(lines), "bank").run()
    assert_page_ok(at, charts=3)
    grids = [df.value for df in at.dataframe if "sentence" in df.value.columns and len(df.value) == n]
    assert len(grids) == 1 and not [t for t in at.table if len(t.value) == n]
    row = grids[0]["sentence"].iloc[3]
    assert row == "Row 3: the *bank* <b>3</b> by the [bank]."  # as typed: a grid renders no markdown, no HTML
    assert list(grids[0].index[:2]) == ["S1", "S2"] and grids[0]["sense"].iloc[0] == "river"


def _charts_by_key(at: AppTest) -> dict[str, str]:
    """Each chart's spec (as sent) by its key (the element id ends with the key)."""
    return {c.proto.id.rsplit("-", 1)[-1]: c.proto.spec for c in at.get("plotly_chart")}


def _mark_rules(at: AppTest) -> dict[str, int]:
    """The chosen-layer line each chart shows, read from the page's style rules (ui.widgets.layer_chart)."""
    css = "\n".join(h.proto.body for h in at.get("html"))
    return {k: int(i) for k, i in re.findall(r'\.st-key-(\w+) \.shape-group\[data-index="(\d+)"\] path', css)}


def test_the_layer_slider_moves_one_line_and_leaves_the_curves_as_sent():
    """Sections 3, 5 and 6 mark the chosen layer; their figures do not change with the slider or the pooling (so the
    browser keeps them as drawn), a style rule shows the chosen vector's line (a slider's redraw time). Section 2's
    bars stay too: only the matrix is the chosen vector's."""
    at = _app().run()
    assert_page_ok(at, charts=5)
    curves = ("layers_trajectories", "layers_ethayarajh", "layers_readout")
    at.slider(key="layers_layer").set_value(2).run()
    before, marks2 = _charts_by_key(at), _mark_rules(at)
    at.slider(key="layers_layer").set_value(5).run()
    after, marks5 = _charts_by_key(at), _mark_rules(at)
    for key in curves:
        assert before[key] == after[key], key  # the same figure, byte for byte
        assert (marks2[key], marks5[key]) == (2, 5), key
        shapes = json.loads(after[key])["layout"]["shapes"]
        # line i stands at layer i (the rule shows it), and is invisible in the figure itself
        assert shapes[5]["x0"] == 5 and shapes[5]["opacity"] == 0 and shapes[5]["line"]["width"] > 0
    assert before["layers_static"] == after["layers_static"]
    assert before["layers_matrix"] != after["layers_matrix"]  # the matrix itself is the layer's
    # a pooled representation: its point is marked where it is drawn, right of the layers (both means are always
    # drawn there); the Ethayarajh chart has no pooled point, so no line
    k = len(json.loads(after["layers_ethayarajh"])["layout"]["xaxis"]["tickvals"])
    for pooling, place in (("last4", k), ("all", k + 1)):
        at.radio(key="layers_pooling").set_value(pooling).run()
        marks, specs = _mark_rules(at), _charts_by_key(at)
        assert marks["layers_trajectories"] == marks["layers_readout"] == place and "layers_ethayarajh" not in marks
        for key in (*curves, "layers_static"):
            assert specs[key] == after[key], (pooling, key)  # unchanged by the pooling too
        assert specs["layers_matrix"] != after["layers_matrix"]
        shapes = json.loads(specs["layers_trajectories"])["layout"]["shapes"]
        assert shapes[place]["x0"] == pytest.approx(k - 1 + 1.54 * (place - k + 1))


def _loo_readout(V, senses) -> float:
    """The leave-one-out nearest-centroid readout of (n, H) vectors, by hand (every sense has >= 2 sentences):
    each sentence gets the sense whose mean vector, built without it, has the highest cosine with it."""
    V = np.asarray(V, dtype=np.float64)
    right = 0
    for i in range(len(V)):
        best, pick = -np.inf, None
        for s in sorted(set(senses)):
            idx = [j for j in range(len(V)) if senses[j] == s and j != i]
            c = V[idx].mean(axis=0)
            cos = float(V[i] @ c / (np.linalg.norm(V[i]) * np.linalg.norm(c)))
            if cos > best:
                best, pick = cos, s
        right += pick == senses[i]
    return right / len(V)


CARD_FIELDS = ("Representation", "Comparison", "Interpretation: captures", "Interpretation: misses")


def _card(at: AppTest) -> dict[str, str]:
    """The evidence card's table as {field: text}, Markdown escapes read as the characters."""
    card = next(t.value for t in at.table if "on your sentences" in t.value.columns)["on your sentences"]
    return {k: re.sub(r"\\(.)", r"\1", v) for k, v in card.items()}


def _whole(card: dict[str, str]) -> None:
    from lib.stats.evidence import CHECKS

    assert all(f in card for f in CARD_FIELDS), list(card)
    for check in CHECKS:
        assert any(k.startswith(f"Failure check: {check} (") for k in card), (check, list(card))
    (out,) = [v for k, v in card.items() if k.startswith("Expected output")]
    assert out.startswith("none found") or "closer to" in out or "gap is" in out


@pytest.mark.slow  # three presets, the model and every readout by hand
@pytest.mark.parametrize("preset", ["bank", "bat", "apple"])
def test_the_evidence_card_and_the_course_checks_follow_the_numbers(encoder, preset):
    """On three presets: the card has its five fields; its surprise is the sentence nearest another sense
    (numpy on the same vectors) or "none found"; its polysemy check counts the sentences whose nearest
    sentence has another sense; the table of section 6 (the word's vector, the mean of the word pieces,
    [CLS]) holds the leave-one-out readouts computed by hand, with the sentence on deeper layers and on [CLS]
    against the mean saying what they show."""
    from lib.inputs.presets import preset_by_id

    at = _app(layers_card_box=True)
    seed(at, preset=preset)
    at.run()
    assert_page_ok(at, charts=5)
    ss = preset_by_id(preset).sentence_set()
    senses = list(ss.senses)
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    L = encoder.num_layers
    V = tv.vectors.astype(np.float64)
    U = V[:, L] / np.linalg.norm(V[:, L], axis=1, keepdims=True)
    cos = U @ U.T
    n = len(senses)
    # the surprise: the largest "nearer another sense than its own" over every sentence
    best = max(
        (max(cos[a, b] for b in range(n) if senses[b] != senses[a])
         - min(cos[a, c] for c in range(n) if c != a and senses[c] == senses[a]), a)
        for a in range(n)
    )  # fmt: skip
    card = _card(at)
    _whole(card)
    out = next(v for k, v in card.items() if k.startswith("Expected output"))
    if best[0] > 0.01:
        a = best[1]
        b = max((b for b in range(n) if senses[b] != senses[a]), key=lambda b: cos[a, b])
        c = min((c for c in range(n) if c != a and senses[c] == senses[a]), key=lambda c: cos[a, c])
        assert f"S{a + 1} ({senses[a]}) is closer to S{b + 1} ({senses[b]}), another sense ({cos[a, b]:.2f}), than to " \
               f"S{c + 1} ({senses[c]}), its own ({cos[a, c]:.2f})" in out
    else:
        assert out.startswith("none found") or out.startswith("The same-sense minus")
    np.fill_diagonal(cos, -np.inf)
    wrong = sum(senses[int(np.argmax(cos[i]))] != senses[i] for i in range(n))
    assert f"{wrong} of {n} sentences" in card["Failure check: polysemy (check)" if wrong else "Failure check: polysemy (ok)"]
    # section 6's table: the readouts by hand
    table = next(t.value for t in at.table if "read right there" in t.value.columns)
    word = [_loo_readout(V[:, k], senses) for k in range(L + 1)]
    enc_out = tv.encoding
    hs64 = [np.asarray(hs, dtype=np.float64) for hs in enc_out.hidden_states]
    cls = np.stack([hs[:, 0, :] for hs in hs64])
    mean = np.stack([hs[:, ~sp, :].mean(axis=1) for hs, sp in zip(hs64, enc_out.special, strict=True)])
    rows = {"the word's vector": word,
            "sentence: mean of word pieces": [_loo_readout(mean[:, k].astype(np.float64), senses) for k in range(L + 1)],
            "sentence: [CLS]": [np.nan] + [_loo_readout(cls[:, k], senses) for k in range(1, L + 1)]}  # fmt: skip
    # [CLS] at layer 0 is one vector in every sentence (its embedding at position 0): no reading there
    assert np.allclose(cls[:, 0], cls[0, 0])
    for name, acc in rows.items():
        assert table.loc[name, "read right there"] == f"{np.nanmax(acc):.0%}"
        assert table.loc[name, f"at layer {L}"] == f"{acc[L]:.0%}"
    text = re.sub(r"\[(\[?[^\]]*\]?)\]\(glossary#[^)]*\)", r"\1", _markdown(at))  # links read as their text
    fewer = round((max(word) - word[L]) * len(senses))  # sentences the last layer reads fewer than the best
    assert ("Deeper is not always better" in text) == (fewer >= 2)  # one sentence is no evidence
    assert ("one sentence of" in text) == (fewer == 1)
    m, c = np.nanmax(rows["sentence: mean of word pieces"]), np.nanmax(rows["sentence: [CLS]"])
    verdict = "the mean wins" if m > c else "[CLS] wins" if c > m else "they tie"
    assert f"[CLS] {c:.0%}: here {verdict}" in text


HOSTILE_CARD_SET = "\n".join(
    [
        "<b>money</b> | The bank <img src=x onerror=alert(1)> approved it.",
        "river | Bank.",
        "river | We sat on the grassy bank of the Ganges near the Varanasi ghats.",
        " | The bank, the bank: the bank!",
        "money | Pneumonoultramicroscopic bank hyperparathyroidism xylophonist.",
        "river | Sat by bank.",
        "[x](javascript:alert(1)) | The [bank] was shut.",
    ]
)


@pytest.mark.slow
def test_the_evidence_card_on_a_hostile_set_is_whole_and_says_what_it_cannot_check():
    """Odd senses, short and jargon sentences, an unlabelled one: the card still has its five fields, shows
    the set's text as typed (escaped), and its checks follow the set: short text and domain mismatch flagged."""
    at = _app(HOSTILE_CARD_SET, "bank", layers_card_box=True)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    card = _card(at)
    _whole(card)
    assert "(check)" in next(k for k in card if k.startswith("Failure check: short text"))
    assert "(check)" in next(k for k in card if k.startswith("Failure check: domain mismatch"))
    raw = next(t.value for t in at.table if "on your sentences" in t.value.columns)["on your sentences"]
    assert not any("<b>" in v for v in raw)  # escaped for the table's Markdown


def test_the_cue_preset_offers_the_decoder_without_running_it():
    """The cue preset's encoder-and-decoder comparison waits in its expander: a learner on the encoder sees the
    expander after the first chart, and the decoder runs only when it is opened."""
    from lib.models.keys import DECODER_MODEL
    from ui import cache

    at = _app()
    seed(at, preset="bank-cue")
    runs = cache.ENCODE_CALLS[DECODER_MODEL]
    at.run()
    assert_page_ok(at, charts=5)
    labels = [e.label for e in at.expander]
    assert any(label.startswith("Cue before, cue after") for label in labels), labels
    assert cache.ENCODE_CALLS[DECODER_MODEL] == runs  # nothing heavy without a click
    main = list(at.main)
    first_chart = next(i for i, e in enumerate(main) if e.type == "plotly_chart")
    cue_box = next(i for i, e in enumerate(main) if getattr(e, "label", "").startswith("Cue before"))
    assert first_chart < cue_box  # the chart first
    assert not [c for c in at.get("plotly_chart") if "-layers_cue_" in c.proto.id]
