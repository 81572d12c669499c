"""The hot-slot table is the specification: every edge works, nothing else does."""

from __future__ import annotations

import itertools

import pytest

from state_machine.events import Kind
from state_machine.hot import (
    HOT_CONFIRMED,
    HOT_EDGES,
    HOT_HAS_PLACEHOLDER,
    HOT_INITIAL,
    HOT_LIVE,
    HOT_TARGETS,
    HOT_TERMINAL,
    HotState,
    InvalidHotMove,
    hot_allowed,
    hot_edge,
)

S = HotState
A, P = Kind.ACTIVE, Kind.PASSIVE

# Written out independently of state_machine/hot.py, so a change to the table is made twice.
EXPECTED = {
    (S.WARMING, S.HOT, P), (S.WARMING, S.TAKEN, P), (S.WARMING, S.RELEASED, A),
    (S.HOT, S.TAKEN, P), (S.HOT, S.LOST, P), (S.HOT, S.WARMING, P), (S.HOT, S.RELEASED, A),
    (S.LOST, S.WARMING, A), (S.LOST, S.TAKEN, P), (S.LOST, S.RELEASED, A),
    (S.TAKEN, S.RELEASED, P), (S.TAKEN, S.RELEASED, A),
}  # fmt: skip


def test_the_table_is_exactly_the_specified_graph() -> None:
    assert {(e.source, e.target, e.kind) for e in HOT_EDGES} == EXPECTED
    assert len(HOT_EDGES) == len(EXPECTED)  # no edge twice


def test_every_state_is_reachable_and_only_released_is_a_dead_end() -> None:
    for state in S:
        if state is not HOT_INITIAL:
            assert any(e.target is state for e in HOT_EDGES), f"{state} is unreachable"
        assert bool(HOT_TARGETS[state]) is (state is not S.RELEASED)


def test_every_edge_says_when_it_happens() -> None:
    for edge in HOT_EDGES:
        assert edge.when and edge.when[0].islower(), edge


@pytest.mark.parametrize(("source", "target"), list(itertools.product(S, S)))
def test_allowed_is_exactly_the_table(source: HotState, target: HotState) -> None:
    in_table = any((source, target) == (s, t) for s, t, _ in EXPECTED)
    assert hot_allowed(source, target) is in_table
    for kind in Kind:
        if (source, target, kind) in EXPECTED:
            assert hot_edge(source, target, kind).kind is kind
        else:
            with pytest.raises(InvalidHotMove, match=f"{source.value} -> {target.value}"):
                hot_edge(source, target, kind)


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
