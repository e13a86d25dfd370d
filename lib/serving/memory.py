"""Give freed memory back to the operating system after a large one-off computation.

glibc keeps memory that Python and torch have freed in its arenas, so a server's resident size stays at its
peak (encoding a 381-sentence corpus leaves ~230 MB that nothing uses). ``malloc_trim(0)`` returns it.
Elsewhere (macOS, musl, Windows) this does nothing.

glibc also gives each thread that meets contention an arena of its own, up to 8 per core; a Streamlit server
runs a thread per session run plus the event loop's workers, and freed memory stays scattered over those
arenas. :func:`limit_arenas` caps their number (``mallopt(M_ARENA_MAX)``, as the ``MALLOC_ARENA_MAX``
environment variable would, but from inside the app, since a host may not set it).

glibc also serves a large block from its heap once it has freed one of that size (its mmap threshold rises),
so freed hidden states pile up there; :func:`fix_mmap_threshold` keeps large blocks in memory maps of their
own, returned to the OS when freed, and ``ui.work.heavy`` trims the heap after every heavy job.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)
DEFAULT_ARENAS = 2


@lru_cache(maxsize=1)
def limit_arenas(environ_value: str | None = None) -> int | None:
    """Cap glibc's malloc arenas at ``CONTEXT_LENS_MALLOC_ARENAS`` (default 2), once per process.

    Returns the cap set, or None when nothing was done: not glibc, ``MALLOC_ARENA_MAX`` already set for the
    process (glibc read it at start), ``CONTEXT_LENS_MALLOC_ARENAS=0``, or a value that is not a number.
    glibc fixes its arena limit when a process first needs more than 8 arenas, so this is called as early as
    the app can (ui/cache/ at import, i.e. the server's first script run). Measured (benchmarks/README.md,
    a hosted server's memory): the server's memory after every page, 0.93 GB without a cap, 0.88 GB with two arenas.
    """
    return _mallopt(_M_ARENA_MAX, "MALLOC_ARENA_MAX", "CONTEXT_LENS_MALLOC_ARENAS", environ_value, DEFAULT_ARENAS)


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)
DEFAULT_MMAP_THRESHOLD_KB = 1024


@lru_cache(maxsize=1)
def fix_mmap_threshold(environ_value: str | None = None) -> int | None:
    """Serve every allocation of ``CONTEXT_LENS_MMAP_THRESHOLD_KB`` (default 1024) or more with its own memory
    map, which goes back to the OS the moment it is freed; returns the threshold in bytes, or None when
    nothing was done (not glibc, ``MALLOC_MMAP_THRESHOLD_`` set for the process, ``0``, not a number).

    glibc starts at 128 kB but raises its threshold to the size of each large block freed, up to 32 MB, so a
    server that has freed one chunk of hidden states serves the next ones from its heap, and after a few
    hostile requests holds hundreds of MB of freed blocks there, most of them still resident (measured
    2026-11-27 with the crowd benchmark: 0.2 GB freed and held after the first minute, 0.6 GB by the end).
    Setting the threshold fixes it (no more raising). Called with :func:`limit_arenas`, as early as the app can.
    """
    kb = _mallopt(
        _M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", "CONTEXT_LENS_MMAP_THRESHOLD_KB", environ_value,
        DEFAULT_MMAP_THRESHOLD_KB, scale=1024,
    )  # fmt: skip
    return None if kb is None else kb * 1024


def _mallopt(param: int, glibc_name: str, our_name: str, environ_value: str | None, default: int, *, scale: int = 1):
    """Set glibc's ``mallopt(param, value * scale)`` from ``environ_value`` (else the environment's ``our_name``,
    else ``default``); returns ``value``, or None when nothing was done: ``glibc_name`` already set for the
    process (glibc read it at start), a value of 0 or below or not a number, not Linux, no glibc."""
    import os

    if os.environ.get(glibc_name):
        return None
    raw = environ_value if environ_value is not None else os.environ.get(our_name, "")
    try:
        value = int(raw) if raw.strip() else default
    except ValueError:
        return None
    if value <= 0 or not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return value if libc.mallopt(param, value * scale) == 1 else None
    except (OSError, AttributeError):
        return None


def collect_garbage() -> None:
    """A full garbage collection, then :func:`release_memory`: for the end of a run that held large arrays.

    A Streamlit page runs in a namespace of its own whose functions point back at it, a reference cycle, so
    what the page's top-level names held (a large set's vectors, its second model's) is freed only by a full
    collection once the run is over. The server runs none after each script run (``runner.postScriptGC =
    false``: ~0.3 s of CPU a rerun) and Python's own full collections are rare on a large heap. Objects frozen
    by ``gc.freeze`` are not walked.
    """
    import gc

    gc.collect()
    release_memory()


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """The process's resident memory (RSS) in bytes, from /proc/self/statm; 0 where there is none (not Linux)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def release_memory() -> bool:
    """Return freed heap memory to the OS (glibc only). True when it ran."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
