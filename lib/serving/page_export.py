"""A page as one self-contained HTML file: its text, tables and interactive charts, readable offline.

The file makes no request when opened: plotly.js is inlined once (from the plotly package), there are no web
fonts, and a Content-Security-Policy allows only this file's own two scripts (a nonce), images from ``data:``
and nothing from the network. Text is the page's own Markdown, rendered here with raw HTML off and unsafe link
schemes (``javascript:``, ``vbscript:``, ``data:``) refused, so a learner's sentence that the page escaped for
Streamlit (``ui.widgets.escape_md``) shows literally here too. Figures go in as JSON inside
``<script type="application/json">`` with ``<``, ``>`` and ``&`` escaped, so no text inside them can close the
script.

    >>> meta = Meta(model="all-MiniLM-L6-v2", weights="trained", date="2026-11-24 19:00 UTC",
    ...             link="http://127.0.0.1:8501/layers?preset=bank")
    >>> spec = {"data": [{"type": "scatter", "y": [0.9, 0.4]}], "layout": {"title": {"text": "<b>cosine</b>"}}}
    >>> html = page_html("Layer by layer", [Text("**Reading it.** 0.42", "p"), Chart(spec)], meta)
    >>> "<strong>Reading it.</strong> 0.42" in html, html.count("<script"), "<script src=" in html
    (True, 3, False)

Blocks: :class:`Text` (Markdown; kind "h1".."h3", "p", "caption", "info", "warning", "error", "success",
"code", "hr"), :class:`Table` (cells as Markdown or literal text), :class:`Chart` (a plotly figure as
``{"data": [...], "layout": {...}}``), :class:`Group` (a titled or side-by-side group of blocks: an expander,
columns). :class:`Meta` says where the view came from.

``private`` strings (e.g. a class board's teacher key): a block whose text, cells or chart holds one is left
out, and any other occurrence (the view's link) is replaced, so a secret never reaches a file, whatever a page
rendered (the page's own guard is ``ui.page_export.private``).
"""

from __future__ import annotations

import html
import json
import re
import secrets
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TEXT_KINDS = ("h1", "h2", "h3", "p", "caption", "info", "warning", "error", "success", "code", "hr")
# Streamlit's Markdown extras that plain Markdown would show as code: ":material/icon:" and ":blue[text]"
_ICON = re.compile(r":material/[a-z0-9_]+:")
_COLOUR = re.compile(
    r":(?:red|orange|yellow|green|blue|violet|gray|grey|rainbow|primary|small)(?:-background)?\["
)


@dataclass(frozen=True)
class Text:
    """A piece of the page's text. ``markdown``: as the page wrote it (user text already escaped there)."""

    markdown: str
    kind: str = "p"


@dataclass(frozen=True)
class Table:
    """A table. ``columns``: the header; ``rows``: one tuple of cells per row, as strings.

    ``markdown``: True when the cells are Markdown (st.table renders them), False for literal text (a data grid).
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    markdown: bool = True


@dataclass(frozen=True)
class Chart:
    """A plotly figure as sent to the browser: ``spec`` = {"data": [...], "layout": {...}}."""

    spec: dict


@dataclass(frozen=True)
class Group:
    """Blocks shown together: ``kind`` "expander" (with ``label``), "columns" (side by side), or "plain"."""

    blocks: tuple
    kind: str = "plain"
    label: str = ""


@dataclass(frozen=True)
class Meta:
    """Where the view came from.

    model: the model's name as the page shows it; weights: where its weights came from (package and version,
    or "random weights, seed 0"); date: when the file was made (text); link: the address that reopens the same
    view on a hosted copy; target: the target word; sentences: (sense, sentence) pairs, sense "" when none.
    """

    model: str
    weights: str
    date: str
    link: str
    target: str = ""
    sentences: tuple[tuple[str, str], ...] = ()


@cache
def plotly_js() -> str:
    """plotly.js as shipped in the plotly package (the version its figures are written for)."""
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


@cache
def _markdown():
    from markdown_it import MarkdownIt

    # commonmark with raw HTML off: "<script>" is text. validateLink (default) refuses javascript:, vbscript:,
    # file: and data: (except images) links.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


def _plain_directives(text: str) -> str:
    """Streamlit's ":blue[word]" as "word" and ":material/x:" icons dropped (Markdown has neither)."""
    text = _ICON.sub("", text)
    out, i = [], 0
    for m in _COLOUR.finditer(text):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[j], 0) if text[j - 1] != "\\" else 0
            j += 1
        if depth:
            continue
        out.append(text[i : m.start()] + text[m.end() : j - 1])
        i = j
    return "".join(out) + text[i:]


def markdown_html(text: str, *, inline: bool = False) -> str:
    """The page's Markdown as safe HTML (raw HTML shown as text, unsafe links left as text)."""
    md = _markdown()
    text = _plain_directives(str(text))
    return md.renderInline(text) if inline else md.render(text)


def json_script(obj) -> str:
    """``obj`` as JSON safe inside a <script> element (no "</script>", no HTML comment openers)."""
    return (
        json.dumps(obj, separators=(",", ":"), allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _finite(obj):
    """``obj`` with NaN and infinities as None (JSON has neither; plotly draws a gap)."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


_KIND_CLASS = {"caption": "caption", "info": "note info", "warning": "note warning", "error": "note error",
               "success": "note success"}  # fmt: skip


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.figures: list[dict] = []

    def block(self, b) -> None:
        if isinstance(b, Text):
            self.text(b)
        elif isinstance(b, Table):
            self.table(b)
        elif isinstance(b, Chart):
            n = len(self.figures)
            self.figures.append(_finite(b.spec))
            self.parts.append(f'<div class="chart"><div class="plot" id="plot-{n}" data-figure="{n}"></div></div>')
        elif isinstance(b, Group):
            self.group(b)
        else:
            raise TypeError(f"not a page block: {type(b).__name__}")

    def text(self, t: Text) -> None:
        if t.kind not in TEXT_KINDS:
            raise ValueError(f"unknown text kind {t.kind!r}; one of {TEXT_KINDS}")
        if t.kind == "hr":
            self.parts.append("<hr>")
        elif t.kind == "code":
            self.parts.append(f"<pre><code>{html.escape(t.markdown)}</code></pre>")
        elif t.kind in ("h1", "h2", "h3"):
            self.parts.append(f"<{t.kind}>{markdown_html(t.markdown, inline=True)}</{t.kind}>")
        else:
            cls = _KIND_CLASS.get(t.kind, "text")
            self.parts.append(f'<div class="{cls}">{markdown_html(t.markdown)}</div>')

    def table(self, t: Table) -> None:
        def cell(v: str) -> str:
            return markdown_html(v, inline=True) if t.markdown else html.escape(str(v))

        head = "".join(f"<th>{cell(c)}</th>" for c in t.columns)
        body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in t.rows)
        self.parts.append(
            f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
        )

    def group(self, g: Group) -> None:
        if g.kind == "expander":
            self.parts.append(f"<details open><summary>{markdown_html(g.label, inline=True)}</summary>")
            for b in g.blocks:
                self.block(b)
            self.parts.append("</details>")
        elif g.kind == "columns":
            self.parts.append('<div class="columns">')
            for b in g.blocks:
                self.parts.append('<div class="column">')
                self.block(b)
                self.parts.append("</div>")
            self.parts.append("</div>")
        else:
            for b in g.blocks:
                self.block(b)


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #111;
  max-width: 760px; margin: 0 auto; padding: 1.5rem 1rem 4rem; line-height: 1.5; }
h1 { font-size: 2rem; margin: .5rem 0 1rem; } h2 { font-size: 1.5rem; } h3 { font-size: 1.2rem; }
.meta { background: #f4f6fa; border-radius: .5rem; padding: .75rem 1rem; font-size: .9rem; margin-bottom: 1.5rem; }
.meta dt { font-weight: 600; float: left; clear: left; width: 6.5rem; } .meta dd { margin: 0 0 .2rem 6.5rem; }
.meta a { word-break: break-all; }
.caption { color: #4d5061; font-size: .9rem; }
.note { border-radius: .5rem; padding: .5rem 1rem; margin: .75rem 0; }
.info { background: #e8f2fc; } .warning { background: #fff6e0; } .error { background: #fde8e8; }
.success { background: #e6f6ec; }
.table { overflow-x: auto; margin: .75rem 0; } table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid #d8dce4; padding: .25rem .5rem; text-align: left; vertical-align: top; }
.columns { display: flex; flex-wrap: wrap; gap: 1rem; } .column { flex: 1 1 320px; min-width: 0; }
.chart { margin: .75rem 0; } details { margin: .75rem 0; } summary { font-weight: 600; cursor: pointer; }
pre { background: #f4f6fa; padding: .5rem; overflow-x: auto; }
"""

# draws every figure once, in order; the page's own style rules (a chosen layer's line) apply as on screen
_DRAW = """
(function () {
  var figures = JSON.parse(document.getElementById("figures").textContent);
  var config = {displaylogo: false, responsive: true};
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var f = figures[Number(el.getAttribute("data-figure"))];
    Plotly.newPlot(el, f.data || [], f.layout || {}, config);
  });
  document.body.setAttribute("data-drawn", String(figures.length));
  document.body.setAttribute("data-drawn-ms", String(Math.round(performance.now())));
})();
"""


REDACTED = "[private]"


def _holds(block, private: tuple[str, ...]) -> bool:
    if isinstance(block, Text):
        text = block.markdown
    elif isinstance(block, Table):
        text = "\n".join((*block.columns, *(c for r in block.rows for c in r)))
    elif isinstance(block, Chart):
        text = json.dumps(block.spec, ensure_ascii=False)
    else:
        return False
    return any(s in text for s in private)


def without_private(blocks, private) -> list:
    """``blocks`` less every block that holds one of ``private`` (groups are searched inside; a group left
    empty goes too)."""
    private = tuple(s for s in private if s)
    if not private:
        return list(blocks)
    out = []
    for b in blocks:
        if isinstance(b, Group):
            inner = tuple(without_private(b.blocks, private))
            if inner and not any(s in b.label for s in private):
                out.append(Group(inner, b.kind, b.label))
        elif not _holds(b, private):
            out.append(b)
    return out


def redact(text: str, private) -> str:
    """``text`` with every occurrence of each secret replaced by :data:`REDACTED`."""
    for s in private:
        if s:
            text = text.replace(s, REDACTED)
    return text


def page_html(title: str, blocks, meta: Meta, *, private=()) -> str:
    """The whole file: ``title`` (plain text), ``blocks`` in page order, ``meta`` at the top, plotly.js once.
    No string of ``private`` appears in it (see the module's docstring)."""
    private = tuple(s for s in private if s)
    blocks = without_private(blocks, private)
    w = _Writer()
    for b in blocks:
        w.block(b)
    nonce = secrets.token_urlsafe(16)
    csp = (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
    )
    rows = [
        ("Model", html.escape(meta.model)),
        ("Weights", html.escape(meta.weights)),
        ("Made", html.escape(meta.date)),
    ]
    if meta.target:
        rows.append(("Target", html.escape(meta.target)))
    link = html.escape(meta.link, quote=True)
    if meta.link.startswith(("http://", "https://")):
        rows.append(("Live view", f'<a href="{link}">{link}</a>'))
    else:
        rows.append(("Live view", link))
    meta_html = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    sentences = ""
    if meta.sentences:
        has_sense = any(s for s, _ in meta.sentences)
        head = "<th></th>" + ("<th>sense</th>" if has_sense else "") + "<th>sentence</th>"
        body = "".join(
            f"<tr><td>S{i}</td>" + (f"<td>{html.escape(s) or '–'}</td>" if has_sense else "")
            + f"<td>{html.escape(x)}</td></tr>"
            for i, (s, x) in enumerate(meta.sentences, start=1)
        )  # fmt: skip
        sentences = (
            '<details class="sentences"><summary>The sentence set (S1, S2, …)</summary><div class="table"><table>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></details>"
        )
    figures = f'<script type="application/json" id="figures">{json_script(w.figures)}</script>'
    plotly = f'<script nonce="{nonce}">{plotly_js()}</script>' if w.figures else ""
    draw = f'<script nonce="{nonce}">{_DRAW}</script>' if w.figures else ""
    page = (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · Context Lens</title><style>{_STYLE}</style></head>"
        f'<body><header><p class="caption">Context Lens · saved page</p><h1>{html.escape(title)}</h1>'
        f'<dl class="meta">{meta_html}</dl>{sentences}</header><main>'
        + "\n".join(w.parts)
        + f"</main>{figures}"
    )
    return redact(page, private) + f"{plotly}{draw}</body></html>\n"  # plotly.js itself is the package's
