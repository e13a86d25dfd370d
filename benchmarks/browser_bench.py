"""Context Lens in a real browser against a real server: a script, not tests.

    python -m benchmarks run --section browser              # how to run it (class: --section class)
    python benchmarks/browser_bench.py                      # every section (--out FILE: JSON too)
    python benchmarks/browser_bench.py --only interactions  # some sections: config, interactions, big, class
    python benchmarks/browser_bench.py --repeats 5 --class-sizes 1,10,30
    python benchmarks/browser_bench.py --only interactions --models encoder,decoder --ports 9170-9179

What is measured (Playwright driving Debian's /usr/bin/chromium, `streamlit run` on a free port, the
repository's .streamlit/config.toml):

* **interactions**: on every page with the default preset, after the model is warm (UMAP is warmed up, in a
  tab of its own, just before Projections is measured, as the first learner to choose UMAP would): a rerun
  (key "r") and changing each page's main controls (layer, head, method, pooling...). Once per model of
  ``--models`` (default: the encoder, then the decoder, each in a session of its own on the same server, each
  page visited once before it is measured).
  Per interaction: time from the input to the server's "script finished" message arriving in the browser
  (``input``), the same from the browser sending its rerun request (``request``, which leaves out the
  widgets' own client-side debounce), the server process's CPU seconds (/proc/<pid>/stat, user + system, read
  after the server went quiet), and the bytes the server sent for the rerun (websocket frames; ``plotly`` =
  the plotly JSON among them, sent in full; figures the browser already holds go as a short reference).
  The **floor**: an empty Streamlit page (a title) served by a second server with the same configuration, in
  the same browser, same run. Then the server's RSS after every page has been visited.
* **big**: the same interactions on Layer by layer, Start here and Attention with 500 sentences.
* **config**: before/after for the speed settings: a fresh server per configuration (file watcher,
  Streamlit's post-script gc.collect(), ui.startup.freeze_heap's gc.freeze()), reruns of Start here and
  Attention in each.
* **class**: N students (N = 1, 10, 30 by default) in one headless Chromium, a browser context each, open
  a link with their own 8 sentences at the same moment, then click "Attention". Time to the first chart
  (p50 / p95 / max) and to the Attention page's charts, the server's CPU seconds for the class, its peak RSS,
  and the server-side time of each session's script runs (``CONTEXT_LENS_RUN_LOG=1``, see ui/timing.py).
  ``--class-static`` says who serves Streamlit's front-end files (/static/), each size once per choice:
  ``serve`` (the shipped entry, serve.py: compressed from memory by ui.static_files; the default),
  ``server`` (plain `streamlit run app.py`: Streamlit's own uncompressed file reads) and ``proxy`` (app.py
  behind an emulated reverse proxy: the browser answers /static/ from Streamlit's build folder on disk, as
  nginx or a CDN in front of the server would; docs/hosting.md).

Seconds on a shared two-core machine are noisy: compare with the floor measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.runs import git_commit, latest_results, median  # noqa: E402  (the repository root is put on the path first)
from tests.browser._browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    JS_CHARTS_DRAWN,
    JS_IDLE,
    LOAD_MS,
    _missing_browser_reason,
    start_server,
    stop_server,
)

TICK = os.sysconf("SC_CLK_TCK")
FLOOR_APP = 'import streamlit as st\n\nst.title("Floor")\n'
PAGES_ONLY: set[str] = set()  # --pages: measure only these page titles
PORTS: list[int] = []  # --ports: the servers' ports, taken in turn (default: any free port)
OUT: dict = {"sections": {}}

# The configurations compared in the "config" section: (name, command-line options, environment).
BEFORE = ["--server.fileWatcherType", "auto", "--runner.postScriptGC", "true"]
CONFIGS = [
    ("before: watcher on, post-script GC, no freeze", BEFORE, {"CONTEXT_LENS_GC_FREEZE": "0"}),
    ("watcher off", ["--runner.postScriptGC", "true"], {"CONTEXT_LENS_GC_FREEZE": "0"}),
    ("watcher off + no post-script GC", [], {"CONTEXT_LENS_GC_FREEZE": "0"}),
    ("watcher off + gc.freeze (post-script GC kept)", ["--runner.postScriptGC", "true"], {}),
    ("shipped: watcher off + no post-script GC + gc.freeze", [], {}),
]


def pct(xs: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by the nearest-rank method (p95 of 10 values is the largest)."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 1)) - 1))
    return xs[k]


def r3(x):
    return None if x is None else round(float(x), 4)


# =========================================================================================== the server
class Server:
    """A `streamlit run` process: its CPU seconds, RSS and run log, read from /proc and its log file."""

    def __init__(self, app: str = "serve.py", cwd: Path = ROOT, extra_args=None, env=None):
        port = None
        if PORTS:  # the next port of the range, in turn (a server stopped earlier has freed its port)
            port = PORTS.pop(0)
            PORTS.append(port)
        self.proc, self.base, self.log = start_server(app=app, cwd=cwd, extra_args=extra_args, env=env, port=port)
        self.pid = self.proc.pid
        self._peak = 0
        self._sampling = False

    def cpu(self) -> float:
        """User + system CPU seconds of the server process so far (all its threads)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def _status(self, key: str) -> float:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024**2  # kB -> GB
        return float("nan")

    def rss(self) -> float:
        return self._status("VmRSS")

    def hwm(self) -> float:
        """Peak RSS since the process started (GB)."""
        return self._status("VmHWM")

    def wait_quiet(self, span: float = 1.0, below: float = 0.03, timeout: float = 180.0) -> float:
        """Wait until the server spends less than ``below`` CPU seconds in ``span`` seconds; return the wait."""
        t0 = time.perf_counter()
        last = self.cpu()
        while time.perf_counter() - t0 < timeout:
            time.sleep(span)
            now = self.cpu()
            if now - last < below:
                break
            last = now
        return time.perf_counter() - t0

    def start_peak(self) -> None:
        """Sample RSS every 50 ms in a thread until stop_peak() (VmHWM cannot be reset between phases)."""
        self._peak = self.rss()
        self._sampling = True

        def run():
            while self._sampling:
                try:
                    self._peak = max(self._peak, self.rss())
                except OSError:
                    return
                time.sleep(0.05)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop_peak(self) -> float:
        self._sampling = False
        self._thread.join(timeout=2)
        return self._peak

    def log_size(self) -> int:
        return Path(self.log).stat().st_size

    def run_lines(self, since: int = 0) -> list[dict]:
        """The ``context-lens-run`` lines (ui/timing.py) written after byte offset ``since``."""
        with open(self.log, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        out = []
        for m in re.finditer(r"context-lens-run session=(\S+) page=(\S+) wall=([\d.]+) cpu=([\d.]+)", text):
            out.append({"session": m[1], "page": m[2], "wall": float(m[3]), "cpu": float(m[4])})
        return out

    def stop(self) -> None:
        stop_server(self.proc)
        text = Path(self.log).read_text(errors="replace")
        if "Traceback" in text:
            print(f"  (server log with a traceback kept: {self.log})", flush=True)
        else:
            Path(self.log).unlink(missing_ok=True)


# =========================================================================================== a browser tab
def _forward_kind(payload: bytes) -> tuple[str, int, str]:
    """(message type, plotly JSON bytes in it, script-finished status) of one websocket frame."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    try:
        msg.ParseFromString(payload)
    except Exception:  # not a ForwardMsg: count its bytes only
        return "other", 0, ""
    kind = msg.WhichOneof("type") or "none"
    plotly = 0
    status = ""
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        el = msg.delta.new_element
        if el.WhichOneof("type") == "plotly_chart":
            plotly = len(el.plotly_chart.spec)
    elif kind == "script_finished":
        status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
    return kind, plotly, status


@dataclass
class Frame:
    t: float
    sent: bool
    nbytes: int
    kind: str = ""
    plotly: int = 0
    status: str = ""


@dataclass
class Tab:
    """A Playwright page (one Streamlit session) whose websocket frames are recorded with timestamps."""

    page: object
    frames: list[Frame] = field(default_factory=list)

    def __post_init__(self):
        self.page.on("websocket", self._on_ws)
        self.cdp = None
        try:
            self.cdp = self.page.context.new_cdp_session(self.page)
            self.cdp.send("Performance.enable")
        except Exception:  # not Chromium: no renderer figures
            self.cdp = None

    def renderer_busy(self) -> float | None:
        """Seconds the page's renderer main thread has spent on tasks so far (CDP TaskDuration)."""
        if self.cdp is None:
            return None
        metrics = self.cdp.send("Performance.getMetrics")["metrics"]
        return next((m["value"] for m in metrics if m["name"] == "TaskDuration"), None)

    def _on_ws(self, ws) -> None:
        if "_stcore/stream" not in ws.url:
            return

        def received(payload):
            t = time.perf_counter()
            data = payload if isinstance(payload, bytes) else payload.encode()
            kind, plotly, status = _forward_kind(data)
            self.frames.append(Frame(t, False, len(data), kind, plotly, status))

        def sent(payload):
            t = time.perf_counter()
            data = payload if isinstance(payload, bytes) else payload.encode()
            self.frames.append(Frame(t, True, len(data), "back"))

        ws.on("framereceived", received)
        ws.on("framesent", sent)

    def finished_after(self, i0: int) -> Frame | None:
        for f in self.frames[i0:]:
            if f.kind == "script_finished" and f.status == "FINISHED_SUCCESSFULLY":
                return f
        return None


def new_tab(ctx) -> Tab:
    page = ctx.new_page()
    page.set_default_timeout(LOAD_MS)
    return Tab(page)


def open_page(tab: Tab, url: str, charts: bool = True) -> None:
    tab.page.goto(url)
    tab.page.wait_for_selector("[data-testid='stApp']")
    tab.page.wait_for_function(JS_IDLE)
    if charts:
        tab.page.wait_for_function(JS_CHARTS_DRAWN)
    tab.page.wait_for_function(JS_IDLE)


def goto_nav(tab: Tab, title: str, server: Server | None = None) -> None:
    """Open a page through the sidebar navigation (same session), and wait until it has finished."""
    i0 = len(tab.frames)
    tab.page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    _wait_finished(tab, i0)
    tab.page.wait_for_function(JS_IDLE)


def _wait_finished(tab: Tab, i0: int, timeout: float = 600.0) -> Frame:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        f = tab.finished_after(i0)
        if f is not None:
            return f
        tab.page.wait_for_timeout(3)  # lets Playwright deliver the websocket events meanwhile
    raise TimeoutError("the script run did not finish")


# =========================================================================================== interactions
# An interaction is (prepare, act): ``prepare`` (not timed) finds and focuses the control, ``act`` is the input.
def _slider(label: str):
    state = {"key": "ArrowLeft"}

    def prepare(pg):
        box = pg.locator("[data-testid='stMain'] [data-testid='stSlider']", has_text=label).first
        thumb = box.get_by_role("slider").first
        thumb.focus()
        now, top = thumb.evaluate("e => [e.value, e.max]")  # an <input type=range> in Streamlit 1.67
        state["key"] = "ArrowLeft" if now == top else "ArrowRight"  # one step, back and forth

    def act(pg):
        pg.keyboard.press(state["key"])

    return prepare, act


def _radio(label: str, a: str, b: str):
    state = {"next": b}
    found = {}

    def prepare(pg):
        group = pg.locator("[data-testid='stMain'] [data-testid='stRadio']", has_text=label).first
        found["el"] = group.locator("label", has_text=state["next"]).first
        found["el"].scroll_into_view_if_needed()

    def act(pg):
        found["el"].click()
        state["next"] = a if state["next"] == b else b

    return prepare, act


def _toggle(label: str):
    found = {}

    def prepare(pg):
        box = pg.locator("[data-testid='stMain'] [data-testid='stCheckbox']", has_text=label).first
        found["el"] = box.locator("label").first
        found["el"].scroll_into_view_if_needed()

    def act(pg):
        found["el"].click()

    return prepare, act


def _button(a: str, b: str):
    state = {"next": a}
    found = {}

    def prepare(pg):
        found["el"] = pg.get_by_role("button", name=state["next"]).first
        found["el"].scroll_into_view_if_needed()

    def act(pg):
        found["el"].click()
        state["next"] = b if state["next"] == a else a

    return prepare, act


def _rerun_prepare(pg):
    pg.locator("[data-testid='stMain'] h1").first.click()  # focus the page, not a text box


def _rerun_act(pg):
    pg.keyboard.press("r")


_rerun = (_rerun_prepare, _rerun_act)

# page title -> [(interaction name, (prepare, act))]; the controls each page's learner moves most
PAGE_ACTIONS = {
    "Start here": [("rerun (r)", _rerun)],
    "Layer by layer": [
        ("rerun (r)", _rerun),
        ("layer slider", _slider("Layer")),
        ("pooling", _radio("Vector of the word", "one layer", "mean of last 4 layers")),
    ],
    "Attention": [("rerun (r)", _rerun), ("layer slider", _slider("Layer")), ("head slider", _slider("Head"))],
    "Anisotropy": [("rerun (r)", _rerun), ("layer slider", _slider("Layer"))],
    "Projections": [
        ("rerun (r)", _rerun),
        ("layer slider", _slider("Layer")),
        ("method PCA/UMAP", _radio("Method", "PCA", "UMAP")),
    ],
    "Attention by hand": [("rerun (r)", _rerun), ("scaling toggle", _toggle("scaling"))],
    "Guided lesson": [("rerun (r)", _rerun), ("next/back step", _button("Next →", "← Back"))],
}


def _once(tab: Tab, server: Server, action, timeout: float = 120.0) -> dict:
    """One interaction: time from the input / from the rerun request to "script finished", CPU, bytes."""
    server.wait_quiet(span=0.4, below=0.02, timeout=20)
    tab.page.wait_for_function(JS_IDLE)
    prepare, act = action
    prepare(tab.page)
    i0 = len(tab.frames)
    cpu0 = server.cpu()
    busy0 = tab.renderer_busy()
    t0 = time.perf_counter()
    act(tab.page)
    fin = _wait_finished(tab, i0, timeout=timeout)
    sent = [f for f in tab.frames[i0:] if f.sent and f.t <= fin.t]
    got = [f for f in tab.frames[i0:] if not f.sent and f.t <= fin.t]
    tab.page.wait_for_function(JS_IDLE)
    tab.page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")  # drawn
    drawn = time.perf_counter() - t0
    busy1 = tab.renderer_busy()
    server.wait_quiet(span=0.3, below=0.02, timeout=20)
    return {
        "drawn_s": drawn,
        "browser_busy_s": None if busy0 is None or busy1 is None else busy1 - busy0,
        "input_s": fin.t - t0,
        "request_s": fin.t - sent[0].t if sent else None,
        "cpu_s": server.cpu() - cpu0,
        "bytes": sum(f.nbytes for f in got),
        "plotly_bytes": sum(f.plotly for f in got),
        "messages": len(got),
    }


def _summary(runs: list[dict]) -> dict:
    out = {k: r3(median(r.get(k) for r in runs)) for k in ("input_s", "request_s", "cpu_s", "drawn_s", "browser_busy_s")}
    out["bytes"] = int(median(r["bytes"] for r in runs) or 0)
    out["plotly_bytes"] = int(median(r["plotly_bytes"] for r in runs) or 0)
    return out


def measure(tab: Tab, server: Server, action, repeats: int, warm: int = 1, floor=None) -> dict:
    """Repeat one interaction; medians of time (from input, from request), server CPU and bytes.

    ``floor`` = (tab, server) of the empty page: a floor rerun is measured just before each repetition, so
    the page and its floor see the same load on the machine; ``ratio`` is the median of the paired ratios.
    """
    runs, floors = [], []
    for k in range(warm + repeats):
        f = _once(floor[0], floor[1], _rerun) if floor is not None and k >= warm else None
        try:
            r = _once(tab, server, action)
        except TimeoutError:
            r = None
        if k < warm:
            continue
        if r is None:
            return {"failed": "the run did not finish within 120 s", "runs": runs}
        runs.append(r)
        if f is not None:
            floors.append(f)
    out = _summary(runs)
    if floors:
        out["floor"] = _summary(floors)
        out["ratio_input"] = r3(median(r["input_s"] / f["input_s"] for r, f in zip(runs, floors, strict=True)))
    out["runs"] = runs
    return out


def _launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def _context(browser):
    return browser.new_context(viewport={"width": 1400, "height": 1000})


@contextlib.contextmanager
def floor_server(browser):
    """The floor: an empty Streamlit page (a title) on a second server with the same configuration, open in
    its own tab of the same browser for the whole section; yields (tab, server)."""
    with tempfile.TemporaryDirectory(prefix="context-lens-floor-") as tmp:
        (Path(tmp) / "floor.py").write_text(FLOOR_APP)
        srv = Server(app=str(Path(tmp) / "floor.py"), cwd=ROOT)
        ctx = _context(browser)
        try:
            tab = new_tab(ctx)
            open_page(tab, srv.base + "/", charts=False)
            yield tab, srv
        finally:
            ctx.close()
            srv.stop()


def _pages() -> list[tuple[str, str, bool]]:
    from tests.browser._browser import app_pages

    return app_pages()


def _line(title: str, name: str, m: dict) -> str:
    if "failed" in m:
        return f"  {title:<18} {name:<18} FAILED: {m['failed']}"
    fl = m.get("floor", {})
    return (f"  {title:<18} {name:<18} {m['input_s']:.3f} s from input ({m['request_s']:.3f} s from request; "
            f"floor {fl.get('input_s', float('nan')):.3f} s, ratio {m.get('ratio_input')}), {m['cpu_s']:.3f} s CPU, "
            f"browser busy {m.get('browser_busy_s')} s, drawn after {m.get('drawn_s')} s, "
            f"{m['bytes'] / 1e3:.0f} kB sent ({m['plotly_bytes'] / 1e3:.0f} kB plotly JSON)")  # fmt: skip


def _model_link(model: str) -> str:
    """The start page's query string that opens a session with ``model`` ("encoder": the default, no parameter)."""
    from urllib.parse import quote

    from lib.models.keys import DECODER_MODEL

    return "" if model == "encoder" else "?model=" + quote(DECODER_MODEL if model == "decoder" else model, safe="")


def bench_interactions(browser, repeats: int, models: tuple[str, ...] = ("encoder",)) -> None:
    print(f"interactions: every page, default preset, warm server; models: {', '.join(models)}", flush=True)
    rows = []
    rss_before_umap = None
    with floor_server(browser) as floor:
        srv = Server()
        try:
            for model in models:  # one session (a tab of its own) per model, on the same server
                ctx = _context(browser)
                try:
                    rss_before_umap = _interactions(ctx, srv, floor, model, repeats, rows, rss_before_umap)
                finally:
                    ctx.close()
            srv.wait_quiet()
            rss, peak = srv.rss(), srv.hwm()
            print(f"  server RSS after every page: {rss:.2f} GB (peak {peak:.2f} GB)", flush=True)
        finally:
            srv.stop()
    OUT["sections"]["interactions"] = {
        "rows": rows,
        "models": list(models),
        "rss_after_every_page_gb": r3(rss),
        "rss_before_umap_gb": r3(rss_before_umap) if rss_before_umap is not None else None,
        "peak_rss_gb": r3(peak),
    }


def _interactions(ctx, srv: Server, floor, model: str, repeats: int, rows: list, rss_before_umap):
    """Every page's interactions in one tab whose session uses ``model``; appends to ``rows``."""
    tab = new_tab(ctx)
    t0 = time.perf_counter()
    open_page(tab, srv.base + "/" + _model_link(model))
    print(f"  {model}: first chart after {time.perf_counter() - t0:.1f} s; waiting until the server is quiet", flush=True)
    srv.wait_quiet(span=2.0, below=0.05, timeout=600)
    for _path, title, _default in _pages():
        if PAGES_ONLY and title not in PAGES_ONLY:
            continue
        if title == "Projections" and rss_before_umap is None:
            # UMAP is compiled the first time anyone chooses it (not part of an interaction): choose
            # it once in a tab of its own and wait for the warm-up; the RSS before is every other page's
            srv.wait_quiet()
            rss_before_umap = srv.rss()
            print(f"  server RSS before UMAP is first chosen: {rss_before_umap:.2f} GB", flush=True)
            warm = new_tab(ctx)
            open_page(warm, srv.base + "/projections?proj_method=umap")
            srv.wait_quiet(span=2.0, below=0.05, timeout=300)
            warm.page.close()
        try:
            goto_nav(tab, title)
        except TimeoutError:
            rows.append({"model": model, "page": title, "interaction": "open the page",
                         "failed": "no answer in 600 s"})  # fmt: skip
            print(f"  {model}: {title}: the page did not finish within 600 s", flush=True)
            continue
        srv.wait_quiet(span=1.0, below=0.05, timeout=600)  # a page's first visit with this model is done
        tab.page.wait_for_timeout(200)
        for name, action in PAGE_ACTIONS.get(title, [("rerun (r)", _rerun)]):
            m = measure(tab, srv, action, repeats, floor=floor)
            row = {"model": model, "page": title, "interaction": name, **m}
            rows.append(row)
            print(_line(f"{model[:3]}: {title}", name, m), flush=True)
            print("  ROW " + json.dumps(row), flush=True)
    return rss_before_umap


# =========================================================================================== 500 sentences
def big_text(n: int = 500) -> tuple[str, str]:
    """``n`` labelled lines with "bank" (presets' sentences varied), and the target."""
    from lib.inputs.presets import preset_by_id

    p = preset_by_id("bank")
    rows = list(p.rows)
    lines = []
    for k in range(n):
        sense, s = rows[k % len(rows)]
        lines.append(f"{sense} | In example {k + 1}, {s[0].lower()}{s[1:]}" if sense else f"In example {k + 1}, {s}")
    return "\n".join(lines), p.target


def bench_big(browser, repeats: int) -> None:
    print("big: 500 sentences", flush=True)
    text, _target = big_text(500)
    srv = Server()
    ctx = _context(browser)
    rows = []
    floor_cm = floor_server(browser)
    floor = floor_cm.__enter__()
    try:
        tab = new_tab(ctx)
        open_page(tab, srv.base + "/")
        srv.wait_quiet(span=2.0, below=0.05, timeout=300)
        box = tab.page.get_by_role("textbox", name="Sentences, one per line")
        i0 = len(tab.frames)
        t0 = time.perf_counter()
        box.fill(text)
        tab.page.keyboard.press("Control+Enter")
        _wait_finished(tab, i0, timeout=600)
        tab.page.wait_for_function(JS_CHARTS_DRAWN)
        to_charts = time.perf_counter() - t0
        print(f"  500 sentences to the start page's chart: {to_charts:.1f} s", flush=True)
        for title in ("Start here", "Layer by layer", "Attention"):
            goto_nav(tab, title)
            for name, action in PAGE_ACTIONS[title]:
                m = measure(tab, srv, action, max(2, repeats // 2), floor=floor)
                rows.append({"page": title, "interaction": name, **m})
                print(_line("500: " + title, name, m), flush=True)
        rss = srv.rss()
        peak = srv.hwm()
    finally:
        ctx.close()
        srv.stop()
        floor_cm.__exit__(None, None, None)
    OUT["sections"]["big"] = {"to_charts_s": r3(to_charts), "rows": rows, "rss_gb": r3(rss), "peak_rss_gb": r3(peak)}


# =========================================================================================== configurations
def bench_config(browser, repeats: int, which: list[int] | None = None) -> None:
    print("config: before/after for the speed settings (a fresh server each)", flush=True)
    out = []
    with floor_server(browser) as floor:
        for name, args, env in [c for i, c in enumerate(CONFIGS) if which is None or i in which]:
            srv = Server(extra_args=args, env=env)
            ctx = _context(browser)
            try:
                tab = new_tab(ctx)
                open_page(tab, srv.base + "/")
                srv.wait_quiet(span=2.0, below=0.05, timeout=300)
                res = {"config": name, "args": args, "env": env}
                for title in ("Start here", "Attention"):
                    goto_nav(tab, title)
                    m = measure(tab, srv, _rerun, repeats, floor=floor)
                    res[title] = {k: m.get(k) for k in ("input_s", "request_s", "cpu_s", "ratio_input", "floor")}
                    print(_line(title, name[:18], m), flush=True)
                srv.wait_quiet()
                res["rss_gb"] = r3(srv.rss())
                out.append(res)
            finally:
                ctx.close()
                srv.stop()
    OUT["sections"]["config"] = {"rows": out}


# =========================================================================================== a class
def student_link(base: str, k: int) -> str:
    """A link with student k's own 8 sentences: 8 of a preset's rows, in the student's own words."""
    from lib.inputs.presets import load_presets
    from lib.inputs.sentences import pack_text

    presets = [p for p in load_presets() if len(p.rows) >= 8]
    p = presets[k % len(presets)]
    rng = random.Random(k)
    rows = rng.sample(list(p.rows), 8)
    lines = [f"{sense} | Student {k} wrote: {s}" if sense else f"Student {k} wrote: {s}" for sense, s in rows]
    from urllib.parse import urlencode

    return base + "/?" + urlencode({"target": p.target, "text": pack_text("\n".join(lines))})


JS_ONE_CHART = """() => { const g = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
    return g !== null && Array.isArray(g.data) && g.data.length > 0; }"""


# --class-static: who serves Streamlit's front-end files to the class, and which entry the server runs
STATIC_MODES = {"serve": "serve.py", "server": "app.py", "proxy": "app.py"}


def _streamlit_static_dir() -> Path:
    import streamlit

    return Path(streamlit.__file__).parent / "static"


async def _serve_static_in_browser(ctx) -> None:
    """Emulate a reverse proxy or CDN in front of the server: answer /static/... from Streamlit's own build
    folder on disk without asking the Python process (what nginx ``alias`` or a CDN does; see the hosting
    notes in README.md). Everything else (the page, the websocket, /_stcore/...) still goes to the server."""
    root = _streamlit_static_dir().resolve()

    async def handle(route):
        from urllib.parse import unquote, urlparse

        rel = unquote(urlparse(route.request.url).path).split("/static/", 1)[1]
        path = (root / "static" / rel).resolve()
        if path.is_file() and root in path.parents:
            await route.fulfill(path=str(path), headers={"Cache-Control": "public, immutable, max-age=31536000"})
        else:
            await route.continue_()

    await ctx.route(re.compile(r"^https?://[^/]+/static/"), handle)


async def _student(browser, url: str, start: asyncio.Event, t_start: list[float], static: str = "server") -> dict:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    if static == "proxy":
        await _serve_static_in_browser(ctx)
    page = await ctx.new_page()
    page.set_default_timeout(600_000)
    out: dict = {}
    try:
        await start.wait()
        await page.goto(url)
        await page.wait_for_function(JS_ONE_CHART, polling=100)
        out["home_chart_s"] = time.perf_counter() - t_start[0]
        await page.wait_for_function(JS_IDLE, polling=100)
        t1 = time.perf_counter()
        await page.locator("[data-testid='stSidebarNav'] a", has_text="Attention").first.click()
        await page.wait_for_function("() => location.pathname.endsWith('/attention')", polling=100)
        await page.wait_for_function(JS_CHARTS_DRAWN, polling=100)
        await page.wait_for_function(JS_IDLE, polling=100)
        out["attention_charts_s"] = time.perf_counter() - t_start[0]
        out["attention_after_click_s"] = time.perf_counter() - t1
        out["errors"] = await page.locator("[data-testid='stException']").count()
    except Exception as err:  # a student who never sees a chart is reported, not raised
        out["failed"] = f"{type(err).__name__}: {str(err)[:200]}"
    finally:
        await ctx.close()
    return out


async def _class(browser, srv: Server, n: int, first: int, static: str = "server") -> dict:
    start = asyncio.Event()
    t_start = [0.0]
    urls = [student_link(srv.base, first + k) for k in range(n)]
    tasks = [asyncio.create_task(_student(browser, u, start, t_start, static)) for u in urls]
    await asyncio.sleep(1.0 + 0.05 * n)  # contexts and tabs open before the bell
    srv.wait_quiet(span=0.5, below=0.03, timeout=60)
    log0 = srv.log_size()
    cpu0 = srv.cpu()
    srv.start_peak()
    t_start[0] = time.perf_counter()
    start.set()
    results = await asyncio.gather(*tasks)
    wall = time.perf_counter() - t_start[0]
    await asyncio.sleep(0.5)
    srv.wait_quiet(span=0.5, below=0.03, timeout=120)
    cpu = srv.cpu() - cpu0
    peak = srv.stop_peak()
    lines = srv.run_lines(log0)
    per_session: dict[str, dict] = {}
    for ln in lines:
        s = per_session.setdefault(ln["session"], {"cpu": 0.0, "wall": 0.0, "runs": 0})
        s["cpu"] += ln["cpu"]
        s["wall"] += ln["wall"]
        s["runs"] += 1
    ok = [r for r in results if "failed" not in r and not r.get("errors")]
    home = [r["home_chart_s"] for r in results if "home_chart_s" in r]
    att = [r["attention_charts_s"] for r in results if "attention_charts_s" in r]
    cpus = [s["cpu"] for s in per_session.values()]
    walls = [s["wall"] for s in per_session.values()]
    return {
        "students": n,
        "static": static,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "charted": len(ok),
        "failed": [r.get("failed") for r in results if "failed" in r][:3],
        "home_chart_s": {"p50": r3(pct(home, 0.5)), "p95": r3(pct(home, 0.95)), "max": r3(max(home, default=None))},
        "attention_charts_s": {"p50": r3(pct(att, 0.5)), "p95": r3(pct(att, 0.95)), "max": r3(max(att, default=None))},
        "wall_s": r3(wall),
        "server_cpu_s": r3(cpu),
        "server_cpu_per_student_s": r3(cpu / n),
        "peak_rss_gb": r3(peak),
        "sessions_logged": len(per_session),
        "script_cpu_per_session_s": {"p50": r3(pct(cpus, 0.5)), "max": r3(max(cpus, default=None))},
        "script_wall_per_session_s": {"p50": r3(pct(walls, 0.5)), "max": r3(max(walls, default=None))},
        "runs_per_session": r3(median(s["runs"] for s in per_session.values())),
    }


def bench_class(sizes: list[int], statics: tuple[str, ...] = ("serve",)) -> None:
    from playwright.async_api import async_playwright

    print(f"class: {sizes} students opening their own links at once, then Attention; static files from "
          f"{' and '.join(statics)}", flush=True)  # fmt: skip
    out = []
    hwm = {}
    rss_before = {}
    first = [1000]

    async def run(srv: Server, runs: list[tuple[int, str]]):
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                # the teacher's tab first: model loaded, UMAP warm-up done (not part of any student's cost)
                ctx = await browser.new_context()
                page = await ctx.new_page()
                page.set_default_timeout(LOAD_MS)
                await page.goto(srv.base + "/")
                await page.wait_for_function(JS_CHARTS_DRAWN, polling=200)
                await ctx.close()
                srv.wait_quiet(span=2.0, below=0.05, timeout=300)
                for n, static in runs:
                    r = await _class(browser, srv, n, first[0], static)
                    r["entry"] = STATIC_MODES[static]
                    first[0] += n
                    out.append(r)
                    print(f"  N={n}, static from {static}: {r['charted']}/{n} charted; first chart p50 {r['home_chart_s']['p50']} s, "
                          f"p95 {r['home_chart_s']['p95']}, max {r['home_chart_s']['max']}; Attention max "
                          f"{r['attention_charts_s']['max']} s; server CPU {r['server_cpu_s']} s "
                          f"({r['server_cpu_per_student_s']} s a student), peak RSS {r['peak_rss_gb']} GB; "
                          f"script CPU per session p50 {r['script_cpu_per_session_s']['p50']} s", flush=True)  # fmt: skip
            finally:
                await browser.close()

    # one fresh server per entry (serve.py, app.py), each running every size for the choices that use it
    for entry in dict.fromkeys(STATIC_MODES[st] for st in statics):
        srv = Server(app=entry, env={"CONTEXT_LENS_RUN_LOG": "1"})
        try:
            rss_before[entry] = r3(srv.rss())
            asyncio.run(run(srv, [(n, st) for n in sizes for st in statics if STATIC_MODES[st] == entry]))
            hwm[entry] = r3(srv.hwm())
        finally:
            srv.stop()
    OUT["sections"]["class"] = {"rows": out, "rss_before_gb": rss_before, "process_peak_rss_gb": hwm}


# =========================================================================================== main
def _f(x, unit="", nd=2):
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"


def _readme_table(rows: list[dict]) -> list[str]:
    """README's speed table: each interaction once, the encoder's and the decoder's medians side by side (server CPU,
    time from input, its ratio to the empty page's rerun measured at the same moments)."""
    by = {}
    for r in rows:
        by.setdefault((r["page"], r["interaction"]), {})[r.get("model", "encoder")] = r
    models = [m for m in ("encoder", "decoder") if any(m in v for v in by.values())]
    head = "| page | interaction | " + " | ".join(f"{m}: server CPU | {m}: from input (ratio)" for m in models) + " |"
    out = [head, "| --- | --- | " + " | ".join("--: | --:" for _ in models) + " |"]
    for (page, name), per in by.items():
        cells = []
        for m in models:
            r = per.get(m)
            if r is None or "failed" in r:
                cells += ["–" if r is None else "failed", ""]
            else:
                cells += [_f(r["cpu_s"], " s"), f"{_f(r['input_s'], ' s')} ({_f(r.get('ratio_input'), '', 1)})"]
        out.append(f"| {page} | {name} | " + " | ".join(cells) + " |")
    return out


def markdown(res: dict) -> str:
    """The browser and class tables (Markdown) from what one run of this script measured (its --out JSON)."""
    out = []
    sec = res.get("sections", {})
    if "interactions" in sec:
        out += _readme_table(sec["interactions"]["rows"]) + [""]
        out += ["| model | page | interaction | from input (p50 / p95) | from request | floor (same moments) | ratio | "
                "server CPU | browser busy | kB sent (plotly JSON) |", "|---|---|---|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
        for r in sec["interactions"]["rows"] + [{**x, "page": "500 sentences: " + x["page"]}
                                               for x in sec.get("big", {}).get("rows", [])]:  # fmt: skip
            model = r.get("model", "encoder")
            if "failed" in r:
                out.append(f"| {model} | {r['page']} | {r['interaction']} | failed | | | | | | |")
                continue
            fl = r.get("floor", {})
            p95 = pct([x.get("input_s") for x in r.get("runs", [])], 0.95)
            out.append(f"| {model} | {r['page']} | {r['interaction']} | {_f(r['input_s'], ' s')} / {_f(p95, ' s')} | "
                       f"{_f(r['request_s'], ' s')} | "
                       f"{_f(fl.get('input_s'), ' s')} | {_f(r.get('ratio_input'), '', 1)} | {_f(r['cpu_s'], ' s')} | "
                       f"{_f(r.get('browser_busy_s'), ' s')} | {r['bytes'] / 1e3:.0f} ({r['plotly_bytes'] / 1e3:.0f}) |")  # fmt: skip
        out.append("")
    if "config" in sec:
        out += ["| configuration | Start here rerun | its CPU | Attention rerun | its CPU | RSS after |",
                "|---|--:|--:|--:|--:|--:|"]  # fmt: skip
        for r in sec["config"]["rows"]:
            h, a = r.get("Start here", {}), r.get("Attention", {})
            out.append(f"| {r['config']} | {_f(h.get('input_s'), ' s')} | {_f(h.get('cpu_s'), ' s')} | "
                       f"{_f(a.get('input_s'), ' s')} | {_f(a.get('cpu_s'), ' s')} | {_f(r.get('rss_gb'), ' GB')} |")  # fmt: skip
        out.append("")
    if "class" in sec:
        out += ["| students | static files from | charted | first chart p50 / p95 / max | Attention charts p50 / p95 / max | "
                "server CPU (per student) | script CPU per session p50 / max | peak RSS |",
                "|--:|--|--:|--|--|--|--|--:|"]  # fmt: skip
        for r in sec["class"]["rows"]:
            h, a = r["home_chart_s"], r["attention_charts_s"]
            s = r["script_cpu_per_session_s"]
            out.append(f"| {r['students']} | {r.get('static', 'server')} | {r['charted']} | "
                       f"{_f(h['p50'], '', 1)} / {_f(h['p95'], '', 1)} / "
                       f"{_f(h['max'], ' s', 1)} | {_f(a['p50'], '', 1)} / {_f(a['p95'], '', 1)} / {_f(a['max'], ' s', 1)} | "
                       f"{_f(r['server_cpu_s'], ' s', 1)} ({_f(r['server_cpu_per_student_s'], ' s')}) | "
                       f"{_f(s['p50'], '', 2)} / {_f(s['max'], ' s', 2)} | {_f(r['peak_rss_gb'], ' GB')} |")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="config,interactions,big,class")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--class-sizes", default="1,10,30")
    ap.add_argument("--class-static", default="serve",
                    help="class: who serves /static/: serve (serve.py), server (app.py), proxy (app.py behind an "
                         "emulated reverse proxy/CDN), or several: serve,server,proxy")  # fmt: skip
    ap.add_argument("--out", default=None, help="write the results here (python -m benchmarks passes its own file)")
    ap.add_argument("--pages", default="", help="interactions: only these page titles (comma-separated)")
    ap.add_argument("--models", default="encoder,decoder",
                    help="interactions: the models whose sessions are measured, one after the other on one server "
                         "(encoder, decoder, or a model key)")  # fmt: skip
    ap.add_argument("--ports", default="", help="the servers' ports, e.g. 9170-9179 (default: any free port)")
    ap.add_argument("--configs", default="", help="config section: indexes of CONFIGS to run (default all)")
    ap.add_argument("--table", nargs="?", const="latest", default=None,
                    help="print the README tables of a results file's browser and class sections (default: the "
                         "latest in benchmarks/results/) and stop")  # fmt: skip
    a = ap.parse_args()
    if a.table:
        path = latest_results() if a.table == "latest" else Path(a.table)
        sections = json.loads(path.read_text(encoding="utf-8"))["sections"]
        for name in ("browser", "class"):
            for script in sections.get(name, {}).get("scripts", []):
                if "sections" in script.get("results", {}):
                    print(markdown(script["results"]))
        return
    reason = _missing_browser_reason()
    if reason:
        sys.exit(reason)
    sections = [s.strip() for s in a.only.split(",") if s.strip()]
    PAGES_ONLY.update(x.strip() for x in a.pages.split(",") if x.strip())
    if a.ports:
        lo, _, hi = a.ports.partition("-")
        PORTS.extend(range(int(lo), int(hi or lo) + 1))
    OUT["meta"] = {
        "started_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "repeats": a.repeats,
    }
    t0 = time.perf_counter()
    from playwright.sync_api import sync_playwright

    sync_sections = [s for s in sections if s != "class"]
    if sync_sections:
        with sync_playwright() as p:
            browser = _launch(p)
            try:
                for s in sync_sections:
                    if s == "config":
                        which = [int(x) for x in a.configs.split(",")] if a.configs else None
                        bench_config(browser, a.repeats, which)
                    else:
                        if s == "interactions":
                            bench_interactions(browser, a.repeats, tuple(x.strip() for x in a.models.split(",") if x.strip()))
                        else:
                            bench_big(browser, a.repeats)
            finally:
                browser.close()
    if "class" in sections:
        statics = tuple(x.strip() for x in a.class_static.split(",") if x.strip() in STATIC_MODES) or ("serve",)
        bench_class([int(x) for x in a.class_sizes.split(",")], statics)
    OUT["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    OUT["meta"]["duration_s"] = round(time.perf_counter() - t0, 1)
    if a.out:
        Path(a.out).write_text(json.dumps(OUT, indent=2) + "\n")
    print(f"done in {OUT['meta']['duration_s']} s")


if __name__ == "__main__":
    main()
