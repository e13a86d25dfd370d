"""What a fine-tuning run holds in memory, estimated before it starts (for the work queue, lib.serving.work).

A run holds, beyond the loaded pretrained model:

* the trained weights' own copies (``top``, ``full``; LoRA's adapters), their gradients and AdamW's two
  moments: 4 + 4 + 8 bytes per trained number, plus a snapshot of them with early stopping (4 more);
* the activations a backward pass keeps, per trained layer and word piece of a batch: the attention's
  inputs and outputs (about 10 H floats), the feed-forward's intermediate (2 I) and the attention scores and
  weights (2 × heads × T);
* the pretrained vectors it starts from (every sentence's task vector at every hidden state, and for
  ``top-K`` the padded hidden state the top layers start from) and the fine-tuned model's reading of the set
  for the comparison (every word piece at every hidden state, as a model pass holds).

The estimate errs high: it counts the largest batch at the longest sentence.
"""

from __future__ import annotations

from lib.finetune import backbone
from lib.finetune.recipe import Recipe

__all__ = ["FLOAT", "memory_estimate", "run_cost", "trained_numbers"]

FLOAT = 4  # bytes per float32


def _config(encoder) -> tuple[int, int, int, int]:
    cfg = encoder.model.config
    H = int(cfg.hidden_size)
    return H, int(getattr(cfg, "intermediate_size", 4 * H)), int(cfg.num_attention_heads), encoder.num_layers


def trained_numbers(encoder, recipe: Recipe, n_classes: int) -> int:
    """How many numbers a run of ``recipe`` trains, before it starts: the head (H × C + C), the layer mix
    (L + 2), and the model's unfrozen layers (counted from the model's own parameters), LoRA's adapters
    (r × (in + out) per adapted projection, from each projection's own shape: query, key and value of every
    layer; a decoder's key and value are narrower with grouped-query attention) or every weight. Equal to
    the run's count of the parameters that required a gradient (``TrainedRun.trained_parameters``)."""
    H, _, _, L = _config(encoder)
    m = recipe.parsed
    n = H * n_classes + n_classes
    if m.kind == "mix":
        n += L + 2
    params = list(encoder.model.named_parameters())
    if m.kind == "top":
        n += sum(p.numel() for name, p in params if (backbone.layer_of(name) or 0) > L - m.k)
    elif m.kind == "full":
        n += sum(p.numel() for name, p in params if backbone.layer_of(name) is not None)
    elif m.kind == "lora":
        n += sum(recipe.rank * (mod.in_features + mod.out_features) for mod in backbone.lora_modules(encoder.model))
    return int(n)


def memory_estimate(encoder, recipe: Recipe, *, n_sentences: int, max_pieces: int, total_pieces: int,
                    n_classes: int) -> int:  # fmt: skip
    """Bytes a run of ``recipe`` holds while it trains and compares (see the module), for ``n_sentences``
    sentences whose longest is ``max_pieces`` word pieces and which hold ``total_pieces`` in all."""
    H, inter, heads, L = _config(encoder)
    m = recipe.parsed
    trained = trained_numbers(encoder, recipe, n_classes)
    per_number = 4 + 4 + 8 + (4 if recipe.patience else 0)
    layers_run = {"head": 0, "mix": 0, "top": m.k, "lora": L, "full": L}[m.kind]
    batch = min(recipe.batch, n_sentences)
    per_piece = 10 * H + 2 * inter + 2 * heads * max_pieces
    activations = layers_run * batch * max_pieces * per_piece * FLOAT
    features = n_sentences * (L + 1) * H * FLOAT
    if m.kind == "top":
        features += n_sentences * max_pieces * H * FLOAT
    comparison = total_pieces * (L + 1) * H * FLOAT if m.trains_model else 0
    return int(trained * per_number + activations + features + comparison)


def run_cost(encoder, prepared, recipe: Recipe) -> int:
    """:func:`memory_estimate` for a run of ``recipe`` on ``prepared`` (a :class:`lib.finetune.data.Prepared`):
    the ``cost`` to give ``WorkQueue.job`` (lib.serving.work) around :func:`lib.finetune.run.run_recipe`."""
    lengths = [len(t) for t in prepared.encoding.token_ids]
    return memory_estimate(
        encoder,
        recipe,
        n_sentences=len(lengths),
        max_pieces=max(lengths),
        total_pieces=sum(lengths),
        n_classes=len(prepared.split.classes),
    )
