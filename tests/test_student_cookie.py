"""ui/student_cookie.py: the class board's signed student cookie, on a page's HTML only, kept once valid."""

from __future__ import annotations

from lib import board as lb
from tests._asgi import call
from ui.student_cookie import NEW_COOKIES_BURST, NEW_COOKIES_PER_MINUTE, Allowance, StudentCookie

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


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def request_from(mw, peer: str, headers: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The response headers for a cookieless page request from ``peer`` (with ``headers``)."""
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": "GET", "path": "/board", "headers": raw, "scheme": "http", "client": (peer, 5000)}
    sent = call(mw, scope)
    out: dict[str, list[str]] = {}
    for k, v in sent[0].get("headers", []):
        out.setdefault(k.decode().lower(), []).append(v.decode())
    return out


def test_every_page_sends_no_referrer_onwards():
    mw = StudentCookie(_html_app, secret=lambda: SECRET)
    value = cookie_value(request(mw))
    for headers in (request(mw), request(mw, cookie=f"cl_student={value}")):
        assert headers["referrer-policy"] == ["no-referrer"]
    assert "referrer-policy" not in request(mw, "/static/js/main.js")
    assert request(StudentCookie(_html_app, secret=_broken))["referrer-policy"] == ["no-referrer"]


def _broken() -> bytes:
    raise OSError("database down")


def test_new_cookies_are_rationed_per_address():
    """A burst, then a steady trickle, per client address; a forged X-Forwarded-For buys none; another address
    has its own; a browser that already holds its cookie is never refused it."""
    clock = Clock()
    mw = StudentCookie(_html_app, secret=lambda: SECRET, allowance=Allowance(burst=3, per_minute=6.0, clock=clock))
    got = [bool(request_from(mw, "203.0.113.5", {"X-Forwarded-For": f"10.0.0.{i}"}).get("set-cookie")) for i in range(5)]
    assert got == [True, True, True, False, False] and mw.withheld == 2
    assert request_from(mw, "203.0.113.5")["referrer-policy"] == ["no-referrer"]  # the page itself still loads
    assert request_from(mw, "198.51.100.9").get("set-cookie")  # another address
    clock.t += 10.0  # 6 a minute: one more after 10 s
    assert request_from(mw, "203.0.113.5").get("set-cookie") and not request_from(mw, "203.0.113.5").get("set-cookie")
    # loopback in any form is one address
    for peer in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        request_from(mw, peer)
    assert not request_from(mw, "::1").get("set-cookie")


def test_the_default_allowance_lets_a_class_of_60_behind_one_address_in():
    clock = Clock()
    allowance = Allowance(clock=clock)
    assert all(allowance.take("school") for _ in range(60))
    assert sum(allowance.take("school") for _ in range(200)) == NEW_COOKIES_BURST - 60
    clock.t += 60.0
    assert sum(allowance.take("school") for _ in range(200)) == int(NEW_COOKIES_PER_MINUTE)
