"""lib/serving/page_export.py: a page as one self-contained HTML file (no request when opened, learner's text inert)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from lib.serving import page_export as pe

HOSTILE = [
    "<script>alert(1)</script>",
    "</script><script>alert(2)</script>",
    "[click me](javascript:alert(3))",
    "<img src=x onerror=alert(4)>",
    "**bold** <b>tag</b> & 'quotes' \"double\"",
]
# a learner's set that tries everything at once (senses and sentences), for the pages' tests of the saved file
HOSTILE_SET = "\n".join(
    f"s{i}<script>window.pwned=5</script> | {s}"
    for i, s in enumerate(
        [
            "<script>window.pwned = 1</script> the bank was shut.",
            '</script><img src=x onerror="window.pwned = 2"> by the bank',
            "[bank](javascript:window.pwned=3) on the river bank",
            '<a href="javascript:window.pwned=4">bank</a> **bank** `bank`',
        ]
    )
)
META = pe.Meta(model="m", weights="trained", date="2026-11-24 19:00 UTC", link="http://127.0.0.1:8501/layers?a=1")


class _Parsed(HTMLParser):
    """Every element and attribute of a document, as a browser's tokenizer splits them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.script_text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.script_text.append(data)


def parsed(doc: str) -> _Parsed:
    p = _Parsed()
    p.feed(doc)
    return p


def test_plotly_is_inlined_once_and_nothing_is_fetched():
    charts = [pe.Chart({"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4]}], "layout": {}}) for _ in range(3)]
    doc = pe.page_html("Title", charts, META)
    head = pe.plotly_js()[:120]
    assert doc.count(head) == 1
    p = parsed(doc)
    scripts = [a for t, a in p.tags if t == "script"]
    assert len(scripts) == 3  # the figures (JSON), plotly.js, the drawing code
    assert not any("src" in a for a in scripts)
    assert not [a for t, a in p.tags if t in ("link", "img", "iframe", "object", "embed")]
    assert "@import" not in doc and "@font-face" not in doc and "url(" not in doc.replace(pe.plotly_js(), "")
    csp = next(a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert [a.get("nonce") for a in scripts if a.get("type") != "application/json"] == [nonce, nonce]
    assert json.loads(p.script_text[0])[2]["data"][0]["y"] == [3, 4]


def test_a_page_without_charts_carries_no_plotly():
    doc = pe.page_html("Title", [pe.Text("just text")], META)
    assert pe.plotly_js()[:120] not in doc
    assert len(doc) < 10_000


@pytest.mark.parametrize("text", HOSTILE)
def test_learner_text_is_inert_everywhere(text):
    blocks = [
        pe.Text(text),
        pe.Text(text, "h2"),
        pe.Text(text, "warning"),
        pe.Text(text, "code"),
        pe.Table(("sense", text), ((text, text),)),
        pe.Table((text,), ((text,),), markdown=False),
        pe.Group((pe.Text(text),), "expander", label=text),
        pe.Chart({"data": [{"type": "bar", "x": [text], "y": [1]}], "layout": {"title": {"text": text}}}),
    ]
    meta = pe.Meta(model=text, weights=text, date="d", link=text, target=text, sentences=((text, text),))
    doc = pe.page_html(text, blocks, meta)
    p = parsed(doc)
    assert [t for t, _ in p.tags].count("script") == 3  # only the file's own
    for tag, attrs in p.tags:
        assert tag != "img"
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert not str(attrs.get("href", "")).lower().startswith("javascript")
    # the chart's text reaches plotly as the same string (plotly escapes it as the app's charts do)
    figures = json.loads(p.script_text[0])
    assert figures[0]["layout"]["title"]["text"] == text


def test_markdown_reads_as_on_screen():
    doc = pe.page_html(
        "T",
        [pe.Text("**Reading it.** same-sense pairs average **0.82** :blue[0.73] :material/info: \\<b\\>")],
        META,
    )
    assert "<strong>Reading it.</strong> same-sense pairs average <strong>0.82</strong> 0.73  &lt;b&gt;" in doc


def test_directives_keep_nested_brackets():
    assert pe._plain_directives(":red[a [b] c] d") == "a [b] c d"
    assert pe._plain_directives("no directive [x]") == "no directive [x]"


def test_json_script_round_trips_and_never_closes_the_script():
    obj = {"t": "</script><!-- & \u2028", "n": [1.5, None]}
    s = pe.json_script(obj)
    assert "<" not in s and ">" not in s and "&" not in s
    assert json.loads(s) == obj


def test_nan_becomes_a_gap():
    doc = pe.page_html("T", [pe.Chart({"data": [{"y": [1.0, float("nan"), float("inf")]}], "layout": {}})], META)
    assert json.loads(parsed(doc).script_text[0])[0]["data"][0]["y"] == [1.0, None, None]


def test_meta_and_layout():
    meta = pe.Meta(
        model="sentence-transformers/all-MiniLM-L6-v2", weights="trained, from the bundled package x 0.1.0",
        date="2026-11-24 19:00 UTC", link="http://127.0.0.1:8501/layers?preset=bank", target="bank",
        sentences=(("river", "We sat on the bank."), ("", "The bank is closed.")),
    )  # fmt: skip
    doc = pe.page_html("Layer by layer", [pe.Group((pe.Text("a"), pe.Text("b")), "columns")], meta)
    for part in (meta.model, meta.weights, meta.date, "bank", "We sat on the bank.", "<td>–</td>"):
        assert part in doc
    assert '<a href="http://127.0.0.1:8501/layers?preset=bank">' in doc
    assert doc.count('<div class="column">') == 2
    with pytest.raises(ValueError):
        pe.page_html("T", [pe.Text("x", "h9")], META)


def test_a_secret_never_reaches_the_file():
    """A block holding a secret is left out (inside groups too) and any other occurrence replaced; the rest stays."""
    key = "Kq3x_teacher-key-9ZzQ"
    blocks = [
        pe.Text("# Board", "h1"),
        pe.Text(f"Teacher link: /board?room=ABCDEF&key={key}", "code"),
        pe.Group((pe.Text("kept inside"), pe.Text(f"also {key}")), "expander", "Tools"),
        pe.Group((pe.Text("under a secret label"),), "expander", f"link {key}"),
        pe.Group((pe.Text(key),), "expander", "left empty"),
        pe.Table(("a",), ((f"x{key}",),)),
        pe.Chart({"data": [{"type": "bar", "x": [1], "y": [1], "name": key}], "layout": {}}),
        pe.Text("The class wrote 3 sentences."),
    ]
    meta = pe.Meta(model="m", weights="w", date="d", link=f"http://127.0.0.1/board?room=ABCDEF&key={key}")
    doc = pe.page_html("Board", blocks, meta, private=(key, ""))
    assert key not in doc
    assert "The class wrote 3 sentences." in doc and "kept inside" in doc and "Tools" in doc
    assert "under a secret label" not in doc and "left empty" not in doc and '"bar"' not in doc
    assert pe.REDACTED in doc  # the link in the header, replaced
    assert pe.without_private(blocks, ()) == blocks
    assert pe.redact(f"a {key} b {key}", [key]) == f"a {pe.REDACTED} b {pe.REDACTED}"
