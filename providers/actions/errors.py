"""Typed errors of the Actions client. Their text never contains a token, PAT or key.

URLs in messages are shown without their query string: a message-queue URL may carry a
session id, and nothing in a query is needed to understand a failure.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def describe_url(url: str) -> str:
    """``scheme://host/path`` without userinfo or query, for error and log text."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


class ActionsError(Exception):
    """Base of every error raised by providers.actions."""


class MessageDecodeError(ActionsError, ValueError):
    """A response body could not be decoded; the message says which part and why.

    ``message_id`` is set when the outer message's id could still be read: the listener then
    acks and skips the message instead of failing on it forever (a poison message)."""

    def __init__(self, text: str, *, message_id: int | None = None) -> None:
        super().__init__(text)
        self.message_id = message_id


class ResponseTooLargeError(ActionsError):
    """A response body exceeded the size cap; reading stopped there. ``prefix`` holds its
    first bytes (never shown in the message)."""

    def __init__(self, what: str, *, method: str, url: str, limit: int, prefix: bytes) -> None:
        self.what = what
        self.limit = limit
        self.prefix = prefix
        super().__init__(
            f"{what}: {method} {describe_url(url)}: response body larger than {limit} bytes"
        )


class AuthError(ActionsError):
    """A step of the admin-token chain (App JWT, installation token, registration token,
    runner-registration) failed. The previously held token, if any, is kept."""

    def __init__(self, step: str, reason: str, *, status: int | None = None) -> None:
        self.step = step
        self.reason = reason
        self.status = status
        where = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{step}: {where}{reason}")


class ActionsHttpError(ActionsError):
    """The service answered with a status the call does not accept (after retries)."""

    def __init__(
        self,
        what: str,
        *,
        method: str,
        url: str,
        status: int,
        type_name: str = "",
        message: str = "",
        activity_id: str = "",
        request_id: str = "",
    ) -> None:
        self.what = what
        self.method = method
        self.url = describe_url(url)
        self.status = status
        self.type_name = type_name
        self.message = message
        self.activity_id = activity_id
        self.request_id = request_id
        detail = f"{type_name}: {message}" if type_name else message
        ids = ", ".join(
            f"{name} {value}"
            for name, value in (("ActivityId", activity_id), ("X-GitHub-Request-Id", request_id))
            if value
        )
        text = f"{what}: {method} {self.url}: HTTP {status}"
        if detail:
            text += f": {detail}"
        if ids:
            text += f" ({ids})"
        super().__init__(text)


class QueueTokenExpiredError(ActionsHttpError):
    """401 on a message-queue call: the session's queue token expired (refresh the session)."""


class SessionConflictError(ActionsError):
    """Another session holds the scale set and it did not go away within the bounded wait."""

    def __init__(self, scale_set_id: int, attempts: int, waited: float, last: ActionsHttpError):
        self.scale_set_id = scale_set_id
        self.attempts = attempts
        self.waited = waited
        self.last = last
        super().__init__(
            f"create session: runner scale set {scale_set_id} already has an active session "
            f"(another listener, or one left behind by a crashed pod until the service expires "
            f"it); gave up after {attempts} attempts over {waited:.0f} s. Last answer: "
            f"{last.type_name or 'HTTP 409'}: {last.message or '(no message)'}"
        )


class RetriesExhaustedError(ActionsError):
    """Every attempt of a retryable call failed ("giving up after N attempts",
    docs/protocol.md#retries)."""

    def __init__(
        self,
        what: str,
        *,
        method: str,
        url: str,
        attempts: int,
        last_status: int | None = None,
        last_error: str = "",
    ) -> None:
        self.what = what
        self.method = method
        self.url = describe_url(url)
        self.attempts = attempts
        self.last_status = last_status
        self.last_error = last_error
        last = f"HTTP {last_status}" if last_status is not None else last_error
        super().__init__(
            f"{what}: {method} {self.url} giving up after {attempts} attempt(s): {last}"
        )


class TransportError(ActionsError):
    """A transport failure that is not retried (TLS certificate, bad scheme, bad header)."""

    def __init__(self, what: str, *, method: str, url: str, reason: str) -> None:
        self.what = what
        self.method = method
        self.url = describe_url(url)
        self.reason = reason
        super().__init__(f"{what}: {method} {self.url}: {reason}")


__all__ = [
    "ActionsError",
    "ActionsHttpError",
    "AuthError",
    "MessageDecodeError",
    "QueueTokenExpiredError",
    "RetriesExhaustedError",
    "SessionConflictError",
    "TransportError",
    "describe_url",
]
