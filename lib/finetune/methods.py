"""How to adapt a pretrained model to the labelled set: the five methods, each in two sentences.

The texts are the course's (section 7: a head on [CLS] or mean-pooled vectors, freezing lower layers,
adapters and LoRA; the overview: ELMo's learned layer weights); the page shows them beside the choice.
Method names as the command line and the recipe write them: ``head``, ``mix``, ``top-K`` (K = 1 … L),
``lora``, ``full``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lib.finetune.data import FineTuneError
from lib.models.targets import short

__all__ = ["METHODS", "Method", "parse_method"]

METHODS: dict[str, str] = {
    "head": (
        "The model stays frozen and only a linear classifier on one layer's vectors is trained: the probe. It "
        "asks what the pretrained layer already holds, not what training could add; every run is compared with "
        "such a head on the top layer."
    ),
    "mix": (
        "The model stays frozen; ELMo's learned layer mix (ELMo_k = γ Σ_j s_j h_k,j) is trained with the head: "
        "softmax weights s_j over every hidden state and a scale γ, at a rate of their own. Where the s_j move "
        "from uniform they show which layers the task reads."
    ),
    "top": (
        "The top K transformer layers are unfrozen and trained with the head at a small learning rate, the "
        "lower ones stay as pre-trained. On small data this is the course's advice: freeze the lower layers, "
        "which hold general features, and adapt the top ones."
    ),
    "lora": (
        "Every weight stays frozen; small low-rank matrices (LoRA adapters, rank r) are added to the attention's "
        "query, key and value projections and trained with the head. The update W + BA touches every layer yet "
        "trains r × (in + out) numbers per projection instead of its in × out."
    ),
    "full": (
        "Every weight of the model, embeddings included, is trained with the head at a small learning rate. It "
        "can adapt the most, and on few sentences it can also memorise them the fastest."
    ),
}


@dataclass(frozen=True)
class Method:
    """A parsed method: ``kind`` (a key of :data:`METHODS`) and ``k`` (layers unfrozen for ``top``, else 0)."""

    kind: str
    k: int = 0

    @property
    def name(self) -> str:
        return f"top-{self.k}" if self.kind == "top" else self.kind

    @property
    def trains_model(self) -> bool:
        """True when the model's own weights (or adapters) change; False for ``head`` and ``mix``."""
        return self.kind in ("top", "lora", "full")


_TOP = re.compile(r"^top-?(\d{1,3})$")


def parse_method(text: str, num_layers: int | None = None) -> Method:
    """``"head"``, ``"mix"``, ``"top-2"`` (or ``"top2"``), ``"lora"``, ``"full"`` -> :class:`Method`.

    With ``num_layers`` the K of ``top-K`` is checked against the model (1 … L). Raises
    :class:`FineTuneError` with the choices for anything else.
    """
    t = str(text or "").strip().lower()
    if t in ("head", "mix", "lora", "full"):
        return Method(t)
    m = _TOP.match(t)
    if m:
        k = int(m.group(1))
        if k < 1 or (num_layers is not None and k > num_layers):
            most = f" to {num_layers}" if num_layers is not None else " or more"
            raise FineTuneError(f"top-K unfreezes K layers: K must be 1{most}; got {k}.")
        return Method("top", k)
    raise FineTuneError(
        f"“{short(t, 20)}” is not a method. Choose head, mix, top-K (e.g. top-2), lora or full."
    )
