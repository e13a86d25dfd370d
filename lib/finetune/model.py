"""The fine-tuned model as a model the rest of the app opens: an :class:`~lib.models.encoder.Encoder`.

:func:`finetuned_encoder` wraps a run's fine-tuned transformers model in the same ``Encoder`` class as the
pretrained one (same API: ``encode``, ``target_vectors``, ``num_layers``, ...), keyed
``<id>#finetuned-<recipe>`` (:func:`lib.finetune.recipe.finetuned_key`) and named by what made it. It keeps
only what changed: the unfrozen layers or the adapters are its own tensors, every frozen weight is the
pretrained model's, shared (:func:`lib.finetune.backbone.shared_copy`); :func:`held_bytes` counts what it adds.
It shares the pretrained encoder's tokenizer, and with it the lock that guards the tokenizer's settings.
"""

from __future__ import annotations

from lib.finetune import backbone
from lib.finetune.recipe import finetuned_key

__all__ = ["finetuned_encoder", "held_bytes"]


def finetuned_encoder(base, run):
    """An ``Encoder`` for ``run``'s fine-tuned model, or None when the model itself did not change (``head``
    and ``mix`` train only what sits on top of it).

    ``base``: the pretrained encoder the run started from. ``name`` is the model key, ``display_name`` says
    what made it ("fine-tuned on 8 'bank' sentences, top 2 layers, 20 epochs, seed 0"), ``recipe`` and
    ``finetune_run`` are the run's.
    """
    if run.model is None:
        return None
    from lib.models.encoder import Encoder

    split = run.prepared.split
    enc = Encoder(base.base_name, run.model, base.tokenizer)
    enc.name = finetuned_key(base.name, run.recipe)
    enc.base_name = base.base_name
    enc.display_name = f"{base.display_name} ({run.recipe.describe(len(split.train), split.target)})"
    enc.recipe = run.recipe
    enc.finetune_run = run
    enc._lock = base._lock  # one tokenizer, one lock: its truncation and padding settings are shared state
    return enc


def held_bytes(base, run) -> int:
    """Bytes the fine-tuned model holds beyond the pretrained one (its own layers or adapters), plus the head."""
    head = sum(a.nbytes for a in run.head) + (run.mix.nbytes if run.mix is not None else 0)
    if run.model is None:
        return head
    return backbone.unique_bytes(run.model, base.model) + head
