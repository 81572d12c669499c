"""The retry policy of the Actions HTTP client (docs/protocol.md#retries, hashicorp retryablehttp
v0.7.8).

1. Up to ``max_retries + 1`` attempts (default 5).
2. Retried: transport errors (not TLS certificate errors, unsupported schemes, invalid
   headers or too many redirects), 429, and 5xx except 501; plus ``extra_statuses``
   (runner-registration also retries 401/403 while a new token propagates).
3. Wait ``wait_min * 2**attempt`` capped at ``wait_max`` (1, 2, 4, 8 s); for 429 and 503 a
   ``Retry-After`` header (seconds or an HTTP date) replaces the backoff. Unlike the Go client
   we cap Retry-After at ``retry_after_cap`` so a broken header cannot park the listener.
4. Everything else is returned to the caller at once. Cancellation stops the retries.
5. Every attempt has a **total deadline** (``attempt_deadline``, Go's ``http.Client.Timeout``:
   connect, headers and the whole body), so a slow-drip answer cannot hold a long poll past
   it (it counts as a transport timeout and is retried), and a **body cap**
   (``max_body_bytes``): a longer answer is cut off and raises
   :class:`~providers.actions.errors.ResponseTooLargeError` (not retried) with its first bytes.

``sleep`` and ``clock`` are injected so tests never wait for real.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import httpx

from providers.actions.errors import (
    ResponseTooLargeError,
    RetriesExhaustedError,
    TransportError,
    describe_url,
)
from providers.backoff import Backoff
from reconciler.clock import Clock

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

#: Largest response body read (a job message batch is a few hundred kB at most; a 64 MB body
#: would peak near 300 MiB decoded, over the chart's 256 Mi memory limit).
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
#: Total time of one attempt, body included (Go's ``http.Client.Timeout``).
ATTEMPT_DEADLINE = 300.0
#: Bytes of an over-long body kept for the error (enough to find a ``messageId``).
PREFIX_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 4
    wait_min: float = 1.0
    wait_max: float = 30.0
    retry_after_cap: float = 300.0
    extra_statuses: frozenset[int] = field(default_factory=frozenset)
    attempt_deadline: float = ATTEMPT_DEADLINE
    max_body_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.wait_min < 0 or self.wait_max < self.wait_min:
            raise ValueError(
                f"RetryPolicy needs max_retries >= 0 and 0 <= wait_min <= wait_max, got {self}"
            )
        if self.attempt_deadline <= 0 or self.max_body_bytes <= 0:
            raise ValueError(
                f"RetryPolicy needs attempt_deadline > 0 and max_body_bytes > 0, got {self}"
            )

    def also_retrying(self, *statuses: int) -> RetryPolicy:
        return RetryPolicy(
            self.max_retries,
            self.wait_min,
            self.wait_max,
            self.retry_after_cap,
            self.extra_statuses | frozenset(statuses),
            self.attempt_deadline,
            self.max_body_bytes,
        )


#: Called with :func:`failure_kind` of every failed attempt (for the metrics).
FailureObserver = Callable[[str], None]


def failure_kind(status: int | None) -> str:
    """The bounded metrics label of a failed attempt; ``None`` = no answer (transport)."""
    if status is None or status == 0:
        return "transport"
    named = {429: "throttled", 409: "conflict", 401: "unauthorized"}
    if status in named:
        return named[status]
    if 500 <= status <= 599:
        return "server"
    return "client" if 400 <= status <= 499 else "other"


def is_retryable_status(status: int, policy: RetryPolicy) -> bool:
    if status in policy.extra_statuses:
        return True
    return status in (0, 429) or (500 <= status <= 599 and status != 501)


def non_retryable_transport_reason(exc: Exception) -> str | None:
    """Why a transport error must not be retried, or None when it should be."""
    if isinstance(exc, httpx.UnsupportedProtocol):
        return "unsupported protocol scheme"
    if isinstance(exc, httpx.LocalProtocolError):
        return "invalid request (header or protocol)"
    if isinstance(exc, httpx.TooManyRedirects):
        return "too many redirects"
    cause: BaseException | None = exc
    for _ in range(10):  # bounded walk along the cause chain
        if cause is None:
            break
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = getattr(cause, "verify_message", "") or "untrusted certificate"
            return f"TLS certificate verification failed ({detail})"
        cause = cause.__cause__ or cause.__context__
    if "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return "TLS certificate verification failed"
    return None


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta seconds or HTTP date), or None."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    if text.startswith("-") and text[1:].isdigit():
        return None  # the Go client ignores a negative delay and falls back to backoff
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def backoff_delay(
    policy: RetryPolicy,
    attempt: int,
    *,
    status: int | None = None,
    retry_after: str | None = None,
    now: float = 0.0,
) -> float:
    """How long to wait after failed attempt number ``attempt`` (0-based)."""
    if status in (429, 503):
        hinted = parse_retry_after(retry_after, now=now)
        if hinted is not None:
            return min(hinted, policy.retry_after_cap)
    return Backoff(policy.wait_min, policy.wait_max).delay(attempt)


async def send_with_retry(
    client: httpx.AsyncClient,
    build: Callable[[], httpx.Request],
    *,
    what: str,
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    clock: Clock,
    on_failure: FailureObserver | None = None,
) -> httpx.Response:
    """Send ``build()`` (rebuilt per attempt, so bodies replay) under ``policy``.

    Returns the first response that is not retryable (any status: the caller judges it).
    Raises :class:`RetriesExhaustedError` when the last attempt was still retryable and
    :class:`TransportError` for a transport failure that must not be retried.
    ``on_failure`` hears every transport failure and retryable status (the caller judges
    what is returned).
    """
    attempts = policy.max_retries + 1
    for attempt in range(attempts):
        request = build()
        try:
            response = await send_bounded(client, request, policy, what=what)
        except httpx.HTTPError as exc:
            if on_failure is not None:
                on_failure(failure_kind(None))
            reason = non_retryable_transport_reason(exc)
            if reason is not None:
                raise TransportError(
                    what, method=request.method, url=str(request.url), reason=reason
                ) from None
            error_text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if attempt + 1 >= attempts:
                raise RetriesExhaustedError(
                    what,
                    method=request.method,
                    url=str(request.url),
                    attempts=attempts,
                    last_error=error_text,
                ) from None
            delay = backoff_delay(policy, attempt)
            log.warning(
                "%s: %s %s failed (%s); retrying in %.2fs (attempt %d/%d)",
                what,
                request.method,
                describe_url(str(request.url)),
                error_text,
                delay,
                attempt + 1,
                attempts,
            )
            await sleep(delay)
            continue
        if not is_retryable_status(response.status_code, policy):
            return response
        if on_failure is not None:
            on_failure(failure_kind(response.status_code))
        await response.aclose()
        if attempt + 1 >= attempts:
            raise RetriesExhaustedError(
                what,
                method=request.method,
                url=str(request.url),
                attempts=attempts,
                last_status=response.status_code,
            )
        delay = backoff_delay(
            policy,
            attempt,
            status=response.status_code,
            retry_after=response.headers.get("Retry-After"),
            now=clock.now(),
        )
        log.warning(
            "%s: %s %s answered HTTP %d; retrying in %.2fs (attempt %d/%d)",
            what,
            request.method,
            describe_url(str(request.url)),
            response.status_code,
            delay,
            attempt + 1,
            attempts,
        )
        await sleep(delay)
    raise RuntimeError("unreachable: every attempt returns, retries or raises")


async def send_bounded(
    client: httpx.AsyncClient, request: httpx.Request, policy: RetryPolicy, *, what: str
) -> httpx.Response:
    """One attempt under the total deadline, its body read up to the cap (rule 5)."""
    try:
        async with asyncio.timeout(policy.attempt_deadline):
            response = await client.send(request, stream=True)
            try:
                body = await _read_capped(response, policy.max_body_bytes, what=what)
            finally:
                await response.aclose()
    except TimeoutError:
        raise httpx.ReadTimeout(
            f"no complete answer within the {policy.attempt_deadline:.0f}s deadline",
            request=request,
        ) from None
    # The body is already decoded (gzip...): the copy must not claim an encoding.
    headers = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(response.status_code, headers=headers, content=body, request=request)


async def _read_capped(response: httpx.Response, limit: int, *, what: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            chunks.append(chunk)
            prefix = b"".join(chunks)[:PREFIX_BYTES]
            raise ResponseTooLargeError(
                what,
                method=response.request.method,
                url=str(response.request.url),
                limit=limit,
                prefix=prefix,
            )
        chunks.append(chunk)
    return b"".join(chunks)


__all__ = [
    "ATTEMPT_DEADLINE",
    "MAX_RESPONSE_BYTES",
    "RetryPolicy",
    "Sleep",
    "backoff_delay",
    "is_retryable_status",
    "non_retryable_transport_reason",
    "parse_retry_after",
    "send_bounded",
    "send_with_retry",
]
