"""ui/student_cookie.py: the class board's signed student cookie, on a page's HTML only, kept once valid."""

from __future__ import annotations

from lib import board as lb
from tests._asgi import call
from ui.student_cookie import StudentCookie

SECRET = b"s" * 32


async def _html_app(scope, receive, send) -> None:
    kind = b"text/html; charset=utf-8" if scope["path"] in ("/", "/board") else b"application/javascript"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
    await send({"type": "http.response.body", "body": b"ok"})


def request(mw, path: str = "/board", cookie: str | None = None, scheme: str = "http", method: str = "GET"):
    """The response headers ``mw`` sends for one request (name -> values)."""
    headers = [(b"cookie", cookie.encode())] if cookie else []
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "scheme": scheme}
    sent = call(mw, scope)
    out: dict[str, list[str]] = {}
    for k, v in sent[0].get("headers", []):
        out.setdefault(k.decode().lower(), []).append(v.decode())
    return out


def cookie_value(headers) -> str:
    (line,) = headers["set-cookie"]
    return line.split(";")[0].split("=", 1)[1]


def test_a_page_gets_a_signed_cookie_once():
    mw = StudentCookie(_html_app, secret=lambda: SECRET)
    first = request(mw)
    value = cookie_value(first)
    assert lb.student_from_cookie(SECRET, value)
    attrs = first["set-cookie"][0]
    assert "HttpOnly" in attrs and "SameSite=Lax" in attrs and "Path=/" in attrs and "Secure" not in attrs
    assert "set-cookie" not in request(mw, cookie=f"cl_student={value}; other=1")  # kept while valid
    assert cookie_value(request(mw, cookie=f"cl_student={value[:-2]}xx")) != value  # a forged one is replaced
    assert "Secure" in request(mw, scheme="https")["set-cookie"][0]
    # only a page's HTML: not Streamlit's files, its websocket's endpoints or a POST
    for path in ("/static/js/main.js", "/_stcore/health"):
        assert "set-cookie" not in request(mw, path)
    assert "set-cookie" not in request(mw, method="POST")


def test_without_its_key_the_page_still_loads():
    calls = []

    def broken() -> bytes:
        calls.append(1)
        raise OSError("database down")

    mw = StudentCookie(_html_app, secret=broken)
    assert "set-cookie" not in request(mw) and "set-cookie" not in request(mw)
    assert len(calls) == 1  # not asked again on every page load
