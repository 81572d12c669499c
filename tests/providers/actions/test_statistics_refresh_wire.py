"""The statistics refresh on the wire: the real client against the loopback Actions face."""

from __future__ import annotations

from listener.arc.statistics_refresh import StatisticsRefresher
from providers.demand.statistics import StatisticsDemand
from reconciler.clock import ManualClock
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from tests.providers.actions.conftest import (
    SCALE_SET_ID,
    SleepRecorder,
    pat_client,
    run,
    session_for,
)


class Gate:
    value = 0


def test_the_refresh_is_a_session_patch_whose_statistics_reach_demand(
    face: ActionsFace, feed: ScriptedJobFeed, sleeps: SleepRecorder
) -> None:
    client = pat_client(face, sleeps)
    session = session_for(client, sleeps)
    clock = ManualClock(100.0)
    demand = StatisticsDemand()
    subject = StatisticsRefresher(
        session, Gate(), demand.observe_statistics, interval=2.0, clock=clock
    )

    async def story() -> bool:
        try:
            opened = await session.open()
            assert opened.statistics is not None
            subject.observe(opened.statistics)
            feed.add_job(SCALE_SET_ID)
            feed.poll(SCALE_SET_ID, 1)  # the feed offers it: counted as available
            clock.advance(2.0)
            return await subject.tick()
        finally:
            await client.aclose()

    assert run(story()) is True
    assert [r.route for r in face.requests][-1] == "refresh_session"
    assert face.requests[-1].status == 200
    assert demand.current.queued_jobs == 1
    assert session.refreshes == 1


def test_jobs_waiting_for_advertised_room_count_as_available_like_the_simulated_service() -> None:
    """docs/protocol.md#statistics: ``totalAvailableJobs`` counts the scale set's jobs still
    queued for advertised room (the face also counts offered, not yet acquired ones). The
    face counted only offered ones, so a listener behind an advertised 0 (or 2) saw no demand
    for a burst of 8 while the simulated service (simulator/workload/actions.py) showed all 8
    (docs/real-vs-simulated.md)."""
    from simulator.engine.eventlog import EventLog
    from simulator.engine.loop import EventLoop
    from simulator.workload.actions import ActionsService
    from simulator.workload.jobs import JobSpec

    feed = ScriptedJobFeed()
    for _ in range(8):
        feed.add_job(SCALE_SET_ID)
    feed.poll(SCALE_SET_ID, 2)  # two offered, six still queued for room
    loop = EventLoop()
    service = ActionsService(loop, EventLog("t", loop, loop.start))
    ss = service.add_scale_set("arc-runners", ("arc-runners",), cluster="c")
    for _ in range(8):
        service.submit(JobSpec(at=0.0, labels=("arc-runners",), duration=20.0))
    service.poll(ss.id, 2)
    face_available = feed.statistics(SCALE_SET_ID)["totalAvailableJobs"]
    assert face_available == 8
    # The simulated service leaves the offered two out; both count the six queued for room.
    assert service.statistics(ss.id)["totalAvailableJobs"] == 6
    acquired = feed.acquire(SCALE_SET_ID, feed.jobs_in("assigned"))
    assert len(acquired) == 2 and feed.statistics(SCALE_SET_ID)["totalAvailableJobs"] == 6
