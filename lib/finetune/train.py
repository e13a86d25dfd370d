"""The training loop: one recipe on one prepared split, with progress per epoch and a way to stop.

``train(encoder, prepared, recipe, progress=..., cancel=...)`` returns a :class:`TrainedRun`. Before the
first epoch and after every epoch it calls ``progress(report)`` with an :class:`EpochReport` (epoch, losses
and accuracies on the training and the validation sentences); a callback that returns False, or a
``threading.Event`` that is set, stops the run between two steps (``TrainedRun.stopped == "cancelled"``).
Whatever the callback raises (Streamlit stops a page run that way) leaves the loop too.

The three sets keep their jobs (:mod:`lib.finetune.data`): the steps see the training sentences only; early
stopping watches the validation loss; the test sentences are scored once, after the last epoch, with the
weights the run kept (``TrainedRun.test_acc``), and nothing in the loop reads them before.

What trains, by method (:mod:`lib.finetune.methods`):

* ``head`` / ``mix``: the model never runs; the head (and the layer mix) learn from the pretrained vectors
  the split was prepared with (:attr:`lib.finetune.data.Prepared.features`). The mix's layer weights learn at
  their own rate (:data:`MIX_LR`): at the head's, a few dozen steps leave them where they start, uniform.
* ``top-K``: the lower L - K layers never change, so their output (hidden state L - K of the pretrained
  encoding) is read once and only the top K layers run in each step (:func:`lib.finetune.backbone.run_top_layers`).
* ``lora`` / ``full``: the whole model runs in each step (the adapters or the weights change everywhere).

The random-label control (``Recipe.shuffled``) shuffles the training sentences' labels among them (a seeded
permutation: the label counts stay, the link between sentence and sense goes); validation and test keep their
true labels, so what it learns can only be the training sentences themselves.

Deterministic on the CPU: every random draw (the head, LoRA's A, the data order, the shuffled labels) comes
from the recipe's seed through a ``torch.Generator`` / numpy generator of its own, dropout is off (the copy
trains in eval mode), and the batches are in a seeded order; the same set, recipe and seed give the same
weights, bit for bit, in the same process (and across processes with the same number of torch threads).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from lib.finetune import backbone
from lib.finetune.data import FineTuneError, Prepared
from lib.finetune.recipe import Recipe

__all__ = ["MIX_LR", "TRAIN_THREADS", "EpochReport", "TrainedRun", "torch_threads", "train", "training_labels"]

WEIGHT_DECAY = 0.01  # AdamW's decoupled weight decay (the course: weight decay helps generalization)
# One torch thread per run. The tensors are small (a batch of a few hundred word pieces), where a second
# OpenMP thread gains little, and on a shared two-core host it loses a lot: with other work running, top-2 on
# the bank preset took 31 s of wall time on two threads against 3.1 s on one (5 epochs, load average ~10,
# 2026-11-27). The work queue runs two jobs on the two cores, one core each; the thread count also fixes
# the order of the floating-point sums, so the same recipe gives the same bits in any process.
TRAIN_THREADS = 1
# The layer mix's weights w (s = softmax(w)) start at 0. At the head's 1e-3, 60 AdamW steps move each w by at most
# 0.06, so s stays within 6 % of uniform (measured on the bank preset: 0.140-0.146 against 1/7 = 0.143); at
# 5e-2 the same steps can move it by 3, enough for a layer to take most of the weight when the task favours it.
MIX_LR = 5e-2
# Word pieces a scoring batch holds, padding included: the sentences are scored in batches of like length
# (lib.models.base.plan_batches), so a batch of short sentences does not pad to the longest of the set.
SCORE_PIECES = 1024


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads in the calling thread (OpenMP's and MKL's thread
    counts are per thread), then restore the previous count; None changes nothing."""
    import torch

    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class EpochReport:
    """How the run stands after ``epoch`` epochs (epoch 0: before any step, the untrained head).

    train_loss, validation_loss: mean cross-entropy (nats) over the training / validation sentences
    train_acc, validation_acc:   share of them whose sense the model predicts (the training sentences scored
                                 against the labels they were trained on: shuffled ones in the control)
    seconds:                     wall time since the run started
    """

    epoch: int
    train_loss: float
    validation_loss: float
    train_acc: float
    validation_acc: float
    seconds: float

    @property
    def heldout_loss(self) -> float:
        """The validation loss under its earlier name (the JSON keeps both)."""
        return self.validation_loss

    @property
    def heldout_acc(self) -> float:
        """The validation accuracy under its earlier name (the JSON keeps both)."""
        return self.validation_acc

    def as_dict(self) -> dict:
        return {
            "epoch": self.epoch,
            "train_loss": round(self.train_loss, 6),
            "validation_loss": round(self.validation_loss, 6),
            "train_acc": round(self.train_acc, 6),
            "validation_acc": round(self.validation_acc, 6),
            "heldout_loss": round(self.validation_loss, 6),
            "heldout_acc": round(self.validation_acc, 6),
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class TrainedRun:
    """A finished (or stopped) run.

    recipe, prepared: what it trained on
    history:   one :class:`EpochReport` per epoch, epoch 0 first
    best_epoch: the epoch whose weights the run kept: the last, or with early stopping the one of least
               validation loss
    stopped:   "completed", "early" (early stopping) or "cancelled"
    test_loss, test_acc: the kept weights scored on the test sentences, once, after training (NaN when the
               run was cancelled: a stopped run reports no test score)
    model:     the fine-tuned transformers model (``top``, ``lora``, ``full``; its frozen weights are the
               pretrained model's own tensors, shared), or None (``head``, ``mix``)
    head:      (weight (C, H), bias (C,)) float32 of the classifier
    mix:       (K,) the layer mix's softmax weights s_j and ``gamma`` (``mix`` only; else None and 1.0)
    predictions: (n,) int class predicted for every sentence of the split, with the weights kept
    labels:    (n,) int the labels it trained against (the split's, with the training ones shuffled in the
               control)
    trained_parameters: how many numbers training changed: every parameter that required a gradient (head,
               mix, layers, adapters)
    """

    recipe: Recipe
    prepared: Prepared
    history: tuple[EpochReport, ...]
    best_epoch: int
    stopped: str
    test_loss: float
    test_acc: float
    model: object | None
    head: tuple[np.ndarray, np.ndarray]
    mix: np.ndarray | None
    gamma: float
    predictions: np.ndarray
    labels: np.ndarray
    trained_parameters: int

    @property
    def final(self) -> EpochReport:
        """The report of the kept weights (``best_epoch``)."""
        return next(r for r in self.history if r.epoch == self.best_epoch)


def training_labels(split, recipe: Recipe) -> np.ndarray:
    """(n,) int64 the labels a run of ``recipe`` trains against: the split's, or for the random-label control
    (``recipe.shuffled``) the training sentences' labels permuted among them by the recipe's seed."""
    labels = split.labels.copy()
    if recipe.shuffled:
        train = np.array(split.train, dtype=np.int64)
        rng = np.random.default_rng([int(recipe.seed), 7])  # its own stream: the data order's is not disturbed
        labels[train] = labels[rng.permutation(train)]
    return labels


class _Body:
    """Turns a batch of sentence indices into (n, H) vectors for the head; owns what trains below it."""

    def __init__(self, encoder, prepared: Prepared, recipe: Recipe, generator):
        import torch

        from lib.finetune.heads import LayerMix

        self.method = recipe.parsed
        self.recipe = recipe
        self.causal = bool(getattr(encoder, "causal", False))
        L = encoder.num_layers
        enc = prepared.encoding
        self.model = None
        self.mix = None
        self.params: list = []
        kind = self.method.kind
        if kind in ("head", "mix"):
            self.features = torch.from_numpy(np.ascontiguousarray(prepared.features))
            if kind == "mix":
                self.mix = LayerMix(prepared.num_hidden_states)
            return
        ids, mask = backbone.pad_ids(enc.token_ids, _pad_id(encoder))
        self.ids, self.mask = torch.from_numpy(ids), torch.from_numpy(mask)
        self.lengths = mask.sum(axis=1)
        pool = np.zeros(ids.shape, dtype=np.float32)
        for i, w in enumerate(prepared.pool):
            pool[i, : len(w)] = w
        self.pool = torch.from_numpy(pool)
        if kind == "top":
            self.start = L - self.method.k
            self.model = backbone.shared_copy(encoder.model, range(self.start + 1, L + 1))
            self.cached = None  # per sentence (n_i, H): the pretrained encoding's own arrays, padded per batch
            if backbone.supports_cached_layers(self.model, causal=self.causal):
                self.cached = [h[self.start] for h in enc.hidden_states]
        elif kind == "lora":
            self.model = backbone.inject_lora(backbone.shared_copy(encoder.model, ()), self.recipe.rank, generator)
        else:  # full
            self.model = backbone.shared_copy(encoder.model, range(0, L + 1))
        self.model.eval()  # no dropout: the run is deterministic (the weights still train)
        self.params = [p for p in self.model.parameters() if p.requires_grad]

    def scoring_batches(self, idx: np.ndarray) -> list[np.ndarray]:
        """``idx`` in batches for scoring: sentences of like length together (a batch pads to its longest), at
        most :data:`SCORE_PIECES` word pieces a batch, padding included; one batch when the model does not run."""
        from lib.models.base import plan_batches

        if self.model is None or len(idx) == 0:
            return [idx]
        return [idx[np.array(g)] for g in plan_batches([int(self.lengths[i]) for i in idx], SCORE_PIECES)]

    def __call__(self, idx: np.ndarray):
        import torch

        t = torch.from_numpy(idx)
        kind = self.method.kind
        if kind == "head":
            return self.features[t, self.recipe.layer]
        if kind == "mix":
            return self.mix(self.features[t])
        T = int(self.lengths[idx].max())  # the batch's longest sentence: no padding beyond it
        mask = self.mask[t, :T]
        if kind == "top" and self.cached is not None:
            start = torch.from_numpy(backbone.pad_hidden([self.cached[i][None] for i in idx], 0))
            hidden = backbone.run_top_layers(self.model, self.start, start, mask, causal=self.causal)
        else:
            hidden = backbone.last_hidden(self.model, self.ids[t, :T], mask)
        return torch.einsum("nt,nth->nh", self.pool[t, :T], hidden.float())


def _pad_id(encoder) -> int:
    pad = getattr(encoder.tokenizer, "pad_token_id", None)
    return int(pad) if pad is not None else 0


def train(
    encoder,
    prepared: Prepared,
    recipe: Recipe,
    *,
    progress: Callable[[EpochReport], bool | None] | None = None,
    cancel: threading.Event | None = None,
    threads: int | None = TRAIN_THREADS,
    each_epoch: bool = True,
) -> TrainedRun:
    """Train ``recipe`` on ``prepared`` (the pretrained ``encoder``'s reading of the split); see the module.

    ``threads``: torch's intra-op threads for this run, set for the calling thread only and restored after
    (:func:`torch_threads`); None keeps the thread's setting. ``each_epoch=False`` scores the training and
    validation sentences only after the last epoch (one report; a benchmark), which early stopping cannot use.

    Raises :class:`FineTuneError` when the recipe does not fit the set or the model (another set's digest,
    K above the model's layers, a head on a hidden state it does not have, every weight of a model whose
    weights are not float32).
    """
    split = prepared.split
    if recipe.digest != split.digest:
        raise FineTuneError("This recipe was made for another sentence set; make it again for this one.")
    if recipe.task != prepared.task:
        raise FineTuneError(f"The recipe's task is “{recipe.task}” but the set was prepared for “{prepared.task}”.")
    m = recipe.parsed
    if m.kind == "top" and m.k > encoder.num_layers:
        raise FineTuneError(f"This model has {encoder.num_layers} layers; top-{m.k} asks for more.")
    if m.kind == "head" and not 0 <= recipe.layer <= encoder.num_layers:
        raise FineTuneError(f"This model has hidden states 0 to {encoder.num_layers}; the head asks for {recipe.layer}.")
    if m.kind == "full" and backbone.model_dtype(encoder.model) != _float32():
        raise FineTuneError(
            "This model keeps its weights in a smaller float type; training every weight needs a float32 copy of "
            "all of them, with their gradients and the optimizer's state (16 bytes a weight). Train the top "
            "layers or LoRA adapters instead."
        )
    if recipe.patience and not each_epoch:
        raise FineTuneError("Early stopping watches the validation loss after every epoch; score each epoch.")
    with torch_threads(threads):
        return _train(encoder, prepared, recipe, progress, cancel, each_epoch)


def _float32():
    import torch

    return torch.float32


def _train(encoder, prepared, recipe, progress, cancel, each_epoch) -> TrainedRun:
    import torch

    from lib.finetune.heads import Head

    split = prepared.split
    t0 = time.perf_counter()
    generator = torch.Generator().manual_seed(int(recipe.seed))
    order_rng = np.random.default_rng(int(recipe.seed))
    fitted = training_labels(split, recipe)
    labels = torch.from_numpy(fitted)
    true_labels = torch.from_numpy(split.labels)
    train_idx = np.array(split.train, dtype=np.int64)
    val_idx = np.array(split.validation, dtype=np.int64)
    test_idx = np.array(split.test, dtype=np.int64)
    body = _Body(encoder, prepared, recipe, generator)
    head = Head(prepared.features.shape[2], len(split.classes), generator)
    groups = [{"params": list(head.parameters()), "lr": recipe.head_lr}]
    if body.mix is not None:
        groups.append({"params": list(body.mix.parameters()), "lr": MIX_LR})
    if body.params:
        groups.append({"params": body.params, "lr": recipe.lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=WEIGHT_DECAY)
    loss_fn = torch.nn.CrossEntropyLoss()
    trainable = [p for g in groups for p in g["params"] if p.requires_grad]

    predictions = np.zeros(len(split.sentences), dtype=np.int64)  # of the weights last scored

    def evaluate(idx: np.ndarray, against) -> tuple[float, float]:
        with torch.no_grad():
            groups = body.scoring_batches(idx)
            logits = torch.cat([head(body(b)) for b in groups])
            order = np.concatenate(groups)
            y = against[torch.from_numpy(order)]
            predictions[order] = logits.argmax(1).numpy()
            return float(loss_fn(logits, y)), float((logits.argmax(1) == y).float().mean())

    def report(epoch: int) -> EpochReport:
        tl, ta = evaluate(train_idx, labels)
        vl, va = evaluate(val_idx, true_labels)
        return EpochReport(epoch, tl, vl, ta, va, time.perf_counter() - t0)

    def stop_asked(rep: EpochReport | None) -> bool:
        if cancel is not None and cancel.is_set():
            return True
        return rep is not None and progress is not None and progress(rep) is False

    history = [report(0)] if each_epoch else []
    stopped = "completed"
    best = (history[0].validation_loss if history else np.inf, 0, _snapshot(trainable) if recipe.patience else None)
    since_best = 0
    with torch.random.fork_rng(devices=[]):  # nothing here may draw from (or disturb) the global generator
        if history and stop_asked(history[0]):
            stopped = "cancelled"
        for epoch in range(1, recipe.epochs + 1):
            if stopped == "cancelled":
                break
            for batch in _batches(order_rng.permutation(train_idx), recipe.batch):
                if cancel is not None and cancel.is_set():
                    stopped = "cancelled"
                    break
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(head(body(batch)), labels[torch.from_numpy(batch)])
                loss.backward()
                optimizer.step()
            if stopped == "cancelled":
                break
            if not each_epoch and epoch < recipe.epochs:
                continue
            rep = report(epoch)
            history.append(rep)
            if rep.validation_loss < best[0]:
                best, since_best = (rep.validation_loss, epoch, _snapshot(trainable) if recipe.patience else None), 0
            else:
                since_best += 1
            if stop_asked(rep):
                stopped = "cancelled"
                break
            if recipe.patience and since_best >= recipe.patience:
                stopped = "early"
                break
    if not history:  # cancelled before the only report
        history.append(report(0))
    best_epoch = history[-1].epoch
    if recipe.patience and stopped != "cancelled":
        _restore(trainable, best[2])
        best_epoch = best[1]
        if best_epoch != history[-1].epoch:
            with torch.no_grad():
                evaluate(train_idx, labels)  # the kept weights' predictions
                evaluate(val_idx, true_labels)
    test_loss = test_acc = float("nan")
    if stopped != "cancelled":  # the test sentences, scored once with the weights kept
        test_loss, test_acc = evaluate(test_idx, true_labels)
    if body.model is not None:
        for p in body.model.parameters():
            p.requires_grad_(False)
    mix = body.mix.weights().detach().numpy().copy() if body.mix is not None else None
    gamma = float(body.mix.gamma.detach()) if body.mix is not None else 1.0
    return TrainedRun(
        recipe=recipe,
        prepared=prepared,
        history=tuple(history),
        best_epoch=best_epoch,
        stopped=stopped,
        test_loss=test_loss,
        test_acc=test_acc,
        model=body.model,
        head=(head.linear.weight.detach().numpy().copy(), head.linear.bias.detach().numpy().copy()),
        mix=mix,
        gamma=gamma,
        predictions=predictions,
        labels=fitted,
        trained_parameters=int(sum(p.numel() for p in trainable)),
    )


def _batches(idx: np.ndarray, size: int) -> list[np.ndarray]:
    return [idx[i : i + size] for i in range(0, len(idx), max(1, int(size)))]


def _snapshot(params) -> list:
    return [p.detach().clone() for p in params]


def _restore(params, saved) -> None:
    import torch

    with torch.no_grad():
        for p, s in zip(params, saved, strict=True):
            p.copy_(s)
