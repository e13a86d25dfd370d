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
as before. Clearing cookies makes a new student: the board's own cap still bounds what one person can send.

Nothing here imports Streamlit; lib.board (SQLAlchemy) is imported on the first page request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import cookie_parser

SECRET_NAME = "student-cookie"  # the name of the signing key in the boards' database (lib.board.settings)
RETRY_S = 30.0  # after the database could not be reached, how long before asking again
_log = logging.getLogger(__name__)


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

    def __init__(self, app, *, secret: Callable[[], bytes] = database_secret, path: str = "/") -> None:
        self.app = app
        self._get_secret = secret
        self._secret: bytes | None = None
        self._failed_at = float("-inf")
        self.path = path or "/"

    async def _key(self) -> bytes | None:
        if self._secret is None and time.monotonic() - self._failed_at > RETRY_S:
            try:
                self._secret = await run_in_threadpool(self._get_secret)
            except Exception:  # the database is down: pages still load, students are their sessions meanwhile
                self._failed_at = time.monotonic()
                _log.exception("the class board's student cookie is off: its signing key could not be read")
        return self._secret

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if "/static/" in path or "/_stcore/" in path or "/component/" in path or path.endswith("/media"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        current = cookie_parser(headers.get("cookie", "")).get("cl_student")
        key = await self._key()
        if key is None:
            await self.app(scope, receive, send)
            return
        from lib import board as lb

        if current and lb.student_from_cookie(key, current):
            await self.app(scope, receive, send)
            return
        secure = scope.get("scheme") == "https" or headers.get("x-forwarded-proto", "").strip() == "https"
        cookie = (
            f"{lb.STUDENT_COOKIE}={lb.new_student_cookie(key)}; Path={self.path}; "
            f"Max-Age={lb.STUDENT_COOKIE_DAYS * 86400}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")
        )

        async def send_with_cookie(message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 200:
                kinds = [v for k, v in message.get("headers", []) if k.lower() == b"content-type"]
                if kinds and kinds[0].startswith(b"text/html"):
                    message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie.encode())]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)
