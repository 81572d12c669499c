"""The versioned store: atomic batches, bounded history, DELETED records leave."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from state_machine.events import Kind
from state_machine.machine import InvalidTransition
from state_machine.record import HISTORY_LIMIT, PairRecord, pod_names
from state_machine.states import PairState, Role
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


def _store_with_requested_pair() -> PairStore:
    store = PairStore("ss")
    store.commit([NewPair("a", "x"), Move("a", S.REQUESTED, Kind.ACTIVE, "go")], at=0.0)
    return store


def _queued_record() -> PairRecord:
    store = PairStore("ss")
    store.commit([NewPair("a", "x")], at=0.0)
    return store.get("a")


@pytest.mark.parametrize(
    ("build", "reused"),
    [
        # Exactly what the commit would build: taken as is.
        (lambda current: current.moved(S.READY, 5.0, "both Running"), True),
        # Built at another time, or for another move: not this move's record.
        (lambda current: current.moved(S.READY, 4.0, "both Running"), False),
        (lambda current: current.moved(S.READY, 5.0, "other reason"), False),
        (lambda current: current.moved(S.PARTIAL, 5.0, "both Running"), False),
        # Built from a record that saw halves this one has not.
        (
            lambda current: current.observed(frozenset((Role.RUNNER,))).moved(
                S.READY, 5.0, "both Running"
            ),
            False,
        ),
        # Built from an older version of the record (it has moved since).
        (lambda current: _queued_record().moved(S.READY, 5.0, "both Running"), False),
    ],
    ids=["same-move", "other-time", "other-reason", "other-target", "other-seen", "older-version"],
)
def test_a_commit_reuses_a_record_built_for_its_move_and_only_that(
    build: Callable[[PairRecord], PairRecord], reused: bool
) -> None:
    """The reconciler hands commit the records it built applying sync's moves (so each moved
    pair is copied once per step, not twice). A record built for anything else must not
    leak into the store: the stored record is always what ``moved`` gives for this move."""
    store = _store_with_requested_pair()
    built = build(store.get("a"))
    move = Move("a", S.READY, Kind.PASSIVE, "both Running")
    expected = _store_with_requested_pair().get("a").moved(S.READY, 5.0, "both Running")

    [event] = store.commit([move], at=5.0, built={"a": built})

    assert store.get("a") == expected
    assert (store.get("a") is built) is reused
    assert (event.version, event.at, event.reason) == (3, 5.0, "both Running")


def test_a_second_move_of_the_same_pair_in_one_batch_is_built_from_the_first() -> None:
    """``built`` holds the record after sync's move; decide may move the pair again in the
    same batch (READY -> DELETED on a blocked node). That second move must not take the
    first move's record, or the event would carry the wrong state and version."""
    store = _store_with_requested_pair()
    built = {"a": store.get("a").moved(S.READY, 5.0, "both Running")}
    events = store.commit(
        [
            Move("a", S.READY, Kind.PASSIVE, "both Running"),
            Move("a", S.DELETED, Kind.ACTIVE, "a pod sits on a blocked node"),
        ],
        at=5.0,
        built=built,
    )
    assert [(e.target, e.version) for e in events] == [(S.READY, 3), (S.DELETED, 4)]
