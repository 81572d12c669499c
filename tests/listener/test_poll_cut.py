"""When a capacity change cuts the long poll in flight (listener/arc/poll_cut.py).

The same rule serves the listener's gate and the simulated listener, so the table is the
contract for both."""

from __future__ import annotations

import pytest

from listener.arc.poll_cut import DROP, RISE, PollCut

# (story, rule, header sent, jobs assigned when sent, value now, direction)
CASES = [
    ("a drop cuts by default", PollCut(), 3, 1, 2, DROP),
    ("a drop with cutPollOnDrop off does not", PollCut(cut_on_drop=False), 3, 1, 2, ""),
    ("a rise with free slots does not cut by default", PollCut(cut_when_full=True), 3, 1, 4, ""),
    ("a rise with cutPollOnRise cuts", PollCut(cut_on_rise=True), 3, 1, 4, RISE),
    (
        "a rise while every advertised slot is taken cuts (cutPollWhenFull)",
        PollCut(cut_when_full=True),
        2,
        2,
        3,
        RISE,
    ),
    ("from zero at scale-to-zero: full, cuts", PollCut(cut_when_full=True), 0, 0, 1, RISE),
    ("full, but cutPollWhenFull off", PollCut(), 2, 2, 3, ""),
    ("assigned jobs unknown: not taken as full", PollCut(cut_when_full=True), 0, None, 1, ""),
    ("no change, no cut", PollCut(cut_when_full=True, cut_on_rise=True), 2, 2, 2, ""),
]


@pytest.mark.parametrize(
    ("story", "rule", "header", "assigned", "value", "direction"), CASES, ids=[c[0] for c in CASES]
)
def test_the_direction_of_a_cut(
    story: str, rule: PollCut, header: int, assigned: int | None, value: int, direction: str
) -> None:
    rule.begin_poll(header, assigned)
    assert rule.direction(value) == direction


def test_changes_inside_the_window_arm_one_timer_and_an_undone_change_does_not_cut() -> None:
    rule = PollCut(cut_when_full=True)
    rule.begin_poll(0, 0)
    assert rule.changed(1) is True
    assert rule.changed(2) is False  # coalesced into the armed timer
    assert rule.fire(0) == ""  # back to the header when the timer fires: nothing to cut


def test_a_new_poll_forgets_the_fullness_of_the_last() -> None:
    """A poll that was full must not make the next, which has free slots, cut on a rise."""
    rule = PollCut(cut_when_full=True)
    rule.begin_poll(2, 2)
    rule.begin_poll(3, 2)
    assert rule.direction(4) == ""
