"""The app's error vocabulary: which exceptions carry a message meant for the learner.

* :class:`ContextLensError` (a ``ValueError``) is the base of every error whose message is written for the
  learner and says what to do: a sentence without its target (``lib.models.targets.TargetError``), a bad upload
  (``lib.inputs.upload.UploadError``), an unusable corpus (``lib.inputs.corpus.CorpusError``), a projection with too few
  points (``lib.stats.projection.ProjectionError``), bad numbers in the attention calculator
  (``lib.teaching.toy_attention.ToyAttentionError``), a model that cannot be loaded (``lib.models.encoder.ModelLoadError``),
  a model whose attention cannot be recomputed (``lib.models.recompute.UnsupportedArchitectureError``), a sentence
  the "What moves the word" experiment cannot use (``lib.stats.context.ContextError``).
* :class:`StepNotApplicable` says that the data in hand cannot support one lesson step (a model without a
  [CLS] token, a set with too few senses); the lesson page shows its message and moves on.

Pages catch these by name and show ``str(err)``. Anything else is a bug and must surface as one, never as
"this step cannot run with the model". Plain Python, no Streamlit.
"""

from __future__ import annotations

__all__ = ["ContextLensError", "StepNotApplicable"]


class ContextLensError(ValueError):
    """A problem with the learner's input or choice; the message says what to do (safe to show as is)."""


class StepNotApplicable(ContextLensError):
    """This data cannot support this lesson step (e.g. a model with no [CLS] token); the message says why."""
