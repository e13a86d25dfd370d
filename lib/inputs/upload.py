"""Reading an uploaded file of labelled sentences (CSV or TSV) into the sentence-set text format.

File format, one sentence per row::

    sense,sentence
    money,The bank approved the loan.
    river,"We sat on the [bank], watching the boats."
    ,A sentence without a sense label.

* Two columns: the sense label, then the sentence. A header row ``sense,sentence`` (or ``label,text``)
  is optional. An empty sense is allowed (that sentence has no label).
* Comma-separated (``.csv``) or tab-separated (``.tsv``, ``.tab``; also detected from the content).
  A sentence that contains commas is best quoted, but an unquoted one is kept whole: every column after
  the first is joined back together.
* The target is the target word (first whole-word match) or whatever the sentence marks in
  ``[brackets]``. Rows starting with ``#`` are comments.
* At most :data:`MAX_SENTENCES` sentences (500) are used; UTF-8 (with or without BOM), UTF-16 with a BOM
  or Windows-1252 text.

Bad rows are listed with their line numbers in the file and left out; the good rows are kept. A file
that cannot be read at all (empty, binary, a spreadsheet, too large) raises :class:`UploadError` with a
message that says what to do.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from lib.errors import ContextLensError
from lib.inputs.sentences import MAX_LABEL_CHARS, MAX_SENTENCES, SEPARATOR, LineProblem, rows_to_text
from lib.models.targets import TargetError, find_target, short
from lib.serving.budget import MAX_LISTED

__all__ = ["MAX_UPLOAD_MB", "MAX_UPLOAD_BYTES", "UploadError", "UploadResult", "parse_upload", "FORMAT_HELP"]

# The one upload limit of the app: .streamlit/config.toml's server.maxUploadSize must equal MAX_UPLOAD_MB
# (a test checks), so the browser refuses a larger file before it is sent. Streamlit's front end counts a MB as
# 1,000,000 bytes (it refuses files over 2,000,000 bytes), its server as 1024² (over 2,097,152 bytes); this
# check uses the server's count, for a client that does not go through the front end.
MAX_UPLOAD_MB = 2
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
_HEADER_SENSE = {"sense", "senses", "label", "labels", "sense label", "class"}
_HEADER_TEXT = {"sentence", "sentences", "text", "example", "context"}
_SIGNATURES = {
    b"PK\x03\x04": "a ZIP archive or an Excel/Word/OpenDocument file",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"\xd0\xcf\x11\xe0": "an old Excel/Word file",
    b"\x1f\x8b": "a gzip archive",
}

FORMAT_HELP = (
    "A CSV or TSV file with two columns, sense then sentence, one sentence per row, e.g. "
    "`river,We sat on the bank.` A header row `sense,sentence` is optional; the sense may be empty; "
    "mark the target in [brackets] if it is not the target word. At most 500 sentences."
)


class UploadError(ContextLensError):
    """The whole file cannot be used. The message says what to do."""


@dataclass(frozen=True)
class UploadResult:
    """The usable rows of an uploaded file.

    rows:      (sense or None, sentence) for each good row, in file order (at most MAX_SENTENCES)
    lines:     the 1-based line number in the file where each good row starts
    problems:  the first MAX_LISTED rows that were left out, with their line numbers and what to do
    notes:     remarks about the whole file (header skipped, too many rows, encoding guessed, ...)
    delimiter: "," or "\\t"
    problem_count: how many rows were left out in all (``problems`` lists the first of them)
    """

    rows: tuple[tuple[str | None, str], ...]
    lines: tuple[int, ...]
    problems: tuple[LineProblem, ...]
    notes: tuple[str, ...]
    delimiter: str
    problem_count: int = 0

    @property
    def left_out(self) -> int:
        """How many rows were left out (at least those listed)."""
        return max(self.problem_count, len(self.problems))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def senses(self) -> list[str]:
        """Distinct sense labels in order of first appearance."""
        return list(dict.fromkeys(s for s, _ in self.rows if s))

    def to_text(self) -> str:
        """The good rows in the sentence-set text format (``sense | sentence`` lines)."""
        return rows_to_text(self.rows)


def decode_text_file(data: bytes) -> tuple[str, str | None]:
    """Text of an uploaded file and a note when it was not UTF-8.

    Raises UploadError for binary content (images, PDFs, spreadsheets, NUL bytes) or unreadable text.
    """
    head = data[:16]
    for sig, what in _SIGNATURES.items():
        if head.startswith(sig):
            raise UploadError(
                f"This file looks like {what}, not text. Save your sentences as CSV (comma-separated) or "
                "TSV (tab-separated) text and upload that."
            )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), None
        except UnicodeDecodeError as err:
            raise UploadError(
                "The file claims to be UTF-16 but cannot be read. Save it as UTF-8 CSV."
            ) from err
    if b"\x00" in data[:8192]:
        raise UploadError(
            "This file contains binary data, not text. Upload a CSV or TSV text file (sense, sentence)."
        )
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError as err:
        raise UploadError(
            "The file is not readable text (it is neither UTF-8 nor Windows-1252). Save it as UTF-8 CSV."
        ) from err
    return text, "The file is not UTF-8; it was read as Windows-1252. Check accented letters."


def _control_share(text: str) -> float:
    sample = text[:8192]
    if not sample:
        return 0.0
    bad = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f")
    return bad / len(sample)


def _pick_delimiter(text: str, filename: str) -> str:
    name = filename.lower()
    if name.endswith((".tsv", ".tab")):
        return "\t"
    if name.endswith(".csv"):
        return ","
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")][:20]
    if lines and sum("\t" in ln for ln in lines) >= max(1, len(lines) // 2):
        return "\t"
    return ","


def _is_header(fields: list[str]) -> bool:
    if len(fields) < 2:
        return False
    return fields[0].strip().lower() in _HEADER_SENSE and fields[1].strip().lower() in _HEADER_TEXT


def parse_upload(data: bytes, target: str | None = None, filename: str = "") -> UploadResult:
    """Parse an uploaded CSV/TSV file (bytes) of ``sense, sentence`` rows.

    Every sentence is checked against ``target`` (or its [brackets]) with the app's own rule, so the
    problems carry the file's line numbers. Raises :class:`UploadError` when nothing in the file can be
    used; otherwise bad rows are in ``problems`` and the good ones in ``rows``.
    """
    if data is None or len(data) == 0:
        raise UploadError("The file is empty. " + FORMAT_HELP)
    if len(data) > MAX_UPLOAD_BYTES:
        raise UploadError(
            f"The file is {len(data) / 2**20:.1f} MB; the limit is {MAX_UPLOAD_MB} MB. "
            f"Upload at most {MAX_SENTENCES} sentences."
        )
    text, encoding_note = decode_text_file(data)
    if not text.strip():
        raise UploadError("The file has no text in it. " + FORMAT_HELP)
    if _control_share(text) > 0.01:
        raise UploadError(
            "This file contains binary data, not text. Upload a CSV or TSV text file (sense, sentence)."
        )
    delimiter = _pick_delimiter(text, filename)
    notes: list[str] = [encoding_note] if encoding_note else []
    problems: list[LineProblem] = []  # the first MAX_LISTED; n_problems counts them all
    n_problems = 0
    rows: list[tuple[str | None, str]] = []
    lines: list[int] = []
    target = " ".join((target or "").split())
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"')
    next_line = 1
    first_record = True
    extra = 0
    try:
        for fields in reader:
            line, next_line = next_line, reader.line_num + 1
            if not fields or all(not f.strip() for f in fields):
                continue
            if fields[0].lstrip().startswith("#"):
                continue
            if first_record:
                first_record = False
                if _is_header(fields):
                    notes.append(f"Line {line} was read as a header and skipped.")
                    continue
            if len(rows) >= MAX_SENTENCES:
                extra += 1
                continue
            problem = _check_row(fields, delimiter, target)
            if isinstance(problem, str):
                n_problems += 1
                if len(problems) < MAX_LISTED:
                    problems.append(LineProblem(line, problem))
                continue
            rows.append(problem)
            lines.append(line)
    except csv.Error as err:
        n_problems += 1
        problems.append(
            LineProblem(
                next_line,
                f'The file could not be read from here on ({err}). Check for a stray quote mark (").',
            )
        )
    if extra:
        notes.append(
            f"Only the first {MAX_SENTENCES} good sentences are used; {extra} more row{'s were' if extra != 1 else ' was'} left out."
        )
    if not rows:
        if problems:
            listed = "; ".join(str(p) for p in problems[:3])
            raise UploadError(
                f"No row of the file could be used. {listed}"
                + (f" … ({n_problems:,} rows in all)" if n_problems > 3 else "")
            )
        raise UploadError("The file has no sentences. " + FORMAT_HELP)
    return UploadResult(tuple(rows), tuple(lines), tuple(problems), tuple(notes), delimiter, n_problems)


def _check_row(fields: list[str], delimiter: str, target: str) -> tuple[str | None, str] | str:
    """(sense, sentence) for a good row, or a message saying what is wrong with it."""
    if len(fields) == 1:
        sep = "a tab" if delimiter == "\t" else "a comma"
        return (
            f"“{short(fields[0], 40)}” has only one column. Write the sense, then {sep}, then the sentence "
            f"(leave the sense empty if there is none: {sep} first)."
        )
    sense = " ".join(fields[0].split())
    sentence = " ".join(delimiter.join(fields[1:]).split())  # unquoted commas inside the sentence
    if not sentence:
        return "The sentence column is empty. Write a sentence after the sense."
    if len(sense) > MAX_LABEL_CHARS:
        return (
            f"The sense “{short(sense, 30)}” is longer than {MAX_LABEL_CHARS} characters. Is the sentence in "
            "the first column? Put the sense first, then the sentence."
        )
    if SEPARATOR in sense:
        return f"The sense “{short(sense, 30)}” contains “{SEPARATOR}”. Use a sense label without it."
    if not sense and SEPARATOR in sentence:
        return (
            f"The sentence contains “{SEPARATOR}”, which the sentence box reads as the end of a sense label. "
            "Give it a sense, or remove the bar."
        )
    if not sense and sentence.startswith("#"):
        return "The sentence starts with “#”, which marks a comment. Give it a sense or remove the “#”."
    try:
        find_target(sentence, target)
    except TargetError as err:
        return str(err)
    return (sense or None, sentence)
