"""Decode like Go, never wedge; bounded reads (issue 10, failures 2 and 6).

Wire decoding is unit-tested on bytes; the deadline and the size cap go through httpx against
a real loopback server that drips or floods.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from providers.actions.decode import decode_message
from providers.actions.errors import (
    MessageDecodeError,
    ResponseTooLargeError,
    RetriesExhaustedError,
)
from providers.actions.models import ZERO_TIME, JobAssigned, parse_rfc3339
from providers.actions.retry import RetryPolicy, send_with_retry
from reconciler.clock import SYSTEM_CLOCK
from tests.providers.actions.conftest import run


def outer(body: object, **overrides: object) -> bytes:
    message: dict[str, object] = {
        "messageId": 12,
        "messageType": "RunnerScaleSetJobMessages",
        "body": json.dumps(body),
        "statistics": {"totalAssignedJobs": 3},
    }
    message.update(overrides)
    return json.dumps(message).encode()


# --- decode like Go -----------------------------------------------------------------------


def test_null_in_fields_go_accepts_decodes_to_zero_values() -> None:
    job = {
        "messageType": "JobAssigned",
        "runnerRequestId": None,
        "requestLabels": None,
        "runnerId": None,
        "jobDisplayName": None,
        "queueTime": None,
    }
    decoded = decode_message(outer([job]))
    (assigned,) = decoded.of_type(JobAssigned)
    assert assigned.runner_request_id == 0
    assert assigned.request_labels == []
    assert assigned.job_display_name == ""
    assert assigned.queue_time == ZERO_TIME


def test_a_null_body_and_null_statistics_fields_are_empty() -> None:
    raw = json.dumps(
        {
            "messageId": 5,
            "messageType": "RunnerScaleSetJobMessages",
            "body": None,
            "statistics": {"totalAssignedJobs": None},
        }
    ).encode()
    decoded = decode_message(raw)
    assert decoded.jobs == () and decoded.statistics.total_assigned_jobs == 0


def test_a_zero_time_without_zone_is_read_as_utc() -> None:
    assert parse_rfc3339("0001-01-01T00:00:00") == ZERO_TIME
    assert parse_rfc3339("2026-11-22T10:00:00.1234567") == datetime(
        2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC
    )


def test_a_string_where_an_int_is_expected_is_still_an_error_naming_the_message() -> None:
    with pytest.raises(MessageDecodeError, match="runnerRequestId") as raised:
        decode_message(outer([{"messageType": "JobAvailable", "runnerRequestId": "7"}]))
    assert raised.value.message_id == 12


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (outer([], messageType="SomethingNew"), "unexpected messageType"),
        (
            json.dumps(
                {"messageId": 12, "messageType": "RunnerScaleSetJobMessages", "body": "[]"}
            ).encode(),
            "statistics missing",
        ),
        (
            outer([]).replace(b'"body": "[]"', b'"body": "' + b"[" * 100_000 + b'"'),
            "nested too deeply",
        ),
        (
            b'{"messageId": 12, "statistics": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "nested too deeply",
        ),
    ],
    ids=["unknown-outer-type", "missing-statistics", "deep-body", "deep-outer"],
)
def test_messages_that_cannot_be_understood_carry_their_id_for_ack_and_skip(
    raw: bytes, reason: str
) -> None:
    with pytest.raises(MessageDecodeError, match=reason) as raised:
        decode_message(raw)
    assert raised.value.message_id == 12


def test_a_body_that_is_not_json_at_all_has_no_id_to_ack() -> None:
    with pytest.raises(MessageDecodeError) as raised:
        decode_message(b"<html>bad gateway</html>")
    assert raised.value.message_id is None


# --- bounded reads ------------------------------------------------------------------------


class Server:
    """A loopback HTTP/1.1 server that answers every request with ``body`` at ``rate``."""

    def __init__(self, body: bytes, *, chunk: int, pause: float) -> None:
        self.body, self.chunk, self.pause = body, chunk, pause
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.requests += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.body)}\r\n\r\n".encode()
            try:
                conn.sendall(head)
                for start in range(0, len(self.body), self.chunk):
                    if self.stop.is_set():
                        return
                    conn.sendall(self.body[start : start + self.chunk])
                    time.sleep(self.pause)
            except OSError:
                return


@pytest.fixture
def server_factory() -> Iterator[type[Server]]:
    started: list[Server] = []

    class Started(Server):
        def __init__(self, body: bytes, *, chunk: int, pause: float) -> None:
            super().__init__(body, chunk=chunk, pause=pause)
            started.append(self)
            self.thread.start()

    yield Started
    for server in started:
        server.stop.set()


async def _get(port: int, policy: RetryPolicy) -> httpx.Response:
    async def no_sleep(_: float) -> None:
        return None

    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as client:
        return await send_with_retry(
            client,
            lambda: client.build_request("GET", f"http://127.0.0.1:{port}/message"),
            what="get message",
            policy=policy,
            sleep=no_sleep,
            clock=SYSTEM_CLOCK,
        )


def test_a_slow_drip_answer_is_cut_at_the_total_deadline(server_factory: type[Server]) -> None:
    """Every read arrives well within the 10 s per-read timeout; only the total bounds it."""
    server = server_factory(b"x" * 1000, chunk=1, pause=0.05)  # 50 s to send it all
    policy = RetryPolicy(max_retries=1, attempt_deadline=1.0)
    started = time.monotonic()
    with pytest.raises(RetriesExhaustedError, match="deadline"):
        run(_get(server.port, policy))
    assert time.monotonic() - started < 5.0
    assert server.requests == 2  # retried once, like any transport timeout


def test_an_answer_just_within_the_cap_is_read_whole(server_factory: type[Server]) -> None:
    server = server_factory(b"y" * 1024, chunk=256, pause=0.0)
    response = run(_get(server.port, RetryPolicy(max_body_bytes=1024)))
    assert response.content == b"y" * 1024


def test_an_answer_one_byte_over_the_cap_is_refused_without_retry(
    server_factory: type[Server],
) -> None:
    server = server_factory(b'{"messageId": 99}' + b"z" * 2000, chunk=256, pause=0.0)
    size = len(server.body) - 1
    with pytest.raises(ResponseTooLargeError, match=f"larger than {size} bytes") as raised:
        run(_get(server.port, RetryPolicy(max_body_bytes=size)))
    assert raised.value.prefix.startswith(b'{"messageId": 99}')
    assert server.requests == 1
