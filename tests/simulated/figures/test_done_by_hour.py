"""Jobs completed by every whole hour (simulator/measurement/done_by_hour.py): the figure
that says whether a strategy that fails no job is ever behind one that fails some."""

from __future__ import annotations

import math

import pytest

from simulator.measurement.done_by_hour import (
    HourlyGap,
    completed_by,
    describe,
    hour_marks,
    hourly_gap,
    worst_of,
)

H = 3600.0


@pytest.mark.parametrize(
    ("duration", "marks"),
    [
        (H - 1, []),
        (H, [H]),
        (H + 1, [H]),
        (4 * H, [H, 2 * H, 3 * H, 4 * H]),
    ],
)
def test_hour_marks_are_every_whole_hour_up_to_the_end(duration: float, marks: list[float]) -> None:
    assert hour_marks(duration) == marks


def test_a_job_finished_on_the_mark_counts_for_that_hour_one_second_later_does_not() -> None:
    assert completed_by([H - 1, H, H + 1], [H, 2 * H]) == [2, 3]


def test_worst_gap_is_the_most_negative_mark_and_counts_every_short_mark() -> None:
    """Ahead in total but behind at 1 h: the hourly figure must show the early shortfall
    that the total hides."""
    candidate = [1.5 * H, 1.6 * H, 1.7 * H]
    reference = [0.5 * H, 0.6 * H]
    gap = hourly_gap(candidate, reference, 3 * H, seed=4)
    assert gap == HourlyGap(gap=-2, hour=1, short_marks=1, marks=3, seed=4, late_by=0.6 * H)
    assert describe(worst_of([gap])) == "-2 (seed 4 1 h); short 1/3, late 2160.0 s"


def test_late_by_tells_a_job_a_second_past_the_hour_from_one_never_completed() -> None:
    """Both runs are one job short at 1 h; only lateness separates a tie in practice from a
    strategy that never caught up."""
    assert hourly_gap([H + 1], [H - 5], 2 * H).late_by == 1.0
    never = hourly_gap([], [H - 5], 2 * H)
    assert (never.short_marks, never.late_by) == (2, math.inf)
    assert describe(never).endswith("late never")


def test_a_tie_at_every_mark_is_not_short() -> None:
    gap = hourly_gap([10.0, 20.0], [15.0, 25.0], 2 * H)
    assert (gap.gap, gap.short_marks) == (0, 0)
    assert describe(worst_of([gap])) == ">= ref (2 marks)"


def test_worst_of_names_the_worst_run_and_sums_marks_over_runs() -> None:
    runs = [
        HourlyGap(0, 1, 0, 4, seed=1),
        HourlyGap(-1, 3, 2, 4, seed=2, late_by=7.0),
        HourlyGap(-1, 2, 1, 4, seed=3, late_by=30.0),
    ]
    assert worst_of(runs) == HourlyGap(-1, 3, 3, 12, seed=2, late_by=30.0)
    assert worst_of([]) is None
    assert describe(None) == "-"


def test_a_run_shorter_than_an_hour_has_no_marks() -> None:
    assert hourly_gap([1.0], [], 10.0) == HourlyGap(0, 0, 0, 0, None)
