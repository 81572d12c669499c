"""Fuzz: every decoder of Actions-service answers raises only ``ActionsError`` subclasses.

Targets: the GetMessage body (outer message, the ``body`` JSON string inside it, each job
message), the session document of create/refresh session, and the whole GetMessage call of
the real client over an in-memory transport (status + body), which adds the empty-200 rule.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import SecretStr

from providers.actions.auth import PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.decode import DecodedMessage, decode_message
from providers.actions.errors import ActionsError
from providers.actions.models import JOB_MESSAGE_TYPES, Session
from providers.actions.redact import SecretRegistry
from providers.actions.retry import RetryPolicy
from tests.fuzz.support import fuzz_settings, json_bytes, json_values, mutated, only_typed

JOB = {
    "messageType": "JobAvailable",
    "runnerRequestId": 9001,
    "repositoryName": "web",
    "ownerName": "acme",
    "jobId": "job-2329",
    "jobWorkflowRef": "acme/web/.github/workflows/ci.yml@refs/heads/main",
    "jobDisplayName": "build",
    "workflowRunId": 564001,
    "eventName": "push",
    "requestLabels": ["arc-runners"],
    "queueTime": "2026-01-05T00:00:00.1234567Z",
    "scaleSetAssignTime": "0001-01-01T00:00:00Z",
    "runnerAssignTime": "0001-01-01T00:00:00Z",
    "finishTime": "0001-01-01T00:00:00Z",
    "acquireJobUrl": "https://example.invalid/acquire/9001",
}
STARTED = {**JOB, "messageType": "JobStarted", "runnerId": 7, "runnerName": "r-1"}
COMPLETED = {**JOB, "messageType": "JobCompleted", "result": "succeeded", "runnerId": 7}
STATS = {
    "totalAvailableJobs": 1,
    "totalAcquiredJobs": 0,
    "totalAssignedJobs": 1,
    "totalRunningJobs": 0,
    "totalRegisteredRunners": 0,
    "totalBusyRunners": 0,
    "totalIdleRunners": 0,
}
SESSION = {
    "sessionId": "3f2b6c1e-8d4a-4f7e-9a51-6c2d0e9b7a13",
    "ownerName": "listener-0",
    "runnerScaleSet": {"id": 42, "name": "arc-runners", "labels": [{"name": "arc-runners"}]},
    "messageQueueUrl": "https://broker.example.invalid/message",
    "messageQueueAccessToken": "queue-token",
    "statistics": STATS,
}


def outer(jobs: Any, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": 100000170,
        "messageType": "RunnerScaleSetJobMessages",
        "statistics": STATS,
        "body": jobs if isinstance(jobs, str) else json.dumps(jobs, allow_nan=True),
        **fields,
    }


@st.composite
def message_bodies(draw: st.DrawFn) -> bytes:
    """Whole GetMessage bodies: a valid shape with damage at either decoding level."""
    level = draw(st.sampled_from(["outer", "inner", "jobs", "bytes"]))
    if level == "bytes":
        return draw(st.binary(max_size=200))
    if level == "jobs":
        jobs = [
            draw(mutated(draw(st.sampled_from([JOB, STARTED, COMPLETED]))))
            for _ in range(draw(st.integers(0, 3)))
        ]
        return json_bytes(outer(jobs), bom=draw(st.booleans()))
    if level == "inner":
        body = draw(st.one_of(st.text(max_size=40), json_values.map(json.dumps)))
        return json_bytes(outer(body))
    return json_bytes(draw(mutated(outer([JOB, STARTED]))), bom=draw(st.booleans()))


@fuzz_settings(300)
@given(message_bodies())
@example(b"")
@example(b"\xef\xbb\xbf")
@example(json_bytes(outer("null")))
@example(json_bytes(outer("[1e400]")))
@example(json_bytes(outer([{**JOB, "runnerRequestId": 2**70}])))
@example(json_bytes(outer([{**JOB, "queueTime": "9999-99-99T99:99:99Z"}])))
@example(json_bytes({**outer([JOB]), "messageId": float("nan")}))
def test_get_message_bodies_decode_or_raise_a_decode_error(raw: bytes) -> None:
    result = only_typed(ActionsError, decode_message, raw)
    if isinstance(result, DecodedMessage):
        assert all(type(job).__name__ in JOB_MESSAGE_TYPES for job in result.jobs)


def _client(transport: httpx.MockTransport) -> ActionsClient:
    return ActionsClient(
        parse_config_url("https://github.com/acme", env={}),
        PatAuth(SecretStr("ghp_fuzz")),
        scale_set_id=42,
        http=httpx.AsyncClient(transport=transport),
        retry=RetryPolicy(max_retries=0),
        registry=SecretRegistry(),
    )


@fuzz_settings(150)
@given(mutated(SESSION, max_changes=4) | st.binary(max_size=120).map(lambda b: {"raw": b}))
@example({"raw": b"null"})
@example({**SESSION, "sessionId": "not-a-uuid"})
def test_session_documents_decode_or_raise_a_decode_error(doc: Any) -> None:
    raw = doc["raw"] if isinstance(doc, dict) and "raw" in doc else json_bytes(doc)
    client = _client(httpx.MockTransport(lambda request: httpx.Response(500)))
    response = httpx.Response(200, content=raw)
    # The private decoder is the whole parsing step of create/refresh session; going through
    # the public call would first run the admin-token chain, which is not what is fuzzed here.
    result = only_typed(ActionsError, client._session_from, response, "create session")
    if isinstance(result, Session):
        assert "queue-token" not in repr(result)  # SecretStr stays secret after decoding


@fuzz_settings(120)
@given(
    status=st.sampled_from([200, 200, 200, 202, 204, 400, 401, 404, 409, 410, 429, 500, 503]),
    body=message_bodies(),
)
def test_the_real_get_message_call_returns_a_message_none_or_an_actions_error(
    status: int, body: bytes
) -> None:
    client = _client(httpx.MockTransport(lambda request: httpx.Response(status, content=body)))

    async def call() -> Any:
        try:
            return await client.get_message(
                "https://broker.example.invalid/message",
                SecretStr("queue-token"),
                last_message_id=1,
                max_capacity=3,
            )
        finally:
            await client.http.aclose()

    result = only_typed(ActionsError, asyncio.run, call())
    if status == 202:
        assert result is None
    if status not in (200, 202) and not isinstance(result, ActionsError):
        raise AssertionError(f"HTTP {status} was not reported as an error: {result!r}")
