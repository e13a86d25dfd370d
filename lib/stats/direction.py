"""Direction of context: does a word's vector separate its senses when the cue comes before it, or only after?

An encoder reads the whole sentence at once, so a cue on either side of "bank" can move it; a left-to-right
decoder has made the vector of "bank" before it reads anything after it, so a cue that comes only after
cannot. :func:`cue_gaps` measures both halves of a set (the "bank-cue" preset labels each sentence "before"
or "after") with the sense gap of ``lib.stats.similarity.sense_similarity``: the mean cosine of same-sense
pairs minus that of different-sense pairs, per layer, raw cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError
from lib.stats.similarity import layer_cosine_matrices, sense_similarity

__all__ = ["SEPARATES", "CueGaps", "cue_gaps"]

# A half "separates" the senses when its gap reaches this at some layer (cosine units): the encoder's
# smallest peak on the bank-cue preset is about twice as large, the decoder's cue-after half stays at or below 0
SEPARATES = 0.03


@dataclass(frozen=True)
class CueGaps:
    """Same-sense minus different-sense mean cosine per layer, for each half of a set.

    before, after: float64 (K,) the gap of the sentences whose cue comes before the target / only after it
    n_before, n_after: sentences in each half
    """

    before: np.ndarray
    after: np.ndarray
    n_before: int
    n_after: int

    @property
    def separates_before(self) -> bool:
        return bool(np.max(self.before) >= SEPARATES)

    @property
    def separates_after(self) -> bool:
        return bool(np.max(self.after) >= SEPARATES)


def cue_gaps(vectors: np.ndarray, senses: Sequence[str | None], cues: Sequence[str | None]) -> CueGaps:
    """:class:`CueGaps` of ``vectors`` (n, K, H), one sentence each, with its sense and its cue
    ("before", "after", or None for a sentence in neither half). Raises ContextLensError when a half has
    fewer than two senses with two sentences each."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if not (len(vectors) == len(senses) == len(cues)):
        raise ValueError(f"{len(vectors)} vectors, {len(senses)} senses and {len(cues)} cues")
    gaps, counts = {}, {}
    for half in ("before", "after"):
        idx = [i for i, c in enumerate(cues) if c == half and senses[i]]
        labels = [senses[i] for i in idx]
        names = [s for s in set(labels) if labels.count(s) >= 2]
        if len(names) < 2:
            raise ContextLensError(
                f"The sentences whose cue comes {half} the target need two senses with two sentences each; "
                "pick the preset “bank: the cue before it, or only after” again."
            )
        gaps[half] = sense_similarity(layer_cosine_matrices(vectors[idx]), labels).gap
        counts[half] = len(idx)
    return CueGaps(before=gaps["before"], after=gaps["after"], n_before=counts["before"], n_after=counts["after"])
