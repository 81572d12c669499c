"""Hot runners in the simulated world, end to end (docs/design.md#hot-runners): the production
reconciler keeps hot slots, the simulated listener's scaler keeps their idle runners, ARC's ERS
controller creates them, and jobs land on them without a pod start."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from simulator.workload.actions import ActionsService
from simulator.workload.jobs import JobSpec
from simulator.workload.service_records import JobState

from .builders import bare_log, events, run, scale_set, scenario


def hot_world(hot: int | str, **overrides: Any) -> dict[str, Any]:
    overrides.setdefault("duration", "90m")
    data = scenario(
        scale_sets=[scale_set("cpu-east", "east", gpu=False)],
        jobs=[{"labels": ["linux"], "per_hour": 20, "duration": {"median": "4m", "sigma": 0.3}}],
        **overrides,
    )
    data["strategies"]["capacity_aware"].update(
        proactiveCapacity=2, hotRunners=hot, workflowResources={"cpu": "2", "memory": "4Gi"}
    )
    return data


def on_idle_runner(world: Any) -> tuple[list[float], list[float]]:
    """Waits (queued -> job running) of jobs taken by a runner registered before the job was
    assigned, and of the others."""
    registered = {e["runner"]: e["t"] for e in events(world, "runner_registered")}
    assigned = {e["job"]: e["t"] for e in events(world, "job_assigned")}
    queued = {e["job"]: e["t"] for e in events(world, "job_queued")}
    running = {e["job"]: e["t"] for e in events(world, "job_running")}
    hot, other = [], []
    for e in events(world, "job_started"):
        if e["job"] not in running:  # still starting when the run ended
            continue
        wait = running[e["job"]] - queued[e["job"]]
        (hot if registered[e["runner"]] < assigned[e["job"]] else other).append(wait)
    return hot, other


def test_jobs_land_on_hot_slots_without_a_pod_start_and_nothing_is_over_advertised() -> None:
    world = run(hot_world(2), "capacity-aware")
    results = world.run()  # the finished run's results
    assert results["jobs_failed"] == 0 and results["jobs_stuck"] == 0
    assert results["over_advertised_slot_seconds"] == 0
    hot, other = on_idle_runner(world)
    assert len(hot) > len(other)  # at 20 jobs/h two hot slots take most jobs
    # The same jobs on two warm pairs: every job waits for its runner pod to start and register.
    warm, on_idle = on_idle_runner(run(hot_world(0), "capacity-aware"))[::-1]
    assert on_idle == []  # without hot runners no job lands on an idle runner
    assert statistics.median(hot) < statistics.median(warm)


def test_drain_scales_the_hot_runners_away() -> None:
    """maxRunners 0 from 40 min: every hot slot is released, the scaler's target drops and
    ARC removes the idle runners (actions/actions-runner-controller
    ``controllers/actions.github.com/ephemeralrunnerset_controller.go``: surplus idle runners
    are deleted when the target falls, on patchID 0); the hot placeholders go with them."""
    data = hot_world(2)
    data["scale_sets"][0]["changes"] = [{"at": "40m", "max_runners": 0}]
    world = run(data, "capacity-aware")
    store = world.clusters["east"].store
    ers = store.find("EphemeralRunnerSet", "arc-runners", "cpu-east")
    assert ers is not None and not ers["spec"].get("replicas")
    pods = [p["metadata"]["name"] for p in store.list("Pod", "arc-runners")]
    assert not [p for p in pods if "-ph-hot-" in p]
    assert not [p for p in pods if p.startswith("cpu-east-runner")]


def test_an_idle_registered_runner_takes_an_assigned_job_at_once() -> None:
    """actions/runner ``src/Runner.Listener/MessageListener.cs``: a registered runner holds a
    long poll to the broker (``GetNextMessageAsync``, about 50 s); a job assigned to it is the
    answer of the poll in flight, so it starts without waiting for a next poll. The world hands
    it over in the same instant (what a hot slot relies on: no pod start, no registration)."""
    loop, log = bare_log()
    svc = ActionsService(loop, log)
    ss = svc.add_scale_set("a", ["linux"], cluster="c1")
    started: list[object] = []
    svc.register_runner(ss.id, "idle-1", started.append)
    svc.poll(ss.id, 1)
    job = svc.submit(JobSpec(0.0, ("linux",), 60.0))
    assert job.state is JobState.STARTED and started == [job]
    assert job.started_at == job.assigned_at == loop.now()


@pytest.mark.parametrize("version", ["0.13", "0.14", "0.15"])
def test_hot_slots_are_confirmed_under_every_arc_version(version: str) -> None:
    """0.13/0.14: an idle runner's EphemeralRunner phase is Running (from its pod); 0.15: it
    stays Pending until the listener's JobStarted patch (PR #4646). Idle is read from
    ``status.ready`` and no ``jobId`` under all three, so hot slots are confirmed and taken
    alike (docs/arc-versions.md)."""
    world = run(hot_world(2, duration="40m", arc={"version": version}), "capacity-aware")
    hot, _ = on_idle_runner(world)
    assert len(hot) >= 5
    assert world.run()["over_advertised_slot_seconds"] == 0
