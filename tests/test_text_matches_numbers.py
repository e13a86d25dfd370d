"""Every sentence that names a number, a layer or a comparison agrees with the numbers of its own chart,
in whatever model is loaded.

The pages and the lesson are run on a second, small, randomly initialised BERT (three layers, saved with the
bundled tokenizer into a temporary folder and loaded through ``lib.models.encoder.load_encoder(folder)``), whose
numbers look nothing like the default model's. Each check recomputes the number a sentence rests on from the
vectors (numpy, not the page's code path) and asks whether the sentence says the same: "the gap is largest at
layer k" must name the argmax, "within chance" must list the layers at or below the shuffled band, and no
sentence about the default model's training may appear.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lib.inputs.presets import preset_by_id
from lib.stats.baseline import ETHAYARAJH_2019_BERT_BASE, other_token_masks
from lib.stats.chance import layer_list, readout_chance
from lib.stats.contextuality import intra_sentence_similarity
from lib.stats.pooling import with_pooled
from lib.stats.readout import leave_one_out_readout
from lib.stats.similarity import cosine_matrix
from lib.teaching import lesson, lesson_senses
from tests.conftest import ROOT, page_text, seed

N_LAYERS = 3


@pytest.fixture(scope="module")
def random_bert(tmp_path_factory):
    """(folder, encoder): a randomly initialised 3-layer BERT with the bundled tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from lib.models.encoder import default_model_path, load_encoder

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


def _unlinked(text: str) -> str:
    """The text as read: a glossary link ("[layer 0](glossary#layer-0)") reads as its words."""
    return re.sub(r"\[([^\]]+)\]\(glossary#[^)]*\)", r"\1", text)



def _text(at) -> str:
    return _unlinked(page_text(at, "markdown", "caption", "success", "info"))


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
    assert "This model's raw peak, " in aniso


@pytest.mark.slow  # over ~5 s: left out of the fast tier
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
        assert "The gap between them is largest at layer 0" in text
    else:
        m = re.search(r"largest at \*\*layer (\d+) \([+-]\d\.\d\d\)\*\*", text)
        assert m and int(m.group(1)) == top, (m and m.group(0), g)

    # section 6: the best layer, and the chance table (one row per layer shown)
    ro = leave_one_out_readout(tv.vectors, senses)
    best = int(np.argmax(ro.accuracy[:K]))
    m = re.search(r"Best: \*\*layer (\d+), (\d+)%\*\*", text)
    assert m and int(m.group(1)) == best and int(m.group(2)) == round(100 * ro.accuracy[best])
    rc = readout_chance(with_pooled(tv.vectors), senses)
    table = next(t.value for t in at.table if "above chance" in t.value.columns)
    assert {0, best, N_LAYERS} <= {int(x.split()[-1]) for x in table.index}
    for row in table.index:
        i = int(row.split()[-1])
        inside = rc.accuracy[i] <= rc.shuffled_p95[i] + 1e-12
        assert table.loc[row, "above chance"] == ("no" if inside else "yes"), (row, rc.accuracy, rc.shuffled_p95)
        assert table.loc[row, "readout"] == f"{rc.accuracy[i]:.0%}"
        assert table.loc[row, "shuffled, 95th percentile"] == f"{rc.shuffled_p95[i]:.0%}"
    assert ("the readout is already above chance" in text) == (rc.accuracy[0] > rc.shuffled_p95[0] + 1e-12)

    # section 5: the distance above random words is self-similarity minus the baseline
    m = re.search(r"\*\*-?\d\.\d\d at layer \d+\*\*, ([+-]\d\.\d\d) above random words", text)
    assert m


def test_home_page_sentences_match_its_numbers(random_bert):
    folder, enc = random_bert
    text = _text(_page("home", folder, "bank"))
    tv, senses = _preset_vectors(enc, "bank")
    g = _gap(tv.vectors[:, [0, N_LAYERS]].astype(np.float64), senses)
    rc = readout_chance(tv.vectors, senses)
    inside = rc.accuracy[N_LAYERS] <= rc.shuffled_p95[N_LAYERS] + 1e-12
    # a separation is claimed only where the gap grew and the same page's readout is above chance
    pulled = "the context has pulled the occurrences apart by meaning" in text
    assert pulled == (g[1] > g[0] + 0.01 and not inside), (g, rc.accuracy, rc.shuffled_p95)
    verdict = "within" if inside else "above"
    assert (
        f"{rc.accuracy[0]:.0%} right at layer 0 and **{rc.accuracy[N_LAYERS]:.0%}** at layer {N_LAYERS}, {verdict} "
        f"chance"
    ) in text
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
    listed = re.search(r"This model's raw peak, ([-\d.]+) at layer (\d+), is (\w+)", text)
    assert listed
    assert float(listed.group(1)) == float(f"{y.max():.2f}")
    assert int(listed.group(2)) == int(np.argmax(y))
    ratio = y.max() / max(ETHAYARAJH_2019_BERT_BASE.anisotropy)
    expected = "mild" if ratio < 0.4 else "weaker" if ratio < 0.8 else "comparable" if ratio < 1.25 else "stronger"
    assert listed.group(3) == expected
    auc = next(m for m in at.metric if m.label.startswith("pair ranking (AUC)"))
    before = float(re.search(r"\(([\d.]+)\)", auc.delta).group(1))
    d = float(auc.value) - before
    if abs(d) < 0.015:
        assert "so the fix mostly rescales" in text
    if abs(d) > 0.025:
        assert "so the fix also reorders some pairs" in text


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
    m = re.search(r"\*\*What this model showed\*\*: (\d+) results?, recomputed just now", text)
    assert m
    summary = next(x.value for x in at.markdown if "What this model showed" in x.value)
    bullets = [line for line in summary.splitlines() if line.startswith("- ")]
    assert int(m.group(1)) == len(bullets)


def _summary_groups(summary: str) -> dict[str, list[str]]:
    """The summary's bullets under each *group title*."""
    out, current = {}, None
    for line in summary.splitlines():
        m = re.fullmatch(r"\*([^*]+)\*", line.strip())
        if m:
            current = m.group(1)
            out[current] = []
        elif line.startswith("- ") and current:
            out[current].append(line)
    return out


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_lesson_summary_on_the_default_model(encoder):
    """The default model: four findings, the [CLS] one filed under what the course predicts."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "lesson.py"), default_timeout=240)
    seed(at, lesson_step=len(lesson.STEPS))
    at.run()
    assert not at.exception
    summary = next(x.value for x in at.markdown if "What this model showed" in x.value)
    n = int(re.search(r"(\d+) results?", summary).group(1))
    assert n == len([line for line in summary.splitlines() if line.startswith("- ")])
    groups = _summary_groups(summary)
    assert set(groups) <= set(lesson.GROUP_TITLES.values())
    predicted = "\n".join(groups["As the course predicts"])
    assert "CLS" in predicted  # escaped for Markdown on the page
    # what the course predicts (seed 001's misconceptions) is not filed as a surprise, and the control is
    # beyond the course
    for line in groups.get("Surprises (against the course)", []):
        assert "deeper is not always better" not in line and "polysemy is not solved" not in line
    assert all("control weights" in line for line in groups.get("Beyond the course", []))
    assert any("shuffled weights" in line for line in groups.get("Beyond the course", []))
    assert "three" not in lesson.step_by_id("summary").text


def test_home_with_two_unlabelled_sentences_reads_one_pair_as_one_number(encoder):
    """Two sentences make one pair: the reading gives its cosine at each end, not a range "from x to x"."""
    from tests.conftest import page_test

    sentences = ["We sat on the river bank.", "The bank raised its rates."]
    at = page_test("pages/home.py", text="\n".join(sentences), target="bank").run()
    assert not at.exception, [e.value for e in at.exception]
    reading = _unlinked(next(m.value for m in at.markdown if m.value.startswith("**Reading it.**")))
    V = encoder.word_vectors(sentences, target="bank")  # (2, L + 1, hidden)
    first = cosine_matrix(V[:, 0, :])[0, 1]
    last = cosine_matrix(V[:, -1, :])[0, 1]
    assert f"At layer 0 the pair scores {first:.2f}; at layer {encoder.num_layers} it scores {last:.2f}." in reading
    assert "–" not in reading.split("Label")[0]
