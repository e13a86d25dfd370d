"""The layout rules of CONTRIBUTING.md that a reader cannot see break: checked on the source, no app run."""

from __future__ import annotations

import ast
import re
import subprocess

import pytest

from tests.conftest import ROOT


def _python_files(*folders: str) -> list:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_lib_never_imports_streamlit():
    offenders = [str(p.relative_to(ROOT)) for p in _python_files("lib") if "streamlit" in _imports(p)]
    assert not offenders, f"lib/ must stay usable without Streamlit: {offenders}"


def test_caching_lives_in_ui_cache_only():
    pattern = re.compile(r"\bst\.cache_(data|resource)\b")
    offenders = [
        str(p.relative_to(ROOT))
        for p in _python_files("lib", "ui", "pages") + [ROOT / "app.py", ROOT / "serve.py"]
        if p.parent != ROOT / "ui" / "cache" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"st.cache_* outside ui/cache/: {offenders}"


def test_tests_seed_page_state_through_ui_state_seed():
    """A test sets session state with tests.conftest.seed (or page_test), never by writing at.session_state."""
    write = re.compile(r"\bsession_state(\[[^\]]+\]|\.\w+)\s*=[^=]|\bsession_state\.(update|setdefault)\(")
    offenders = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _python_files("tests")
        if p.name != "test_conventions.py"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if write.search(line) and "st.session_state" not in line  # a page script inside a test may write its own
    ]
    assert not offenders, f"seed page state with tests.conftest.seed: {offenders}"


def test_the_project_speaks_of_itself_only():
    """No file names or mentions an issue or session by number: a constraint is named by what it protects,
    a run by its date and commit."""
    try:
        files = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    mention = re.compile(r"(?<![a-z])(issues?|sessions?)[-_ ]?#?[0-9]", re.IGNORECASE)
    found = [f for f in files if mention.search(f.replace("/", " "))]
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a picture or another binary file
        found += [f"{name}:{i}" for i, line in enumerate(text.splitlines(), 1) if mention.search(line)]
    assert not found, found
