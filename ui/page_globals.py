"""A page's large results must not outlive its run in the session's widgets.

A page runs as a script in a namespace of its own (``st.navigation``), and its top-level names (a large set's
target vectors, the second model's, profiles, figures) live in that namespace. Any function the page defines,
a lambda passed as ``format_func`` included, points at the namespace through ``__globals__``, and Streamlit
keeps a session's widgets' functions (formatters, callbacks) until the session's next run, or as long as a
closed tab's session lingers. So each session kept its last page's results alive, outside the results cache:
measured 2026-11-24 at commit 1b755bd, three tabs opening large compare links one after the other held the
server at 1.61 GB with the cache at its 400 MB, ~200 MB more after each tab (tracemalloc: 614 MB of
encodings alive, more than the cache held).

:func:`note` finds the page's namespace from inside the run (the first element the page sends, through
ui.page_export's recording); :func:`release`, after the run, drops from it every top-level value of at least
:data:`LARGE_BYTES` by lib.serving.budget.sizeof (not functions, classes or modules), so what stays is small: the
page's functions, constants and widget values. A callback that needs data takes it as ``args``.
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

from lib.serving.budget import sizeof

LARGE_BYTES = 1 * 2**20  # a page's top-level value this large is dropped when its run ends
PAGES_DIR = str(Path(__file__).resolve().parents[1] / "pages")
_LOCAL = threading.local()  # the namespace of the page this thread runs (a script run is one thread)


def note() -> None:
    """Remember the running page's namespace (the first page frame up the stack), once per run."""
    if getattr(_LOCAL, "page", None) is not None:
        return
    frame = sys._getframe(1)
    while frame is not None:
        g = frame.f_globals
        if str(g.get("__file__", "")).startswith(PAGES_DIR) and g.get("__name__") == "__main__":
            _LOCAL.page = g
            return
        frame = frame.f_back


def _droppable(value: object) -> bool:
    if isinstance(value, (types.FunctionType, types.ModuleType, type, types.BuiltinFunctionType)):
        return False
    return sizeof(value) >= LARGE_BYTES


def release(namespace: dict | None = None) -> list[str]:
    """Drop the large top-level values of the page this thread ran (or of ``namespace``); returns their names."""
    ns = namespace if namespace is not None else getattr(_LOCAL, "page", None)
    _LOCAL.page = None
    if ns is None:
        return []
    names = [k for k, v in list(ns.items()) if not k.startswith("__") and _droppable(v)]
    for k in names:
        ns.pop(k, None)
    return names
