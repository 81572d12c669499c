"""The container hook's ``waitForPodPhases`` schedule, written from
actions/runner-container-hooks packages/k8s/src/k8s/index.ts (``waitForPodPhases``,
``BackOffManager``: 1 s, x2, capped at 20 s; throws once the summed sleeps exceed the
prepare-job timeout) and packages/k8s/src/hooks/prepare-job.ts (awaits Running, backs off on
Pending, ``getPrepareJobTimeoutSeconds`` default 600 s)."""

from __future__ import annotations

import pytest

from simulator.engine.world import World
from simulator.workload.hook import poll_schedule
from tests.simulated.workload.builders import cluster_spec, events, run, scale_set, scenario


def test_the_default_schedule_reads_at_once_then_backs_off_to_twenty_seconds() -> None:
    schedule = poll_schedule(600)
    assert schedule.reads[:8] == (0, 1, 3, 7, 15, 31, 51, 71)
    assert schedule.reads[-1] == 591  # 31 + 28 x 20
    assert schedule.fails_at == 611  # the sleep that passes 600 s throws instead of reading


def test_a_timeout_equal_to_a_read_time_still_reads_then_fails_at_the_next_sleep() -> None:
    # BackOffManager throws only when throwAfterSeconds < totalTime.
    assert poll_schedule(31).reads[-1] == 31 and poll_schedule(31).fails_at == 51
    assert poll_schedule(30).reads[-1] == 15 and poll_schedule(30).fails_at == 31


def test_a_non_positive_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        poll_schedule(0)


FIVE_MIN = {"median": "5m"}


def job_times(world: World) -> list[tuple[float, float, float]]:
    """(workflow pod created, pod Running, job_running) per job, from the event log."""
    created = {e["job"]: e for e in events(world, "pod_created") if e["role"] == "workflow"}
    running = {e["pod"]: e["t"] for e in events(world, "pod_running")}
    return [
        (created[e["job"]]["t"], running[created[e["job"]]["pod"]], e["t"])
        for e in events(world, "job_running")
    ]


def test_the_job_sees_its_workflow_pod_running_only_at_the_hooks_next_read() -> None:
    data = scenario(
        duration="30m",
        scale_sets=[scale_set("cpu", "east", gpu=False)],
        clusters=[{"name": "east", "spec": cluster_spec(static_runner_nodes=2)}],
        jobs=[
            {
                "labels": ["linux"],
                "bursts": [{"at": "1m", "count": 3}],
                "duration": {"median": "5m"},
            }
        ],
    )
    world = run(data, "baseline")
    times = job_times(world)
    assert len(times) == 3
    reads = poll_schedule(600).reads
    for created, pod_running, job_running in times:
        first_read_after = min(r for r in reads if created + r >= pod_running)
        assert round(job_running - created, 3) == first_read_after
    assert all(job > pod for _, pod, job in times)  # the pod starts between two reads
