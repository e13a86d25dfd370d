"""lib/errors.py: which exceptions carry a learner-facing message (no model needed)."""

from __future__ import annotations

import pytest

from lib.errors import ContextLensError, StepNotApplicable
from lib.inputs.corpus import CorpusError, parse_corpus_text
from lib.inputs.sentences import unpack_text
from lib.inputs.upload import UploadError, parse_upload
from lib.models.encoder import ModelLoadError
from lib.models.recompute import UnsupportedArchitectureError
from lib.models.targets import (
    MarkupError,
    TargetError,
    TargetNotFoundError,
    TargetTruncatedError,
    find_target,
)
from lib.stats.context import ContextError
from lib.stats.projection import ProjectionError, pca_projection
from lib.teaching.toy_attention import ToyAttentionError


@pytest.mark.parametrize(
    "cls",
    [
        TargetError,
        TargetNotFoundError,
        MarkupError,
        TargetTruncatedError,
        UploadError,
        CorpusError,
        ProjectionError,
        ToyAttentionError,
        ModelLoadError,
        UnsupportedArchitectureError,
        ContextError,
        StepNotApplicable,
    ],
)
def test_every_learner_facing_error_is_a_context_lens_error(cls):
    assert issubclass(cls, ContextLensError) and issubclass(cls, ValueError)


def test_real_failures_raise_the_learner_facing_kind():
    cases = [
        lambda: find_target("No target here.", "bank"),
        lambda: find_target("Two [marks] and [more].", "bank"),
        lambda: parse_upload(b"", "bank"),
        lambda: parse_corpus_text("# only a comment"),
        lambda: pca_projection([[1.0, 2.0]]),
        lambda: unpack_text("not-a-link"),
    ]
    for case in cases:
        with pytest.raises(ContextLensError) as info:
            case()
        assert str(info.value) and "Traceback" not in str(info.value)


def test_a_programming_error_is_not_a_context_lens_error():
    # what a page must never show as "this step cannot run": plain ValueError/TypeError stay bugs
    assert not issubclass(TypeError, ContextLensError)
    assert not isinstance(ValueError("bug"), ContextLensError)
