"""ui.static_files: Streamlit's front-end files compressed from memory, bounded, never a file outside the folder.

The middleware is driven through ASGI directly (the real server is checked in tests/browser/test_browser_static.py).
Requests it does not answer go on to the inner app, here a recorder standing in for Streamlit.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from streamlit import file_util

from tests._asgi import call
from ui.static_files import CACHE_CONTROL, CompressedStaticFiles


class Recorder:
    """The inner ASGI app: remembers the paths passed on to it and answers 418."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


def request(app, path: str, *, method: str = "GET", headers: dict[str, str] | None = None):
    """(status, headers as a dict, body) of one request."""
    scope = {
        "type": "http", "method": method, "path": path, "root_path": "", "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }  # fmt: skip
    messages = call(app, scope)
    start = messages[0]
    body = b"".join(m.get("body", b"") for m in messages[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


GZ = {"Accept-Encoding": "gzip, deflate, br"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "main.abc.js").write_text("const x = 1;\n" * 5000)
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "font.woff2").write_bytes(os.urandom(3000))
    (tmp_path.parent / "secret.txt").write_text("not yours")
    return tmp_path


def test_text_is_sent_gzipped_with_streamlits_cache_header(folder):
    app = CompressedStaticFiles(Recorder(), str(folder))
    status, headers, body = request(app, "/static/js/main.abc.js", headers=GZ)
    raw = (folder / "js" / "main.abc.js").read_bytes()
    assert status == 200
    assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == raw
    assert len(body) < len(raw) / 10 and int(headers["content-length"]) == len(body)
    assert headers["content-type"].startswith("application/javascript")
    assert headers["cache-control"] == CACHE_CONTROL and headers["vary"] == "Accept-Encoding"
    # the second request comes from memory: same bytes, and the cache holds exactly them
    assert request(app, "/static/js/main.abc.js", headers=GZ)[2] == body
    assert app.cached_bytes == len(body)


def test_compressed_files_are_sent_as_they_are(folder):
    app = CompressedStaticFiles(Recorder(), str(folder))
    status, headers, body = request(app, "/static/media/font.woff2", headers=GZ)
    assert status == 200 and "content-encoding" not in headers
    assert body == (folder / "media" / "font.woff2").read_bytes() and headers["content-type"] == "font/woff2"


def test_a_client_without_gzip_gets_the_plain_file(folder):
    app = CompressedStaticFiles(Recorder(), str(folder))
    request(app, "/static/js/main.abc.js", headers=GZ)  # a gzip entry is cached ...
    for headers in ({}, {"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip;q=0"}):
        status, sent, body = request(app, "/static/js/main.abc.js", headers=headers)
        assert status == 200 and "content-encoding" not in sent  # ... and never sent to them
        assert body == (folder / "js" / "main.abc.js").read_bytes() and int(sent["content-length"]) == len(body)


def test_etag_gives_304_and_head_gives_no_body(folder):
    app = CompressedStaticFiles(Recorder(), str(folder))
    _, headers, body = request(app, "/static/js/main.abc.js", headers=GZ)
    status, _, again = request(app, "/static/js/main.abc.js", headers={**GZ, "If-None-Match": headers["etag"]})
    assert status == 304 and again == b""
    status, head, empty = request(app, "/static/js/main.abc.js", method="HEAD", headers=GZ)
    assert status == 200 and empty == b"" and head["content-length"] == str(len(body))


@pytest.mark.parametrize(
    "path",
    [
        "/static/../secret.txt", "/static/js/../../secret.txt", "/static//etc/passwd", "/static/js/missing.js",
        "/static/js", "/static/", "/static/./js/main.abc.js", "/static/js\\main.abc.js", "/static/js/main.abc.js\x00",
    ],
)  # fmt: skip
def test_anything_but_a_file_in_the_folder_goes_on_to_streamlit(folder, path):
    inner = Recorder()
    app = CompressedStaticFiles(inner, str(folder))
    status, _, body = request(app, path, headers=GZ)
    assert (status, body, inner.paths) == (418, b"inner", [path])
    assert app.cached_bytes == 0


def test_a_symlink_out_of_the_folder_is_not_followed(folder):
    (folder / "js" / "link.js").symlink_to(folder.parent / "secret.txt")
    inner = Recorder()
    status, _, _ = request(CompressedStaticFiles(inner, str(folder)), "/static/js/link.js", headers=GZ)
    assert status == 418 and inner.paths == ["/static/js/link.js"]


def test_other_paths_and_methods_go_on_to_streamlit(folder):
    inner = Recorder()
    app = CompressedStaticFiles(inner, str(folder))
    assert request(app, "/_stcore/health")[0] == 418
    assert request(app, "/static/js/main.abc.js", method="POST")[0] == 418
    assert request(app, "/static-js/main.abc.js", headers=GZ)[0] == 418
    assert inner.paths == ["/_stcore/health", "/static/js/main.abc.js", "/static-js/main.abc.js"]


def test_a_base_url_prefix_is_honoured(folder):
    app = CompressedStaticFiles(Recorder(), str(folder), prefix="/lens/static/")
    assert request(app, "/lens/static/js/main.abc.js", headers=GZ)[0] == 200
    assert request(app, "/static/js/main.abc.js", headers=GZ)[0] == 418


def test_memory_is_bounded_by_bytes(folder):
    for i in range(6):
        (folder / "js" / f"part{i}.js").write_bytes(os.urandom(20_000))  # incompressible: ~20 kB gzipped each
    app = CompressedStaticFiles(Recorder(), str(folder), max_cache_bytes=50_000)
    for i in range(6):
        status, _, body = request(app, f"/static/js/part{i}.js", headers=GZ)
        assert status == 200 and gzip.decompress(body) == (folder / "js" / f"part{i}.js").read_bytes()
        assert app.cached_bytes <= 50_000
    assert app.cached_bytes > 20_000  # the most recent files stay
    # a file larger than the whole budget is still served, just not kept
    (folder / "js" / "big.js").write_bytes(os.urandom(60_000))
    status, _, body = request(app, "/static/js/big.js", headers=GZ)
    assert status == 200 and gzip.decompress(body) == (folder / "js" / "big.js").read_bytes()
    assert app.cached_bytes <= 50_000


def test_streamlits_own_build_is_served_smaller_and_identical():
    folder = Path(file_util.get_static_dir()) / "static"
    biggest = max((p for p in (folder / "js").iterdir() if p.suffix == ".js"), key=lambda p: p.stat().st_size)
    app = CompressedStaticFiles(Recorder(), str(folder))
    status, headers, body = request(app, f"/static/js/{biggest.name}", headers=GZ)
    assert status == 200 and gzip.decompress(body) == biggest.read_bytes()
    assert len(body) < biggest.stat().st_size / 2


def test_requests_arriving_together_compress_a_file_once(folder, monkeypatch):
    import threading

    from ui import static_files

    calls = []
    real = static_files.gzip.compress

    def slow_compress(data, **kw):
        calls.append(len(data))
        threading.Event().wait(0.2)  # long enough for every request to arrive while the first compresses
        return real(data, **kw)

    monkeypatch.setattr(static_files.gzip, "compress", slow_compress)
    app = CompressedStaticFiles(Recorder(), str(folder))
    bodies = []
    threads = [
        threading.Thread(target=lambda: bodies.append(request(app, "/static/js/main.abc.js", headers=GZ)[2]))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(bodies) == 8 and len(set(bodies)) == 1
    assert gzip.decompress(bodies[0]) == (folder / "js" / "main.abc.js").read_bytes()
