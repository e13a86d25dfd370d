"""Fine-tuning: how fast a run is, and what each method scores on real word-sense data.

    python benchmarks/finetune_bench.py --only speed --repeats 5      # the bank preset, top-2 + head, 20 epochs
    python benchmarks/finetune_bench.py --only wsd                    # CoarseWSD-20: five words, six methods
    python -m benchmarks run --section finetune                       # both, into the results file

**speed**: the default preset (bank: 8 training, 4 held-out sentences), ``top-2`` with the head, 20 epochs,
as the page runs it (the pretrained vectors already cached): seconds to the first progress report (epoch 0,
before any step), to epoch 1, to the end of training, and for the whole run (training, opening the
fine-tuned model, the layer-by-layer comparison); median of ``--repeats`` runs after a warm-up, on one torch
thread (the library's default) and on two; wall and CPU seconds (CPU seconds move less with the load).

**wsd**: for each word of CoarseWSD-20 (read by path from ``../shared/data/CoarseWSD-20``), a seeded stratified
sample of the train split (``--train-cap`` sentences, every sense at least ``min(its count, 8)``) trains,
and a seeded stratified sample of the test split (``--test-cap``, default 200; ``--train-cap`` default 64) tests: accuracy of the nearest sense
centroid on frozen vectors, all on one torch thread, (the dataset paper's method: the last four layers summed, centroids from the same
training sample), of a head on the last layer, ELMo's layer mix, the top two layers, LoRA (rank 8) and the
full model, each ``--epochs`` epochs (default 10), batch 16, seed 0, the library's default rates for the
model (5e-5; LoRA 5e-4) and 1e-2 for the head (``--head-lr``), no early stopping (the test sentences are
never looked at before the end). The page's head rate, 1e-3, suits a dozen sentences watched epoch by epoch;
on 64 sentences with one sense seven times as common as the other (bank) its 40 steps leave the head
predicting the commonest sense alone (2026-11-27: train 87.5 %, the majority share).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.runs import git_commit, run_meta  # noqa: E402

WORDS = ("bank", "apple", "crane", "pound", "bass")
METHODS = ("head", "mix", "top-2", "lora", "full")
# the dataset paper's nearest-sense-centroid accuracy with bert-base-uncased (Loureiro et al. 2021)
PAPER_BERT_BASE = {"bank": 0.996, "apple": 0.990, "crane": 0.936, "pound": 0.866, "bass": 0.807}


def speed(repeats: int, thread_counts=(1, 2)) -> dict:
    from lib.finetune.recipe import Recipe
    from lib.finetune.run import prepare_set, run_recipe
    from lib.inputs.presets import preset_by_id
    from lib.models.encoder import load_encoder

    enc = load_encoder()
    ss = preset_by_id("bank").sentence_set()
    t = time.perf_counter()
    prepared = prepare_set(enc, ss)
    prepare_s = time.perf_counter() - t
    recipe = Recipe.make(prepared.split.digest, "top-2", num_layers=enc.num_layers, epochs=20, seed=0)
    out = {"preset": "bank", "method": "top-2", "epochs": 20, "n_train": len(prepared.split.train),
           "n_heldout": len(prepared.split.heldout), "prepare_s": round(prepare_s, 3)}  # fmt: skip
    for threads in thread_counts:
        rows = []
        for k in range(repeats + 1):  # the first is a warm-up
            marks: dict[int, float] = {}
            t0, c0 = time.perf_counter(), time.process_time()

            def progress(rep, marks=marks, t0=t0, c0=c0):
                marks.setdefault(rep.epoch, time.perf_counter() - t0)
                if rep.epoch == 20:
                    marks[-1] = time.process_time() - c0

            result = run_recipe(enc, prepared, recipe, progress=progress, threads=threads)
            total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
            if k:
                rows.append({"first_progress_s": marks[0], "epoch1_s": marks[1], "trained_s": marks[20],
                             "run_s": total, "trained_cpu_s": marks[-1], "run_cpu_s": total_cpu,
                             "heldout_acc": result.run.final.heldout_acc})  # fmt: skip
        out[f"threads_{threads}"] = {
            key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]
        } | {"runs": [{k: round(v, 3) for k, v in r.items()} for r in rows]}
    return out


def _stratified(senses, cap: int, seed: int, floor: int = 8) -> list[int]:
    """Indices of a seeded sample of at most ``cap`` items in proportion to each sense, each sense at least
    ``min(its count, floor)``; sorted."""
    rng = np.random.default_rng(seed)
    names = sorted(set(senses))
    idx = {s: [i for i, x in enumerate(senses) if x == s] for s in names}
    n = len(senses)
    if n <= cap:
        return list(range(n))
    take = {s: max(min(len(idx[s]), floor), round(cap * len(idx[s]) / n)) for s in names}
    while sum(take.values()) > cap:
        biggest = max(names, key=lambda s: take[s])
        take[biggest] -= 1
    out = []
    for s in names:
        out += [int(i) for i in rng.permutation(idx[s])[: take[s]]]
    return sorted(out)


def wsd(words, methods, train_cap: int, test_cap: int, epochs: int, head_lr: float) -> dict:
    import torch

    from lib.finetune.data import Split, prepare, set_digest
    from lib.finetune.recipe import Recipe
    from lib.finetune.train import train
    from lib.inputs.wsd_data import load_split
    from lib.models.encoder import load_encoder
    from lib.stats.readout import centroid_readout

    torch.set_num_threads(1)  # this process's own: one core, as a training run gets (lib.finetune.train)
    enc = load_encoder()
    L = enc.num_layers
    table = []
    for word in words:
        tr_all, te_all = load_split(word, "train"), load_split(word, "test")
        tr = _stratified(tr_all.senses, train_cap, 0)
        te = _stratified(te_all.senses, test_cap, 0)
        sentences = [tr_all.sentences[i] for i in tr] + [te_all.sentences[i] for i in te]
        senses = [tr_all.senses[i] for i in tr] + [te_all.senses[i] for i in te]
        split = Split(word, tuple(sentences), tuple(senses), tuple(range(len(tr))),
                      tuple(range(len(tr), len(sentences))), 0, 0.0, set_digest(word, sentences, senses))  # fmt: skip
        t = time.perf_counter()
        prepared = prepare(enc, split, "token")
        row = {"word": word, "n_train": len(tr), "n_test": len(te), "train_pool": len(tr_all), "test_pool": len(te_all),
               "senses": {s: senses[: len(tr)].count(s) for s in split.classes},
               "paper_centroid_bert_base": PAPER_BERT_BASE.get(word), "encode_s": round(time.perf_counter() - t, 1)}  # fmt: skip
        last4 = prepared.features[:, L - 3 :].sum(axis=1, keepdims=True)
        ro = centroid_readout(last4[: len(tr)], senses[: len(tr)], last4[len(tr) :], senses[len(tr) :])
        row["centroid"] = round(float(ro.accuracy[0]), 4)
        row["seconds"] = {}
        for method in methods:
            recipe = Recipe.make(split.digest, method, num_layers=L, epochs=epochs, seed=0, head_lr=head_lr)
            t = time.perf_counter()
            run = train(enc, prepared, recipe, each_epoch=False)
            row[method] = round(run.final.heldout_acc, 4)
            row[f"{method}_train"] = round(run.final.train_acc, 4)
            row["seconds"][method] = round(time.perf_counter() - t, 1)
            print(json.dumps({"word": word, "method": method, "test_acc": row[method],
                              "train_acc": row[f"{method}_train"], "s": row["seconds"][method]}), flush=True)  # fmt: skip
        table.append(row)
    return {"train_cap": train_cap, "test_cap": test_cap, "epochs": epochs, "head_lr": head_lr, "methods": ["centroid", *methods],
            "words": table}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="speed,wsd")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--words", default=",".join(WORDS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--train-cap", type=int, default=64)
    ap.add_argument("--test-cap", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--head-lr", type=float, default=1e-2)
    ap.add_argument("--threads", default="1,2", help="torch thread counts the speed part measures")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    out = {"meta": run_meta() | {"commit": git_commit()}}
    parts = a.only.split(",")
    if "speed" in parts:
        out["speed"] = speed(a.repeats, [int(x) for x in a.threads.split(",")])
        print(json.dumps({"speed": {k: v for k, v in out["speed"].items()}}), flush=True)
    if "wsd" in parts:
        out["wsd"] = wsd(a.words.split(","), a.methods.split(","), a.train_cap, a.test_cap, a.epochs, a.head_lr)
    out["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(out, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
