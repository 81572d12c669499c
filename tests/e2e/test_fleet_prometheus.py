"""End to end: a fleet of two live worlds (two clusters serving one label), one real
Prometheus, the shipped fleet recording rules, and both listeners reading the fleet view back
through Prometheus's HTTP query API.

Story:

1. Two live worlds start (no ICE; two jobs each at 14 s), each with the real listener process,
   capacity-aware with ``fleetView`` on: cluster ``east`` / ``west``, the query API of the
   Prometheus below, polled every second.
2. Prometheus (the Debian package; loopback, 1 s scrape and evaluation) scrapes both listeners,
   each target labelled with its ``cluster`` (what a single Prometheus over several clusters
   does; a Thanos/Mimir fleet gets the label from each cluster's external labels), and
   evaluates config/monitoring/fleet-rules.yaml unchanged.
3. The rules record one row per cluster of the fleet; each listener reads them back and says,
   in its own metrics, that its view is fresh and that it builds for half (two healthy
   clusters).
4. Every query of the fleet dashboard evaluates on these series; each panel shows data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess, free_port
from tests.e2e.test_alert_rules_prometheus import (
    LISTENER_READY_TIMEOUT,
    PROMETHEUS_READY_TIMEOUT,
    QUIET,
    PrometheusServer,
    wait_for,
)
from tests.monitoring.promtool import tool
from tests.monitoring.test_fleet_dashboard import fleet_exprs, panels
from tests.monitoring.test_fleet_rules import FLEET_RULES

CLUSTERS = ("east", "west")
#: Both worlds name their scale set alike, so the default fleet key (the name) is shared.
FLEET = QUIET.scale_set
#: Bounds of the waits for rows and for the listeners' view (a few scrapes and polls).
VIEW_TIMEOUT = 45.0
#: Queries that show events which a quiet world may not have had (no pair timed out).
EVENT_ONLY = ('to="TIMED_OUT"',)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[PrometheusServer, dict[str, ListenerProcess]]]:
    tool("prometheus")  # skip with the reason before anything starts
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    worlds: list[LiveWorld] = []
    listeners: dict[str, ListenerProcess] = {}
    server: PrometheusServer | None = None
    try:
        for cluster in CLUSTERS:
            world = LiveWorld(QUIET).__enter__()
            worlds.append(world)
            workdir = tmp_path / cluster
            workdir.mkdir()
            block = world.capacity_aware(
                proactiveCapacity=2,
                fleetView={
                    "enabled": True,
                    "url": url,
                    "cluster": cluster,
                    "pollInterval": 1,
                    "maxAge": 30,
                    "timeout": 2,
                },
            )
            listeners[cluster] = ListenerProcess(world, workdir, block).start()
        for cluster, started in listeners.items():
            ready = wait_for(
                lambda p=started: p.get("/readyz")[0] == 200,
                LISTENER_READY_TIMEOUT,
            )
            assert ready, f"the {cluster} listener never turned ready:\n{started.logs()}"
        promdir = tmp_path / "prometheus"
        promdir.mkdir()
        rules = promdir / "fleet-rules.yaml"
        rules.write_text(FLEET_RULES.read_text(encoding="utf-8"), encoding="utf-8")
        # As the shipped PodMonitor scrapes (honorLabels, the scale set's name and namespace
        # from the pod's labels for ARC's job series), plus each target's cluster.
        scale_set = {"name": QUIET.scale_set, "namespace": QUIET.namespace}
        job = {
            "job_name": "arc-listeners",
            "honor_labels": True,
            "static_configs": [
                {"targets": [f"127.0.0.1:{p.port}"], "labels": {"cluster": c, **scale_set}}
                for c, p in listeners.items()
            ],
        }
        server = PrometheusServer(promdir, "", rules, [job], port=port)
        yield server, listeners
    finally:
        if server is not None:
            server.stop()
            print(server.log.read_text(errors="replace")[-3000:])
        for listener in listeners.values():
            listener.kill()
            print(listener.logs())
        for world in worlds:
            world.__exit__(None, None, None)


def metric(listener: ListenerProcess, name: str) -> float | None:
    """One unlabelled-beyond-the-scale-set series of the listener's /metrics, or None."""
    status, body = listener.get("/metrics")
    if status != 200:
        return None
    found = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", body, flags=re.MULTILINE)
    return float(found.group(1)) if found else None


def query(server: PrometheusServer, expr: str) -> list[dict[str, Any]]:
    return list(server.api("/api/v1/query", query=expr)["result"])


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_live_listeners_share_one_fleet_view_through_a_real_prometheus(
    fleet: tuple[PrometheusServer, dict[str, ListenerProcess]],
) -> None:
    server, listeners = fleet
    assert wait_for(server.ready, PROMETHEUS_READY_TIMEOUT), "Prometheus never got ready"

    # 3. One recorded row per cluster, and the fleet's own rows.
    def rows() -> set[str]:
        found = query(server, f'fleet_cluster:arc_capacity_trouble:max{{fleet="{FLEET}"}}')
        return {r["metric"]["cluster"] for r in found}

    assert wait_for(lambda: rows() == set(CLUSTERS), VIEW_TIMEOUT), f"rows: {rows()}"
    # The fleet group evaluates on its own schedule: it counts both once it has run after them.
    counted = f'fleet:arc_capacity_clusters:count{{fleet="{FLEET}"}} == {len(CLUSTERS)}'
    assert wait_for(lambda: bool(query(server, counted)), VIEW_TIMEOUT), "fleet count never 2"
    queued = query(server, f'fleet_cluster:arc_capacity_queued_jobs:max{{fleet="{FLEET}"}}')
    assert {r["metric"]["cluster"] for r in queued} == set(CLUSTERS)

    # Each listener read the view back through the query API and builds for its half.
    for cluster, listener in listeners.items():
        # Fresh may come first with only this cluster's row (its peer's not recorded yet):
        # a share of 1 then, until the next read sees both.
        fresh = wait_for(
            lambda p=listener: (
                metric(p, "arc_capacity_fleet_view_fresh") == 1.0
                and metric(p, "arc_capacity_fleet_share") == 0.5
            ),
            VIEW_TIMEOUT,
        )
        share = metric(listener, "arc_capacity_fleet_share")
        assert fresh, (
            f"{cluster}: fleet view never fresh at half (share {share}):\n{listener.logs()}"
        )
        age = metric(listener, "arc_capacity_fleet_view_age_seconds")
        assert age is not None and 0 <= age <= 30, (cluster, age)
        assert listener.running
    # Prometheus saw the same from the outside: both listeners fresh, both at half.
    both = "arc_capacity_fleet_share == 0.5 and arc_capacity_fleet_view_fresh == 1"

    def sharing() -> set[str]:
        return {r["metric"]["cluster"] for r in query(server, both)}

    assert wait_for(lambda: sharing() == set(CLUSTERS), VIEW_TIMEOUT), sharing()

    # 4. The dashboard's queries on these series: no error, and data wherever a quiet fleet
    # has any (jobs started at 14 s in each world: "where jobs went" included).
    assert wait_for(
        lambda: bool(query(server, "sum(gha_started_jobs_total) >= 4")), VIEW_TIMEOUT
    ), "the four jobs never started"
    time.sleep(2.0)  # one more scrape and evaluation over the started jobs
    empty = []
    for expr in fleet_exprs():
        concrete = expr.replace("$fleet", FLEET)
        result = query(server, concrete)  # an invalid query raises (HTTP 400)
        if not result and not any(e in expr for e in EVENT_ONLY):
            empty.append(expr)
    assert empty == [], empty
    for panel in panels():
        shown = [query(server, t["expr"].replace("$fleet", FLEET)) for t in panel["targets"]]
        assert any(shown), f"panel {panel['title']!r} is empty on a live fleet"
