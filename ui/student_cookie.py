"""The class board's student cookie: each browser that opens a page gets one, signed by the server.

A student's caps on a class board (sentences per student, sends a minute) belong to the student, not to a
browser tab: Streamlit's session ends with a reload, and a new tab is a new session. So ``serve.py`` mounts
:class:`StudentCookie` in front of the app (``st.App(..., middleware=[...])``): a page's HTML answer to a
browser without a valid ``cl_student`` cookie carries a fresh one (128 random bits and the server's HMAC of
them, :func:`lib.board.new_student_cookie`; ``HttpOnly``, ``SameSite=Lax``, 30 days). The browser sends it
with the websocket that opens the session, where the board page reads it (``st.context.cookies``) and checks
the signature (:func:`lib.board.student_from_cookie`). The signing key is a secret of the boards' database
(:meth:`lib.board.BoardStore.secret`), so every replica of one database accepts the others' cookies.

The cookie says nothing about the student and the database keeps only a hash of it. Without it (``streamlit
run app.py``, which mounts no middleware, or a browser refusing cookies) a student is their tab's session,
as before; while this middleware issues cookies (:func:`issuing`), such students share one allowance per
address (lib.board.COOKIELESS_SENTENCES), so a script opening sessions without a cookie cannot fill a board.
Clearing cookies makes a new student, so new cookies are rationed per address (:class:`Allowance`: a burst of
``NEW_COOKIES_BURST``, then ``NEW_COOKIES_PER_MINUTE``): a class of 60 behind one school address all get theirs
at once; a script clearing its cookies gets that many students, then none. The cookie also carries the
teacher's view across a reload (lib.board.BoardStore.remember_teacher). Every page's HTML is sent with
``Referrer-Policy: no-referrer``, so a teacher link opened once leaks to no other site's logs.

Nothing here imports Streamlit; lib.board (SQLAlchemy) is imported on the first page request.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import cookie_parser

SECRET_NAME = "student-cookie"  # the name of the signing key in the boards' database (lib.board.settings)
RETRY_S = 30.0  # after the database could not be reached, how long before asking again
NEW_COOKIES_BURST = 100  # new student cookies one address gets at once (a class of 60 behind one school address)
NEW_COOKIES_PER_MINUTE = 10.0  # and then, as the allowance fills up again
MAX_ADDRESSES = 10_000  # addresses remembered (the least recently seen forgotten: they start full again)
_log = logging.getLogger(__name__)
_issuing = False


def issuing() -> bool:
    """Whether this process hands out student cookies (serve.py's middleware has its signing key): a student
    without one then refused it, or never loaded a page."""
    return _issuing


class Allowance:
    """New cookies per address: a bucket of ``burst`` that refills at ``per_minute`` (one process's count)."""

    def __init__(self, burst: int = NEW_COOKIES_BURST, per_minute: float = NEW_COOKIES_PER_MINUTE,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.burst, self.rate, self.clock = burst, per_minute / 60.0, clock
        self._left: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, client: str) -> bool:
        """One new cookie for ``client``, if its allowance has one left."""
        now = self.clock()
        left, at = self._left.pop(client, (float(self.burst), now))
        left = min(float(self.burst), left + (now - at) * self.rate)
        ok = left >= 1.0
        self._left[client] = (left - 1.0 if ok else left, now)
        while len(self._left) > MAX_ADDRESSES:
            self._left.popitem(last=False)
        return ok


def _is_html(message) -> bool:
    kinds = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
    return bool(kinds) and kinds[0].startswith(b"text/html")


def database_secret() -> bytes:
    """The signing key, from the boards' database (CONTEXT_LENS_DB, else SQLite in the data folder)."""
    from lib import board as lb

    store = lb.open_store()
    try:
        return store.secret(SECRET_NAME)
    finally:
        store.dispose()


class StudentCookie:
    """ASGI middleware: a signed ``cl_student`` cookie on every HTML page answered to a browser without one.

    ``secret``: how to get the signing key (default :func:`database_secret`, asked once, in a worker thread);
    ``path``: the cookie's path (the app's base path).
    """

    def __init__(
        self, app, *, secret: Callable[[], bytes] = database_secret, path: str = "/", allowance: Allowance | None = None
    ) -> None:
        self.app = app
        self._get_secret = secret
        self._secret: bytes | None = None
        self._failed_at = float("-inf")
        self.path = path or "/"
        self.allowance = allowance or Allowance()
        self.withheld = 0  # pages sent without a new cookie: their address had used up its allowance

    async def _key(self) -> bytes | None:
        global _issuing
        if self._secret is None and time.monotonic() - self._failed_at > RETRY_S:
            try:
                self._secret = await run_in_threadpool(self._get_secret)
                _issuing = True
            except Exception:  # the database is down: pages still load, students are their sessions meanwhile
                self._failed_at = time.monotonic()
                _log.exception("the class board's student cookie is off: its signing key could not be read")
        return self._secret

    def _client(self, scope, headers: dict[str, list[str]]) -> str:
        from lib.serving.clients import client_header, client_key, proxy_addresses

        peer = (scope.get("client") or (None,))[0]
        return client_key(headers, peer, trusted=client_header(), proxies=proxy_addresses())

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if "/static/" in path or "/_stcore/" in path or "/component/" in path or path.endswith("/media"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, list[str]] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
        current = cookie_parser(", ".join(headers.get("cookie", []))).get("cl_student")
        key = await self._key()
        new_cookie = None
        if key is not None:
            from lib import board as lb

            if not (current and lb.student_from_cookie(key, current)):
                secure = scope.get("scheme") == "https" or "https" in [
                    v.strip() for v in headers.get("x-forwarded-proto", [])
                ]

                def new_cookie() -> bytes:
                    return (
                        f"{lb.STUDENT_COOKIE}={lb.new_student_cookie(key)}; Path={self.path}; "
                        f"Max-Age={lb.STUDENT_COOKIE_DAYS * 86400}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")
                    ).encode()

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 200 and _is_html(message):
                extra = [(b"referrer-policy", b"no-referrer")]
                if new_cookie is not None:
                    if self.allowance.take(self._client(scope, headers)):  # counted for pages only
                        extra.append((b"set-cookie", new_cookie()))
                    else:
                        self.withheld += 1
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
