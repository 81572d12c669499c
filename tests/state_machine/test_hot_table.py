"""The hot-slot table's own rules: its derived sets, the mend. The rules every table shares
(every edge commits with its kind, nothing else does) are in test_tables.py."""

from __future__ import annotations

import pytest

from state_machine.events import Kind
from state_machine.hot import (
    HOT_CONFIRMED,
    HOT_HAS_PLACEHOLDER,
    HOT_LIVE,
    HOT_TERMINAL,
    HotState,
    InvalidHotMove,
    hot_allowed,
    hot_edge,
)

S = HotState
A, P = Kind.ACTIVE, Kind.PASSIVE


@pytest.mark.parametrize(
    ("name", "derived", "expected"),
    [
        # Only a confirmed slot (idle registered runner + Running placeholder) is advertised.
        ("confirmed", HOT_CONFIRMED, {S.HOT}),
        # The scaler keeps an idle runner for each slot that is or can become confirmed;
        # a TAKEN slot's runner is busy and already counted among the assigned jobs.
        ("live", HOT_LIVE, {S.WARMING, S.HOT, S.LOST}),
        ("has placeholder", HOT_HAS_PLACEHOLDER, {S.WARMING, S.HOT, S.LOST, S.TAKEN}),
        ("terminal", HOT_TERMINAL, {S.RELEASED}),
    ],
)
def test_derived_sets(name: str, derived: frozenset[HotState], expected: set[HotState]) -> None:
    assert derived == expected, name


def test_a_lost_slot_is_never_confirmed_again_without_a_mend() -> None:
    """LOST -> HOT would advertise a slot whose placeholder is gone; the only way back is the
    active mend (LOST -> WARMING: a new placeholder), then the passive WARMING -> HOT."""
    assert not hot_allowed(S.LOST, S.HOT)
    assert hot_edge(S.LOST, S.WARMING, A).kind is A
    with pytest.raises(InvalidHotMove):
        hot_edge(S.LOST, S.WARMING, P)
