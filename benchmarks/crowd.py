"""A hostile crowd and one ordinary student on one fresh hosted server, all at once.

    python benchmarks/crowd.py                  # decoder and fine-tuning tabs; prints a JSON summary
    python benchmarks/crowd.py --runs 5 --out benchmarks/results/crowd.json   # five fresh servers, the spread
    python benchmarks/crowd.py --no-decoder --no-finetune   # the crowd before the decoder and fine-tuning
    python benchmarks/crowd.py --only compare   # one kind of hostile tab alone (upload, compare, occlusion)
    python benchmarks/crowd.py --cold           # the crowd arrives before the preset warm-up has finished
    python benchmarks/crowd.py --log /tmp/crowd.log   # keep the server's log (its work queue and memory, 2 a second)
    python -c "from benchmarks.crowd import main; main([])"

One fresh `streamlit run serve.py` on 127.0.0.1 (port CONTEXT_LENS_BENCH_PORT, default 8610), hosted
(``CONTEXT_LENS_MODELS`` lists the decoder, as a class's server would; ``--local`` leaves hosted mode off). The
benchmark waits for the hosted copy's preset warm-up (the server's log line "warm presets: ..."; ``--cold``
does not), loads the model once more through a two-sentence link, then these tabs open together in headless
Chromium:

* **junk uploads** (3): Layer by layer, "Bring your own sentences", a 1.99 MB CSV of one good row and
  ~1 M junk lines;
* **large compare links** (3): Layer by layer on a set at the word-piece budget (500 long sentences, each tab
  its own) with the second model (random weights) on;
* **long occlusion sets** (2): What moves the word on a set of 60-word sentences in five senses (the page masks
  each word of its sentence, then of three sentences of each other sense);
* **decoder tabs** (2; ``--no-decoder`` leaves them out): the same 500 long sentences on Layer by layer and the
  same long occlusion set on What moves the word, both with ``?model=HuggingFaceTB/SmolLM2-135M-Instruct`` (its
  set is cut at its own budget, 31 × 576 numbers a piece);
* **fine-tuning tabs** (3; ``--no-finetune`` leaves them out): a link to train every weight for 200 epochs
  (``ft_train=1``: hours of CPU), a link to that run's fine-tuned model on the glossary page
  (``?finetuned=<recipe>``), and a teacher who opens a LoRA link and presses Train (a run within the hosted
  limit, which trains while everything else goes on);

and then an **ordinary student** opens the default preset's start page. Reported: the server's peak resident
memory (VmHWM in /proc/<pid>/status) and at the end, its CPU seconds, whether it is alive, the student's
seconds until every chart is drawn, and for each hostile tab the seconds until it answered (a chart or a
message about its input; the teacher's run: its charts, or a message why not) and whether it showed a
traceback; the load average before and after (the machine's other work).

Targets: peak RSS <= 1.4 GB with the decoder or fine-tuning tabs (<= 1.2 GB without them), server alive, the
student charted within 10 s, every hostile tab answered within 600 s, no traceback. Seconds are wall time on a
shared machine: noisy; CPU seconds are the server's own. ``--runs N`` starts N fresh servers one after the
other and adds the spread (min, median, max) of the student's seconds, the slowest tab and the peak memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: the project's folder first

from benchmarks import kit  # noqa: E402
from lib.inputs.sentences import pack_text  # noqa: E402

LIMIT_S = 900.0  # the longest the scenario waits for every tab
ANSWER_S = 600.0  # every hostile tab answered within this
WARM_S = 900.0  # the longest the benchmark waits for the server's preset warm-up
GOTO_MS = 120_000  # a hostile tab's navigation: it counts from the request, not the page's load (a busy server)
JS_STATE = """() => {
    const alerts = Array.from(document.querySelectorAll('[data-testid="stAlert"]')).map(a => a.textContent);
    const charts = Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot'))
        .filter(g => Array.isArray(g.data) && g.data.length > 0).length;
    const traces = document.querySelectorAll('[data-testid="stException"]').length;
    const page = document.body ? document.body.innerText : "";
    const s = document.querySelector('[data-test-script-state]');
    const idle = s !== null && s.getAttribute('data-test-script-state') === 'notRunning';
    return {alerts, charts, traces, idle, traceback: page.includes('Traceback (most recent call last)')}; }"""


# ------------------------------------------------------------------------------------------ the inputs
def junk_csv(target_bytes: int = 1_990_000) -> bytes:
    """One good row and ~1 M junk lines: under the browser's 2,000,000-byte limit."""
    head = "sense,sentence\nriver,We sat on the bank of the river.\n"
    return (head + "x\n" * ((target_bytes - len(head)) // 2)).encode()


def compare_link(tab: int, n: int = 500, pieces: int = 385) -> str:
    """Layer by layer with the second model on, on 500 long sentences (cut at the word-piece budget)."""
    text = "\n".join(f"s{k % 2} | The bank {k} of tab {tab} " + "!" * pieces for k in range(n))
    return f"/layers?target=bank&text={quote(pack_text(text))}&layers_compare=1"


def occlusion_link(tab: int, words: int = 58) -> str:
    """What moves the word on five senses of three 60-word sentences: 13 occlusions of ~60 variants each."""
    common = ["we", "walked", "along", "the", "quiet", "river", "and", "watched", "small", "boats"]
    filler = " ".join(common[i % len(common)] for i in range(words - 5)) + f" tab {tab}"
    rows = [f"sense{k} | The [bank] {k}.{j} {filler} end" for k in range(5) for j in range(3)]
    return f"/context?target=bank&text={quote(pack_text(chr(10).join(rows)))}"


DECODER = "HuggingFaceTB/SmolLM2-135M-Instruct"


def decoder_set_link(tab: int, n: int = 500, pieces: int = 385) -> str:
    """Layer by layer with the decoder on 500 long sentences (cut at the decoder's word-piece budget)."""
    text = "\n".join(f"s{k % 2} | The bank {k} of decoder tab {tab} " + "!" * pieces for k in range(n))
    return f"/layers?target=bank&text={quote(pack_text(text))}&model={quote(DECODER, safe='')}"


def decoder_occlusion_link(tab: int) -> str:
    """What moves the word with the decoder on the long occlusion set."""
    return occlusion_link(100 + tab) + f"&model={quote(DECODER, safe='')}"


def _bank_recipe(method: str, epochs: int) -> str:
    """The recipe key of a run on the bank preset (what the Fine-tune page's link would train)."""
    from lib.finetune.data import split_set
    from lib.finetune.recipe import DEFAULT_LR, Recipe
    from lib.inputs.presets import preset_by_id
    from lib.inputs.sentences import parse_sentence_set

    p = preset_by_id("bank")
    ss = parse_sentence_set(p.text, p.target, preset_id=p.id)
    digest = split_set(ss.target, ss.sentences, ss.senses, heldout=0.33, seed=0).digest
    return Recipe.make(digest, method, num_layers=6, epochs=epochs, lr=DEFAULT_LR["top"]).key


def train_everything_link() -> str:
    """Fine-tune every weight for 200 epochs, the link asking to train at once (hours of CPU)."""
    return "/finetune?preset=bank&ft_method=full&ft_epochs=200&ft_train=1"


def finetuned_model_link() -> str:
    """The glossary with that run's fine-tuned model: a server without its weights would have to train it."""
    return f"/glossary?preset=bank&finetuned={_bank_recipe('full', 200)}"


def teacher_link() -> str:
    """LoRA on the bank preset for 150 epochs (~20 s of CPU): the teacher presses Train."""
    return "/finetune?preset=bank&ft_method=lora&ft_lr=0.0005&ft_epochs=150&ft_train=1"


def warm_link() -> str:
    text = "river | We sat on the bank.\nmoney | The bank lent money."
    return f"/?target=bank&text={quote(pack_text(text))}"


# ------------------------------------------------------------------------------------------ the run
def _upload(pg, base: str, data: bytes, folder: Path, name: str) -> None:
    pg.goto(base + "/layers")
    kit.wait_charts(pg)
    pg.get_by_text("Bring your own sentences").click()
    path = folder / name
    path.write_bytes(data)
    pg.locator("input[type='file']").first.set_input_files(str(path))


def _answered(kind: str, st: dict) -> bool:
    """A chart or a message about the tab's own input (a wait message is not an answer)."""
    if st["traces"] or st["traceback"]:
        return True
    alerts = [a for a in st["alerts"] if "busy with" not in a and "Waiting for the server" not in a]
    if kind == "upload":
        return any("usable sentence" in a or "could be used" in a or "file" in a.lower() for a in alerts)
    if kind == "train":  # the teacher's run: its charts, or why it did not run (not the page's "press Train")
        return st["idle"] and (st["charts"] > 0 or any("Press Train" not in a for a in alerts if "link" not in a))
    return st["idle"] and (st["charts"] > 0 or bool(alerts))


KINDS = ("upload", "compare", "occlusion")


def _wait_for_warm_up(log: str, proc, limit: float = WARM_S) -> float | None:
    """Seconds until the server's log says its preset warm-up has ended (None: no warm-up, or not in time)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit and proc.poll() is None:
        text = Path(log).read_text(errors="replace")
        if "warm presets:" in text:
            return round(time.monotonic() - t0, 1)
        if "hosted mode off" in text:
            return None
        time.sleep(1.0)
    return None


def _queue_at_peak(log_text: str) -> list[str]:
    """The server's work-queue lines (CONTEXT_LENS_WORK_LOG=1) around its highest resident memory."""
    lines = [x.split("work queue: ", 1)[1] for x in log_text.splitlines() if "work queue: rss_mb=" in x]
    if not lines:
        return []
    rss = [int(x.split()[0].split("=")[1]) for x in lines]
    i = rss.index(max(rss))
    return lines[max(0, i - 4) : i + 2]


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def run(port: int, kinds: tuple[str, ...] = KINDS, student: bool = True, decoder: bool = True,
        finetune: bool = True, hosted: bool = True, cold: bool = False, keep_log: str | None = None) -> dict:  # fmt: skip
    from playwright.sync_api import sync_playwright

    env = {"CONTEXT_LENS_MODELS": DECODER if hosted else "", "CONTEXT_LENS_WORK_LOG": "1"}
    proc, base, log = kit.start_server(port=port, env=env)
    folder = Path(tempfile.mkdtemp(prefix="context-lens-crowd-"))
    result: dict = {"port": port, "decoder_tabs": decoder, "finetune_tabs": finetune, "hosted": hosted,
                    "loadavg_start": _loadavg()}  # fmt: skip
    try:
        if hosted and not cold:
            result["warm_up_s"] = _wait_for_warm_up(log, proc)
            line = [x for x in Path(log).read_text(errors="replace").splitlines() if "warm presets:" in x]
            result["warm_up"] = line[-1].split("context_lens: ")[-1] if line else None
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=kit.CHROMIUM, headless=True, args=kit.CHROMIUM_ARGS)
            try:
                warm = browser.new_page(viewport={"width": 1400, "height": 1000})
                warm.goto(base + warm_link())
                kit.wait_charts(warm)
                warm.close()
                result["rss_after_warmup_mb"] = round(kit.status_mb(proc.pid, "VmRSS"))
                cpu0 = kit.cpu_seconds(proc.pid)
                tabs: list[tuple[str, str, object, float]] = []
                for k in range(3 if "upload" in kinds else 0):  # the uploads first: each needs its page drawn
                    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                    _upload(pg, base, junk_csv(), folder, f"junk{k}.csv")
                    tabs.append(("upload", f"junk upload {k + 1}", pg, time.perf_counter()))
                for k in range(3 if "compare" in kinds else 0):
                    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                    pg.goto(base + compare_link(k), wait_until="commit", timeout=GOTO_MS)
                    tabs.append(("compare", f"large compare link {k + 1}", pg, time.perf_counter()))
                for k in range(2 if "occlusion" in kinds else 0):
                    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                    pg.goto(base + occlusion_link(k), wait_until="commit", timeout=GOTO_MS)
                    tabs.append(("occlusion", f"long occlusion set {k + 1}", pg, time.perf_counter()))
                if decoder:
                    for kind, label, link in (
                        ("compare", "decoder large set", decoder_set_link(0)),
                        ("occlusion", "decoder long occlusion set", decoder_occlusion_link(0)),
                    ):
                        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                        pg.goto(base + link, wait_until="commit", timeout=GOTO_MS)
                        tabs.append((kind, label, pg, time.perf_counter()))
                if finetune:
                    for kind, label, link in (
                        ("finetune", "train every weight for 200 epochs", train_everything_link()),
                        ("finetune", "its fine-tuned model's link", finetuned_model_link()),
                    ):
                        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
                        pg.goto(base + link, wait_until="commit", timeout=GOTO_MS)
                        tabs.append((kind, label, pg, time.perf_counter()))
                    teacher = browser.new_page(viewport={"width": 1400, "height": 1000})
                    t_teacher = time.perf_counter()
                    teacher.goto(base + teacher_link(), wait_until="commit", timeout=GOTO_MS)
                    teacher.get_by_role("button", name="Train", exact=True).click(timeout=int(ANSWER_S * 1000))
                    result["teacher_clicked_train_s"] = round(time.perf_counter() - t_teacher, 1)
                    tabs.append(("train", "teacher's LoRA run (Train pressed)", teacher, t_teacher))
                time.sleep(2.0)  # the hostile work is under way
                if student:
                    pupil = browser.new_page(viewport={"width": 1400, "height": 1000})
                    t = time.perf_counter()
                    pupil.goto(base + "/")
                    pupil.wait_for_function(kit.JS_CHARTS_DRAWN, timeout=int(LIMIT_S * 1000), polling=100)
                    result["student_charted_s"] = round(time.perf_counter() - t, 2)
                    pupil.wait_for_function(kit.JS_IDLE, timeout=int(LIMIT_S * 1000), polling=100)
                    result["student_done_s"] = round(time.perf_counter() - t, 2)
                    result["student_traceback"] = bool(pupil.evaluate(JS_STATE)["traces"])
                answers: dict[str, dict] = {}
                end = time.monotonic() + LIMIT_S
                while len(answers) < len(tabs) and time.monotonic() < end:
                    for kind, label, pg, t0 in tabs:
                        if label in answers:
                            continue
                        st = pg.evaluate(JS_STATE)
                        if _answered(kind, st):
                            answers[label] = {
                                "answer_s": round(time.perf_counter() - t0, 1),
                                "charts": st["charts"],
                                "messages": [a[:140] for a in st["alerts"]][:4],
                                "traceback": bool(st["traces"] or st["traceback"]),
                            }
                    time.sleep(0.5)
                for _, label, pg, _ in tabs:  # a tab never answered: what it showed at the end, to read why
                    if label not in answers:
                        st = pg.evaluate(JS_STATE)
                        answers[label] = {"answer_s": None, "traceback": False, "idle_at_end": st["idle"],
                                          "charts_at_end": st["charts"], "messages": [a[:140] for a in st["alerts"]][:4]}  # fmt: skip
                result["tabs"] = answers
                result["server_cpu_s"] = round(kit.cpu_seconds(proc.pid) - cpu0, 1)
            finally:
                browser.close()
        result["server_alive"] = proc.poll() is None and kit.healthy(base)
        result["loadavg_end"] = _loadavg()
        result["peak_rss_mb"] = round(kit.status_mb(proc.pid, "VmHWM"))
        result["rss_end_mb"] = round(kit.status_mb(proc.pid, "VmRSS"))
        log_text = Path(log).read_text(errors="replace")
        result["tracebacks_in_server_log"] = log_text.count("Traceback (most recent call last)")
        result["queue_at_peak"] = _queue_at_peak(log_text)
    finally:
        kit.stop_server(proc)
        if keep_log and Path(log).exists():  # the server's log (its work-queue lines every 0.5 s), to read later
            Path(keep_log).write_bytes(Path(log).read_bytes())
        Path(log).unlink(missing_ok=True)
    tabs = result.get("tabs", {})
    limit = 1400 if (decoder or finetune) else 1200
    answers = [t["answer_s"] for t in tabs.values()]
    result["slowest_tab_answered_s"] = max(answers) if answers and None not in answers else None
    result["targets"] = {
        f"peak_rss_le_{limit}_mb": result.get("peak_rss_mb", 1e9) <= limit,
        "server_alive": bool(result.get("server_alive")),
        "student_charted_le_10_s": (result.get("student_charted_s") or 1e9) <= 10,
        f"every_tab_answered_le_{ANSWER_S:.0f}_s": bool(tabs)
        and all(t["answer_s"] is not None and t["answer_s"] <= ANSWER_S for t in tabs.values()),
        "no_traceback": not result.get("student_traceback")
        and not any(t["traceback"] for t in tabs.values())
        and not result.get("tracebacks_in_server_log"),
    }
    return result


def spread(values: list) -> dict | None:
    """min, median and max of the runs' values (None when a run had none)."""
    if not values or any(v is None for v in values):
        return None
    s = sorted(values)
    return {"min": s[0], "median": s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2,
            "max": s[-1], "runs": values}  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=int(os.environ.get("CONTEXT_LENS_BENCH_PORT", "8610")))
    ap.add_argument("--out", default=None, help="also write the JSON summary here")
    ap.add_argument("--only", choices=KINDS, action="append", help="only these hostile tabs, and no student")
    ap.add_argument("--no-decoder", action="store_true", help="leave the decoder tabs out")
    ap.add_argument("--no-finetune", action="store_true", help="leave the fine-tuning tabs out")
    ap.add_argument("--local", action="store_true", help="hosted mode off (any model, no training limit)")
    ap.add_argument("--cold", action="store_true", help="do not wait for the hosted copy's preset warm-up")
    ap.add_argument("--runs", type=int, default=1, help="fresh servers one after the other; the spread")
    ap.add_argument("--log", default=None, help="keep the server's log here (run k > 1: suffixed .k)")
    args = ap.parse_args(argv if argv is not None else sys.argv[1:])
    decoder = not args.no_decoder and not args.only
    finetune = not args.no_finetune and not args.only
    runs = []
    for k in range(max(1, args.runs)):
        keep = None if not args.log else args.log + (f".{k + 1}" if k else "")
        if args.only:
            runs.append(run(args.port, tuple(args.only), student=False, decoder=False, finetune=False,
                            hosted=not args.local, cold=args.cold, keep_log=keep))  # fmt: skip
        else:
            runs.append(run(args.port, decoder=decoder, finetune=finetune, hosted=not args.local, cold=args.cold,
                            keep_log=keep))  # fmt: skip
    result = runs[0] if len(runs) == 1 else {
        "decoder_tabs": decoder,
        "finetune_tabs": finetune,
        "student_charted_s": spread([r.get("student_charted_s") for r in runs]),
        "slowest_tab_answered_s": spread([r.get("slowest_tab_answered_s") for r in runs]),
        "peak_rss_mb": spread([r.get("peak_rss_mb") for r in runs]),
        "server_cpu_s": spread([r.get("server_cpu_s") for r in runs]),
        "targets_met_in_every_run": all(all(r["targets"].values()) for r in runs),
        "runs": runs,
    }  # fmt: skip
    return kit.report(result, args.out)


if __name__ == "__main__":
    main()
