"""Every sentence that names a number, a layer or a comparison agrees with the numbers of its own chart,
in whatever model is loaded (issue 12).

The pages and the lesson are run on a second, small, randomly initialised BERT (three layers, saved with the
bundled tokenizer into a temporary folder and loaded through ``lib.encoder.load_encoder(folder)``), whose
numbers look nothing like the default model's. Each check recomputes the number a sentence rests on from the
vectors (numpy, not the page's code path) and asks whether the sentence says the same: "the gap is largest at
layer k" must name the argmax, "within chance" must list the layers at or below the shuffled band, and no
sentence about the default model's training may appear.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lib import lesson, lesson_senses
from lib.baseline import ETHAYARAJH_2019_BERT_BASE, other_token_masks
from lib.chance import chance_phrase, layer_list, readout_chance
from lib.contextuality import intra_sentence_similarity
from lib.pooling import with_pooled
from lib.presets import preset_by_id
from lib.readout import leave_one_out_readout
from lib.similarity import cosine_matrix
from tests.conftest import ROOT
from ui.state import seed

N_LAYERS = 3


@pytest.fixture(scope="module")
def random_bert(tmp_path_factory):
    """(folder, encoder): a randomly initialised 3-layer BERT with the bundled tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from lib.encoder import default_model_path, load_encoder

    folder = tmp_path_factory.mktemp("random_bert")
    tok = AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=64,
        num_hidden_layers=N_LAYERS,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    enc = load_encoder(str(folder))
    assert enc.num_layers == N_LAYERS
    return str(folder), enc


def _page(name: str, model: str, preset: str = "apple", **state):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=240)
    seed(at, preset=preset, model=model, **state)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def _text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [s.value for s in at.success] + [i.value for i in at.info]
    return "\n".join(parts)


def _preset_vectors(enc, preset: str):
    ss = preset_by_id(preset).sentence_set()
    tv = enc.target_vectors(list(ss.sentences), ss.target)
    return tv, [ss.senses[i] for i in tv.kept]


def _gap(vectors: np.ndarray, senses) -> np.ndarray:
    """Same-sense minus different-sense mean cosine per layer, by plain loops (independent of lib)."""
    u = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    out = []
    for k in range(u.shape[1]):
        same, diff = [], []
        for i in range(len(senses)):
            for j in range(i + 1, len(senses)):
                (same if senses[i] == senses[j] else diff).append(float(u[i, k] @ u[j, k]))
        out.append(np.mean(same) - np.mean(diff))
    return np.array(out)


def _layers_in(text: str) -> list[int]:
    """'layer 0' -> [0]; 'layers 0, 2 and 3' -> [0, 2, 3]."""
    return [int(x) for x in re.findall(r"\d+", text)]


def test_default_model_sentences_stay_with_the_default_model(random_bert):
    folder, _ = random_bert
    aniso = _text(_page("anisotropy", folder, "bank"))
    assert "all-MiniLM-L6-v2 was fine-tuned" not in aniso
    assert "This model's raw curve, layer 0 to 3:" in aniso


def test_layers_page_sentences_match_its_numbers(random_bert):
    folder, enc = random_bert
    at = _page("layers", folder, "apple")
    text = _text(at)
    tv, senses = _preset_vectors(enc, "apple")
    K = N_LAYERS + 1

    # section 3: the layer named as the largest gap is the argmax
    g = _gap(tv.vectors.astype(np.float64), senses)
    top = int(np.argmax(g))
    if top == 0:
        assert "It is largest at the embedding layer" in text
    else:
        m = re.search(r"to its largest, \*\*[+-]\d\.\d\d at layer (\d+)\*\*", text)
        assert m and int(m.group(1)) == top, (m and m.group(0), g)

    # section 6: the best layer, and the layers within chance
    ro = leave_one_out_readout(tv.vectors, senses)
    best = int(np.argmax(ro.accuracy[:K]))
    m = re.search(r"The best is \*\*(the embedding layer|layer (\d+))\*\*", text)
    assert m and (best == 0 if m.group(2) is None else int(m.group(2)) == best)
    rc = readout_chance(with_pooled(tv.vectors), senses)
    inside = [i for i in range(K) if rc.accuracy[i] <= rc.shuffled_p95[i] + 1e-12]
    m = re.search(r"Within chance: (layers? [\d, and]+)\. ", text)
    if inside:
        assert m and _layers_in(m.group(1)) == inside, (m and m.group(0), rc.accuracy, rc.shuffled_p95)
    else:
        assert m is None and "Every layer is above the chance band" in text
    if rc.accuracy[0] <= rc.shuffled_p95[0] + 1e-12:
        assert "At the embedding layer the readout" in text and "is within chance" in text
    else:
        assert "already above chance" in text

    # section 5: "above random words" has the sign of self-similarity minus the baseline
    m = re.search(r"self-similarity at layer \d+ is ([+-]\d\.\d\d) above random words", text)
    assert m
    # section 2: "the context carries the sense" only when the gap grew from layer 0
    g_last = _gap(tv.vectors[:, [0, N_LAYERS]].astype(np.float64), senses)
    assert ("and the context carries the sense" in text) == (g_last[1] > g_last[0] + 0.01)
    closer = "stay closer to each other than to other words" in text
    assert closer == (float(m.group(1)) > 0) or float(m.group(1)) == 0.0


def test_home_page_sentences_match_its_numbers(random_bert):
    folder, enc = random_bert
    text = _text(_page("home", folder, "bank"))
    tv, senses = _preset_vectors(enc, "bank")
    g = _gap(tv.vectors[:, [0, N_LAYERS]].astype(np.float64), senses)
    pulled = "the context has pulled the occurrences apart by meaning" in text
    assert pulled == (g[1] > g[0] + 0.01), g
    rc = readout_chance(tv.vectors, senses)
    assert chance_phrase(rc, 0) in text and chance_phrase(rc, N_LAYERS) in text
    assert ("Above chance at layer 0" in text) == (not rc.within_chance[0])


def test_anisotropy_page_sentences_match_its_chart(random_bert):
    import json

    folder, _ = random_bert
    at = _page("anisotropy", folder, "bank")
    text = _text(at)
    curves = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    raw = next(t for t in curves if "raw" in str(t.get("name", "")).lower())
    y = raw["y"]
    if isinstance(y, dict):  # plotly sends numpy arrays as base64
        import base64

        y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    y = np.asarray(y, dtype=float)
    listed = re.search(r"This model's raw curve, layer 0 to \d+: ([-\d., ]+)\. Its highest value, ([-\d.]+) at layer (\d+), is (\w+)", text)
    assert listed
    assert [float(x) for x in listed.group(1).split(", ")] == [float(f"{v:.2f}") for v in y]
    assert int(listed.group(3)) == int(np.argmax(y))
    ratio = y.max() / max(ETHAYARAJH_2019_BERT_BASE.anisotropy)
    expected = "mild" if ratio < 0.4 else "weaker" if ratio < 0.8 else "comparable" if ratio < 1.25 else "stronger"
    assert listed.group(4) == expected
    m = re.search(r"the pair ranking \(AUC\) goes from ([\d.]+) to ([\d.]+)", text)
    assert m
    d = float(m.group(2)) - float(m.group(1))
    if abs(d) < 0.015:
        assert "mostly changes the scale of the cosines" in text
    if abs(d) > 0.025:
        assert "also changes which occurrences are nearer" in text


def test_lesson_explanations_match_the_numbers(random_bert):
    _, enc = random_bert
    tv, senses = _preset_vectors(enc, "bat")
    # layers step: the layer named as the largest gap
    r = lesson_senses.sense_separation(tv.vectors, senses, "bat")
    g = _gap(tv.vectors.astype(np.float64), senses)
    assert f"The gap is largest at layer {int(np.argmax(g))}:" in r.question.explanation
    # deeper step: best layers, drop in sentences, and no default-model cause for another model
    curves = []
    for p in ("bat", "bank", "apple"):
        ptv, psenses = _preset_vectors(enc, p)
        curves.append(lesson_senses.readout_curve(p, ptv.vectors, psenses))
    intra = intra_sentence_similarity(
        tv.encoding.hidden_states, other_token_masks(tv.encoding.special, [()] * len(tv.encoding.special))
    )
    d = lesson_senses.deeper_check(curves, intra, sentence_model=False)
    expl = d.question.explanation
    c = curves[0]
    best = [int(i) for i in np.flatnonzero(c.accuracy == c.accuracy.max())]
    assert f"the best is {layer_list(best)} ({c.accuracy.max():.0%}" in expl
    for o in curves:
        drop = int(round((o.accuracy.max() - o.accuracy[-1]) * o.n_evaluated))
        if drop:
            assert f"'{o.name}' (by {drop} sentence" in expl
    assert "fine-tuned" not in expl
    assert ("sit closest to their sentence's average" in expl) == (
        int(np.argmax(intra)) == N_LAYERS and any(N_LAYERS not in o.best_layers for o in curves)
    )


def test_lesson_summary_counts_what_it_lists(random_bert):
    folder, _ = random_bert
    at = _page("lesson", folder, "bat", lesson_step=len(lesson.STEPS))
    text = _text(at)
    m = re.search(r"\*\*What this model showed\*\*: (\d+) results?, recomputed just now, (\d+) of them surprising", text)
    assert m
    summary = next(x.value for x in at.markdown if "What this model showed" in x.value)
    bullets = [line for line in summary.splitlines() if line.startswith("- ")]
    assert int(m.group(1)) == len(bullets)
    surprises = summary.split("*As the course predicts*")[0]
    assert int(m.group(2)) == len([line for line in surprises.splitlines() if line.startswith("- ")])


def test_lesson_summary_on_the_default_model(encoder):
    """The default model: four findings, the [CLS] one filed under what the course predicts."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "lesson.py"), default_timeout=240)
    at.session_state["lesson_step"] = len(lesson.STEPS)
    at.run()
    assert not at.exception
    summary = next(x.value for x in at.markdown if "What this model showed" in x.value)
    n = int(re.search(r"(\d+) results?", summary).group(1))
    assert n == len([line for line in summary.splitlines() if line.startswith("- ")])
    predicted = summary.split("*As the course predicts*")[1]
    assert "CLS" in predicted  # escaped for Markdown on the page
    assert "three" not in lesson.step_by_id("summary").text


def test_home_with_two_unlabelled_sentences_reads_one_pair_as_one_number(encoder):
    """Two sentences make one pair: the reading gives its cosine at each end, not a range "from x to x"."""
    from tests.conftest import page_test

    sentences = ["We sat on the river bank.", "The bank raised its rates."]
    at = page_test("pages/home.py", text="\n".join(sentences), target="bank").run()
    assert not at.exception, [e.value for e in at.exception]
    reading = next(m.value for m in at.markdown if m.value.startswith("**Reading it.**"))
    V = encoder.word_vectors(sentences, target="bank")  # (2, L + 1, hidden)
    first = cosine_matrix(V[:, 0, :])[0, 1]
    last = cosine_matrix(V[:, -1, :])[0, 1]
    assert f"At layer 0 the pair scores {first:.2f}; at layer {encoder.num_layers} it scores {last:.2f}." in reading
    assert "–" not in reading.split("Label")[0]
