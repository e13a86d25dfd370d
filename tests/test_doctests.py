"""The usage examples in lib's docstrings run, and say what they show (``>>>`` lines, checked by doctest).

Every module of lib/ is searched; an example that loads the model gets the session's (``load_encoder()`` with
no arguments returns the one the other tests share, so the fast tier loads it once).
"""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests.conftest import ROOT

MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in (ROOT / "lib").rglob("*.py")
    if ">>>" in p.read_text(encoding="utf-8")
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_examples_are_found():
    """The search finds the modules that show an example (a renamed folder would silently find none)."""
    assert {"lib.charts.common", "lib.stats.probe", "lib.serving.export"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, encoder, monkeypatch):
    import lib.models.encoder as models

    load = models.load_encoder
    monkeypatch.setattr(models, "load_encoder", lambda *a, **k: encoder if not (a or k) else load(*a, **k))
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, name
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} example(s) of {name} failed (doctest's report above)"
