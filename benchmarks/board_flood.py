"""A flood on the class board: 300 long sentences sent within a minute while the teacher watches.

    python benchmarks/board_flood.py                 # prints a JSON summary; --out FILE writes it too
    python benchmarks/board_flood.py --app-root DIR  # the same against another checkout (e.g. main's code)

One fresh `streamlit run serve.py` on a temporary SQLite board. Two teacher tabs watch it, as in a class: the
projector (1280 x 720, the default view) and the teacher's phone (390 x 844, *Moderate on this screen* on;
a checkout without that view shows its queue on the projector tab). After a warm-up sentence (the model
loaded, then a quiet 20 s: the idle rate of two watching tabs), 100 students send 3 sentences each of ~290
characters (~50 word pieces: 300 x 50 = 15,000 word pieces, 160 MB of every layer's vectors, most of the
200-MB results cache) through lib.board, one every 0.2 s. Reported, from /proc/<server pid>:

* **CPU during the flood** (60 s) and **in the minute after** (the tabs still refreshing every 2 s), each
  less the idle rate, and the idle rate itself;
* **peak RSS** (VmHWM) and the largest VmRSS sampled every 0.5 s;
* whether any flood sentence ever appeared on the projector tab (it must not);
* the teacher's first "Accept" on the phone: CPU and seconds until the projector's map shows the points.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib import board as lb  # noqa: E402
from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, LOAD_MS, start_server, stop_server  # noqa: E402
from tests.browser._class_board import (  # noqa: E402
    PHONE_VIEWPORT,
    TEACHER_VIEWPORT,
    cpu_seconds,
    main_text,
    peak_rss_mb,
)

N_SENTENCES, N_STUDENTS, EVERY_S, AFTER_S, IDLE_S = 300, 100, 0.2, 60.0, 20.0
WORDS = (
    "quiet", "river", "morning", "money", "loan", "deposit", "grassy", "muddy", "boat", "fisher", "interest",
    "teller", "vault", "account", "willow", "heron", "current", "ledger", "cheque", "savings", "reeds", "shore",
    "mortgage", "branch", "stream", "clerk",
)  # fmt: skip
JS_POINTS = """() => { const g = document.querySelector('.st-key-board_projection .js-plotly-plot');
    return g && Array.isArray(g.data) ? g.data.reduce((k, t) => k + (t.x ? t.x.length : 0), 0) : 0; }"""


def flood_sentence(i: int, rng: random.Random) -> str:
    """A distinct sentence of about 290 characters with the word bank in it."""
    words = [rng.choice(WORDS) for _ in range(60)]
    words.insert(rng.randrange(3, 25), "bank")  # within the first ~200 characters, so never cut off
    return f"Student {i} says " + " ".join(words)[: lb.MAX_SENTENCE_CHARS - 20].rsplit(" ", 1)[0] + "."


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(app_root: Path) -> dict:
    from playwright.sync_api import sync_playwright

    folder = tempfile.mkdtemp(prefix="context-lens-flood-")
    store = lb.BoardStore(f"sqlite:///{Path(folder) / 'boards.sqlite'}")
    new = store.create_board("bank", "money, river")
    code = new.board.code
    rng = random.Random(0)
    flood = [flood_sentence(i, rng) for i in range(N_SENTENCES)]
    proc, base, log = start_server(cwd=app_root, env={"CONTEXT_LENS_DATA": folder})
    pid = proc.pid
    out: dict = {"sentences": N_SENTENCES, "students": N_STUDENTS, "chars_mean": round(sum(map(len, flood)) / len(flood))}
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            samples.append(rss_mb(pid))

    try:
        with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_ARGS)  # fmt: skip
            projector = ctx.new_page()
            projector.set_viewport_size(TEACHER_VIEWPORT)
            projector.goto(base + new.teacher_link)
            projector.wait_for_selector("text=On the board (0)", timeout=LOAD_MS)
            phone = ctx.new_page()
            phone.set_viewport_size(PHONE_VIEWPORT)
            phone.goto(base + new.teacher_link)
            phone.wait_for_selector("text=On the board (0)", timeout=LOAD_MS)
            if phone.locator(".st-key-board_moderate").count():
                phone.locator(".st-key-board_moderate label").first.click()
            warm = "The bank opened early for the warm-up."
            sent = store.send(code, "warm", "money", warm)
            phone.wait_for_selector(f"text={warm}", timeout=LOAD_MS)  # encoded ahead: the model is loaded
            store.hide(code, new.key, [sent.id])
            time.sleep(10)
            c0 = cpu_seconds(pid)
            time.sleep(IDLE_S)
            idle = (cpu_seconds(pid) - c0) * 60 / IDLE_S
            out["idle_cpu_per_min_s"] = round(idle, 2)
            out["rss_before_mb"] = round(rss_mb(pid))
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            c1, t1 = cpu_seconds(pid), time.monotonic()
            refused = []
            for i, s in enumerate(flood):
                try:
                    store.send(code, f"flood{i % N_STUDENTS}", ("money", "river")[i % 2], s)
                except lb.BoardError as err:  # a checkout whose hidden sentences still count: the board is full
                    refused.append(str(err))
                time.sleep(max(0.0, t1 + (i + 1) * EVERY_S - time.monotonic()))
            out["refused"] = len(refused)
            c2, t2 = cpu_seconds(pid), time.monotonic()
            time.sleep(AFTER_S)
            c3 = cpu_seconds(pid)
            flood_s = t2 - t1
            out["flood_wall_s"] = round(flood_s, 1)
            out["cpu_flood_s"] = round(c2 - c1, 2)
            out["cpu_flood_above_idle_s"] = round(c2 - c1 - idle * flood_s / 60, 2)
            out["cpu_minute_after_s"] = round(c3 - c2, 2)
            out["cpu_minute_after_above_idle_s"] = round(c3 - c2 - idle * AFTER_S / 60, 2)
            shown = main_text(projector)
            out["flood_on_projector"] = sum(s in shown for s in flood)
            out["phone_shows"] = sum(s in main_text(phone) for s in flood)
            button = phone.locator("[class*='st-key-board_accept_'] button")
            label = button.inner_text().strip().splitlines()[-1]
            c4, t4 = cpu_seconds(pid), time.monotonic()
            button.click()
            projector.wait_for_function(f"() => ({JS_POINTS})() >= 3", timeout=LOAD_MS)
            points = projector.evaluate(JS_POINTS)
            projector.wait_for_timeout(3000)
            out["accept"] = {
                "button": label, "points_charted": points, "to_map_s": round(time.monotonic() - t4 - 3, 1),
                "cpu_s": round(cpu_seconds(pid) - c4, 2),
            }  # fmt: skip
            stop.set()
            ctx.close()
        out["peak_rss_mb"] = round(peak_rss_mb(pid))
        out["rss_sampled_max_mb"] = round(max(samples)) if samples else None
        out["rss_end_mb"] = round(rss_mb(pid))
        text = Path(log).read_text(errors="replace")
        out["tracebacks_in_server_log"] = text.count("Traceback (most recent call last)")
    finally:
        stop.set()
        store.dispose()
        stop_server(proc)
        Path(log).unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app-root", default=str(ROOT), help="the checkout whose serve.py runs (default: this one)")
    ap.add_argument("--out", default=None, help="also write the JSON summary here")
    args = ap.parse_args(argv if argv is not None else sys.argv[1:])
    root = Path(args.app_root)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    load0 = os.getloadavg()[0]
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit.strip() if root == ROOT else f"code of {root}",
        "load_average_start": round(load0, 1),
        **run(root),
        "load_average_end": round(os.getloadavg()[0], 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return result


if __name__ == "__main__":
    main()
