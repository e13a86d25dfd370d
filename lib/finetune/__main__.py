"""Fine-tune from a shell, as a lecturer preparing a class would.

    python -m lib.finetune --json                                       # the page's default task
    python -m lib.finetune --preset bank --method top-2 --epochs 20 --seed 0 --json
    python -m lib.finetune --text my_set.txt --target crane --method lora --rank 4
    python -m lib.finetune --preset bank --method head --seeds 3
    python -m lib.finetune --model HuggingFaceTB/SmolLM2-135M-Instruct --method lora --preset bank

Without ``--preset`` or ``--text`` it runs the page's default task (:mod:`lib.finetune.default_task`: real
CoarseWSD-20 sentences read by path; the bank preset, with a note, where the data is not there). ``--text FILE``
holds one's own set in the sidebar's format (``sense | sentence`` lines, ``#`` comments); ``--target`` names the
word (else the preset's). ``--model`` takes a model id or folder, the decoder included. ``--json`` prints the run as
JSON: ``split`` (``train``, ``validation``, ``test``: lists of ``{sense, sentence}``), ``epochs[]`` with
``train_acc``, ``validation_acc``, ``train_loss``, ``validation_loss`` (and ``heldout_acc``, ``heldout_loss``, their
earlier names), ``test_acc`` (the kept weights, scored once), ``baseline`` (``method`` "head", its ``test_acc`` on
the same split), ``layers[]`` with ``layer``, ``cka``, ``cka_floor`` and ``weight_change``; the verdict and its
remedies; with ``--seeds N`` the spread. Without it, a short table. Bad input (a set, a setting, a model name)
prints a plain message and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lib.errors import ContextLensError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: the same plain message and exit code
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m lib.finetune", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--preset", default=None, help="a preset's id, e.g. bank (default: the page's default task)")
    src.add_argument("--text", metavar="FILE", help="one's own set: 'sense | sentence' lines")
    ap.add_argument("--target", help="the target word (needed with --text)")
    ap.add_argument("--model", default=None, help="model id or folder, the decoder included (default: the bundled "
                    "all-MiniLM-L6-v2)")  # fmt: skip
    ap.add_argument("--method", default="top-2", help="head, mix, top-K (e.g. top-2), lora or full")
    ap.add_argument("--shuffle-labels", action="store_true", help="the random-label control: the training "
                    "sentences' labels shuffled among them")  # fmt: skip
    ap.add_argument("--task", default="token", choices=["token", "cls", "mean"])
    ap.add_argument("--layer", type=int, default=None, help="the hidden state the head reads (method head)")
    ap.add_argument("--rank", type=int, default=None, help="LoRA's rank (default 8)")
    ap.add_argument("--lr", type=float, default=None, help="learning rate of the model (default by method)")
    ap.add_argument("--head-lr", type=float, default=None, help="learning rate of the head (default 1e-3)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--patience", type=int, default=0, help="early stopping on validation loss (0 = off)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heldout", type=int, default=50, help="percent of each sense held out, half of it for "
                    "validation and half for test")  # fmt: skip
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=0, help="also run seeds 0 … N-1 (and the head under each) and "
                    "report the spread")  # fmt: skip
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    ap.add_argument("--json", action="store_true", help="print the run as JSON")
    return ap


def _sentence_set(a):
    from lib.inputs.presets import preset_by_id
    from lib.inputs.sentences import parse_sentence_set

    if a.text:
        path = Path(a.text)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ContextLensError(f"Could not read {path}: {err.strerror if isinstance(err, OSError) else 'not UTF-8 text'}.") from err
        if not a.target:
            raise ContextLensError("Give the target word with --target (the word the sentences share).")
        ss = parse_sentence_set(text, a.target)
        if ss.problems:
            for p in ss.problems:
                print(f"{path}: {p}", file=sys.stderr)
        if not ss.sentences:
            raise ContextLensError(f"No usable sentence in {path}: each line is 'sense | sentence' with “{a.target}”.")
        return ss
    if a.preset is None:
        from lib.finetune.default_task import task_preset

        preset = task_preset()
        if preset is None:
            from lib.inputs.wsd_data import default_root

            print(f"note: CoarseWSD-20 is not at {default_root()}, so the default task cannot run; the bank preset "
                  "is used.", file=sys.stderr)  # fmt: skip
            preset = preset_by_id("bank")
    else:
        preset = preset_by_id(a.preset)
    if preset is None:
        from lib.inputs.presets import load_presets

        ids = ", ".join(p.id for p in load_presets())
        raise ContextLensError(f"No preset “{a.preset}”. Choose one of: {ids}.")
    ss = preset.sentence_set()
    if a.target and a.target != ss.target:
        raise ContextLensError(f"The preset “{preset.id}” is about “{ss.target}”; --target goes with --text.")
    return ss


def _num(x, fmt: str, width: int) -> str:
    return format(x, fmt).rjust(width) if x is not None else "—".rjust(width)


def _table(result, spread) -> str:
    lines = [result.name, ""]
    lines.append("epoch  train loss  validation loss  train acc  validation acc")
    for e in result.run.history:
        lines.append(f"{e.epoch:5d}  {e.train_loss:10.4f}  {e.validation_loss:15.4f}  {e.train_acc:9.0%}  "
                     f"{e.validation_acc:14.0%}")  # fmt: skip
    if result.comparison is not None:
        lines += ["", "layer    CKA  CKA floor  weight change  held-out readout before → after"]
        for row in result.comparison.rows():  # None where a number is undefined (vectors without variance)
            lines.append(
                f"{row['layer']:5d}  {_num(row['cka'], '.3f', 5)}  {_num(row['cka_floor'], '.3f', 9)}  "
                f"{_num(row['weight_change'], '.5f', 13)}  {_num(row['heldout_readout_before'], '.0%', 4)} → "
                f"{_num(row['heldout_readout_after'], '.0%', 4)}"
            )
    if result.run.mix is not None:
        lines += ["", "layer mix s_j: " + ", ".join(f"{x:.3f}" for x in result.run.mix) + f"; γ = {result.run.gamma:.3f}"]
    lines += ["", result.verdict.text]
    lines += [f"  try: {m.label}: {m.why}" for m in result.verdict.remedies]
    if spread is not None:
        lines.append("seeds: " + spread.text())
    lines.append(f"model key: {result.encoder.name if result.encoder is not None else '(unchanged model, a head on it)'}")
    lines.append(f"trains {result.run.trained_parameters:,} numbers; holds {result.held_bytes:,} bytes beyond the "
                 f"pretrained model; {result.seconds:.1f} s")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        ss = _sentence_set(a)
        if a.threads is not None:
            if not 1 <= a.threads <= 64:
                raise ContextLensError(f"--threads must be 1 to 64; got {a.threads}.")
            import torch

            torch.set_num_threads(a.threads)
        from lib.finetune.recipe import Recipe
        from lib.finetune.run import prepare_set, run_recipe
        from lib.finetune.seeds import seed_spread
        from lib.models.encoder import load_encoder

        encoder = load_encoder(a.model)
        # the settings are checked before the model reads the set
        Recipe.make("0" * 10, a.method, num_layers=encoder.num_layers, task=a.task, layer=a.layer, rank=a.rank,
                    lr=a.lr, head_lr=a.head_lr, epochs=a.epochs, patience=a.patience, batch=a.batch, seed=a.seed,
                    heldout=a.heldout, split_seed=a.split_seed, shuffled=a.shuffle_labels)  # fmt: skip
        if not 0 <= a.seeds <= 10:
            raise ContextLensError(f"--seeds runs 0 to 10 seeds; got {a.seeds}.")
        prepared = prepare_set(encoder, ss, task=a.task, heldout=a.heldout, split_seed=a.split_seed)
        recipe = Recipe.make(prepared.split.digest, a.method, num_layers=encoder.num_layers, task=a.task,
                             layer=a.layer, rank=a.rank, lr=a.lr, head_lr=a.head_lr, epochs=a.epochs,
                             patience=a.patience, batch=a.batch, seed=a.seed, heldout=a.heldout,
                             split_seed=a.split_seed, shuffled=a.shuffle_labels)  # fmt: skip

        def progress(rep):
            if not a.json:
                print(f"epoch {rep.epoch}: validation {rep.validation_acc:.0%} ({rep.seconds:.1f} s)", file=sys.stderr)

        result = run_recipe(encoder, prepared, recipe, progress=progress)
        spread = None
        if a.seeds:
            spread = seed_spread(encoder, prepared, recipe, range(a.seeds), done={recipe.seed: result.run},
                                 heads_done={recipe.seed: result.baseline} if result.baseline else None)  # fmt: skip
            result = result.with_spread(spread)
    except ContextLensError as err:  # FineTuneError, ModelLoadError, TargetError, ...
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if a.json:
        out = result.as_json()
        if spread is not None:
            out["seed_spread"] = spread.as_dict()
        print(json.dumps(out, ensure_ascii=False, indent=1))
    else:
        print(_table(result, spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
