"""The Actions face object: lifecycle, fault knobs, records, tokens."""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from http.server import ThreadingHTTPServer

import jwt

from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.faces.actions.handler import _make_handler, _QuietServer
from simulator.faces.actions.jobs import JobFeed
from simulator.faces.actions.routes import _ROUTE_NAMES
from simulator.faces.actions.state import (
    DEFAULT_RUNNER_GROUP_ID,
    AppIdentity,
    FaceRequest,
    Fault,
    RunnerInfo,
    ScaleSetInfo,
    _State,
)

log = logging.getLogger(__name__)


# --- the face ----------------------------------------------------------------------------


class ActionsFace:
    """See the module docstring. Use as a context manager or call :meth:`start` / :meth:`close`."""

    def __init__(
        self,
        feed: JobFeed,
        *,
        scale_sets: Sequence[ScaleSetInfo] = (ScaleSetInfo(),),
        pat: str | None = None,
        app: AppIdentity | None = None,
        poll_window: float = 50.0,
        poll_interval: float = 0.05,
        admin_token_ttl: float = 3600.0,
        clock: Clock | None = None,
        tls: ssl.SSLContext | None = None,
        message_delay: float = 0.0,
        runner_groups: Mapping[int, str] | None = None,
    ) -> None:
        self.feed = feed
        #: Every scale set the face knows, by id. Replaced (never mutated) under the lock, so
        #: a reader without the lock sees one consistent dict.
        self.scale_sets: dict[int, ScaleSetInfo] = {s.id: s for s in scale_sets}
        #: Runner groups by id (GetRunnerGroupByName matches names case-insensitively).
        self.runner_groups: dict[int, str] = dict(
            runner_groups or {DEFAULT_RUNNER_GROUP_ID: "Default"}
        )
        if DEFAULT_RUNNER_GROUP_ID not in self.runner_groups:
            raise ValueError(f"runner_groups must hold the default group {DEFAULT_RUNNER_GROUP_ID}")
        self.pat = pat
        self.app = app
        self.poll_window = poll_window
        self.poll_interval = max(0.001, poll_interval)
        self.admin_token_ttl = admin_token_ttl
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.tls = tls
        #: Pause before writing a 200 message (lets tests race a cut against an answer).
        self.message_delay = message_delay
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = _State()
        # Created scale sets get ids past the constructor's (the fixed 42 by default).
        self._state.next_scale_set_id = max(self.scale_sets, default=0) + 1
        self._faults: dict[str, deque[Fault]] = {}
        self._requests: list[FaceRequest] = []
        self._delivered: list[int] = []
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._admin_secret = secrets.token_bytes(32)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        if pat:
            self._state.issued.append(pat)

    # --- lifecycle ---

    def start(self) -> ActionsFace:
        server = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="actions-face",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        with self._changed:
            self._changed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ActionsFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the face is not started")
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the face is not started")
        return int(self._server.server_address[1])

    def configure_url(self, path: str = "acme") -> str:
        return f"{self.url}/{path}"

    # --- knobs ---

    def fail_next(self, route: str, fault: Fault, times: int = 1) -> None:
        """Answer the next ``times`` requests of ``route`` with ``fault`` (FIFO per route)."""
        if route not in _ROUTE_NAMES:
            raise ValueError(f"unknown route {route!r}; one of {sorted(_ROUTE_NAMES)}")
        with self._lock:
            self._faults.setdefault(route, deque()).extend([fault] * times)

    def expire_queue_tokens(self) -> None:
        with self._lock:
            for session in self._state.sessions.values():
                session.queue_token_expired = True

    def expire_admin_tokens(self) -> None:
        """Every admin token issued so far answers 401 from now on."""
        with self._lock:
            self._state.revoked_admin_tokens.update(self._state.issued)

    def hold_session(self, scale_set_id: int) -> None:
        """Pretend another listener holds a session on the scale set (409 on create)."""
        with self._lock:
            self._state.foreign_sessions.add(scale_set_id)

    def release_session(self, scale_set_id: int) -> None:
        with self._lock:
            self._state.foreign_sessions.discard(scale_set_id)

    def mark_runner_busy(self, runner_id: int, busy: bool = True) -> None:
        """While busy, removing the runner answers JobStillRunningException (a job runs)."""
        with self._lock:
            if busy:
                self._state.busy_runners.add(runner_id)
            else:
                self._state.busy_runners.discard(runner_id)

    def drop_runner(self, runner_id: int) -> bool:
        """Forget a registered runner as the service does when an ephemeral runner finishes
        its job; False when it was not registered."""
        with self._changed:
            self._state.busy_runners.discard(runner_id)
            gone = self._state.runners.pop(runner_id, None) is not None
            self._changed.notify_all()
            return gone

    # --- registry (scale sets and runners the controller registered) ---

    def registered_scale_sets(self) -> dict[str, int]:
        """Scale set name -> id, for every scale set the face knows (constructor and created)."""
        with self._lock:
            return {info.name: info.id for info in self.scale_sets.values()}

    def registered_runners(self, scale_set_id: int) -> list[RunnerInfo]:
        """The runners generatejitconfig registered for a scale set, in id order."""
        with self._lock:
            runners = [r for r in self._state.runners.values() if r.scale_set_id == scale_set_id]
        return sorted(runners, key=lambda r: r.id)

    def runner_by_name(self, name: str) -> RunnerInfo | None:
        with self._lock:
            return next((r for r in self._state.runners.values() if r.name == name), None)

    # --- records ---

    @property
    def requests(self) -> list[FaceRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, route: str) -> list[FaceRequest]:
        return [r for r in self.requests if r.route == route]

    @property
    def capacity_history(self) -> list[int]:
        return [r.capacity for r in self.requests_to("get_message") if r.capacity is not None]

    def acked(self) -> list[int]:
        return [
            int(r.path.rsplit("/", 1)[1])
            for r in self.requests_to("delete_message")
            if r.status == 204
        ]

    def delivered(self) -> list[int]:
        """Message ids of every 200 GetMessage answer written (redeliveries included)."""
        with self._lock:
            return list(self._delivered)

    def unacked(self, scale_set_id: int = 42) -> list[int]:
        with self._lock:
            return [m.message_id for m in self._state.queues.get(scale_set_id, [])]

    def session_of(self, scale_set_id: int) -> str | None:
        with self._lock:
            held = self._state.sessions.get(scale_set_id)
            return held.session_id if held else None

    def issued_secrets(self) -> list[str]:
        """Every credential the face knows or issued (PAT, tokens), for leak checks."""
        with self._lock:
            return list(self._state.issued)

    def wait_for(self, predicate: Callable[[list[FaceRequest]], bool], timeout: float) -> bool:
        """Block until ``predicate(requests)`` holds or ``timeout`` passes (re-checked on
        every request, answer, new message and ack)."""
        return self.wait_until(lambda face: predicate(face.requests), timeout)

    def wait_until(self, predicate: Callable[[ActionsFace], bool], timeout: float) -> bool:
        """Block until ``predicate(face)`` holds or ``timeout`` passes (see :meth:`wait_for`)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.1))
            return True

    # --- request handling (called from handler threads) ---

    def _record(self, request: FaceRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def _finish(self, request: FaceRequest, status: int | None, outcome: str) -> None:
        with self._changed:
            request.status, request.outcome = status, outcome
            request.answered_at = time.monotonic()
            self._changed.notify_all()

    def _take_fault(self, route: str) -> Fault | None:
        with self._lock:
            queue = self._faults.get(route)
            return queue.popleft() if queue else None

    def _issue(self, prefix: str) -> str:
        token = prefix + secrets.token_urlsafe(24)
        with self._lock:
            self._state.issued.append(token)
        return token

    def _admin_token(self) -> str:
        now = self.clock.now()
        token = jwt.encode(
            {
                "iat": int(now),
                "exp": int(now + self.admin_token_ttl),
                "sub": "face-admin",
                "nonce": secrets.token_hex(8),
            },
            self._admin_secret,
            algorithm="HS256",
        )
        with self._lock:
            self._state.issued.append(token)
        return token

    def _admin_ok(self, token: str) -> bool:
        with self._lock:
            if token in self._state.revoked_admin_tokens:
                return False
        try:
            claims = jwt.decode(
                token, self._admin_secret, algorithms=["HS256"], options={"verify_exp": False}
            )
        except jwt.PyJWTError:
            return False
        return float(claims.get("exp", 0)) > self.clock.now()

    def _app_jwt_ok(self, token: str) -> bool:
        if self.app is None:
            return False
        try:
            claims = jwt.decode(
                token,
                self.app.public_key_pem,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False},
            )
        except jwt.PyJWTError:
            return False
        now = self.clock.now()
        issuers = {self.app.app_id, self.app.client_id} - {""}
        return (
            claims.get("iss") in issuers
            and float(claims.get("exp", 0)) > now
            and float(claims.get("iat", now + 3600)) <= now + 60
            and set(claims) == {"iat", "exp", "iss"}
        )
