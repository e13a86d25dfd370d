"""release_memory gives freed heap back to the OS (glibc), measured on a real allocation."""

import sys

import numpy as np
import pytest

from lib.serving.memory import limit_arenas, release_memory


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc-only")
def test_release_memory_returns_freed_small_blocks():
    release_memory()
    base = _rss_mb()
    # many small blocks (below glibc's mmap threshold) stay in the heap after they are freed
    blocks = [np.ones(2_000, dtype=np.float64) for _ in range(20_000)]  # ~320 MB
    grown = _rss_mb()
    assert grown - base > 200
    del blocks
    assert release_memory() is True
    assert _rss_mb() - base < (grown - base) / 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc-only")
def test_limit_arenas_sets_a_cap_unless_the_host_did(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    limit_arenas.cache_clear()
    assert limit_arenas("3") == 3
    for off in ("0", "-1", "many"):
        limit_arenas.cache_clear()
        assert limit_arenas(off) is None
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")  # glibc read the host's own setting at start: leave it
    limit_arenas.cache_clear()
    assert limit_arenas("2") is None
    limit_arenas.cache_clear()
