"""The fleet view read through a Prometheus-compatible query API (providers/fleet), against a
loopback server answering like Prometheus: rows per cluster, their ages, bounded failures."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from providers.fleet.prometheus import FleetReadError, PrometheusFleetReader
from providers.fleet.share import FleetShareSource
from reconciler.clock import ManualClock
from reconciler.fleet import ClusterRow
from tests.providers.demand.loopback import Answer, LoopbackServer, Request, json_answer

NOW = 1_800_000_000.0


def vector(samples: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [NOW, repr(v)]} for m, v in samples],
        },
    }


def prometheus_like(stamps: dict[str, float]) -> Any:
    """Answers the two queries of a read: the rows, and ``timestamp()`` of each cluster's."""

    def answer(request: Request) -> Answer:
        query = urllib.parse.parse_qs(urllib.parse.urlparse(request.path).query)["query"][0]
        if query.startswith("timestamp("):
            return json_answer(
                200, vector([({"cluster": c, "fleet": "gpu"}, t) for c, t in stamps.items()])
            )
        rows = []
        for cluster in stamps:
            for name, value in (("free_slots:sum", 2), ("queued_jobs:max", 5), ("trouble:max", 0)):
                metric = {"__name__": f"fleet_cluster:arc_capacity_{name}", "cluster": cluster}
                rows.append(({**metric, "fleet": "gpu"}, float(value)))
        return json_answer(200, vector(rows))

    return answer


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(prometheus_like({"east": NOW - 20, "west": NOW - 50})) as running:
        yield running


def read(reader: PrometheusFleetReader) -> tuple[ClusterRow, ...]:
    async def go() -> tuple[ClusterRow, ...]:
        try:
            return await reader.read()
        finally:
            await reader.aclose()

    return asyncio.run(go())


def test_a_read_gives_one_row_per_cluster_with_its_sample_time(server: LoopbackServer) -> None:
    reader = PrometheusFleetReader(
        server.url, "gpu", timeout=2, retries=0, token=SecretStr("s3cret"), tenant="team-a"
    )
    rows = read(reader)
    assert [(r.cluster, r.sampled_at, r.free_slots, r.queued, r.trouble) for r in rows] == [
        ("east", NOW - 20, 2.0, 5.0, 0.0),
        ("west", NOW - 50, 2.0, 5.0, 0.0),
    ]
    first = server.requests[0]
    headers = {k.lower(): v for k, v in first.headers.items()}
    assert headers["authorization"] == "Bearer s3cret"
    assert headers["x-scope-orgid"] == "team-a"


@pytest.mark.parametrize(
    ("answer", "kind", "attempts"),
    [
        (lambda r: (503, {}, b"overloaded"), "http", 3),
        (lambda r: (200, {}, b"<html>"), "decode", 1),
        (lambda r: json_answer(400, {"status": "error", "error": "parse error"}), "query", 1),
        (
            lambda r: json_answer(
                200, {"status": "success", "data": {"resultType": "matrix", "result": []}}
            ),
            "decode",
            1,
        ),
    ],
    ids=["5xx-retried", "not-json", "bad-query", "not-a-vector"],
)
def test_a_failed_read_is_one_typed_error_after_bounded_attempts(
    answer: Any, kind: str, attempts: int
) -> None:
    with LoopbackServer(answer) as failing:
        reader = PrometheusFleetReader(failing.url, "gpu", timeout=2, retries=2)
        with pytest.raises(FleetReadError) as raised:
            read(reader)
        assert raised.value.kind == kind
        assert len(failing.requests) == attempts


def test_an_unreachable_store_is_a_connect_error() -> None:
    with LoopbackServer(lambda r: (200, {}, b"")) as gone:
        url = gone.url
    reader = PrometheusFleetReader(url, "gpu", timeout=1, retries=1)
    with pytest.raises(FleetReadError) as raised:
        read(reader)
    assert raised.value.kind == "connect"


def test_the_share_source_falls_back_at_once_when_the_store_fails(server: LoopbackServer) -> None:
    clock = ManualClock(NOW)
    failures: list[str] = []
    source = FleetShareSource(
        cluster="east", fleet="gpu", max_age=60, clock=clock, on_failure=failures.append
    )

    async def story() -> list[float | None]:
        reader = PrometheusFleetReader(server.url, "gpu", timeout=2, retries=0)
        broken = PrometheusFleetReader("http://127.0.0.1:9", "gpu", timeout=1, retries=0)
        seen = []
        await source.poll(reader.read)
        seen.append(source.share().share)
        # The next read fails: no share from that moment, whatever the last view said.
        await source.poll(broken.read)
        seen.append(source.share().share)
        # A good read again, then this cluster's row ages past maxAge with nothing new read.
        await source.poll(reader.read)
        seen.append(source.share().share)
        clock.advance(41)  # east's row: 20 s old at the read, 61 s now
        seen.append(source.share().share)
        await reader.aclose()
        await broken.aclose()
        return seen

    assert asyncio.run(story()) == [0.5, None, 0.5, None]
    assert failures == ["connect"]


def test_the_query_names_the_recorded_series(server: LoopbackServer) -> None:
    read(PrometheusFleetReader(server.url, "gpu", timeout=2, retries=0))
    queries = [
        urllib.parse.parse_qs(urllib.parse.urlparse(r.path).query)["query"][0]
        for r in server.requests
    ]
    assert queries == [
        '{__name__=~"fleet_cluster:arc_capacity_.+", fleet="gpu"}',
        'timestamp(fleet_cluster:arc_capacity_trouble:max{fleet="gpu"})',
    ]
