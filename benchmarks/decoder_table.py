"""The decoder beside the encoder: the measurements the pages will state, made with lib's own functions.

    python -m benchmarks.decoder_table            # prints a Markdown table and writes benchmarks/decoder_table.json

Needs the decoder pack (``python -m lib.models download``). Each row runs both models on the same sentences:
the causal identity (right context changed), the sense gap with the cue before or only after "bank"
(z-scored by the per-layer mean and standard deviation of the reference corpus's first 150 sentences), the mean cosine of random tokens
(raw and z-scored), the three dimensions' share of the squared norm, the largest value at the first position,
the attention later positions give to position 0, and a sentence's encode time (CPU seconds, one thread).
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "decoder_table.json"  # beside the script, as control_candidates.json
CORPUS_SENTENCES = 150  # the reference corpus's first sentences: μ, σ for z-scoring, and the random tokens

RIVER, CITY = "The bank of the river flooded.", "The bank of the city flooded."
CUE_BEFORE = [
    ("river", "The fisherman sat down on the muddy river bank."),
    ("river", "After the long hike along the stream we rested on the bank."),
    ("river", "Ducks waddled out of the water onto the grassy bank."),
    ("river", "The flood waters rose over the stream and covered the bank."),
    ("money", "She deposited her paycheck and savings at the bank."),
    ("money", "The robbers stole millions of dollars from the bank."),
    ("money", "To get a mortgage loan he went to the bank."),
    ("money", "The teller counted the cash at the bank."),
]
CUE_AFTER = [
    ("river", "Yesterday the bank was muddy and full of reeds where the ducks nested."),
    ("river", "Our bank was covered in willows that leaned over the water."),
    ("river", "That bank eroded as the stream rose after the storm."),
    ("river", "This bank slopes gently down to the river."),
    ("money", "Yesterday the bank approved her mortgage loan and lowered the interest rate."),
    ("money", "Our bank charged a fee for every cash withdrawal."),
    ("money", "That bank hired new tellers to count deposits."),
    ("money", "This bank froze the account after the fraud."),
]


def _z(vectors: np.ndarray, stats) -> np.ndarray:
    """(n, K, H) standardised per layer by the corpus's μ, σ (lib.stats.geometry.standardize)."""
    from lib.stats.geometry import standardize

    return np.stack([standardize(vectors[:, k], stats.mean[k], stats.std[k]) for k in range(vectors.shape[1])], axis=1)


def _gap(model, pairs, stats) -> np.ndarray:
    """(K,) same − different sense mean cosine per layer, z-scored."""
    from lib.stats.similarity import layer_cosine_matrices, sense_similarity

    senses = [s for s, _ in pairs]
    tv = model.target_vectors([t for _, t in pairs], "bank")
    return sense_similarity(layer_cosine_matrices(_z(tv.vectors.astype(np.float64), stats)), senses).gap


def measure(model, corpus) -> dict:
    from lib.inputs.corpus import compute_corpus_statistics
    from lib.stats.baseline import other_token_masks, random_token_baseline

    out: dict = {"model": model.display_name, "family": model.family}
    tv = model.target_vectors([RIVER, CITY], "bank")
    diff = np.abs(tv.vectors[0] - tv.vectors[1]).max(axis=1)  # (K,)
    out["identity_max_diff_per_layer"] = [float(x) for x in diff]

    stats = compute_corpus_statistics(model, corpus)
    before, after = _gap(model, CUE_BEFORE, stats), _gap(model, CUE_AFTER, stats)
    out["gap_cue_before"] = {"max": float(before.max()), "layer": int(before.argmax()), "per_layer": before.tolist()}
    out["gap_cue_after"] = {"min": float(after.min()), "max": float(after.max()), "per_layer": after.tolist()}

    enc = model.encode(list(corpus[:120]), attentions=False)
    masks = other_token_masks(enc.special, [() for _ in enc.sentences])
    raw = random_token_baseline(enc.hidden_states, masks, tokens=enc.tokens)
    zs = random_token_baseline([_z(h.transpose(1, 0, 2), stats).transpose(1, 0, 2) for h in enc.hidden_states],
                               masks, tokens=enc.tokens)
    K = model.num_hidden_states
    mid = slice(K // 3, 2 * K // 3 + 1)
    out["random_token_cosine_middle"] = {
        "raw": [float(raw.mean[mid].min()), float(raw.mean[mid].max())],
        "z": [float(zs.mean[mid].min()), float(zs.mean[mid].max())],
    }
    tokens = np.concatenate([h[:, ~s] for h, s in zip(enc.hidden_states, enc.special, strict=True)], axis=1)
    sq = (tokens.astype(np.float64) ** 2).mean(axis=1)  # (K, H): mean square per dimension
    share = np.sort(sq, axis=1)[:, -3:].sum(axis=1) / sq.sum(axis=1)
    top = np.argsort(-sq[mid.start + (mid.stop - mid.start) // 2])[:3]
    out["top3_share_of_squared_norm"] = {"max": float(share[1:].max()), "dims_middle_layer": top.tolist()}
    first = max(float(np.abs(h[:, 0]).max()) for h in enc.hidden_states)
    rest = max(float(np.abs(h[:, 1:]).max()) for h in enc.hidden_states)
    out["largest_value"] = {"first_position": first, "other_positions": rest}

    att = model.encode(list(enc.sentences[:20]), attentions=True).attentions
    to0 = np.mean([a[:, :, 1:, 0].mean(axis=(1, 2)) for a in att], axis=0)  # (L,)
    uniform = float(np.mean([np.mean(1.0 / np.arange(1, a.shape[-1] + 1)[1:]) for a in att]))
    out["attention_to_position_0"] = {"per_layer": to0.tolist(), "uniform": uniform}

    sentence = ["The bank of the river flooded after the storm last spring."]
    model.encode(sentence)  # warm
    t0 = time.process_time()
    for _ in range(10):
        model.encode(sentence, attentions=True)
    out["encode_cpu_seconds"] = (time.process_time() - t0) / 10
    return out


def main() -> None:
    import torch

    from lib.inputs.corpus import load_reference_corpus
    from lib.models import DECODER_MODEL, load_model

    torch.set_num_threads(1)
    corpus = list(load_reference_corpus().sentences[:CORPUS_SENTENCES])
    rows = {}
    for name in (None, DECODER_MODEL):
        t0 = time.perf_counter()
        model = load_model(name)
        load_s = time.perf_counter() - t0
        rows[model.family] = {"load_seconds": load_s, **measure(model, corpus)}
        del model
    rows["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1))
    d, e = rows["decoder"], rows["encoder"]

    def rng(v):
        return f"{min(v):.2f}–{max(v):.2f}"

    print("| | decoder | encoder |\n| --- | --- | --- |")
    print(f"| bank river vs city, max diff per layer | {max(d['identity_max_diff_per_layer']):.1e} | "
          f"{rng(e['identity_max_diff_per_layer'])} |")
    print(f"| same − different (z), cue before | {d['gap_cue_before']['max']:.2f} at layer "
          f"{d['gap_cue_before']['layer']} | {e['gap_cue_before']['max']:.2f} at layer {e['gap_cue_before']['layer']} |")
    print(f"| same − different (z), cue only after | {d['gap_cue_after']['min']:.2f}–{d['gap_cue_after']['max']:.2f} | "
          f"{e['gap_cue_after']['min']:.2f}–{e['gap_cue_after']['max']:.2f} |")
    for key in ("raw", "z"):
        print(f"| random tokens' mean cosine, middle layers, {key} | {rng(d['random_token_cosine_middle'][key])} | "
              f"{rng(e['random_token_cosine_middle'][key])} |")
    print(f"| three dimensions' share of the squared norm | {d['top3_share_of_squared_norm']['max']:.2f} "
          f"(dims {d['top3_share_of_squared_norm']['dims_middle_layer']}) | {e['top3_share_of_squared_norm']['max']:.2f} |")
    print(f"| largest value, first position / others | {d['largest_value']['first_position']:,.0f} / "
          f"{d['largest_value']['other_positions']:,.0f} | {e['largest_value']['first_position']:,.1f} / "
          f"{e['largest_value']['other_positions']:,.1f} |")
    a = d["attention_to_position_0"]
    print(f"| attention to position 0, layers 13–30 | {rng(a['per_layer'][12:])} (uniform {a['uniform']:.2f}) | "
          f"{rng(e['attention_to_position_0']['per_layer'])} |")
    print(f"| a sentence, hidden states + attentions (CPU) | {d['encode_cpu_seconds'] * 1000:.0f} ms | "
          f"{e['encode_cpu_seconds'] * 1000:.0f} ms |")
    print(f"| load (warm disk) | {d['load_seconds']:.1f} s | {e['load_seconds']:.1f} s |")
    print(f"peak RSS of this process (both models, one after the other): {rows['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
