"""Context Lens benchmark: every figure against a baseline measured in the same run (a script, not tests).

    python -m benchmarks run --section model   # how to run it: the sections of benchmarks/__main__.py
    python benchmarks/bench.py                 # all five sections, prints a table (--out FILE: JSON too)
    python benchmarks/bench.py --only 1,2      # some sections
    python benchmarks/bench.py --repeats 5     # timed repetitions per measurement (medians are reported)

Sections:
  1. encode() of the default preset vs a bare transformers forward pass with hidden states + attentions
     (same model object, same sentences); target ratio <= 1.15.
  2. Warm rerun of each page file (AppTest, cached encoder) vs an empty Streamlit page; target < 0.25 s.
  3. Cold start: `streamlit run serve.py` to the home page's chart drawn in Chromium, vs a floor measured
     now: a one-chart Streamlit app to its chart in Chromium + a bare process that imports transformers
     and loads the model; target ratio <= 1.2.
  4. First UMAP after a server start (fresh process; after the app's warm-up, and without it) vs PCA on
     the same vectors; target <= 2 s.
  5. 500 uploaded sentences through the "Layer by layer" page (AppTest in a fresh process): time from
     pressing "Use these sentences" to the charts, and the process's peak RSS; target <= 1.5 GB.

Every figure is reported whether its target is met or not. Timings are wall-clock medians; the machine's
load average is recorded because the cores may be shared with other processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.runs import git_commit, median  # noqa: E402  (the repository root is put on the path first)

ROWS: list[dict] = []


def row(section: str, what: str, value: float, unit: str, *, baseline: float | None = None,
        baseline_what: str = "", target: str = "", met: bool | None = None, runs: list[float] | None = None,
        note: str = "") -> dict:  # fmt: skip
    r = {
        "section": section,
        "what": what,
        "value": round(value, 4) if value == value else None,  # NaN (skipped/failed) -> null
        "unit": unit,
        "baseline": None if baseline is None else round(baseline, 4),
        "baseline_what": baseline_what,
        "ratio": None if not baseline else round(value / baseline, 3),
        "target": target,
        "met": met,
        "runs": [round(x, 4) for x in runs] if runs else [],
        "note": note,
    }
    ROWS.append(r)
    mark = {True: "met", False: "NOT met", None: ""}[met]
    base = f"  baseline {baseline:.3f} {unit} ({baseline_what})" if baseline is not None else ""
    ratio = f"  ratio {r['ratio']}" if r["ratio"] is not None else ""
    print(f"  [{section}] {what}: {value:.3f} {unit}{base}{ratio}  {target} {mark} {note}", flush=True)
    return r


def run_child(code: str, timeout: float = 1800) -> dict:
    """Run Python code in a fresh interpreter (repo root on the path); it prints one JSON line last."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["_wall"] = wall
    return data


# =========================================================================================== 1. encode
def bench_encode(repeats: int) -> None:
    import torch

    from lib.inputs.presets import default_preset
    from lib.models.encoder import load_encoder

    print("1. encode() vs a bare forward pass", flush=True)
    enc = load_encoder()
    sents = [s for _, s in default_preset().rows]
    tok, model = enc.tokenizer, enc.model

    def bare():
        with torch.inference_mode():
            batch = tok(sents, return_tensors="pt", padding=True, truncation=True, max_length=enc.max_tokens)
            return model(**batch, output_hidden_states=True, output_attentions=True)

    def ours():
        return enc.encode(sents)

    for _ in range(3):  # warm both paths
        bare()
        ours()
    t_ours, t_bare = [], []
    for r in range(repeats * 3):
        order = (ours, bare) if r % 2 == 0 else (bare, ours)
        for f in order:
            t0 = time.perf_counter()
            f()
            (t_ours if f is ours else t_bare).append(time.perf_counter() - t0)
    m_ours, m_bare = median(t_ours), median(t_bare)
    row(
        "1",
        f"encode() of the default preset ({len(sents)} sentences)",
        m_ours,
        "s",
        baseline=m_bare,
        baseline_what="tokenizer + model(output_hidden_states, output_attentions)",
        target="ratio <= 1.15",
        met=m_ours / m_bare <= 1.15,
        runs=t_ours,
    )


# =========================================================================================== 2. pages
def app_pages() -> list[str]:
    from tests.browser._browser import app_pages as pages

    return [p for p, _t, _d in pages()]


def bench_pages(repeats: int) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.conftest import page_test

    print("2. warm rerun of each page vs an empty Streamlit page", flush=True)
    empty = AppTest.from_string("import streamlit as st\nst.write('')", default_timeout=60)
    empty.run()
    t_empty = []
    for _ in range(repeats * 2):
        t0 = time.perf_counter()
        empty.run()
        t_empty.append(time.perf_counter() - t0)
    m_empty = median(t_empty)
    row("2", "empty Streamlit page, rerun", m_empty, "s", runs=t_empty, note="the baseline for section 2")
    for path in app_pages():
        at = page_test(path)
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        problems = [e.value for e in at.exception]
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
            problems += [e.value for e in at.exception]
        m = median(times)
        row(
            "2",
            f"{path} warm rerun",
            m,
            "s",
            baseline=m_empty,
            baseline_what="empty page rerun",
            target="< 0.25 s",
            met=m < 0.25 and not problems,
            runs=times,
            note=f"first run in this process {first:.2f} s (model and caches warm from earlier pages)"
            + (f"; EXCEPTION: {problems[0][:120]}" if problems else ""),
        )


# =========================================================================================== 3. cold start
FLOOR_APP = """
import plotly.graph_objects as go
import streamlit as st

st.title("Floor")
st.plotly_chart(go.Figure(go.Heatmap(z=[[1.0, 0.5], [0.5, 1.0]])))
"""

BARE_LOAD = """
import json, time
t0 = time.perf_counter()
import torch
from transformers import AutoModel, AutoTokenizer
from lib.models.encoder import default_model_path
p = str(default_model_path())
AutoTokenizer.from_pretrained(p, local_files_only=True)
AutoModel.from_pretrained(p, attn_implementation="eager", local_files_only=True).eval()
print(json.dumps({"load": time.perf_counter() - t0}))
"""


def _time_to_chart(ctx, app: str, cwd: Path, path: str = "/") -> tuple[float, float]:
    """Seconds from spawning `streamlit run <app>` to its first plotly chart drawn in the browser, and
    the part of it until the server answered /_stcore/health."""
    from tests.browser._browser import JS_IDLE, LOAD_MS, start_server, stop_server

    js_chart = """() => { const g = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
        return g !== null && Array.isArray(g.data) && g.data.length > 0; }"""
    t0 = time.perf_counter()
    proc, base, _log = start_server(app=app, cwd=cwd)
    healthy = time.perf_counter() - t0
    page = ctx.new_page()
    try:
        page.goto(base + path)
        page.wait_for_function(js_chart, timeout=LOAD_MS)
        elapsed = time.perf_counter() - t0
        page.wait_for_function(JS_IDLE, timeout=LOAD_MS)
        if page.locator("[data-testid='stException']").count():
            raise RuntimeError(f"{app}: exception on the page")
        return elapsed, healthy
    finally:
        page.close()
        stop_server(proc)


def bench_cold_start(repeats: int) -> None:
    from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, _missing_browser_reason

    print("3. cold start to the first chart in Chromium vs a floor", flush=True)
    reason = _missing_browser_reason()
    if reason:
        row("3", "cold start", float("nan"), "s", note=f"skipped: {reason}")
        return
    from playwright.sync_api import sync_playwright

    runs = max(2, min(repeats, 3))
    t_app, t_floor_app, t_load, h_app, h_floor = [], [], [], [], []
    with (
        tempfile.TemporaryDirectory() as tmp,
        tempfile.TemporaryDirectory() as profile,
        sync_playwright() as p,
    ):
        floor_dir = Path(tmp)
        (floor_dir / "floor.py").write_text(FLOOR_APP)
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )  # fmt: skip
        try:
            # one untimed round so every measurement reads files from a warm disk cache
            _time_to_chart(ctx, "floor.py", floor_dir)
            run_child(BARE_LOAD)
            for _ in range(runs):
                a, ha = _time_to_chart(ctx, "serve.py", ROOT)
                f, hf = _time_to_chart(ctx, "floor.py", floor_dir)
                t_app.append(a)
                h_app.append(ha)
                t_floor_app.append(f)
                h_floor.append(hf)
                t_load.append(run_child(BARE_LOAD)["_wall"])
        finally:
            ctx.close()
    m_app, m_fa, m_load = median(t_app), median(t_floor_app), median(t_load)
    floor = m_fa + m_load
    row("3", "one-chart Streamlit app: spawn to chart", m_fa, "s", runs=t_floor_app,
        note=f"part of the floor; server healthy after {median(h_floor):.2f} s")  # fmt: skip
    row("3", "bare process: import transformers + load the model", m_load, "s", runs=t_load,
        note="part of the floor (interpreter start included)")  # fmt: skip
    row(
        "3",
        "Context Lens: `streamlit run serve.py` to the home chart",
        m_app,
        "s",
        baseline=floor,
        baseline_what="one-chart app + bare model load",
        target="ratio <= 1.2",
        met=m_app / floor <= 1.2,
        runs=t_app,
        note=f"server healthy after {median(h_app):.2f} s",
    )


# =========================================================================================== 4. UMAP
UMAP_CHILD = """
import json, sys, time
import numpy as np
warm = {warm}
X = np.load({path!r})
t0 = time.perf_counter()
from lib.stats.projection import pca_projection, umap_projection, warm_up_umap
imp = time.perf_counter() - t0
w = warm_up_umap() if warm else 0.0
t0 = time.perf_counter(); umap_projection(X, 2); first = time.perf_counter() - t0
t0 = time.perf_counter(); umap_projection(X, 2); second = time.perf_counter() - t0
pcas = []
for _ in range(5):
    t0 = time.perf_counter(); pca_projection(X, 2); pcas.append(time.perf_counter() - t0)
pca = sorted(pcas)[2]
from threadpoolctl import threadpool_limits
pcas1 = []
with threadpool_limits(limits=1):  # the same SVD with one BLAS thread (no oversubscription on busy cores)
    for _ in range(5):
        t0 = time.perf_counter(); pca_projection(X, 2); pcas1.append(time.perf_counter() - t0)
print(json.dumps({{"import": imp, "warm_up": w, "first": first, "second": second, "pca": pca,
                  "pca_first": pcas[0], "pca_1thread": sorted(pcas1)[2], "n": len(X)}}))
"""


def _projection_input():
    """What the Projections page projects by default: the bank targets + other tokens, last layer."""
    import numpy as np

    from lib.inputs.presets import default_preset
    from lib.models.encoder import load_encoder

    enc = load_encoder()
    p = default_preset()
    tv = enc.target_vectors([s for _, s in p.rows], p.target)
    rows = [tv.vectors[:, -1, :]]
    for i, hs in enumerate(tv.encoding.hidden_states):
        keep = [k for k, t in enumerate(tv.encoding.tokens[i]) if k not in tv.spans[i].token_indices
                and t not in ("[CLS]", "[SEP]")]  # fmt: skip
        rows.append(hs[-1, keep, :])
    return np.concatenate(rows)[:412].astype(np.float32)


def bench_umap(repeats: int) -> None:
    import numpy as np

    print("4. first UMAP after a server start vs PCA", flush=True)
    X = _projection_input()
    runs = max(2, min(repeats, 3))
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "X.npy")
        np.save(path, X)
        warm = [run_child(UMAP_CHILD.format(path=path, warm=True)) for _ in range(runs)]
        cold = [run_child(UMAP_CHILD.format(path=path, warm=False)) for _ in range(runs)]
    pca = median([r["pca"] for r in warm + cold])
    first_warm = median([r["first"] for r in warm])
    row("4", f"PCA of {len(X)} vectors (median of 5 per process)", pca, "s", runs=[r["pca"] for r in warm + cold],
        note=f"first PCA in a process {median([r['pca_first'] for r in warm + cold]):.3f} s")  # fmt: skip
    row("4", "PCA, same vectors, one BLAS thread (threadpool_limits(1))", median([r["pca_1thread"] for r in warm + cold]),
        "s", runs=[r["pca_1thread"] for r in warm + cold], note="shows the cost of BLAS threads on shared cores")  # fmt: skip
    row("4", "app's UMAP warm-up (background thread after the first page)", median([r["warm_up"] for r in warm]),
        "s", runs=[r["warm_up"] for r in warm], note="import umap + compile; numba's on-disk cache may be warm")  # fmt: skip
    row(
        "4",
        f"first UMAP of {len(X)} vectors after the warm-up",
        first_warm,
        "s",
        baseline=pca,
        baseline_what="PCA, same vectors",
        target="<= 2 s",
        met=first_warm <= 2.0,
        runs=[r["first"] for r in warm],
    )
    first_cold = median([r["import"] + r["first"] for r in cold])
    row(
        "4",
        "first UMAP without the warm-up (import + fit)",
        first_cold,
        "s",
        baseline=pca,
        baseline_what="PCA, same vectors",
        target="<= 2 s",
        met=first_cold <= 2.0,
        runs=[r["import"] + r["first"] for r in cold],
        note="what a learner waits if Projections is opened before the warm-up has finished",
    )
    row("4", "second UMAP, same process", median([r["second"] for r in warm + cold]), "s",
        baseline=pca, baseline_what="PCA")  # fmt: skip


# =========================================================================================== 5. 500 sentences
def make_500_csv() -> tuple[bytes, int]:
    """500 labelled rows from the presets (target in brackets) and the reference corpus (a word marked)."""
    import csv
    import io

    from lib.inputs.corpus import load_reference_corpus
    from lib.inputs.presets import load_presets
    from lib.models.targets import find_target

    rows = []
    for p in load_presets():
        for _sense, s in p.rows:
            sp = find_target(s, p.target)
            rows.append((p.id, sp.sentence[: sp.start] + "[" + sp.word + "]" + sp.sentence[sp.end :]))
    for s in load_reference_corpus().sentences:
        m = re.search(r"\b[A-Za-z]{5,}\b", s)
        if m and "[" not in s and "]" not in s:
            rows.append(("corpus", s[: m.start()] + "[" + m.group() + "]" + s[m.end() :]))
        if len(rows) == 500:
            break
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["sense", "sentence"])
    w.writerows(rows)
    return buf.getvalue().encode("utf-8"), len(rows)


LAYERS_CHILD = """
import json, resource, time, sys
import pandas  # noqa: F401
from tests.conftest import page_test
data = open({path!r}, "rb").read()
at = page_test("pages/layers.py", layers_upload_box=True)  # the upload's expander open
t0 = time.perf_counter(); at.run(); first = time.perf_counter() - t0
assert not at.exception, [e.value for e in at.exception]
rss_base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
at.file_uploader(key="layers_upload").set_value(("bench500.csv", data, "text/csv"))
at.run()
assert not at.exception, [e.value for e in at.exception]
t0 = time.perf_counter()
at.button(key="layers_upload_apply").click()
at.run(timeout=1800)
to_charts = time.perf_counter() - t0
errors = [e.value for e in at.exception]
n_sent = len(at.session_state["cl_text"].splitlines())
charts = len(at.get("plotly_chart"))
t0 = time.perf_counter(); at.run(); rerun = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"first": first, "to_charts": to_charts, "rerun": rerun, "rss_base_mb": rss_base,
                   "rss_peak_mb": peak, "charts": charts, "sentences": n_sent, "errors": errors[:1]}}))
"""


def bench_500(repeats: int) -> None:
    print("5. 500 uploaded sentences through the Layer by layer page", flush=True)
    data, n = make_500_csv()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench500.csv")
        Path(path).write_bytes(data)
        r = run_child(LAYERS_CHILD.format(path=path), timeout=3600)
    ok = not r["errors"] and r["charts"] > 0
    row("5", "layers page, default preset (first run, fresh process, model load included)", r["first"], "s",
        note="baseline for the 500-sentence run")  # fmt: skip
    row(
        "5",
        f"{r['sentences']} uploaded sentences: 'Use these sentences' to charts",
        r["to_charts"],
        "s",
        baseline=r["first"],
        baseline_what="default preset first run",
        met=ok,
        note=f"{r['charts']} charts" + (f"; EXCEPTION {r['errors'][0][:120]}" if r["errors"] else ""),
    )
    row("5", "the same page, warm rerun with 500 sentences", r["rerun"], "s", target="< 0.25 s",
        met=r["rerun"] < 0.25)  # fmt: skip
    row(
        "5",
        "peak RSS of the process",
        r["rss_peak_mb"] / 1024,
        "GB",
        baseline=r["rss_base_mb"] / 1024,
        baseline_what="after the default preset (model loaded)",
        target="<= 1.5 GB",
        met=r["rss_peak_mb"] / 1024 <= 1.5,
    )


# =========================================================================================== main
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for mod in ("torch", "transformers", "streamlit", "plotly", "umap", "sklearn", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # an optional package missing: say so
            out[mod] = "missing"
    return out


def print_table() -> None:
    print()
    head = f"{'sec':<4}{'what':<66}{'value':>10}  {'baseline':>10}  {'ratio':>6}  {'target':<14}{'met':<8}"
    print(head)
    print("-" * len(head))
    for r in ROWS:
        v = f"{r['value']:.3f} {r['unit']}" if r["value"] is not None else "n/a"
        b = f"{r['baseline']:.3f} {r['unit']}" if r["baseline"] is not None else ""
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else ""
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        what = textwrap.shorten(r["what"], 64)
        print(f"{r['section']:<4}{what:<66}{v:>10}  {b:>10}  {ratio:>6}  {r['target']:<14}{met:<8}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="1,2,3,4,5", help="comma-separated sections to run")
    ap.add_argument("--repeats", type=int, default=7, help="timed repetitions per measurement")
    ap.add_argument("--out", default=None, help="write the rows here (python -m benchmarks passes its own file)")
    a = ap.parse_args()
    sections = {s.strip() for s in a.only.split(",")}
    started = dt.datetime.now(dt.UTC)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    funcs = {"1": bench_encode, "2": bench_pages, "3": bench_cold_start, "4": bench_umap, "5": bench_500}
    for key in sorted(sections):
        try:
            funcs[key](a.repeats)
        except Exception as err:  # report and go on: one broken section must not hide the others
            row(
                key,
                f"section {key} failed",
                float("nan"),
                "s",
                note=f"{type(err).__name__}: {str(err)[:300]}",
            )
    load1 = os.getloadavg()
    print_table()
    meta = {
        "started_utc": started.isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - t0, 1),
        "git_commit": git_commit(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in load0],
        "loadavg_end": [round(x, 2) for x in load1],
        "repeats": a.repeats,
        "versions": _versions(),
        "peak_rss_bench_process_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 3),
        "caveat": (
            "Wall-clock medians on a machine whose cores are shared with other processes (see loadavg); "
            "ratios against baselines from the same run are more reliable than the absolute seconds."
        ),
    }
    if a.out:
        Path(a.out).write_text(json.dumps({"meta": meta, "rows": ROWS}, indent=2, allow_nan=False) + "\n")
    print(f"\nload average {load0[0]:.1f} -> {load1[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
