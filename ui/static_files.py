"""Streamlit's front-end files, served compressed from memory (a new student's server CPU).

Streamlit 1.67 sends its own front end (``/static/...``: ~120 files, 8.8 MB for a first visit, 4.7 MB of it
plotly) uncompressed, each file read from disk in 64 kB pieces on a worker thread. For a class opening one
link that is the largest part of the server's CPU per new student (benchmarks/browser_bench.py, "class").

:class:`CompressedStaticFiles` is a small ASGI app mounted in front of Streamlit's own ``/static`` route by
``serve.py`` as middleware (``st.App(..., middleware=[...])``: user middleware sees each request first;
``/static`` is reserved for routes). It serves the same files with the same caching headers, but

* gzip-compressed once per file and kept in memory (~2.4 MB for a first visit instead of 8.8 MB on the wire),
* answered in one piece, with ``ETag``/``If-None-Match`` (304) and ``HEAD`` support,
* bounded: at most :data:`MAX_CACHE_BYTES` of compressed bytes are kept (least recently used out first); a
  file above :data:`MAX_FILE_BYTES` or a client that does not accept gzip is served from disk as before.

Only regular files inside Streamlit's build folder are served: paths are resolved and checked, so ``..``,
absolute paths, symlinks out of the folder and NUL bytes are a 404, never a file elsewhere.

Nothing here imports Streamlit; the folder is passed in (``streamlit.file_util.get_static_dir()``).
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import os
from dataclasses import dataclass

from lib.serving.budget import ByteLRU

MAX_CACHE_BYTES = 48 * 1024 * 1024  # compressed bytes kept in memory; Streamlit 1.67's whole build is ~7 MB gzipped
MAX_FILE_BYTES = 16 * 1024 * 1024  # a larger file (none in Streamlit's build) is streamed from disk uncompressed
CACHE_CONTROL = "public, immutable, max-age=31536000"  # Streamlit's own header for its content-hashed files
GZIP_LEVEL = 6
_COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml", "application/wasm")
_CHUNK = 256 * 1024


@dataclass(frozen=True)
class _Entry:
    """One file as it is sent: ``body`` is gzip-compressed when ``encoding == "gzip"``."""

    body: bytes
    encoding: str | None
    content_type: str
    etag: str


def _content_type(path: str) -> str:
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    if kind == "text/javascript":
        kind = "application/javascript"
    if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
        kind += "; charset=utf-8"
    return kind


def _read(path: str) -> _Entry:
    """One file as it is sent: gzip-compressed if it is text, as it is otherwise."""
    content_type = _content_type(path)
    with open(path, "rb") as handle:
        raw = handle.read()
    if _compressible(content_type):
        body, encoding = gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0), "gzip"
    else:
        body, encoding = raw, None
    etag = '"' + hashlib.blake2b(raw, digest_size=12).hexdigest() + ('-gz"' if encoding else '"')
    return _Entry(body, encoding, content_type, etag)


def _compressible(content_type: str) -> bool:
    return content_type.startswith(_COMPRESSIBLE)


def _accepts_gzip(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name == b"accept-encoding":
            for part in value.decode("latin-1").lower().split(","):
                coding, _, params = part.strip().partition(";")
                if coding.strip() in ("gzip", "*") and params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00"):
                    return True
    return False


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


class CompressedStaticFiles:
    """ASGI middleware: GET/HEAD under ``prefix`` answered from ``directory``, gzip-compressed from a bounded
    in-memory cache; every other request goes on to ``app`` (Streamlit) untouched.

    ``prefix`` is Streamlit's static route (``/static/``, or ``/<baseUrlPath>/static/``); the rest of the path is
    the file's path inside ``directory`` (Streamlit's ``static/static`` build folder). A file that is not there
    is left to ``app`` too, so anything Streamlit answers today it still answers.
    """

    def __init__(self, app, directory: str, *, prefix: str = "/static/",  # noqa: ANN001 (ASGI app)
                 max_cache_bytes: int = MAX_CACHE_BYTES) -> None:
        self.app = app
        self.prefix = prefix
        self.directory = os.path.realpath(directory)
        self.max_cache_bytes = max_cache_bytes
        self._cache = ByteLRU(max_cache_bytes)  # relative path -> _Entry, bounded by the bodies' bytes

    # -- files -------------------------------------------------------------------------------------------
    def resolve(self, relative: str) -> str | None:
        """The real path of ``relative`` inside the folder if it is a regular file there, else None."""
        if not relative or "\x00" in relative or "\\" in relative:
            return None
        parts = relative.split("/")
        if any(part in ("", ".", "..") for part in parts):
            return None
        path = os.path.realpath(os.path.join(self.directory, *parts))
        if os.path.commonpath([path, self.directory]) != self.directory or not os.path.isfile(path):
            return None
        return path

    def cached(self, relative: str) -> _Entry | None:
        """The entry kept for ``relative`` (no file system access), or None."""
        return self._cache.get(relative)

    def build(self, relative: str, path: str) -> _Entry:
        """Read and (if it is text) compress one file, and keep it within the byte budget.

        One build per file at a time (lib.serving.budget.ByteLRU.get_or_compute): a class arriving together at a fresh
        server asks for the same files at once, and every request but the first waits for that one compression
        instead of repeating it. A file larger than the whole budget is compressed and sent, not kept.
        """
        if os.path.getsize(path) > self.max_cache_bytes:
            return _read(path)
        return self._cache.get_or_compute(relative, lambda: _read(path), size=lambda entry: len(entry.body))

    @property
    def cached_bytes(self) -> int:
        return self._cache.total_bytes

    # -- ASGI --------------------------------------------------------------------------------------------
    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001 (ASGI signature)
        from anyio import to_thread

        method = scope.get("method")
        if scope["type"] != "http" or method not in ("GET", "HEAD") or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        relative = scope["path"][len(self.prefix):]
        headers = scope.get("headers", [])
        gzip_ok = _accepts_gzip(headers)
        entry = self.cached(relative)
        if entry is None or (entry.encoding and not gzip_ok):
            path = await to_thread.run_sync(self.resolve, relative)
            if path is None:
                await self.app(scope, receive, send)  # Streamlit's own answer (its 404 page or index.html)
                return
            content_type = _content_type(path)
            if os.path.getsize(path) > MAX_FILE_BYTES or (_compressible(content_type) and not gzip_ok):
                await _stream_file(send, path, method)
                return
            entry = await to_thread.run_sync(self.build, relative, path)
        common = [
            (b"content-type", entry.content_type.encode()),
            (b"cache-control", CACHE_CONTROL.encode()),
            (b"etag", entry.etag.encode()),
            (b"vary", b"Accept-Encoding"),
        ]
        if _header(headers, b"if-none-match") in (entry.etag, "*"):
            await _respond(send, 304, common, b"", method)
            return
        if entry.encoding:
            common.append((b"content-encoding", entry.encoding.encode()))
        await _respond(send, 200, common, entry.body, method)


async def _respond(send, status: int, headers: list, body: bytes, method: str) -> None:  # noqa: ANN001
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


async def _stream_file(send, path: str, method: str) -> None:  # noqa: ANN001
    """A file not kept in memory: sent from disk in pieces, uncompressed (as Streamlit does)."""
    from anyio import open_file

    size = os.path.getsize(path)
    headers = [
        (b"content-type", _content_type(path).encode()),
        (b"cache-control", CACHE_CONTROL.encode()),
        (b"content-length", str(size).encode()),
        (b"vary", b"Accept-Encoding"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if method == "HEAD":
        await send({"type": "http.response.body", "body": b""})
        return
    async with await open_file(path, "rb") as handle:
        while True:
            chunk = await handle.read(_CHUNK)
            more = len(chunk) == _CHUNK
            await send({"type": "http.response.body", "body": chunk, "more_body": more})
            if not more:
                break
