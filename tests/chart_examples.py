"""One example call of every chart builder in lib/charts: the one registry the chart tests share.

``EXAMPLES["module.builder"]`` (or ``"module.builder[variant]"``) builds a figure from ``real`` (the two real
sentences of :func:`real_inputs`, for the charts of attention and projections) or from inputs drawn from
:data:`RNG`; a test that builds one twice (validated and not) resets ``RNG``'s state in between. A new public
builder in lib/charts gets its example here (tests/test_lazy_figures.py checks that every one has one and
that each sends the same JSON with and without validation).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from plotly.colors import get_colorscale

from lib.charts import (
    attention,
    context,
    controls,
    finetune,
    geometry,
    home,
    layers,
    lens,
    lesson,
    projection,
    toy,
)
from lib.models.attention import special_token_share, target_attention, token_labels

RNG = np.random.default_rng(7)
N = 9
SENSES = ["river", "money", "river", None, "money", "bench", "river", None, "money"]
LABELS = [f"S{i + 1} · sentence <{i}>" for i in range(N)]
NAMES = layers.layer_names(6)


def _cos(n: int = N) -> np.ndarray:
    x = RNG.normal(size=(n, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


LABELS6 = [f"S{i + 1} · <b>{i}</b> & co" for i in range(6)]


def _r(*shape) -> np.ndarray:
    return RNG.random(shape)


# Inputs are drawn once, here, so that a builder called twice (validated and not) gets the same ones.
_W = [f"w<{i}>" for i in range(7)]
_SHIFT, _ATT, _STRIP, _CORR, _COS7 = _r(7), _r(7), _r(7, 7), _r(6) * 2 - 1, _r(7)
_XY, _ACC, _CHANCE = _r(2, 6), [_r(7), _r(7)], [_r(7) * 0.5, None]
_POOL = _r(4, 7)
_PAIRS, _SAME = _r(15), RNG.random(15) > 0.5
_X3, _Y3 = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
_M = [_r(6, 6) for _ in range(2)]
_FP6, _FP12, _LENS, _LENS_TOP = _r(6), _r(12), _r(7, 2), _r(7)



def real_inputs(encoder) -> SimpleNamespace:
    """Attention and vectors of two real sentences (the bundled model), for the examples that take ``real``."""
    enc = encoder.encode(["We sat on the river bank & watched.", "The bank raised its <rates> again."])
    att = enc.attentions[0]
    labels = token_labels(enc.tokens[0])
    ta = target_attention(att, [enc.tokens[0].index("bank")])
    pos = [toks.index("bank") for toks in enc.tokens]
    coords = [np.stack([enc.hidden_states[i][j, p, :3] for i, p in enumerate(pos)] * 2) for j in range(7)]
    return SimpleNamespace(
        enc=enc, att=att, labels=labels, ta=ta, coords=coords,
        share=special_token_share(
            att, enc.tokens[0], enc.special[0], ids=enc.token_ids[0], roles=encoder.special_roles
        ),
    )


def scales(obj):
    """``obj`` with colour scales written out as plotly's validation writes them (a name such as "Viridis"
    as its list of [position, colour]), positions rounded (the two expansions differ in the last bit)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "colorscale" and isinstance(v, (str, list)):
                out[k] = [[round(float(p), 9), c] for p, c in (get_colorscale(v) if isinstance(v, str) else v)]
            else:
                out[k] = scales(v)
        return out
    if isinstance(obj, list):
        return [scales(v) for v in obj]
    return obj


EXAMPLES = {
    "attention.attention_heatmap": lambda real: attention.attention_heatmap(real.att[2, 3], real.labels, title="<t>"),
    "attention.attention_overview": lambda real: attention.attention_overview(real.att, real.labels, selected=(1, 2)),
    "attention.attention_overview[pooled]": lambda real: attention.attention_overview(
        real.att, real.labels, max_tokens=4
    ),
    "attention.target_attention_bars": lambda real: attention.target_attention_bars(
        real.ta.attends_to_mean[2], real.ta.attended_by_mean[2], real.labels, real.ta.token_indices, title="t"
    ),
    "attention.target_attention_by_layer": lambda real: attention.target_attention_by_layer(
        real.ta.attends_to_mean, real.ta.attended_by_mean, real.labels
    ),
    "attention.special_token_share_chart": lambda real: attention.special_token_share_chart(real.share, head=3),
    "attention.first_position_chart": lambda real: attention.first_position_chart(
        [("a <b>", _FP6, 0.2), ("b", _FP12, 0.1)], title="<t>"
    ),
    "lens.lens_word_chart": lambda real: lens.lens_word_chart(_LENS, ["river", "<b>"], _LENS_TOP, title="<t>"),
    "context.shift_bars": lambda real: context.shift_bars(_W, _SHIFT, _ATT, title="s"),
    "context.word_bars": lambda real: context.word_bars(_W, _ATT, axis_title="attention", title="w"),
    "context.shift_strip": lambda real: context.shift_strip(_W, _STRIP, NAMES, title="s"),
    "context.attention_vs_shift": lambda real: context.attention_vs_shift(_W, _ATT, _SHIFT, layer=3, title="a"),
    "context.correlation_by_layer": lambda real: context.correlation_by_layer(_CORR, layer=3),
    "context.edit_by_layer": lambda real: context.edit_by_layer(
        _COS7, NAMES, ["river"] * 4 + ["money"] * 3, ["money"] * 7, ["river", "money"], title="e"
    ),
    "home.paired_cosine_heatmaps": lambda real: home.paired_cosine_heatmaps(
        _M,
        titles=["a", "<b>"],
        zrange=(0.0, 1.0),
        row_ticks=LABELS6,
        hover={"hovertemplate": "%{z:.3f}"},
        text_max=8,
        first=1,
        height=400,
    ),
    "lesson.centroid_scatter": lambda real: lesson.centroid_scatter(
        _XY[0],
        _XY[1],
        ["river", "money"] * 3,
        LABELS6,
        [str(i) for i in range(6)],
        "river",
        "money",
        highlight=[1],
        title="c",
    ),
    "lesson.readout_lines": lambda real: lesson.readout_lines(
        ["a", "<b>"], _ACC, [0.5, 0.6], title="r", chance=_CHANCE
    ),
    "lesson.pooling_panels": lambda real: lesson.pooling_panels(*_POOL, title="p"),
    "lesson.pair_strip": lambda real: lesson.pair_strip(
        _PAIRS, _SAME, [f"p{i}" for i in range(15)], highlight={2: "x"}
    ),
    "projection.projection_scatter": lambda real: projection.projection_scatter(
        real.coords[6][:4, :2],
        ["river", "money", None, "river"],
        LABELS6[:4],
        ["1", "2", "3", "4"],
        context=real.coords[3][:, :2],
        context_hover=["c"] * 4,
        axis_titles=("PC1", "PC2"),
        title="p",
    ),
    "projection.projection_scatter[3d]": lambda real: projection.projection_scatter(
        real.coords[6][:4], ["river", "money", None, "river"], LABELS6[:4], ["1", "2", "3", "4"]
    ),
    "projection.empty_map": lambda real: projection.empty_map("Accept three sentences <b>to</b> see the map"),
    "projection.projection_small_multiples": lambda real: projection.projection_small_multiples(
        [c[:4, :2] for c in real.coords],
        ["river", "money", "money", "river"],
        LABELS6[:4],
        ["1", "2", "3", "4"],
        [f"layer {j}" for j in range(7)],
        cols=3,
    ),
    "toy.vector_arrows": lambda real: toy.vector_arrows(_X3, _Y3, ["The", "<b>cat</b>", "sat"], title="v"),
    "toy.warmup_arrows": lambda real: toy.warmup_arrows(
        ["bank", "bank", "apple"],
        ["finance", "nature", "fruit"],
        np.array([[0.5, 0.5], [0.5, 0.5], [0.3, 0.3]]),
        np.array([[0.8, 0.3], [0.3, 0.8], [np.nan, np.nan]]),
        references={"money": (0.9, 0.1)},
    ),
    "layers.similarity_heatmap": lambda real: layers.similarity_heatmap(_cos(), LABELS, SENSES, title="t", adjusted=True),
    "layers.layer_small_multiples": lambda real: layers.layer_small_multiples(
        np.stack([_cos() for _ in NAMES]), SENSES, NAMES, selected=2
    ),
    "layers.trajectory_chart": lambda real: layers.trajectory_chart(
        NAMES,
        same=RNG.random(7),
        different=RNG.random(7),
        all_pairs=RNG.random(7),
        baseline=(RNG.random(7), RNG.random(7), RNG.random(7)),
        pairs=[layers.PairLine("S1–S2", RNG.random(7), True)],
        pooled=[layers.PooledPoint("last 4", same=0.6, different=0.3, baseline=0.2)],
        selected=7,
        adjusted=True,
        title="t",
    ),
    "layers.static_contextual_chart": lambda real: layers.static_contextual_chart(
        ["static", "layer 6"], {"same sense": [0.9, None], "all pairs": [0.8, 0.4]}
    ),
    "layers.ethayarajh_chart": lambda real: layers.ethayarajh_chart(
        NAMES, self_similarity=RNG.random(7), intra_sentence=RNG.random(7), baseline=RNG.random(7), selected=3
    ),
    "layers.readout_chart": lambda real: layers.readout_chart(
        NAMES, RNG.random(7), 0.4, best=2, pooled=[("last 4", 0.7)], selected=1, chance=(RNG.random(7), RNG.random(7))
    ),
    "home.before_after_heatmaps": lambda real: home.before_after_heatmaps(_cos(), _cos(), LABELS, SENSES, ("a", "b")),
    "home.similarity_heatmap": lambda real: home.similarity_heatmap(_cos(), LABELS, SENSES, "t", zmin=0.2),
    "geometry.anisotropy_by_layer": lambda real: geometry.anisotropy_by_layer(
        {"none": RNG.random(7), "zscore": RNG.random(7)}, {"none": "raw"}, layer=3, reference=RNG.random(13), title="<t>"
    ),
    "geometry.similarity_before_after": lambda real: geometry.similarity_before_after(_cos(), _cos(), LABELS, SENSES, ("a", "b")),
    "geometry.dimension_profile": lambda real: geometry.dimension_profile(RNG.random(30), RNG.normal(size=30), RNG.normal(size=30)),
    "geometry.norms_by_layer": lambda real: geometry.norms_by_layer(RNG.random(7) * 10, layer=2, title="n"),
    "geometry.gap_bars": lambda real: geometry.gap_bars({"raw": (0.7, 0.4), "z-scored": (None, 0.1)}, title="g"),
    "controls.probe_chart": lambda real: controls.probe_chart(NAMES, RNG.random(7), RNG.random(7), RNG.random(7), 0.35, title="p"),
    "controls.two_model_chart": lambda real: controls.two_model_chart(
        [("m1 · self", RNG.random(7), "solid"), ("m2 · self", RNG.random(13), "dash")],
        title="t",
        y_title="y",
        relative=True,
        zero_line=True,
    ),
    "finetune.training_curves": lambda real: finetune.training_curves(
        [0, 1, 2], [0.7, 0.5, 0.2], [0.7, 0.6, 0.65], what="loss", title="<b>loss</b>", best_epoch=1
    ),
    "finetune.training_curves[accuracy]": lambda real: finetune.training_curves(
        [0, 1, 2], [0.5, 0.75, 1.0], [0.5, 0.5, np.nan], what="accuracy", title="acc", chance=0.5, test=0.75,
        test_epoch=2, head_test=0.55,
    ),
    "finetune.layer_change_chart": lambda real: finetune.layer_change_chart(
        np.array([1.0, 1, 1, 1, 1, 0.9, 0.7]), np.array([0.0, 0, 0, 0, 0, 2e-3, 3e-3]), title="moved",
        floor_low=np.full(7, 0.3), floor_high=np.full(7, 0.5),
    ),
    "finetune.before_after_chart": lambda real: finetune.before_after_chart(
        np.linspace(0.5, 1, 7), np.linspace(0.5, 1, 7)[::-1], title="t", what="accuracy", percent=True, chance=0.5
    ),
    "finetune.mix_weights_chart": lambda real: finetune.mix_weights_chart(np.full(7, 1 / 7), 1.3, title="mix"),
    "finetune.seed_chart": lambda real: finetune.seed_chart(
        [0, 1, 2], [1.0, 1.0, 0.9], [0.75, 0.5, 1.0], title="s", head_test=[0.7, 0.7, 0.75]
    ),
}
