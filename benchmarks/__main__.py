"""The one entry point of the benchmarks: sections run their scripts in fresh processes, one results file a run.

    python -m benchmarks run --section model            # encode() against a bare forward pass (~1 min)
    python -m benchmarks run --section server           # script-thread CPU per rerun, a new student, UMAP
    python -m benchmarks run --section browser          # Chromium against serve.py: interactions, 500 sentences, cold start
    python -m benchmarks run --section class            # 1, 10 and 30 students opening links at once
    python -m benchmarks run --section hosting          # each oversized input against a fresh server
    python -m benchmarks run --section memory           # peak RSS: hostile link after UMAP, 500 uploaded sentences
    python -m benchmarks run --section crowd            # a hostile crowd and one ordinary student on one server
    python -m benchmarks run --section board            # a class board: 30 students, a 300-sentence flood, fairness
    python -m benchmarks run --section export           # "Download this page": each page's file, its size and open time
    python -m benchmarks run --section control          # the weights controls against the trained model
    python -m benchmarks run --section finetune         # fine-tuning: speed on a preset, accuracy on CoarseWSD-20
    python -m benchmarks run --section decoder          # the decoder beside the encoder: CPU, cosine, RSS, pages
    python -m benchmarks run --section model --section server --repeats 3
    python -m benchmarks list                           # the sections and the scripts each runs

Results go to ``benchmarks/results/<date>-<commit>.json`` (``benchmarks/runs.py``), each section with the
commit, load average and duration of its run and what each script measured (its JSON, or its printed
lines). Sections browser, class, hosting and memory need Chromium and Playwright, like the browser tests.
Measure on a quiet machine: every figure has a baseline from the same run, but the load still shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.runs import ROOT, results_path, run_meta, save_section

# section -> [(script in benchmarks/, its arguments, whether it takes --repeats and --out)]
SECTIONS: dict[str, list[tuple[str, list[str], bool]]] = {
    "model": [("bench.py", ["--only", "1"], True)],
    "server": [
        ("bench.py", ["--only", "2,4"], True),
        ("rerun_profile.py", ["--lesson-steps"], False),
        ("new_student_cpu.py", [], False),
    ],
    "browser": [("browser_bench.py", ["--only", "interactions,big"], True), ("bench.py", ["--only", "3"], True)],
    "class": [("browser_bench.py", ["--only", "class", "--class-sizes", "1,10,30"], True)],
    "hosting": [("hosting_bench.py", [], False)],
    "memory": [("peak_after_umap.py", [], False), ("bench.py", ["--only", "5"], True)],
    "crowd": [("crowd.py", [], True)],
    "board": [("board_bench.py", [], True), ("board_flood.py", [], True), ("fairness.py", [], True)],
    "export": [("page_export_bench.py", [], True)],
    "control": [("control_candidates.py", [], False)],
    "finetune": [("finetune_bench.py", [], True)],
    "decoder": [("decoder_speed.py", [], True), ("decoder_pages.py", [], True)],
}
# the scripts that take --repeats (the others run their scenario once)
TAKES_REPEATS = {"bench.py", "browser_bench.py", "rerun_profile.py", "page_export_bench.py", "finetune_bench.py",
                 "decoder_speed.py", "decoder_pages.py"}


def _printed(stdout: str) -> dict:
    """What a script printed: its JSON lines as rows, the rest as text lines."""
    rows, lines = [], []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            rows.append(value)
        elif line.strip():
            lines.append(line)
    return {"rows": rows, "lines": lines}


def run_script(script: str, args: list[str], takes_out: bool, repeats: int | None) -> dict:
    """Run one benchmark script in a fresh interpreter and return what it measured."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(ROOT / "benchmarks" / script), *args]
        if takes_out:
            cmd += ["--out", str(out)]
        if repeats and script in TAKES_REPEATS:
            cmd += ["--repeats", str(repeats)]
        print("$", " ".join(cmd[1:]), flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(
            cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True
        )
        sys.stdout.write(proc.stdout)
        shown = " ".join(cmd[1:]).replace(str(ROOT) + "/", "").replace(f" --out {out}", "")
        result = {"command": shown, "returncode": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1)}
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-3000:])
            result["error"] = proc.stderr[-3000:]
        if takes_out and out.exists():
            result["results"] = json.loads(out.read_text(encoding="utf-8"))
        else:
            result.update(_printed(proc.stdout))
        return result


def run(sections: list[str], repeats: int | None) -> Path:
    path = results_path()
    for section in sections:
        meta = run_meta()
        t0 = time.perf_counter()
        scripts = [run_script(s, a, takes_out, repeats) for s, a, takes_out in SECTIONS[section]]
        meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        meta["duration_s"] = round(time.perf_counter() - t0, 1)
        save_section(path, section, {"meta": meta, "scripts": scripts})
        print(f"{section}: wrote {path.relative_to(ROOT)} ({meta['duration_s']} s)", flush=True)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one or more sections")
    r.add_argument("--section", action="append", choices=list(SECTIONS), required=True)
    r.add_argument("--repeats", type=int, default=None, help="timed repetitions (each script's own default)")
    sub.add_parser("list", help="the sections and their scripts")
    a = ap.parse_args(argv)
    if a.command == "list":
        for name, scripts in SECTIONS.items():
            print(f"{name:8} " + "; ".join(" ".join([s, *args]) for s, args, _ in scripts))
        return 0
    path = run(a.section, a.repeats)
    failed = [
        (name, s["command"])
        for name, entry in json.loads(path.read_text(encoding="utf-8"))["sections"].items()
        if name in a.section
        for s in entry["scripts"]
        if s["returncode"] != 0
    ]
    for name, command in failed:
        print(f"{name}: {command} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
