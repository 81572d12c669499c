"""The transition table is the specification: every edge works, nothing else does."""

from __future__ import annotations

import itertools

import pytest

from state_machine.events import Kind
from state_machine.machine import InvalidTransition, PairMachine
from state_machine.states import PairState, Role
from state_machine.store import Move, NewPair, Observed, PairStore
from state_machine.table import (
    CREATES_PODS_FROM,
    EDGES,
    HAS_PODS,
    IN_FLIGHT,
    KEEPS_PODS,
    LIVE,
    RELEASED,
    TARGETS,
    TERMINAL,
    allowed,
    reachable_from,
)

S = PairState
ALL = list(PairState)
TABLE_PAIRS = {(e.source, e.target) for e in EDGES}

# The expected graph, written out independently of table.py so a change to the table must
# be made twice (here and there) on purpose.
EXPECTED = {
    (S.QUEUED, S.REQUESTED), (S.QUEUED, S.DELETED),
    (S.REQUESTED, S.PARTIAL), (S.REQUESTED, S.READY), (S.REQUESTED, S.TIMED_OUT),
    (S.REQUESTED, S.PREEMPTED), (S.REQUESTED, S.DELETED),
    (S.PARTIAL, S.READY), (S.PARTIAL, S.REQUESTED), (S.PARTIAL, S.TIMED_OUT),
    (S.PARTIAL, S.PREEMPTED), (S.PARTIAL, S.DELETED),
    (S.READY, S.PREEMPTED), (S.READY, S.DELETED),
    (S.PREEMPTED, S.DELETED), (S.PREEMPTED, S.REQUESTED),
    (S.TIMED_OUT, S.DELETED),
}  # fmt: skip


def test_table_is_exactly_the_specified_graph() -> None:
    assert TABLE_PAIRS == EXPECTED


def test_every_state_is_covered_by_the_table() -> None:
    """Adding a state breaks this test until its edges are specified."""
    assert set(TARGETS) == set(ALL)
    for state in ALL:
        if state is not S.QUEUED:
            assert any(e.target is state for e in EDGES), f"{state} is unreachable"
        if state is not S.DELETED:
            assert TARGETS[state], f"{state} is a dead end"


def _store_in(state: PairState) -> PairStore:
    """A store holding pair 'p' in ``state``, reached through valid edges only."""
    path = {
        S.QUEUED: [],
        S.REQUESTED: [S.REQUESTED],
        S.PARTIAL: [S.REQUESTED, S.PARTIAL],
        S.READY: [S.REQUESTED, S.READY],
        S.PREEMPTED: [S.REQUESTED, S.READY, S.PREEMPTED],
        S.TIMED_OUT: [S.REQUESTED, S.TIMED_OUT],
    }[state]
    store = PairStore("ss")
    store.commit([NewPair("p", "test")], at=0.0)
    for i, target in enumerate(path, start=1):
        store.commit([Move("p", target, Kind.ACTIVE, "setup")], at=float(i))
    assert store.get("p").state is state
    return store


@pytest.mark.parametrize(("source", "target"), sorted(TABLE_PAIRS), ids=str)
def test_every_row_of_the_table_is_applied(source: PairState, target: PairState) -> None:
    store = _store_in(source)
    before = store.get("p")
    [event] = store.commit([Move("p", target, Kind.ACTIVE, "row under test")], at=100.0)
    assert (event.source, event.target, event.version) == (source, target, before.version + 1)
    assert event.reason == "row under test"
    if target is S.DELETED:
        assert "p" not in store
    else:
        assert store.get("p").state is target


NON_EDGES = [
    (s, t)
    for s, t in itertools.product(ALL, ALL)
    if (s, t) not in TABLE_PAIRS and s is not S.DELETED
]


@pytest.mark.parametrize(("source", "target"), NON_EDGES, ids=str)
def test_every_pair_not_in_the_table_is_rejected_and_changes_nothing(
    source: PairState, target: PairState
) -> None:
    store = _store_in(source)
    before = store.get("p")
    with pytest.raises(InvalidTransition):
        store.commit([Move("p", target, Kind.ACTIVE, "not allowed")], at=100.0)
    assert store.get("p") == before


@pytest.mark.parametrize("target", ALL, ids=str)
def test_nothing_leaves_deleted(target: PairState) -> None:
    with pytest.raises(InvalidTransition):
        PairMachine().check("p", S.DELETED, target)
    assert not allowed(S.DELETED, target)


def test_derived_predicates_follow_from_the_table() -> None:
    assert {S.DELETED} == TERMINAL
    assert {S.REQUESTED, S.PARTIAL} == IN_FLIGHT
    assert {S.QUEUED, S.REQUESTED, S.PARTIAL, S.READY} == LIVE
    assert {S.REQUESTED, S.PARTIAL, S.READY, S.PREEMPTED, S.TIMED_OUT} == HAS_PODS
    # TIMED_OUT and DELETED never back capacity again: their pods are given back.
    assert {S.TIMED_OUT, S.DELETED} == RELEASED
    assert {S.REQUESTED, S.PARTIAL, S.READY, S.PREEMPTED} == KEEPS_PODS
    # A request and a mend create pods; PARTIAL -> REQUESTED (a half stopped counting) does not.
    assert {S.QUEUED, S.PREEMPTED} == CREATES_PODS_FROM
    assert S.READY in reachable_from(S.QUEUED)
    # Only through the mend, which decide chooses: a survivor alone never becomes READY, so
    # PREEMPTED is not LIVE (it counts once re-paired, reconciler/survivors.py).
    assert S.READY in reachable_from(S.PREEMPTED)
    assert S.READY not in reachable_from(S.PREEMPTED, through_mend=False)


def test_a_mend_is_a_fresh_request() -> None:
    """Regression guard: a mended pair kept the REQUESTED time of its first request and the
    halves it had seen, so the ready timeout fired at once and the half being created again
    read as "seen, then gone" on the next sync."""
    store = PairStore("ss")
    store.commit([NewPair("p", "test")], at=0.0)
    store.commit([Move("p", S.REQUESTED, Kind.ACTIVE, "launch")], at=1.0)
    store.commit([Observed("p", frozenset((Role.RUNNER, Role.WORKFLOW)))], at=2.0)
    for at, target in ((2.0, S.PARTIAL), (3.0, S.READY), (4.0, S.PREEMPTED)):
        store.commit([Move("p", target, Kind.PASSIVE, "observed")], at=at)
    assert store.get("p").seen and store.get("p").entered(S.REQUESTED) == 1.0
    store.commit([Move("p", S.REQUESTED, Kind.ACTIVE, "mend")], at=500.0)
    after = store.get("p")
    assert after.entered(S.REQUESTED) == 500.0
    assert after.entered(S.PARTIAL) is None
    assert after.seen == frozenset()


def test_every_state_can_reach_deleted() -> None:
    """No pair can get stuck forever: DELETED is reachable from every state."""
    for state in ALL:
        if state is not S.DELETED:
            assert S.DELETED in reachable_from(state), state


def test_passive_edges_are_the_observable_ones() -> None:
    passive = {(e.source, e.target) for e in EDGES if e.kind is Kind.PASSIVE}
    assert (S.REQUESTED, S.READY) in passive
    assert (S.QUEUED, S.REQUESTED) not in passive
    assert all(e.when for e in EDGES), "every edge says when it happens"


@pytest.mark.parametrize(("source", "target"), list(itertools.product(ALL, ALL)), ids=str)
def test_fast_lookup_agrees_with_firing_the_transitions_machine(
    source: PairState, target: PairState
) -> None:
    """The hot path validates with a set read back from the machine; the machine of record
    (firing its trigger) must give the same answer for every pair of states."""
    machine = PairMachine()
    verdicts = []
    for validate in (machine.check, machine.fire):
        try:
            validate("p", source, target)
            verdicts.append(True)
        except InvalidTransition:
            verdicts.append(False)
    assert verdicts[0] == verdicts[1] == allowed(source, target)
