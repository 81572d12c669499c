"""The statistics demand source: the scale set's own queue signal, at message speed."""

from __future__ import annotations

import pytest

from providers.actions.models import Statistics
from providers.demand import FailureMode
from providers.demand.statistics import StatisticsDemand


def test_before_any_statistics_it_reports_an_error_so_decide_uses_the_floor() -> None:
    source = StatisticsDemand()
    assert source.current.queued_jobs is None
    assert source.current.error == "no statistics received yet"
    assert source.failure_mode is FailureMode.OPEN_TO_FLOOR


def test_queued_jobs_are_the_available_jobs_of_the_latest_statistics() -> None:
    source = StatisticsDemand()
    source.observe_statistics(Statistics(total_available_jobs=7, total_assigned_jobs=3))
    assert source.current.queued_jobs == 7
    assert source.current.error is None
    assert source.current.source == "statistics"


def test_a_change_wakes_the_reconciler_and_a_repeat_does_not() -> None:
    wakes: list[int] = []
    source = StatisticsDemand(on_change=lambda: wakes.append(1))
    source.observe(5)
    source.observe(5)
    source.observe(2)
    assert len(wakes) == 2


def test_negative_counts_from_a_confused_service_are_read_as_zero() -> None:
    source = StatisticsDemand()
    source.observe(-3)
    assert source.current.queued_jobs == 0


def test_statistics_refresh_is_on_by_default_and_refuses_sub_second_intervals() -> None:
    from reconciler.settings import DemandSettings

    assert DemandSettings().statistics_refresh == 2.0
    assert DemandSettings.model_validate({"statisticsRefresh": "0"}).statistics_refresh == 0
    with pytest.raises(ValueError, match=r"statisticsRefresh must be 0 \(off\) or at least 1s"):
        DemandSettings.model_validate({"statisticsRefresh": "500ms"})


@pytest.mark.parametrize(
    ("counts", "departures"),
    [
        ((3,), 0),  # the first statistics: nothing seen leaving yet
        ((3, 1), 2),
        ((3, 5), 0),  # a rise is jobs arriving, not leaving
        ((3, 1, 4, 2), 4),  # every fall counts, not the net change
        ((2, 2, 0), 2),
        ((1, -3), 1),  # read as 0
    ],
)
def test_departures_sum_every_fall_of_the_available_jobs(
    counts: tuple[int, ...], departures: int
) -> None:
    source = StatisticsDemand()
    for count in counts:
        source.observe(count)
    assert source.departures == departures
