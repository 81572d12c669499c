"""Fair figures: a job that failed or never started is infinitely late, never left out."""

from __future__ import annotations

import math

import pytest

from simulator.workload.figures import (
    EpisodeTracker,
    episode_summary,
    fair_summary,
    interpolated,
    time_to_fraction,
)

INF = math.inf


def test_a_job_that_never_started_pushes_the_percentiles_up_instead_of_vanishing() -> None:
    started_only = fair_summary([10.0, 20.0, 30.0, 40.0])
    with_one_lost = fair_summary([10.0, 20.0, 30.0, 40.0, INF])
    assert started_only["p50"] == 25.0
    assert with_one_lost["p50"] == 30.0  # the lost job still occupies a rank


def test_a_percentile_that_lands_on_a_never_started_job_is_never() -> None:
    # 10 jobs, 2 never started: p95 interpolates between rank 8 (finite) and 9 (inf).
    waits = [float(i) for i in range(1, 9)] + [INF, INF]
    figures = fair_summary(waits)
    assert figures["p50"] == 5.5
    assert figures["p95"] is None
    assert figures["p99"] is None


def test_interpolation_exactly_on_a_finite_rank_ignores_an_infinite_neighbour() -> None:
    # rank = 0.5 * (3 - 1) = 1.0 exactly: the value at rank 1, not inf * 0 = nan.
    assert interpolated([1.0, 2.0, INF], 50) == 2.0
    assert interpolated([1.0, 2.0, INF], 75) == INF


def test_no_jobs_at_all_gives_no_percentile() -> None:
    assert fair_summary([]) == {"p50": None, "p95": None, "p99": None}


def test_time_to_95pct_is_the_start_time_of_the_ceil_095n_th_job() -> None:
    running = [float(t) for t in range(100, 120)]  # 20 jobs ran, at 100..119 s
    assert time_to_fraction(running, 20, 0.5) == 109.0  # k = 10
    assert time_to_fraction(running, 20, 0.95) == 118.0  # k = 19


def test_time_to_95pct_is_never_when_fewer_jobs_ran() -> None:
    running = [float(t) for t in range(18)]
    assert time_to_fraction(running, 20, 0.95) is None  # k = 19 > 18 ran
    assert time_to_fraction(running, 20, 0.5) == 9.0
    assert time_to_fraction([], 0, 0.5) is None


def test_time_to_fraction_rounds_k_up() -> None:
    # N = 3: ceil(1.5) = 2nd job, ceil(2.85) = 3rd job.
    assert time_to_fraction([5.0, 1.0, 9.0], 3, 0.5) == 5.0
    assert time_to_fraction([5.0, 1.0, 9.0], 3, 0.95) == 9.0


def test_an_episode_runs_from_the_gap_opening_to_it_closing() -> None:
    tracker = EpisodeTracker()
    tracker.update(10.0, 1)
    tracker.update(10.5, 2)  # still open: one episode, not two
    tracker.update(11.2, 0)
    tracker.update(20.0, -3)  # below confirmed: no episode
    assert tracker.durations == [pytest.approx(1.2)]


def test_a_gap_that_opens_and_closes_in_the_same_instant_is_not_an_episode() -> None:
    tracker = EpisodeTracker()
    tracker.update(5.0, 1)
    tracker.update(5.0, 0)
    assert tracker.durations == []


def test_an_episode_open_at_the_end_is_closed_there() -> None:
    tracker = EpisodeTracker()
    tracker.update(100.0, 4)
    tracker.close(160.0)
    assert tracker.durations == [60.0]
    assert episode_summary(tracker.durations) == {
        "count": 1,
        "p50": 60.0,
        "p99": 60.0,
        "max": 60.0,
    }


def test_episode_summary_of_none_is_a_zero_count() -> None:
    assert episode_summary([]) == {"count": 0, "p50": None, "p99": None, "max": None}
