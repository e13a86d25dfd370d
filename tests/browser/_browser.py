"""Helpers for the real-browser tests and the benchmark: start a server, drive Chromium, read charts."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CONTEXT_LENS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# generous: the first page loads the model, and these machines have 2 cores shared by several processes
LOAD_MS = 300_000
CHANGE_MS = 180_000
SHOTS: list[str] = []

# JavaScript run in the page
JS_IDLE = """() => { const a = document.querySelector('[data-test-script-state]');
    return a !== null && a.getAttribute('data-test-script-state') === 'notRunning'; }"""
JS_CHARTS_DRAWN = """() => { const boxes = document.querySelectorAll('[data-testid="stPlotlyChart"]');
    if (boxes.length === 0) return false;
    return Array.from(boxes).every(b => { const g = b.querySelector('.js-plotly-plot');
        return g !== null && Array.isArray(g.data) && g.data.length > 0; }); }"""
# every chart drawn at its box's width: plotly's responsive resize after the first draw has happened
JS_SIZED = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')).every(g => {
    const svg = g.querySelector('.main-svg'), w = g.getBoundingClientRect().width;
    return g._fullLayout && svg && Math.abs(g._fullLayout.width - w) <= 1 && Math.abs(+svg.getAttribute('width') - w) <= 1; })"""
JS_CHART_COUNT = """() => document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot').length"""
JS_CHART_DATA = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
    .map(g => JSON.stringify(g.data || []))"""
JS_CHANGED = """(before) => { const now = Array.from(
        document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
        .map(g => JSON.stringify(g.data || []));
    return now.length > 0 && JSON.stringify(now) !== JSON.stringify(before); }"""

# Chart text a learner cannot read: any title, tick label, legend entry, annotation or text label reaching more
# than 1.5 px past its chart's edges (less the empty quarter of its line above and below), and any two annotations with text overlapping (panel titles running into
# each other). Per finding: the chart's key, what it is, its text and by how many px.
JS_CUT_TEXT = """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]')).flatMap(c => {
  const key = ((c.closest('.stElementContainer') || {}).className || '').match(/st-key-(\\S+)/);
  const name = key ? key[1] : '?';
  const svg = c.querySelector('.main-svg');
  if (!svg) return [];
  const R = svg.getBoundingClientRect();
  const sel = ['.gtitle', '.g-gtitle text', '.xtick text', '.ytick text', '.annotation-text', '.legendtext',
    '[class*="xtitle"] text', '[class*="ytitle"] text', '.colorbar text', 'text.bartext', '.textpoint text'].join(', ');
  const cut = Array.from(c.querySelectorAll(sel)).map(t => {
    const r = t.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return null;
    // a text's box is taller than its letters (line spacing): up to a quarter of its height above or below the
    // chart is empty space, not a cut letter
    const over = Math.max(R.left - r.left, r.right - R.right, R.top - r.top - r.height / 4,
      r.bottom - R.bottom - r.height / 4);
    return over > 1.5 ? {chart: name, what: t.getAttribute('class') || t.parentNode.getAttribute('class'),
      text: t.textContent.slice(0, 60), px: Math.round(over)} : null;
  }).filter(Boolean);
  const notes = Array.from(c.querySelectorAll('.annotation')).filter(a => a.textContent.trim())
    .map(a => [a, (a.querySelector('text') || a).getBoundingClientRect()]).filter(([a, r]) => r.width > 0);
  for (let i = 0; i < notes.length; i++) for (let j = i + 1; j < notes.length; j++) {
    const [a, r] = notes[i], [b, q] = notes[j];
    const w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
    const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
    if (w > 1.5 && h > 1.5) cut.push({chart: name, what: 'overlapping annotations',
      text: a.textContent.slice(0, 30) + ' | ' + b.textContent.slice(0, 30), px: Math.round(w)});
  }
  return cut;
})"""


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def _missing_browser_reason() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "Playwright is not installed: pip install playwright (the browser tests drive /usr/bin/chromium)."
        )
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"Chromium is not at {CHROMIUM}: apt-get install -y chromium (or set CONTEXT_LENS_CHROMIUM)."
    return None


def require_browser() -> None:
    reason = _missing_browser_reason()
    if reason is None:
        return
    if on_ci():
        pytest.fail(f"CI=true but the real-browser tests cannot run. {reason}")
    pytest.skip(reason)


def app_pages() -> list[tuple[str, str, bool]]:
    """(file, title, is_default) for every page listed in app.py's PAGES whose file exists.

    Read with ast so that app.py (a Streamlit script) is not executed.
    """
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PAGES" for t in node.targets):
            pages = ast.literal_eval(node.value)
            return [
                (path, title, bool(default))
                for path, title, _icon, default in pages
                if (ROOT / path).exists()
            ]
    raise AssertionError("app.py has no PAGES list")


# Pages without a chart on their own: the glossary (text only, tested by AppTest), the class board before a
# board is open (tests/browser/test_browser_board.py opens one), Fine-tune before Train is pressed
# (tests/browser/test_browser_finetune.py trains) and the Logit lens with the default encoder, which says why it
# needs the decoder (tests/browser/test_browser_decoder.py opens it with the decoder).
CHARTLESS = ("board", "finetune", "glossary", "lens")
DECODER_ONLY = ("lens",)


def chart_pages() -> list[tuple[str, str, bool]]:
    """:func:`app_pages` that draw charts as soon as they are opened (every page but :data:`CHARTLESS`)."""
    return [p for p in app_pages() if Path(p[0]).stem not in CHARTLESS]


def outside_request(url: str) -> bool:
    """True for a request a tab sends off this machine (not the app's own server, a file, data or blob)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in ("127.0.0.1", "localhost")


def page_url(base: str, path: str, default: bool) -> str:
    """The URL of a page: the default page at /, the others at /<file stem>."""
    return base + "/" if default else f"{base}/{Path(path).stem}"


# The two screens every page must fit: a phone (Streamlit stacks the columns) and a projector, in presenter mode.
SCREENS = {"phone": {"width": 390, "height": 844}, "projector": {"width": 1280, "height": 720}}
JS_FORGET_SIDEBAR = """Object.keys(window.localStorage).filter(k => k.startsWith('stSidebarCollapsed'))
    .forEach(k => window.localStorage.removeItem(k));"""


def open_on(pg, screen: str, url: str) -> None:
    """Open ``url`` in ``pg`` sized as :data:`SCREENS` ``[screen]``; on the projector with ``presenter=1`` added.

    As a first visit: Streamlit remembers a sidebar opened or closed by hand (``stSidebarCollapsed-*`` in the
    origin's localStorage), and the tests' tabs share one profile, so that memory is cleared before the page's
    scripts run."""
    pg.add_init_script(JS_FORGET_SIDEBAR)
    pg.set_viewport_size(SCREENS[screen])
    if screen == "projector":
        url += ("&" if "?" in url else "?") + "presenter=1"
    pg.goto(url)


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=5) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except OSError:
        return False


def start_server(
    app: str = "serve.py",
    cwd: Path = ROOT,
    timeout: float = 180.0,
    *,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
):
    """Start `streamlit run <app>` on a free port; return (process, base URL, log path) once healthy.

    The default is serve.py, the entry the README and the Docker image start (app.py behind st.App, with
    Streamlit's front-end files served compressed by ui.static_files).

    ``extra_args``: more command-line options (e.g. ``["--runner.postScriptGC", "true"]``); ``env``:
    extra environment variables for the server; ``port``: a fixed port (a benchmark's own range), else a free one.
    """
    port = port or _free_port()
    fd, log_path = tempfile.mkstemp(prefix="context-lens-server-", suffix=".log")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1", **(env or {}))
    cmd = [
        sys.executable, "-m", "streamlit", "run", app,
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        *(extra_args or []),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=fd, stderr=subprocess.STDOUT, env=env)
    os.close(fd)  # the child keeps its own copy
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if _healthy(base):
            return proc, base, log_path
        time.sleep(0.3)
    stop_server(proc)
    tail = Path(log_path).read_text(errors="replace")[-3000:]
    raise RuntimeError(f"streamlit did not become healthy on {base} (exit {proc.returncode}). Log:\n{tail}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


# ------------------------------------------------------------------------------- a server process, from /proc
def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (its threads included), from /proc: steady on a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_mb(pid: int, field: str) -> float:
    """A memory line of /proc/<pid>/status in MB of 1024² bytes: "VmRSS" (now), "VmHWM" (the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    return status_mb(pid, "VmHWM")


def wait_quiet(pid: int, limit_s: float = 180.0) -> None:
    """Wait until the process uses under 0.2 CPU seconds in 2 s (a server's background warm-up is done)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        c = cpu_seconds(pid)
        time.sleep(2.0)  # a rate over a window: the measurement itself, not a wait for a condition
        if cpu_seconds(pid) - c < 0.2:
            return


def done_with_log(log: str) -> None:
    """A stopped server's log: kept, and its path printed, only when it holds a traceback."""
    path = Path(log)
    if "Traceback" in path.read_text(errors="replace"):
        print(f"\nServer log with a traceback: {path}")
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def served(app: str = "serve.py", **kwargs):
    """A server of the block's own (:func:`start_server`'s arguments): ``with served() as (proc, base, log):``,
    stopped after the block, its log kept only when it holds a traceback. For a test that needs a server nobody
    else has used (a first visitor, a restart); the others share the session's (``server``, ``servers``)."""
    proc, base, log = start_server(app, **kwargs)
    try:
        yield proc, base, log
    finally:
        stop_server(proc)
        done_with_log(log)


class ServerPool:
    """The test session's servers, one per entry and environment, each started on first use: tests that need the
    same kind of server (the default one, a class board's folder, ``app.py``) share it; all stop at the end."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._servers: dict[tuple, tuple] = {}

    def get(self, app: str = "serve.py", env: dict[str, str] | None = None) -> str:
        """The base URL of the session's server for ``app`` with ``env`` (started now if it is the first ask)."""
        key = (app, tuple(sorted((env or {}).items())))
        if key not in self._servers:
            self._servers[key] = self._stack.enter_context(served(app, env=env))
        return self._servers[key][1]

    def pid(self, base: str) -> int:
        """The process id of the session's server at ``base`` (its CPU and memory: :func:`cpu_seconds`)."""
        return next(proc.pid for proc, b, _ in self._servers.values() if b == base)

    def close(self) -> None:
        self._stack.close()
        self._servers.clear()


# --------------------------------------------------------------------------------------------- helpers
NETWORK_CHANGED = "ERR_NETWORK_CHANGED"


def goto_app(pg, url: str, *, selector: str = "[data-testid='stApp']", first_ms: int = 90_000) -> None:
    """Open ``url`` and wait for ``selector`` (default: the app's frame), for the deployment tests.

    Docker creating or removing a network interface on this machine (a container starting or stopping, a
    network made) makes Chromium cancel every request in flight with net::ERR_NETWORK_CHANGED; a lost script
    chunk leaves the front end unmounted for good. Seen on CI in about one run in two, never in a test alone.
    A load that met it is reloaded at once (up to 3 times), as a student whose network changed would. Anything
    else that keeps the page away for ``first_ms`` gets one reload, with what the page showed and what failed
    on the way (requests, console errors, a renderer crash) printed."""
    seen: list[str] = []  # what went wrong on the way, said if the page does not come

    def failed(req) -> None:
        seen.append(f"request failed: {req.method} {req.url[:160]} ({req.failure})")

    def console(msg) -> None:
        if msg.type == "error":
            seen.append(f"console error: {msg.text[:300]}")

    def page_error(err) -> None:
        seen.append(f"page error: {str(err)[:300]}")

    def crash(_pg) -> None:
        seen.append("the page's renderer crashed")

    pg.on("requestfailed", failed)
    pg.on("console", console)
    pg.on("pageerror", page_error)
    pg.on("crash", crash)
    try:
        pg.goto(url)
        deadline, reloads = time.monotonic() + first_ms / 1000, 0
        while True:
            try:
                pg.wait_for_selector(selector, timeout=2000)
                return
            except Exception:  # playwright's TimeoutError
                pass
            if any(NETWORK_CHANGED in x for x in seen) and reloads < 3:
                # Docker made or removed a network interface on this machine while the page loaded: Chromium
                # cancelled the requests in flight, a script chunk was lost and the front end never mounts
                print(f"\n{url}: {NETWORK_CHANGED} while loading (Docker changed this machine's interfaces); reloading")
                seen.clear()
                reloads += 1
                pg.reload()
                continue
            if time.monotonic() > deadline:
                break
        # not there after first_ms, with no network change seen: one more try, saying what the page showed
        try:
            shown = pg.locator("body").inner_text(timeout=5000)[:1500]
        except Exception as e:  # noqa: BLE001 - only said
            shown = f"(no text: {e})"
        print(
            f"\n{url}: no {selector} after {first_ms / 1000:.0f} s; reloading once. The page showed:\n{shown}\n"
            + "\n".join(seen[-20:])
        )
        pg.reload()
        pg.wait_for_selector(selector, timeout=LOAD_MS)
    finally:
        pg.remove_listener("requestfailed", failed)
        pg.remove_listener("console", console)
        pg.remove_listener("pageerror", page_error)
        pg.remove_listener("crash", crash)


def wait_idle(pg, timeout_ms: int = LOAD_MS) -> None:
    """Wait until the app is on screen and Streamlit's script run has finished."""
    pg.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    pg.wait_for_function(JS_IDLE, timeout=timeout_ms)


def wait_charts(pg, timeout_ms: int = LOAD_MS) -> list[str]:
    """Wait until every plotly chart on the page is drawn with data; return each chart's data as JSON.

    Settled means: the run has finished, every chart is drawn, and the number of charts is the same 0.6 s later.
    Right after a navigation the script state can read "not running" before the run has even started, and on a
    busy server a page's later sections wait their turn in the work queue after its first charts are drawn.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        left = max(1000, int((deadline - time.monotonic()) * 1000))
        wait_idle(pg, left)
        pg.wait_for_function(JS_CHARTS_DRAWN, timeout=left)
        count = pg.evaluate(JS_CHART_COUNT)  # the data itself once, when settled (each read is a JSON of every chart)
        pg.wait_for_timeout(600)
        if pg.evaluate(JS_IDLE) and pg.evaluate(JS_CHARTS_DRAWN):
            settled = pg.evaluate(JS_CHART_DATA)
            if len(settled) == count:
                return settled
        if time.monotonic() > deadline:
            raise AssertionError(f"the page's charts did not settle within {timeout_ms / 1000:.0f} s")


def wait_sized(pg, timeout_ms: int = CHANGE_MS) -> None:
    """Wait until every chart is drawn at its box's width (after plotly's responsive resize), before a layout check
    or a screenshot."""
    pg.wait_for_function(JS_SIZED, timeout=timeout_ms)


def wait_chart_count(pg, n: int, timeout_ms: int = LOAD_MS) -> list[str]:
    """Wait until ``n`` charts are drawn with data (a page whose later sections wait their turn in the server's
    work queue shows its first charts before the rest); return each chart's data as JSON."""
    pg.wait_for_function(
        """(n) => { const g = Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'));
            return g.length >= n && g.every(x => Array.isArray(x.data) && x.data.length > 0); }""",
        arg=n,
        timeout=timeout_ms,
    )
    return wait_charts(pg, timeout_ms)


def wait_changed(pg, before: list[str], timeout_ms: int = CHANGE_MS) -> list[str]:
    """Wait until the charts' data differs from ``before`` and the run has finished; return the new data."""
    pg.wait_for_function(JS_CHANGED, arg=before, timeout=timeout_ms)
    return wait_charts(pg, timeout_ms)


def exceptions(pg) -> list[str]:
    return pg.locator("[data-testid='stException']").all_inner_texts()


def screenshot(pg, shots: Path, name: str) -> str:
    path = str(shots / f"{name}.png")
    pg.screenshot(path=path, full_page=True)
    SHOTS.append(path)
    print(f"screenshot: {path}")
    return path


def chart_summary(data_json: str) -> dict:
    """Trace count and types of one chart's data (for messages)."""
    data = json.loads(data_json)
    return {"traces": len(data), "types": sorted({t.get("type", "scatter") for t in data})}
