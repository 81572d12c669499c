"""The simulated Actions service: assignment by advertised capacity, runners, wire shapes."""

from __future__ import annotations

import pytest

from providers.actions.models import JOB_MESSAGE_TYPES, Statistics
from simulator.workload.actions import ActionsService, ServiceError
from simulator.workload.jobs import JobSpec
from simulator.workload.service_records import Job, JobState
from tests.simulated.workload.builders import bare_log


def service() -> ActionsService:
    loop, log = bare_log()
    return ActionsService(loop, log)


def job(labels: tuple[str, ...] = ("gpu",), at: float = 0.0) -> JobSpec:
    return JobSpec(at, labels, 60.0)


def test_nothing_is_assigned_before_a_scale_set_polls_then_fifo_up_to_its_capacity() -> None:
    svc = service()
    ss = svc.add_scale_set("a", ["gpu"], cluster="c1")
    jobs = [svc.submit(job()) for _ in range(5)]
    assert all(j.state is JobState.QUEUED for j in jobs)
    svc.poll(ss.id, 3)
    assert [j.state for j in jobs] == [JobState.ASSIGNED] * 3 + [JobState.QUEUED] * 2
    assert svc.statistics(ss.id)["totalAssignedJobs"] == 3
    assert svc.statistics(ss.id)["totalAvailableJobs"] == 2


def test_lowering_the_capacity_never_revokes_and_finishing_a_job_frees_room() -> None:
    svc = service()
    ss = svc.add_scale_set("a", ["gpu"], cluster="c1")
    jobs = [svc.submit(job()) for _ in range(4)]
    svc.poll(ss.id, 3)
    svc.poll(ss.id, 1)
    assert sum(j.state is JobState.ASSIGNED for j in jobs) == 3  # still assigned
    started: list[Job] = []
    for i in range(3):
        svc.register_runner(ss.id, f"r{i}", started.append)
    assert len(started) == 3
    svc.finish_job(started[0], succeeded=True)
    assert jobs[3].state is JobState.QUEUED  # 2 assigned >= capacity 1: no room yet
    svc.poll(ss.id, 3)
    assert jobs[3].state is JobState.ASSIGNED and jobs[3].scale_set == "a"


def test_backlog_goes_to_the_scale_set_with_room_and_new_jobs_rotate_among_eligible_ones() -> None:
    svc = service()
    east = svc.add_scale_set("east", ["gpu"], cluster="c1")
    west = svc.add_scale_set("west", ["gpu", "linux"], cluster="c2")
    cpu_only = svc.add_scale_set("cpu", ["linux"], cluster="c2")
    svc.poll(east.id, 0)
    svc.poll(west.id, 0)
    svc.poll(cpu_only.id, 10)
    backlog = [svc.submit(job()) for _ in range(3)]
    assert all(j.state is JobState.QUEUED for j in backlog)  # nobody with labels + room
    svc.poll(west.id, 2)
    assert [j.scale_set for j in backlog] == ["west", "west", None]
    svc.poll(east.id, 10)
    assert backlog[2].scale_set == "east"
    svc.poll(west.id, 10)
    fresh = [svc.submit(job()) for _ in range(4)]
    assert sorted(j.scale_set or "" for j in fresh) == ["east", "east", "west", "west"]


def test_wire_messages_parse_with_the_production_models_in_protocol_order() -> None:
    svc = service()
    ss = svc.add_scale_set("a", ["gpu"], cluster="c1")
    svc.poll(ss.id, 2)
    j = svc.submit(job())
    offered = svc.poll(ss.id, 2)
    assert [m["messageType"] for m in offered] == ["JobAvailable"]
    assert svc.acquire(ss.id, [j.request_id, 999]) == [j.request_id]
    started: list[Job] = []
    svc.register_runner(ss.id, "runner-1", started.append)
    svc.job_running(j, "runner-1-workflow")
    svc.finish_job(j, succeeded=False, reason="prepare-job timeout")
    messages = svc.poll(ss.id, 2)
    assert [m["messageType"] for m in messages] == ["JobAssigned", "JobStarted", "JobCompleted"]
    parsed = [JOB_MESSAGE_TYPES[m["messageType"]].model_validate(m) for m in messages]
    assert parsed[1].runner_name == "runner-1" and parsed[2].result == "failed"
    assert isinstance(parsed[0].job_id, str) and parsed[0].runner_request_id == j.request_id
    stats = Statistics.model_validate(svc.statistics(ss.id))
    assert stats.total_assigned_jobs == 0 and stats.total_registered_runners == 0


def test_the_hud_view_counts_queued_jobs_a_runner_with_those_labels_could_take() -> None:
    svc = service()
    svc.add_scale_set("a", ["gpu", "linux"], cluster="c1")
    svc.submit(job(("gpu",)))
    svc.submit(job(("gpu", "linux")))
    svc.submit(job(("arm",)))
    assert svc.queued_for(["gpu", "linux"]) == 2
    assert svc.queued_for(["gpu"]) == 1
    assert svc.queue_depth == 3


def test_job_queued_while_the_listener_restarts_is_not_assigned_against_its_old_capacity() -> None:
    """Regression (issue 13, ``drain`` seed 1): maxRunners went to 0, ARC restarted the
    listener, and a job queued in the seconds before the new session polled was assigned
    against the capacity the old session had advertised: stranded on a scale set with no
    runners. The old listener deletes its session on exit; nothing is assigned until the new
    session polls (and then only up to what it advertises)."""
    svc = service()
    blue = svc.add_scale_set("blue", ["gpu"], cluster="c1")
    green = svc.add_scale_set("green", ["gpu"], cluster="c2")
    svc.poll(blue.id, 5)
    svc.close_session(blue.id)
    late = svc.submit(job())
    assert late.state is JobState.QUEUED
    svc.poll(green.id, 1)
    assert late.scale_set == "green"
    svc.poll(blue.id, 0)  # the new session advertises the drained maxRunners
    assert svc.statistics(blue.id)["totalAssignedJobs"] == 0


def broker_service(broker: str) -> ActionsService:
    loop, log = bare_log()
    return ActionsService(loop, log, broker=broker)


@pytest.mark.parametrize(
    ("broker", "advertised", "idle_runners", "busy_runners", "close_session", "assigned"),
    [
        # capacity: the advertised capacity is the total, whatever runners sit idle
        ("capacity", 1, 3, 0, False, 1),
        ("capacity", 0, 2, 0, False, 0),
        ("capacity", 2, 1, 2, False, 2),  # two running jobs fill a capacity of 2
        ("capacity", 3, 2, 0, True, 0),  # no session: nothing against its old capacity
        # idle-runners (the older world): each idle runner is room on top
        ("idle-runners", 1, 3, 0, False, 3),
        ("idle-runners", 0, 2, 0, False, 2),
        ("idle-runners", 2, 1, 2, False, 3),
        ("idle-runners", 3, 2, 0, True, 2),
    ],
)
def test_idle_runners_get_jobs_beyond_the_advertised_capacity_only_under_the_idle_runners_broker(
    broker: str,
    advertised: int,
    idle_runners: int,
    busy_runners: int,
    close_session: bool,
    assigned: int,
) -> None:
    """tart-runner-fleet ADR 0034 (amendment 2026-08-04b) measured the real service: each
    scale set was filled only up to the capacity it last advertised, the rest stayed queued,
    and a raised capacity pulled the backlog on the next poll; ARC #4374 sees idle minRunners
    runners left unused while new ones are created. So the ``capacity`` broker counts every
    job assigned and not finished against the advertised capacity and lets idle runners take
    jobs only within it; ``idle-runners`` keeps the world before issue 43."""
    svc = broker_service(broker)
    ss = svc.add_scale_set("a", ["gpu"], cluster="c1")
    started: list[Job] = []
    svc.poll(ss.id, busy_runners)
    for i in range(busy_runners):  # jobs already running, each on its own runner
        svc.submit(job())
        svc.register_runner(ss.id, f"busy-{i}", started.append)
    for i in range(idle_runners):
        svc.register_runner(ss.id, f"idle-{i}", started.append)
    assert svc.statistics(ss.id)["totalIdleRunners"] == idle_runners
    if close_session:
        svc.poll(ss.id, advertised)
        svc.close_session(ss.id)
    jobs = [svc.submit(job()) for _ in range(5)]
    if not close_session:
        svc.poll(ss.id, advertised)
    assert svc.statistics(ss.id)["totalAssignedJobs"] == assigned
    assert sum(j.state is not JobState.QUEUED for j in jobs) == assigned - busy_runners
    assert len(started) == assigned  # each assigned job found an idle runner at once


def test_an_unknown_broker_is_refused() -> None:
    loop, log = bare_log()
    with pytest.raises(ServiceError, match="unknown broker 'eager'"):
        ActionsService(loop, log, broker="eager")
