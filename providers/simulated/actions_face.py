"""An HTTP face of the Actions service on loopback, for the real httpx client (PROTOCOL §1-3).

It serves, on ``127.0.0.1:<ephemeral>`` (GHES-style URLs, so ``configure_url`` is
``<face>/<org>`` and the REST API lives under ``/api/v3``):

- the auth chain: App installation token (verifies the RS256 JWT), registration token
  (PAT or installation token), runner-registration (``RemoteAuth``) answering
  ``{url: <face>/tenant/, token: <admin JWT with exp>}``;
- sessions (one per scale set: 409 while one is held), refresh (new queue token), delete;
- the message queue: a long poll honouring ``X-ScaleSetMaxCapacity`` that returns as soon as
  the job feed has news (the feed is polled at most every ``poll_interval``) and 202 at the end
  of ``poll_window``; job messages are packed <= 50 per outer message with increasing ids and
  kept until acknowledged (DELETE), so an unacknowledged message is delivered again;
- acquire jobs (queue token).

The job side is a :class:`JobFeed` (the simulated world implements it later);
:class:`ScriptedJobFeed` is a small real one for tests. Fault knobs: :meth:`ActionsFace.fail_next`
(5xx, 429 + Retry-After, empty 200, garbage body, connection reset, any status),
:meth:`expire_queue_tokens`, :meth:`expire_admin_tokens`, :meth:`hold_session`. Every request is
recorded (method, path, query, headers with credentials replaced by their scheme) and
``capacity_history`` holds the ``X-ScaleSetMaxCapacity`` of each GetMessage.

Threads: one per connection (``ThreadingHTTPServer``); all face state is behind one lock. Long
polls end early when the client hangs up (plain HTTP) or the face closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import select
import socket
import ssl
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import jwt

from reconciler.clock import SystemClock

log = logging.getLogger(__name__)

MAX_JOBS_PER_MESSAGE = 50
FIRST_MESSAGE_ID = 100_000_170
_CONFLICT_TYPE = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException"


# --- the job side ------------------------------------------------------------------------


class JobFeed(Protocol):
    """The Actions service's job side, as the face needs it."""

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        """Record the advertised capacity, assign backlog up to it, return new job messages
        (PROTOCOL §3.2 wire dicts) for this scale set since the last call."""
        ...

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        """PROTOCOL §3.3 wire dict."""
        ...

    def acquire(self, scale_set_id: int, request_ids: list[int]) -> list[int]: ...


def wire_time(when: float | None) -> str:
    """RFC 3339 with 7 fractional digits, as the service writes; None = Go zero time."""
    if when is None:
        return "0001-01-01T00:00:00Z"
    moment = datetime.fromtimestamp(when, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond * 10:07d}Z"


@dataclass
class ScriptedJob:
    request_id: int
    scale_set_id: int
    labels: tuple[str, ...]
    repository: str
    owner: str
    workflow_ref: str
    display_name: str
    event_name: str
    workflow_run_id: int
    queued_at: float
    state: str = "queued"  # queued -> assigned -> acquired -> started -> completed
    assigned_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    runner_id: int = 0
    runner_name: str = ""
    result: str = ""

    @property
    def job_id(self) -> str:
        return f"job-{self.request_id:x}"

    def message(self, kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messageType": kind,
            "runnerRequestId": self.request_id,
            "repositoryName": self.repository,
            "ownerName": self.owner,
            "jobId": self.job_id,
            "jobWorkflowRef": self.workflow_ref,
            "jobDisplayName": self.display_name,
            "workflowRunId": self.workflow_run_id,
            "eventName": self.event_name,
            "requestLabels": list(self.labels),
            "queueTime": wire_time(self.queued_at),
            "scaleSetAssignTime": wire_time(self.assigned_at),
            "runnerAssignTime": wire_time(self.started_at),
            "finishTime": wire_time(self.finished_at),
        }
        if kind == "JobAvailable":
            body["acquireJobUrl"] = f"https://example.invalid/acquire/{self.request_id}"
        if kind in ("JobStarted", "JobCompleted"):
            body["runnerId"] = self.runner_id
            body["runnerName"] = self.runner_name
        if kind == "JobCompleted":
            body["result"] = self.result
        return body


class ScriptedJobFeed:
    """A real, simple in-memory job feed: a FIFO of jobs per scale set, assigned up to the
    advertised capacity (lowering it never revokes assigned jobs); tests start and complete
    jobs, which queues JobStarted / JobCompleted messages. Thread-safe."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or SystemClock().now
        self._lock = threading.Lock()
        self._jobs: dict[int, ScriptedJob] = {}
        self._outbox: dict[int, list[dict[str, Any]]] = {}
        self._next_id = 9001
        self.idle_runners: dict[int, int] = {}
        #: (scale set id, advertised capacity) per poll, oldest first (bounded).
        self.capacity_history: deque[tuple[int, int]] = deque(maxlen=10_000)

    def add_job(
        self,
        scale_set_id: int,
        *,
        labels: Sequence[str] = ("arc-runners",),
        repository: str = "web",
        owner: str = "acme",
        display_name: str | None = None,
        workflow_ref: str = "acme/web/.github/workflows/ci.yml@refs/heads/main",
        event_name: str = "push",
    ) -> int:
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            self._jobs[request_id] = ScriptedJob(
                request_id=request_id,
                scale_set_id=scale_set_id,
                labels=tuple(labels),
                repository=repository,
                owner=owner,
                workflow_ref=workflow_ref,
                display_name=display_name or f"job {request_id}",
                event_name=event_name,
                workflow_run_id=555_000 + request_id,
                queued_at=self._clock(),
            )
            return request_id

    def start(self, request_id: int, runner_name: str, runner_id: int | None = None) -> None:
        with self._lock:
            job = self._job(request_id, "assigned", "acquired")
            job.state, job.started_at = "started", self._clock()
            job.runner_name, job.runner_id = runner_name, runner_id or 300 + request_id % 1000
            self._emit(job.scale_set_id, job.message("JobStarted"))

    def complete(self, request_id: int, result: str = "succeeded") -> None:
        with self._lock:
            job = self._job(request_id, "assigned", "acquired", "started")
            job.state, job.finished_at, job.result = "completed", self._clock(), result
            self._emit(job.scale_set_id, job.message("JobCompleted"))

    def push_raw(self, scale_set_id: int, message: dict[str, Any]) -> None:
        """Queue any job-message dict as is (e.g. an unknown ``messageType``)."""
        with self._lock:
            self._emit(scale_set_id, dict(message))

    def job(self, request_id: int) -> ScriptedJob:
        with self._lock:
            return self._jobs[request_id]

    def jobs_in(self, state: str) -> list[int]:
        with self._lock:
            return [j.request_id for j in self._jobs.values() if j.state == state]

    # --- JobFeed ---

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        with self._lock:
            self.capacity_history.append((scale_set_id, max_capacity))
            room = max_capacity - sum(1 for j in self._active(scale_set_id))
            for job in self._jobs.values():
                if room <= 0:
                    break
                if job.scale_set_id == scale_set_id and job.state == "queued":
                    job.state, job.assigned_at = "assigned", self._clock()
                    self._emit(scale_set_id, job.message("JobAvailable"))
                    room -= 1
            return self._outbox.pop(scale_set_id, [])

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        with self._lock:
            active = list(self._active(scale_set_id))
            running = sum(1 for j in active if j.state == "started")
            idle = self.idle_runners.get(scale_set_id, 0)
            return {
                "totalAvailableJobs": sum(1 for j in active if j.state == "assigned"),
                "totalAcquiredJobs": sum(1 for j in active if j.state == "acquired"),
                "totalAssignedJobs": len(active),
                "totalRunningJobs": running,
                "totalRegisteredRunners": running + idle,
                "totalBusyRunners": running,
                "totalIdleRunners": idle,
            }

    def acquire(self, scale_set_id: int, request_ids: list[int]) -> list[int]:
        acquired = []
        with self._lock:
            for request_id in request_ids:
                job = self._jobs.get(request_id)
                if job and job.scale_set_id == scale_set_id and job.state == "assigned":
                    job.state = "acquired"
                    acquired.append(request_id)
                    self._emit(scale_set_id, job.message("JobAssigned"))
        return acquired

    def _active(self, scale_set_id: int) -> Iterable[ScriptedJob]:
        return (
            j
            for j in self._jobs.values()
            if j.scale_set_id == scale_set_id and j.state in ("assigned", "acquired", "started")
        )

    def _job(self, request_id: int, *states: str) -> ScriptedJob:
        job = self._jobs.get(request_id)
        if job is None or job.state not in states:
            got = "unknown" if job is None else job.state
            raise ValueError(f"job {request_id} is {got}; expected one of {states}")
        return job

    def _emit(self, scale_set_id: int, message: dict[str, Any]) -> None:
        self._outbox.setdefault(scale_set_id, []).append(message)


# --- knobs and records -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected answer. Build with the class methods."""

    kind: str  # "status" | "reset"
    status: int = 0
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def http(cls, status: int, body: bytes | None = None, **headers: str) -> Fault:
        if body is None:
            body = json.dumps(
                {"typeName": "InjectedFault", "message": f"injected HTTP {status}"}
            ).encode()
        named = tuple((k.replace("_", "-"), v) for k, v in headers.items())
        return cls("status", status, body, named)

    @classmethod
    def server_error(cls, status: int = 503) -> Fault:
        return cls.http(status)

    @classmethod
    def too_many_requests(cls, retry_after: str = "1") -> Fault:
        return cls.http(429, Retry_After=retry_after)

    @classmethod
    def empty_ok(cls) -> Fault:
        return cls("status", 200, b"")

    @classmethod
    def garbage(cls) -> Fault:
        return cls("status", 200, b"<html>502 bad gateway</html>\x00\xff")

    @classmethod
    def reset(cls) -> Fault:
        """Close the connection without an answer (RST)."""
        return cls("reset")


@dataclass
class FaceRequest:
    method: str
    route: str
    path: str
    query: dict[str, list[str]]
    #: Header names lower-cased; credentials are replaced by their scheme ("Bearer <redacted>").
    headers: dict[str, str]
    body: bytes
    received_at: float
    via_proxy: bool = False
    status: int | None = None
    #: GetMessage only: the id of the message this poll was about to deliver.
    message_id: int | None = None
    #: "answered", "fault", "reset", "client-gone" (a long poll whose client hung up) or
    #: "face-closed" (a long poll still open when the face closed).
    outcome: str = ""
    answered_at: float | None = None

    @property
    def capacity(self) -> int | None:
        value = self.headers.get("x-scalesetmaxcapacity")
        return int(value) if value is not None and value.lstrip("-").isdigit() else None

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True, slots=True)
class ScaleSetInfo:
    id: int = 42
    name: str = "arc-runners"
    labels: tuple[str, ...] = ("arc-runners",)


@dataclass(frozen=True, slots=True)
class AppIdentity:
    """The GitHub App the face trusts: JWT ``iss`` values and the public key (PEM)."""

    app_id: str
    installation_id: int
    public_key_pem: str
    client_id: str = ""


@dataclass
class _SessionState:
    scale_set_id: int
    session_id: str
    owner: str
    queue_token: str
    queue_token_expired: bool = False


@dataclass
class _Stored:
    message_id: int
    payload: bytes


@dataclass
class _State:
    sessions: dict[int, _SessionState] = field(default_factory=dict)
    foreign_sessions: set[int] = field(default_factory=set)
    queues: dict[int, list[_Stored]] = field(default_factory=dict)
    next_message_id: int = FIRST_MESSAGE_ID
    installation_tokens: set[str] = field(default_factory=set)
    registration_tokens: set[str] = field(default_factory=set)
    revoked_admin_tokens: set[str] = field(default_factory=set)
    issued: list[str] = field(default_factory=list)


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
        clock: Callable[[], float] | None = None,
        tls: ssl.SSLContext | None = None,
        message_delay: float = 0.0,
    ) -> None:
        self.feed = feed
        self.scale_sets = {s.id: s for s in scale_sets}
        self.pat = pat
        self.app = app
        self.poll_window = poll_window
        self.poll_interval = max(0.001, poll_interval)
        self.admin_token_ttl = admin_token_ttl
        self.clock = clock or SystemClock().now
        self.tls = tls
        #: Pause before writing a 200 message (lets tests race a cut against an answer).
        self.message_delay = message_delay
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = _State()
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
        now = self.clock()
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
        return float(claims.get("exp", 0)) > self.clock()

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
        now = self.clock()
        issuers = {self.app.app_id, self.app.client_id} - {""}
        return (
            claims.get("iss") in issuers
            and float(claims.get("exp", 0)) > now
            and float(claims.get("iat", now + 3600)) <= now + 60
            and set(claims) == {"iat", "exp", "iss"}
        )


#: Every route the face answers, in the order of PROTOCOL §0 (fault knobs name them).
ROUTES = (
    "installation_token",
    "registration_token",
    "runner_registration",
    "create_session",
    "refresh_session",
    "delete_session",
    "get_message",
    "delete_message",
    "acquire_jobs",
)
_ROUTE_NAMES = frozenset(ROUTES)


def _route(method: str, path: str) -> tuple[str, dict[str, str]]:
    """Map a request to a route name and its path parameters ("unknown" when nothing fits)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v3"]:
        rest = parts[2:]
        if (
            method == "POST"
            and len(rest) == 4
            and rest[:2] == ["app", "installations"]
            and rest[3] == "access_tokens"
        ):
            return "installation_token", {"installation_id": rest[2]}
        if method == "POST" and rest[-3:] == ["actions", "runners", "registration-token"]:
            return "registration_token", {"scope": "/".join(rest[:-3])}
        if method == "POST" and rest == ["actions", "runner-registration"]:
            return "runner_registration", {}
    if parts[:4] == ["tenant", "_apis", "runtime", "runnerscalesets"] and len(parts) >= 6:
        params = {"scale_set_id": parts[4]}
        if parts[5] == "sessions" and len(parts) == 6 and method == "POST":
            return "create_session", params
        if parts[5] == "sessions" and len(parts) == 7:
            params["session_id"] = parts[6]
            if method == "PATCH":
                return "refresh_session", params
            if method == "DELETE":
                return "delete_session", params
        if parts[5] == "acquirejobs" and len(parts) == 6 and method == "POST":
            return "acquire_jobs", params
    if parts[:2] == ["broker", "message"]:
        if method == "GET" and len(parts) == 2:
            return "get_message", {}
        if method == "DELETE" and len(parts) == 3:
            return "delete_message", {"message_id": parts[2]}
    return "unknown", {}


def _scrub_headers(raw: Iterable[tuple[str, str]]) -> dict[str, str]:
    headers = {}
    for name, value in raw:
        key = name.lower()
        if key in ("authorization", "proxy-authorization", "x-hud-internal-bot"):
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} <redacted>".strip()
        headers[key] = value
    return headers


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


class _FaceHandler(BaseHTTPRequestHandler):
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

    # --- GitHub REST side ---

    def _route_installation_token(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        app = face.app
        if app is None or not face._app_jwt_ok(self._bearer()):
            self._json(request, 401, {"message": "A JSON web token could not be decoded"})
            return
        if params["installation_id"] != str(app.installation_id):
            self._json(request, 404, {"message": "Not Found"})
            return
        token = face._issue("ghs_")
        with face._lock:
            face._state.installation_tokens.add(token)
        self._json(request, 201, {"token": token, "expires_at": wire_time(face.clock() + 3600)})

    def _route_registration_token(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        bearer = self._bearer()
        with face._lock:
            known = bearer in face._state.installation_tokens or (
                face.pat is not None and bearer == face.pat
            )
        if not bearer or not known:
            self._json(request, 401, {"message": "Bad credentials"})
            return
        token = face._issue("REG")
        with face._lock:
            face._state.registration_tokens.add(token)
        self._json(request, 201, {"token": token, "expires_at": wire_time(face.clock() + 3600)})

    def _route_runner_registration(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        with face._lock:
            known = self._bearer("RemoteAuth") in face._state.registration_tokens
        if not known:
            self._json(request, 401, {"message": "Bad registration token"})
            return
        payload = request.json()
        if not isinstance(payload, dict) or payload.get("runner_event") != "register":
            self._json(request, 400, {"message": "expected {url, runner_event: register}"})
            return
        self._json(request, 200, {"url": f"{face.url}/tenant/", "token": face._admin_token()})

    # --- Actions service: sessions ---

    def _scale_set(self, request: FaceRequest, params: dict[str, str]) -> ScaleSetInfo | None:
        if not self.face._admin_ok(self._bearer()):
            self._error(request, 401, "UnauthorizedException", "admin token invalid or expired")
            return None
        info = self.face.scale_sets.get(int(params["scale_set_id"]))
        if info is None:
            self._error(
                request,
                404,
                "GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException",
                f"runner scale set {params['scale_set_id']} not found",
            )
        return info

    def _session_payload(self, info: ScaleSetInfo, state: _SessionState) -> dict[str, Any]:
        return {
            "sessionId": state.session_id,
            "ownerName": state.owner,
            "runnerScaleSet": {
                "id": info.id,
                "name": info.name,
                "runnerGroupId": 1,
                "runnerGroupName": "Default",
                "labels": [{"type": "System", "name": label} for label in info.labels],
                "RunnerSetting": {"disableUpdate": True},
            },
            "messageQueueUrl": f"{self.face.url}/broker/message?sessionId={state.session_id}",
            "messageQueueAccessToken": state.queue_token,
            "statistics": self.face.feed.statistics(info.id),
        }

    def _route_create_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        info = self._scale_set(request, params)
        if info is None:
            return
        face = self.face
        payload = request.json()
        owner = payload.get("ownerName", "") if isinstance(payload, dict) else ""
        with face._lock:
            held = info.id in face._state.sessions or info.id in face._state.foreign_sessions
            if not held:
                state = _SessionState(info.id, str(uuid.uuid4()), owner, face._issue("mq-"))
                face._state.sessions[info.id] = state
        if held:
            self._error(
                request,
                409,
                _CONFLICT_TYPE,
                f"The actions runner scaleset {info.name} already has an active session.",
            )
            return
        self._json(request, 200, self._session_payload(info, state))

    def _own_session(
        self, request: FaceRequest, params: dict[str, str]
    ) -> tuple[ScaleSetInfo, _SessionState] | None:
        info = self._scale_set(request, params)
        if info is None:
            return None
        with self.face._lock:
            state = self.face._state.sessions.get(info.id)
        if state is None or state.session_id != params["session_id"]:
            self._error(
                request,
                404,
                "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionNotFoundException",
                f"session {params['session_id']} not found",
            )
            return None
        return info, state

    def _route_refresh_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        found = self._own_session(request, params)
        if found is None:
            return
        info, state = found
        with self.face._lock:
            state.queue_token = self.face._issue("mq-")
            state.queue_token_expired = False
        self._json(request, 200, self._session_payload(info, state))

    def _route_delete_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        found = self._own_session(request, params)
        if found is None:
            return
        with self.face._lock:
            self.face._state.sessions.pop(found[0].id, None)
        self._answer(request, 204)

    # --- Actions service: message queue ---

    def _queue_session(self, request: FaceRequest) -> _SessionState | None:
        session_id = (request.query.get("sessionId") or [""])[0]
        token = self._bearer()
        with self.face._lock:
            state = next(
                (s for s in self.face._state.sessions.values() if s.session_id == session_id),
                None,
            )
            valid = (
                state is not None and token == state.queue_token and not (state.queue_token_expired)
            )
        if not valid:
            self._error(request, 401, "UnauthorizedException", "queue token invalid or expired")
            return None
        return state

    def _route_get_message(self, request: FaceRequest, params: dict[str, str]) -> None:
        state = self._queue_session(request)
        if state is None:
            return
        capacity = request.capacity
        if capacity is None or capacity < 0:
            self._error(request, 400, "ArgumentException", "X-ScaleSetMaxCapacity is required")
            return
        last = int((request.query.get("lastMessageId") or ["0"])[0] or 0)
        face = self.face
        deadline = time.monotonic() + face.poll_window
        for _ in range(int(face.poll_window / face.poll_interval) + 2):  # bounded long poll
            stored = self._first_unacked(state.scale_set_id, last)
            if stored is None:
                self._pack(state.scale_set_id, face.feed.poll(state.scale_set_id, capacity))
                stored = self._first_unacked(state.scale_set_id, last)
            if stored is not None:
                request.message_id = stored.message_id
                if face.message_delay:
                    face._closing.wait(face.message_delay)
                if self._client_gone():
                    face._finish(request, None, "client-gone")
                    self.close_connection = True
                    return
                with face._lock:
                    face._delivered.append(stored.message_id)
                self._answer(request, 200, stored.payload)
                if request.outcome == "client-gone":
                    with face._lock:
                        face._delivered.reverse()
                        face._delivered.remove(stored.message_id)
                        face._delivered.reverse()
                return
            if face._closing.is_set():
                face._finish(request, None, "face-closed")
                self.close_connection = True
                return
            if time.monotonic() >= deadline:
                break
            if self._client_gone():
                face._finish(request, None, "client-gone")
                self.close_connection = True
                return
            face._closing.wait(min(face.poll_interval, max(0.0, deadline - time.monotonic())))
        self._answer(request, 202)

    def _first_unacked(self, scale_set_id: int, last: int) -> _Stored | None:
        with self.face._lock:
            queue = self.face._state.queues.get(scale_set_id, [])
            return next((m for m in queue if m.message_id > last), None)

    def _pack(self, scale_set_id: int, jobs: list[dict[str, Any]]) -> None:
        if not jobs:
            return
        face = self.face
        with face._lock:
            for start in range(0, len(jobs), MAX_JOBS_PER_MESSAGE):
                chunk = jobs[start : start + MAX_JOBS_PER_MESSAGE]
                message_id = face._state.next_message_id
                face._state.next_message_id += 1
                outer = {
                    "messageId": message_id,
                    "messageType": "RunnerScaleSetJobMessages",
                    "statistics": face.feed.statistics(scale_set_id),
                    "body": json.dumps(chunk),
                }
                face._state.queues.setdefault(scale_set_id, []).append(
                    _Stored(message_id, json.dumps(outer).encode())
                )
            face._changed.notify_all()

    def _route_delete_message(self, request: FaceRequest, params: dict[str, str]) -> None:
        state = self._queue_session(request)
        if state is None:
            return
        message_id = int(params["message_id"])
        with self.face._changed:
            queue = self.face._state.queues.get(state.scale_set_id, [])
            self.face._state.queues[state.scale_set_id] = [
                m for m in queue if m.message_id != message_id
            ]
            self.face._changed.notify_all()
        self._answer(request, 204)

    def _route_acquire_jobs(self, request: FaceRequest, params: dict[str, str]) -> None:
        scale_set_id = int(params["scale_set_id"])
        token = self._bearer()
        with self.face._lock:
            state = self.face._state.sessions.get(scale_set_id)
            valid = (
                state is not None and token == state.queue_token and not (state.queue_token_expired)
            )
        if not valid:
            self._error(request, 401, "UnauthorizedException", "queue token invalid or expired")
            return
        ids = request.json()
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            self._error(request, 400, "ArgumentException", "body must be a JSON array of ints")
            return
        acquired = self.face.feed.acquire(scale_set_id, ids)
        self._json(request, 200, {"count": len(acquired), "value": acquired})


def generate_rsa_key_pem() -> tuple[str, str]:
    """A fresh RSA-2048 key pair as (private PKCS#8 PEM, public PEM), for App-auth tests."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


__all__ = [
    "FIRST_MESSAGE_ID",
    "MAX_JOBS_PER_MESSAGE",
    "ActionsFace",
    "AppIdentity",
    "FaceRequest",
    "Fault",
    "JobFeed",
    "ScaleSetInfo",
    "ScriptedJob",
    "ScriptedJobFeed",
    "generate_rsa_key_pem",
    "wire_time",
]
