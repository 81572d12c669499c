"""Decide's step 5, the sweep: adopt complete pairs of an earlier instance on the first step;
delete orphans (other instances, expired leases, incomplete pairs) and pods of TIMED_OUT pairs
that survived their delete."""

from __future__ import annotations

from reconciler.decision import DecideInput, Decision, pod_ref
from reconciler.ports import DeleteOrphan
from reconciler.snapshot import Half, PairPods
from reconciler.sync import classify
from state_machine.events import Kind
from state_machine.states import PairState
from state_machine.store import NewPair

S = PairState
_TIMED_OUT = S.TIMED_OUT  # a global, not a class attribute read per pod (see decide.py)
#: A timed-out pair's pods still standing this long after the timeout are deleted again.
DELETE_RETRY_AFTER = 60.0


def sweep(inp: DecideInput, decision: Decision) -> None:
    for pair_id, pods in inp.snapshot.placeholders.items():
        if pair_id in inp.pairs:
            record = inp.pairs[pair_id]
            if record.state is _TIMED_OUT and inp.now - record.since >= DELETE_RETRY_AFTER:
                delete_pods(decision, pods, "retry delete of a timed-out pair")
            continue
        if inp.first_step and _adoptable(pods):
            _adopt(decision, pair_id, pods)
            continue
        reason = _orphan_reason(pods, inp)
        if reason:
            delete_pods(decision, pods, reason)


def _adoptable(pods: PairPods) -> bool:
    """Only pairs that already back a slot: adopting pending ones would bypass the burst cap."""
    return classify(pods.runner) is Half.RUNNING and classify(pods.workflow) is Half.RUNNING


def _adopt(decision: Decision, pair_id: str, pods: PairPods) -> None:
    """Take over a READY pair of an earlier instance through the table's adoption edge: it
    enters READY (passive: both pods are seen Running); nothing is created."""
    reason = f"adopted from instance {pods.present()[0].instance or '?'}: both pods Running"
    decision.changes.append(NewPair(pair_id, reason, S.READY, Kind.PASSIVE))
    decision.states[pair_id] = S.READY


def _orphan_reason(pods: PairPods, inp: DecideInput) -> str | None:
    for pod in pods.present():
        if pod.expires_at is not None and pod.expires_at < inp.now:
            return "lease expired"
        if pod.instance != inp.instance:
            return f"left by instance {pod.instance or '?'}"
        if inp.first_step:
            return "incomplete pair found at start"
    # Our own instance's pods of a pair we already deleted: their delete is in flight.
    return None


def delete_pods(decision: Decision, pods: PairPods, reason: str) -> None:
    for pod in pods.present():
        if not pod.deleting:
            decision.commands.append(DeleteOrphan(pod_ref(pod), reason))
