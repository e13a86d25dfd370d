"""Control weights: the trained model with what training learned taken out, the architecture kept.

"Is this learned?" needs a model that can do everything the architecture does (mix each word with its
neighbours through attention, add positions, normalise) but knows nothing it learned from data. Two ways
to get one from the trained weights, both deterministic for a seed::

    from lib.models.weights import shuffle_weights
    shuffle_weights(model, seed=0)   # in place: every weight matrix's entries permuted within the matrix

- :func:`shuffle_weights` permutes the entries of every parameter tensor (each weight matrix, bias, LayerNorm
  scale, the word-piece, position and token-type tables) within that tensor. Each tensor keeps its exact
  values, hence its scale and distribution; which entry sits where, the learned structure, is gone, and with
  it how sharply attention focuses and how much context a word takes in (on the bank preset its attention
  entropy is 0.78-0.99 of uniform, trained 0.44-0.74: lib.stats.context.context_use measures it).
- :func:`moment_matched_weights` draws every tensor afresh from a normal distribution with that tensor's
  trained mean and standard deviation: the same scales, without even the trained distribution's shape.

The third control is the one transformers builds from the config (``AutoModel.from_config``): BERT's
initialiser, normal with std 0.02, LayerNorm scale 1. At that scale attention is almost uniform (0.997 of
the maximum entropy) and the attention branch adds ~9 % of the input's norm, so that copy takes in almost
no context (benchmarks/control_candidates.py measures all three).
"""

from __future__ import annotations

__all__ = ["moment_matched_weights", "random_model", "shuffle_weights", "shuffled_model"]


def _generator(seed: int):
    import torch

    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    return g


def shuffle_weights(model, seed: int) -> None:
    """Permute the entries of every parameter tensor of ``model`` within that tensor, in place.

    One permutation per tensor, drawn from a generator seeded with ``seed`` (the global torch random state
    is not touched), tensors in ``named_parameters`` order, so a seed always gives the same weights.
    Tied tensors (shared between modules) are permuted once.
    """
    import torch

    g = _generator(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            flat = p.data.reshape(-1)
            p.data.copy_(flat[torch.randperm(flat.numel(), generator=g)].reshape(p.shape))


def moment_matched_weights(model, seed: int) -> None:
    """Replace every parameter tensor of ``model`` by normal draws with its own mean and std, in place.

    Seeded as :func:`shuffle_weights`. A tensor of one value (std 0) is left as it is.
    """
    import torch

    g = _generator(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            mean, std = p.data.float().mean(), p.data.float().std() if p.numel() > 1 else 0.0
            draw = torch.randn(p.shape, generator=g, dtype=torch.float32) * float(std) + float(mean)
            p.data.copy_(draw.to(p.dtype))


def shuffled_model(source, seed: int):
    """The "shuffled" control (lib.models.keys): the trained model, :func:`shuffle_weights` applied.

    ``source`` is a :class:`lib.models.base.WeightsSource`. Works for both families: a decoder's tied output
    head is permuted once, with its embedding table.
    """
    model = source.pretrained()
    shuffle_weights(model, seed)
    return model


def random_model(source, seed: int):
    """The "random" control: weights drawn by the config's initialiser under ``torch.manual_seed(seed)``.

    The global torch random state is left as it was (``fork_rng``); a seed always gives the same weights.
    """
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return source.from_config(source.config())
