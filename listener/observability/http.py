"""The listener's small HTTP server: metrics, liveness, readiness and the pair table.

One port, plain HTTP, a stdlib :class:`~http.server.ThreadingHTTPServer` running in a daemon
thread beside the asyncio loop (the same shape as ARC's metrics server):

- ``<metrics_endpoint>`` (``/metrics`` by default): Prometheus text exposition of the
  listener's own registry (:class:`listener.observability.metrics.PrometheusMetrics`).
- ``/healthz``: 200 while the process serves requests (liveness probe).
- ``/readyz``: 200 once ``ready()`` says so (the watch caches have synced), else 503 with
  the reason (readiness probe).
- ``/debug/pairs``: JSON with the pair table and the capacity ledger, as published by the
  loop on a :class:`StatusBoard` after each reconcile step (read by the ``status`` command).
  Like every route here it has no authentication; ``CAPACITY_AWARE_DEBUG_PAIRS=off`` stops
  serving it (:func:`debug_pairs_enabled`; docs/operations.md#endpoints-logs-and-status).

Address rules (docs/protocol.md#config-file, docs/protocol.md#metrics): ``metrics_addr`` is Go-style
``host:port`` (``:8080`` = every interface). ARC's ``metrics_addr: ""`` means "no metrics server";
the probes still need a port, so :func:`resolve_http_settings` then serves only the health endpoints
on :data:`DEFAULT_HEALTH_ADDR`.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from reconciler.capacity import CapacityLedger
from state_machine.record import PairRecord
from state_machine.states import PairState

log = logging.getLogger(__name__)

#: Where health endpoints live when ``metrics_addr`` is empty (ARC's default metrics port).
DEFAULT_HEALTH_ADDR = ":8080"
DEFAULT_METRICS_ENDPOINT = "/metrics"
HEALTHZ = "/healthz"
READYZ = "/readyz"
DEBUG_PAIRS = "/debug/pairs"
#: ``on`` (default) or ``off``: whether ``/debug/pairs`` is served.
DEBUG_PAIRS_ENV = "CAPACITY_AWARE_DEBUG_PAIRS"
#: Seconds a client may take to send its request before the server drops it.
REQUEST_TIMEOUT = 10.0

Readiness = Callable[[], "bool | tuple[bool, str]"]


class HttpConfigError(ValueError):
    """``metrics_addr`` / ``metrics_endpoint`` is not usable; names the value and the rule."""


def debug_pairs_enabled(env: Mapping[str, str]) -> bool:
    """Whether to serve ``/debug/pairs``: ``$CAPACITY_AWARE_DEBUG_PAIRS`` ``on`` (or unset)
    or ``off``; any other value is refused with one line naming the variable."""
    value = env.get(DEBUG_PAIRS_ENV, "").strip().lower()
    if value in ("", "on"):
        return True
    if value == "off":
        return False
    raise HttpConfigError(
        f"environment variable {DEBUG_PAIRS_ENV}: {env[DEBUG_PAIRS_ENV]!r}: use on or off"
    )


# --- addresses -------------------------------------------------------------------------------


def parse_listen_address(addr: str) -> tuple[str, int]:
    """``":8080"`` -> ``("", 8080)``; ``"127.0.0.1:0"``; ``"[::1]:9090"`` -> ``("::1", 9090)``."""
    text = addr.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise HttpConfigError(
            f"listener config: metrics_addr: got {addr!r}; expected host:port like ':8080' "
            "or '127.0.0.1:8080'"
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise HttpConfigError(
            f"listener config: metrics_addr: got {addr!r}; put IPv6 hosts in brackets, e.g. "
            "'[::]:8080'"
        )
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise HttpConfigError(
            f"listener config: metrics_addr: got {addr!r}; the port must be 0-65535"
        )
    return host, port


@dataclass(frozen=True, slots=True)
class HttpSettings:
    address: str
    #: None = do not serve metrics (ARC's ``metrics_addr: ""``); health endpoints still served.
    metrics_endpoint: str | None


def resolve_http_settings(metrics_addr: str, metrics_endpoint: str) -> HttpSettings:
    """Apply ARC's rules to the two config keys; raise HttpConfigError on bad values."""
    if not metrics_addr.strip():
        return HttpSettings(DEFAULT_HEALTH_ADDR, None)
    parse_listen_address(metrics_addr)
    endpoint = metrics_endpoint.strip() or DEFAULT_METRICS_ENDPOINT
    if not endpoint.startswith("/"):
        raise HttpConfigError(
            f"listener config: metrics_endpoint: got {metrics_endpoint!r}; it must start "
            "with '/', e.g. '/metrics'"
        )
    if endpoint in (HEALTHZ, READYZ, DEBUG_PAIRS):
        raise HttpConfigError(
            f"listener config: metrics_endpoint: got {metrics_endpoint!r}; that path is "
            "reserved for probes / debug"
        )
    return HttpSettings(metrics_addr.strip(), endpoint)


# --- the pair table --------------------------------------------------------------------------


class StatusBoard:
    """The latest pair table and ledger, published by the loop, read by HTTP threads.

    The loop publishes immutable data after each step; readers never touch the live store.
    """

    def __init__(self, scale_set: str) -> None:
        self.scale_set = scale_set
        self._lock = threading.Lock()
        self._payload: dict[str, Any] = {
            "scale_set": scale_set,
            "at": None,
            "ledger": None,
            "counts": {s.value: 0 for s in PairState},
            "pairs": [],
        }

    def publish(
        self,
        *,
        records: Iterable[PairRecord],
        ledger: CapacityLedger | None,
        at: float,
    ) -> None:
        pairs = sorted(records, key=lambda r: (r.since, r.pair_id))
        counts = {s.value: 0 for s in PairState}
        for record in pairs:
            counts[record.state.value] += 1
        payload = {
            "scale_set": self.scale_set,
            "at": at,
            "ledger": _ledger_json(ledger),
            "counts": counts,
            "pairs": [_record_json(r, at) for r in pairs],
        }
        with self._lock:
            self._payload = payload

    def payload(self) -> dict[str, Any]:
        with self._lock:
            return self._payload


def _ledger_json(ledger: CapacityLedger | None) -> dict[str, Any] | None:
    if ledger is None:
        return None
    out: dict[str, Any] = asdict(ledger)
    out["headroom"] = ledger.headroom
    return out


def _record_json(record: PairRecord, now: float) -> dict[str, Any]:
    return {
        "id": record.pair_id,
        "state": record.state.value,
        "version": record.version,
        "since": record.since,
        "age_seconds": round(max(0.0, now - record.since), 3),
        "reason": record.reason,
        "runner_pod": record.runner_pod,
        "workflow_pod": record.workflow_pod,
        "history": [
            {"state": h.state.value, "at": h.at, "reason": h.reason} for h in record.history
        ],
    }


# --- the server ------------------------------------------------------------------------------


class _DualStackServer(ThreadingHTTPServer):
    """Listens on IPv6 and IPv4 at once when bound to ``::`` (Go's ``:8080`` behaviour)."""

    address_family = socket.AF_INET6

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _bind(host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    if host == "":
        try:
            return _DualStackServer(("::", port), handler)
        except OSError:  # IPv6 disabled on this node: IPv4 only
            return ThreadingHTTPServer(("0.0.0.0", port), handler)
    if ":" in host:
        return _IPv6Server((host, port), handler)
    return ThreadingHTTPServer((host, port), handler)


class ListenerHttpServer:
    """Serves the routes of the module docstring until :meth:`stop`."""

    def __init__(
        self,
        address: str,
        *,
        registry: CollectorRegistry | None,
        metrics_endpoint: str | None = DEFAULT_METRICS_ENDPOINT,
        ready: Readiness = lambda: True,
        debug: Callable[[], Mapping[str, Any]] | None = None,
        on_exposition_error: Callable[[str], None] | None = None,
    ) -> None:
        self._host, self._port = parse_listen_address(address)
        self.registry = registry
        self.metrics_endpoint = metrics_endpoint if registry is not None else None
        self.ready = ready
        self.debug = debug
        self.on_exposition_error = on_exposition_error
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ListenerHttpServer:
        """Bind and serve in a daemon thread; raises OSError if the port is taken."""
        if self._server is not None:
            return self
        server = _bind(self._host, self._port, _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="listener-http",
            daemon=True,
        )
        self._thread.start()
        log.info("http server listening on %s:%d", *self.bound_address)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout)
        self._server = self._thread = None

    def __enter__(self) -> ListenerHttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bound_address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("the server is not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def url(self, path: str = "/") -> str:
        host, port = self.bound_address
        shown = f"[{host}]" if ":" in host else host
        if host in ("0.0.0.0", "::"):
            shown = "127.0.0.1"
        return f"http://{shown}:{port}{path}"

    # -- routes ------------------------------------------------------------------------------

    def route(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of ``path`` (query string ignored)."""
        path = path.split("?", 1)[0]
        if self.metrics_endpoint is not None and path == self.metrics_endpoint:
            return self._metrics()
        if path == HEALTHZ:
            return 200, "text/plain; charset=utf-8", b"ok\n"
        if path == READYZ:
            return self._readyz()
        if path == DEBUG_PAIRS and self.debug is not None:
            return self._debug()
        return 404, "text/plain; charset=utf-8", b"not found\n"

    def _metrics(self) -> tuple[int, str, bytes]:
        if self.registry is None:  # narrowed for type checkers; route() checks first
            return 404, "text/plain; charset=utf-8", b"not found\n"
        try:
            body = generate_latest(self.registry)
        except Exception:
            log.exception("metrics exposition failed")
            if self.on_exposition_error is not None:
                self.on_exposition_error("gathering")
            return 500, "text/plain; charset=utf-8", b"error gathering metrics\n"
        # The classic text format, as ARC's Go listener serves it (every name here is a
        # classic Prometheus name, so no escaping is involved).
        return 200, CONTENT_TYPE_PLAIN_0_0_4, body

    def _readyz(self) -> tuple[int, str, bytes]:
        try:
            verdict = self.ready()
        except Exception:
            log.exception("readiness check failed")
            return 503, "text/plain; charset=utf-8", b"not ready: readiness check failed\n"
        ok, detail = verdict if isinstance(verdict, tuple) else (verdict, "")
        if ok:
            return 200, "text/plain; charset=utf-8", b"ok\n"
        text = f"not ready: {detail or 'caches not synced'}\n"
        return 503, "text/plain; charset=utf-8", text.encode()

    def _debug(self) -> tuple[int, str, bytes]:
        if self.debug is None:
            return 404, "text/plain; charset=utf-8", b"not found\n"
        try:
            body = json.dumps(self.debug(), indent=2, sort_keys=True, default=str)
        except Exception:
            log.exception("debug payload failed")
            return 500, "text/plain; charset=utf-8", b"error building the pair table\n"
        return 200, "application/json", body.encode() + b"\n"


def _handler_for(app: ListenerHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "arc-capacity-listener"
        sys_version = ""
        timeout = REQUEST_TIMEOUT

        def do_GET(self) -> None:
            self._respond(include_body=True)

        def do_HEAD(self) -> None:
            self._respond(include_body=False)

        def _respond(self, *, include_body: bool) -> None:
            status, content_type, body = app.route(self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if include_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            # Probes hit these endpoints every few seconds: keep access logs at debug.
            log.debug("http %s %s", self.address_string(), format % args)

    return Handler


__all__ = [
    "DEBUG_PAIRS_ENV",
    "DEFAULT_HEALTH_ADDR",
    "HttpConfigError",
    "HttpSettings",
    "ListenerHttpServer",
    "StatusBoard",
    "debug_pairs_enabled",
    "parse_listen_address",
    "resolve_http_settings",
]
