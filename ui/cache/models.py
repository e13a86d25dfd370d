"""The loaded models, shared by every session, and the one message for a model the app cannot load."""

from __future__ import annotations

import contextlib

import streamlit as st

from lib.models import load_model
from lib.models.base import TransformerModel
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL, ModelLoadError, base_model_id, parse_model_key
from lib.serving import budget
from lib.serving.budget import ByteLRU, ExpiringDict
from lib.serving.hosting import MODEL_REFUSAL, hosted_mode, model_allowed, variant_allowed
from ui import visitor
from ui.cache.store import _log

_failed_models = ExpiringDict(max_entries=64, ttl=600.0)  # a link cannot grow this list without bound


# The loaded models, shared by every session: counted by their weights' bytes (lib.serving.budget.model_nbytes) and
# evicted least recently used first past CONTEXT_LENS_MODEL_CACHE_MB, like every other result. One load per model
# at a time (a second session asking waits for the first's load). A session still using an evicted model keeps
# its reference until its run ends; the next run loads it again.
MODELS = ByteLRU(budget.model_cache_bytes(), size=budget.model_nbytes)


def encoder(model_name: str = DEFAULT_MODEL) -> TransformerModel:
    """The loaded model for ``model_name`` (an encoder or a decoder: lib.models.load_model), shared by every
    session, kept in :data:`MODELS`. Raises ModelLoadError (not kept)."""
    hit = MODELS.get(model_name)
    if hit is not None:
        return hit
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    spin = st.spinner("Loading the model (once per server)…") if get_script_run_ctx(suppress_warning=True) else contextlib.nullcontext()
    with spin:
        return MODELS.get_or_compute(model_name, lambda: load_model(model_name))


def _weights(model_name: str) -> str:
    """The weights a key names ("trained", "shuffled", "random", ...); "" for a malformed key (its load fails)."""
    try:
        return parse_model_key(model_name).weights
    except ModelLoadError:
        return ""


def try_encoder(model_name: str) -> tuple[TransformerModel | None, str | None]:
    """(model, None) when the model loads, else (None, message). A failed name is not retried for a while.

    In hosted mode (``CONTEXT_LENS_MODELS`` set, or a visitor from another machine: ui.visitor) a name off the
    list, or a weights variant a hosted copy never builds (``#random-``), is refused before anything is looked
    up. Hosted mode or not, every refusal or failure gives the same message (lib.serving.hosting.MODEL_REFUSAL), so a
    link cannot probe the server's disk (``?model=/etc`` and ``?model=/nonexistent`` read the same); the
    reason goes to the server's log. The one exception: the decoder pack (``DECODER_MODEL``) not fetched yet
    says so in its own sentence (lib.models.pack.MISSING), which tells nothing about the disk.
    """
    local = visitor.local()
    if hosted_mode(local=local) and not (
        model_allowed(base_model_id(model_name), local=local) and variant_allowed(_weights(model_name), local=local)
    ):
        return None, MODEL_REFUSAL
    failed = _failed_models.get(model_name)
    if failed is not None:
        return None, failed
    try:
        return encoder(model_name), None
    except ModelLoadError as err:
        from lib.models.pack import MISSING

        _log.info("model %r refused: %s", model_name[:200], err)
        try:
            is_pack = parse_model_key(model_name).base == DECODER_MODEL
        except ModelLoadError:
            is_pack = False
        if is_pack and str(err) == MISSING:  # not remembered: once fetched, the next try loads it
            return None, MISSING
        _failed_models[model_name] = MODEL_REFUSAL
        return None, MODEL_REFUSAL


