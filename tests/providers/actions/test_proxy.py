"""Proxy selection follows Go's httpproxy rules (what ARC's listener does): NO_PROXY CIDRs,
domains and ports are honoured; loopback never goes through a proxy."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from providers.actions.client import make_http_client
from providers.actions.proxy import GoProxyTransport, ProxyConfig
from tests.providers.actions.conftest import run
from tests.providers.demand.loopback import LoopbackServer, Request, json_answer

ENV = {
    "HTTPS_PROXY": "proxy.corp:3128",
    "http_proxy": "http://proxy.corp:3128",
    "NO_PROXY": (
        "10.0.0.0/8, 192.168.1.7, fd00::/8, .internal.example, ghes.example.com:8443, github.local"
    ),
}


@pytest.mark.parametrize(
    ("url", "proxied"),
    [
        ("https://10.20.30.40/api/v3", False),  # inside the CIDR (httpx alone would proxy it)
        ("https://11.0.0.1/api/v3", True),
        ("https://192.168.1.7/", False),  # a single IP
        ("https://192.168.1.8/", True),
        ("https://[fd00::1]/", False),  # an IPv6 CIDR
        ("https://a.internal.example/", False),  # ".domain": subdomains...
        ("https://internal.example/", True),  # ...only
        ("https://github.local/", False),  # "domain": itself...
        ("https://api.github.local/", False),  # ...and its subdomains
        ("https://ghes.example.com:8443/", False),  # host:port: that port only
        ("https://ghes.example.com/", True),
        ("https://localhost:8080/", False),  # never proxied, whatever NO_PROXY says
        ("https://127.0.0.2/", False),
        ("https://api.github.com/", True),
    ],
)
def test_go_rules(url: str, proxied: bool) -> None:
    config = ProxyConfig.from_env(ENV)
    assert (config.proxy_for(httpx.URL(url)) == "http://proxy.corp:3128") is proxied


def test_the_scheme_picks_the_variable_and_star_disables_proxies() -> None:
    config = ProxyConfig.from_env({"HTTPS_PROXY": "http://s:1", "HTTP_PROXY": "http://p:2"})
    assert config.proxy_for(httpx.URL("http://example.com/")) == "http://p:2"
    assert config.proxy_for(httpx.URL("https://example.com/")) == "http://s:1"
    everything_direct = ProxyConfig.from_env({"HTTPS_PROXY": "http://s:1", "NO_PROXY": "*"})
    assert everything_direct.proxy_for(httpx.URL("https://example.com/")) is None


@pytest.fixture
def proxy_server() -> Iterator[LoopbackServer]:
    """A forward proxy that answers every absolute-form request itself."""

    def answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        return json_answer(200, {"via": "proxy", "target": request.path})

    with LoopbackServer(answer) as server:
        yield server


def test_a_cidr_in_no_proxy_bypasses_the_proxy_on_the_wire(proxy_server: LoopbackServer) -> None:
    """Proxied requests really go to the (loopback) proxy; a NO_PROXY CIDR host goes to the
    direct transport (a recording stand-in: the test opens no connection off loopback)."""
    direct_calls: list[str] = []

    def direct(request: httpx.Request) -> httpx.Response:
        direct_calls.append(str(request.url))
        return httpx.Response(200, json={"via": "direct"})

    env = {"HTTP_PROXY": proxy_server.url, "NO_PROXY": "10.0.0.0/8"}
    transport = GoProxyTransport(ProxyConfig.from_env(env), direct=httpx.MockTransport(direct))

    async def go() -> list[dict[str, str]]:
        async with httpx.AsyncClient(transport=transport, timeout=2.0) as http:
            return [
                (await http.get("http://192.0.2.10/api/v3/meta")).json(),
                (await http.get("http://10.20.30.40/api/v3/meta")).json(),
            ]

    via_proxy, via_direct = run(go())
    assert via_proxy == {"via": "proxy", "target": "http://192.0.2.10/api/v3/meta"}
    assert via_direct == {"via": "direct"}
    assert [r.path for r in proxy_server.requests] == ["http://192.0.2.10/api/v3/meta"]
    assert direct_calls == ["http://10.20.30.40/api/v3/meta"]


def test_the_actions_client_transport_uses_these_rules() -> None:
    client = make_http_client(
        env={"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "10.0.0.0/8"}
    )
    transport = client._transport
    assert isinstance(transport, GoProxyTransport)
    assert transport.route(httpx.URL("https://10.1.2.3/")) is None
    assert transport.route(httpx.URL("https://github.com/")) == "http://proxy.corp:3128"
    run(client.aclose())
