"""Helpers for the deployment tests: build the images, run containers as a host would, read what Docker reports.

Every container and network these tests make is named with the ``cl-test-<pid>`` prefix and removed at the end;
ports are published on 127.0.0.1 only (the range 8641-8659 of this project's deployment checks).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from tests.browser._browser import on_ci

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("IMAGE", "context-lens:latest")
NGINX_IMAGE = os.environ.get("NGINX_IMAGE", "context-lens-nginx:latest")
PREFIX = f"cl-test-{os.getpid()}"
# As a host runs the app: non-root (the image's user), read-only root, tmpfs on /tmp only, 1.5 GB, 2 CPUs.
HOST_FLAGS = [
    "--read-only", "--tmpfs", "/tmp:rw,size=256m,mode=1777",
    "--memory", "1.5g", "--cpus", "2", "--restart", "on-failure",
]  # fmt: skip


def docker(*args: str, check: bool = True, timeout: float = 600) -> str:
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return r.stdout.strip()


def _docker_missing_reason() -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed: apt-get install -y docker.io (then start dockerd as root)."
    r = subprocess.run(["docker", "info"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"the Docker daemon does not answer (start dockerd as root): {r.stderr.strip()[-300:]}"
    return None


def require_docker() -> None:
    """Fail loudly under CI=true when Docker cannot run; skip with the reason elsewhere."""
    reason = _docker_missing_reason()
    if reason is None:
        return
    if on_ci():
        pytest.fail(f"CI=true but the deployment tests cannot run. {reason}")
    pytest.skip(reason)


def build_images() -> float:
    """tools/build_image.sh (the one build command); seconds it took. Cached layers make a rebuild quick."""
    t0 = time.monotonic()
    r = subprocess.run(
        ["bash", str(ROOT / "tools" / "build_image.sh")], capture_output=True, text=True, cwd=ROOT
    )
    if r.returncode != 0:
        raise RuntimeError(f"tools/build_image.sh failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return time.monotonic() - t0


def up_sh(prefix: str, port: int, *args: str) -> None:
    """tools/up.sh with its containers and networks named ``prefix``-..., nginx on 127.0.0.1:``port``."""
    env = dict(os.environ, CL_PREFIX=prefix, CL_PORT=str(port))
    r = subprocess.run(
        ["bash", str(ROOT / "tools" / "up.sh"), *args], capture_output=True, text=True, env=env
    )
    if r.returncode != 0:
        raise RuntimeError(f"tools/up.sh {' '.join(args)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


@contextlib.contextmanager
def running_stack(prefix: str, port: int, *args: str):
    """``tools/up.sh *args`` (nginx and two replicas; ``--db`` adds PostgreSQL), yielding nginx's URL; everything
    removed after, a database's volume and password file included."""
    up_sh(prefix, port, *(args or ("up",)))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        up_sh(prefix, port, "down")
        if "--db" in args:
            docker("volume", "rm", f"{prefix}-pgdata", check=False)
            Path(f"/var/cache/context-lens/{prefix}-db-password").unlink(missing_ok=True)


def inspect(name: str) -> dict:
    return json.loads(docker("inspect", name))[0]


def health(name: str) -> str:
    state = inspect(name)["State"]
    return (state.get("Health") or {}).get("Status") or state["Status"]


def wait_healthy(name: str, timeout: float = 300) -> float:
    """Seconds until Docker's HEALTHCHECK reports healthy; raises with the log if it dies or times out."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        h = health(name)
        if h == "healthy":
            return time.monotonic() - t0
        if h in ("exited", "dead", "unhealthy"):
            break
        time.sleep(1)
    raise AssertionError(f"{name} is {health(name)}, not healthy. Log:\n{logs(name)[-3000:]}")


def logs(name: str) -> str:
    r = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
    return r.stdout + r.stderr


# nginx's access log (deploy/nginx.conf, log_format replicas). "upstream=a, b": nginx tried a, then b answered;
# "-": answered by nginx itself (/static/). A websocket is logged when it closes, not when it opens.
NGINX_LINE = re.compile(r'^\S+ (\d+) (\S+) "([^"]*)" cookie=(\S*) route=(\S+) upstream=(.*)$')


def nginx_routes(nginx: str) -> dict[str, list[tuple[str, str]]]:
    """Affinity key -> [(path, the upstream that answered)] of every request the nginx container passed on."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for line in logs(nginx).splitlines():
        m = NGINX_LINE.match(line.strip())
        if m and m.group(6) != "-":
            out[m.group(5)].append((m.group(3), m.group(6).split(", ")[-1]))
    return out


def remove(*names: str) -> None:
    for n in names:
        subprocess.run(["docker", "rm", "-f", n], capture_output=True)


def remove_stale() -> list[str]:
    """Remove what an earlier test run left behind (it was killed before its clean-up): containers, networks and
    volumes named ``cl-test-<pid>-...`` whose pid is no longer a live process. Its stack's containers restart with
    the Docker daemon (``--restart unless-stopped``, as a host runs them), so without this a stack left one day
    came back at every later run, two replicas and a database holding 2 GB beside the tests. Returns their names."""
    stale: list[str] = []
    for kind in ("container", "network", "volume"):
        fmt = "{{.Names}}" if kind == "container" else "{{.Name}}"
        listing = ["ps", "-a", "--format", fmt] if kind == "container" else [kind, "ls", "--format", fmt]
        for name in docker(*listing, check=False).split():
            m = re.match(r"cl-test-(\d+)-", name)
            if m and int(m.group(1)) != os.getpid() and not Path(f"/proc/{m.group(1)}").exists():
                docker(*(["rm", "-f"] if kind == "container" else [kind, "rm"]), name, check=False)
                stale.append(name)
    return stale


def answers(url: str, timeout: float = 5) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def wait_answers(url: str, timeout: float = 300) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if answers(url):
            return time.monotonic() - t0
        time.sleep(0.2)
    raise AssertionError(f"{url} does not answer after {timeout} s")


def process_stats(name: str) -> dict:
    """The container's main process (streamlit) seen from the host: CPU seconds so far and peak RSS (MB)."""
    pid = inspect(name)["State"]["Pid"]
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(stat[11]) + int(stat[12])) / ticks  # utime, stime
    hwm = rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
        elif line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    return {"cpu_s": cpu, "peak_rss_mb": hwm, "rss_mb": rss}


def oom_and_restarts(name: str) -> tuple[bool, int]:
    info = inspect(name)
    return info["State"]["OOMKilled"], info["RestartCount"]


@contextlib.contextmanager
def explained(pg, *containers: str):
    """On failure, print what the browser showed (address, text, console errors) and each container's last log
    lines: a CI run shows only its output, so a timeout must say where the page stood."""
    try:
        yield
    except Exception:
        try:
            text = pg.locator("body").inner_text(timeout=5000)
        except Exception as e:  # the page itself may be gone
            text = f"(no text: {e})"
        print(f"\n--- the page at {pg.url} showed:\n{text[:3000]}")
        for name in containers:
            print(f"\n--- docker logs {name} (last 40 lines):\n" + "\n".join(logs(name).splitlines()[-40:]))
        raise
