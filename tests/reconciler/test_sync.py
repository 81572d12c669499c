"""Sync, table-driven: (state, runner half, workflow half) -> passive move or none."""

from __future__ import annotations

import pytest

from reconciler.snapshot import PairPods, PodPhase
from reconciler.sync import UNSEEN_AFTER, Half, classify, sync
from state_machine.events import Kind
from state_machine.record import PairRecord
from state_machine.states import PairState, Role
from state_machine.store import Move, Observed

from .builders import ph, snapshot

S = PairState
H = Half


def half(pair_id: str, role: Role, h: Half):  # type: ignore[no-untyped-def]
    return {
        H.MISSING: None,
        H.PENDING: ph(pair_id, role, phase=PodPhase.PENDING),
        H.RUNNING: ph(pair_id, role),
        H.STALLED: ph(pair_id, role, blocked=True),
        H.LOST: ph(pair_id, role, disrupted=True),
    }[h]


def record_in(state: PairState, seen: frozenset[Role] = frozenset()) -> PairRecord:
    record = PairRecord.new("p-1", "arc-runners", 0.0, "test").observed(seen)
    return record if state is S.QUEUED else record.moved(state, 1.0, "setup")


def moves_only(changes: list[Move | Observed]) -> list[Move]:
    return [c for c in changes if isinstance(c, Move)]


CASES = [
    # state,      runner,    workflow,  expected target (None = stays)
    (S.QUEUED,    H.RUNNING, H.RUNNING, None),  # QUEUED is decide's business only
    (S.REQUESTED, H.MISSING, H.MISSING, None),  # creates not in the cache yet
    (S.REQUESTED, H.PENDING, H.PENDING, None),
    (S.REQUESTED, H.RUNNING, H.PENDING, S.PARTIAL),
    (S.REQUESTED, H.PENDING, H.RUNNING, S.PARTIAL),
    (S.REQUESTED, H.RUNNING, H.MISSING, S.PARTIAL),
    (S.REQUESTED, H.RUNNING, H.RUNNING, S.READY),
    (S.REQUESTED, H.STALLED, H.RUNNING, S.PARTIAL),
    (S.REQUESTED, H.LOST,    H.PENDING, S.PREEMPTED),
    (S.PARTIAL,   H.RUNNING, H.PENDING, None),
    (S.PARTIAL,   H.RUNNING, H.MISSING, None),
    (S.PARTIAL,   H.RUNNING, H.RUNNING, S.READY),
    (S.PARTIAL,   H.STALLED, H.PENDING, S.REQUESTED),
    (S.PARTIAL,   H.MISSING, H.PENDING, S.PREEMPTED),
    (S.PARTIAL,   H.RUNNING, H.LOST,    S.PREEMPTED),
    (S.READY,     H.RUNNING, H.RUNNING, None),
    (S.READY,     H.STALLED, H.RUNNING, None),  # decide retires it (retire_blocked)
    (S.READY,     H.LOST,    H.RUNNING, S.PREEMPTED),
    (S.READY,     H.RUNNING, H.LOST,    S.PREEMPTED),
    (S.READY,     H.MISSING, H.RUNNING, S.PREEMPTED),
    (S.PREEMPTED, H.MISSING, H.RUNNING, None),  # the survivor is protected
    (S.PREEMPTED, H.LOST,    H.RUNNING, None),
    (S.PREEMPTED, H.MISSING, H.MISSING, S.DELETED),
    (S.PREEMPTED, H.MISSING, H.LOST,    S.DELETED),
    (S.TIMED_OUT, H.PENDING, H.MISSING, None),  # delete not confirmed yet
    (S.TIMED_OUT, H.MISSING, H.MISSING, S.DELETED),
]  # fmt: skip


@pytest.mark.parametrize(("state", "runner_half", "workflow_half", "expected"), CASES, ids=str)
def test_sync_moves(
    state: PairState, runner_half: Half, workflow_half: Half, expected: PairState | None
) -> None:
    pods = PairPods(
        half("p-1", Role.RUNNER, runner_half), half("p-1", Role.WORKFLOW, workflow_half)
    )
    moves = moves_only(sync([record_in(state)], snapshot(placeholders={"p-1": pods})))
    assert [m.target for m in moves] == ([expected] if expected else [])
    assert all(m.kind is Kind.PASSIVE and m.reason for m in moves)


BOTH = frozenset(Role)
RUNNER_ONLY = frozenset((Role.RUNNER,))

#: The record has seen halves before: a MISSING half that was seen is gone, not "not cached yet".
VANISHED_CASES = [
    # state,      seen,        runner,    workflow,  expected
    (S.REQUESTED, BOTH,        H.MISSING, H.PENDING, S.PREEMPTED),  # runner half vanished
    (S.REQUESTED, BOTH,        H.PENDING, H.MISSING, S.PREEMPTED),  # workflow half vanished
    (S.REQUESTED, BOTH,        H.MISSING, H.MISSING, S.DELETED),    # nothing survives
    (S.REQUESTED, RUNNER_ONLY, H.PENDING, H.MISSING, None),         # workflow not cached yet
    (S.REQUESTED, RUNNER_ONLY, H.MISSING, H.MISSING, S.DELETED),    # the only one seen is gone
    (S.REQUESTED, BOTH,        H.LOST,    H.MISSING, S.DELETED),
    (S.REQUESTED, BOTH,        H.PENDING, H.PENDING, None),
    (S.PARTIAL,   BOTH,        H.RUNNING, H.MISSING, S.PREEMPTED),  # the pending half vanished
    (S.PARTIAL,   BOTH,        H.MISSING, H.MISSING, S.DELETED),
    (S.PARTIAL,   RUNNER_ONLY, H.RUNNING, H.MISSING, None),
]  # fmt: skip


def case_id(value: object) -> str:
    """``str`` of a frozenset follows the process's hash seed: each pytest-xdist worker would
    name these cases differently and refuse to run ("Different tests were collected")."""
    if isinstance(value, frozenset):
        return "+".join(sorted(role.value for role in value))
    return str(value)


@pytest.mark.parametrize(
    ("state", "seen", "runner_half", "workflow_half", "expected"), VANISHED_CASES, ids=case_id
)
def test_sync_moves_when_halves_were_seen_before(
    state: PairState,
    seen: frozenset[Role],
    runner_half: Half,
    workflow_half: Half,
    expected: PairState | None,
) -> None:
    pods = PairPods(
        half("p-1", Role.RUNNER, runner_half), half("p-1", Role.WORKFLOW, workflow_half)
    )
    moves = moves_only(sync([record_in(state, seen)], snapshot(placeholders={"p-1": pods})))
    assert [m.target for m in moves] == ([expected] if expected else [])
    for move in moves:
        assert "never observed" not in move.reason


def test_sync_remembers_halves_seen_for_the_first_time_only() -> None:
    pods = PairPods(ph("p-1", Role.RUNNER, phase=PodPhase.PENDING), None)
    changes = sync([record_in(S.REQUESTED)], snapshot(placeholders={"p-1": pods}))
    assert changes == [Observed("p-1", frozenset((Role.RUNNER,)))]
    again = sync([record_in(S.REQUESTED, RUNNER_ONLY)], snapshot(placeholders={"p-1": pods}))
    assert again == []


def test_every_state_with_pods_has_a_sync_case() -> None:
    covered = {case[0] for case in CASES}
    assert covered >= {S.REQUESTED, S.PARTIAL, S.READY, S.PREEMPTED, S.TIMED_OUT}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (ph("p", Role.RUNNER, phase=PodPhase.SUCCEEDED), H.LOST),
        (ph("p", Role.RUNNER, deleting=True), H.LOST),
        (ph("p", Role.RUNNER, phase=PodPhase.PENDING), H.PENDING),
        (ph("p", Role.RUNNER, blocked=True), H.STALLED),
        (None, H.MISSING),
    ],
)
def test_classify(pod, expected) -> None:  # type: ignore[no-untyped-def]
    assert classify(pod) is expected


def test_preemption_reason_names_the_half_and_the_cause() -> None:
    pods = PairPods(ph("p-1", Role.RUNNER, disrupted=True), ph("p-1", Role.WORKFLOW))
    [move] = moves_only(sync([record_in(S.READY)], snapshot(placeholders={"p-1": pods})))
    assert move.reason == "runner placeholder preempted or evicted"


def _requested_at(at: float, seen: frozenset[Role], state: PairState = S.PARTIAL) -> PairRecord:
    record = PairRecord.new("p-1", "arc-runners", at - 1, "test").moved(S.REQUESTED, at, "t")
    record = record.moved(state, at + 1, "t") if state is not S.REQUESTED else record
    return record.observed(seen)


@pytest.mark.parametrize(
    ("waited", "expected"),
    [(UNSEEN_AFTER - 1, None), (UNSEEN_AFTER, S.PREEMPTED), (UNSEEN_AFTER + 1, S.PREEMPTED)],
)
def test_a_half_never_seen_long_after_its_request_is_gone(
    waited: float, expected: PairState | None
) -> None:
    """Storm seed 7: mended runner halves bound and were preempted by workflow pods 1.5 s after
    their create, before any snapshot saw them; sync read them as "not in the cache yet", so
    nine pairs sat PARTIAL (no capacity) until jobs finished two minutes later."""
    record = _requested_at(100.0, frozenset((Role.WORKFLOW,)))
    pods = PairPods(None, ph("p-1", Role.WORKFLOW))
    moves = moves_only(sync([record], snapshot(now=100.0 + waited, placeholders={"p-1": pods})))
    assert [m.target for m in moves] == ([expected] if expected else [])
    for move in moves:
        assert (
            move.reason == f"runner placeholder not observed {UNSEEN_AFTER:.0f}s after its request"
        )


def test_a_pair_whose_creates_never_showed_up_is_deleted_after_the_wait() -> None:
    """A create that failed (an API outage) leaves nothing to wait for: the pair goes, and
    resize requests a new one, instead of holding its place for placeholderReadyTimeout."""
    record = _requested_at(100.0, frozenset(), state=S.REQUESTED)
    moves = moves_only(sync([record], snapshot(now=100.0 + UNSEEN_AFTER, placeholders={})))
    assert [(m.target, m.reason) for m in moves] == [
        (
            S.DELETED,
            f"runner and workflow placeholder not observed {UNSEEN_AFTER:.0f}s after its "
            "request; nothing survives",
        )
    ]


def test_a_mend_waits_from_its_own_request() -> None:
    """A mend creates the missing half again: its wait starts at the mend, not at the pair's
    first request long before."""
    record = _requested_at(100.0, frozenset(Role)).moved(S.READY, 110.0, "t")
    record = record.moved(S.PREEMPTED, 200.0, "t").moved(S.REQUESTED, 300.0, "mend: runner")
    record = record.observed(frozenset((Role.WORKFLOW,)))
    pods = PairPods(None, ph("p-1", Role.WORKFLOW))
    early = snapshot(now=300.0 + UNSEEN_AFTER - 1, placeholders={"p-1": pods})
    late = snapshot(now=300.0 + UNSEEN_AFTER, placeholders={"p-1": pods})
    assert [m.target for m in moves_only(sync([record], early))] == [S.PARTIAL]  # as always
    assert [m.target for m in moves_only(sync([record], late))] == [S.PREEMPTED]
