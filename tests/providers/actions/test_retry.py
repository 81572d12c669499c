"""The retry policy of docs/protocol.md#retries, as a pure function and around a mock transport."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from providers.actions.errors import RetriesExhaustedError, TransportError
from providers.actions.retry import (
    RetryPolicy,
    backoff_delay,
    is_retryable_status,
    parse_retry_after,
    send_with_retry,
)
from reconciler.clock import ManualClock
from tests.providers.actions.conftest import SleepRecorder, run

NOW = datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC).timestamp()
POLICY = RetryPolicy()


class TestWhatIsRetried:
    @pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
    def test_throttling_and_server_errors(self, status: int) -> None:
        assert is_retryable_status(status, POLICY)

    @pytest.mark.parametrize("status", [200, 202, 204, 400, 401, 403, 404, 409, 501])
    def test_not_other_statuses(self, status: int) -> None:
        assert not is_retryable_status(status, POLICY)

    def test_runner_registration_also_retries_401_and_403(self) -> None:
        policy = POLICY.also_retrying(401, 403)
        assert is_retryable_status(401, policy) and is_retryable_status(403, policy)
        assert not is_retryable_status(404, policy)


class TestDelays:
    def test_exponential_backoff_1_2_4_8_capped_at_30(self) -> None:
        assert [backoff_delay(POLICY, n) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]

    def test_retry_after_seconds_override_backoff_for_429_and_503(self) -> None:
        assert backoff_delay(POLICY, 0, status=429, retry_after="7", now=NOW) == 7
        assert backoff_delay(POLICY, 3, status=503, retry_after="0", now=NOW) == 0

    def test_retry_after_is_ignored_for_other_statuses(self) -> None:
        assert backoff_delay(POLICY, 1, status=500, retry_after="7", now=NOW) == 2

    def test_retry_after_http_date(self) -> None:
        later = format_datetime(datetime(2026, 5, 1, 10, 0, 12, tzinfo=UTC), usegmt=True)
        assert parse_retry_after(later, now=NOW) == 12
        assert backoff_delay(POLICY, 0, status=429, retry_after=later, now=NOW) == 12

    def test_retry_after_in_the_past_means_now(self) -> None:
        earlier = format_datetime(datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC), usegmt=True)
        assert parse_retry_after(earlier, now=NOW) == 0

    @pytest.mark.parametrize("value", ["-5", "soon", "", None])
    def test_unusable_retry_after_falls_back_to_backoff(self, value: str | None) -> None:
        assert backoff_delay(POLICY, 2, status=429, retry_after=value, now=NOW) == 4

    def test_a_huge_retry_after_is_capped(self) -> None:
        assert backoff_delay(POLICY, 0, status=429, retry_after="999999", now=NOW) == 300

    def test_policy_rejects_nonsense(self) -> None:
        with pytest.raises(ValueError, match="max_retries"):
            RetryPolicy(max_retries=-1)


def scripted(
    *answers: int | Exception, headers: dict[str, str] | None = None
) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """A client whose transport plays ``answers`` in order and records the requests."""
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer, headers=headers or {}, content=b"{}")

    return httpx.AsyncClient(transport=httpx.MockTransport(handle)), seen


def send(client: httpx.AsyncClient, sleeps: SleepRecorder, body: bytes = b"") -> httpx.Response:
    async def go() -> httpx.Response:
        async with client:
            return await send_with_retry(
                client,
                lambda: client.build_request("POST", "http://svc.test/x?q=1", content=body),
                what="test call",
                policy=POLICY,
                sleep=sleeps,
                clock=ManualClock(NOW),
            )

    return run(go())


class TestSendWithRetry:
    def test_retries_5xx_then_returns_the_success(self, sleeps: SleepRecorder) -> None:
        client, seen = scripted(503, 500, 200)
        assert send(client, sleeps, b"[1,2]").status_code == 200
        assert len(seen) == 3
        assert all(r.content == b"[1,2]" for r in seen)  # the body is replayed
        assert sleeps.delays == [1, 2]

    def test_429_waits_retry_after(self, sleeps: SleepRecorder) -> None:
        client, _ = scripted(429, 200, headers={"Retry-After": "3"})
        assert send(client, sleeps).status_code == 200
        assert sleeps.delays == [3]

    def test_gives_up_after_five_attempts(self, sleeps: SleepRecorder) -> None:
        client, seen = scripted(502, 502, 502, 502, 502)
        with pytest.raises(RetriesExhaustedError, match="giving up after 5 attempt") as info:
            send(client, sleeps)
        assert info.value.last_status == 502
        assert len(seen) == 5 and sleeps.delays == [1, 2, 4, 8]
        assert "q=1" not in str(info.value)  # no query string in error text

    def test_4xx_is_returned_at_once(self, sleeps: SleepRecorder) -> None:
        client, seen = scripted(409)
        assert send(client, sleeps).status_code == 409
        assert len(seen) == 1 and sleeps.delays == []

    def test_transport_errors_are_retried(self, sleeps: SleepRecorder) -> None:
        client, seen = scripted(httpx.ReadError("connection reset"), httpx.ConnectTimeout(""), 200)
        assert send(client, sleeps).status_code == 200
        assert len(seen) == 3

    def test_tls_certificate_errors_are_not_retried(self, sleeps: SleepRecorder) -> None:
        error = httpx.ConnectError("handshake failed")
        error.__cause__ = ssl.SSLCertVerificationError(1, "certificate verify failed")
        client, seen = scripted(error, 200)
        with pytest.raises(TransportError, match="TLS certificate verification failed"):
            send(client, sleeps)
        assert len(seen) == 1

    def test_unsupported_scheme_is_not_retried(self, sleeps: SleepRecorder) -> None:
        client, seen = scripted(httpx.UnsupportedProtocol("ftp"), 200)
        with pytest.raises(TransportError, match="unsupported protocol"):
            send(client, sleeps)
        assert len(seen) == 1
