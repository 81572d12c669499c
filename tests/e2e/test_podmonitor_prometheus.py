"""End to end: a real Prometheus scrapes the real listener the way prometheus-operator
renders config/monitoring/podmonitor.yaml, and the series name the runner namespace.

ARC's listener pod lives in the controller namespace (``arc-systems``) and exports the scale
set's namespace (the runners', ``arc-runners``) as its ``namespace`` label. The operator adds
the pod's namespace as a target label; without ``honorLabels`` that target label wins and the
runner namespace moves to ``exported_namespace`` (issue 32). Both Prometheus servers below
scrape the same listener process: one with the shipped PodMonitor, one with the same
PodMonitor minus ``honorLabels`` and its relabelings (what shipped before), which shows the
failure the shipped file prevents.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess
from tests.e2e.test_alert_rules_prometheus import (
    LISTENER_READY_TIMEOUT,
    PROMETHEUS_READY_TIMEOUT,
    QUIET,
    PrometheusServer,
    wait_for,
)
from tests.monitoring import podmonitor
from tests.monitoring.promtool import tool

CONTROLLER_NAMESPACE = "arc-systems"


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    with LiveWorld(QUIET) as running:
        yield running


@pytest.fixture
def listener(world: LiveWorld, tmp_path: Path) -> Iterator[ListenerProcess]:
    tool("prometheus")  # skip with the reason before anything starts
    (tmp_path / "listener").mkdir()
    process = ListenerProcess(
        world, tmp_path / "listener", world.capacity_aware(proactiveCapacity=1)
    ).start()
    yield process
    process.kill()
    print(process.logs())  # shown by pytest only when the test failed


def _prometheus(
    tmp_path: Path, name: str, monitor: dict[str, Any], listener: ListenerProcess
) -> PrometheusServer:
    workdir = tmp_path / name
    workdir.mkdir()
    job = podmonitor.scrape_job(
        monitor,
        target=f"127.0.0.1:{listener.port}",
        pod_namespace=CONTROLLER_NAMESPACE,
        pod_name=f"{QUIET.scale_set}-754b578d-listener",
        pod_labels={
            "app.kubernetes.io/component": "runner-scale-set-listener",
            "actions.github.com/scale-set-name": QUIET.scale_set,
            "actions.github.com/scale-set-namespace": QUIET.namespace,
        },
    )
    return PrometheusServer(workdir, job["static_configs"][0]["targets"][0], None, [job])


def _labels(server: PrometheusServer, query: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []

    def scraped() -> bool:
        found[:] = [r["metric"] for r in server.api("/api/v1/query", query=query)["result"]]
        return bool(found)

    assert wait_for(scraped, PROMETHEUS_READY_TIMEOUT), f"no {query} scraped"
    return found


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_shipped_podmonitor_keeps_the_runner_namespace_on_every_series(
    world: LiveWorld, listener: ListenerProcess, tmp_path: Path
) -> None:
    """Regression (issue 32): scraped through the PodMonitor, ``namespace`` was the listener
    pod's (arc-systems) and the runner namespace sat in ``exported_namespace``, so the
    dashboard's namespace filter and every alert summary named the wrong namespace; ARC's job
    series (no scale-set labels of their own) could not be filtered by scale set at all."""
    shipped = podmonitor.load()
    before = copy.deepcopy(shipped)
    endpoint = before["spec"]["podMetricsEndpoints"][0]
    endpoint.pop("honorLabels")
    endpoint.pop("relabelings")
    assert wait_for(lambda: listener.get("/readyz")[0] == 200, LISTENER_READY_TIMEOUT)
    servers = [
        _prometheus(tmp_path, "shipped", shipped, listener),
        _prometheus(tmp_path, "before", before, listener),
    ]
    try:
        now, old = servers
        assert wait_for(now.ready, PROMETHEUS_READY_TIMEOUT) and wait_for(
            old.ready, PROMETHEUS_READY_TIMEOUT
        )
        (ready,) = _labels(now, "arc_capacity_ready")
        assert ready["namespace"] == QUIET.namespace, ready
        assert ready["name"] == QUIET.scale_set and "exported_namespace" not in ready, ready
        assert ready["pod"].endswith("-listener") and ready["job"] == "arc-systems/arc-listeners"
        # A family without scale-set labels of its own gets them from the pod's labels.
        for series in _labels(now, "gha_job_startup_duration_seconds_count"):
            assert (series["namespace"], series["name"]) == (QUIET.namespace, QUIET.scale_set)

        # The queue metrics ARC does not ship come from the real messages and statistics.
        (queued,) = _labels(now, "arc_capacity_job_queue_duration_seconds_count > 0")
        assert (queued["namespace"], queued["name"]) == (QUIET.namespace, QUIET.scale_set)
        assert _labels(now, "arc_capacity_available_jobs") and _labels(
            now, "arc_capacity_acquired_jobs"
        )

        (wrong,) = _labels(old, "arc_capacity_ready")
        assert wrong["namespace"] == CONTROLLER_NAMESPACE, wrong
        assert wrong["exported_namespace"] == QUIET.namespace, wrong
    finally:
        for server in servers:
            server.stop()
            print(server.log.read_text(errors="replace")[-2000:])
