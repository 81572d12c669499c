"""``tune`` says how far a sweep is and about how long is left (issue 32: a 22-minute sweep
printed nothing but a bar on terminals, and nothing at all in a CI log)."""

from __future__ import annotations

import io

import pytest

from reconciler.clock import ManualClock
from tuning.sweep import RunProgress


@pytest.mark.parametrize(
    ("done", "elapsed", "expected"),
    [
        (1, 30.0, "tune: 1/4 runs done, 30s elapsed, about 1m 30s left"),
        (2, 90.0, "tune: 2/4 runs done, 1m 30s elapsed, about 1m 30s left"),
        (3, 3 * 1500.0, "tune: 3/4 runs done, 1h 15m elapsed, about 25m 00s left"),
        (4, 200.0, "tune: 4/4 runs done, 3m 20s elapsed"),
    ],
)
def test_each_line_gives_runs_done_of_total_and_the_time_left(
    done: int, elapsed: float, expected: str
) -> None:
    clock = ManualClock(100.0)
    progress = RunProgress(4, io.StringIO(), clock)
    clock.advance(elapsed)
    assert progress.line(done) == expected


def test_a_log_that_is_not_a_terminal_gets_a_line_per_run() -> None:
    clock, stream = ManualClock(100.0), io.StringIO()
    progress = RunProgress(3, stream, clock)
    for done in (1, 2, 3):
        clock.advance(10)
        progress(done / 3)
    assert stream.getvalue().splitlines() == [
        "tune: 1/3 runs done, 10s elapsed, about 20s left",
        "tune: 2/3 runs done, 20s elapsed, about 10s left",
        "tune: 3/3 runs done, 30s elapsed",
    ]


def test_a_long_sweep_in_a_log_prints_every_twentieth_and_the_last() -> None:
    clock, stream = ManualClock(100.0), io.StringIO()
    progress = RunProgress(100, stream, clock)
    for done in range(1, 101):
        clock.advance(1)
        progress(done / 100)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 20
    assert lines[0].startswith("tune: 5/100 runs done") and lines[-1].startswith("tune: 100/100")
