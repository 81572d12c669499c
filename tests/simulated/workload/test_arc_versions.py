"""The simulated ARC follows the release a scenario names (``arc.version``, default 0.15):
who writes the EphemeralRunner ``Running`` phase, and what the listener learns from it."""

from __future__ import annotations

import pytest

from simulator.engine.world import World
from simulator.scenarios.scenario import ScenarioError
from tests.simulated.workload.builders import events, load, scenario

RUNNER_LABEL_VERSION = "app.kubernetes.io/version"


def _world(version: str | None, **arc: object) -> World:
    data = scenario(duration="1h")
    if version is not None:
        data["arc"] = {**data.get("arc", {}), "version": version, **arc}
    return World(load(data), "baseline")


def _idle_and_busy_phases(world: World) -> tuple[set[str], set[str]]:
    """Run until a job is running, then the phases of idle and busy EphemeralRunners."""
    loop = world.loop
    while not events(world, "job_running"):
        loop.run_until(loop.now() + 30)
    idle: set[str] = set()
    busy: set[str] = set()
    for er in world.clusters["east"].store.list("EphemeralRunner"):
        status = er["status"]
        if status.get("ready"):
            (busy if status.get("jobId") else idle).add(status.get("phase", ""))
    return idle, busy


@pytest.mark.parametrize(
    ("version", "chart", "idle_phase"),
    [
        (None, "0.15.0", "Pending"),  # the default world is 0.15
        ("0.15", "0.15.0", "Pending"),
        ("0.14", "0.14.2", "Running"),  # the controller derives Running from the pod
        ("0.13", "0.13.1", "Running"),
    ],
)
def test_who_writes_running_follows_the_scenarios_arc_version(
    version: str | None, chart: str, idle_phase: str
) -> None:
    world = _world(version)
    idle, busy = _idle_and_busy_phases(world)
    assert busy == {"Running"}  # 0.15: the listener's JobStarted patch; before: the pod
    assert idle <= {idle_phase}
    runners = world.clusters["east"].store.list("EphemeralRunner")
    assert {er["metadata"]["labels"][RUNNER_LABEL_VERSION] for er in runners} == {chart}
    listener = next(iter(world.scale_sets.values())).listener
    assert listener.scaler.arc_version is None  # not told: learnt, as in production
    assert listener.scaler.learnt_version == chart[:4]
    if chart == "0.15.0":  # 0.15 reads before every JobStarted patch (the lock needs it)
        assert listener.writer.reads == len(events(world, "job_started"))
    else:  # one read to learn it is older, then the 0.14 patch only
        assert listener.writer.reads == 1


def test_a_listener_without_the_phase_leaves_busy_runners_pending_in_0_15() -> None:
    """The world bench/arc_phase_cost.py measures: jobs still run, the phase never comes."""
    _idle, busy = _idle_and_busy_phases(_world("0.15", listener_sets_phase=False))
    assert busy == {"Pending"}


def test_an_unknown_arc_version_is_one_clear_error() -> None:
    data = scenario()
    data["arc"] = {"version": "0.12"}
    with pytest.raises(ScenarioError, match=r"arc.version.*0\.13.*0\.14.*0\.15"):
        load(data)
