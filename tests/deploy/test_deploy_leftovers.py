"""What a killed deployment-test run leaves behind is removed by the next run, and nothing of a live run."""

from __future__ import annotations

import os

from tests.deploy._docker import IMAGE, docker, remove_stale


def _dead_pid() -> int:
    pid = 4_000_000  # a pid no process has (this machine's pids are far lower; checked all the same)
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    return pid


def test_a_killed_runs_containers_networks_and_volumes_are_removed_and_a_live_runs_kept(images):
    dead, live = f"cl-test-{_dead_pid()}-left", f"cl-test-{os.getppid()}-live"
    made = []
    try:
        for name in (dead, live):
            docker("network", "create", f"{name}-net")
            docker("volume", "create", f"{name}-vol")
            docker("create", "--name", f"{name}-app", IMAGE)  # created, never started: nothing runs
            made += [f"{name}-app", f"{name}-net", f"{name}-vol"]
        removed = remove_stale()
        assert {f"{dead}-app", f"{dead}-net", f"{dead}-vol"} <= set(removed)
        assert not any(n.startswith(live) for n in removed)
        names = docker("ps", "-a", "--format", "{{.Names}}") + docker("network", "ls", "--format", "{{.Name}}")
        names += docker("volume", "ls", "--format", "{{.Name}}")
        assert dead not in names and f"{live}-app" in names and f"{live}-net" in names
    finally:
        docker("rm", "-f", f"{dead}-app", f"{live}-app", check=False)
        for kind in ("network", "volume"):
            docker(kind, "rm", f"{dead}-{kind[:3]}", f"{live}-{kind[:3]}", check=False)
