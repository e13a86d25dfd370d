"""How many times plotly.js draws each chart of a page when it is mounted anew, and how long that takes.

    python benchmarks/chart_draws.py                         # every page, default preset
    python benchmarks/chart_draws.py pages/layers.py --widths 704,350 --repeats 5
    python benchmarks/chart_draws.py pages/layers.py --state layers_pooling=last4

Each page runs with AppTest on the default preset; every ``st.plotly_chart``'s spec and config, exactly as
sent to the browser, is drawn in Chromium (Debian's /usr/bin/chromium, the plotly.js of the installed plotly
package) with ``Plotly.newPlot`` in a div as wide as the page's column, which is what Streamlit 1.67 does with a
chart whose spec changed (a new element id). Per chart: the full draws (``plotly_afterplot`` events: 1 = drawn
once, 2 = plotly's automargin pushed a margin after the first draw and drew it again) and the median time to
the next frame. Not a test; seconds are noisy on a shared machine, the draw counts are not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PAGES = ["pages/home.py", "pages/layers.py", "pages/attention.py", "pages/context.py", "pages/anisotropy.py",
         "pages/projections.py", "pages/calculator.py", "pages/lesson.py"]  # fmt: skip

DRAW_JS = """async ([spec, config, width, repeats]) => {
    const S = JSON.parse(spec), C = JSON.parse(config || '{}');
    const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
    const g = document.getElementById('g');
    g.style.width = width + 'px';
    const ts = [], draws = [];
    let margins = null;
    for (let k = 0; k < repeats; k++) {
        Plotly.purge(g);
        let n = 0;
        const t0 = performance.now();
        const data = JSON.parse(JSON.stringify(S.data)), layout = JSON.parse(JSON.stringify(S.layout));
        await Plotly.newPlot(g, data, layout, C);
        await frame(); await frame();
        // plotly keeps this key once its automargin has drawn the chart again (plots.doAutoMargin)
        n = 1 + ('_redrawFromAutoMarginCount' in g._fullLayout ? 1 : 0);
        ts.push(performance.now() - t0);
        draws.push(n);
        const s = g._fullLayout._size;
        margins = {l: s.l, r: s.r, t: s.t, b: s.b};
    }
    return {ts, draws, margins};
}"""


def page_charts(page: str, state: dict | None = None) -> list[dict]:
    from lib.inputs.presets import default_preset
    from tests.conftest import page_test

    at = page_test(page, preset=default_preset().id)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    out = []
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        title = spec["layout"].get("title") or {}
        title = title.get("text") if isinstance(title, dict) else title
        out.append({"title": (title or "")[:60], "spec": c.proto.spec, "config": c.proto.config,
                    "kB": len(c.proto.spec) / 1e3, "margin": spec["layout"].get("margin")})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="*", default=PAGES)
    ap.add_argument("--widths", default="704", help="column widths in px, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--state", action="append", default=[], metavar="KEY=VALUE",
                    help="a widget's value before the run, e.g. layers_pooling=last4 (an int if it reads as one)")
    ap.add_argument("--try-margins", action="store_true",
                    help="draw each chart again with the margins plotly ended with set in advance")
    args = ap.parse_args()

    import plotly
    from playwright.sync_api import sync_playwright

    state = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in (x.split("=", 1) for x in args.state)}
    charts = {page: page_charts(page, state) for page in args.pages}
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    widths = [int(w) for w in args.widths.split(",")]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        # Streamlit's chart font, from its own build, as in the app
        import streamlit

        font = next((Path(streamlit.__file__).parent / "static" / "static" / "media").glob("SourceSansVF-Upright*"))
        page.route("http://fonts.local/font.woff2",
                   lambda r: r.fulfill(body=font.read_bytes(), content_type="font/woff2"))  # fmt: skip
        page.set_content("<style>@font-face{font-family:'Source Sans';src:url(http://fonts.local/font.woff2);"
                         "font-weight:200 900}</style><div id='g'></div>")  # fmt: skip
        page.evaluate("() => document.fonts.load('12px \"Source Sans\"')")
        page.add_script_tag(path=str(plotly_js))
        total = {w: [0, 0.0] for w in widths}
        for name, rows in charts.items():
            print(f"{name}:")
            for r in rows:
                for w in widths:
                    res = page.evaluate(DRAW_JS, [r["spec"], r["config"], w, args.repeats])
                    ms = statistics.median(res["ts"])
                    total[w][0] += max(res["draws"])
                    total[w][1] += ms
                    if args.try_margins:
                        spec = json.loads(r["spec"])
                        spec["layout"]["margin"] = {**(spec["layout"].get("margin") or {}), **res["margins"]}
                        res2 = page.evaluate(DRAW_JS, [json.dumps(spec), r["config"], w, args.repeats])
                        print(f"     preset margins: draws {max(res2['draws'])}  {statistics.median(res2['ts']):5.0f} ms"
                              f"  drawn {res2['margins']}")
                    print(f"  {w:4d} px  draws {max(res['draws'])}  {ms:5.0f} ms  {r['kB']:6.1f} kB  margins "
                          f"sent {r['margin']} drawn {res['margins']}  {r['title']}")  # fmt: skip
        for w, (d, ms) in total.items():
            print(f"all charts at {w} px: {d} draws, {ms:.0f} ms")
        browser.close()


if __name__ == "__main__":
    main()
