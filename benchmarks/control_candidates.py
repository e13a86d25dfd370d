"""Which control answers "did training do this?": the trained model next to three weight controls.

    python benchmarks/control_candidates.py            # writes benchmarks/control_candidates.json

Candidates (lib.models.weights): BERT's initialiser (std 0.02, what ``weights="random"`` loaded), the trained
weights shuffled within each tensor, and each tensor drawn from a normal with its trained mean and std.
Each is measured with seed 0 and seed 1, the trained model once. Per model:

- ``attention_entropy``: per layer, the attention rows' entropy as a fraction of the uniform row's
  (log n), mean over heads, rows and the bank preset's 12 sentences (1.0 = every word attended equally).
- ``layer_change``: per layer ℓ ≥ 1, the mean over word pieces of |h_ℓ − h_{ℓ−1}| / |h_{ℓ−1}|: how much a
  layer changes each vector (the random initialiser's attention branch adds little).
- ``context_shift``: the occlusion of What moves the word (lib.stats.context.occlusion: each context word masked,
  1 − cos of the target's vector) at the last layer, the largest word per bank sentence: min / median / max
  over the 12 sentences.
- ``anisotropy``: mean cosine of the reference corpus's distinct word-piece sample (lib.inputs.corpus), raw, per
  layer (index 0 = the embedding output).
- ``sense_gap``: at the last layer, mean cosine of same-sense pairs minus different-sense pairs of the
  target, per preset, and the mean over the 12 presets.
"""

from __future__ import annotations

import json
import resource
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = Path(__file__).with_name("control_candidates.json")
SEEDS = (0, 1)


def _entropy_fraction(att: np.ndarray) -> np.ndarray:
    """(layers,) mean normalised entropy of the rows of one sentence's attentions (layers, heads, n, n)."""
    n = att.shape[-1]
    p = np.clip(att.astype(np.float64), 1e-12, 1.0)
    h = -(p * np.log(p)).sum(axis=-1)  # (layers, heads, n)
    return (h / np.log(n)).mean(axis=(1, 2))


def measure(enc, corpus_encoding_fn) -> dict:
    from lib.inputs.corpus import corpus_statistics
    from lib.inputs.presets import load_presets, preset_by_id
    from lib.stats.context import occlusion
    from lib.stats.geometry import anisotropy
    from lib.stats.similarity import cosine_matrix

    bank = preset_by_id("bank").sentence_set()
    encoding = enc.encode(list(bank.sentences), attentions=True)
    entropy = np.mean([_entropy_fraction(a) for a in encoding.attentions], axis=0)
    change = []
    for hs in encoding.hidden_states:
        hs = hs.astype(np.float64)
        num = np.linalg.norm(hs[1:] - hs[:-1], axis=-1)
        den = np.linalg.norm(hs[:-1], axis=-1)
        change.append((num / den).mean(axis=1))
    change = np.mean(change, axis=0)

    shifts = []
    for s in bank.sentences:
        occ = occlusion(enc, s, bank.target)
        shifts.append(float(np.nanmax(occ.shift[-1])))
    shifts = np.array(shifts)

    stats = corpus_statistics(corpus_encoding_fn(enc))
    aniso = [anisotropy(stats.sample[layer]) for layer in range(stats.num_hidden_states)]

    gaps = {}
    for p in load_presets():
        ss = p.sentence_set()
        tv = enc.target_vectors(list(ss.sentences), ss.target, skip_missing=True)
        senses = np.array([ss.senses[i] for i in tv.kept])
        c = cosine_matrix(tv.vectors[:, -1, :])
        iu = np.triu_indices(len(senses), 1)
        same = senses[iu[0]] == senses[iu[1]]
        gaps[p.id] = float(c[iu][same].mean() - c[iu][~same].mean())

    return {
        "attention_entropy": [round(float(x), 4) for x in entropy],
        "layer_change": [round(float(x), 4) for x in change],
        "context_shift_last_layer": {
            "min": round(float(shifts.min()), 4),
            "median": round(float(np.median(shifts)), 4),
            "max": round(float(shifts.max()), 4),
        },
        "anisotropy": [round(float(x), 4) for x in aniso],
        "sense_gap_last_layer": {k: round(v, 4) for k, v in gaps.items()},
        "sense_gap_mean": round(float(np.mean(list(gaps.values()))), 4),
    }


def main() -> None:
    from lib.inputs.corpus import load_reference_corpus
    from lib.models.encoder import load_encoder
    from lib.models.weights import moment_matched_weights, shuffle_weights

    corpus = load_reference_corpus()

    def corpus_encoding(enc):
        return enc.encode(list(corpus.sentences), attentions=False)

    def controlled(transform, seed):
        enc = load_encoder()
        transform(enc.model, seed)
        enc._embedding_matrix = None
        return enc

    results = {}
    t0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    results["trained"] = measure(load_encoder(), corpus_encoding)
    for seed in SEEDS:
        results[f"bert_init_std0.02_seed{seed}"] = measure(load_encoder(weights="random", seed=seed), corpus_encoding)
        results[f"shuffled_seed{seed}"] = measure(controlled(shuffle_weights, seed), corpus_encoding)
        results[f"moment_matched_seed{seed}"] = measure(controlled(moment_matched_weights, seed), corpus_encoding)
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - t0
    out = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "cpu_seconds": round(cpu, 1),
        "models": results,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for name, r in results.items():
        print(
            f"{name:30s} entropy {min(r['attention_entropy']):.3f}-{max(r['attention_entropy']):.3f} "
            f"shift {r['context_shift_last_layer']['min']:.4f}-{r['context_shift_last_layer']['max']:.4f} "
            f"aniso0 {r['anisotropy'][0]:.3f} anisoL {r['anisotropy'][-1]:.3f} gap {r['sense_gap_mean']:+.3f} "
            f"change {r['layer_change'][0]:.3f}"
        )


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


if __name__ == "__main__":
    main()
