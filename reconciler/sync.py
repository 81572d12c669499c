"""Sync: passive transitions that the snapshot proves. Pure; no decisions, no I/O.

Steps, in order, for every pair whose pods may exist (one pass, one lookup per pair):

1. Classify each half from the snapshot: MISSING, PENDING, RUNNING (counts), STALLED
   (Running on a node that stopped accepting it) or LOST (terminating, DisruptionTarget,
   ended by itself).
2. REQUESTED: a LOST half -> PREEMPTED; both RUNNING -> READY; one RUNNING -> PARTIAL.
   A MISSING half is not news here: the create may not be in the cache yet, and a pod that
   never shows up is caught by decide's ready timeout.
3. PARTIAL: a LOST half, or no half left that ever ran -> PREEMPTED; both RUNNING -> READY;
   the Running half STALLED -> back to REQUESTED.
4. READY: a half LOST or MISSING (both were seen Running, so missing means gone) -> PREEMPTED.
5. PREEMPTED: every half gone (MISSING or LOST) -> DELETED.
6. TIMED_OUT: both halves MISSING -> DELETED (their deletion is confirmed).

An observation that says a pair is already past a state is applied directly (READY from
REQUESTED), so out-of-order observations resolve without intermediate steps.
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.snapshot import ClusterSnapshot, Half, PairPods, PlaceholderPod
from state_machine.events import Kind
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import Move

_EMPTY = PairPods()
_GONE = (Half.MISSING, Half.LOST)


def classify(pod: PlaceholderPod | None) -> Half:
    return Half.MISSING if pod is None else pod.half


def sync(pairs: Iterable[PairRecord], snapshot: ClusterSnapshot) -> list[Move]:
    moves: list[Move] = []
    observed = snapshot.placeholders
    for record in pairs:
        rule = _RULES.get(record.state)
        if rule is None:
            continue
        pods = observed.get(record.pair_id, _EMPTY)
        decided = rule(classify(pods.runner), classify(pods.workflow), pods)
        if decided is not None:
            target, reason = decided
            moves.append(Move(record.pair_id, target, Kind.PASSIVE, reason))
    return moves


Outcome = tuple[PairState, str] | None


def _requested(runner: Half, workflow: Half, pods: PairPods) -> Outcome:
    if Half.LOST in (runner, workflow):
        return PairState.PREEMPTED, _lost_reason(pods)
    if runner is Half.RUNNING and workflow is Half.RUNNING:
        return PairState.READY, "both pods Running"
    if Half.RUNNING in (runner, workflow):
        return PairState.PARTIAL, f"{_running_half(runner)} pod Running, the other not yet"
    return None


def _partial(runner: Half, workflow: Half, pods: PairPods) -> Outcome:
    if Half.LOST in (runner, workflow):
        return PairState.PREEMPTED, _lost_reason(pods)
    if runner is Half.RUNNING and workflow is Half.RUNNING:
        return PairState.READY, "both pods Running"
    if Half.RUNNING in (runner, workflow):
        return None
    if Half.STALLED in (runner, workflow):
        return PairState.REQUESTED, "the Running pod's node stopped accepting it"
    # Neither half runs any more and none is stalled: the one that ran has vanished.
    return PairState.PREEMPTED, "the Running pod vanished"


def _ready(runner: Half, workflow: Half, pods: PairPods) -> Outcome:
    if Half.LOST in (runner, workflow):
        return PairState.PREEMPTED, _lost_reason(pods)
    if Half.MISSING in (runner, workflow):
        gone = "runner" if runner is Half.MISSING else "workflow"
        return PairState.PREEMPTED, f"{gone} placeholder deleted"
    return None


def _preempted(runner: Half, workflow: Half, pods: PairPods) -> Outcome:
    if runner in _GONE and workflow in _GONE:
        return PairState.DELETED, "the surviving pod is gone too"
    return None


def _timed_out(runner: Half, workflow: Half, pods: PairPods) -> Outcome:
    if runner is Half.MISSING and workflow is Half.MISSING:
        return PairState.DELETED, "both pods confirmed gone"
    return None


def _running_half(runner: Half) -> str:
    return "runner" if runner is Half.RUNNING else "workflow"


def _lost_reason(pods: PairPods) -> str:
    """Say which half was lost and how (preempted, evicted/deleted, or ended)."""
    for pod in pods.present():
        if not pod.lost:
            continue
        if pod.disruption_target:
            how = "preempted or evicted"
        elif pod.ended:
            how = f"ended by itself ({pod.phase.value})"
        else:
            how = "deleted"
        return f"{pod.role.value} placeholder {how}"
    return "a placeholder was lost"


_RULES = {
    PairState.REQUESTED: _requested,
    PairState.PARTIAL: _partial,
    PairState.READY: _ready,
    PairState.PREEMPTED: _preempted,
    PairState.TIMED_OUT: _timed_out,
}
