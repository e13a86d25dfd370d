"""One ASGI request, sent to an app or middleware without a server, for the middleware tests."""

from __future__ import annotations

import asyncio
import concurrent.futures


def call(app, scope: dict) -> list[dict]:
    """The messages ``app`` sends for one bodiless request described by ``scope``.

    ``asyncio.run`` goes in a thread of its own: when the browser tests run first in the same session, their
    Playwright keeps an event loop running in this one, and ``asyncio.run`` there is refused."""
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, app(scope, receive, send)).result()
    return sent
