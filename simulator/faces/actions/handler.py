"""HTTP plumbing of the Actions face: the server, the handler and its answers."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import select
import socket
import ssl
import struct
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from simulator.faces.actions.queue import QueueRoutes
from simulator.faces.actions.rest import RestRoutes
from simulator.faces.actions.routes import _route, _scrub_headers
from simulator.faces.actions.scale_sets import ScaleSetRoutes
from simulator.faces.actions.sessions import SessionRoutes
from simulator.faces.actions.state import FaceRequest

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.actions.face import ActionsFace

log = logging.getLogger(__name__)


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up (cut polls, resets) are normal here: log them at debug."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("face: connection from %s ended abruptly", client_address, exc_info=True)


def _make_handler(face: ActionsFace) -> type[BaseHTTPRequestHandler]:
    class Handler(_FaceHandler):
        pass

    Handler.face = face
    return Handler


class _FaceHandler(RestRoutes, SessionRoutes, QueueRoutes, ScaleSetRoutes, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "actions-face/1"
    disable_nagle_algorithm = True  # headers and body are separate writes
    timeout = 120  # idle keep-alive connections end eventually
    face: ActionsFace

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("face: " + format, *args)

    def setup(self) -> None:
        super().setup()
        with self.face._lock:
            self.face._connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.face._lock:
            self.face._connections.discard(self.connection)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # --- plumbing ---

    def _dispatch(self) -> None:
        target = self.path
        via_proxy = target.startswith(("http://", "https://"))
        parts = urlsplit(target)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        route, params = _route(self.command, parts.path)
        request = FaceRequest(
            method=self.command,
            route=route,
            path=parts.path,
            query=parse_qs(parts.query),
            headers=_scrub_headers(self.headers.items()),
            body=body,
            received_at=time.monotonic(),
            via_proxy=via_proxy,
        )
        self.face._record(request)
        fault = self.face._take_fault(route)
        if fault is not None:
            if fault.kind == "reset":
                self._reset(request)
                return
            self._answer(request, fault.status, fault.body, dict(fault.headers), outcome="fault")
            return
        handler = getattr(self, f"_route_{route}", None)
        if handler is None:
            self._json(request, 404, {"typeName": "NotFound", "message": f"no route {parts.path}"})
            return
        try:
            handler(request, params)
        except (BrokenPipeError, ConnectionResetError):
            self.face._finish(request, None, "client-gone")
            self.close_connection = True

    def _answer(
        self,
        request: FaceRequest,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        outcome: str = "answered",
    ) -> None:
        # Recorded before the bytes go out, so a test that has the answer also sees the record.
        self.face._finish(request, status, outcome)
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if body and not any(k.lower() == "content-type" for k in (headers or {})):
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ActivityId", secrets.token_hex(8))
            self.end_headers()
            if body:
                self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.face._finish(request, None, "client-gone")
            self.close_connection = True

    def _json(self, request: FaceRequest, status: int, payload: Any) -> None:
        self._answer(request, status, json.dumps(payload).encode())

    def _error(self, request: FaceRequest, status: int, type_name: str, message: str) -> None:
        self._json(request, status, {"typeName": type_name, "message": message})

    def _reset(self, request: FaceRequest) -> None:
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()
        self.face._finish(request, None, "reset")

    def _bearer(self, scheme: str = "Bearer") -> str:
        value = self.headers.get("Authorization", "")
        prefix = scheme + " "
        return value[len(prefix) :] if value.startswith(prefix) else ""

    def _client_gone(self) -> bool:
        """True when the client closed its end while we wait (plain HTTP only)."""
        if isinstance(self.connection, ssl.SSLSocket):
            return False
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True
