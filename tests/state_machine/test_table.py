"""The pair table's own rules: its derived sets, the mend, adoption. The rules every table
shares (every edge commits with its kind, nothing else does) are in test_tables.py."""

from __future__ import annotations

from state_machine.events import Kind
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
    TERMINAL,
    reachable_from,
)

S = PairState


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


def test_passive_edges_are_the_observable_ones() -> None:
    passive = {(e.source, e.target) for e in EDGES if e.kind is Kind.PASSIVE}
    assert (S.REQUESTED, S.READY) in passive
    assert (None, S.READY) in passive  # adoption: both pods are seen Running
    assert (S.QUEUED, S.REQUESTED) not in passive


def test_an_adopted_pair_enters_ready_through_its_own_passive_edge() -> None:
    """Regression guard: adoption went QUEUED -> REQUESTED -> READY in one batch, so the
    placeholder subscriber asked the API to create pods that were already there, and the
    log showed a launch that never happened."""
    store = PairStore("ss")
    [event] = store.commit(
        [NewPair("p", "adopted from instance i0: both pods Running", S.READY, Kind.PASSIVE)],
        at=7.0,
    )
    assert (event.source, event.target, event.kind, event.version) == (
        None, S.READY, Kind.PASSIVE, 1,
    )  # fmt: skip
    record = store.get("p")
    assert [h.state for h in record.history] == [S.READY]
    assert record.entered(S.REQUESTED) is None  # no ready timeout was ever started
