"""The statistics refresh on the wire: the real client against the loopback Actions face."""

from __future__ import annotations

from listener.arc.statistics_refresh import StatisticsRefresher
from providers.demand.statistics import StatisticsDemand
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from tests.actions.conftest import SCALE_SET_ID, SleepRecorder, pat_client, run, session_for


class Gate:
    value = 0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_refresh_is_a_session_patch_whose_statistics_reach_demand(
    face: ActionsFace, feed: ScriptedJobFeed, sleeps: SleepRecorder
) -> None:
    client = pat_client(face, sleeps)
    session = session_for(client, sleeps)
    clock = Clock()
    demand = StatisticsDemand()
    subject = StatisticsRefresher(
        session, Gate(), demand.observe_statistics, interval=2.0, monotonic=clock
    )

    async def story() -> bool:
        try:
            opened = await session.open()
            assert opened.statistics is not None
            subject.observe(opened.statistics)
            feed.add_job(SCALE_SET_ID)
            feed.poll(SCALE_SET_ID, 1)  # the feed offers it: counted as available
            clock.now += 2.0
            return await subject.tick()
        finally:
            await client.aclose()

    assert run(story()) is True
    assert [r.route for r in face.requests][-1] == "refresh_session"
    assert face.requests[-1].status == 200
    assert demand.current.queued_jobs == 1
    assert session.refreshes == 1
