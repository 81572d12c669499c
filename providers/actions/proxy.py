"""Proxy selection like Go's ``golang.org/x/net/http/httpproxy`` (what ARC's listener uses).

httpx's ``trust_env`` ignores CIDR entries of ``NO_PROXY`` (``10.0.0.0/8``), so a GHES on a
private address would be sent through the proxy where ARC's listener goes direct. This module
applies Go's rules per request:

- ``HTTPS_PROXY`` for https URLs, ``HTTP_PROXY`` for http (upper case first, then lower
  case); a proxy without a scheme is ``http://``;
- ``NO_PROXY``: comma-separated; ``*`` = never proxy; an IP or a CIDR matches IP-literal hosts
  (names are not resolved); ``example.com`` matches it and its subdomains, ``.example.com``
  only the subdomains; an entry with ``:port`` matches that port only;
- ``localhost`` and loopback addresses are never proxied.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class NoProxyEntry:
    network: IPNetwork | None = None
    domain: str = ""
    #: ``.example.com``: subdomains only.
    subdomains_only: bool = False
    port: int | None = None


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy_all: bool = False
    no_proxy: tuple[NoProxyEntry, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ProxyConfig:
        def get(name: str) -> str:
            return (env.get(name.upper()) or env.get(name.lower()) or "").strip()

        entries = [e.strip().lower() for e in get("no_proxy").split(",") if e.strip()]
        return cls(
            http_proxy=_with_scheme(get("http_proxy")),
            https_proxy=_with_scheme(get("https_proxy")),
            no_proxy_all="*" in entries,
            no_proxy=tuple(_entry(e) for e in entries if e != "*"),
        )

    def proxy_for(self, url: httpx.URL) -> str | None:
        """The proxy URL for ``url``, or None to connect directly."""
        proxy = self.https_proxy if url.scheme == "https" else self.http_proxy
        if not proxy or self.no_proxy_all:
            return None
        host = url.host.lower().strip("[]")
        port = url.port or (443 if url.scheme == "https" else 80)
        if host == "localhost":
            return None
        ip = _ip(host)
        if ip is not None and ip.is_loopback:
            return None
        if any(_matches(entry, host, ip, port) for entry in self.no_proxy):
            return None
        return proxy


def _with_scheme(proxy: str) -> str:
    if proxy and "://" not in proxy:
        return "http://" + proxy
    return proxy


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _entry(text: str) -> NoProxyEntry:
    try:
        return NoProxyEntry(network=ipaddress.ip_network(text, strict=False))
    except ValueError:
        pass
    host, port = text, None
    if text.startswith("[") and "]" in text:  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    elif text.count(":") == 1:
        name, _, number = text.partition(":")
        if number.isdigit():
            host, port = name, int(number)
    if _ip(host) is not None:
        return NoProxyEntry(network=ipaddress.ip_network(host), port=port)
    if host.startswith("*."):
        host = host[1:]
    return NoProxyEntry(domain=host.lstrip("."), subdomains_only=host.startswith("."), port=port)


def _matches(
    entry: NoProxyEntry,
    host: str,
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
    port: int,
) -> bool:
    if entry.port is not None and entry.port != port:
        return False
    if entry.network is not None:
        return ip is not None and ip in entry.network
    if ip is not None or not entry.domain:
        return False
    if host.endswith("." + entry.domain):
        return True
    return not entry.subdomains_only and host == entry.domain


class GoProxyTransport(httpx.AsyncBaseTransport):
    """Routes each request directly or through its proxy by :class:`ProxyConfig`."""

    def __init__(
        self,
        config: ProxyConfig,
        *,
        direct: httpx.AsyncBaseTransport | None = None,
        **transport_options: Any,
    ) -> None:
        self.config = config
        self._options = transport_options
        self._direct = direct or httpx.AsyncHTTPTransport(**transport_options)
        self._proxied: dict[str, httpx.AsyncHTTPTransport] = {}

    def route(self, url: httpx.URL) -> str | None:
        return self.config.proxy_for(url)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = self.route(request.url)
        if proxy is None:
            return await self._direct.handle_async_request(request)
        transport = self._proxied.get(proxy)
        if transport is None:
            transport = httpx.AsyncHTTPTransport(proxy=proxy, **self._options)
            self._proxied[proxy] = transport
        return await transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self._direct.aclose()
        for transport in self._proxied.values():
            await transport.aclose()


def client_options(
    env: Mapping[str, str], *, trust_env: bool, **transport_options: Any
) -> dict[str, Any]:
    """``httpx.AsyncClient`` keyword arguments: with ``trust_env``, Go's proxy rules instead of
    httpx's (which would drop CIDR entries); without, httpx's defaults (no proxy)."""
    if not trust_env:
        return {"trust_env": False}
    config = ProxyConfig.from_env(env)
    return {"trust_env": False, "transport": GoProxyTransport(config, **transport_options)}
