"""What a fine-tuning run costs, estimated before it starts: the memory it holds (for the work queue,
lib.serving.work) and the CPU seconds it takes (for the limit a hosted copy puts on one run, and for the cost
a page shows before anyone presses Train).

**Memory.** A run holds, beyond the loaded pretrained model:

* the trained weights' own copies (``top``, ``full``; LoRA's adapters), their gradients, AdamW's two moments
  and the temporaries of its update (torch's multi-tensor step): 4 + 4 + 8 + 6 bytes per trained number (the
  6 measured: training every weight of the bundled model on the bank preset peaked at 497 MB for 22.7 M numbers,
  2026-11-27), plus a snapshot of them with early stopping (4 more);
* the activations a backward pass keeps, per trained layer and word piece of a batch: the attention's
  inputs and outputs (about 10 H floats), the feed-forward's intermediate (2 I) and the attention scores and
  weights (2 × heads × T);
* the pretrained vectors it starts from (every sentence's task vector at every hidden state, and for
  ``top-K`` the padded hidden state the top layers start from) and the fine-tuned model's reading of the set
  for the comparison (every word piece at every hidden state, as a model pass holds).

The estimate errs high: it counts the largest batch at the longest sentence.

**Time.** An epoch runs the layers that train forward and backward over the training sentences' word pieces
(``top-K``: the top K layers, the lower ones' output is read once; LoRA and every weight: all L layers, LoRA's
backward pass computing no weight gradients but the adapters'), then scores every sentence (a forward pass),
and takes an AdamW step per batch over the trained numbers. A layer costs about its parameters plus
2 × length × width multiply-adds per word piece (the attention). After the last epoch the fine-tuned model reads
the whole set once and is compared with the pretrained one. :data:`MACS_PER_SECOND` and
:data:`STEP_SECONDS_PER_NUMBER` were measured here (one core, float32); a model stored in a 16-bit format runs
:data:`LOW_PRECISION_SLOWDOWN` times slower on a CPU without 16-bit arithmetic. :class:`Pace` corrects the
estimate by what this process's own runs took.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from lib.finetune import backbone
from lib.finetune.recipe import Recipe

__all__ = [
    "FLOAT",
    "Pace",
    "TimeEstimate",
    "memory_estimate",
    "run_cost",
    "run_seconds",
    "time_estimate",
    "trained_numbers",
]

FLOAT = 4  # bytes per float32
BYTES_PER_TRAINED_NUMBER = 4 + 4 + 8 + 6  # its copy, its gradient, AdamW's two moments, the step's temporaries
# One core of this machine (AVX2, float32), fitted to training runs of the bundled model on 12-60 sentences of
# 15-37 word pieces, every method, 2026-11-27 (load average 12-17: the estimate errs high on a quiet machine):
MACS_PER_SECOND = 35e9  # multiply-adds a second in the forward and backward passes (34-47 measured)
STEP_SECONDS_PER_NUMBER = 7e-9  # an AdamW step, per trained number (0.156-0.158 s for 22.7 M numbers)
SECONDS_PER_BATCH = 0.004  # the head, the loss and the bookkeeping of one batch
LOW_PRECISION_SLOWDOWN = 5.0  # bfloat16 weights on a CPU without bfloat16 arithmetic: 307 against 57 ms a
# sentence for the decoder's forward pass, bf16 against float32 (same machine)


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
    per_number = BYTES_PER_TRAINED_NUMBER + (4 if recipe.patience else 0)
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


# --------------------------------------------------------------------------------------------- time
@dataclass(frozen=True)
class TimeEstimate:
    """CPU seconds of a run on one core: ``seconds`` in all (every epoch, then opening and comparing the
    model), ``per_epoch`` and the ``epochs`` it counts (all of them: early stopping may end it sooner)."""

    seconds: float
    per_epoch: float
    epochs: int

    def scaled(self, factor: float) -> TimeEstimate:
        return TimeEstimate(self.seconds * factor, self.per_epoch * factor, self.epochs)


def _layer_macs(encoder, mean_pieces: float) -> float:
    """Multiply-adds of one transformer layer per word piece: its parameters and the attention's 2 n H."""
    H, _, _, L = _config(encoder)
    params = sum(p.numel() for name, p in encoder.model.named_parameters() if (backbone.layer_of(name) or 0) >= 1)
    return params / max(1, L) + 2 * mean_pieces * H


def _slowdown(encoder) -> float:
    dtype = str(getattr(next(encoder.model.parameters()), "dtype", "float32"))
    return LOW_PRECISION_SLOWDOWN if ("bfloat16" in dtype or "float16" in dtype) else 1.0


def time_estimate(encoder, recipe: Recipe, *, n_train: int, n_sentences: int, train_pieces: int,
                  total_pieces: int, n_classes: int) -> TimeEstimate:  # fmt: skip
    """CPU seconds a run of ``recipe`` takes (see the module) on ``n_sentences`` sentences holding
    ``total_pieces`` word pieces, ``n_train`` of them (``train_pieces`` pieces) trained on."""
    _, _, _, L = _config(encoder)
    m = recipe.parsed
    mean = total_pieces / max(1, n_sentences)
    layer = _layer_macs(encoder, mean)
    batches = -(-max(1, n_train) // max(1, min(recipe.batch, n_train or 1)))
    run, backward = {"head": (0, 0.0), "mix": (0, 0.0), "top": (m.k, 2.0), "lora": (L, 1.0), "full": (L, 2.0)}[m.kind]
    train_macs = train_pieces * layer * run * (1 + backward)
    score_macs = total_pieces * layer * run
    trained = trained_numbers(encoder, recipe, n_classes)
    slow = _slowdown(encoder)
    per_epoch = (train_macs + score_macs) / MACS_PER_SECOND * slow + batches * (
        trained * STEP_SECONDS_PER_NUMBER + SECONDS_PER_BATCH
    )
    after = (total_pieces * layer * L / MACS_PER_SECOND * slow if m.trains_model else 0.0) + trained * 4e-9
    first = score_macs / MACS_PER_SECOND * slow  # epoch 0: the untrained head's scores
    return TimeEstimate(first + recipe.epochs * per_epoch + after, per_epoch, recipe.epochs)


def run_seconds(encoder, prepared, recipe: Recipe) -> TimeEstimate:
    """:func:`time_estimate` for a run of ``recipe`` on ``prepared`` (a :class:`lib.finetune.data.Prepared`)."""
    lengths = [len(t) for t in prepared.encoding.token_ids]
    train = list(prepared.split.train)
    return time_estimate(
        encoder,
        recipe,
        n_train=len(train),
        n_sentences=len(lengths),
        train_pieces=sum(lengths[i] for i in train),
        total_pieces=sum(lengths),
        n_classes=len(prepared.split.classes),
    )


class Pace:
    """How this process's runs compare with their estimates: ``factor()`` is the median of the last
    ``keep`` ratios of measured to estimated CPU seconds (1 before any run), so an estimate shown on a page
    follows the machine it runs on. Thread-safe."""

    def __init__(self, keep: int = 9):
        self.keep = keep
        self._ratios: list[float] = []
        self._lock = threading.Lock()

    def record(self, estimated: float, measured: float) -> None:
        if estimated <= 0.05 or measured <= 0:  # too short to say anything
            return
        with self._lock:
            self._ratios = [*self._ratios, measured / estimated][-self.keep :]

    def factor(self) -> float:
        with self._lock:
            r = sorted(self._ratios)
        return 1.0 if not r else float(r[len(r) // 2])
