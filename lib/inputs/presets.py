"""Presets: hand-written sentence sets for polysemous words, from ``assets/presets.json``, and samples of real
sentences from CoarseWSD-20 read by path.

A data preset's id is ``coarsewsd-<word>`` (:func:`data_preset_id`): :data:`DATA_PER_SENSE` sentences of each
sense of that word, of at most :data:`DATA_MAX_WORDS` words, drawn from the data set's train file with seed
:data:`DATA_SEED`
(:func:`lib.inputs.wsd_data.balanced_sample`), so a link naming it opens the same sentences on any server that
has the data. It is not in :func:`load_presets` (the sidebar's list of hand-written sets); :func:`preset_by_id`
opens it, and returns None where the data is not there (a Docker image).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lib.inputs.sentences import SentenceSet, parse_sentence_set, rows_to_text
from lib.paths import ASSETS

PRESETS_PATH = ASSETS / "presets.json"
DATA_PREFIX = "coarsewsd-"
DATA_PER_SENSE = 40  # sentences of each sense in a data preset: half train, a quarter validates, a quarter tests
DATA_SEED = 0
DATA_MAX_WORDS = 48  # the data's sentences are 31-47 words on average: long ones cost the most to train on


@dataclass(frozen=True)
class Preset:
    """One preset: ``id`` (URL-safe), ``target``, ``title``, sense descriptions and (sense, sentence) rows.

    ``cues``: per row, where the words that decide the sense sit: "before" the target or only "after" it
    (the direction-of-context preset); empty for a preset that does not say.
    """

    id: str
    target: str
    title: str
    senses: tuple[tuple[str, str], ...]
    rows: tuple[tuple[str, str], ...]
    cues: tuple[str, ...] = ()

    def cue_of(self, sentences) -> list[str | None]:
        """Each sentence's cue ("before" / "after"), None for a sentence that is not one of this preset's."""
        by_text = {text: cue for (_, text), cue in zip(self.rows, self.cues, strict=True)} if self.cues else {}
        return [by_text.get(s) for s in sentences]

    @property
    def text(self) -> str:
        """The sentences in the sentence-set text format (``sense | sentence`` lines)."""
        return rows_to_text(self.rows)

    def sentence_set(self) -> SentenceSet:
        return parse_sentence_set(self.text, self.target, preset_id=self.id)


@lru_cache(maxsize=1)
def load_presets(path: Path = PRESETS_PATH) -> tuple[Preset, ...]:
    """All presets, the default ("bank") first."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for p in data["presets"]:
        out.append(
            Preset(
                id=p["id"],
                target=p["target"],
                title=p["title"],
                senses=tuple((k, v) for k, v in p["senses"].items()),
                rows=tuple((s["sense"], s["text"]) for s in p["sentences"]),
                cues=tuple(s.get("cue", "") for s in p["sentences"]) if any("cue" in s for s in p["sentences"]) else (),
            )
        )
    return tuple(out)


def preset_by_id(preset_id: str | None) -> Preset | None:
    """The preset with this id (a hand-written one, or a data preset ``coarsewsd-<word>`` where the data is), or
    None."""
    for p in load_presets():
        if p.id == preset_id:
            return p
    if isinstance(preset_id, str) and preset_id.startswith(DATA_PREFIX):
        return data_preset(preset_id[len(DATA_PREFIX) :])
    return None


def data_preset_id(word: str) -> str:
    return f"{DATA_PREFIX}{word}"


def is_data_preset(preset_id: str | None) -> bool:
    """True for a data preset's id (whether or not the data is on this server)."""
    return isinstance(preset_id, str) and preset_id.startswith(DATA_PREFIX)


@lru_cache(maxsize=8)
def data_preset(word: str) -> Preset | None:
    """The data preset of ``word`` (see the module), or None when CoarseWSD-20 has no such word here."""
    from lib.inputs import wsd_data

    if not word.isalpha() or not wsd_data.available(word):
        return None
    sample = wsd_data.balanced_sample(word, DATA_PER_SENSE, seed=DATA_SEED, max_words=DATA_MAX_WORDS)
    senses = sorted(set(sample.senses))
    return Preset(
        id=data_preset_id(word),
        target=word,
        title=f"{word}: {len(sample)} Wikipedia sentences (CoarseWSD-20)",
        senses=tuple((s, f"“{s}” in CoarseWSD-20") for s in senses),
        rows=tuple(zip(sample.senses, sample.sentences, strict=True)),
    )


def default_preset() -> Preset:
    return load_presets()[0]
