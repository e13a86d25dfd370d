"""Hostile inputs, table-driven: one student's typo, paste or odd link must never break the class's app.

Each case feeds one bad input to the app shell (``app.py``, first run: sidebar + start page) or to a page
file (``page_test``), and checks: no exception, a clear message on the page that says what happened, and
(where it applies) that the last good state survives: the charts still show the previous numbers, the
model stays the default, the set stays the preset.

Messages are compared after removing the markdown escaping that ``ui.widgets.escape_md`` adds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas  # noqa: F401  (see test_concurrency: the UMAP warm-up thread must not be the first to import it)
import pytest
from streamlit.testing.v1 import AppTest

from lib.inputs.presets import default_preset, preset_by_id
from lib.inputs.sentences import MAX_SENTENCES, pack_text
from lib.models.encoder import DEFAULT_MODEL
from tests.conftest import ROOT, page_test, seed, url_notes

pytestmark = pytest.mark.slow

BANK = default_preset()
TEXT_TYPES = ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader")
ALERT_TYPES = ("error", "warning", "info", "success")


# ------------------------------------------------------------------------------------------- runners
def app(*, text=None, target=None, query=None, session=None) -> AppTest:
    """app.py's first run (the sidebar and the start page), on a custom set and/or a link."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    if text is not None:
        seed(at, text=text, target=target, model=DEFAULT_MODEL, presenter=False)
    seed(at, **(session or {}))
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def page(path, *, text=None, target=None, preset=None, query=None, session=None, then=None) -> AppTest:
    """A page file run on its own; ``then(at)`` may change something and run again."""
    if not (ROOT / path).exists():
        pytest.skip(f"{path} does not exist yet")
    at = page_test(path, text=text, target=target, preset=preset)
    seed(at, **(session or {}))
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    if then is not None:
        assert not at.exception, [(e.value, "\n".join(e.stack_trace)) for e in at.exception]
        then(at)
    return at


def unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def texts(at: AppTest, kinds=TEXT_TYPES) -> list[str]:
    out = []
    for kind in kinds:
        out.extend(str(e.value) for e in at.get(kind))
    return out


def alerts(at: AppTest) -> str:
    return "\n".join(unescape(t) for t in texts(at, ALERT_TYPES))


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def chart_json(at: AppTest) -> list[str]:
    return [json.dumps(c, ensure_ascii=False, sort_keys=True) for c in charts(at)]


# ------------------------------------------------------------------------------------------- checks
def set_is(preset_id: str) -> Callable[[AppTest], None]:
    def check(at: AppTest) -> None:
        assert at.session_state["cl_preset"] == preset_id
        assert at.session_state["cl_text"] == preset_by_id(preset_id).text

    return check


def model_stays_default(at: AppTest) -> None:
    assert at.session_state["cl_model_active"] == DEFAULT_MODEL


def url_note(fragment: str) -> Callable[[AppTest], None]:
    """A page run on its own records link problems for the sidebar (which app.py draws)."""

    def check(at: AppTest) -> None:
        notes = url_notes(at)
        assert any(fragment in n for n in notes), notes

    return check


def shows_error(at: AppTest) -> None:
    assert at.get("error"), f"no error message; the page shows:\n{alerts(at)[:1000]}"


def session_is(key: str, value) -> Callable[[AppTest], None]:
    def check(at: AppTest) -> None:
        assert at.session_state[key] == value

    return check


def no_raw_html(at: AppTest, escaped: str = "&lt;script&gt;") -> None:
    """User HTML shows as text: escaped in markdown, entity-escaped in plotly labels, never a live tag.

    ``escaped``: what the user's text must look like somewhere in the charts (word-piece labels split
    ``<script>`` into ``<``, ``script``, ``>``, so the attention page only shows ``&lt;``).
    """
    raw = re.compile(r"(?<!\\)<\s*(script|img|b)\b", re.IGNORECASE)
    for t in texts(at):
        assert not raw.search(t), f"raw user HTML in an element: {t[:200]}"
    for m in at.markdown:
        if m.proto.allow_html:
            assert "alert(" not in m.value, "user text inside unsafe_allow_html markdown"
    specs = chart_json(at)
    assert specs
    for s in specs:
        assert "<script" not in s.lower() and "<img" not in s.lower()
    assert any(escaped in s for s in specs), "the user's text should be in the chart labels, escaped"


# ------------------------------------------------------------------------------------------- actions
_BEFORE: dict[int, list] = {}  # the charts an AppTest (by id) showed before an action, for the check after it


def upload(name: str, data: bytes, mime: str = "text/csv") -> Callable[[AppTest], None]:
    def act(at: AppTest) -> None:
        _BEFORE[id(at)] = chart_json(at)
        seed(at, layers_upload_box=True)  # the upload's expander, open (it runs only then)
        at.run()
        at.file_uploader(key="layers_upload").set_value((name, data, mime)).run()

    return act


def charts_unchanged(at: AppTest) -> None:
    assert chart_json(at)[:2] == _BEFORE[id(at)][:2]


def calc_cell(table: str, row: int, col: int, value: str) -> Callable[[AppTest], None]:
    """Type ``value`` into one cell of the calculator's table (by giving the editor new base data)."""

    def act(at: AppTest) -> None:
        _BEFORE[id(at)] = chart_json(at)
        bases = dict(at.session_state["calc_bases"])
        df = bases[table].copy()
        df.iloc[row, col] = value
        bases[table] = df
        seed(at, calc_bases=bases, calc_version=at.session_state["calc_version"] + 1)
        at.run()

    return act


def calc_tokens(value: str) -> Callable[[AppTest], None]:
    def act(at: AppTest) -> None:
        _BEFORE[id(at)] = chart_json(at)
        at.text_input(key="calc_tokens").set_value(value).run()

    return act


def calc_last_good_state(at: AppTest) -> None:
    """The attention steps still show the numbers from before the bad input."""
    assert chart_json(at) == _BEFORE[id(at)]
    assert "still show the last valid numbers" in alerts(at)


# ------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    id: str
    run: Callable[[], AppTest]
    expect: tuple[str, ...] = ()  # each must appear in an error/warning/info/success on the page
    chart: bool | None = True  # True: the page still draws a chart; False: it draws none
    checks: tuple[Callable[[AppTest], None], ...] = field(default=())


def typed(case_id: str, text: str, expect: tuple[str, ...], *, target: str = "bank", chart: bool | None = True) -> Case:
    """A case typed into the sidebar: ``text`` with ``target``, through app.py's first run."""
    return Case(case_id, lambda: app(text=text, target=target), expect, chart=chart)


LONG = "The bank " + "and then a very long clause about nothing at all " * 100 + "ended."  # > 5,000 chars
LATE = "It was " + "a long day of walking in the hills, " * 140 + "and then the bank."  # target past 128
TWENTY_ONE_K = "\n".join(f"Bank {k}." for k in range(MAX_SENTENCES + 20))
HTML = (
    "money | <script>alert(1)</script> The bank <b>bold</b> opened.\n"
    "river | We sat on the <img src=x onerror=alert(2)> river bank."
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4

CASES = [
    # --- the sentence set (sidebar + start page): typed, with the target "bank" unless said ------------------
    typed("empty-text", "", ("no usable sentences",), chart=False),
    typed("only-spaces", "   \n\t \n   ", ("no usable sentences",), chart=False),
    typed("one-sentence-where-two-needed", "The bank opened.", ("needs at least 2",), chart=False),
    typed("more-than-max-sentences", TWENTY_ONE_K, (f"Only the first {MAX_SENTENCES} sentences are used",)),
    typed("5000-char-sentence", f"{LONG}\nThe bank opened.", ("longer than 128 word pieces",)),
    typed("target-beyond-the-limit", f"{LATE}\nThe bank opened.\nWe sat on the bank.",
          ("lies beyond the first 128 word pieces",)),  # fmt: skip
    typed("target-absent-from-some-lines", "The bank opened.\nNo target here.\nWe sat on the bank.\nNor here.",
          ("Left out 2 lines", "Line 2:", "Line 4:", "No target here.")),  # fmt: skip
    typed("target-absent-everywhere", "No target here.\nNor here.", ("Line 1:", "no usable sentences"), chart=False),
    typed("unbalanced-brackets", "The [bank opened.\nThe bank closed.\nWe sat on the bank.",
          ("Line 1:", "unbalanced square brackets")),  # fmt: skip
    typed("two-bracketed-spans", "The [bank] by the [bank].\nThe bank closed.\nWe sat on the bank.",
          ("Line 1:", "marks 2 spans")),  # fmt: skip
    typed("label-with-no-sentence", "river |\nmoney | The bank closed.\nriver | We sat on the bank.",
          ("Line 1:", "has a label but no sentence")),  # fmt: skip
    typed("label-too-long", "x" * 60 + " | The bank.\nThe bank closed.\nWe sat on the bank.",
          ("Line 1:", "sense label is longer")),  # fmt: skip
    typed("no-target-and-no-brackets", "The bank opened.\nWe sat on the bank.", ("No target word is set",),
          target="", chart=False),  # fmt: skip
    typed("regex-characters-in-target", "The b.nk( opened.\nThe bank closed.", ("Line 2:",), target="b.nk(",
          chart=False),  # fmt: skip
    Case(
        "emoji-and-cjk",
        lambda: app(
            text="money | 🏦 The bank 銀行 opened today 😀.\nriver | 河岸 We sat on the river bank 🌊.\n"
            "money | 銀行 bank 口座 の 残高.",
            target="bank",
        ),
        (),
    ),
    Case(
        "cjk-target",
        lambda: app(text="我 去 銀行 了。\n那 家 銀行 很 大。", target="銀行"),
        (),
    ),
    Case("html-and-script-in-sentences", lambda: app(text=HTML, target="bank"), (), checks=(no_raw_html,)),
    Case(
        "html-on-the-attention-page",
        lambda: page("pages/attention.py", text=HTML, target="bank"),
        (),
        checks=(lambda at: no_raw_html(at, escaped="&lt;"),),
    ),
    # --- the model -------------------------------------------------------------------------------------
    Case(
        "unknown-model-in-session",
        lambda: app(text=BANK.text, target="bank", session={"cl_model": "no-such-org/no-such-model"}),
        ("not available on this server", "Still using the previous model"),
        checks=(model_stays_default,),
    ),
    Case(
        "unknown-model-in-link",
        lambda: app(query={"model": "../../etc/passwd"}),
        ("not available on this server", "Still using the previous model"),
        checks=(model_stays_default, set_is("bank")),
    ),
    Case(
        "oversized-model-name-in-link",
        lambda: app(query={"model": "x" * 5000}),
        ("not available on this server",),
        checks=(model_stays_default,),
    ),
    # --- links -----------------------------------------------------------------------------------------
    Case(
        "garbled-text-in-link",
        lambda: app(query={"target": "bank", "text": "%%%garbled%%%"}),
        ("garbled", "preset is shown instead"),
        checks=(set_is("bank"),),
    ),
    Case(
        "cut-off-text-in-link",
        lambda: app(query={"target": "bank", "text": pack_text(BANK.text)[:-12]}),
        ("garbled or cut off",),
        checks=(set_is("bank"),),
    ),
    Case(
        "unknown-preset-in-link",
        lambda: app(query={"preset": "no-such-preset"}),
        ("preset that does not exist",),
        checks=(set_is("bank"),),
    ),
    Case(
        "50000-char-text-in-link",
        lambda: app(query={"target": "bank", "text": "A" * 50_000}),
        ("too long (50,000 characters) and was ignored",),
        checks=(set_is("bank"),),  # "a garbled or oversized value gives a clear message and the default"
    ),
    Case(
        "50000-char-preset-in-link",
        lambda: app(query={"preset": "b" * 50_000}),
        ("preset that does not exist",),
        checks=(set_is("bank"),),
    ),
    Case(
        "non-numeric-page-params",
        lambda: page("pages/attention.py", preset="bank", query={"attn_layer": "abc", "attn_head": "2.5"}),
        (),
        checks=(url_note("“attn_layer” value is not a whole number"), session_is("attn_layer", 1)),
    ),
    Case(
        "huge-page-params",
        lambda: page(
            "pages/attention.py", preset="bank", query={"attn_layer": "9" * 400, "attn_head": "-" + "9" * 400}
        ),
        (),
        checks=(session_is("attn_layer", 6), session_is("attn_head", 1)),
    ),
    Case(
        "50000-char-page-param",
        lambda: page("pages/attention.py", preset="bank", query={"attn_layer": "7" * 50_000}),
        (),
        checks=(url_note("too long"), session_is("attn_layer", 1)),
    ),
    Case(
        "nan-and-inf-in-calculator-link",
        lambda: page("pages/calculator.py", query={"calc_temperature": "nan", "calc_d": "inf"}),
        (),
        checks=(session_is("calc_temperature", 1.0), session_is("calc_d", 2), url_note("not a number")),
    ),
    # --- uploads (the layers page has the uploader) -----------------------------------------------------
    Case(
        "binary-upload",
        lambda: page("pages/layers.py", then=upload("sentences.csv", PNG, "image/png")),
        ("looks like a PNG image",),
        checks=(set_is("bank"), charts_unchanged),
    ),
    Case(
        "nul-bytes-upload",
        lambda: page("pages/layers.py", then=upload("sentences.csv", b"money,\x00bank\x00" * 50)),
        ("binary data",),
        checks=(set_is("bank"), charts_unchanged),
    ),
    Case(
        "empty-upload",
        lambda: page("pages/layers.py", then=upload("empty.csv", b"")),
        ("The file is empty",),
        checks=(set_is("bank"), charts_unchanged),
    ),
    Case(
        "malformed-csv-upload",
        lambda: page("pages/layers.py", then=upload("semi.csv", b"a;b;c\n1;2;3\n;;;\n")),
        ("No row of the file could be used", "Line 1:"),
        checks=(set_is("bank"), charts_unchanged),
    ),
    Case(
        "binary-corpus-upload-on-anisotropy",
        lambda: page(
            "pages/anisotropy.py",
            preset="bank",
            session={"aniso_corpus": "upload"},
            then=lambda at: (
                at.file_uploader(key="aniso_upload").set_value(("corpus.txt", PNG, "text/plain")).run()
            ),
        ),
        (),
        checks=(shows_error,),  # e.g. "This file is not plain text"; today the PNG is read as sentences
    ),
    # --- the toy calculator: each bad entry is explained and the steps keep the last valid numbers -----------
    *(
        Case(f"calculator-{name}", lambda act=act: page("pages/calculator.py", then=act), expect,
             checks=(calc_last_good_state,))  # fmt: skip
        for name, act, expect in (
            ("nan-cell", calc_cell("E", 1, 0, "nan"), ("row 'cat', column 'dim 1'", "NaN")),
            ("inf-cell", calc_cell("P", 0, 1, "-inf"), ("infinite",)),
            ("text-cell", calc_cell("W_Q", 0, 0, "two"), ("'two', which is not a number",)),
            ("overflowing-numbers", calc_cell("E", 0, 0, "1e200"), ("too large",)),
            ("empty-tokens", calc_tokens("   "), ("Type 2 to 6 tokens",)),
            ("too-many-tokens", calc_tokens("a b c d e f g h"), ("Type 2 to 6 tokens", "got 8")),
        )
    ),
]


def test_the_table_is_big_enough():
    assert len(CASES) >= 25
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case):
    at = case.run()
    assert not at.exception, [(e.value, "\n".join(e.stack_trace)) for e in at.exception]
    shown = alerts(at)
    for fragment in case.expect:
        assert fragment in shown, f"expected a message with “{fragment}”; the page shows:\n{shown[:1500]}"
    if case.chart is True:
        assert at.get("plotly_chart"), f"no chart; messages:\n{shown[:1000]}"
    elif case.chart is False:
        assert not at.get("plotly_chart")
    for check in case.checks:
        check(at)
    # never NaN/inf in the explanations (error messages may name a typed "NaN")
    for t in texts(at, ("markdown", "caption")):
        assert not re.search(r"\b(nan|NaN|inf|-inf)\b", unescape(t)), t[:300]
