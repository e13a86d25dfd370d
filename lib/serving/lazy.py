"""Importing the heavy optional libraries (scikit-learn, SciPy's optimiser, umap-learn) lazily and safely
from several threads at once.

The app imports them where they are first needed, not at start (nothing heavy at import time). On a server
every learner's script runs in its own thread, and the UMAP warm-up runs in another, so two threads can
import scikit-learn at the same moment. Python's per-module import locks do not make that safe for a
package with circular imports: scikit-learn's ``sklearn/__init__`` imports ``sklearn.base``, which imports
back into the package, and a second thread that enters the cycle from elsewhere gets a half-initialised
module, ``ImportError: cannot import name 'clone' from partially initialized module 'sklearn.base'``.
That happened on a fresh server whose first page was Projections with UMAP chosen (the page's PCA import
against the warm-up's ``import umap``), and two threads importing different scikit-learn modules hit it in
about half of the tries.

:func:`load` serialises those first imports with one process-wide lock. A module that is already fully
imported is returned without touching the lock, so after the first import it costs a dictionary lookup.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.RLock()


def _ready(module: ModuleType | None) -> bool:
    """True when ``module`` is in ``sys.modules`` and no thread is still running its top-level code."""
    if module is None:
        return False
    spec = getattr(module, "__spec__", None)
    return not getattr(spec, "_initializing", False)


def load(name: str) -> ModuleType:
    """``importlib.import_module(name)``, with first imports serialised across threads (see the module doc).

    Use it for every lazy import of scikit-learn, SciPy's submodules and umap-learn in ``lib/``.
    """
    module = sys.modules.get(name)
    if _ready(module):
        return module  # type: ignore[return-value]
    with _LOCK:
        return importlib.import_module(name)
