"""The trainable parts that sit on the model: the linear classifier head and ELMo's learned layer mix.

Both are initialised from a ``torch.Generator`` (never the global random state), so a seed gives the same
starting weights in any thread.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["UNIFORM_WITHIN", "Head", "LayerMix", "mix_is_uniform"]

UNIFORM_WITHIN = 0.25  # a mix whose every weight is within 25 % of 1/K did not single out a layer


class Head(nn.Module):
    """A linear classifier ``u = h W^T + b``, ``p = softmax(u)`` (the course's W_cls): (n, H) -> (n, C) logits.

    W starts small (normal, std 0.02, BERT's initialiser) and b at zero.
    """

    def __init__(self, hidden: int, classes: int, generator: torch.Generator):
        super().__init__()
        self.linear = nn.Linear(hidden, classes)
        with torch.no_grad():
            self.linear.weight.copy_(torch.randn(classes, hidden, generator=generator) * 0.02)
            self.linear.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class LayerMix(nn.Module):
    """ELMo's scalar mix: ``γ Σ_j s_j h_j`` with ``s = softmax(w)`` over the K hidden states.

    Input (n, K, H), output (n, H). w starts at zero (every layer weighted 1/K) and γ at 1; both train with
    the head. :meth:`weights` gives s (sums to 1).
    """

    def __init__(self, num_hidden_states: int):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(num_hidden_states))
        self.gamma = nn.Parameter(torch.ones(()))

    def weights(self) -> torch.Tensor:
        return torch.softmax(self.w, dim=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gamma * torch.einsum("k,nkh->nh", self.weights(), x)


def mix_is_uniform(weights) -> bool:
    """True when the layer mix's weights s_j ((K,), summing to 1) stayed where they started: each within
    :data:`UNIFORM_WITHIN` of 1/K (0.107 to 0.179 for K = 7)."""
    w = np.asarray(weights, dtype=float)
    return bool(np.all(np.abs(w * len(w) - 1.0) <= UNIFORM_WITHIN))
