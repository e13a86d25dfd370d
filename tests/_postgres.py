"""A throwaway PostgreSQL 15 cluster for tests: initdb in a temp folder, served on 127.0.0.1, removed after.

PostgreSQL refuses to run as root, so as root the cluster belongs to ``nobody`` (runuser). The binaries are
the Debian package's (``apt-get install postgresql-15``; ``.ci/run`` installs them when missing). Without
them a test using :func:`postgres_cluster` is skipped locally and fails under ``CI=true``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("CONTEXT_LENS_PG_BIN", "/usr/lib/postgresql/15/bin"))
PORTS = range(55432, 55440)  # this suite's ports; a busy one is skipped


def _free(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _as_owner(args: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *args] if os.geteuid() == 0 else args


def _start(ctl: str, data: Path, folder: Path) -> int:
    """Start the cluster on the first port of PORTS it can bind; returns the port. A port seen free can be taken
    before the server binds it (another worker, or a second test run, starting a cluster at the same moment:
    two full runs side by side failed so once), so a start that fails on a taken port tries the next one."""
    log = folder / "log"
    for port in PORTS:
        if not _free(port):
            continue
        done = subprocess.run(
            _as_owner([ctl, "-D", str(data), "-o", f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off",
                       "-l", str(log), "-w", "start"]),
            capture_output=True,
        )  # fmt: skip
        if done.returncode == 0:
            return port
        said = log.read_text(errors="replace") if log.exists() else ""
        if "already in use" not in said and "could not create any TCP/IP sockets" not in said:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    pytest.skip(f"no free port in {PORTS.start}-{PORTS.stop - 1} for a PostgreSQL test cluster")


@contextlib.contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a fresh cluster; yields its URL (``postgresql://postgres@127.0.0.1:PORT/postgres``)."""
    if not (PG_BIN / "initdb").exists():
        reason = f"PostgreSQL binaries are not in {PG_BIN}: apt-get install postgresql-15"
        if os.environ.get("CI", "").strip().lower() in ("true", "1"):
            pytest.fail(reason)
        pytest.skip(reason)
    if not any(_free(p) for p in PORTS):
        pytest.skip(f"no free port in {PORTS.start}-{PORTS.stop - 1} for a PostgreSQL test cluster")
    folder = Path(tempfile.mkdtemp(prefix="context-lens-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody")
    data = folder / "data"
    ctl = str(PG_BIN / "pg_ctl")
    try:
        subprocess.run(
            _as_owner([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                       "--no-sync"]),
            check=True, capture_output=True,
        )  # fmt: skip
        port = _start(ctl, data, folder)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_owner([ctl, "-D", str(data), "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
