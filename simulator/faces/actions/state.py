"""Constants, fault answers and the records of the Actions face."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


MAX_JOBS_PER_MESSAGE = 50
FIRST_MESSAGE_ID = 100_000_170
_CONFLICT_TYPE = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException"
#: The first id the face gives a runner it registers (generatejitconfig); ids only grow.
FIRST_RUNNER_ID = 1001
#: The runner group every scale set lands in unless the body names another one.
DEFAULT_RUNNER_GROUP_ID = 1
_SCALE_SET_NOT_FOUND_TYPE = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException"
_SCALE_SET_EXISTS_TYPE = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetExistsException"
_RUNNER_GROUP_NOT_FOUND_TYPE = "GitHub.Actions.Runtime.WebApi.RunnerGroupNotFoundException"
_AGENT_NOT_FOUND_TYPE = "GitHub.DistributedTask.WebApi.AgentNotFoundException"
_AGENT_EXISTS_TYPE = "GitHub.DistributedTask.WebApi.AgentExistsException"
_JOB_STILL_RUNNING_TYPE = "GitHub.DistributedTask.WebApi.JobStillRunningException"
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
    """A scale set the face knows: given to the constructor or registered over HTTP (create)."""

    id: int = 42
    name: str = "arc-runners"
    labels: tuple[str, ...] = ("arc-runners",)
    runner_group_id: int = DEFAULT_RUNNER_GROUP_ID
    runner_group_name: str = "Default"
    disable_update: bool = True
    #: Face clock time of the create call; None (Go's zero time) for constructor scale sets.
    created_on: float | None = None


@dataclass(frozen=True, slots=True)
class RunnerInfo:
    """A runner registered by generatejitconfig, as the harness and GetRunner see it."""

    id: int
    name: str
    scale_set_id: int


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
    #: Scale set ids handed out by create; the face starts it past the constructor's ids.
    next_scale_set_id: int = 1
    runners: dict[int, RunnerInfo] = field(default_factory=dict)
    next_runner_id: int = FIRST_RUNNER_ID
    #: Runners with a job running: removing one answers JobStillRunningException.
    busy_runners: set[int] = field(default_factory=set)
