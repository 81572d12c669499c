"""A loopback HTTP proxy in front of the simulated Kubernetes face that injects API faults.

Real clients (the ``kubernetes`` package behind :class:`providers.kubernetes.cache.KubeCache`,
the placeholder writer, kubectl) are pointed at :attr:`K8sFaultProxy.url`; every request is
forwarded to the face unless an active fault answers it instead:

- ``k8s_5xx``: a ``Status`` body with ``params.status`` (default 503), for ``params.ratio``
  of the requests;
- ``k8s_429``: 429 ``TooManyRequests`` with ``Retry-After: params.retry_after`` (default 1);
- ``k8s_timeout``: the request is held ``params.hold`` seconds (default 30, or until the fault
  is cleared or the proxy stops), then the connection is closed without an answer;
- ``k8s_slow``: forwarded after ``params.delay`` seconds;
- ``k8s_watch_drop``: every proxied watch stream open when it starts is cut (no final chunk),
  and while it lasts new streams are cut after ``params.every`` seconds (default 1);
- ``k8s_410``: a watch resumed from a ``resourceVersion`` gets one ``ERROR`` event carrying a
  410 ``Expired`` Status (what the API server sends for a compacted version), then ends.

Faults are armed with :meth:`K8sFaultProxy.inject` / :meth:`clear`, or taken from a
:class:`~simulator.faults.FaultPlan` in real time with :meth:`follow` (offsets from
the moment ``follow`` is called). Ratios are drawn from a seeded ``random.Random``. Every
injected answer is counted in :attr:`K8sFaultProxy.injected` (by kind). The face itself is
never edited or slowed: the proxy only stands in front of it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import random
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from simulator.faults import Fault, FaultKind, FaultPlan

log = logging.getLogger(__name__)

#: Kinds this proxy applies (everything else in a plan is ignored here).
KINDS = frozenset(
    {
        FaultKind.K8S_5XX,
        FaultKind.K8S_429,
        FaultKind.K8S_TIMEOUT,
        FaultKind.K8S_SLOW,
        FaultKind.K8S_WATCH_DROP,
        FaultKind.K8S_GONE,
    }
)
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


class K8sFaultProxy:
    def __init__(
        self, upstream: str, *, seed: int = 0, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port
        self._rng = random.Random(seed)
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._plan: FaultPlan | None = None
        self._plan_start = 0.0
        self._stopping = threading.Event()
        self._cleared = threading.Condition(self._lock)
        self._streams: set[socket.socket] = set()
        self.injected: Counter[str] = Counter()
        self.forwarded = 0
        #: Every write that reached the face: (monotonic time it was forwarded, method, path).
        #: What a per-client audit log would show; reads and injected answers are not in it.
        self.writes: list[tuple[float, str, str]] = []
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> K8sFaultProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="k8s-fault-proxy",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._cleared:
            self._cleared.notify_all()
        self.drop_streams()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> K8sFaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- arming ---------------------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        if fault.kind not in KINDS:
            raise ValueError(f"{fault.kind} is not a Kubernetes API fault")
        with self._lock:
            self._faults.append(fault)
        if fault.kind is FaultKind.K8S_WATCH_DROP:
            self.drop_streams()

    def clear(self, kind: FaultKind | None = None) -> None:
        with self._cleared:
            self._faults = [f for f in self._faults if kind is not None and f.kind is not kind]
            self._plan = None if kind is None else self._plan
            self._cleared.notify_all()

    def follow(self, plan: FaultPlan) -> None:
        """Apply the plan's Kubernetes faults by real time elapsed from now."""
        with self._lock:
            self._plan = plan
            self._plan_start = self._monotonic()

    def active(self) -> list[Fault]:
        with self._lock:
            faults = list(self._faults)
            plan, start = self._plan, self._plan_start
        if plan is not None:
            elapsed = self._monotonic() - start
            faults += [
                f for f in plan.faults if f.kind in KINDS and not f.instant and f.active_at(elapsed)
            ]
            faults += [
                f for f in plan.faults if f.kind is FaultKind.K8S_GONE and elapsed >= f.start
            ]
        return faults

    def drop_streams(self) -> int:
        """Cut every proxied watch stream now (the client sees the connection end)."""
        with self._lock:
            streams = list(self._streams)
        for sock in streams:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return len(streams)

    def open_streams(self) -> int:
        with self._lock:
            return len(self._streams)

    # --- decisions (handler threads) ------------------------------------------------------

    def _hit(self, fault: Fault) -> bool:
        with self._lock:
            return self._rng.random() < fault.params.ratio

    def _count(self, kind: FaultKind) -> None:
        with self._cleared:
            self.injected[kind.value] += 1
            self._cleared.notify_all()

    def wait_injected(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` answers were injected (any kind); False on timeout."""
        with self._cleared:
            return self._cleared.wait_for(
                lambda: sum(self.injected.values()) >= count, timeout=timeout
            )

    def _hold(self, seconds: float, fault: Fault) -> None:
        """Wait ``seconds``, or less if the fault is cleared or the proxy stops."""
        deadline = self._monotonic() + seconds
        with self._cleared:
            while not self._stopping.is_set() and fault in self._faults_now():
                left = deadline - self._monotonic()
                if left <= 0:
                    return
                self._cleared.wait(min(left, 0.1))

    def _faults_now(self) -> list[Fault]:
        # Called with the lock held (re-entrancy free): the explicit faults only, plus plan.
        faults = list(self._faults)
        if self._plan is not None:
            elapsed = self._monotonic() - self._plan_start
            faults += [f for f in self._plan.faults if f.active_at(elapsed)]
        return faults

    def _register(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._streams.add(sock)
            else:
                self._streams.discard(sock)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, OSError)):
            return
        log.exception("k8s fault proxy: error while serving %s", client_address)


def _handler(proxy: K8sFaultProxy) -> type[BaseHTTPRequestHandler]:
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
                proxy.writes.append((proxy._monotonic(), method, urlsplit(self.path).path))
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
        started = proxy._monotonic()
        try:
            while True:
                drop = next((f for f in proxy.active() if f.kind is FaultKind.K8S_WATCH_DROP), None)
                if drop is not None and proxy._monotonic() - started >= (drop.params.every or 1.0):
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


__all__ = ["KINDS", "K8sFaultProxy", "status_body"]
