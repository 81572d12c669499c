"""An HTTP face of PyTorch's HUD ``queued_jobs_aggregate`` endpoint on loopback.

``GET /api/clickhouse/queued_jobs_aggregate?parameters=<JSON>`` answers a JSON array of
``QueuedJobsForRunner`` rows (see :mod:`providers.hud.client` for the shape). Rows come from a
fixed list (:meth:`HudFace.set_rows`) or a callable (the simulated world derives them from its
queue). With ``token`` set, a missing or wrong ``x-hud-internal-bot`` header answers 401.

Knobs, each until changed: :meth:`outage` (an HTTP status, e.g. 503), :meth:`slow` (a delay
before answering), :meth:`malformed` (``"not-json"``, ``"not-a-list"``, ``"wrong-types"``),
:meth:`absurd` (every row's count replaced, e.g. -1 or 10**7), and :meth:`healthy` to clear
them all. Requests are recorded with the token replaced by ``<redacted>``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)

PATH = "/api/clickhouse/queued_jobs_aggregate"
Rows = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class HudRequest:
    path: str
    parameters: dict[str, Any] | None
    token: str  # "<redacted>", "<wrong>" or "" (absent)
    status: int


def queued_row(
    label: str, count: int, org: str = "pytorch", repo: str = "pytorch"
) -> dict[str, Any]:
    """One ``queued_jobs_aggregate`` row."""
    return {
        "runner_label": label,
        "org": org,
        "repo": repo,
        "num_queued_jobs": count,
        "min_queue_time_minutes": 1,
        "max_queue_time_minutes": 5,
    }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("hud face: connection from %s ended abruptly", client_address, exc_info=True)


class HudFace:
    """See the module docstring. Context manager; ``url`` is the full endpoint URL."""

    def __init__(
        self, rows: Sequence[dict[str, Any]] | Callable[[], Rows] = (), *, token: str | None = None
    ) -> None:
        self._rows: Rows | Callable[[], Rows] = rows if callable(rows) else list(rows)
        self.token = token
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._status: int | None = None
        self._delay = 0.0
        self._malformed = ""
        self._absurd: int | None = None
        self._requests: list[HudRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> HudFace:
        self._server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="hud-face",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> HudFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the HUD face is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}{PATH}"

    # --- knobs ---

    def set_rows(self, rows: Rows | Callable[[], Rows]) -> None:
        with self._lock:
            self._rows = rows if callable(rows) else list(rows)

    def outage(self, status: int = 503) -> None:
        with self._lock:
            self._status = status

    def slow(self, seconds: float) -> None:
        with self._lock:
            self._delay = seconds

    def malformed(self, kind: str = "not-json") -> None:
        if kind not in ("not-json", "not-a-list", "wrong-types"):
            raise ValueError(f"malformed kind {kind!r}: not-json, not-a-list or wrong-types")
        with self._lock:
            self._malformed = kind

    def absurd(self, count: int) -> None:
        with self._lock:
            self._absurd = count

    def healthy(self) -> None:
        with self._lock:
            self._status, self._delay, self._malformed, self._absurd = None, 0.0, "", None

    @property
    def requests(self) -> list[HudRequest]:
        with self._lock:
            return list(self._requests)

    # --- answering (handler threads) ---

    def _answer(self, path: str, query: str, token: str | None) -> tuple[int, bytes]:
        with self._lock:
            status, delay = self._status, self._delay
            malformed, absurd = self._malformed, self._absurd
            rows = self._rows() if callable(self._rows) else list(self._rows)
        parameters = _parameters(query)
        if self.token is not None and token != self.token:
            status = 401
        if path != PATH:
            status = 404
        shown = "" if token is None else ("<redacted>" if token == self.token else "<wrong>")
        if delay:
            self._closing.wait(delay)
        if status is None:
            status = 200
        with self._lock:
            self._requests.append(HudRequest(path, parameters, shown, status))
        if status != 200:
            return status, json.dumps({"error": f"HTTP {status}"}).encode()
        if malformed == "not-json":
            return 200, b"<!DOCTYPE html><title>Vercel Security Checkpoint</title>"
        if malformed == "not-a-list":
            return 200, json.dumps({"rows": rows}).encode()
        if malformed == "wrong-types":
            rows = [{**row, "num_queued_jobs": "lots"} for row in rows] or [
                {"runner_label": 7, "num_queued_jobs": True}
            ]
        if absurd is not None:
            rows = [{**row, "num_queued_jobs": absurd} for row in rows]
        return 200, json.dumps(rows).encode()


def _parameters(query: str) -> dict[str, Any] | None:
    raw = parse_qs(query).get("parameters", [None])[0]
    if raw is None:
        return None
    try:
        decoded = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, dict) else None


def _handler(face: HudFace) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        timeout = 60

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("hud face: " + format, *args)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            status, body = face._answer(
                parts.path, parts.query, self.headers.get("x-hud-internal-bot")
            )
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


def rows_for(queue: Sequence[tuple[str, int]]) -> Rows:
    """Rows from ``(label, count)`` pairs (a helper for worlds that count their own queue)."""
    return [queued_row(label, count) for label, count in queue]


__all__ = ["PATH", "HudFace", "HudRequest", "queued_row", "rows_for"]
