"""The ``http`` demand source: any endpoint serving HUD's JSON rows, on a loopback server."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from providers.demand.http_endpoint import HttpEndpointClient
from providers.demand.polling import PolledDemand
from simulator.faces.hud import queued_row
from tests.providers.actions.conftest import run
from tests.providers.demand.loopback import Answer, LoopbackServer, Request, json_answer

TOKEN = "endpoint-token-0123456789"


class Endpoint:
    def __init__(self) -> None:
        self.rows: Any = [queued_row("arc-runners", 6), queued_row("other", 40)]
        self.status = 200

    def __call__(self, request: Request) -> Answer:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return json_answer(401, {"error": "unauthorized"})
        if self.status != 200:
            return json_answer(self.status, {"error": "down"})
        text = json.dumps(self.rows)
        etag = '"' + hashlib.sha256(text.encode()).hexdigest()[:16] + '"'
        if request.headers.get("if-none-match") == etag:
            return 304, {"ETag": etag}, b""
        return 200, {"ETag": etag, "Content-Type": "application/json"}, text.encode()


@pytest.fixture
def endpoint() -> Endpoint:
    return Endpoint()


@pytest.fixture
def server(endpoint: Endpoint) -> Iterator[LoopbackServer]:
    with LoopbackServer(endpoint) as srv:
        yield srv


def client(server: LoopbackServer, token: str = TOKEN) -> HttpEndpointClient:
    return HttpEndpointClient(
        server.url + "/queued", ["arc-runners"], token=SecretStr(token), timeout=2.0
    )


def test_sums_the_rows_of_the_scale_set_labels_and_revalidates_with_the_etag(
    server: LoopbackServer,
) -> None:
    async def go() -> list[int]:
        c = client(server)
        try:
            return [await c.queued_jobs(), await c.queued_jobs()]
        finally:
            await c.aclose()

    assert run(go()) == [6, 6]
    assert "if-none-match" not in server.requests[0].headers
    assert "if-none-match" in server.requests[1].headers


@pytest.mark.parametrize(
    ("break_it", "reason"),
    [
        (lambda e: setattr(e, "status", 503), "answered HTTP 503"),
        (lambda e: setattr(e, "rows", {"not": "a list"}), "expected a JSON array of rows"),
        (lambda e: setattr(e, "rows", [queued_row("arc-runners", -3)]), "outside 0..1000000"),
    ],
    ids=["outage", "wrong-shape", "absurd-count"],
)
def test_a_broken_endpoint_fails_open_to_the_floor_never_to_zero(
    server: LoopbackServer, endpoint: Endpoint, break_it: Any, reason: str
) -> None:
    async def go() -> tuple[int | None, int | None, str | None]:
        c = client(server)
        polled = PolledDemand("http", c.queued_jobs)
        try:
            healthy = (await polled.poll()).queued_jobs
            break_it(endpoint)
            broken = await polled.poll()
            return healthy, broken.queued_jobs, broken.error
        finally:
            await c.aclose()

    healthy, queued, error = run(go())
    assert healthy == 6
    assert queued is None
    assert error is not None and reason in error


def test_a_refused_token_is_reported_and_never_logged(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    async def go() -> str | None:
        c = client(server, token="wrong-token-abcdefgh")
        try:
            return (await PolledDemand("http", c.queued_jobs).poll()).error
        finally:
            await c.aclose()

    error = run(go())
    assert error is not None and "answered HTTP 401" in error
    assert "wrong-token-abcdefgh" not in caplog.text


def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    async def go() -> str | None:
        c = HttpEndpointClient("http://127.0.0.1:9/queued", ["arc-runners"], timeout=2.0)
        try:
            return (await PolledDemand("http", c.queued_jobs).poll()).error
        finally:
            await c.aclose()

    error = run(go())
    assert error is not None and "ConnectError" in error
