"""Presets: hand-written sentence sets for polysemous words, from ``assets/presets.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lib.inputs.sentences import SentenceSet, parse_sentence_set, rows_to_text
from lib.paths import ASSETS

PRESETS_PATH = ASSETS / "presets.json"


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
    """The preset with this id, or None."""
    for p in load_presets():
        if p.id == preset_id:
            return p
    return None


def default_preset() -> Preset:
    return load_presets()[0]
