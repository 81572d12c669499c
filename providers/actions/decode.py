"""The GetMessage decoder: a 200 body in, a :class:`DecodedMessage` out.

:func:`decode_message` strips a UTF-8 BOM, checks the outer ``messageType``, decodes the
``body`` JSON *string* a second time and dispatches each element on its ``messageType``
(providers/actions/models.py); unknown types are skipped (logged at debug). Every failure is a
typed :class:`~providers.actions.errors.MessageDecodeError` that names the field without
echoing its value, with the message id whenever it can be read, so the caller can ack and skip
a poison message instead of wedging on it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from providers.actions.errors import MessageDecodeError
from providers.actions.models import (
    JOB_MESSAGE_TYPES,
    JOB_MESSAGES_TYPE,
    JobMessage,
    RunnerScaleSetMessage,
    Statistics,
)

log = logging.getLogger(__name__)

_BOM = b"\xef\xbb\xbf"
#: Finds the outer message id in a body that cannot be decoded as a whole (to ack it).
_MESSAGE_ID = re.compile(rb'"messageId"\s*:\s*(\d{1,18})')

_J = TypeVar("_J", bound=JobMessage)


@dataclass(frozen=True, slots=True)
class DecodedMessage:
    """One outer message with its job messages decoded, in order, unknown types dropped."""

    message: RunnerScaleSetMessage
    statistics: Statistics
    jobs: tuple[JobMessage, ...]
    skipped_types: tuple[str, ...] = ()

    @property
    def message_id(self) -> int:
        return self.message.message_id

    def of_type(self, kind: type[_J]) -> list[_J]:
        return [job for job in self.jobs if type(job) is kind]


def strip_bom(raw: bytes) -> bytes:
    return raw[len(_BOM) :] if raw.startswith(_BOM) else raw


def decode_json(raw: bytes, *, what: str) -> Any:
    """JSON-decode a response body after stripping a UTF-8 BOM; errors name ``what``."""
    try:
        return json.loads(strip_bom(raw).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MessageDecodeError(f"{what}: body is not valid JSON ({exc})") from None
    except RecursionError:
        raise MessageDecodeError(f"{what}: JSON nested too deeply") from None


def find_message_id(raw: bytes) -> int | None:
    """The outer ``messageId`` of a body that cannot be decoded whole (None if absent)."""
    match = _MESSAGE_ID.search(raw)
    return int(match.group(1)) if match else None


def decode_message(raw: bytes) -> DecodedMessage:
    """Decode a GetMessage 200 body (the caller treats an empty body as "no message").

    Any failure is a :class:`MessageDecodeError`; its ``message_id`` is set whenever the
    id can be read, so the caller can ack and skip the message (never wedge on it)."""
    try:
        return _decode_message(raw)
    except MessageDecodeError as exc:
        if exc.message_id is None:
            exc.message_id = find_message_id(raw[:65536])
        raise
    except RecursionError:
        raise MessageDecodeError(
            "get message: nested too deeply", message_id=find_message_id(raw[:65536])
        ) from None


def _decode_message(raw: bytes) -> DecodedMessage:
    data = decode_json(raw, what="get message")
    try:
        message = RunnerScaleSetMessage.model_validate(data)
    except ValidationError as exc:
        raise MessageDecodeError(f"get message: {_first_error(exc)}") from None
    mid = message.message_id
    if message.message_type != JOB_MESSAGES_TYPE:
        raise MessageDecodeError(
            f"message {mid}: unexpected messageType "
            f"{message.message_type[:60]!r}; expected {JOB_MESSAGES_TYPE!r}",
            message_id=mid,
        )
    if message.statistics is None:
        raise MessageDecodeError(f"message {mid}: statistics missing", message_id=mid)
    try:
        jobs = decode_job_messages(message)
    except MessageDecodeError as exc:
        exc.message_id = mid
        raise
    return DecodedMessage(message, message.statistics, *jobs)


def decode_job_messages(
    message: RunnerScaleSetMessage,
) -> tuple[tuple[JobMessage, ...], tuple[str, ...]]:
    """Decode the ``body`` string: a JSON array of job messages (empty/``null`` = none)."""
    if not message.body.strip():
        return (), ()
    try:
        elements = json.loads(message.body)
    except json.JSONDecodeError as exc:
        raise MessageDecodeError(
            f"message {message.message_id}: body is not a JSON array ({exc})"
        ) from None
    except RecursionError:
        raise MessageDecodeError(f"message {message.message_id}: body nested too deeply") from None
    if elements is None:
        return (), ()
    if not isinstance(elements, list):
        raise MessageDecodeError(
            f"message {message.message_id}: body is a JSON {type(elements).__name__}, "
            "expected an array of job messages"
        )
    jobs: list[JobMessage] = []
    skipped: list[str] = []
    for index, element in enumerate(elements):
        where = f"message {message.message_id}: job message {index}"
        if not isinstance(element, dict):
            raise MessageDecodeError(f"{where}: expected an object, got {type(element).__name__}")
        kind = element.get("messageType")
        model = JOB_MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            log.debug("%s: skipping unknown messageType %r", where, str(kind)[:60])
            skipped.append(str(kind))
            continue
        try:
            jobs.append(model.model_validate(element))
        except ValidationError as exc:
            raise MessageDecodeError(f"{where} ({kind}): {_first_error(exc)}") from None
    return tuple(jobs), tuple(skipped)


def _first_error(exc: ValidationError) -> str:
    """One line naming the field and the problem, without echoing the input value."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "<document>"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
