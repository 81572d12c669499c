"""pydantic models of every wire object of the scale-set protocol (docs/protocol.md); the
GetMessage decoder is providers/actions/decode.py.

Field names are the service's camelCase JSON keys (``RunnerSetting`` keeps its capital R).
Models are strict like Go's ``encoding/json``: a string where an int is expected is an error,
not a coercion. Missing fields take Go's zero values, because the Go client accepts them, and
so does ``null`` (Go leaves a non-pointer field untouched on ``null``). A timestamp without a
zone (``0001-01-01T00:00:00``, what .NET writes for an unset DateTime) is read as UTC.
Nesting deeper than Python's JSON decoder can follow is a typed :class:`MessageDecodeError`.

Timestamps are RFC 3339 strings with up to 9 fractional digits (the service sends 7);
unset times are Go's zero time ``0001-01-01T00:00:00Z`` (:data:`ZERO_TIME`), kept as a value
rather than ``None`` so that code ported from Go can compare against it (see :func:`is_zero_time`).

Tokens are :class:`pydantic.SecretStr` so a ``repr`` of a session never shows them.
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated, Any, Final

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from providers.actions.errors import MessageDecodeError

log = logging.getLogger(__name__)

#: Go's zero ``time.Time`` as the service serializes it.
ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)
NIL_SESSION_ID: Final = "00000000-0000-0000-0000-000000000000"
#: The only outer ``messageType`` the listener accepts.
JOB_MESSAGES_TYPE: Final = "RunnerScaleSetJobMessages"
#: The service packs at most this many job messages into one outer message.
MAX_JOB_MESSAGES_PER_MESSAGE: Final = 50

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?$"
)


def parse_rfc3339(value: Any) -> Any:
    """Parse an RFC 3339 timestamp with up to 9 fractional digits (truncated to microseconds).

    Non-strings are handed on unchanged so pydantic reports them as a type error.
    """
    if not isinstance(value, str):
        return value
    match = _RFC3339.match(value)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {value[:40]!r}")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    micros = int((match.group(7) or "0")[:6].ljust(6, "0"))
    if match.group(8) or not match.group(9):
        tz: timezone = UTC  # "Z", or no zone at all (lenient: .NET's unset DateTime)
    else:
        sign = 1 if match.group(9) == "+" else -1
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        tz = timezone(sign * offset)
    return datetime(year, month, day, hour, minute, second, micros, tzinfo=tz)


def is_zero_time(value: datetime) -> bool:
    """True for Go's zero time (an unset timestamp on the wire)."""
    return value == ZERO_TIME


def format_rfc3339(value: datetime) -> str:
    """Format like Go's ``time.RFC3339Nano`` for UTC values (trailing zeros dropped)."""
    value = value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.year < 1000:  # strftime does not zero-pad the year on every platform
        text = f"{value.year:04d}" + text[text.index("-") :]
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


WireTime = Annotated[datetime, BeforeValidator(parse_rfc3339)]


def _uuid_string(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValueError(f"not a UUID: {value[:40]!r}") from None


UuidString = Annotated[str, BeforeValidator(_uuid_string)]


class WireModel(BaseModel):
    """Base of all wire models: camelCase aliases, strict types, unknown keys ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        frozen=True,
        extra="ignore",
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_zero(cls, data: Any) -> Any:
        """Go's ``encoding/json``: ``null`` leaves a field at its zero value."""
        if isinstance(data, dict) and any(v is None for v in data.values()):
            return {k: v for k, v in data.items() if v is not None}
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with the service's key names (secrets revealed: wire use only)."""
        return self.model_dump(mode="json", by_alias=True, context={"reveal": True})


def _secret_out(value: SecretStr, info: Any) -> str:
    context = info.context or {}
    return value.get_secret_value() if context.get("reveal") else str(value)


# --- Statistics and scale set (docs/protocol.md#statistics) ---------------------------------------


class Statistics(WireModel):
    """``RunnerScaleSetStatistic``. Scaling uses ``total_assigned_jobs`` only."""

    total_available_jobs: int = 0
    total_acquired_jobs: int = 0
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


class Label(WireModel):
    type: str = "System"
    name: str = ""


class RunnerSetting(WireModel):
    disable_update: bool = False


class RunnerScaleSet(WireModel):
    id: int = 0
    name: str = ""
    runner_group_id: int = 0
    runner_group_name: str = ""
    labels: list[Label] = Field(default_factory=list)
    runner_setting: RunnerSetting | None = Field(default=None, alias="RunnerSetting")
    created_on: WireTime | None = None
    runner_jit_config_url: str = ""
    statistics: Statistics | None = None

    @property
    def label_names(self) -> tuple[str, ...]:
        """The labels jobs target (the scale set name when it was created without labels)."""
        names = tuple(label.name for label in self.labels if label.name)
        return names or ((self.name,) if self.name else ())


# --- Sessions (docs/protocol.md#session-object) ---------------------------------------------------


class CreateSessionRequest(WireModel):
    """Body of create-session: the zero UUID is serialized, as the Go client does."""

    session_id: str = NIL_SESSION_ID
    owner_name: str


class Session(WireModel):
    session_id: UuidString = NIL_SESSION_ID
    owner_name: str = ""
    runner_scale_set: RunnerScaleSet | None = None
    message_queue_url: str = ""
    message_queue_access_token: SecretStr = SecretStr("")
    statistics: Statistics | None = None

    @field_serializer("message_queue_access_token")
    def _reveal(self, value: SecretStr, info: Any) -> str:
        return _secret_out(value, info)

    @property
    def is_nil(self) -> bool:
        return self.session_id == NIL_SESSION_ID


# --- Auth chain (docs/protocol.md#authentication) -------------------------------------------------


class TokenResponse(WireModel):
    """Registration token and App installation token responses (only ``token`` is used)."""

    model_config = ConfigDict(alias_generator=None)

    token: SecretStr
    expires_at: str = ""

    @field_serializer("token")
    def _reveal(self, value: SecretStr, info: Any) -> str:
        return _secret_out(value, info)


class RunnerRegistrationRequest(WireModel):
    model_config = ConfigDict(alias_generator=None)

    url: str
    runner_event: str = "register"


class AdminConnection(WireModel):
    """Response of ``actions/runner-registration``: the Actions service URL and admin token."""

    url: str = ""
    token: SecretStr = SecretStr("")

    @field_serializer("token")
    def _reveal(self, value: SecretStr, info: Any) -> str:
        return _secret_out(value, info)


class ErrorBody(WireModel):
    """Actions-service error document ``{"typeName", "message"}`` (docs/protocol.md#errors)."""

    model_config = ConfigDict(strict=False)

    type_name: str = ""
    message: str = ""


class AcquireJobsResponse(WireModel):
    count: int = 0
    value: list[int] = Field(default_factory=list)


# --- Messages (docs/protocol.md#messages) ---------------------------------------------------------


class RunnerScaleSetMessage(WireModel):
    """The outer message of a GetMessage 200: ``body`` is a JSON *string*."""

    message_id: int
    message_type: str = ""
    body: str = ""
    statistics: Statistics | None = None


class JobMessage(WireModel):
    """Fields common to every job message."""

    message_type: str
    runner_request_id: int = 0
    repository_name: str = ""
    owner_name: str = ""
    job_id: str = ""
    job_workflow_ref: str = ""
    job_display_name: str = ""
    workflow_run_id: int = 0
    event_name: str = ""
    request_labels: list[str] = Field(default_factory=list)
    queue_time: WireTime = ZERO_TIME
    scale_set_assign_time: WireTime = ZERO_TIME
    runner_assign_time: WireTime = ZERO_TIME
    finish_time: WireTime = ZERO_TIME


class JobAvailable(JobMessage):
    acquire_job_url: str = ""


class JobAssigned(JobMessage):
    pass


class JobStarted(JobMessage):
    runner_id: int = 0
    runner_name: str = ""


class JobCompleted(JobMessage):
    result: str = ""
    runner_id: int = 0
    runner_name: str = ""


JOB_MESSAGE_TYPES: Final[dict[str, type[JobMessage]]] = {
    "JobAvailable": JobAvailable,
    "JobAssigned": JobAssigned,
    "JobStarted": JobStarted,
    "JobCompleted": JobCompleted,
}


__all__ = [
    "JOB_MESSAGES_TYPE",
    "JOB_MESSAGE_TYPES",
    "MAX_JOB_MESSAGES_PER_MESSAGE",
    "NIL_SESSION_ID",
    "ZERO_TIME",
    "AcquireJobsResponse",
    "AdminConnection",
    "CreateSessionRequest",
    "ErrorBody",
    "JobAssigned",
    "JobAvailable",
    "JobCompleted",
    "JobMessage",
    "JobStarted",
    "Label",
    "MessageDecodeError",
    "RunnerRegistrationRequest",
    "RunnerScaleSet",
    "RunnerScaleSetMessage",
    "RunnerSetting",
    "Session",
    "Statistics",
    "TokenResponse",
    "WireModel",
    "format_rfc3339",
    "is_zero_time",
    "parse_rfc3339",
]
