"""Statistics while blind (listener/arc/statistics_refresh.py): the rule, the refresher, the wire.

Without it a listener whose demand comes from statistics only never learns of a job queued while
every advertised slot is taken (0 at scale-to-zero): no message comes, so no statistics come.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from listener.arc.statistics_refresh import MAX_BACKOFF, StatisticsRefresher
from providers.actions.errors import TransportError
from providers.actions.models import Statistics
from providers.demand.statistics import StatisticsDemand, needs_refresh, refresh_tick
from reconciler.clock import ManualClock
from tests.providers.actions.conftest import run

# --- the rule (shared with the simulated world) ----------------------------------------------


@pytest.mark.parametrize(
    ("advertised", "assigned", "age", "interval", "expected", "why"),
    [
        (0, 0, 2.0, 2.0, True, "scale-to-zero, stale: refresh"),
        (0, 0, 1.0, 2.0, False, "one second before the interval: still fresh"),
        (0, 0, 3.0, 2.0, True, "one second after the interval"),
        (3, 3, 5.0, 2.0, True, "every slot assigned: no message can come"),
        (3, 2, 5.0, 2.0, False, "a free slot: a new job comes as a message"),
        (0, 0, 999.0, 0.0, False, "interval 0 turns it off"),
        (1, 4, 5.0, 2.0, True, "capacity dropped below the assigned jobs"),
    ],
)
def test_needs_refresh(
    advertised: int, assigned: int, age: float, interval: float, expected: bool, why: str
) -> None:
    result = needs_refresh(
        advertised=advertised, assigned_jobs=assigned, age=age, interval=interval
    )
    assert result is expected, why


@pytest.mark.parametrize(
    ("advertised", "assigned", "age", "expected", "why"),
    [
        (6, 6, 0.9, False, "a batch in flight, a tenth of a second before the busy interval"),
        (6, 6, 1.0, True, "a batch in flight: the busy interval (1 s) is in force"),
        (0, 0, 1.0, False, "nothing assigned: the idle interval (2 s) is in force"),
        (0, 0, 2.0, True, "nothing assigned, stale at the idle interval"),
        (7, 6, 1.5, False, "a free slot: a new job comes as a message, busy or not"),
    ],
)
def test_jobs_in_flight_refresh_at_the_busy_interval(
    advertised: int, assigned: int, age: float, expected: bool, why: str
) -> None:
    """Regression (issue 31, merge queue): with every slot of a batch taken the listener read
    statistics only every 2 s, so a job queued in a batch waited up to 2 s before its pair was
    even requested."""
    result = needs_refresh(
        advertised=advertised, assigned_jobs=assigned, age=age, interval=2.0, busy_interval=1.0
    )
    assert result is expected, why


@pytest.mark.parametrize(
    ("interval", "busy", "tick"),
    [(2.0, 1.0, 1.0), (2.0, None, 2.0), (1.0, 5.0, 1.0), (0.0, 1.0, 0.0)],
)
def test_the_refresher_ticks_at_the_shorter_interval_and_never_when_off(
    interval: float, busy: float | None, tick: float
) -> None:
    assert refresh_tick(interval, busy) == tick


# --- the refresher against an in-memory session ----------------------------------------------


class FakeSession:
    def __init__(self, answers: list[Statistics | Exception]) -> None:
        self.answers = answers
        self.calls = 0
        self.is_open = True

    async def refresh_statistics(self) -> Statistics | None:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Gate:
    def __init__(self, value: int) -> None:
        self.value = value


class Recorded:
    def __init__(self) -> None:
        self.results: list[bool] = []

    def record_statistics_refresh(self, *, ok: bool) -> None:
        self.results.append(ok)


def down() -> TransportError:
    return TransportError(
        "refresh session", method="PATCH", url="https://x.invalid/s", reason="reset"
    )


def stats(available: int, assigned: int = 0) -> Statistics:
    return Statistics(total_available_jobs=available, total_assigned_jobs=assigned)


def refresher(
    session: FakeSession, advertised: int = 0, busy_interval: float | None = None
) -> tuple[StatisticsRefresher, StatisticsDemand, ManualClock, Recorded]:
    clock, metrics = ManualClock(100.0), Recorded()
    demand = StatisticsDemand()
    subject = StatisticsRefresher(
        session,
        Gate(advertised),
        demand.observe_statistics,
        interval=2.0,
        busy_interval=busy_interval,
        metrics=metrics,
        clock=clock,
    )
    return subject, demand, clock, metrics


def test_a_job_queued_at_zero_reaches_demand_through_a_refresh() -> None:
    session = FakeSession([stats(available=1)])
    subject, demand, clock, metrics = refresher(session)
    subject.observe(stats(available=0))  # the session's own statistics at start
    clock.advance(2.0)
    assert run(subject.tick()) is True
    assert demand.current.queued_jobs == 1
    assert (session.calls, metrics.results) == (1, [True])


def test_no_refresh_before_the_first_statistics_or_while_fresh() -> None:
    session = FakeSession([])
    subject, _, clock, _ = refresher(session)
    assert run(subject.tick()) is False  # nothing observed yet
    subject.observe(stats(available=0))
    clock.advance(1.0)
    assert run(subject.tick()) is False  # one second before the interval
    assert session.calls == 0


def test_a_batch_in_flight_is_refreshed_every_busy_interval() -> None:
    session = FakeSession([stats(available=2, assigned=3)])
    subject, demand, clock, _ = refresher(session, advertised=3, busy_interval=1.0)
    subject.observe(stats(available=0, assigned=3))  # every advertised slot assigned
    assert subject.next_delay() == 1.0
    clock.advance(1.0)
    assert run(subject.tick()) is True
    assert demand.current.queued_jobs == 2


def test_a_listener_with_a_free_slot_makes_no_request() -> None:
    session = FakeSession([])
    subject, _, clock, _ = refresher(session, advertised=2)
    subject.observe(stats(available=0, assigned=1))
    clock.advance(60.0)
    assert run(subject.tick()) is False
    assert session.calls == 0


def test_a_closed_session_is_not_refreshed() -> None:
    session = FakeSession([])
    subject, _, clock, _ = refresher(session)
    subject.observe(stats(available=0))
    session.is_open = False
    clock.advance(60.0)
    assert run(subject.tick()) is False
    assert session.calls == 0


def test_failures_back_off_log_once_and_recover(caplog: pytest.LogCaptureFixture) -> None:
    boom = down()
    session = FakeSession([boom, boom, boom, stats(available=4)])
    subject, demand, clock, metrics = refresher(session)
    subject.observe(stats(available=0))
    delays = []
    with caplog.at_level(logging.DEBUG, logger="listener.arc.statistics_refresh"):
        for _ in range(4):
            clock.advance(60.0)
            run(subject.tick())
            delays.append(subject.next_delay())
    assert delays == [4.0, 8.0, 16.0, 2.0]
    assert metrics.results == [False, False, False, True]
    assert demand.current.queued_jobs == 4
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "statistics refresh failed" in warnings[0].getMessage()
    assert any("works again after 3 failure(s)" in r.getMessage() for r in caplog.records)


def test_the_back_off_is_capped() -> None:
    session = FakeSession([down()] * 12)
    subject, _, clock, _ = refresher(session)
    subject.observe(stats(available=0))
    for _ in range(12):
        clock.advance(1_000.0)
        run(subject.tick())
    assert subject.next_delay() == MAX_BACKOFF


def test_run_returns_at_once_when_turned_off() -> None:
    session = FakeSession([])
    subject = StatisticsRefresher(session, Gate(0), lambda _: None, interval=0.0)
    run(subject.run(asyncio.Event()), timeout=2.0)  # would hang without the interval check
    assert session.calls == 0
