"""The sweep hands the costliest replays to the workers first and returns plan order."""

from __future__ import annotations

from tuning.sweep import Run, longest_first


def test_capacity_aware_runs_go_first_and_plan_order_is_kept_within_a_cost():
    runs = [
        Run("baseline", "baseline", 1),
        Run("overprovision", "overprovision", 1),
        Run("p01", "capacity-aware", 1),
        Run("p02", "capacity-aware", 1),
    ]
    order = longest_first(runs)
    assert [i for i, _ in order] == [2, 3, 0, 1]
    assert [run for _, run in order] == [runs[2], runs[3], runs[0], runs[1]]
