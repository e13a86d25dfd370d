r"""CSV files that are safe to open in a spreadsheet, and Markdown text that shows user text literally.

Every CSV the app writes goes through here. A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return is read by Excel, LibreOffice and Google Sheets as a formula (OWASP "CSV injection"): a
learner's sentence such as ``=HYPERLINK("http://…")`` would become a live link in a teacher's spreadsheet.
Such a text cell gets a leading apostrophe, which spreadsheets show as plain text. Numbers (``-0.25``) are
left alone: they are numbers, not formulas.

    >>> csv_text([["sense", "sentence"], ["river", "=1+2"], ["money", -0.25]])
    "sense,sentence\nriver,'=1+2\nmoney,-0.25\n"
    >>> import pandas as pd
    >>> frame_csv(pd.DataFrame({"sentence": ["@SUM(A1)"]}), index=False)   # a DataFrame, every text cell safe
    "sentence\n'@SUM(A1)\n"

Markdown (the app's text and the evidence card's export): :func:`escape_markdown` puts a backslash before
every character Markdown or HTML reads as markup, so ``<img onerror=…>`` and ``[x](javascript:…)`` typed in a
sentence show as typed, never as a tag or a link. A backslash does not stop GitHub-flavoured Markdown's
autolinks, which Streamlit draws: it finds ``https://…``, ``www.…`` and ``name@host.tld`` in the text after
the escapes are read. So a word joiner (U+2060: no width, no line break, skipped by screen readers) goes into
each of those three patterns, and a URL a student types reaches the projector as text, not a link:

    >>> "://" in escape_markdown("see https://evil.example/x") or "www." in escape_markdown("www.evil.example")
    False
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:=/")
WORD_JOINER = "\u2060"
_AUTOLINKS = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)  # where a joiner breaks an autolink


def escape_markdown(text: object, *, newline: str = "  \n") -> str:
    """``text`` with a backslash before every Markdown/HTML special character and a word joiner inside every
    autolink pattern (``://``, ``www.``, ``@``); a line break becomes ``newline`` (a hard break by default; " "
    for a table cell)."""
    text = _AUTOLINKS.sub(WORD_JOINER, str(text))
    escaped = "".join("\\" + ch if ch in MARKDOWN_SPECIAL else ch for ch in text)
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def safe_cell(value):
    """``value`` unchanged unless it is text a spreadsheet would run as a formula; then prefixed with '."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def safe_row(row: Iterable) -> list:
    return [safe_cell(v) for v in row]


def csv_text(rows: Iterable[Sequence], header: Sequence[str] | None = None) -> str:
    """Rows (and an optional header row) as CSV text, every cell passed through :func:`safe_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header is not None:
        w.writerow(safe_row(header))
    for row in rows:
        w.writerow(safe_row(row))
    return buf.getvalue()


def dict_rows_csv(rows: Sequence[dict]) -> str:
    """A list of dicts with the same keys (the first row's order) as CSV text, every cell safe."""
    if not rows:
        return ""
    keys = list(rows[0])
    return csv_text(([r.get(k, "") for k in keys] for r in rows), header=keys)


def frame_csv(df, **to_csv_kwargs) -> str:
    """``df.to_csv(**to_csv_kwargs)`` with every text cell, column name and index label made safe."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    def textual(dtype) -> bool:
        return is_object_dtype(dtype) or is_string_dtype(dtype)

    safe = df.copy()
    for col in safe.columns:
        if textual(safe[col].dtype):
            safe[col] = safe[col].map(safe_cell)
    safe.columns = [safe_cell(c) for c in safe.columns]
    if textual(safe.index.dtype):
        safe.index = [safe_cell(i) for i in safe.index]
    if "index_label" in to_csv_kwargs:
        to_csv_kwargs["index_label"] = safe_cell(to_csv_kwargs["index_label"])
    return safe.to_csv(**to_csv_kwargs)
