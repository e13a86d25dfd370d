"""Fine-tuning: how fast the page's default run is, which word makes the default task, and what each method
scores on real word-sense data.

    python benchmarks/finetune_bench.py --only speed --repeats 5      # the page's default run, as it runs it
    nice -n 19 python benchmarks/finetune_bench.py --only default     # candidate words for the default task
    nice -n 19 python benchmarks/finetune_bench.py --only wsd         # the CoarseWSD-20 table, 3 seeds
    python -m benchmarks run --section finetune                       # all three, into the results file

**speed**: the page's default run (the default task, :mod:`lib.finetune.default_task`; the bank preset with
``--preset bank``): the default method and epochs, seed 0, as the page runs it (the pretrained vectors already
read): seconds to the first progress report (epoch 0, before any step), to epoch 1, to the end of training, and
for the whole run (training, the frozen head on the same split, opening the fine-tuned model, the
layer-by-layer comparison with its CKA floors); median of ``--repeats`` runs after a warm-up, on one torch
thread (the library's default); wall and CPU seconds (CPU seconds move less with the load).

**default**: for each candidate word, the page's own task on it: the data preset
(:func:`lib.inputs.presets.data_preset`: ``DATA_PER_SENSE`` sentences of each sense of at most ``DATA_MAX_WORDS``
words from the train file, seed ``DATA_SEED``), split as the page splits it (half trains, a quarter validates, a
quarter tests, split seed 0), and the page's defaults for the frozen model's layer mix and its default method,
top-2 (10 epochs, the head at 1e-3, no early stopping) under seeds 0, 1, 2, beside the frozen head (:mod:`lib.finetune.baseline`) under the same seeds. A word
passes when the head's mean test accuracy is at most 95 % on at least 20 test sentences and some method's margin
over the head is above 0 under every seed and its mean above that method's spread over the seeds.

**wsd**: the CoarseWSD-20 table. For each word (read by path from ``../shared/data/CoarseWSD-20``): a seeded
stratified sample of the train file trains (``--train-cap`` sentences, every sense at least
``min(its count, 8)``), a disjoint one validates (``--val-cap``), and a seeded stratified sample of the test file
tests (``--test-cap``); sentences of at most ``--max-words`` words, sample seed 0. Columns: the dataset paper's
1-NN (nearest sense centroid on frozen vectors, the last four layers summed, centroids from the same training
sample), the frozen head (:mod:`lib.finetune.baseline`: early stopping on validation), ELMo's layer mix, the top
two layers, LoRA (rank 8) and the full model, each ``--epochs`` epochs (default 10), batch 16, the library's
default rates for the model (5e-5; LoRA 5e-4) and ``--head-lr`` for the head (1e-2), no early stopping; test
accuracy under seeds 0, 1, 2 (the split stays; the initialisation and the data order change), all on one torch
thread. Each run prints a JSON line as it ends, so a long table can be followed; ``--words`` and ``--methods``
run part of it.
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
SEEDS = (0, 1, 2)
CANDIDATES = ("crane", "pound", "bass", "apple", "bank", "yard", "club", "mole")
DEFAULT_METHODS = ("mix", "top-2")
# the dataset paper's nearest-sense-centroid accuracy with bert-base-uncased (Loureiro et al. 2021)
PAPER_BERT_BASE = {"bank": 0.996, "apple": 0.990, "crane": 0.936, "pound": 0.866, "bass": 0.807}


def _emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def speed(repeats: int, preset_id: str | None) -> dict:
    from lib.finetune.default_task import METHOD, task_preset
    from lib.finetune.recipe import Recipe
    from lib.finetune.run import prepare_set, run_recipe
    from lib.inputs.presets import preset_by_id
    from lib.models.encoder import load_encoder

    enc = load_encoder()
    preset = preset_by_id(preset_id) if preset_id else task_preset()
    if preset is None:
        preset = preset_by_id("bank")
    ss = preset.sentence_set()
    t = time.perf_counter()
    prepared = prepare_set(enc, ss)
    prepare_s = time.perf_counter() - t
    recipe = Recipe.make(prepared.split.digest, METHOD, num_layers=enc.num_layers, seed=0)
    epochs = recipe.epochs
    split = prepared.split
    out = {"preset": preset.id, "method": METHOD, "epochs": epochs, "n_train": len(split.train),
           "n_validation": len(split.validation), "n_test": len(split.test), "prepare_s": round(prepare_s, 3)}  # fmt: skip
    rows = []
    for k in range(repeats + 1):  # the first is a warm-up
        marks: dict[int, float] = {}
        t0, c0 = time.perf_counter(), time.process_time()

        def progress(rep, marks=marks, t0=t0, c0=c0):
            marks.setdefault(rep.epoch, time.perf_counter() - t0)
            if rep.epoch == epochs:
                marks[-1] = time.process_time() - c0

        result = run_recipe(enc, prepared, recipe, progress=progress)
        total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
        if k:
            rows.append({"first_progress_s": marks[0], "epoch1_s": marks[1], "trained_s": marks[epochs],
                         "run_s": total, "trained_cpu_s": marks[-1], "run_cpu_s": total_cpu,
                         "test_acc": result.run.test_acc, "head_test_acc": result.baseline.test_acc,
                         "loadavg": os.getloadavg()[0]})  # fmt: skip
            _emit({"speed_run": k, **{key: round(v, 3) for key, v in rows[-1].items()}})
    out |= {key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]}
    out["runs"] = [{k: round(v, 3) for k, v in r.items()} for r in rows]
    return out


def default_candidates(words, methods, seeds) -> dict:
    """The page's default task on each candidate word (see the module)."""
    from lib.finetune.baseline import baseline_run
    from lib.finetune.recipe import Recipe
    from lib.finetune.run import prepare_set
    from lib.finetune.train import TRAIN_THREADS, torch_threads, train
    from lib.inputs.presets import DATA_MAX_WORDS, DATA_PER_SENSE, DATA_SEED, data_preset
    from lib.models.encoder import load_encoder

    enc = load_encoder()
    L = enc.num_layers
    table = []
    for word in words:
        preset = data_preset(word)
        if preset is None:
            _emit({"word": word, "skipped": "no data"})
            continue
        prepared = prepare_set(enc, preset.sentence_set())
        split = prepared.split
        row = {"word": word, "n": len(split.sentences), "n_train": len(split.train), "n_validation": len(split.validation),
               "n_test": len(split.test), "senses": len(split.classes)}  # fmt: skip
        with torch_threads(TRAIN_THREADS):
            heads = []
            for s in seeds:
                r = Recipe.make(split.digest, "head", num_layers=L, seed=s)
                heads.append(baseline_run(enc, prepared, r).test_acc)
            row["head"] = [round(x, 4) for x in heads]
            _emit({"word": word, "method": "head", "test_acc": row["head"]})
            for method in methods:
                accs, secs = [], []
                for s in seeds:
                    r = Recipe.make(split.digest, method, num_layers=L, seed=s)
                    t = time.perf_counter()
                    run = train(enc, prepared, r, threads=None)
                    secs.append(time.perf_counter() - t)
                    accs.append(run.test_acc)
                margins = np.array(accs) - np.array(heads)
                spread = max(accs) - min(accs)
                row[method] = {"test_acc": [round(x, 4) for x in accs], "seconds": [round(x, 1) for x in secs],
                               "margin_mean": round(float(margins.mean()), 4), "spread": round(spread, 4),
                               "beats_head": bool(np.all(margins > 1e-9) and margins.mean() > spread + 1e-9)}  # fmt: skip
                _emit({"word": word, "method": method, **row[method]})
        row["passes"] = bool(np.mean(heads) <= 0.95 and len(split.test) >= 20
                             and any(row[m]["beats_head"] for m in methods))  # fmt: skip
        table.append(row)
    return {"per_sense": DATA_PER_SENSE, "max_words": DATA_MAX_WORDS, "sample_seed": DATA_SEED,
            "seeds": list(seeds), "methods": ["head", *methods], "words": table}  # fmt: skip


def _stratified(senses, cap: int, rng, floor: int = 8, exclude=()) -> list[int]:
    """Indices of a sample of at most ``cap`` items in proportion to each sense, each sense at least
    ``min(its count, floor)``, none of ``exclude``; sorted."""
    names = sorted(set(senses))
    idx = {s: [i for i, x in enumerate(senses) if x == s and i not in exclude] for s in names}
    n = sum(len(v) for v in idx.values())
    if n <= cap:
        return sorted(i for v in idx.values() for i in v)
    take = {s: max(min(len(idx[s]), floor), round(cap * len(idx[s]) / n)) for s in names}
    while sum(take.values()) > cap:
        biggest = max(names, key=lambda s: take[s])
        take[biggest] -= 1
    out = []
    for s in names:
        out += [int(i) for i in rng.permutation(idx[s])[: take[s]]]
    return sorted(out)


def _short(split, max_words: int) -> list[int]:
    return [i for i, s in enumerate(split.sentences) if len(s.split(" ")) <= max_words]


def wsd(words, methods, seeds, *, train_cap: int, val_cap: int, test_cap: int, max_words: int, epochs: int,
        head_lr: float) -> dict:  # fmt: skip
    from lib.finetune.baseline import baseline_recipe
    from lib.finetune.data import Split, prepare, set_digest
    from lib.finetune.recipe import Recipe
    from lib.finetune.train import TRAIN_THREADS, torch_threads, train
    from lib.inputs.wsd_data import load_split
    from lib.models.encoder import load_encoder
    from lib.stats.readout import centroid_readout

    enc = load_encoder()
    L = enc.num_layers
    table = []
    for word in words:
        tr_all, te_all = load_split(word, "train"), load_split(word, "test")
        rng = np.random.default_rng(0)
        tr_ok, te_ok = _short(tr_all, max_words), _short(te_all, max_words)
        tr_senses = [tr_all.senses[i] for i in tr_ok]
        tr = [tr_ok[i] for i in _stratified(tr_senses, train_cap, rng)]
        va = [tr_ok[i] for i in _stratified(tr_senses, val_cap, rng, floor=4, exclude={tr_ok.index(j) for j in tr})]
        te = [te_ok[i] for i in _stratified([te_all.senses[i] for i in te_ok], test_cap, rng)]
        sentences = [tr_all.sentences[i] for i in tr + va] + [te_all.sentences[i] for i in te]
        senses = [tr_all.senses[i] for i in tr + va] + [te_all.senses[i] for i in te]
        n_tr, n_va = len(tr), len(va)
        split = Split(word, tuple(sentences), tuple(senses), tuple(range(n_tr)), tuple(range(n_tr, n_tr + n_va)),
                      tuple(range(n_tr + n_va, len(sentences))), 0, 0.0, set_digest(word, sentences, senses))  # fmt: skip
        t = time.perf_counter()
        prepared = prepare(enc, split, "token")
        row = {"word": word, "n_train": n_tr, "n_validation": n_va, "n_test": len(te), "train_pool": len(tr_all),
               "test_pool": len(te_all), "senses": {s: senses[:n_tr].count(s) for s in split.classes},
               "paper_1nn_bert_base": PAPER_BERT_BASE.get(word), "encode_s": round(time.perf_counter() - t, 1)}  # fmt: skip
        last4 = prepared.features[:, L - 3 :].sum(axis=1, keepdims=True)
        test_idx = list(split.test)
        ro = centroid_readout(last4[:n_tr], senses[:n_tr], last4[test_idx], [senses[i] for i in test_idx])
        row["1nn"] = round(float(ro.accuracy[0]), 4)  # no seed: nothing is drawn
        _emit({"word": word, "method": "1nn", "test_acc": row["1nn"]})
        with torch_threads(TRAIN_THREADS):
            for method in methods:
                accs, secs, train_accs = [], [], []
                for s in seeds:
                    if method == "head":
                        r = baseline_recipe(Recipe.make(split.digest, "head", num_layers=L, seed=s), L)
                    else:
                        r = Recipe.make(split.digest, method, num_layers=L, epochs=epochs, seed=s, head_lr=head_lr)
                    t = time.perf_counter()
                    run = train(enc, prepared, r, each_epoch=method == "head", threads=None)
                    secs.append(time.perf_counter() - t)
                    accs.append(run.test_acc)
                    train_accs.append(run.final.train_acc)
                    _emit({"word": word, "method": method, "seed": s, "test_acc": round(run.test_acc, 4),
                           "train_acc": round(run.final.train_acc, 4), "s": round(secs[-1], 1),
                           "loadavg": round(os.getloadavg()[0], 1)})  # fmt: skip
                row[method] = {"test_acc": [round(x, 4) for x in accs], "mean": round(float(np.mean(accs)), 4),
                               "spread": round(max(accs) - min(accs), 4), "train_acc": [round(x, 4) for x in train_accs],
                               "seconds": [round(x, 1) for x in secs]}  # fmt: skip
        table.append(row)
    return {"train_cap": train_cap, "val_cap": val_cap, "test_cap": test_cap, "max_words": max_words, "epochs": epochs,
            "head_lr": head_lr, "seeds": list(seeds), "methods": ["1nn", *methods], "words": table}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="speed,default,wsd")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--preset", default=None, help="speed: a preset's id (default: the page's default task)")
    ap.add_argument("--words", default=",".join(WORDS))
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--train-cap", type=int, default=48)
    ap.add_argument("--val-cap", type=int, default=24)
    ap.add_argument("--test-cap", type=int, default=100)
    ap.add_argument("--max-words", type=int, default=48)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--head-lr", type=float, default=1e-2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    out = {"meta": run_meta() | {"commit": git_commit()}}
    parts = a.only.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    if "speed" in parts:
        out["speed"] = speed(a.repeats, a.preset)
        _emit({"speed": {k: v for k, v in out["speed"].items() if k != "runs"}})
    if "default" in parts:
        out["default"] = default_candidates(a.candidates.split(","), DEFAULT_METHODS, seeds)
    if "wsd" in parts:
        out["wsd"] = wsd(a.words.split(","), a.methods.split(","), seeds, train_cap=a.train_cap, val_cap=a.val_cap,
                         test_cap=a.test_cap, max_words=a.max_words, epochs=a.epochs, head_lr=a.head_lr)  # fmt: skip
    out["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(out, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
