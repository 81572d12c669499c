"""The HTTP server: metrics, probes and the pair table, on 127.0.0.1 with an ephemeral port."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from listener.observability.http import (
    DEBUG_PAIRS_ENV,
    DEFAULT_HEALTH_ADDR,
    HttpConfigError,
    ListenerHttpServer,
    StatusBoard,
    debug_pairs_enabled,
    parse_listen_address,
    resolve_http_settings,
)
from listener.observability.metrics import PrometheusMetrics, ScaleSetIdentity
from listener.process.environment import ProcessEnv
from reconciler.capacity import CapacityLedger
from reconciler.clock import ManualClock
from state_machine.record import PairRecord
from state_machine.states import PairState

TIMEOUT = 5.0


def get(url: str, method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


class Flag:
    """A readiness source that tests flip (thread-safe enough for a bool)."""

    def __init__(self) -> None:
        self.synced = False

    def __call__(self) -> tuple[bool, str]:
        return self.synced, "waiting for the pod, node and ARC caches to sync"


@pytest.fixture
def metrics() -> PrometheusMetrics:
    identity = ScaleSetIdentity("arc-runners", "arc-runners", organization="my-org")
    return PrometheusMetrics(identity, min_runners=0, max_runners=5, clock=ManualClock(100.0))


@pytest.fixture
def board() -> StatusBoard:
    return StatusBoard("arc-runners")


@pytest.fixture
def flag() -> Flag:
    return Flag()


@pytest.fixture
def server(
    metrics: PrometheusMetrics, board: StatusBoard, flag: Flag
) -> Iterator[ListenerHttpServer]:
    srv = ListenerHttpServer(
        "127.0.0.1:0",
        registry=metrics.registry,
        metrics_endpoint="/metrics",
        ready=flag,
        debug=board.payload,
    )
    with srv:
        yield srv


def test_metrics_endpoint_serves_the_registry_in_text_format(server: ListenerHttpServer) -> None:
    status, content_type, body = get(server.url("/metrics"))
    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    text = body.decode()
    assert "# TYPE gha_max_runners gauge" in text
    labels = 'enterprise="",name="arc-runners",namespace="arc-runners",organization="my-org"'
    assert f'gha_max_runners{{{labels},repository=""}} 5.0' in text
    assert "process_cpu_seconds_total" not in text


def test_healthz_answers_while_the_process_serves(server: ListenerHttpServer) -> None:
    assert get(server.url("/healthz"))[0] == 200


def test_readyz_follows_the_readiness_source(server: ListenerHttpServer, flag: Flag) -> None:
    status, _, body = get(server.url("/readyz"))
    assert status == 503
    assert b"caches to sync" in body
    flag.synced = True
    assert get(server.url("/readyz"))[0] == 200


def test_a_failing_readiness_check_is_not_ready(metrics: PrometheusMetrics) -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    with ListenerHttpServer("127.0.0.1:0", registry=None, ready=broken) as srv:
        assert get(srv.url("/readyz"))[0] == 503


def test_debug_pairs_returns_the_published_table_and_ledger(
    server: ListenerHttpServer, board: StatusBoard
) -> None:
    empty = json.loads(get(server.url("/debug/pairs"))[2])
    assert empty["pairs"] == [] and empty["ledger"] is None
    record = PairRecord.new("abcde-1", "arc-runners", 10.0, "desired 1 pairs, have 0")
    record = record.moved(PairState.REQUESTED, 11.0, "launch slot free")
    ledger = CapacityLedger(
        capacity=1, runner_side=1, workflow_side=1, max_runners=5, ready_pairs=0,
        real_runners_bound=1, real_workflows_bound=1, runner_placeholders=0,
        workflow_placeholders=0, starved_runners=0, idle_runners=0,
    )  # fmt: skip
    board.publish(records=[record], ledger=ledger, at=41.0)
    status, content_type, body = get(server.url("/debug/pairs"))
    assert status == 200 and content_type == "application/json"
    doc = json.loads(body)
    assert doc["scale_set"] == "arc-runners"
    assert doc["counts"]["REQUESTED"] == 1 and doc["counts"]["READY"] == 0
    (pair,) = doc["pairs"]
    assert pair["id"] == "abcde-1" and pair["state"] == "REQUESTED"
    assert pair["age_seconds"] == 30.0
    assert pair["runner_pod"] == "arc-runners-ph-abcde-1-r"
    assert [h["state"] for h in pair["history"]] == ["QUEUED", "REQUESTED"]
    assert doc["ledger"]["capacity"] == 1 and doc["ledger"]["headroom"] == 0


def test_unknown_paths_are_404_and_head_has_no_body(server: ListenerHttpServer) -> None:
    assert get(server.url("/nope"))[0] == 404
    status, _, body = get(server.url("/metrics"), method="HEAD")
    assert status == 200 and body == b""


def test_debug_pairs_is_served_unless_the_environment_turns_it_off() -> None:
    """/debug/pairs has no authentication and nothing could stop serving it: an operator who
    does not want the pair table (pod names, states, reasons, the ledger) readable by whatever
    reaches the pod's port had no switch."""
    assert debug_pairs_enabled({}) is True
    assert debug_pairs_enabled({DEBUG_PAIRS_ENV: "on"}) is True
    assert debug_pairs_enabled({DEBUG_PAIRS_ENV: " OFF "}) is False
    with pytest.raises(HttpConfigError, match=f"{DEBUG_PAIRS_ENV}: 'no': use on or off"):
        debug_pairs_enabled({DEBUG_PAIRS_ENV: "no"})


def test_a_bad_debug_pairs_switch_stops_the_listener_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in CAPACITY_AWARE_DEBUG_PAIRS must not leave the table served by surprise."""
    import listener.process.app
    from tests.listener.test_arc_config import pat_config

    config = tmp_path / "config.json"
    config.write_text(json.dumps(pat_config()), encoding="utf-8")
    env = {"LISTENER_CONFIG_PATH": str(config), DEBUG_PAIRS_ENV: "false"}
    assert listener.process.app.run_from_environment(ProcessEnv.parse(env)) == 1
    err = capsys.readouterr().err
    assert err == (
        f"arc-capacity-listener: environment variable {DEBUG_PAIRS_ENV}: 'false': use on or off\n"
    )


def test_without_a_registry_only_health_is_served() -> None:
    with ListenerHttpServer("127.0.0.1:0", registry=None) as srv:
        assert get(srv.url("/metrics"))[0] == 404
        assert get(srv.url("/healthz"))[0] == 200
        assert get(srv.url("/debug/pairs"))[0] == 404


def test_a_custom_metrics_endpoint(metrics: PrometheusMetrics) -> None:
    with ListenerHttpServer("127.0.0.1:0", registry=metrics.registry, metrics_endpoint="/m") as srv:
        assert get(srv.url("/m"))[0] == 200
        assert get(srv.url("/metrics"))[0] == 404


def test_an_exposition_failure_is_a_500_and_is_counted(metrics: PrometheusMetrics) -> None:
    class Broken:
        def collect(self) -> object:
            raise RuntimeError("collector failed")

    registry = CollectorRegistry()
    registry.register(Broken())  # type: ignore[arg-type]
    causes: list[str] = []
    with ListenerHttpServer(
        "127.0.0.1:0", registry=registry, on_exposition_error=causes.append
    ) as srv:
        assert get(srv.url("/metrics"))[0] == 500
    assert causes == ["gathering"]


def test_concurrent_scrapes_all_succeed(server: ListenerHttpServer) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def scrape() -> None:
        status = get(server.url("/metrics"))[0]
        with lock:
            results.append(status)

    threads = [threading.Thread(target=scrape) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert results == [200] * 8


def test_stop_releases_the_port() -> None:
    srv = ListenerHttpServer("127.0.0.1:0", registry=None).start()
    _, port = srv.bound_address
    srv.stop()
    again = ListenerHttpServer(f"127.0.0.1:{port}", registry=None).start()
    try:
        assert again.bound_address[1] == port
    finally:
        again.stop()


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        (":8080", ("", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9090", ("::1", 9090)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_listen_addresses(addr: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(addr) == expected


@pytest.mark.parametrize("addr", ["8080", ":http", ":70000", "::1:8080", "host:"])
def test_bad_listen_addresses_name_the_key(addr: str) -> None:
    with pytest.raises(HttpConfigError, match="metrics_addr"):
        parse_listen_address(addr)


def test_arc_settings_rules() -> None:
    settings = resolve_http_settings(":8080", "/metrics")
    assert (settings.address, settings.metrics_endpoint) == (":8080", "/metrics")
    assert resolve_http_settings(":9000", "").metrics_endpoint == "/metrics"
    # metrics disabled by the controller: health endpoints still get a port
    off = resolve_http_settings("", "/metrics")
    assert (off.address, off.metrics_endpoint) == (DEFAULT_HEALTH_ADDR, None)
    with pytest.raises(HttpConfigError, match="metrics_endpoint"):
        resolve_http_settings(":8080", "metrics")
    with pytest.raises(HttpConfigError, match="reserved"):
        resolve_http_settings(":8080", "/healthz")
