"""The session's visitor, from the request that opened it: which client they count as, and whether they sit
at this machine (lib.serving.clients reads the headers and the address; this module only fetches them).

A visitor from another machine is held to a hosted copy's rules even when ``CONTEXT_LENS_MODELS`` is unset
(lib.serving.hosting): the README's plain command on a lecturer's laptop lets the lecturer open any folder
or download a model, and the class on the laptop's network neither.
"""

from __future__ import annotations

import streamlit as st

from lib.serving.clients import (
    FORWARDING_HEADERS,
    LOOPBACK,
    client_header,
    client_key,
    on_this_machine,
    proxy_addresses,
)


def _request() -> tuple[dict[str, list[str]], str | None] | None:
    """(forwarding headers by lower-case name, the connection's address) of the session's request, or None
    outside a request (a script run on its own, AppTest: this machine)."""
    trusted = client_header()
    try:
        headers = st.context.headers
        peer = st.context.ip_address
        named = {h: headers.get_all(h) for h in {*FORWARDING_HEADERS, trusted} if h}
    except Exception:  # no request context
        return None
    named = {h: [v for v in vs if isinstance(v, str)] for h, vs in named.items() if isinstance(vs, list)}
    return named, peer if isinstance(peer, str) else None


def client() -> str:
    """Who counts a wrong board code or a cookieless send: lib.serving.clients.client_key of this session."""
    req = _request()
    if req is None:
        return LOOPBACK
    return client_key(*req, trusted=client_header(), proxies=proxy_addresses())


def local() -> bool:
    """Whether this session's visitor is certainly at this machine (lib.serving.clients.on_this_machine)."""
    req = _request()
    return req is None or on_this_machine(*req, trusted=client_header(), proxies=proxy_addresses())
