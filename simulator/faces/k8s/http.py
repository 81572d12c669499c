"""HTTP plumbing of the Kubernetes face: the threading server, request parsing, chunked watch
streams and Status answers. Routing and verbs live in :class:`.server.K8sFace`."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from simulator.faces.k8s import protobuf
from simulator.faces.k8s.errors import ApiError
from simulator.faces.k8s.requests import Request
from simulator.faces.k8s.resources import APPLY
from simulator.faces.k8s.selectors import SelectorError

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.k8s.server import K8sFace

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: Most bytes accepted in a request body.
MAX_BODY = 8 * 1024 * 1024


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog (5) overflows when a dozen informers connect at once and the
    # kernel drops SYNs, which clients retry only after a second.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its keep-alive connection is routine; anything else is logged.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return
        log.exception("k8s-face: error while serving %s", client_address)


class Handler(BaseHTTPRequestHandler):
    face: K8sFace
    protocol_version = "HTTP/1.1"
    server_version = "arc-sim-apiserver/1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("k8s-face %s", format % args)

    def _send(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, "RequestEntityTooLarge", f"request body over {MAX_BODY} bytes")
        return self.rfile.read(length) if length else b""

    def _request(self, method: str) -> Request:
        parts = urlsplit(self.path)
        raw = self._read() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        content_type = self.headers.get("Content-Type", "")
        body: Any = None
        if raw and content_type.startswith(protobuf.MEDIA_TYPE):
            try:
                body = protobuf.decode_access_review(raw)
            except protobuf.ProtobufError as exc:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown "
                    f"format - accepted media types include: application/json ({exc})",
                ) from None
        elif raw and not content_type.startswith(APPLY):
            try:
                body = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ApiError(400, "BadRequest", f"the request body is not JSON: {exc}") from None
        auth = self.headers.get("Authorization", "")
        return Request(
            method=method,
            path=parts.path,
            query={k: v[-1] for k, v in parse_qs(parts.query).items()},
            accept=self.headers.get("Accept", ""),
            content_type=content_type,
            raw=raw,
            body=body,
            bearer_token=auth[7:].strip() if auth.startswith("Bearer ") else None,
        )

    def _dispatch(self, method: str) -> None:
        try:
            request = self._request(method)
            if request.is_watch():
                self._watch(request)
                return
            response = self.face.handle(request)
            self._send(response.code, response.body)
        except ApiError as err:
            self._send(err.code, json.dumps(err.status()).encode())
        except SelectorError as err:
            self._send(400, json.dumps(ApiError(400, "BadRequest", str(err)).status()).encode())
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _watch(self, request: Request) -> None:
        face = self.face
        headers_sent = False

        def write(event: Obj | None) -> None:
            nonlocal headers_sent
            if not headers_sent:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                headers_sent = True
            if event is None:
                return
            line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()

        request.watch_writer = write
        face.register_watch(self.connection, True)
        try:
            try:
                face.handle(request)
            except (ApiError, SelectorError) as exc:
                if headers_sent:
                    raise ConnectionAbortedError(str(exc)) from None
                err = exc if isinstance(exc, ApiError) else ApiError(400, "BadRequest", str(exc))
                self._send(err.code, json.dumps(err.status()).encode())
                return
            if not headers_sent:
                write(None)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        except (ConnectionAbortedError, OSError):
            # Dropped on purpose (fault hook / stop) or by the client: no final chunk.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            face.register_watch(self.connection, False)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")
