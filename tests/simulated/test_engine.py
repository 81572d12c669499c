"""The event loop runs callbacks in (time, scheduling order); the event log can count only."""

from __future__ import annotations

import pytest

from reconciler.clock import ManualClock
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ([(5.0, "a"), (1.0, "b"), (3.0, "c")], ["b", "c", "a"]),  # by time
        ([(2.0, "a"), (2.0, "b"), (2.0, "c")], ["a", "b", "c"]),  # same time: as scheduled
        ([(2.0, "a"), (1.0, "b"), (2.0, "c"), (1.0, "d")], ["b", "d", "a", "c"]),
        ([(-4.0, "past"), (0.0, "now")], ["past", "now"]),  # the past runs now, in order
    ],
)
def test_callbacks_run_by_time_then_in_the_order_they_were_scheduled(schedule, expected):
    loop = EventLoop(start=100.0)
    ran: list[str] = []
    for delay, name in schedule:
        loop.call_at(100.0 + delay, ran.append, name)
    loop.run_until(200.0)
    assert ran == expected


def test_a_cancelled_callback_does_not_run_and_the_clock_ends_at_until():
    loop = EventLoop(start=0.0)
    ran: list[str] = []
    loop.call_later(1.0, ran.append, "kept")
    loop.call_later(1.0, ran.append, "cancelled").cancel()
    loop.run_until(10.0)
    assert ran == ["kept"] and loop.now() == 10.0


@pytest.mark.parametrize(("keep", "lines"), [(True, 2), (False, 0)])
def test_an_event_log_that_keeps_no_lines_still_counts_events_by_type(keep, lines):
    log = EventLog("s", ManualClock(1.0), 0.0, keep=keep)
    log.emit("job_queued", job=1)
    log.emit("job_queued", job=2)
    assert len(list(log.lines())) == lines
    assert log.counts == {"job_queued": 2}
