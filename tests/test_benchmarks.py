"""The benchmarks' one entry point (python -m benchmarks): its sections name real scripts, a run's results
file is named by date and commit, and sections join one file. No benchmark is run here."""

from __future__ import annotations

import datetime as dt
import json
import re

from benchmarks.__main__ import SECTIONS, _printed
from benchmarks.runs import RESULTS_DIR, ROOT, results_path, save_section


def test_every_section_runs_scripts_that_exist():
    assert set(SECTIONS) == {
        "model", "server", "browser", "class", "hosting", "memory", "crowd", "board", "export", "control",
        "finetune", "decoder",
    }  # fmt: skip
    for scripts in SECTIONS.values():
        for script, args, _ in scripts:
            assert (ROOT / "benchmarks" / script).is_file(), script
            assert all(isinstance(a, str) for a in args)


def test_a_run_file_is_named_by_date_and_commit_and_sections_join_it(tmp_path):
    path = results_path("abc1234", dt.date(2026, 11, 24))
    assert path == RESULTS_DIR / "2026-11-24-abc1234.json"
    f = tmp_path / path.name
    save_section(f, "model", {"meta": {"git_commit": "abc1234"}, "scripts": [{"returncode": 0}]})
    save_section(f, "server", {"meta": {}, "scripts": []})
    save_section(f, "model", {"meta": {"git_commit": "abc1234"}, "scripts": []})  # a second run replaces it
    sections = json.loads(f.read_text(encoding="utf-8"))["sections"]
    assert list(sections) == ["model", "server"] and sections["model"]["scripts"] == []


def test_printed_output_keeps_json_rows_apart_from_text():
    out = _printed('a table line\n{"case": "link", "peak_rss_mb": 822}\n\n[1, 2]\n')
    assert out == {"rows": [{"case": "link", "peak_rss_mb": 822}], "lines": ["a table line", "[1, 2]"]}


def test_the_kept_results_files_are_named_by_date_and_commit_and_say_their_runs():
    files = sorted(RESULTS_DIR.glob("*.json"))
    assert files, "benchmarks/results/ keeps the latest figures"
    for f in files:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[0-9a-f]{7,}\.json", f.name), f.name
        sections = json.loads(f.read_text(encoding="utf-8"))["sections"]
        assert set(sections) <= set(SECTIONS)
        for name, entry in sections.items():
            assert entry["meta"].get("git_commit") or entry["meta"].get("date"), name


IMPORT_AS_FILES = r"""
import runpy, sys
bench, scripts = sys.argv[1], sys.argv[2:]
base = [p for p in sys.path if p and not p.startswith(bench.rsplit("/", 1)[0] + "/")]
failed = []
for script in scripts:
    sys.path[:] = [bench, *base]  # what `python benchmarks/<script>` has: its own folder, not the project's
    for name in [m for m in sys.modules if m.split(".")[0] in ("benchmarks", "lib", "tests", "ui")]:
        del sys.modules[name]
    sys.argv = [f"{bench}/{script}"]  # a script that reads its options at the top gets none
    try:
        runpy.run_path(f"{bench}/{script}", run_name="imported")
    except Exception as err:
        failed.append(f"{script}: {err!r}")
print("\n".join(failed))
"""


def test_every_script_imports_when_run_as_a_file():
    """``python benchmarks/<script>.py`` (how ``python -m benchmarks`` runs them) has only benchmarks/ on its path:
    each script finds the project's folder itself before it imports the shared helpers (benchmarks/kit.py)."""
    import os
    import subprocess
    import sys

    scripts = sorted(
        p.name
        for p in (ROOT / "benchmarks").glob("*.py")
        if p.name != "__main__.py" and 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")
    )  # the scripts (benchmarks/__main__.py is the runner, started with -m)
    assert {"crowd.py", "fairness.py", "board_flood.py", "hosting_bench.py"} <= set(scripts)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_AS_FILES, str(ROOT / "benchmarks"), *scripts],
        cwd="/", env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr[-3000:]
