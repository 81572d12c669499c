"""Regression: a statistics-only listener at scale-to-zero never saw a job.

Statistics come with job messages, and none come while 0 is advertised, so with
``proactiveCapacity: 0`` and statistics as the only demand source every job queued after the
start waited forever (bench/demand_sources.py measured 0 of 15 jobs run). The statistics
refresh (``demand.statisticsRefresh``, listener/arc/statistics_refresh.py) reads them by a session
refresh while blind.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from simulator.engine.world import World
from simulator.scenarios.scenario import SCENARIO_DIR, parse_scenario
from simulator.workload.service_records import JobState

HOURS = 2.0


def _run(refresh: str) -> World:
    data = yaml.safe_load(Path(SCENARIO_DIR, "scale-to-zero.yaml").read_text())
    data["duration"] = f"{HOURS}h"
    data["hud"] = {}
    data["strategies"]["capacity_aware"]["demand"] = {
        "statisticsRefresh": refresh,
        "sources": ["statistics"],
    }
    world = World(parse_scenario(data, where="test"), "capacity-aware", seed=3)
    world.run()
    return world


def _early_jobs(world: World) -> list[JobState]:
    cutoff = world.loop.start + (HOURS - 0.5) * 3600  # queued with half an hour to spare
    return [j.state for j in world.service.jobs if j.queued_at < cutoff]


def test_statistics_only_listener_at_zero_runs_every_job_with_the_refresh() -> None:
    world = _run("2s")
    states = _early_jobs(world)
    assert states and all(s is JobState.SUCCEEDED for s in states), states
    assert world.scale_sets["nightly"].listener.statistics_refreshes > 0


def test_without_the_refresh_no_job_is_ever_seen() -> None:
    states = _early_jobs(_run("0"))
    assert states and all(s is JobState.QUEUED for s in states), states
