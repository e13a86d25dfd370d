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


# STYLE.md point 9, top to bottom: a module imports from its own layer or the ones below, never above
LAYERS = (
    ("pages",),
    ("ui",),
    ("lib.charts", "lib.teaching", "lib.finetune"),
    ("lib.stats", "lib.inputs", "lib.board"),  # the class board's storage keeps sentences (lib.inputs)
    ("lib.models", "lib.encoder"),  # lib/encoder.py: the encoder's old import path
    ("lib.serving", "lib.errors", "lib.paths"),
)


def _module_graph() -> dict[str, set[str]]:
    """Every module of lib/, ui/ and pages/ -> the project modules it imports, at the top or inside a function
    (``from lib.models import pack`` is lib.models.pack; ``from lib.models.keys import X`` is lib.models.keys)."""
    files = {}
    for p in _python_files("lib", "ui", "pages"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, path in files.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                found |= {known(f"{base}.{a.name}") for a in node.names}
        graph[mod] = found - {None, mod}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One import path round each group of modules that import each other (a strongly connected component)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(v: str) -> None:  # Tarjan's algorithm (the graph is a few hundred modules: recursion is fine)
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(set(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    paths = []
    for group in groups:  # the shortest way back to the group's first module, for the message
        start = min(group)
        seen, frontier = {start: [start]}, [start]
        while frontier and start not in [w for v in frontier for w in graph[v]]:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & group):
                    if w not in seen:
                        seen[w] = seen[v] + [w]
                        nxt.append(w)
            frontier = nxt
        last = next(v for v in frontier if start in graph[v])
        paths.append(seen[last] + [start])
    return paths


def test_circles_are_found():
    """The two checks below see an import inside a function, and name the way round."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c", "a"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    real = _module_graph()
    assert "lib.finetune.model" in real["ui"]  # ui/__init__.py registers the fine-tuned variant
    assert "lib.models.loading" in real["lib.models.encoder"]


def test_no_import_circles():
    """No group of lib/, ui/ or pages/ modules imports itself round, even through an import inside a function
    (which only hides a circle until the day the import order changes)."""
    circles = _circles(_module_graph())
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_layers_point_down():
    """A lower layer never imports a higher one (STYLE.md point 9), not even inside a function: where a low layer
    must know of something built above it, the higher layer registers it (lib.models.keys.register_variant,
    lib.models.loading.register_family)."""

    def layer(mod: str) -> int | None:
        return next((i for i, names in enumerate(LAYERS) for n in names if mod == n or mod.startswith(n + ".")), None)

    graph = _module_graph()
    unplaced = sorted(m for m in graph if layer(m) is None and m != "lib")
    assert not unplaced, f"put these modules in a layer of LAYERS: {unplaced}"
    upward = [f"{m} -> {w}" for m, ws in sorted(graph.items()) for w in sorted(ws) if w != "lib" and layer(w) < layer(m)]
    assert not upward, upward


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
