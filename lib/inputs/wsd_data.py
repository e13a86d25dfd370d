"""Read the CoarseWSD-20 word-sense data set by path (it is never copied into the project).

CoarseWSD-20 (Loureiro, Rezaee, Pilehvar and Camacho-Collados, Computational Linguistics 2021;
arXiv 2008.11608; licence CC BY-NC 4.0) holds real Wikipedia sentences for 20 ambiguous nouns.
Per word, a folder with::

    classes_map.txt          {"0": "bank_bank", "1": "bank_bank_(geography)"}
    {train,test}.data.txt    POSITION<TAB>tokenized lowercased sentence
    {train,test}.gold.txt    sense id, one per line

POSITION is the 0-based index of the ambiguous word among the space-separated tokens. We mark that
token with ``[brackets]`` so that the encoder's bracket rule (lib/models/targets.py) picks exactly it, even
when the same word occurs earlier in the sentence.

Usage:

    >>> train = load_split("bank", "train", limit=400)
    >>> train.sentences[0]
    'during the year 1990 , ronnie leibowitz robbed 21 [bank] branches , ...'
    >>> train.senses[0], sorted(set(train.senses))
    ('bank', ['bank', 'bank (geography)'])
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.paths import SHARED_DATA

__all__ = [
    "WSDSplit",
    "available",
    "available_words",
    "balanced_sample",
    "default_root",
    "load_split",
    "mark_target",
    "sense_name",
]


def default_root() -> Path:
    """Where the data lives relative to the repository: ``<repo>/../shared/data/CoarseWSD-20``."""
    return SHARED_DATA / "CoarseWSD-20"


@dataclass(frozen=True)
class WSDSplit:
    """One word's train or test sentences.

    word:      the ambiguous word, e.g. "bank".
    split:     "train" or "test".
    sentences: (n,) sentences with the target token in [brackets].
    senses:    (n,) readable sense names, e.g. "bank (geography)".
    positions: (n,) 0-based token index of the target in the original tokenized line.
    """

    word: str
    split: str
    sentences: tuple[str, ...]
    senses: tuple[str, ...]
    positions: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.sentences)


def sense_name(word: str, raw: str) -> str:
    """A readable sense name from the data's label: 'bank_bank_(geography)' -> 'bank (geography)'."""
    name = raw[len(word) + 1 :] if raw.startswith(word + "_") else raw
    return name.replace("_", " ")


def mark_target(tokens: list[str], position: int) -> str:
    """Join ``tokens`` with spaces, putting the token at ``position`` in [brackets].

    Any other square bracket in the text becomes a round one, so the sentence has exactly one marked span.
    """
    if not 0 <= position < len(tokens):
        raise ValueError(f"position {position} is outside a sentence of {len(tokens)} tokens")
    out = [t.replace("[", "(").replace("]", ")") for t in tokens]
    out[position] = f"[{out[position]}]"
    return " ".join(out)


def available_words(root: Path | str | None = None) -> list[str]:
    """The words that have a folder under ``root`` (empty if the data is absent)."""
    base = Path(root) if root is not None else default_root()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "classes_map.txt").is_file())


def load_split(
    word: str, split: str = "train", limit: int | None = None, root: Path | str | None = None
) -> WSDSplit:
    """The first ``limit`` sentences (all if None) of one word's train or test file.

    Raises FileNotFoundError (naming the path) when the data is not there, and ValueError when the data
    and gold files disagree in length or a position is out of range.
    """
    if split not in ("train", "test"):
        raise ValueError("split must be 'train' or 'test'")
    base = (Path(root) if root is not None else default_root()) / word
    data_path, gold_path, map_path = (
        base / f"{split}.data.txt",
        base / f"{split}.gold.txt",
        base / "classes_map.txt",
    )
    for p in (data_path, gold_path, map_path):
        if not p.is_file():
            raise FileNotFoundError(f"CoarseWSD-20 file not found: {p}")
    classes = json.loads(map_path.read_text(encoding="utf-8"))
    data_lines = [ln for ln in data_path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    gold_lines = [ln.strip() for ln in gold_path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if len(data_lines) != len(gold_lines):
        raise ValueError(
            f"{data_path} has {len(data_lines)} sentences but {gold_path} has {len(gold_lines)} labels"
        )
    if limit is not None:
        data_lines, gold_lines = data_lines[:limit], gold_lines[:limit]
    sentences, senses, positions = [], [], []
    for k, (line, gold) in enumerate(zip(data_lines, gold_lines, strict=True), start=1):
        pos_text, _, text = line.partition("\t")
        pos = int(pos_text)
        try:
            sentences.append(mark_target(text.split(" "), pos))
        except ValueError as err:
            raise ValueError(f"{data_path}, line {k}: {err}") from err
        senses.append(sense_name(word, classes[gold]))
        positions.append(pos)
    return WSDSplit(word, split, tuple(sentences), tuple(senses), tuple(positions))


def available(word: str, root: Path | str | None = None) -> bool:
    """True when ``word``'s train file is there to read (the data is beside the checkout, not in an image)."""
    base = Path(root) if root is not None else default_root()
    return (base / word / "train.data.txt").is_file() and (base / word / "classes_map.txt").is_file()


def balanced_sample(word: str, per_sense: int, *, seed: int = 0, split: str = "train", max_words: int | None = None,
                    root: Path | str | None = None) -> WSDSplit:  # fmt: skip
    """A seeded sample of ``per_sense`` sentences of each sense (every sentence of a sense that has fewer) from
    one word's train or test file, in the file's order: the same word, size and seed give the same sentences.
    ``max_words``: only sentences of at most that many (space-separated) tokens are drawn from.

    Raises FileNotFoundError when the data is not there (as :func:`load_split`)."""
    whole = load_split(word, split, root=root)
    rng = np.random.default_rng(int(seed))
    keep: list[int] = []
    for sense in sorted(set(whole.senses)):
        idx = [i for i, s in enumerate(whole.senses)
               if s == sense and (max_words is None or len(whole.sentences[i].split(" ")) <= max_words)]  # fmt: skip
        keep.extend(int(i) for i in rng.permutation(idx)[: int(per_sense)])
    keep.sort()
    return WSDSplit(
        word,
        split,
        tuple(whole.sentences[i] for i in keep),
        tuple(whole.senses[i] for i in keep),
        tuple(whole.positions[i] for i in keep),
    )
