"""End to end: a real Prometheus pages ``ArcCapacityListenerMissing`` for a listener that
exits at start, whose pod ARC keeps recreating.

Story:

1. The real ``python -m listener run`` is started against the live simulated world with a
   ``capacityAware`` block that has a misspelled key: it prints one config error and exits 1
   before its HTTP server starts, so it never serves a metric.
2. The test plays ARC's controller and Kubernetes service discovery: each time the listener
   exits, the "pod" is created again under the same name with a new address (a new loopback
   port, as a new pod IP), and the target file Prometheus discovers from
   (``file_sd_configs``) names that address with the labels the PodMonitor's discovery gives
   the pod. The scrape job is the shipped PodMonitor as prometheus-operator renders it.
3. Prometheus (loopback, a temp dir, 1 s scrape and evaluation) loads the shipped rules with
   minutes read as seconds. ``ArcCapacityListenerMissing`` fires for the scale set (its
   namespace and name, no ``instance``: the alert outlives every recreated pod), and no other
   rule does: they read the listener's own series, which never existed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess
from tests.e2e.test_alert_rules_prometheus import (
    PROMETHEUS_READY_TIMEOUT,
    QUIET,
    PrometheusServer,
    compressed,
    wait_for,
)
from tests.monitoring import podmonitor
from tests.monitoring.promtool import RULES, tool

ALERT = "ArcCapacityListenerMissing"
CONTROLLER_NAMESPACE = "arc-systems"
POD_NAME = f"{QUIET.scale_set}-754b578d-listener"
#: A capacityAware block the listener refuses at start (a misspelled key).
BROKEN = {"enabled": True, "proactiveCapcity": 1}
#: Bounds: one listener start and exit; the whole wait for the alert (5 s `for:` compressed).
EXIT_TIMEOUT = 30.0
FIRE_TIMEOUT = 60.0
#: How long an exited "pod" stays discoverable before ARC deletes it (phase Failed).
EXITED_POD_SECONDS = 1.0


class RecreatedListener:
    """ARC's controller for one scale set whose listener exits at start: start the listener,
    publish its address for discovery, wait for it to exit, delete and create it again."""

    def __init__(self, world: LiveWorld, workdir: Path, targets: Path, labels: dict[str, str]):
        self.world = world
        self.workdir = workdir
        self.targets = targets
        self.labels = labels
        self.pods: list[ListenerProcess] = []
        self.exits: list[int | None] = []

    def publish(self, address: str | None) -> None:
        """Write the discovered targets atomically (Prometheus watches the file)."""
        groups = [{"targets": [address], "labels": self.labels}] if address else []
        tmp = self.targets.with_suffix(".tmp")
        tmp.write_text(json.dumps(groups), encoding="utf-8")
        tmp.replace(self.targets)

    def cycle(self) -> None:
        """One pod's life: created, its listener exits, shown Failed for a moment, deleted."""
        workdir = self.workdir / f"pod-{len(self.pods)}"
        workdir.mkdir()
        pod = ListenerProcess(self.world, workdir, self.world.capacity_aware(**BROKEN))
        self.pods.append(pod)
        self.publish(f"127.0.0.1:{pod.port}")
        pod.start()
        assert pod.proc is not None
        try:
            self.exits.append(pod.proc.wait(EXIT_TIMEOUT))
        except Exception:
            pod.kill()
            raise
        time.sleep(EXITED_POD_SECONDS)
        self.publish(None)

    def stop(self) -> None:
        for pod in self.pods:
            pod.kill()


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    with LiveWorld(QUIET) as running:
        yield running


@pytest.fixture
def arc(world: LiveWorld, tmp_path: Path) -> Iterator[RecreatedListener]:
    tool("prometheus")  # skip with the reason before anything starts
    discovered = podmonitor.scrape_job(
        podmonitor.load(),
        target="unused",
        pod_namespace=CONTROLLER_NAMESPACE,
        pod_name=POD_NAME,
        pod_labels={
            "app.kubernetes.io/component": "runner-scale-set-listener",
            "actions.github.com/scale-set-name": QUIET.scale_set,
            "actions.github.com/scale-set-namespace": QUIET.namespace,
        },
    )["static_configs"][0]["labels"]
    (tmp_path / "pods").mkdir()
    controller = RecreatedListener(world, tmp_path / "pods", tmp_path / "targets.json", discovered)
    controller.publish(None)
    yield controller
    controller.stop()
    if controller.pods:
        print(controller.pods[-1].logs())  # shown by pytest only when the test failed


@pytest.fixture
def prometheus(arc: RecreatedListener, tmp_path: Path) -> Iterator[PrometheusServer]:
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    rules = workdir / "alert-rules.yaml"
    rules.write_text(compressed(RULES.read_text(encoding="utf-8")), encoding="utf-8")
    job: dict[str, Any] = podmonitor.scrape_job(
        podmonitor.load(),
        target="unused",
        pod_namespace=CONTROLLER_NAMESPACE,
        pod_name=POD_NAME,
        pod_labels={},
    )
    del job["static_configs"]
    job["file_sd_configs"] = [{"files": [str(arc.targets)], "refresh_interval": "1s"}]
    server = PrometheusServer(workdir, "unused", rules, [job])
    yield server
    server.stop()
    print(server.log.read_text(errors="replace")[-4000:])


def _firing(server: PrometheusServer) -> list[dict[str, str]]:
    """The alert's firing instances for this scale set. The rule's ``absent()`` branch (no
    listener target at all) may also fire, with no scale-set labels, while Prometheus has not
    yet read the targets file: true, but not the page this test is about."""
    return [
        a["labels"]
        for a in server.alerts()
        if a["labels"]["alertname"] == ALERT and a["state"] == "firing" and "name" in a["labels"]
    ]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_real_prometheus_pages_for_a_listener_that_exits_at_start_and_is_recreated(
    arc: RecreatedListener, prometheus: PrometheusServer
) -> None:
    """Regression (issue 46): every alert read the listener's own series, which a listener
    that exits on bad config never serves, and ARC recreates its pod instead of restarting
    it: a scale set without a listener paged nobody."""
    assert wait_for(prometheus.ready, PROMETHEUS_READY_TIMEOUT), "Prometheus never got ready"
    started = time.monotonic()
    fired: list[dict[str, str]] = []
    deadline = started + FIRE_TIMEOUT
    while time.monotonic() < deadline and not (fired and len(arc.pods) >= 2):
        arc.cycle()
        fired = _firing(prometheus)
    seconds = time.monotonic() - started
    print(f"{ALERT} firing after {seconds:.1f} s and {len(arc.pods)} recreated pods")

    # Every "pod" was the real listener refusing its config with one line, exit 1.
    assert arc.exits and set(arc.exits) == {1}, arc.exits
    for pod in arc.pods:
        err = pod.stderr_path.read_text(errors="replace").strip().splitlines()
        assert len(err) == 1 and "proactiveCapcity" in err[0], err

    # The alert is the scale set's, not one pod's, and it is the only one.
    assert fired, f"{ALERT} did not fire within {FIRE_TIMEOUT} s: {prometheus.alerts()}"
    assert fired == [
        {
            "alertname": ALERT,
            "severity": "critical",
            "job": f"{CONTROLLER_NAMESPACE}/arc-listeners",
            "namespace": QUIET.namespace,
            "name": QUIET.scale_set,
        }
    ], fired
    others = {a["labels"]["alertname"] for a in prometheus.alerts()} - {ALERT}
    assert others == set(), others

    # Prometheus saw more than one pod address, and none of them ever answered a scrape.
    seen = prometheus.api(
        "/api/v1/query", query=f'count_over_time(up{{name="{QUIET.scale_set}"}}[2m])'
    )["result"]
    instances = {s["metric"]["instance"] for s in seen}
    assert len(instances) >= 2, seen
    answered = prometheus.api(
        "/api/v1/query", query=f'max(max_over_time(up{{name="{QUIET.scale_set}"}}[2m]))'
    )["result"]
    assert answered and float(answered[0]["value"][1]) == 0.0, answered
