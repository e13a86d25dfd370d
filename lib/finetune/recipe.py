"""A fine-tuning run's recipe: everything that decides its weights, as a small frozen value and a short string.

The same set, the same recipe and the same seed give the same weights (training is deterministic on the
CPU: every random draw comes from the seed, the data order is fixed by it, no dropout), so a link can carry
the recipe instead of the weights, and a cache can key one shared run on it. The string form is URL-safe
(letters, digits, ``.``, ``-``, ``_``) and reads left to right::

    3f9a2c1d0e_token_top-2_lr5e-05_hlr0.001_e20_p0_b16_s0_h50-0

set digest, task, method (``head@6`` = a head on hidden state 6, ``lora-8`` = rank 8), learning rates of the
model and of the head, epochs, early-stopping patience (0 = off), batch size, seed, held-out percent (split
between validation and test) and the split's seed; ``_shuffled`` at the end for the random-label control (the
training sentences' labels shuffled among them). :func:`finetuned_key` puts it behind a model id:
``<id>#finetuned-<recipe>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lib.finetune.data import TASKS, FineTuneError
from lib.finetune.methods import Method, parse_method
from lib.models.targets import short

__all__ = [
    "DEFAULT_HEAD_LR",
    "DEFAULT_LR",
    "FINETUNED_TAG",
    "MAX_EPOCHS",
    "Recipe",
    "finetuned_key",
    "split_finetuned_key",
]

FINETUNED_TAG = "#finetuned-"
MAX_EPOCHS = 200
MAX_SEED = 9999
MAX_RANK = 64
# The course's rate for pretrained weights is 1e-5 to 5e-5; we take the top of it because a dozen sentences
# give only a step or two per epoch. LoRA's adapters start at zero like the head, and its authors trained
# them at 1e-4 to 5e-4. The head starts from nothing on vectors that stay where they are (or move little):
# at 5e-5 Adam would move its weights 1e-3 in 20 steps, far short of separating the senses, so it gets a
# larger rate (the course: "a slightly larger LR for the classifier head"; Howard and Ruder's discriminative
# rates); 1e-3 reaches the probe's accuracy on the presets within 20 epochs.
DEFAULT_LR = {"head": 0.0, "mix": 0.0, "top": 5e-5, "lora": 5e-4, "full": 5e-5}
DEFAULT_HEAD_LR = 1e-3
DEFAULT_BATCH = 16
DEFAULT_RANK = 8
DEFAULT_EPOCHS = 10  # the default task's top-2 run fits the page's time budget and reaches 100 % training accuracy
DEFAULT_HELDOUT = 50  # percent of each sense held out: half of it validates, half tests


@dataclass(frozen=True)
class Recipe:
    """What makes a fine-tuned model. Build with :meth:`make` (defaults filled, everything checked).

    digest:  the labelled set's :func:`lib.finetune.data.set_digest`
    task:    ``token`` | ``cls`` | ``mean``
    method:  ``head`` | ``mix`` | ``top-K`` | ``lora`` | ``full``
    layer:   the hidden state the ``head`` reads (-1 for the other methods, which read the top)
    rank:    LoRA's rank r (0 for the other methods)
    lr:      learning rate of the model's weights or adapters (0 when none train)
    head_lr: learning rate of the head (and the layer mix)
    epochs, patience (early stopping on validation loss after that many epochs without a new best; 0 = off),
    batch, seed (initialisation and data order), heldout (percent of each sense held out for validation and
    test), split_seed
    shuffled: the random-label control: the training sentences' labels shuffled among them (validation and
              test keep theirs), so there is nothing to learn that carries over
    """

    digest: str
    task: str = "token"
    method: str = "top-2"
    layer: int = -1
    rank: int = 0
    lr: float = 5e-5
    head_lr: float = DEFAULT_HEAD_LR
    epochs: int = DEFAULT_EPOCHS
    patience: int = 0
    batch: int = DEFAULT_BATCH
    seed: int = 0
    heldout: int = DEFAULT_HELDOUT
    split_seed: int = 0
    shuffled: bool = False

    @classmethod
    def make(
        cls,
        digest: str,
        method: str = "top-2",
        *,
        num_layers: int,
        task: str = "token",
        layer: int | None = None,
        rank: int | None = None,
        lr: float | None = None,
        head_lr: float | None = None,
        epochs: int = DEFAULT_EPOCHS,
        patience: int = 0,
        batch: int = DEFAULT_BATCH,
        seed: int = 0,
        heldout: int = DEFAULT_HELDOUT,
        split_seed: int = 0,
        shuffled: bool = False,
    ) -> Recipe:
        """A checked recipe for a model of ``num_layers`` layers; None takes the method's default. Raises
        :class:`FineTuneError` with a plain message for any value out of range."""
        m = parse_method(method, num_layers)
        if task not in TASKS:
            raise FineTuneError(f"The task must be one of {', '.join(TASKS)}; got “{short(str(task), 20)}”.")
        layer = (num_layers if layer is None else int(layer)) if m.kind == "head" else -1
        if m.kind == "head" and not 0 <= layer <= num_layers:
            raise FineTuneError(f"The head reads one hidden state: 0 (embeddings) to {num_layers}; got {layer}.")
        rank = (DEFAULT_RANK if rank is None else int(rank)) if m.kind == "lora" else 0
        if m.kind == "lora" and not 1 <= rank <= MAX_RANK:
            raise FineTuneError(f"LoRA's rank must be 1 to {MAX_RANK}; got {rank}.")
        lr = DEFAULT_LR[m.kind] if (lr is None or not m.trains_model) else float(lr)
        if m.trains_model and not 0.0 < lr <= 0.1:
            raise FineTuneError(f"The learning rate must lie above 0 and at most 0.1; got {lr:g}.")
        head_lr = DEFAULT_HEAD_LR if head_lr is None else float(head_lr)
        if not 0.0 < head_lr <= 1.0:
            raise FineTuneError(f"The head's learning rate must lie above 0 and at most 1; got {head_lr:g}.")
        checks = (
            ("epochs", epochs, 1, MAX_EPOCHS),
            ("patience", patience, 0, MAX_EPOCHS),
            ("batch size", batch, 1, 512),
            ("seed", seed, 0, MAX_SEED),
            ("held-out percent", heldout, 1, 99),
            ("split seed", split_seed, 0, MAX_SEED),
        )
        for what, value, lo, hi in checks:
            if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
                raise FineTuneError(f"The {what} must be a whole number from {lo} to {hi:,}; got {value}.")
        return cls(
            digest=str(digest),
            task=task,
            method=m.name,
            layer=layer,
            rank=rank,
            lr=lr,
            head_lr=head_lr,
            epochs=epochs,
            patience=patience,
            batch=batch,
            seed=seed,
            heldout=heldout,
            split_seed=split_seed,
            shuffled=bool(shuffled),
        )

    @property
    def parsed(self) -> Method:
        return parse_method(self.method)

    def with_seed(self, seed: int) -> Recipe:
        return replace(self, seed=int(seed))

    # ------------------------------------------------------------------ the string form
    @property
    def key(self) -> str:
        """The short string (module docstring); :meth:`from_key` reads it back to an equal recipe."""
        method = self.method
        if self.method == "head":
            method = f"head@{self.layer}"
        elif self.method == "lora":
            method = f"lora-{self.rank}"
        return (
            f"{self.digest}_{self.task}_{method}_lr{self.lr:g}_hlr{self.head_lr:g}_e{self.epochs}_p{self.patience}"
            f"_b{self.batch}_s{self.seed}_h{self.heldout}-{self.split_seed}{'_shuffled' if self.shuffled else ''}"
        )

    @classmethod
    def from_key(cls, key: str) -> Recipe:
        """The recipe a :attr:`key` names. Raises :class:`FineTuneError` for a malformed one."""
        m = _KEY_RE.match(str(key or "").strip())
        if not m:
            raise FineTuneError(f"“{short(str(key), 60)}” is not a fine-tuning recipe.")
        g = m.groupdict()
        method = g["method"]
        layer, rank = -1, 0
        if method.startswith("head@"):
            method, layer = "head", int(method[5:])
        elif method.startswith("lora-"):
            method, rank = "lora", int(method[5:])
        try:
            return cls(
                digest=g["digest"],
                task=g["task"],
                method=parse_method(method).name,
                layer=layer,
                rank=rank,
                lr=float(g["lr"]),
                head_lr=float(g["hlr"]),
                epochs=int(g["e"]),
                patience=int(g["p"]),
                batch=int(g["b"]),
                seed=int(g["s"]),
                heldout=int(g["h"]),
                split_seed=int(g["hs"]),
                shuffled=bool(g["shuffled"]),
            )
        except ValueError as err:
            raise FineTuneError(f"“{short(str(key), 60)}” is not a fine-tuning recipe.") from err

    # ------------------------------------------------------------------ words
    def method_phrase(self) -> str:
        """The method in words: "top 2 layers", "a head on layer 6", "LoRA rank 8", ..."""
        m = self.parsed
        if m.kind == "top":
            return f"top {m.k} layer{'s' if m.k != 1 else ''}"
        if m.kind == "head":
            return "a head on the embeddings" if self.layer == 0 else f"a head on layer {self.layer}"
        return {"mix": "ELMo's layer mix", "lora": f"LoRA rank {self.rank}", "full": "all layers"}[m.kind]

    def describe(self, n_train: int, target: str, *, n_set: int | None = None, left_out: bool = False) -> str:
        """The fine-tuned model's name: "fine-tuned on 6 'bank' sentences, top 2 layers, 10 epochs, seed 0".

        ``n_set``: the set's size, to say which share of it trained the model ("on 6 of the 12 'bank'
        sentences"); ``left_out``: the name as the other pages show it, which leave those sentences out."""
        epochs = f"{self.epochs} epoch{'s' if self.epochs != 1 else ''}"
        stop = f" (early stop after {self.patience})" if self.patience else ""
        of = f"{n_train} of the {n_set}" if n_set is not None and n_set != n_train else f"{n_train}"
        plural = "s" if (n_set or n_train) != 1 else ""
        labels = " with shuffled labels" if self.shuffled else ""
        where = " (left out here)" if left_out else ""
        return (
            f"fine-tuned on {of} '{short(target, 30)}' sentence{plural}{labels}{where}, "
            f"{self.method_phrase()}, {epochs}{stop}, seed {self.seed}"
        )


_NUM = r"[0-9.e+-]+"
_KEY_RE = re.compile(
    rf"^(?P<digest>[0-9a-f]{{6,64}})_(?P<task>token|cls|mean)_(?P<method>head@\d{{1,3}}|lora-\d{{1,2}}|mix|full|top-\d{{1,3}})"
    rf"_lr(?P<lr>{_NUM})_hlr(?P<hlr>{_NUM})_e(?P<e>\d{{1,3}})_p(?P<p>\d{{1,3}})_b(?P<b>\d{{1,3}})_s(?P<s>\d{{1,4}})"
    rf"_h(?P<h>\d{{1,2}})-(?P<hs>\d{{1,4}})(?P<shuffled>_shuffled)?$"
)


def finetuned_key(model_name: str, recipe: Recipe) -> str:
    """The model key of a fine-tuned model: ``<id>#finetuned-<recipe key>``."""
    return f"{model_name}{FINETUNED_TAG}{recipe.key}"


def split_finetuned_key(key: str) -> tuple[str, Recipe | None]:
    """(base model key, recipe) from a key made by :func:`finetuned_key`; (key, None) for any other key."""
    if FINETUNED_TAG not in str(key):
        return str(key), None
    base, _, tail = str(key).rpartition(FINETUNED_TAG)
    return base, Recipe.from_key(tail)
