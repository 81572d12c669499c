"""The HTTP side of the Kubernetes fault proxy (:mod:`simulator.faces.fault_proxy`): the
threading server and the request handler that forwards to the face or lets the proxy's
active fault answer."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from simulator.faults import FaultKind

if TYPE_CHECKING:
    from simulator.faces.fault_proxy import K8sFaultProxy

log = logging.getLogger("simulator.faces.fault_proxy")

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)
MAX_BODY = 8 * 1024 * 1024


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, OSError)):
            return
        log.exception("k8s fault proxy: error while serving %s", client_address)


def handler_for(proxy: K8sFaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.proxy = proxy
    return Handler


class _Handler(BaseHTTPRequestHandler):
    proxy: K8sFaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("k8s fault proxy: " + format, *args)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self, method: str) -> None:
        proxy = self.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY)) if length else b""
        query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
        is_watch = method == "GET" and query.get("watch") in ("1", "true", "True")
        for fault in proxy.active():
            kind = fault.kind
            if kind is FaultKind.K8S_5XX and proxy._hit(fault):
                proxy._count(kind)
                code = fault.params.status or 503
                self._send(code, status_body(code, "ServiceUnavailable", "injected fault"))
                return
            if kind is FaultKind.K8S_429 and proxy._hit(fault):
                proxy._count(kind)
                after = fault.params.retry_after
                retry = f"{after if after is not None else 1:g}"
                self._send(
                    429,
                    status_body(429, "TooManyRequests", "injected throttling"),
                    {"Retry-After": retry},
                )
                return
            if kind is FaultKind.K8S_TIMEOUT and proxy._hit(fault):
                proxy._count(kind)
                proxy._hold(fault.params.hold or 30.0, fault)
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if kind is FaultKind.K8S_SLOW:
                proxy._count(kind)
                proxy._hold(fault.params.delay or 1.0, fault)
            if (
                kind is FaultKind.K8S_GONE
                and is_watch
                and query.get("resourceVersion") not in (None, "", "0")
            ):
                proxy._count(kind)
                self._gone()
                return
        if method != "GET":
            with proxy._lock:
                proxy.writes.append((proxy._clock.monotonic(), method, urlsplit(self.path).path))
        self._forward(method, body, is_watch)

    def _gone(self) -> None:
        event = {
            "type": "ERROR",
            "object": json.loads(
                status_body(410, "Expired", "too old resource version (injected)")
            ),
        }
        line = json.dumps(event).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n0\r\n\r\n")
        self.close_connection = True

    def _forward(self, method: str, body: bytes, is_watch: bool) -> None:
        proxy = self.proxy
        conn = http.client.HTTPConnection(
            proxy.upstream_host, proxy.upstream_port, timeout=None if is_watch else 60
        )
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            conn.request(method, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            with proxy._lock:
                proxy.forwarded += 1
            if is_watch and response.status == 200:
                self._stream(response)
                return
            data = response.read()
            out = {k: v for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP}
            self.send_response(response.status)
            for name, value in out.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (OSError, http.client.HTTPException):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            conn.close()

    def _stream(self, response: http.client.HTTPResponse) -> None:
        proxy = self.proxy
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        proxy._register(self.connection, True)
        started = proxy._clock.monotonic()
        try:
            while True:
                drop = next((f for f in proxy.active() if f.kind is FaultKind.K8S_WATCH_DROP), None)
                if drop is not None and proxy._clock.monotonic() - started >= (
                    drop.params.every or 1.0
                ):
                    proxy._count(FaultKind.K8S_WATCH_DROP)
                    raise ConnectionAbortedError("watch dropped (injected)")
                line = response.readline()
                if not line:
                    self.wfile.write(b"0\r\n\r\n")
                    break
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            proxy._register(self.connection, False)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
