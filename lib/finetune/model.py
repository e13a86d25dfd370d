"""The fine-tuned model as a model the rest of the app opens: an :class:`~lib.models.encoder.Encoder`.

:func:`finetuned_encoder` wraps a run's fine-tuned transformers model in the same ``Encoder`` class as the
pretrained one (same API: ``encode``, ``target_vectors``, ``num_layers``, ...), keyed
``<id>#finetuned-<recipe>`` through the weights variant "finetuned" (:data:`FINETUNED`, registered here with
:func:`lib.models.keys.register_variant` as the shuffled control is there), so every cache, link and title treats
it as it treats a control. The model layer knows nothing of fine-tuning: whatever reads a model key imports this
module first (the ``ui`` package, ``python -m lib.finetune``, the tests). It keeps only what changed: the unfrozen layers or the adapters are its own
tensors, every frozen weight is the pretrained model's, shared (:func:`lib.finetune.backbone.shared_copy`);
:func:`held_bytes` counts what it adds.

The variant's weights are not made from the key alone (the key names the set by its digest, not its
sentences): :func:`keep` remembers the last :data:`MAX_KEPT` fine-tuned models of the process by key, and
``load_model("<id>#finetuned-<recipe>")`` opens one of them; a key not remembered is refused in a sentence
(the app trains the recipe again first: the same set, recipe and seed give the same weights).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from lib.finetune import backbone
from lib.finetune.data import FineTuneError
from lib.finetune.recipe import FINETUNED_TAG, Recipe
from lib.models.keys import ModelLoadError, Variant, model_key, register_variant

__all__ = [
    "FINETUNED",
    "MAX_KEPT",
    "finetuned_encoder",
    "held_bytes",
    "keep",
    "kept",
    "kept_model",
    "parse_recipe",
    "recipe_name",
]

MAX_KEPT = 3  # fine-tuned models a process keeps openable: top-2 on MiniLM holds ~7 MB of its own, full ~90 MB

_lock = threading.Lock()
_kept: OrderedDict[str, object] = OrderedDict()  # model key -> fine-tuned transformers model
_names: OrderedDict[str, str] = OrderedDict()  # recipe key -> "fine-tuned on 8 'bank' sentences, ..."


def parse_recipe(tail: str) -> str:
    """The recipe key after ``#finetuned-`` in a model key, checked (ModelLoadError for a malformed one)."""
    try:
        return Recipe.from_key(tail).key
    except FineTuneError as err:
        raise ModelLoadError(str(err)) from None


def kept_model(source, value):
    """The variant's ``build``: the remembered fine-tuned model of recipe ``value`` on the model ``source``
    describes, or ModelLoadError when this process no longer holds it."""
    key = str(value)
    with _lock:
        for full, mdl in _kept.items():
            if full.endswith(FINETUNED_TAG + key) and _same_base(mdl, source):
                _kept.move_to_end(full)
                return mdl
    raise ModelLoadError(
        "This fine-tuned model is not on the server any more: open the Fine-tune page with the same "
        "sentences to train it again (the same recipe gives the same weights)."
    )


def _same_base(mdl, source) -> bool:
    a = getattr(mdl.config, "_name_or_path", None)
    b = getattr(source.config(), "_name_or_path", None)
    return a == b


def recipe_name(recipe_key: str) -> str:
    """What made the model of ``recipe_key``, or "fine-tuned, recipe <key>" for one this process never ran."""
    with _lock:
        name = _names.get(recipe_key)
    return name or f"fine-tuned, recipe {recipe_key}"


# A model fine-tuned on the learner's labelled set: its parameter is the recipe's key, which names the set by a
# digest, so the weights are opened from the runs this process made (keep).
FINETUNED = register_variant(
    Variant("finetuned", "fine-tuned", "recipe", parse_recipe, kept_model, default="", words=recipe_name)
)


def keep(model_name: str, run) -> None:
    """Remember ``run``'s fine-tuned model (and its name) so ``load_model`` can open it; the oldest of more than
    :data:`MAX_KEPT` is forgotten (a page holding it keeps it alive until it lets go)."""
    split = run.prepared.split
    with _lock:
        _names[run.recipe.key] = run.recipe.describe(len(split.train), split.target)
        _names.move_to_end(run.recipe.key)
        while len(_names) > 64:
            _names.popitem(last=False)
        if run.model is None:
            return
        _kept[model_key(model_name, "finetuned", run.recipe.key)] = run.model
        _kept.move_to_end(model_key(model_name, "finetuned", run.recipe.key))
        while len(_kept) > MAX_KEPT:
            _kept.popitem(last=False)


def kept(key: str) -> bool:
    """True when the fine-tuned model of model key ``key`` can be opened without training it again."""
    with _lock:
        return key in _kept


def finetuned_encoder(base, run):
    """An ``Encoder`` for ``run``'s fine-tuned model, or None when the model itself did not change (``head``
    and ``mix`` train only what sits on top of it).

    ``base``: the pretrained encoder the run started from (trained weights). ``name`` is the model key
    ``<id>#finetuned-<recipe>``, ``display_name`` says what made it ("<id> (fine-tuned on 8 'bank'
    sentences, top 2 layers, 20 epochs, seed 0)"). The model is remembered (:func:`keep`).
    """
    if run.model is None:
        keep(base.name, run)
        return None
    from lib.models.encoder import Encoder

    keep(base.name, run)
    enc = Encoder(base.name, run.model, base.tokenizer, weights=FINETUNED.name, seed=run.recipe.key)
    enc._lock = base._lock  # one tokenizer, one lock: its truncation and padding settings are shared state
    return enc


def held_bytes(base, run) -> int:
    """Bytes the fine-tuned model holds beyond the pretrained one (its own layers or adapters), plus the head."""
    head = sum(a.nbytes for a in run.head) + (run.mix.nbytes if run.mix is not None else 0)
    if run.model is None:
        return head
    return backbone.unique_bytes(run.model, base.model) + head
