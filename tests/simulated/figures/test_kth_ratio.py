"""The k-th job ratio: time until k jobs run, candidate over reference, for k <= K(reference)."""

from __future__ import annotations

import math

import pytest

from simulator.measurement.kth import (
    JobTimes,
    Window,
    burst_ratio,
    format_ratio,
    kth_ratio,
    whole_run_ratio,
)


def test_the_ratio_is_the_worst_k_not_the_average() -> None:
    reference = [10.0, 20.0, 30.0]
    candidate = [11.0, 40.0, 31.0]  # the 2nd job is twice as late
    r = kth_ratio(sorted(candidate), reference)
    assert (r.value, r.k, r.compared) == (31.0 / 20.0, 2, 3)


def test_failing_jobs_earns_nothing_the_missing_kth_job_is_infinitely_late() -> None:
    r = kth_ratio([5.0], [10.0, 20.0])
    assert r.value == math.inf
    assert r.k == 2
    assert format_ratio(r) == "inf (k=2/2)"


def test_a_job_missing_at_the_end_of_the_run_is_censored_at_the_horizon_not_infinite() -> None:
    # The reference started its 2nd job 10 s before the end; the candidate had not yet: its
    # ratio is at least 100/90, not inf (it may start one second after the end).
    late = kth_ratio([5.0], [10.0, 90.0], horizon=100.0)
    assert late.value == pytest.approx(100.0 / 90.0)
    assert late.censored
    assert format_ratio(late) == ">=1.11 (k=2/2)"


def test_a_job_lost_early_still_shows_as_a_large_ratio_with_the_horizon() -> None:
    # The reference ran its 2nd job at 20 s; the candidate never did in a 3 600 s run.
    lost = kth_ratio([5.0], [10.0, 20.0], horizon=3600.0)
    assert lost.value == 180.0
    assert lost.censored


def test_jobs_beyond_what_the_reference_got_running_are_not_compared() -> None:
    r = kth_ratio([10.0, 20.0, 500.0], [10.0, 20.0])
    assert r.value == 1.0
    assert r.compared == 2


def test_the_whole_run_clock_starts_at_the_first_queued_job_not_the_scenario_start() -> None:
    # An idle hour before the first job must not dilute the ratio.
    reference = [JobTimes(3600.0, 3610.0), JobTimes(3600.0, 3620.0)]
    candidate = [JobTimes(3600.0, 3620.0), JobTimes(3600.0, 3640.0)]
    assert whole_run_ratio(candidate, reference).value == 2.0


def test_burst_windows_have_their_own_origin_and_ignore_jobs_outside_them() -> None:
    window = Window(1000.0, 1060.0, ("linux",))
    reference = [
        JobTimes(10.0, 20.0, ("linux",)),  # outside the window
        JobTimes(1000.0, 1030.0, ("linux",)),
        JobTimes(1050.0, 1060.0, ("linux",)),
    ]
    candidate = [
        JobTimes(10.0, 5000.0, ("linux",)),  # very late, but not part of the burst
        JobTimes(1000.0, 1045.0, ("linux",)),
        JobTimes(1050.0, 1090.0, ("linux",)),
    ]
    r = burst_ratio(candidate, reference, [window])
    assert r.value == 1.5  # max(45/30, 90/60)
    assert r.where == "linux @ 16.6667 min"


def test_burst_windows_only_count_jobs_with_the_streams_labels() -> None:
    window = Window(0.0, 60.0, ("gpu",))
    assert not window.holds(JobTimes(30.0, 40.0, ("linux",)))
    assert window.holds(JobTimes(30.0, 40.0, ("gpu", "linux")))
    assert burst_ratio([], [JobTimes(30.0, 40.0, ("linux",))], [window]).value is None
