"""The versioned store: atomic batches, bounded history, DELETED records leave."""

from __future__ import annotations

import pytest

from state_machine.events import Kind
from state_machine.machine import InvalidTransition
from state_machine.record import HISTORY_LIMIT, pod_names
from state_machine.states import PairState
from state_machine.store import DuplicatePair, Move, NewPair, PairStore, UnknownPair

S = PairState


def test_new_pair_starts_queued_with_version_1_and_pod_names() -> None:
    store = PairStore("arc-runners")
    [event] = store.commit([NewPair("abcde-1", "desired 1")], at=10.0)
    record = store.get("abcde-1")
    assert (record.state, record.version, record.since) == (S.QUEUED, 1, 10.0)
    assert (event.source, event.target) == (None, S.QUEUED)
    assert (record.runner_pod, record.workflow_pod) == pod_names("arc-runners", "abcde-1")


def test_a_batch_with_one_invalid_move_changes_nothing() -> None:
    store = PairStore("ss")
    store.commit([NewPair("a", "x"), NewPair("b", "x")], at=0.0)
    with pytest.raises(InvalidTransition):
        store.commit(
            [Move("a", S.REQUESTED, Kind.ACTIVE, "ok"), Move("b", S.READY, Kind.PASSIVE, "bad")],
            at=1.0,
        )
    assert store.get("a").state is S.QUEUED
    assert store.get("a").version == 1


def test_moves_in_one_batch_validate_in_sequence() -> None:
    store = PairStore("ss")
    events = store.commit(
        [
            NewPair("a", "x"),
            Move("a", S.REQUESTED, Kind.ACTIVE, "go"),
            Move("a", S.READY, Kind.PASSIVE, "both Running"),
        ],
        at=5.0,
    )
    assert [e.version for e in events] == [1, 2, 3]
    assert store.get("a").state is S.READY


def test_deleted_records_leave_the_store_after_their_event() -> None:
    store = PairStore("ss")
    store.commit([NewPair("a", "x")], at=0.0)
    [event] = store.commit([Move("a", S.DELETED, Kind.ACTIVE, "not wanted")], at=1.0)
    assert event.target is S.DELETED
    assert "a" not in store
    assert len(store) == 0
    assert store.counts()[S.DELETED] == 0


def test_duplicate_and_unknown_pairs_are_typed_errors() -> None:
    store = PairStore("ss")
    store.commit([NewPair("a", "x")], at=0.0)
    with pytest.raises(DuplicatePair):
        store.commit([NewPair("a", "again")], at=1.0)
    with pytest.raises(UnknownPair):
        store.commit([Move("zz", S.REQUESTED, Kind.ACTIVE, "?")], at=1.0)


def test_history_is_bounded_but_first_entry_times_are_kept() -> None:
    store = PairStore("ss")
    store.commit([NewPair("a", "x"), Move("a", S.REQUESTED, Kind.ACTIVE, "go")], at=0.0)
    for i in range(1, 40):
        target = S.PARTIAL if i % 2 else S.REQUESTED
        store.commit([Move("a", target, Kind.PASSIVE, "flap")], at=float(i))
    record = store.get("a")
    assert len(record.history) == HISTORY_LIMIT
    assert record.entered(S.REQUESTED) == 0.0  # the ready timeout measures from here
    assert record.version == 41


def test_counts_and_views_by_state() -> None:
    store = PairStore("ss")
    store.commit(
        [NewPair("a", "x"), NewPair("b", "x"), Move("b", S.REQUESTED, Kind.ACTIVE, "go")], at=0.0
    )
    assert store.counts()[S.QUEUED] == 1
    assert store.count([S.QUEUED, S.REQUESTED]) == 2
    assert [r.pair_id for r in store.in_states([S.REQUESTED])] == ["b"]
    assert set(store.view()) == {"a", "b"}


def test_pod_names_fit_dns_label_limit() -> None:
    runner, workflow = pod_names("x" * 80, "abcde-123456")
    assert len(runner) <= 63 and len(workflow) <= 63
    assert runner.endswith("-r") and workflow.endswith("-w")
