"""The decoder's compute beside the encoder's: CPU per sentence against a bare forward pass, faithfulness, memory.

    python benchmarks/decoder_speed.py                  # prints the tables (--out FILE: JSON too)
    python benchmarks/decoder_speed.py --repeats 7 --threads 1,2
    python -m benchmarks run --section decoder          # this and benchmarks/decoder_pages.py

Needs the decoder pack (``python -m lib.models download``). Three measurements, each against a floor taken in
the same run:

1. **CPU per sentence** (``time.process_time``, every thread of the process), ``encode(..., attentions=False)``
   of a set in one call ("batched", as a set is encoded) and in one call per sentence ("one by one", as the
   Attention page and an occlusion's original run), for the encoder and the decoder on the same sentences (the
   default preset; the reference corpus's first 24, which the decoder's Anisotropy page encodes). The floor is a
   bare forward pass of the same model object (its tokenizer, then its transformers body with
   ``output_hidden_states``), so ``encode()``'s own overhead shows too. Medians over ``--repeats`` rounds, the
   four runs interleaved in each. Target: the decoder's encode() at most 10× the encoder's (12× at most), both
   ways. With ``--threads 1,2`` the same at two torch threads (the server runs one: ui/startup.py).
2. **Faithfulness**: the decoder's vectors against a float32 reference, the pack read by plain transformers in
   float32 (none of Context Lens's modules), cosine at every hidden state: the target's vector ("bank" in the
   sentences tests/test_decoder.py works by hand) and every ordinary word piece of the 24 corpus sentences
   (the smallest over them, per hidden state). For the default arithmetic and for
   ``CONTEXT_LENS_DECODER_DTYPE=bfloat16``. Target: >= 0.999 at every hidden state.
3. **Memory**: RSS of a fresh process (one per row) before and after loading each model and after encoding the
   default preset, and its peak (VmHWM): what the decoder holds resident, for both arithmetics.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.runs import git_commit, median  # noqa: E402  (the repository root is put on the path first)

CORPUS_SENTENCES = 24  # lib.inputs.corpus.DECODER_CORPUS_SENTENCES: what the decoder's Anisotropy page encodes
BY_HAND = [  # tests/test_decoder.py's sentences, target "bank"
    "The bank of the river flooded.",
    "The bank of the city flooded.",
    "A [riverbank] opened.",
    "We sat on the bank and watched the water rise.",
]


def _sets() -> dict[str, list[str]]:
    from lib.inputs.corpus import load_reference_corpus
    from lib.inputs.presets import default_preset

    return {
        "default preset": [s for _, s in default_preset().rows],
        f"corpus, first {CORPUS_SENTENCES}": list(load_reference_corpus().sentences[:CORPUS_SENTENCES]),
    }


def _bare(model, sentences: list[str]) -> None:
    """A bare forward pass: the tokenizer, then the transformers body with hidden states (no attentions)."""
    import torch

    batch = model.tokenizer(sentences, return_tensors="pt", padding=True, truncation=True, max_length=model.max_tokens)
    inputs = dict(batch)
    if model.family == "decoder":
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "use_cache": False}
    with torch.inference_mode():
        model._body()(**inputs, output_hidden_states=True, output_attentions=False)


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def speed(models: dict, sets: dict[str, list[str]], repeats: int, threads: int) -> list[dict]:
    """ms of CPU per sentence: encode() and the bare pass, batched and one by one, medians over ``repeats``."""
    import torch

    torch.set_num_threads(threads)
    rows = []
    for set_name, sents in sets.items():
        runs: dict[tuple, list[float]] = {}
        ways = {
            "encode, batched": lambda m, sents=sents: m.encode(sents, attentions=False),
            "encode, one by one": lambda m, sents=sents: [m.encode([s], attentions=False) for s in sents],
            "bare, batched": lambda m, sents=sents: _bare(m, sents),
            "bare, one by one": lambda m, sents=sents: [_bare(m, [s]) for s in sents],
        }
        for m in models.values():  # warm both paths of both models
            ways["encode, batched"](m)
            ways["bare, one by one"](m)
        load = [round(x, 2) for x in os.getloadavg()]
        for r in range(repeats):
            order = list(models.items()) if r % 2 == 0 else list(reversed(models.items()))
            for family, m in order:
                for way, fn in ways.items():
                    runs.setdefault((family, way), []).append(_cpu(lambda fn=fn, m=m: fn(m)) / len(sents) * 1000)
        for way in ways:
            enc, dec = median(runs[("encoder", way)]), median(runs[("decoder", way)])
            rows.append({
                "set": set_name, "sentences": len(sents), "threads": threads, "what": way,
                "encoder_ms": round(enc, 2), "decoder_ms": round(dec, 2), "ratio": round(dec / enc, 2),
                "encoder_runs": [round(x, 2) for x in runs[("encoder", way)]],
                "decoder_runs": [round(x, 2) for x in runs[("decoder", way)]],
                "loadavg_before": load, "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            })  # fmt: skip
            print(json.dumps({k: v for k, v in rows[-1].items() if not k.endswith("_runs")}), flush=True)
    return rows


def _cosines(a, b):
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def faithfulness(corpus: list[str]) -> dict:
    """Per hidden state, the smallest cosine to the float32 reference: targets and corpus word pieces, both arithmetics."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from lib.models import DECODER_MODEL, load_model
    from lib.models.pack import installed_pack

    torch.set_num_threads(1)
    reference = AutoModelForCausalLM.from_pretrained(
        str(installed_pack()), dtype=torch.float32, attn_implementation="eager"
    ).model

    def ref_states(ids) -> np.ndarray:  # (K, n, hidden)
        with torch.inference_mode():
            out = reference(input_ids=torch.tensor([list(ids)]), output_hidden_states=True)
        return torch.stack(out.hidden_states)[:, 0].numpy()

    out = {}
    before = os.environ.get("CONTEXT_LENS_DECODER_DTYPE")
    for arithmetic in ("float32", "bfloat16"):
        os.environ["CONTEXT_LENS_DECODER_DTYPE"] = arithmetic
        model = load_model(DECODER_MODEL)
        tv = model.target_vectors(BY_HAND, "bank")
        targets = np.stack([
            _cosines(tv.vectors[i], ref_states(tv.encoding.token_ids[i])[:, sp.vector_indices[0]])
            for i, sp in enumerate(tv.spans)
        ]).min(axis=0)  # fmt: skip
        enc = model.encode(corpus, attentions=False)
        pieces = np.concatenate([
            _cosines(h[:, ~s], ref_states(ids)[:, ~s]) for h, s, ids in zip(enc.hidden_states, enc.special, enc.token_ids, strict=True)
        ], axis=1)  # fmt: skip  (K, every ordinary piece)
        out[arithmetic] = {
            "targets_min_per_layer": [round(float(x), 6) for x in targets],
            "pieces_min_per_layer": [round(float(x), 6) for x in pieces.min(axis=1)],
            "pieces_p01_per_layer": [round(float(x), 6) for x in np.percentile(pieces, 1, axis=1)],
            "pieces": int(pieces.shape[1]),
        }
        del model, tv, enc
    if before is None:
        os.environ.pop("CONTEXT_LENS_DECODER_DTYPE", None)
    else:
        os.environ["CONTEXT_LENS_DECODER_DTYPE"] = before
    return out


_MEMORY_CHILD = """
import json, os, sys
sys.path.insert(0, {root!r})
import torch
torch.set_num_threads(1)
from lib.inputs.presets import default_preset
from lib.models import load_model
from lib.serving.memory import release_memory

def mb(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) // 1024

before = mb("VmRSS")
model = load_model({name!r})
release_memory()
loaded = mb("VmRSS")
model.encode([s for _, s in default_preset().rows], attentions=True)
release_memory()
print(json.dumps({{"rss_before_mb": before, "rss_after_load_mb": loaded, "rss_after_set_mb": mb("VmRSS"),
                  "peak_mb": mb("VmHWM")}}))
"""


def memory() -> list[dict]:
    """A fresh process per row: RSS before and after loading the model, after the default preset, its peak."""
    from lib.models import DECODER_MODEL

    rows = []
    for label, name, arithmetic in [("encoder", None, ""), ("decoder", DECODER_MODEL, "float32"),
                                    ("decoder", DECODER_MODEL, "bfloat16")]:  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(ROOT), CONTEXT_LENS_DECODER_DTYPE=arithmetic)
        code = _MEMORY_CHILD.format(root=str(ROOT), name=name)
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=900)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"the memory child failed:\n{proc.stderr[-2000:]}")
        rows.append({"model": label, "arithmetic": arithmetic or "float32",
                     **json.loads(proc.stdout.strip().splitlines()[-1])})  # fmt: skip
    return rows


def _layers(values: list[float]) -> str:
    lo = min(range(len(values)), key=lambda k: values[k])
    return f"{values[lo]:.6f} (hidden state {lo})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="torch threads, comma-separated (the server runs 1)")
    ap.add_argument("--only", default="speed,faithfulness,memory")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    only = set(a.only.split(","))

    from lib.models import DECODER_MODEL, load_model

    result: dict = {"git_commit": git_commit(), "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
    sets = _sets()
    if "speed" in only:
        models = {"encoder": load_model(None), "decoder": load_model(DECODER_MODEL)}
        result["speed"] = [row for t in a.threads.split(",") for row in speed(models, sets, a.repeats, int(t))]
        del models
        print("| sentences | torch threads | per sentence, ms of CPU | encoder | decoder | decoder ÷ encoder |")
        print("| --- | --: | --- | --: | --: | --: |")
        for r in result["speed"]:
            print(f"| {r['set']} ({r['sentences']}) | {r['threads']} | {r['what']} | {r['encoder_ms']:.1f} | "
                  f"{r['decoder_ms']:.1f} | {r['ratio']:.1f} |")  # fmt: skip
    if "faithfulness" in only:
        result["faithfulness"] = faithfulness(sets[f"corpus, first {CORPUS_SENTENCES}"])
        print("\n| arithmetic | smallest cosine to float32, the targets | every ordinary piece of the corpus sentences |")
        print("| --- | --- | --- |")
        for arithmetic, f in result["faithfulness"].items():
            print(f"| {arithmetic} | {_layers(f['targets_min_per_layer'])} | {_layers(f['pieces_min_per_layer'])} "
                  f"({f['pieces']} pieces) |")  # fmt: skip
    if "memory" in only:
        result["memory"] = memory()
        print("\n| model | arithmetic | RSS before | after load | after the preset | peak |")
        print("| --- | --- | --: | --: | --: | --: |")
        for m in result["memory"]:
            print(f"| {m['model']} | {m['arithmetic']} | {m['rss_before_mb']} MB | {m['rss_after_load_mb']} MB | "
                  f"{m['rss_after_set_mb']} MB | {m['peak_mb']} MB |")  # fmt: skip
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"\ncommit {result['git_commit']}, load average {result['loadavg_start']} -> {result['loadavg_end']}")
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
