"""Which charts a page re-sends when a control moves, and what redrawing each costs plotly.js.

    python benchmarks/chart_redraws.py                      # every case below
    python benchmarks/chart_redraws.py anisotropy attn_head # some cases

Each case runs a page with AppTest on the default preset, moves one control and compares every
st.plotly_chart's JSON before and after. An unchanged chart is identical JSON: Streamlit's front end
neither parses nor redraws it (its PlotlyChart memoizes on the spec string), so only changed charts cost the
browser. For each changed chart, Chromium (Debian's /usr/bin/chromium, the plotly.js of the installed
plotly package, a 704 px wide div like Streamlit's main column) times ``Plotly.react`` from the old figure
to the new one and back, to the next frame: median and minimum of 12 redraws. Not a test; seconds are
noisy on a shared machine, the ratios between charts less so.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

CASES = {
    "anisotropy": ("pages/anisotropy.py", "slider", "aniso_layer", 4),
    "layers_layer": ("pages/layers.py", "slider", "layers_layer", 4),
    "layers_pooling": ("pages/layers.py", "radio", "layers_pooling", "last4"),
    "attn_layer": ("pages/attention.py", "slider", "attn_layer", 4),
    "attn_head": ("pages/attention.py", "slider", "attn_head", 4),
}

REDRAW_JS = """async ([a, b]) => {
    const A = JSON.parse(a), B = JSON.parse(b), g = document.getElementById('g');
    const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
    const ts = [];
    await Plotly.newPlot(g, A.data, A.layout, {});
    for (let k = 0; k < 12; k++) {
        const S = k % 2 ? A : B, t0 = performance.now();
        await Plotly.react(g, JSON.parse(JSON.stringify(S.data)), JSON.parse(JSON.stringify(S.layout)), {});
        await frame();
        ts.push(performance.now() - t0);
    }
    Plotly.purge(g);
    return ts;
}"""


def changed_charts(page: str, kind: str, key: str, value) -> list[dict]:
    """Every chart of ``page`` before and after moving one control: index, title, size, old and new JSON."""
    from lib.inputs.presets import default_preset
    from tests.conftest import page_test

    at = page_test(page, preset=default_preset().id).run()
    before = [c.proto.spec for c in at.get("plotly_chart")]
    getattr(at, kind)(key=key).set_value(value).run()
    after = [c.proto.spec for c in at.get("plotly_chart")]
    rows = []
    for i, (b, a) in enumerate(zip(before, after, strict=False)):
        title = json.loads(a)["layout"].get("title") or {}
        title = title.get("text") if isinstance(title, dict) else title
        rows.append({"i": i, "title": title or "", "changed": a != b, "kB": len(a) / 1e3, "old": b, "new": a})
    return rows


def main(names: list[str]) -> None:
    import plotly
    from playwright.sync_api import sync_playwright

    results = {name: changed_charts(*CASES[name]) for name in names}
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_content("<div id='g' style='width:704px'></div>")
        page.add_script_tag(path=str(plotly_js))
        for name, rows in results.items():
            print(f"{name}:")
            for r in rows:
                if not r["changed"]:
                    print(f"  [{r['i']}] unchanged {r['kB']:6.1f} kB  {r['title']}")
                    continue
                ts = page.evaluate(REDRAW_JS, [r["old"], r["new"]])
                print(
                    f"  [{r['i']}] changed   {r['kB']:6.1f} kB  redraw median {statistics.median(ts):4.0f} ms, "
                    f"min {min(ts):4.0f} ms  {r['title']}"
                )
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
