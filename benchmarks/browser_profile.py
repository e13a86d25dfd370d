"""Where the browser's main thread spends one interaction: a script, not a test.

    python benchmarks/browser_profile.py anisotropy_layer layers_pooling   # the cases below
    python benchmarks/browser_profile.py --steps 4 --top 25 anisotropy_layer
    python benchmarks/browser_profile.py --calls --model "$(python -c 'from lib.models import DECODER_MODEL as m; print(m)')" attention_layer

Starts `streamlit run app.py`, opens a page in headless Chromium (Debian's /usr/bin/chromium, 1400 px wide),
moves one control back and forth ``--steps`` times (the first move of each direction not recorded: warm-up),
and for the recorded moves:

* samples the renderer's JavaScript with the DevTools Protocol's Profiler (100 µs) from the input until the
  script run has finished and the page is idle again, and sums the self time by script (Streamlit's bundle
  chunks, plotly.js, "(program)" = the browser's own work outside JavaScript: style, layout, paint,
  "(garbage collector)") and by function;
* records a Chromium trace (devtools.timeline) of the same moves and sums the main thread's top-level work by
  kind (script, style recalculation, layout, paint, …);
* counts, per chart, whether plotly re-created it (a new plot element: newPlot) or updated it in place
  (plotly_afterplot on the same element: react/relayout), and how often.

Seconds on a shared machine are noisy; the shares between kinds of work are what to read.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tests.browser._browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    JS_CHARTS_DRAWN,
    JS_IDLE,
    LOAD_MS,
    start_server,
    stop_server,
)

# name -> (page path, control kind, label, the two values for a radio)
CASES = {
    "anisotropy_layer": ("/anisotropy", "slider", "Layer", None),
    "layers_layer": ("/layers", "slider", "Layer", None),
    "layers_pooling": ("/layers", "radio", "Vector of the word", ("one layer", "mean of last 4 layers")),
    "attention_head": ("/attention", "slider", "Head", None),
    "attention_layer": ("/attention", "slider", "Layer", None),
    "projections_layer": ("/projections", "slider", "Layer", None),
    "projections_method": ("/projections", "radio", "Method", ("PCA", "UMAP")),
    "calculator_scaling": ("/calculator", "toggle", "scaling", None),
    "attention_rerun": ("/attention", "rerun", None, None),  # key "r": nothing changed, nothing to redraw
    "layers_rerun": ("/layers", "rerun", None, None),
    "anisotropy_rerun": ("/anisotropy", "rerun", None, None),
    "calculator_rerun": ("/calculator", "rerun", None, None),
}

# Marks every plot element and counts plotly_afterplot per element; new elements have no mark.
JS_MARK = """() => {
    window.__cl = window.__cl || {n: 0};
    const out = [];
    document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot').forEach(g => {
        if (!g.__clId) {
            g.__clId = ++window.__cl.n; g.__clAfter = 0;
            if (g.on) g.on('plotly_afterplot', () => { g.__clAfter += 1; });
        }
        out.push(g.__clId);
    });
    return out;
}"""
JS_COUNT = """(seen) => {
    const out = {created: 0, updated: 0, afterplots: 0, charts: 0};
    document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot').forEach(g => {
        out.charts += 1;
        if (!g.__clId || !seen.includes(g.__clId)) out.created += 1;
        else if (g.__clAfter > 0) { out.updated += 1; out.afterplots += g.__clAfter; }
    });
    return out;
}"""
JS_RESET = """() => document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')
    .forEach(g => { g.__clAfter = 0; })"""


# plotly.js API functions in Streamlit's bundle (streamlit 1.67, PlotlyChart.D9Z0_fxz.js): their text, so that a
# counting breakpoint can be put in each (--calls); found again by text if the bundle's name changes
PLOTLY_FUNCTIONS = {
    "Plotly.react": "function we(t,n,r,a){var o,s;function l(){return e.addFrames(t,o)}",
    "Plotly.newPlot": "function z(t,n,r,a){return t=i.getGraphDiv(t),u.cleanPlot(",
    "Plotly._doPlot (a full draw)": "function A(n,r,a,s){var l;if(n=i.getGraphDiv(n),o.init(n)",
    "Plotly.purge": "function je(e){e=i.getGraphDiv(e);var t=e._fullLayout||{}",
    "Plotly.relayout": "function oe(e,t,n){e=i.getGraphDiv(e),C.clearPromiseQueue(e)",
    "Plotly.redraw": "function R(t){if(t=i.getGraphDiv(t),!i.isPlotDiv(t))",
}


# in a breakpoint of _doPlot(gd, …): count one full draw for the chart gd belongs to (by its key, or "?")
JS_DRAWN_CHART = (
    "(window.__draws=window.__draws||{}, window.__draws[(((arguments[0]&&arguments[0].closest&&"
    "arguments[0].closest('[class*=\"st-key-\"]'))||{}).className||'?').toString().match(/st-key-\\S+|\\?/)[0]]"
    "=(window.__draws[(((arguments[0]&&arguments[0].closest&&arguments[0].closest('[class*=\"st-key-\"]'))||{})"
    ".className||'?').toString().match(/st-key-\\S+|\\?/)[0]]||0)+1)"
)


def count_breakpoints(cdp) -> list[str]:
    """Conditional breakpoints that count calls of PLOTLY_FUNCTIONS in window.__calls and never pause."""
    import streamlit

    js = Path(streamlit.__file__).parent / "static" / "static" / "js"
    bundle = next(js.glob("PlotlyChart.*.js"))
    lines = bundle.read_text(encoding="utf-8").split("\n")
    cdp.send("Debugger.enable")
    names = []
    for name, text in PLOTLY_FUNCTIONS.items():
        for ln, line in enumerate(lines):
            col = line.find(text)
            if col >= 0:
                cond = f"(window.__calls=window.__calls||{{}}, window.__calls[{json.dumps(name)}]=(window.__calls[{json.dumps(name)}]||0)+1, false)"
                if name.startswith("Plotly._doPlot"):  # and which chart it draws: its element's st-key-… class
                    cond = cond[:-len(", false)")] + ", " + JS_DRAWN_CHART + ", false)"
                cdp.send("Debugger.setBreakpointByUrl", {
                    "urlRegex": re.escape(bundle.name), "lineNumber": ln,
                    "columnNumber": line.index("{", col) + 1, "condition": cond,
                })
                names.append(name)
                break
    return names


def script_name(url: str) -> str:
    if not url:
        return ""
    name = url.rsplit("/", 1)[-1]
    return name.split("?")[0]


INCLUSIVE: collections.Counter = collections.Counter()  # (function, script, line, column) -> ms, all cases


def self_times(profile: dict) -> tuple[dict, dict]:
    """Self time (ms) of each script and of each (function, script, line), from a CDP CPU profile."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    per_node = collections.Counter()
    for node_id, dt in zip(profile["samples"], profile["timeDeltas"], strict=False):
        per_node[node_id] += dt / 1000.0
    by_script, by_fn = collections.Counter(), collections.Counter()
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", ())}
    for node_id, ms in per_node.items():
        frames, nid = set(), node_id
        while nid is not None:
            cf = nodes[nid]["callFrame"]
            frames.add((cf["functionName"] or "(anonymous)", script_name(cf["url"]), cf["lineNumber"], cf["columnNumber"]))
            nid = parent.get(nid)
        for fr in frames:
            INCLUSIVE[fr] += ms
        cf = nodes[node_id]["callFrame"]
        script = script_name(cf["url"]) or cf["functionName"] or "(anonymous)"
        by_script[script] += ms
        by_fn[(cf["functionName"] or "(anonymous)", script, cf["lineNumber"])] += ms
    return by_script, by_fn


def source_at(script: str, line: int, col: int, width: int = 70) -> str:
    """The first characters of a function in Streamlit's front-end bundle (to name minified functions)."""
    import streamlit

    path = Path(streamlit.__file__).parent / "static" / "static" / "js" / script
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
        return lines[line][max(0, col - 20) : col + width].replace("\n", " ")
    except (OSError, IndexError):
        return ""


def trace_kinds(path: str) -> collections.Counter:
    """Top-level main-thread work (ms) of the renderer in a Chromium trace, by event name."""
    events = json.loads(Path(path).read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    main = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"
    }
    spans = sorted(
        (e for e in events if (e.get("pid"), e.get("tid")) in main and e.get("ph") == "X" and "dur" in e),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    # self time by name: each event's duration minus its direct children's
    kinds = collections.Counter()
    stack: list[list] = []  # [end, name, child_total]
    for e in spans:
        while stack and e["ts"] >= stack[-1][0]:
            end, name, child, dur = stack.pop()
            kinds[name] += (dur - child) / 1000.0
        if stack:
            stack[-1][2] += e["dur"]
        stack.append([e["ts"] + e["dur"], e["name"], 0, e["dur"]])
    while stack:
        end, name, child, dur = stack.pop()
        kinds[name] += (dur - child) / 1000.0
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=["anisotropy_layer", "layers_pooling"])
    ap.add_argument("--steps", type=int, default=4, help="recorded moves per case")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--css", default="", help="a style rule added to the page before measuring (an experiment)")
    ap.add_argument("--calls", action="store_true", help="also count plotly.js API calls (a separate pass)")
    ap.add_argument("--json", help="write the aggregates here")
    ap.add_argument("--model", default="", help="open the pages with this model (a key, e.g. lib.models.DECODER_MODEL)")
    ap.add_argument("--port", type=int, default=None, help="the server's port (default: any free port)")
    ap.add_argument("--big", type=int, default=0,
                    help="first send this many labelled sentences (browser_bench.big_text) from the start page")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    proc, base, log = start_server(port=args.port)
    report = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            ctx = browser.new_context(viewport={"width": args.width, "height": 900})
            pg = ctx.new_page()
            pg.set_default_timeout(LOAD_MS)
            if args.big:
                send_sentences(pg, base, args.big)
            for name in args.cases:
                report[name] = profile_case(browser, pg, base, name, args)
            browser.close()
    finally:
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


def send_sentences(pg, base: str, n: int) -> None:
    """Put ``n`` labelled sentences in the session (as browser_bench's "big" section does)."""
    from benchmarks.browser_bench import big_text

    text, _target = big_text(n)
    pg.goto(base + "/")
    pg.wait_for_function(JS_CHARTS_DRAWN)
    pg.wait_for_function(JS_IDLE)
    pg.get_by_role("textbox", name="Sentences, one per line").fill(text)
    pg.keyboard.press("Control+Enter")
    pg.wait_for_timeout(1000)
    pg.wait_for_function(JS_IDLE, timeout=600_000)
    pg.wait_for_function(JS_CHARTS_DRAWN)


def profile_case(browser, pg, base: str, name: str, args) -> dict:
    path, kind, label, values = CASES[name]
    if args.big:  # same session: navigate inside the app, keeping the sentences
        pg.locator(f"[data-testid='stSidebarNav'] a[href$='{path}']").first.click()
        pg.wait_for_timeout(500)
    else:
        pg.goto(base + path + (f"?model={quote(args.model, safe='')}" if args.model else ""))
    pg.wait_for_selector("[data-testid='stApp']")
    pg.wait_for_function(JS_IDLE)
    pg.wait_for_function(JS_CHARTS_DRAWN)
    pg.wait_for_function(JS_IDLE)
    if args.css:
        pg.add_style_tag(content=args.css)
    pg.wait_for_timeout(1500)
    cdp = pg.context.new_cdp_session(pg)
    state = {"dir": "ArrowRight", "next": values[1] if values else None}

    def act():
        if kind == "rerun":
            pg.locator("[data-testid='stMain'] h1").first.click()  # focus the page, not a text box
            pg.keyboard.press("r")
        elif kind == "slider":
            box = pg.locator("[data-testid='stMain'] [data-testid='stSlider']", has_text=label).first
            thumb = box.get_by_role("slider").first
            thumb.focus()
            now, top = thumb.evaluate("e => [e.value, e.max]")
            key = "ArrowLeft" if now == top else state["dir"]
            state["dir"] = key
            pg.keyboard.press(key)
            state["dir"] = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
        elif kind == "toggle":
            box = pg.locator("[data-testid='stMain'] [data-testid='stCheckbox']", has_text=label).first
            el = box.locator("label").first
            el.scroll_into_view_if_needed()
            el.click()
        else:
            group = pg.locator("[data-testid='stMain'] [data-testid='stRadio']", has_text=label).first
            el = group.locator("label", has_text=state["next"]).first
            el.scroll_into_view_if_needed()
            el.click()
            state["next"] = values[0] if state["next"] == values[1] else values[1]

    def settle():
        pg.wait_for_timeout(150)
        pg.wait_for_function(JS_IDLE)
        pg.wait_for_function(JS_CHARTS_DRAWN)
        pg.wait_for_timeout(700)  # plotly's drawing after the script finished

    INCLUSIVE.clear()
    for _ in range(2):  # warm-up, both directions
        act()
        settle()
    by_script, by_fn = collections.Counter(), collections.Counter()
    counts = collections.Counter()
    busy = 0.0
    cdp.send("Performance.enable")
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 100})
    trace = tempfile.mktemp(suffix=".json")
    browser.start_tracing(page=pg, path=trace, categories=["devtools.timeline", "v8.execute", "blink"])
    for _ in range(args.steps):
        seen = pg.evaluate(JS_MARK)
        pg.evaluate(JS_RESET)
        m0 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        cdp.send("Profiler.start")
        act()
        settle()
        prof = cdp.send("Profiler.stop")["profile"]
        m1 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        busy += m1["TaskDuration"] - m0["TaskDuration"]
        s, f = self_times(prof)
        by_script.update(s)
        by_fn.update(f)
        counts.update(pg.evaluate(JS_COUNT, seen))
    browser.stop_tracing()
    calls, draws = collections.Counter(), collections.Counter()
    if args.calls:  # a separate pass: the debugger slows the page down
        count_breakpoints(cdp)
        for _ in range(args.steps):
            pg.evaluate("() => { window.__calls = {}; window.__draws = {}; }")
            act()
            settle()
            calls.update(pg.evaluate("() => window.__calls || {}"))
            draws.update(pg.evaluate("() => window.__draws || {}"))
        cdp.send("Debugger.disable")
    kinds = trace_kinds(trace)
    Path(trace).unlink(missing_ok=True)
    n = args.steps
    print(f"\n=== {name}: {n} moves; renderer busy {busy / n * 1000:.0f} ms per move (TaskDuration)")
    print(f"charts per move: {counts['charts'] / n:.1f}; re-created {counts['created'] / n:.1f}, updated in "
          f"place {counts['updated'] / n:.1f} ({counts['afterplots'] / n:.1f} afterplot events)")
    if calls:
        print("plotly.js calls per move: " + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(calls.items())))
        print("full draws per move by chart: " + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(draws.items())))
    total = sum(by_script.values())
    print(f"JS profile, self time per move by script (total {total / n:.0f} ms incl. idle):")
    for s, ms in by_script.most_common(args.top):
        print(f"  {ms / n:8.1f} ms  {s}")
    print("by function:")
    for (fn, s, line), ms in by_fn.most_common(args.top):
        print(f"  {ms / n:8.1f} ms  {fn}  [{s}:{line}]")
    print("by function, inclusive (with what it calls), Streamlit's bundle only:")
    shown = 0
    for (fn, s, line, col), ms in INCLUSIVE.most_common():
        if not s.endswith(".js") or shown >= args.top:
            continue
        shown += 1
        print(f"  {ms / n:8.1f} ms  {fn}  [{s}:{line}:{col}]  {source_at(s, line, col)}")
    print("trace, main-thread self time per move by event:")
    for k, ms in kinds.most_common(args.top):
        print(f"  {ms / n:8.1f} ms  {k}")
    return {
        "busy_ms": busy / n * 1000,
        "counts": {k: v / n for k, v in counts.items()},
        "by_script": {k: v / n for k, v in by_script.most_common(40)},
        "by_function": [[fn, s, line, ms / n] for (fn, s, line), ms in by_fn.most_common(60)],
        "calls": {k: v / n for k, v in calls.items()},
        "draws": {k: v / n for k, v in draws.items()},
        "trace": {k: v / n for k, v in kinds.most_common(40)},
    }


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
