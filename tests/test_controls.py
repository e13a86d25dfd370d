"""The "is it real?" controls on the real model: random weights, the probe against shuffled labels, and how
faithful a map is. Expected values are computed independently (scikit-learn, numpy), never copied."""

from __future__ import annotations

import numpy as np
import pytest

from lib.inputs.presets import preset_by_id
from lib.inputs.sentences import parse_sentence_set
from lib.models.encoder import DEFAULT_MODEL, load_encoder
from lib.stats.probe import ProbeError, _fit_batch, _fold_space, _predict, probe_layers
from lib.stats.projection import neighbour_check, neighbour_preservation, pca_projection
from lib.stats.similarity import layer_cosine_matrices, sense_similarity


def preset_set(pid: str):
    p = preset_by_id(pid)
    return parse_sentence_set(p.text, p.target, preset_id=pid)


# ----------------------------------------------------------------------------------- random weights
def test_random_weights_same_architecture_and_tokenizer(encoder, random_encoder):
    r = random_encoder
    assert r.name == f"{DEFAULT_MODEL}#random-0" and r.weights == "random" and r.seed == 0
    assert r.display_name == f"{DEFAULT_MODEL} (random weights, seed 0)"
    assert (r.num_layers, r.num_heads, r.hidden_size, r.max_tokens) == (
        encoder.num_layers,
        encoder.num_heads,
        encoder.hidden_size,
        encoder.max_tokens,
    )
    s = ["We sat on the river bank."]
    a, b = encoder.encode(s), r.encode(s)
    assert a.tokens == b.tokens and a.model_name == DEFAULT_MODEL and b.model_name == r.name
    # the weights really differ from the trained ones, and come from the config's initialiser (N(0, 0.02))
    w_r = r.model.get_input_embeddings().weight.detach().numpy()
    w_t = encoder.model.get_input_embeddings().weight.detach().numpy()
    assert not np.allclose(w_r, w_t)
    assert abs(w_r.std() - r.model.config.initializer_range) < 0.002
    np.testing.assert_allclose(b.attentions[0].sum(axis=-1), 1.0, atol=1e-5)


def test_random_weights_are_deterministic_per_seed(random_encoder):
    import torch

    state = torch.random.get_rng_state()
    again = load_encoder(f"{DEFAULT_MODEL}#random-0")
    other = load_encoder(None, weights="random", seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global random state is left alone
    s = ["The bank raised its rates.", "We sat on the river bank."]
    v0 = random_encoder.word_vectors(s, "bank")
    np.testing.assert_array_equal(again.word_vectors(s, "bank"), v0)
    assert not np.allclose(other.word_vectors(s, "bank"), v0)


@pytest.mark.parametrize("pid", ["bank", "apple"])
def test_random_weights_lose_the_sense_gap(encoder, random_encoder, pid):
    ss = preset_set(pid)
    gaps = []
    for enc in (encoder, random_encoder):
        V = enc.word_vectors(list(ss.sentences), ss.target)
        gaps.append(sense_similarity(layer_cosine_matrices(V), list(ss.senses)).gap)
    trained, random = gaps
    L = encoder.num_layers
    assert trained[L] > 0.05  # training separates the senses by the last layer ...
    assert random[L] < 0.5 * trained[L]  # ... and a random copy of the same architecture does not
    assert trained[L] - trained[0] > 0.05
    assert abs(random[L] - random[0]) < 0.02  # random layers leave the gap where the embeddings put it


# ----------------------------------------------------------------------------------- the probe
def test_batched_probe_matches_scikit_learn(encoder):
    """_fold_space + _fit_batch gives scikit-learn LogisticRegression's predictions and coefficients' fit."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    for pid in ("bank", "apple"):  # three senses (multinomial), two senses (binary)
        ss = preset_set(pid)
        V = encoder.word_vectors(list(ss.sentences), ss.target)
        names = sorted(set(ss.senses))
        y = np.array([names.index(s) for s in ss.senses])
        tr, te = np.arange(len(y)) % 4 != 0, np.arange(len(y)) % 4 == 0
        for layer in (0, 3, 6):
            X = V[:, layer, :].astype(np.float64)
            A, B = _fold_space(X[tr], X[te])
            W, b = _fit_batch(A[None], y[tr][None, None], np.ones((1, A.shape[0])), len(names))
            ours = _predict(B[None], W, b)[0, 0]
            sc = StandardScaler().fit(X[tr])
            sk = LogisticRegression(C=1.0, max_iter=5000, tol=1e-10).fit(sc.transform(X[tr]), y[tr])
            np.testing.assert_array_equal(ours, sk.predict(sc.transform(X[te])))
            # the same optimum of scikit-learn's objective 0.5·||W||² + Σ log-loss, although we fitted in
            # the training rows' span (the objective is flat near its minimum, so compare values, not weights)
            Xs = sc.transform(X[tr])
            _, S, Vt = np.linalg.svd(Xs, full_matrices=False)
            W_full = Vt[: A.shape[1]].T @ W[0, 0]
            if len(names) == 2:
                W_full, b0 = np.hstack([np.zeros((W_full.shape[0], 1)), W_full]), np.r_[0.0, b[0, 0]]
                sk_W, sk_b = np.hstack([np.zeros((X.shape[1], 1)), sk.coef_.T]), np.r_[0.0, sk.intercept_]
            else:
                b0, sk_W, sk_b = b[0, 0], sk.coef_.T, sk.intercept_

            def objective(Wm, bm, Xs=Xs, ytr=y[tr]):
                Z = Xs @ Wm + bm
                Z = Z - Z.max(axis=1, keepdims=True)
                logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
                penalty = 0.5 * np.sum(Wm * Wm)
                return -logp[np.arange(len(Z)), ytr].sum() + penalty

            assert objective(W_full, b0) <= objective(sk_W, sk_b) + 1e-6


@pytest.fixture(scope="module")
def balanced_wsd(encoder):
    """25 + 25 real Wikipedia sentences of 'bank' (CoarseWSD-20), vectors and senses."""
    from lib.inputs.wsd_data import load_split

    try:
        split = load_split("bank", "train")
    except FileNotFoundError:
        pytest.skip("../shared/data/CoarseWSD-20 is not on this machine")
    picked, seen = [], {}
    for i, s in enumerate(split.senses):
        if seen.get(s, 0) < 25:
            picked.append(i)
            seen[s] = seen.get(s, 0) + 1
    assert len(seen) == 2 and all(c == 25 for c in seen.values())
    tv = encoder.target_vectors([split.sentences[i] for i in picked], skip_missing=True)
    senses = [split.senses[picked[k]] for k in tv.kept]
    return np.asarray(tv.vectors), senses


def test_probe_beats_its_control_where_there_is_signal_and_not_where_there_is_none(balanced_wsd):
    V, senses = balanced_wsd
    L = V.shape[1] - 1
    # a layer with no signal: the last layer's vectors, dealt to the sentences in a fixed random order
    noise = V[np.random.default_rng(1).permutation(len(V)), L, :][:, None, :]
    p = probe_layers(np.concatenate([V, noise], axis=1), senses, folds=5, shuffles=20, seed=0)
    assert p.accuracy.shape == p.shuffled.shape == p.shuffled_high.shape == (L + 2,)
    assert p.shuffled_runs.shape == (20, L + 2) and p.folds == 5 and p.n == len(senses)
    assert p.chance == pytest.approx(max(senses.count(s) for s in set(senses)) / len(senses))
    best = int(np.argmax(p.over_null[: L + 1]))
    assert p.accuracy[best] >= 0.9
    assert p.over_null[best] >= 0.3  # a wide margin over the shuffled control ...
    assert p.accuracy[best] > p.shuffled_high[best] + 0.2
    assert p.over_null[L + 1] < 0.2  # ... and none worth the name where the vectors carry no sense
    assert p.over_null[L + 1] < p.over_null[best] - 0.2
    # the control hovers around chance: shuffled labels carry nothing
    assert np.all(np.abs(p.shuffled - 0.5) < 0.15)
    # deterministic for a seed
    again = probe_layers(V[:, :2], senses, folds=5, shuffles=4, seed=0)
    np.testing.assert_array_equal(again.accuracy, probe_layers(V[:, :2], senses, folds=5, shuffles=4).accuracy)


def test_probe_handles_small_senses_and_refuses_what_cannot_be_probed():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(9, 3, 16))
    labels = ["a", "a", "a", "a", "b", "b", "c", None, ""]  # c: one sentence; two unlabelled
    p = probe_layers(V, labels, folds=5, shuffles=3)
    assert p.senses == ("a", "b") and p.dropped == ("c",) and p.n == 6
    assert p.folds == 2  # the smallest sense has 2 sentences
    assert any("2 folds" in x for x in p.notes) and any("c" in x for x in p.notes)
    assert np.all((p.accuracy >= 0) & (p.accuracy <= 1))
    with pytest.raises(ProbeError, match="two senses"):
        probe_layers(V, ["a"] * 8 + ["b"], folds=5, shuffles=3)
    with pytest.raises(ProbeError):
        probe_layers(V[:, 0], labels)
    with pytest.raises(ProbeError):
        probe_layers(V, labels[:-1])


def test_probe_bounds_the_work_on_large_sets():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(400, 2, 8)).astype(np.float32)
    labels = [f"s{i % 4}" for i in range(400)]
    p = probe_layers(V, labels, folds=5, shuffles=20)
    assert p.n <= 150 and any("sample" in x for x in p.notes)
    assert sorted(set(labels)) == list(p.senses)


# ----------------------------------------------------------------------------------- honest maps
def test_neighbour_preservation_identities():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 40))
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert neighbour_preservation(X, unit, k=5) == 1.0  # Euclidean on unit vectors ranks as cosine does
    layouts = [neighbour_preservation(X, rng.normal(size=(120, 2)), k=5) for _ in range(30)]
    assert np.mean(layouts) == pytest.approx(5 / 119, abs=0.01)  # a random layout keeps about k / (n - 1)
    assert neighbour_preservation(X, X[:, :2] * 0 + X[:, :1], k=200) <= 1.0  # k clamped to n - 1
    with pytest.raises(ValueError):
        neighbour_preservation(X, unit[:10])


def test_neighbour_check_on_a_real_map(encoder):
    ss = preset_set("bank")
    V = encoder.word_vectors(list(ss.sentences), ss.target)[:, -1, :]
    proj = pca_projection(V, 2)
    c = neighbour_check(V, proj.coords, k=5)
    # independent count: neighbour sets by brute force
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    D1, D2 = 1 - U @ U.T, np.linalg.norm(proj.coords[:, None] - proj.coords[None], axis=-1)
    np.fill_diagonal(D1, np.inf)
    np.fill_diagonal(D2, np.inf)
    kept = [len(set(np.argsort(D1[i], kind="stable")[:5]) & set(np.argsort(D2[i], kind="stable")[:5])) for i in range(len(V))]
    assert c.preserved == pytest.approx(np.mean(kept) / 5)
    assert c.k == 5 and c.chance == pytest.approx(5 / (len(V) - 1))
    assert c.trustworthiness is not None and 0 <= c.trustworthiness <= 1
    assert c.poor == (c.preserved < 0.5)


def test_the_layer_named_furthest_above_the_null_is_above_its_band():
    """Layer 0 is furthest above the null's mean but inside its band: it is never named as the best."""
    from lib.stats.probe import ProbeResult

    acc = np.array([0.50, 0.45, 0.90])
    mean = np.array([0.20, 0.40, 0.70])
    high = np.array([0.60, 0.50, 0.80])
    p = ProbeResult(acc, mean, high, np.zeros((3, 3)), 0.5, ("a", "b"), 8, 3, 20)
    assert p.best_layer == 0 and p.within_band.tolist() == [True, True, False]
    assert p.best_above_band == 2
    inside = ProbeResult(acc, mean, np.ones(3), np.zeros((3, 3)), 0.5, ("a", "b"), 8, 3, 20)
    assert inside.best_above_band is None


def test_a_long_accuracy_line_writes_a_value_where_it_changes():
    from lib.charts.layers import LABEL_EVERY_POINT, accuracy_line

    few = accuracy_line(list(range(4)), np.array([0.5, 0.5, 0.75, 0.75]), name="a", what="a")
    assert list(few["text"]) == ["50%", "50%", "75%", "75%"]
    acc = np.array([0.5] * 10 + [0.75] * 10 + [0.5] * 11)
    assert len(acc) > LABEL_EVERY_POINT
    text = list(accuracy_line(list(range(len(acc))), acc, name="a", what="a")["text"])
    assert [i for i, t in enumerate(text) if t] == [0, 10, 20, 30]


def test_a_long_accuracy_lines_values_never_crowd_each_other():
    """The decoder's readout on the bank preset: 42 %, 25 %, 42 %, 83 % at layers 0-3 wrote four labels in four
    layers, one over the other on a phone. Written values stand a tenth of the layers apart (4 of 31) and each is its
    own point's value."""
    from lib.charts.layers import accuracy_line

    acc = np.array([0.42, 0.25, 0.42] + [0.83] * 4 + [0.92] * 24)
    text = list(accuracy_line(list(range(31)), acc, name="a", what="a")["text"])
    written = [i for i, t in enumerate(text) if t]
    assert written == [0, 4, 8, 30]
    assert all(b - a >= 4 for a, b in zip(written, written[1:], strict=False))
    assert [text[i] for i in written] == [f"{acc[i]:.0%}" for i in written]
