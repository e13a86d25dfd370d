"""Floods on the class board: what they cost the server, and whether a real student still gets in.

    python benchmarks/board_flood.py                 # every part; prints a JSON summary; --out FILE writes it too
    python benchmarks/board_flood.py --parts cookieless,nat,hidden
    python benchmarks/board_flood.py --app-root DIR  # the same against another checkout (e.g. main's code)

Each part runs on a fresh `streamlit run serve.py` with a temporary SQLite board; every browser here connects
from this machine, so they all share one address, as a class behind one school address does.

* **watch**: 300 long sentences sent within a minute while the teacher watches (below);
* **cookieless**: COOKIELESS_TABS tabs of one browser that refuses cookies (each tab a Streamlit session
  without the board's cookie, as a script opening sessions is), each trying to send 4 sentences through the
  page; how many the board stored, then whether a real student (with the cookie) is taken;
* **nat**: NAT_STUDENTS students, each a browser of their own from the same address, open the board and send
  one sentence: how many got a cookie and a stored sentence, wall time and server CPU;
* **hidden**: 1,200 sentences from 300 students, sent a board-full at a time and hidden each time with the
  teacher's one click (*Hide all 300 waiting* on their phone; a checkout without it: marked hidden in the
  database), then a real student sends through the page: taken, or "full".

**watch** in detail. Two teacher tabs watch the board, as in a class: the
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
import contextlib
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the project's folder first

import sqlalchemy as sa  # noqa: E402

from benchmarks import kit  # noqa: E402
from lib import board as lb  # noqa: E402
from tests.browser._browser import CHROMIUM, CHROMIUM_ARGS, LOAD_MS, start_server, stop_server, wait_idle  # noqa: E402
from tests.browser._class_board import (  # noqa: E402
    PHONE_VIEWPORT,
    TEACHER_VIEWPORT,
    cpu_seconds,
    main_text,
    moderate,
)

N_SENTENCES, N_STUDENTS, EVERY_S, AFTER_S, IDLE_S = 300, 100, 0.2, 60.0, 20.0
COOKIELESS_TABS, COOKIELESS_SENDS = 30, 4
NAT_STUDENTS, NAT_AT_ONCE = 60, 6
HIDDEN_ROUNDS, HIDDEN_STUDENTS = 4, 300
PARTS = ("watch", "cookieless", "nat", "hidden")
ERROR = "[data-testid='stAlertContentError']"
JS_RUNNING = """() => { const a = document.querySelector('[data-test-script-state]');
    return a !== null && a.getAttribute('data-test-script-state') === 'running'; }"""
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


def run_watch(app_root: Path) -> dict:
    from playwright.sync_api import sync_playwright

    folder = tempfile.mkdtemp(prefix="context-lens-flood-")
    store = lb.BoardStore(f"sqlite:///{Path(folder) / 'boards.sqlite'}")
    new = store.create_board("bank", "money, river")
    code = new.board.code
    rng = random.Random(0)
    flood = [flood_sentence(i, rng) for i in range(N_SENTENCES)]
    proc, base, log = kit.start_server(cwd=app_root, env={"CONTEXT_LENS_DATA": folder})
    pid = proc.pid
    out: dict = {"sentences": N_SENTENCES, "students": N_STUDENTS, "chars_mean": round(sum(map(len, flood)) / len(flood))}
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            samples.append(rss_mb(pid))

    try:
        with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(profile, executable_path=kit.CHROMIUM, headless=True,
                                                       args=kit.CHROMIUM_ARGS)  # fmt: skip
            projector = ctx.new_page()
            projector.set_viewport_size(TEACHER_VIEWPORT)
            projector.goto(base + new.teacher_link)
            projector.wait_for_selector("text=On the board (0)", timeout=kit.LOAD_MS)
            phone = ctx.new_page()
            phone.set_viewport_size(PHONE_VIEWPORT)
            phone.goto(base + new.teacher_link)
            phone.wait_for_selector("text=On the board (0)", timeout=kit.LOAD_MS)
            if phone.locator(".st-key-board_moderate").count():
                phone.locator(".st-key-board_moderate label").first.click()
            warm = "The bank opened early for the warm-up."
            sent = store.send(code, "warm", "money", warm)
            phone.wait_for_selector(f"text={warm}", timeout=kit.LOAD_MS)  # encoded ahead: the model is loaded
            store.hide(code, new.key, [sent.id])
            time.sleep(10)
            c0 = kit.cpu_seconds(pid)
            time.sleep(IDLE_S)
            idle = (kit.cpu_seconds(pid) - c0) * 60 / IDLE_S
            out["idle_cpu_per_min_s"] = round(idle, 2)
            out["rss_before_mb"] = round(rss_mb(pid))
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            c1, t1 = kit.cpu_seconds(pid), time.monotonic()
            refused = []
            for i, s in enumerate(flood):
                try:
                    store.send(code, f"flood{i % N_STUDENTS}", ("money", "river")[i % 2], s)
                except lb.BoardError as err:  # a checkout whose hidden sentences still count: the board is full
                    refused.append(str(err))
                time.sleep(max(0.0, t1 + (i + 1) * EVERY_S - time.monotonic()))
            out["refused"] = len(refused)
            c2, t2 = kit.cpu_seconds(pid), time.monotonic()
            time.sleep(AFTER_S)
            c3 = kit.cpu_seconds(pid)
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
            c4, t4 = kit.cpu_seconds(pid), time.monotonic()
            button.click()
            projector.wait_for_function(f"() => ({JS_POINTS})() >= 3", timeout=kit.LOAD_MS)
            points = projector.evaluate(JS_POINTS)
            projector.wait_for_timeout(3000)
            out["accept"] = {
                "button": label, "points_charted": points, "to_map_s": round(time.monotonic() - t4 - 3, 1),
                "cpu_s": round(kit.cpu_seconds(pid) - c4, 2),
            }  # fmt: skip
            stop.set()
            ctx.close()
        out["peak_rss_mb"] = round(kit.peak_rss_mb(pid))
        out["rss_sampled_max_mb"] = round(max(samples)) if samples else None
        out["rss_end_mb"] = round(rss_mb(pid))
        text = Path(log).read_text(errors="replace")
        out["tracebacks_in_server_log"] = text.count("Traceback (most recent call last)")
    finally:
        stop.set()
        store.dispose()
        kit.stop_server(proc)
        Path(log).unlink(missing_ok=True)
    return out


def _server(app_root: Path):
    folder = tempfile.mkdtemp(prefix="context-lens-flood-")
    store = lb.BoardStore(f"sqlite:///{Path(folder) / 'boards.sqlite'}")
    proc, base, log = start_server(cwd=app_root, env={"CONTEXT_LENS_DATA": folder})
    return store, proc, base, log


def _stop(store, proc, log) -> int:
    """Stop the server; returns the tracebacks its log holds."""
    store.dispose()
    stop_server(proc)
    text = Path(log).read_text(errors="replace")
    Path(log).unlink(missing_ok=True)
    return text.count("Traceback (most recent call last)")


def try_send(pg, sense: str, sentence: str) -> str:
    """Type, choose the sense (where the form asks), Send, wait for the run to end; returns the page's alert."""
    pg.locator(".st-key-board_text input").fill(sentence)
    pg.locator(".st-key-board_sense label").filter(has_text=sense).first.click()
    pg.locator(".st-key-board_send button").click()
    with contextlib.suppress(Exception):  # a run shorter than the poll is over already
        pg.wait_for_function(JS_RUNNING, timeout=1500, polling=50)
    wait_idle(pg)
    alerts = pg.locator("[data-testid='stAlert']").all_inner_texts()
    return alerts[-1] if alerts else ""


def real_student(browser, base: str, link: str) -> str:
    """A student with the board's cookie sends one sentence: "taken", or what the page said instead."""
    pg = browser.new_context(viewport=PHONE_VIEWPORT).new_page()
    try:
        pg.goto(base + link)
        pg.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
        said = try_send(pg, "river", "After the flood we sat on the river bank.")
        return "taken" if "Sent." in said else said
    finally:
        pg.context.close()


def run_cookieless(app_root: Path) -> dict:
    """A browser that refuses cookies opens COOKIELESS_TABS sessions and sends from each."""
    from playwright.sync_api import sync_playwright

    store, proc, base, log = _server(app_root)
    new = store.create_board("bank", "money, river")
    out: dict = {"tabs": COOKIELESS_TABS, "attempts": COOKIELESS_TABS * COOKIELESS_SENDS}
    try:
        with sync_playwright() as p:
            # a page answered through a route counts as another network's: Chromium would then refuse its
            # websocket to this machine (local network access), which a real browser's page never meets
            args = [*CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks"]
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)

            def refusing() -> object:
                """A tab of a browser that keeps no cookie: the route's fetch shares the context's cookie jar,
                so the jar is emptied before the page's answer (without its Set-Cookie) reaches the tab."""
                ctx = browser.new_context(viewport=PHONE_VIEWPORT)

                def no_cookie(route) -> None:
                    resp = route.fetch()
                    ctx.clear_cookies()
                    dropped = ("set-cookie", "content-encoding", "content-length")  # the body comes back decoded
                    route.fulfill(response=resp, headers={k: v for k, v in resp.headers.items() if k.lower() not in dropped})

                # every answer but Streamlit's files and endpoints (any other may be a page carrying the cookie)
                ctx.route(lambda url: "/static/" not in url and "/_stcore/" not in url, no_cookie)
                return ctx.new_page()

            pages = [refusing() for _ in range(COOKIELESS_TABS)]
            for pg in pages:
                pg.goto(base + new.student_link)
            for pg in pages:
                pg.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
            out["cookies_kept"] = sum(c["name"] == lb.STUDENT_COOKIE for pg in pages for c in pg.context.cookies())
            c0, t0 = cpu_seconds(proc.pid), time.monotonic()
            said: dict[str, int] = {}
            for k in range(COOKIELESS_SENDS):
                for i, pg in enumerate(pages):
                    text = try_send(pg, ("money", "river")[i % 2], f"Tab {i} floods the bank, try {k}.")
                    key = "sent" if "Sent." in text else text.split(":")[0][:60]
                    said[key] = said.get(key, 0) + 1
            out["wall_s"] = round(time.monotonic() - t0, 1)
            out["server_cpu_s"] = round(cpu_seconds(proc.pid) - c0, 2)
            out["stored"] = len(store.entries(new.board.code, new.key))
            out["answers"] = said
            out["real_student_after"] = real_student(browser, base, new.student_link)
            browser.close()
    finally:
        out["tracebacks_in_server_log"] = _stop(store, proc, log)
    return out


def run_nat(app_root: Path) -> dict:
    """NAT_STUDENTS browsers from one address, NAT_AT_ONCE at a time, each sends one sentence."""
    from playwright.sync_api import sync_playwright

    store, proc, base, log = _server(app_root)
    new = store.create_board("bank", "money, river")
    out: dict = {"students": NAT_STUDENTS}
    cookies = taken = 0
    refused: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            c0, t0 = cpu_seconds(proc.pid), time.monotonic()
            for start in range(0, NAT_STUDENTS, NAT_AT_ONCE):
                group = [browser.new_context(viewport=PHONE_VIEWPORT).new_page()
                         for _ in range(min(NAT_AT_ONCE, NAT_STUDENTS - start))]  # fmt: skip
                for pg in group:
                    pg.goto(base + new.student_link)
                for j, pg in enumerate(group):
                    pg.wait_for_selector(".st-key-board_text input", timeout=LOAD_MS)
                    cookies += any(c["name"] == lb.STUDENT_COOKIE for c in pg.context.cookies())
                    said = try_send(pg, "money", f"Student {start + j} of the school put money in the bank.")
                    if "Sent." in said:
                        taken += 1
                    else:
                        refused.append(said[:80])
                for pg in group:
                    pg.context.close()
            out["wall_s"] = round(time.monotonic() - t0, 1)
            out["server_cpu_s"] = round(cpu_seconds(proc.pid) - c0, 2)
            browser.close()
        out.update(with_cookie=cookies, taken=taken, stored=len(store.entries(new.board.code, new.key)),
                   refused=refused[:5])  # fmt: skip
    finally:
        out["tracebacks_in_server_log"] = _stop(store, proc, log)
    return out


def run_hidden(app_root: Path) -> dict:
    """HIDDEN_ROUNDS board-fulls from HIDDEN_STUDENTS students, each hidden with one click; then a real student."""
    from playwright.sync_api import sync_playwright

    store, proc, base, log = _server(app_root)
    new = store.create_board("bank", "money, river")
    code = new.board.code
    out: dict = {"sentences": HIDDEN_ROUNDS * lb.MAX_BOARD_SENTENCES, "students": HIDDEN_STUDENTS, "clicks": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            phone = browser.new_context(viewport=PHONE_VIEWPORT).new_page()
            phone.goto(base + new.teacher_link)
            moderate(phone)
            sent = 0
            for r in range(HIDDEN_ROUNDS):
                ids = []
                for i in range(lb.MAX_BOARD_SENTENCES):
                    ids.append(store.send(code, f"flood{(r * lb.MAX_BOARD_SENTENCES + i) % HIDDEN_STUDENTS}",
                                          ("money", "river")[i % 2], f"Flood {r}-{i} about the bank.").id)  # fmt: skip
                    sent += 1
                button = phone.get_by_role("button", name=f"Hide all {lb.MAX_BOARD_SENTENCES} waiting")
                try:
                    button.wait_for(timeout=60_000)
                except Exception:  # noqa: BLE001 - a checkout without the button: hidden in its own way
                    with store.engine.begin() as conn:
                        conn.execute(lb.entries.update().where(lb.entries.c.id.in_(ids)).values(status=lb.HIDDEN))
                    out["clicks"].append("no button: marked hidden in the database")
                    continue
                c0, t0 = cpu_seconds(proc.pid), time.monotonic()
                button.click()
                phone.wait_for_selector("text=Waiting for you (0)", timeout=LOAD_MS)
                out["clicks"].append({"to_empty_queue_s": round(time.monotonic() - t0, 2),
                                      "server_cpu_s": round(cpu_seconds(proc.pid) - c0, 2)})  # fmt: skip
            with store.engine.connect() as conn:
                out["rows_left"] = conn.execute(
                    sa.select(sa.func.count()).select_from(lb.entries).where(lb.entries.c.board == code)
                ).scalar()  # fmt: skip
            out["real_student_after"] = real_student(browser, base, new.student_link)
            browser.close()
    finally:
        out["tracebacks_in_server_log"] = _stop(store, proc, log)
    return out


RUNS = {"watch": run_watch, "cookieless": run_cookieless, "nat": run_nat, "hidden": run_hidden}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app-root", default=str(kit.ROOT), help="the checkout whose serve.py runs (default: this one)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"which parts, comma-separated: {', '.join(PARTS)}")
    ap.add_argument("--out", default=None, help="also write the JSON summary here")
    args = ap.parse_args(argv if argv is not None else sys.argv[1:])
    root = Path(args.app_root)
    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": kit.code_of(root)}
    for part in (x.strip() for x in args.parts.split(",") if x.strip()):
        load0 = os.getloadavg()[0]
        got = RUNS[part](root)
        got["load_average"] = [round(load0, 1), round(os.getloadavg()[0], 1)]
        result[part] = got
        print(json.dumps({part: got}), flush=True)
    return kit.report(result, args.out)


if __name__ == "__main__":
    main()
