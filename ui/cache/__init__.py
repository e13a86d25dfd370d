"""The only place with Streamlit caching: the model once per process, results per distinct input.

Every cached entry point of the app lives in this package and nowhere else (the process's tuning and warm-ups:
ui.startup); pages call them as ``cache.<name>``, re-exported here. One module per concept:

* :mod:`ui.cache.store` — ``RESULTS``, the process's one byte-bounded LRU of results (``CONTEXT_LENS_CACHE_MB``,
  default 200: a class of sessions cannot grow the server past it, whatever they type), the per-input helpers
  and the figures shared between sessions;
* :mod:`ui.cache.models` — ``MODELS``, a byte-bounded LRU of the loaded models' weights;
* :mod:`ui.cache.encodings` — a set's encodings, one model run per distinct sentence, large sets chunk by chunk,
  the target's vectors;
* :mod:`ui.cache.stats` — the pages' statistics (profiles, probes, readouts, occlusion, the corpus);
* :mod:`ui.cache.projections` — 2-D/3-D maps;
* :mod:`ui.cache.finetune` — fine-tuning runs, shared by every session;
* :mod:`ui.cache.board` — the class board's store.

The work that makes a result (a model pass, a projection, an occlusion) runs in a slot of the server's work queue
(ui/work.py), so memory while computing is bounded too. Results are frozen dataclasses whose arrays are
read-only, so sharing one object between sessions is safe, and a warm rerun costs a dictionary lookup.
A test that swaps the results cache patches ``ui.cache.store.RESULTS`` (every module reads it there).
"""

from ui.cache.board import (
    board_store,
)
from ui.cache.encodings import (
    ATTENTIONS_WITH_SET,
    ATTENTIONS_WITH_SET_BYTES,
    CHUNK,
    _sentence_key,
    clean_sentences,
    encode_ahead,
    encode_in_chunks,
    encoding,
    sentence_attention,
    set_encoding,
    target_vectors,
)
from ui.cache.finetune import (
    FINETUNE_RUNS,
    finetune_open,
    finetune_prepared,
    finetune_run,
    finetune_seeds,
)
from ui.cache.models import (
    MODELS,
    _failed_models,
    encoder,
    try_encoder,
)
from ui.cache.projections import (
    projection,
    projection_check,
    projection_layers,
)
from ui.cache.stats import (
    anisotropy_curves,
    context_use,
    corpus_cut,
    corpus_stats,
    layer_profile,
    logit_lens,
    occlusion,
    probe,
    readout_chance,
    sense_readout,
    set_stats,
    split_counts,
    statistic_slot,
)
from ui.cache.store import (
    ENCODE_CALLS,
    RESULTS,
    SharedFigure,
    evidence,
    lesson_numbers,
    parsed_upload,
    reference_corpus,
    shared_figure,
)

__all__ = [
    "ATTENTIONS_WITH_SET",
    "ATTENTIONS_WITH_SET_BYTES",
    "CHUNK",
    "ENCODE_CALLS",
    "FINETUNE_RUNS",
    "MODELS",
    "RESULTS",
    "SharedFigure",
    "_failed_models",
    "_sentence_key",
    "anisotropy_curves",
    "board_store",
    "clean_sentences",
    "context_use",
    "corpus_cut",
    "corpus_stats",
    "encode_ahead",
    "encode_in_chunks",
    "encoder",
    "encoding",
    "evidence",
    "finetune_open",
    "finetune_prepared",
    "finetune_run",
    "finetune_seeds",
    "layer_profile",
    "lesson_numbers",
    "logit_lens",
    "occlusion",
    "parsed_upload",
    "probe",
    "projection",
    "projection_check",
    "projection_layers",
    "readout_chance",
    "reference_corpus",
    "sense_readout",
    "sentence_attention",
    "set_encoding",
    "set_stats",
    "shared_figure",
    "split_counts",
    "statistic_slot",
    "target_vectors",
    "try_encoder",
]
