"""End to end: a real Prometheus scrapes the real listener process in the live simulated
world and evaluates config/monitoring/alert-rules.yaml.

Story:

1. The world has no ICE window; the listener (capacity-aware, HUD demand) warms two pairs
   and turns ready. Prometheus starts (loopback, a temp dir, 1 s scrape and
   evaluation) with the rules compressed in time: every duration literal of the file (``for:``
   and range windows) in seconds instead of minutes, thresholds untouched.
2. Healthy: two jobs arrive, take the warm pairs and run. Every rule evaluates without
   error on the real series, and no alert is pending or firing over a watch longer than the
   longest compressed ``for``.
3. The HUD (a configured demand source) answers 503 from now on: ``ArcCapacityDemandSourceDown``
   fires for ``source="hud"``, read from Prometheus's own ``/api/v1/alerts``, and nothing
   else does.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess, free_port
from tests.monitoring.promtool import RULES, alerts, tool

#: A world with nothing going wrong on its own (the ICE window is far beyond the test); two
#: jobs arrive while the healthy state is watched and take the two warm pairs.
QUIET = LiveSpec(
    ice_start=3600.0, ice_end=3601.0, lose_nodes_at_ice_start=False, burst_at=14.0, burst_count=2
)
WARM_PAIRS = 2
#: Seconds the healthy state is watched: past the longest compressed `for:` (15 m -> 15 s).
HEALTHY_WATCH = 16.0
#: Bounds of each wait (the whole test stays under a minute on a quiet machine).
LISTENER_READY_TIMEOUT = 30.0
PROMETHEUS_READY_TIMEOUT = 20.0
FIRE_TIMEOUT = 25.0


def compressed(rules_text: str) -> str:
    """The rules with minutes read as seconds: ``for: 5m`` -> ``5s``, ``[30m]`` -> ``[30s]``."""
    text = re.sub(r"(for:\s*)(\d+)m\b", r"\1\2s", rules_text)
    return re.sub(r"\[(\d+)m\]", r"[\1s]", text)


class PrometheusServer:
    """The Debian ``prometheus`` binary on 127.0.0.1, storage in a temp dir, logs to files."""

    def __init__(
        self,
        workdir: Path,
        target: str,
        rules: Path | None,
        scrape_configs: list[dict[str, Any]] | None = None,
        port: int | None = None,
    ) -> None:
        """Scrapes ``target`` as job ``arc-listeners``, or with ``scrape_configs`` as given;
        on ``port`` when its URL must be known before it starts (default: a free one)."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        jobs = scrape_configs or [
            {"job_name": "arc-listeners", "static_configs": [{"targets": [target]}]}
        ]
        config.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(rules)] if rules else [],
                    "scrape_configs": jobs,
                }
            )
        )
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    tool("prometheus"),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=5) as answer:
            return json.loads(answer.read())["data"]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("/api/v1/alerts")["alerts"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.5) -> bool:
    """Poll ``predicate`` until true; bounded in count and time."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / step) + 1):
        if predicate():
            return True
        if time.monotonic() >= deadline:
            break
        time.sleep(step)
    return predicate()


@pytest.fixture
def quiet_world() -> Iterator[LiveWorld]:
    with LiveWorld(QUIET) as running:
        yield running


@pytest.fixture
def listener(quiet_world: LiveWorld, tmp_path: Path) -> Iterator[ListenerProcess]:
    (tmp_path / "listener").mkdir()
    process = ListenerProcess(
        quiet_world, tmp_path / "listener", quiet_world.capacity_aware(proactiveCapacity=WARM_PAIRS)
    ).start()
    yield process
    process.kill()
    print(process.logs())  # shown by pytest only when the test failed


@pytest.fixture
def prometheus(listener: ListenerProcess, tmp_path: Path) -> Iterator[PrometheusServer]:
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    rules = workdir / "alert-rules.yaml"
    rules.write_text(compressed(RULES.read_text(encoding="utf-8")), encoding="utf-8")
    tool("prometheus")  # skip with the reason before the listener waits for anything
    assert wait_for(lambda: listener.get("/readyz")[0] == 200, LISTENER_READY_TIMEOUT), (
        "the listener never turned ready"
    )
    server = PrometheusServer(workdir, f"127.0.0.1:{listener.port}", rules)
    yield server
    server.stop()
    print(server.log.read_text(errors="replace")[-4000:])


def alert_states(server: PrometheusServer) -> dict[tuple[str, str], str]:
    """``(alertname, source label) -> state`` of every pending or firing alert."""
    return {
        (a["labels"]["alertname"], a["labels"].get("source", "")): a["state"]
        for a in server.alerts()
    }


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_real_prometheus_stays_quiet_on_the_live_world_and_pages_when_the_hud_fails(
    quiet_world: LiveWorld, listener: ListenerProcess, prometheus: PrometheusServer
) -> None:
    """The rules evaluate on the listener's real series (no PromQL that only works on
    hand-made data), a healthy world pages nobody, and a demand outage does."""
    assert wait_for(prometheus.ready, PROMETHEUS_READY_TIMEOUT), "Prometheus never got ready"
    scraped = wait_for(
        lambda: bool(prometheus.api("/api/v1/query", query="arc_capacity_ready == 1")["result"]),
        PROMETHEUS_READY_TIMEOUT,
    )
    assert scraped, "Prometheus never scraped a ready listener"
    # ArcCapacityListenerMissing's absent(up) holds until the first scrape has been evaluated
    # (pending for one evaluation of a freshly started Prometheus, never for its `for:`).
    settled = wait_for(
        lambda: ("ArcCapacityListenerMissing", "") not in alert_states(prometheus),
        PROMETHEUS_READY_TIMEOUT,
    )
    assert settled, f"ArcCapacityListenerMissing stays pending: {alert_states(prometheus)}"

    # 2. Healthy: every rule loaded and evaluating cleanly; nothing pending or firing.
    seen: dict[tuple[str, str], str] = {}
    deadline = time.monotonic() + HEALTHY_WATCH
    for _ in range(int(HEALTHY_WATCH) + 1):
        seen.update(alert_states(prometheus))
        if time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    groups = prometheus.api("/api/v1/rules")["groups"]
    evaluated = {
        r["name"]: (r["health"], r.get("lastError", "")) for g in groups for r in g["rules"]
    }
    assert set(evaluated) == set(alerts())
    assert all(health == "ok" for health, _ in evaluated.values()), evaluated
    assert seen == {}, f"alerts on a healthy world: {seen}"
    assert listener.running
    started = prometheus.api("/api/v1/query", query="sum(gha_started_jobs_total)")["result"]
    assert started and float(started[0]["value"][1]) == QUIET.burst_count, started

    # 3. The HUD fails (503 on every request): its demand source is down, and only that pages.
    quiet_world.hud.outage(503)
    fired = wait_for(
        lambda: alert_states(prometheus).get(("ArcCapacityDemandSourceDown", "hud")) == "firing",
        FIRE_TIMEOUT,
    )
    states = alert_states(prometheus)
    assert fired, f"ArcCapacityDemandSourceDown{{source=hud}} did not fire: {states}"
    assert set(states) == {("ArcCapacityDemandSourceDown", "hud")}, states
    assert listener.running
