"""Who is asking: one address per client, and whether a request comes from this machine. No Streamlit here.

The class board counts wrong codes and new students per client, and a visitor from another machine may not
open model folders on this one (lib.serving.hosting). Both need an address no browser can choose:

* the connection's address, as the server reports it. Every loopback form is one client, :data:`LOOPBACK`
  (``127.0.0.1``, ``::1``, and ``::ffff:127.0.0.1``, which a dual-stack socket reports for IPv4 loopback);
  an IPv4 address mapped into IPv6 is the IPv4 address;
* forwarding headers (``X-Forwarded-For``, ``X-Real-IP``, ``Forwarded``) are a browser's own words, ignored,
  unless the host's own proxy sets one (``CONTEXT_LENS_CLIENT_HEADER``): then its last value is the client,
  and with ``CONTEXT_LENS_PROXY_ADDRESSES`` set (addresses, or host names such as the proxy's name on a
  container network, looked up once a minute), only on a connection from one of those addresses: a request
  that went around the proxy cannot name its own address.

Streamlit's server (uvicorn) takes a connection's address from ``X-Forwarded-For`` when the connection comes
from this machine, so a reported address that the request's own ``X-Forwarded-For`` names is this machine:
a forger on the same machine, or a proxy here that the host did not name. It counts as :data:`LOOPBACK`.

    >>> client_key({}, "::ffff:127.0.0.1") == client_key({}, "::1") == client_key({}, None) == LOOPBACK
    True
    >>> client_key({"x-forwarded-for": ["198.51.100.7"]}, "203.0.113.5")   # a school proxy's address counts
    '203.0.113.5'
    >>> client_key({"x-forwarded-for": ["198.51.100.7"]}, "198.51.100.7")  # taken from the header: this machine
    'loopback'
    >>> client_key({"x-real-ip": ["198.51.100.7"]}, "172.18.0.3", trusted="x-real-ip")  # behind our nginx
    '198.51.100.7'
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Mapping, Sequence

LOOPBACK = "loopback"  # every address of this machine, as one client
FORWARDING_HEADERS = ("x-forwarded-for", "x-real-ip", "forwarded")
LOOKUP_S = 60.0  # how long a proxy's looked-up addresses are kept
_looked_up: dict[str, tuple[float, frozenset[str]]] = {}


def client_header() -> str:
    """The header the host's own proxy sets to the address it saw (``CONTEXT_LENS_CLIENT_HEADER``), or ''.

    deploy/nginx.conf overwrites ``X-Real-IP`` with ``$remote_addr``; a platform whose proxy appends the
    address to ``X-Forwarded-For`` names that header (its last entry is then read). Unset: no proxy is trusted.
    """
    return os.environ.get("CONTEXT_LENS_CLIENT_HEADER", "").strip().lower()


def proxy_addresses() -> frozenset[str]:
    """``CONTEXT_LENS_PROXY_ADDRESSES``: the addresses the host's proxy connects from (comma-separated), each
    as :func:`address` reads it, a host name by its addresses (looked up at most once a minute; one that cannot
    be looked up names none); empty when unset: the client header is then believed on any connection."""
    raw = os.environ.get("CONTEXT_LENS_PROXY_ADDRESSES", "")
    out: set[str] = set()
    for item in (a.strip() for a in raw.split(",")):
        if item:
            out |= _addresses_of(item)
    if raw.strip() and not out:
        out.add("")  # named, but none found: no connection is the proxy's
    return frozenset(out)


def _addresses_of(item: str) -> frozenset[str]:
    """An address as :func:`address` reads it, or a host name's addresses (kept LOOKUP_S seconds)."""
    if address(item) != item[:64] or item.lower() == "localhost":
        return frozenset({address(item)})  # an address, normalised
    try:
        ipaddress.ip_address(item)
        return frozenset({address(item)})
    except ValueError:
        pass
    hit = _looked_up.get(item)
    if hit is None or time.monotonic() - hit[0] > LOOKUP_S:
        try:
            found = frozenset(address(info[4][0]) for info in socket.getaddrinfo(item, None))
        except OSError:
            found = frozenset()
        hit = _looked_up[item] = (time.monotonic(), found)
    return hit[1]


def address(raw: str | None) -> str:
    """One client's address: loopback forms as :data:`LOOPBACK`, IPv4-mapped IPv6 as IPv4, at most 64 chars."""
    text = (raw or "").strip()
    if text.startswith("[") and "]" in text:  # "[::1]:5000"
        text = text[1 : text.index("]")]
    if not text or text.lower() == "localhost":
        return LOOPBACK
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text[:64]
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return LOOPBACK if ip.is_loopback else str(ip)


def _trusted_value(headers: Mapping[str, Sequence[str]], trusted: str) -> str:
    values = [v for v in headers.get(trusted, ()) if v and v.strip()]
    if not values:
        return ""
    return values[-1].split(",")[-1].strip() if trusted == "x-forwarded-for" else values[-1].strip()


def _proxied(peer: str | None, trusted: str, proxies: frozenset[str]) -> bool:
    return bool(trusted) and (not proxies or address(peer) in proxies)


def client_key(
    headers: Mapping[str, Sequence[str]], peer: str | None, *, trusted: str = "", proxies: frozenset[str] = frozenset()
) -> str:
    """The client a request counts as: an address no browser can choose (see the module's docstring).

    ``headers``: lower-case name -> every value sent; ``peer``: the connection's address as the server reports
    it (None for loopback); ``trusted``: the header the host's own proxy sets (:func:`client_header`);
    ``proxies``: the addresses that proxy connects from (:func:`proxy_addresses`; empty: any).
    """
    if _proxied(peer, trusted, proxies):
        value = _trusted_value(headers, trusted)
        if value:
            return address(value)
    seen = address(peer)
    if seen != LOOPBACK:
        named = (a for v in headers.get("x-forwarded-for", ()) for a in v.split(","))
        if any(address(a) == seen for a in named):
            return LOOPBACK  # the server read this address from the request's own header: it came from here
    return seen


def on_this_machine(
    headers: Mapping[str, Sequence[str]], peer: str | None, *, trusted: str = "", proxies: frozenset[str] = frozenset()
) -> bool:
    """Whether the request certainly comes from this machine: a loopback connection without forwarding headers
    (a proxy on this machine forwards others' requests), or the host's proxy naming a loopback address."""
    if _proxied(peer, trusted, proxies) and _trusted_value(headers, trusted):
        return address(_trusted_value(headers, trusted)) == LOOPBACK
    return address(peer) == LOOPBACK and not any(headers.get(h) for h in FORWARDING_HEADERS)
