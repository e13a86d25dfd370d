"""The server's budgets (lib/serving/budget.py), CSV safety (lib/serving/export.py), hosted mode (lib/serving/hosting.py) and the
CPU guards of the figure builders: hand-checked cases plus the real bundled model."""

from __future__ import annotations

import csv
import io
import tomllib

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from lib.charts.common import MAX_SENSES, group_senses
from lib.charts.home import before_after_heatmaps
from lib.charts.layers import layer_small_multiples, similarity_heatmap
from lib.inputs.upload import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB
from lib.models.encoder import ModelLoadError, default_model_path, load_encoder
from lib.models.keys import base_model_id, split_model_key
from lib.serving import budget
from lib.serving.budget import (
    DEFAULT_MEMORY_MB,
    ByteLRU,
    ExpiringDict,
    cache_budget_bytes,
    figure_nbytes,
    fit_to_budget,
    memory_limit_bytes,
    nbytes,
    plain_nbytes,
    set_pieces_budget,
)
from lib.serving.export import csv_text, frame_csv, safe_cell
from lib.serving.hosting import HOSTED_REFUSAL, estimate_parameters, model_allowed, variant_allowed
from lib.stats.evidence import evidence_card
from tests.conftest import ROOT


# --------------------------------------------------------------------------------- word-piece budget
def test_fit_to_budget_keeps_the_prefix_that_fits_and_says_so_once():
    cut = fit_to_budget([10, 200, 30, 40, 50], per_sentence=100, per_set=150)
    # 10 + min(200, 100) + 30 = 140 fits, + 40 would be 180 > 150
    assert cut.kept == 3 and cut.pieces == 140 and cut.shortened == (1,)
    assert "1 sentence is longer than 100 word pieces" in cut.shortened_note
    assert "first 3 of 5 sentences" in cut.dropped_note and "other 2" in cut.dropped_note
    assert cut.message == cut.shortened_note + " " + cut.dropped_note


def test_fit_to_budget_always_keeps_one_sentence_and_is_silent_when_nothing_is_cut():
    assert fit_to_budget([500], per_sentence=128, per_set=10).kept == 1
    ok = fit_to_budget([5, 6, 7], per_sentence=128, per_set=100)
    assert (ok.kept, ok.message) == (3, "")


def test_cache_budget_comes_from_the_environment_with_a_default():
    assert cache_budget_bytes({}) == budget.DEFAULT_CACHE_MB * 2**20
    assert cache_budget_bytes({"CONTEXT_LENS_CACHE_MB": "64"}) == 64 * 2**20
    for bad in ("", "lots", "-5", "0"):
        assert cache_budget_bytes({"CONTEXT_LENS_CACHE_MB": bad}) == budget.DEFAULT_CACHE_MB * 2**20


def test_set_budget_comes_from_the_environment_and_holds_500_coarsewsd_sentences(encoder):
    assert set_pieces_budget({}) == budget.DEFAULT_SET_PIECES
    assert set_pieces_budget({"CONTEXT_LENS_MAX_SET_PIECES": "8000"}) == 8000
    assert set_pieces_budget({"CONTEXT_LENS_MAX_SET_PIECES": "5"}) == budget.MAX_PIECES_PER_SENTENCE
    for bad in ("", "many", "-1", "0", "nan", "inf"):
        assert set_pieces_budget({"CONTEXT_LENS_MAX_SET_PIECES": bad}) == budget.DEFAULT_SET_PIECES
    # README: "up to 500 sentences". 500 real sentences of CoarseWSD-20 fit the default budget whole.
    from lib.inputs.wsd_data import load_split
    from lib.models.targets import strip_markup

    split = load_split("bank", "train", limit=500)
    counts = [len(ids) for ids in encoder.tokenizer([strip_markup(s)[0] for s in split.sentences])["input_ids"]]
    cut = fit_to_budget(counts, per_sentence=budget.MAX_PIECES_PER_SENTENCE, per_set=budget.DEFAULT_SET_PIECES)
    assert len(counts) == 500 and cut.kept == 500 and not cut.dropped_note


# --------------------------------------------------------------------------------- byte-bounded cache
def test_plain_and_figure_bytes_count_text_numbers_and_arrays():
    assert plain_nbytes("abc") == 52 and plain_nbytes(np.zeros(10, dtype=np.float32)) == 40
    small = plain_nbytes(["ab"] * 10)
    assert plain_nbytes(["ab" * 500] * 10) - small == 10 * 998  # longer strings count their characters
    z = np.random.default_rng(0).random((100, 100))
    text = [[f"{v:.3f}" for v in row] for row in z]
    bare = go.Figure(go.Heatmap(z=z))
    hover = go.Figure(go.Heatmap(z=z, text=text, hovertemplate="%{text}"))
    assert figure_nbytes(bare) >= z.nbytes  # the matrix
    assert figure_nbytes(hover) - figure_nbytes(bare) >= 100 * 100 * 54  # and 10,000 strings of 5 characters
    assert figure_nbytes(z) == z.nbytes  # not a figure: its arrays


def test_byte_lru_takes_a_size_per_call():
    lru = ByteLRU(max_bytes=1000)
    lru.put("a", "x", size=lambda v: 600)
    lru.get_or_compute("b", lambda: "y", size=lambda v: 600)
    assert "b" in lru and "a" not in lru and lru.total_bytes == 600


def test_nbytes_counts_each_array_once_and_views_by_their_base():
    a = np.zeros((10, 10), dtype=np.float32)  # 400 bytes
    assert nbytes((a, a, a[:2], {"x": [a.T]})) == 400
    assert nbytes((a, np.zeros(5, dtype=np.float64), "text", 3)) == 440


def test_byte_lru_evicts_least_recently_used_by_bytes():
    lru = ByteLRU(max_bytes=1000)
    arr = lambda: np.zeros(50, dtype=np.float64)  # noqa: E731  (400 bytes each)
    lru.put("a", arr())
    lru.put("b", arr())
    assert lru.get("a") is not None  # "a" is now the most recently used
    lru.put("c", arr())  # 1,200 bytes > 1,000: the least recently used ("b") goes
    assert "b" not in lru and "a" in lru and "c" in lru
    assert lru.total_bytes == 800 and lru.evictions == 1
    big = np.zeros(1000, dtype=np.float64)  # alone over budget: kept (the caller needs it), others go
    lru.put("big", big)
    assert list(lru._entries) == ["big"] and lru.total_bytes == big.nbytes


def test_byte_lru_makes_room_least_recently_used_first_and_says_what_it_dropped():
    lru = ByteLRU(max_bytes=10_000)
    for key in "abcd":
        lru.put(key, np.zeros(50, dtype=np.float64))  # 400 bytes each
    lru.get("a")  # "a" is now the most recently used: b, c, d go before it
    assert lru.make_room(500) == 800  # two entries: the first alone is 400 < 500
    assert list(lru._entries) == ["d", "a"] and lru.total_bytes == 800 and lru.evictions == 2
    assert lru.make_room(0) == 0 and len(lru) == 2
    lru.keep(["d"])  # e.g. a preset computed at the start: spared when making room
    assert lru.make_room(10**9) == 400 and list(lru._entries) == ["d"] and lru.total_bytes == 400


def test_the_memory_limit_is_a_hosted_copys_unless_set():
    mb = 1024 * 1024
    assert memory_limit_bytes({}) is None  # at one's own machine: no limit (a larger model alone may pass it)
    assert memory_limit_bytes({"CONTEXT_LENS_MODELS": "x"}) == DEFAULT_MEMORY_MB * mb
    assert memory_limit_bytes({"CONTEXT_LENS_MEMORY_MB": "900"}) == 900 * mb
    assert memory_limit_bytes({"CONTEXT_LENS_MEMORY_MB": "-1", "CONTEXT_LENS_MODELS": "x"}) == DEFAULT_MEMORY_MB * mb


def test_byte_lru_computes_each_key_once():
    lru = ByteLRU(max_bytes=10_000)
    calls = []
    for _ in range(3):
        lru.get_or_compute("k", lambda: calls.append(1) or np.ones(3))
    assert len(calls) == 1


def test_expiring_dict_is_bounded_and_forgets():
    now = [0.0]
    d = ExpiringDict(max_entries=3, ttl=10.0, clock=lambda: now[0])
    for k in range(5):
        d[f"m{k}"] = "failed"
    assert len(d) == 3 and "m0" not in d and "m4" in d
    now[0] = 11.0
    assert len(d) == 0 and d.get("m4") is None


# --------------------------------------------------------------------------------- memory by design
def test_set_encodings_carry_no_attentions_and_a_sentence_encoding_does(encoder):
    sentences = ["The bank raised its rates.", "We sat on the river bank all afternoon."]
    cheap = encoder.encode(sentences, attentions=False, max_tokens=8)
    assert cheap.attentions is None
    assert [len(t) for t in cheap.tokens] == [8, 8] and cheap.truncated == (False, True)
    one = encoder.encode([sentences[1]], attentions=True, max_tokens=8)
    assert one.tokens[0] == cheap.tokens[1]  # the same word pieces, so token indices carry over
    assert one.attentions[0].shape == (encoder.num_layers, encoder.num_heads, 8, 8)
    np.testing.assert_allclose(one.attentions[0].sum(axis=-1), 1.0, atol=1e-5)


@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_corpus_statistics_run_without_attentions_and_within_the_budget(encoder, monkeypatch):
    from lib.inputs.corpus import compute_corpus_statistics, corpus_statistics

    sentences = [f"Sentence number {k} talks about the weather in a small town." for k in range(12)]
    monkeypatch.setattr(budget, "MAX_CORPUS_PIECES", 60)
    stats = compute_corpus_statistics(encoder, sentences, chunk=4)
    counts = [len(x) for x in encoder.tokenizer(sentences)["input_ids"]]
    kept = fit_to_budget(counts, per_set=60).kept
    assert 0 < kept < len(sentences) and stats.n_sentences == kept
    assert stats.notes and f"first {kept} of {len(sentences)}" in stats.notes[0]
    # the same numbers as the statistics of one encoding of the kept sentences
    ref = corpus_statistics(encoder.encode(sentences[:kept], attentions=False))
    np.testing.assert_allclose(stats.mean, ref.mean, atol=1e-5)
    assert stats.n_tokens == ref.n_tokens


# --------------------------------------------------------------------------------- CPU guards
def _many_senses(n: int) -> tuple[np.ndarray, list[str], list[str]]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T, [f"S{i + 1} · s" for i in range(n)], [f"sense{i}" for i in range(n)]


def test_group_senses_keeps_the_most_frequent_and_names_the_rest():
    senses = ["a"] * 5 + ["b"] * 3 + [f"r{k}" for k in range(20)] + [None]
    g = group_senses(senses, max_senses=3)
    assert g[:8] == ["a"] * 5 + ["b"] * 3
    assert set(g[8:28]) == {"other (20 senses)"} and g[28] is None
    assert group_senses(["a", "b", None]) == ["a", "b", None]


def test_boundary_shapes_are_set_in_one_call_and_bounded(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("shapes must be set in one update_layout call, not one by one")

    for name in ("add_hline", "add_vline", "add_shape"):
        monkeypatch.setattr(go.Figure, name, refuse)
    cos, labels, senses = _many_senses(300)
    fig = similarity_heatmap(cos, labels, senses, title="t")
    # at most MAX_SENSES blocks: at most MAX_SENSES - 1 edges, two lines each
    assert 0 < len(fig.layout.shapes) <= 2 * (MAX_SENSES - 1)
    assert any("other (" in t for t in fig.layout.yaxis.ticktext)  # the grouped senses are named
    multi = layer_small_multiples(np.stack([cos, cos]), senses, ["0", "1"], selected=1)
    assert len(multi.layout.shapes) <= 2 * 2 * (MAX_SENSES - 1) + 1
    assert {s.xref for s in multi.layout.shapes if s.type == "rect"} == {"x2"}


def test_home_heatmap_drops_per_cell_hover_and_text_for_a_large_set():
    cos, labels, senses = _many_senses(200)
    fig = before_after_heatmaps(cos, cos, labels, senses, ("a", "b"))
    for trace in fig.data:
        assert trace.customdata is None and trace.text is None
        assert "row %{y}" in trace.hovertemplate
    small = before_after_heatmaps(cos[:5, :5], cos[:5, :5], labels[:5], senses[:5], ("a", "b"))
    assert small.data[0].customdata is not None and small.data[0].text is not None


# --------------------------------------------------------------------------------- CSV injection
@pytest.mark.parametrize("bad", ["=1+2", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", '=HYPERLINK("http://x")'])
def test_formula_cells_are_neutralised(bad):
    assert safe_cell(bad) == "'" + bad


def test_numbers_and_plain_text_are_left_alone():
    for ok in ("-0.25", "+3", "1e-3", "river", "", "a=b"):
        assert safe_cell(ok) == ok
    assert safe_cell(-1.5) == -1.5


def test_every_csv_writer_neutralises_cells():
    rows = list(csv.reader(io.StringIO(csv_text([["=cmd", "-0.5"]], header=["@h", "x"]))))
    assert rows == [["'@h", "x"], ["'=cmd", "-0.5"]]
    df = pd.DataFrame({"sentence": ["=1+1", "fine"], "x": [-1.0, 2.0]}, index=["+i", "j"])
    out = list(csv.reader(io.StringIO(frame_csv(df, index_label="=lab"))))
    assert out[0] == ["'=lab", "sentence", "x"] and out[1] == ["'+i", "'=1+1", "-1.0"]
    v = np.eye(3, 4)
    card = evidence_card(v, v, ["=cmd() bank", "@bank", "the bank"], ["-river", "=money", "money"], "=bank")
    text = card.to_csv()
    for cell in (c for row in csv.reader(io.StringIO(text)) for c in row):
        assert not (cell.startswith(("=", "+", "@", "\t", "\r")) or (cell.startswith("-") and not _num(cell)))


def _num(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def test_lesson_report_csv_is_safe():
    from lib.serving.export import dict_rows_csv

    out = list(csv.reader(io.StringIO(dict_rows_csv([{"answer": "=2*3", "score": -1}]))))
    assert out == [["answer", "score"], ["'=2*3", "-1"]]


# --------------------------------------------------------------------------------- uploads agree
def test_streamlit_upload_limit_is_the_apps_own():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert cfg["server"]["maxUploadSize"] == MAX_UPLOAD_MB
    assert MAX_UPLOAD_BYTES == MAX_UPLOAD_MB * 1024 * 1024  # Streamlit counts a MB as 1024²


# --------------------------------------------------------------------------------- hosted mode
def test_allowlist_rules():
    env = {"CONTEXT_LENS_MODELS": "bert-base-uncased, org/other"}
    assert model_allowed("bert-base-uncased", env) and model_allowed("org/other", env)
    assert model_allowed("sentence-transformers/all-MiniLM-L6-v2", env) and model_allowed("", env)
    assert not model_allowed("/etc", env) and not model_allowed("org/missing", env)
    assert model_allowed("/etc", {})  # hosted mode off: the old behaviour
    # a variant's key is asked about by its model id (ui.cache.try_encoder) and its weights; a key is no listed id
    def key_allowed(key, env=env, local=True):
        base, weights = base_model_id(key), split_model_key(key)[1]
        return model_allowed(base, env, local=local) and variant_allowed(weights, env, local=local)

    assert key_allowed("bert-base-uncased#shuffled-3") and key_allowed("#shuffled-0")
    assert not key_allowed("org/missing#shuffled-0") and not model_allowed("bert-base-uncased#shuffled-3", env)
    # fresh random weights, a new model to build for every seed, never on a hosted copy
    for key in ("bert-base-uncased#random-3", "#random-0", "sentence-transformers/all-MiniLM-L6-v2#random-0",
                "org/missing#random-0", "/etc#random-1"):  # fmt: skip
        assert not key_allowed(key), key
    assert key_allowed("sentence-transformers/all-MiniLM-L6-v2#random-0", {})  # at this machine, as before


def test_a_visitor_from_another_machine_gets_a_hosted_copys_rules():
    """The README's plain command (no CONTEXT_LENS_MODELS) on a lecturer's laptop: the lecturer, at the laptop,
    opens any folder; a student on the laptop's network gets the default and the decoder pack, nothing else."""
    from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL
    from lib.serving.hosting import hosted_mode

    assert not hosted_mode({}) and hosted_mode({}, local=False)
    for name in ("/home/lecturer/models/bert", "../../etc", "bert-base-uncased"):
        assert model_allowed(name, {}) and not model_allowed(name, {}, local=False), name
    for name in ("", DEFAULT_MODEL, DECODER_MODEL):
        assert model_allowed(name, {}, local=False), name
    assert variant_allowed("random", {}) and not variant_allowed("random", {}, local=False)
    assert variant_allowed("shuffled", {}, local=False)
    env = {"CONTEXT_LENS_MODELS": "bert-base-uncased"}  # a list, when set, is everyone's
    assert model_allowed("bert-base-uncased", env, local=False) and not model_allowed(DECODER_MODEL, env, local=False)


def test_a_visitor_from_another_machine_is_refused_in_the_app(monkeypatch, tmp_path):
    """ui.cache.try_encoder with a session from another machine: a folder on this disk, a random-weights key and a
    download are refused with the one message; the default and the shuffled control load."""
    from ui import cache, visitor

    monkeypatch.delenv("CONTEXT_LENS_MODELS", raising=False)
    monkeypatch.setattr(visitor, "local", lambda: False)
    cache._failed_models.clear()
    for name in (str(default_model_path()), str(tmp_path), "bert-base-uncased", "sentence-transformers/all-MiniLM-L6-v2#random-4"):
        assert cache.try_encoder(name) == (None, HOSTED_REFUSAL), name
    assert cache.try_encoder("sentence-transformers/all-MiniLM-L6-v2")[0] is not None


def test_hosted_mode_refuses_a_folder_with_the_same_message_as_a_missing_id(monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXT_LENS_MODELS", "org/listed-but-absent")
    messages = set()
    for name in (str(tmp_path), str(default_model_path()), "org/missing", "/no/such", "../../etc"):
        with pytest.raises(ModelLoadError) as err:
            load_encoder(name)
        messages.add(str(err.value))
    assert messages == {HOSTED_REFUSAL}
    assert load_encoder().num_layers == 6  # the default always loads


def test_hosted_mode_in_the_app_gives_one_message(monkeypatch, tmp_path):
    """The sidebar's loader: a refused name and a listed id that fails to load say the same thing."""
    from ui import cache

    monkeypatch.setenv("CONTEXT_LENS_MODELS", "org/listed-but-absent")
    cache._failed_models.clear()
    got = {cache.try_encoder(n)[1] for n in (str(tmp_path), "/etc", "org/missing", "org/listed-but-absent")}
    assert got == {HOSTED_REFUSAL}


def test_parameter_estimate_and_size_limit(encoder, monkeypatch):
    real = sum(p.numel() for p in encoder.model.parameters())
    assert abs(estimate_parameters(encoder.model.config) - real) / real < 0.02
    monkeypatch.setenv("CONTEXT_LENS_MAX_PARAMS", "1000000")
    with pytest.raises(ModelLoadError, match="parameters; this server loads models up to 1 M"):
        load_encoder(str(default_model_path()))  # the bundled files, named as a folder: checked
    assert load_encoder().name  # the default itself is never refused


def test_recomputation_asks_for_attentions_when_an_encoding_has_none(encoder):
    from lib.models.recompute import recompute_attention

    cheap = encoder.encode(["The bank raised its rates."], attentions=False)
    with pytest.raises(ValueError, match="attentions=True"):
        recompute_attention(encoder, cheap, 0, 0, 0)


# --------------------------------------------------------------------------------- per-sentence encodings
def test_sets_share_per_sentence_encodings_and_a_set_larger_than_the_cache_gets_all(encoder, monkeypatch):
    from lib.models.encoder import DEFAULT_MODEL
    from ui import cache
    from ui.cache import store

    m = DEFAULT_MODEL
    a = ("The bank raised its rates.", "We sat on the river bank.", "The bank closed early today.")
    b = (a[0], "A new bank opened downtown yesterday.", a[2], a[0])  # one new sentence, one repeated
    calls = cache.ENCODE_CALLS[m]
    ea = cache.encoding(m, a)
    eb = cache.encoding(m, b)
    assert cache.ENCODE_CALLS[m] == calls + 2  # the second set ran the model on its one new sentence only
    assert eb.hidden_states[0] is ea.hidden_states[0] and eb.hidden_states[3] is ea.hidden_states[0]
    assert eb.sentences == b and eb.attentions is None
    alone = encoder.encode([b[1]], attentions=False)
    np.testing.assert_allclose(eb.hidden_states[1], alone.hidden_states[0], atol=1e-4)
    assert eb.tokens[1] == alone.tokens[0]
    # a cache too small for one sentence still hands every sentence of the set to the caller
    monkeypatch.setattr(store, "RESULTS", ByteLRU(max_bytes=1))
    c = tuple(f"Sentence {k} about the bank." for k in range(5))
    ec = cache.encoding(m, c)
    assert ec.sentences == c and all(h.shape[0] == encoder.num_layers + 1 for h in ec.hidden_states)
    assert len(store.RESULTS) <= 2


def test_a_small_sets_run_keeps_each_sentences_attentions_for_the_attention_page(encoder):
    from lib.models.encoder import DEFAULT_MODEL
    from ui import cache

    m = DEFAULT_MODEL
    small = ("A small bank by the canal.", "The bank by the canal lends money.", "Canal banks flood.")
    big = tuple(f"Bank number {k} stands by the old canal." for k in range(cache.ATTENTIONS_WITH_SET + 1))
    calls = cache.ENCODE_CALLS[m]
    es = cache.encoding(m, small)
    assert es.attentions is None  # the set's own encoding stays lean
    for k, s in enumerate(small):
        att = cache.sentence_attention(m, s)  # no model run: kept from the set's run
        alone = encoder.encode([s], attentions=True)
        assert att.tokens[0] == es.tokens[k] == alone.tokens[0]
        np.testing.assert_allclose(att.attentions[0], alone.attentions[0], atol=1e-5)
        np.testing.assert_allclose(att.hidden_states[0], es.hidden_states[k], atol=0)
    assert cache.ENCODE_CALLS[m] == calls + 1
    cache.encoding(m, big)  # a larger set runs without them: the Attention page runs the model itself
    assert cache.ENCODE_CALLS[m] == calls + 2
    assert cache.sentence_attention(m, big[0]).attentions[0].shape[:2] == (encoder.num_layers, encoder.num_heads)
    assert cache.ENCODE_CALLS[m] == calls + 3
    # so does a set of few but long sentences, whose attentions would exceed the byte bound
    long = tuple(f"The bank {k} " + "stood by the long and winding canal " * 16 for k in range(4))
    pieces = min(encoder.piece_counts([long[0]])[0], budget.MAX_PIECES_PER_SENTENCE)
    assert 4 * pieces**2 * encoder.num_layers * encoder.num_heads * 4 > cache.ATTENTIONS_WITH_SET_BYTES
    cache.encoding(m, long)
    cache.sentence_attention(m, long[0])
    assert cache.ENCODE_CALLS[m] == calls + 5


def test_server_runs_blas_on_the_configured_threads(monkeypatch):
    from threadpoolctl import threadpool_info

    from ui import startup

    monkeypatch.setenv("CONTEXT_LENS_BLAS_THREADS", "1")
    assert startup.limit_blas_threads() == 1
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas and all(p["num_threads"] == 1 for p in blas)



@pytest.mark.slow  # over ~5 s: left out of the fast tier
def test_a_blas_library_loaded_after_the_server_started_gets_the_same_threads():
    import subprocess
    import sys

    code = (
        "from ui import startup\n"
        "startup.start()\n"  # what serve.py and app.py call once, before any page runs
        "import scipy.linalg, sklearn.decomposition, umap\n"  # what a first projection loads, later
        "from threadpoolctl import threadpool_info\n"
        "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["CONTEXT_LENS_BLAS_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[1]"


def test_an_uploaded_file_is_parsed_once_per_content_and_a_failed_parse_is_not_kept():
    from lib.errors import ContextLensError
    from lib.inputs.upload import UploadError, parse_upload
    from ui import cache

    calls = []

    def parse(data: bytes):
        calls.append(data)
        return parse_upload(data, "bank", "set.csv")

    data = b"money,The bank raised rates.\nriver,We sat on the river bank.\n"
    first = cache.parsed_upload("test|bank", data, parse)
    again = cache.parsed_upload("test|bank", data, parse)
    assert again is first and len(calls) == 1 and len(first) == 2
    cache.parsed_upload("test|bank", data + b"money,The bank closed.\n", parse)  # new content: parsed again
    assert len(calls) == 2
    for _ in range(2):  # a file that fails says so on every rerun: its error is not cached
        with pytest.raises(ContextLensError):
            cache.parsed_upload("test|bank", b"\x89PNG\r\n\x1a\n\x00\x00", parse)
    assert len(calls) == 4 and issubclass(UploadError, ContextLensError)
