"""lib/serving/clients.py: who a request counts as, and whether it comes from this machine."""

from __future__ import annotations

from lib.serving.clients import LOOPBACK, address, client_key, on_this_machine

NONE: dict[str, list[str]] = {}


def test_every_loopback_form_is_one_client():
    forms = [None, "", "127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1", "[::1]", "localhost", "0:0:0:0:0:0:0:1"]
    assert {client_key(NONE, f) for f in forms} == {LOOPBACK}
    assert address("::ffff:198.51.100.4") == "198.51.100.4" == client_key(NONE, "::ffff:198.51.100.4")
    assert address("2001:DB8::1") == "2001:db8::1" and address("not an address") == "not an address"


def test_forwarding_headers_are_a_browsers_own_words():
    """No proxy named: the connection's address. A school proxy's clients all count as its address, and an
    outsider forging X-Forwarded-For counts as the outsider, whatever the header says."""
    for forged in ({"x-forwarded-for": ["10.0.0.7"]}, {"x-real-ip": ["10.0.0.7"]}, {"forwarded": ["for=10.0.0.7"]},
                   {"x-forwarded-for": ["198.51.100.20, 10.0.0.7"]}):  # fmt: skip
        assert client_key(forged, "203.0.113.66") == "203.0.113.66"
    # the server took the address from the request's own X-Forwarded-For (it does for a loopback connection):
    # whoever sent it is on this machine, so rotating the header earns no fresh allowance
    assert {client_key({"x-forwarded-for": [f"10.0.0.{i}"]}, f"10.0.0.{i}") for i in range(20)} == {LOOPBACK}
    assert client_key({"x-forwarded-for": ["203.0.113.2, 10.0.0.3"]}, "10.0.0.3") == LOOPBACK
    assert client_key({"x-real-ip": ["10.0.0.7"]}, None) == LOOPBACK


def test_the_hosts_own_proxy_names_the_client():
    forged = {"x-forwarded-for": ["10.0.0.7"]}
    # behind our nginx: X-Real-IP is $remote_addr (nginx overwrites whatever the browser sent)
    assert client_key({"x-real-ip": ["198.51.100.4"], **forged}, "172.18.0.3", trusted="x-real-ip") == "198.51.100.4"
    # a proxy that appends: only the last entry, the hop it added, counts
    chain = {"x-forwarded-for": ["10.0.0.7, 6.6.6.6", "198.51.100.4"]}
    assert client_key(chain, "172.18.0.3", trusted="x-forwarded-for") == "198.51.100.4"
    assert client_key({"x-forwarded-for": ["1.1.1.1, 198.51.100.9 "]}, None, trusted="x-forwarded-for") == "198.51.100.9"
    # the trusted header missing (a request that did not pass the proxy): the connection's address
    assert client_key(NONE, "172.18.0.3", trusted="x-real-ip") == "172.18.0.3"
    # with the proxy's address named, a request that went around it cannot name its own address
    proxies = frozenset({"172.18.0.2"})
    named = {"x-real-ip": ["198.51.100.4"]}
    assert client_key(named, "172.18.0.2", trusted="x-real-ip", proxies=proxies) == "198.51.100.4"
    assert client_key(named, "172.18.0.9", trusted="x-real-ip", proxies=proxies) == "172.18.0.9"


def test_this_machine_is_a_loopback_connection_that_forwards_no_one():
    assert on_this_machine(NONE, None) and on_this_machine(NONE, "::ffff:127.0.0.1")
    assert not on_this_machine(NONE, "192.0.2.2")
    assert not on_this_machine({"x-forwarded-for": ["127.0.0.1"]}, None)  # a proxy here, forwarding someone
    assert not on_this_machine({"x-forwarded-for": ["198.51.100.4"]}, "198.51.100.4")
    assert not on_this_machine({"x-real-ip": ["198.51.100.4"]}, "172.18.0.3", trusted="x-real-ip")
    assert on_this_machine({"x-real-ip": ["127.0.0.1"]}, "172.18.0.3", trusted="x-real-ip")


def test_the_proxy_may_be_named_by_its_host_name(monkeypatch):
    """On a container network the proxy's address is its name's (tools/up.sh: CONTEXT_LENS_PROXY_ADDRESSES=proxy);
    a name that cannot be looked up names no connection, so the header is then believed from none."""
    import socket

    from lib.serving import clients

    looked = []

    def getaddrinfo(host, port, *args, **kwargs):
        looked.append(host)
        if host == "proxy":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("172.18.0.2", 0))]
        raise socket.gaierror("unknown")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    clients._looked_up.clear()
    monkeypatch.setenv("CONTEXT_LENS_PROXY_ADDRESSES", "proxy, ::ffff:10.0.0.1")
    assert clients.proxy_addresses() == {"172.18.0.2", "10.0.0.1"}
    assert clients.proxy_addresses() == {"172.18.0.2", "10.0.0.1"} and looked == ["proxy"]  # looked up once
    named = {"x-real-ip": ["198.51.100.4"]}
    proxies = clients.proxy_addresses()
    assert client_key(named, "172.18.0.2", trusted="x-real-ip", proxies=proxies) == "198.51.100.4"
    assert client_key(named, "172.18.0.5", trusted="x-real-ip", proxies=proxies) == "172.18.0.5"
    monkeypatch.setenv("CONTEXT_LENS_PROXY_ADDRESSES", "gone")
    none = clients.proxy_addresses()
    assert client_key(named, "172.18.0.2", trusted="x-real-ip", proxies=none) == "172.18.0.2"
    clients._looked_up.clear()
