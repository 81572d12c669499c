"""The scaler keeps idle runners for hot slots (``capacityAware.hotRunners``,
docs/design.md#hot-runners): the EphemeralRunnerSet target is assigned jobs + live hot slots
(+ minRunners), within maxRunners, as ARC's minRunners does since 0.8."""

from __future__ import annotations

import pytest

from .test_scaler import RecordingWriter, ers, scaler


@pytest.mark.parametrize(
    ("min_runners", "max_runners", "hot", "assigned", "target"),
    [
        (0, 10, 0, 3, 3),  # no hot slots: stock ARC's target
        (0, 10, 2, 0, 2),  # two idle runners kept for two hot slots
        (0, 10, 2, 3, 5),  # on top of the assigned jobs
        (1, 10, 2, 3, 6),  # and of minRunners
        (0, 4, 2, 3, 4),  # within maxRunners
        (0, 0, 2, 0, 0),  # drain: maxRunners 0 is a hard cap
    ],
)
def test_target_is_assigned_plus_hot_within_max_runners(
    min_runners: int, max_runners: int, hot: int, assigned: int, target: int
) -> None:
    s = scaler(RecordingWriter(), min_runners=min_runners, max_runners=max_runners)
    s.set_hot_runners(hot)
    assert s.handle_desired_runner_count(assigned) == target


def test_idle_at_the_hot_floor_is_authoritative_so_arc_scales_surplus_idle_runners_down() -> None:
    """With patchID > 0 ARC's ERS controller only scales up: surplus idle runners (a hot slot
    released, maxRunners lowered) would stay until a patchID 0, which comes when the target
    is unchanged at the floor (minRunners + hot) and no job event happened since."""
    writer = RecordingWriter()
    s = scaler(writer)
    s.set_hot_runners(3)
    s.handle_desired_runner_count(0)
    s.set_hot_runners(1)  # two slots released
    s.handle_desired_runner_count(0)  # new intent: target changed
    s.handle_desired_runner_count(0)  # unchanged at the floor: authoritative
    assert writer.sets == [ers(0, 3), ers(1, 1), ers(0, 1)]


def test_without_hot_slots_the_bytes_are_stock_arcs() -> None:
    plain, hot0 = RecordingWriter(), RecordingWriter()
    a, b = scaler(plain, min_runners=1), scaler(hot0, min_runners=1)
    b.set_hot_runners(0)
    for count in (0, 2, 2, 0, 0):
        a.handle_desired_runner_count(count)
        b.handle_desired_runner_count(count)
    assert plain.sets == hot0.sets


def test_a_negative_hot_count_is_refused_and_changes_nothing() -> None:
    s = scaler(RecordingWriter())
    s.set_hot_runners(2)
    with pytest.raises(ValueError, match="hot_runners must be >= 0, got -1"):
        s.set_hot_runners(-1)
    assert s.hot_runners == 2
