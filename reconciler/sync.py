"""Sync: passive transitions that the snapshot proves. Pure; no decisions, no I/O.

Steps, in order, for every pair whose pods may exist (one pass, one lookup per pair):

1. Classify each half from the snapshot: MISSING, PENDING, RUNNING (counts), STALLED
   (Running on a node that stopped accepting it) or LOST (terminating, DisruptionTarget,
   ended by itself). A MISSING half the record has seen before is *vanished*.
2. Remember halves seen for the first time (an ``Observed`` change, not a transition), so a
   later disappearance is news and not "the create is not in the cache yet".
3. REQUESTED: a LOST or vanished half -> PREEMPTED while the other half lives, DELETED when
   nothing survives; both RUNNING -> READY; one RUNNING -> PARTIAL. A MISSING half never seen
   is not news for ``UNSEEN_AFTER`` seconds after the request: the create may not be in the
   cache yet. Past that it counts as vanished too: a half can bind and be preempted by a
   real pod between two snapshots (its pair would otherwise sit PARTIAL until jobs finish;
   docs/design.md#decisions has the measurement), and a create that failed leaves nothing to
   wait for.
4. PARTIAL: as REQUESTED; and no half left that ever ran -> PREEMPTED; both RUNNING -> READY;
   the Running half STALLED -> back to REQUESTED.
5. READY: a half LOST or MISSING (both were seen Running, so missing means gone) -> PREEMPTED.
6. PREEMPTED: every half gone (MISSING or LOST) -> DELETED.
7. TIMED_OUT: both halves MISSING -> DELETED (their deletion is confirmed).

An observation that says a pair is already past a state is applied directly (READY from
REQUESTED), so out-of-order observations resolve without intermediate steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reconciler.snapshot import ClusterSnapshot, Half, PairPods, PlaceholderPod
from state_machine.events import Kind
from state_machine.record import PairRecord
from state_machine.states import PairState, Role
from state_machine.store import Move, Observed
from state_machine.table import IN_FLIGHT

# Each Half bound to a module name once: on Python 3.11 (the image's) reading ``Half.LOST``
# is a descriptor lookup (~150 ns, 30x a global), and the rules below read several per pair
# per step (a third of sync's time at 1 000 pairs, bench/reconcile_step.py).
MISSING, PENDING, RUNNING = Half.MISSING, Half.PENDING, Half.RUNNING
STALLED, LOST = Half.STALLED, Half.LOST

_EMPTY = PairPods()
_GONE = (MISSING, LOST)
_ALIVE = (PENDING, RUNNING, STALLED)
#: States in which a half may still be unseen (in flight), so first sightings are worth
#: remembering.
_WATCHING = IN_FLIGHT
#: Seconds after a request within which a half missing from the snapshot may still be on its
#: way (watch lag); later, a half never seen is gone. Far above a watch's usual lag (well
#: under a second), far below ``placeholderReadyTimeout`` (5 min), which caught it before.
UNSEEN_AFTER = 30.0
_BOTH = frozenset(Role)


def classify(pod: PlaceholderPod | None) -> Half:
    return MISSING if pod is None else pod.half


def _vanished(runner: Half, workflow: Half, seen: frozenset[Role]) -> tuple[Role, ...]:
    """Halves that were seen and are missing now: preempted or deleted, gone for good."""
    return tuple(
        role
        for role, half in ((Role.RUNNER, runner), (Role.WORKFLOW, workflow))
        if half is MISSING and role in seen
    )


def sync(pairs: Iterable[PairRecord], snapshot: ClusterSnapshot) -> list[Move | Observed]:
    changes: list[Move | Observed] = []
    observed = snapshot.placeholders
    for record in pairs:
        rule = _RULES.get(record.state)
        if rule is None:
            continue
        pods = observed.get(record.pair_id, _EMPTY)
        seen = record.seen
        if record.state in _WATCHING:
            first_seen = _first_seen(record, pods)
            if first_seen:
                changes.append(Observed(record.pair_id, first_seen))
            if _unseen_is_gone(record, snapshot.taken_at):
                seen = _BOTH
        runner, workflow = pods.runner, pods.workflow  # classify(), inlined: once per half
        decided = rule(
            MISSING if runner is None else runner.half,
            MISSING if workflow is None else workflow.half,
            pods,
            seen,
        )
        if decided is not None:
            target, reason = decided
            if seen is not record.seen:
                reason = _unseen_reason(record, pods, target, reason)
            changes.append(Move(record.pair_id, target, Kind.PASSIVE, reason))
    return changes


def _unseen_is_gone(record: PairRecord, now: float) -> bool:
    """A half of this pair is still unseen ``UNSEEN_AFTER`` seconds after its request."""
    if len(record.seen) == len(_BOTH):
        return False
    requested = record.entered(PairState.REQUESTED)
    return requested is not None and now - requested >= UNSEEN_AFTER


def _unseen_reason(record: PairRecord, pods: PairPods, target: PairState, reason: str) -> str:
    """Name the half that never showed up, where that is what the rule acted on."""
    unseen = [
        role.value
        for role in (Role.RUNNER, Role.WORKFLOW)
        if role not in record.seen and pods.get(role) is None
    ]
    if not unseen or target not in (PairState.PREEMPTED, PairState.DELETED):
        return reason
    gone = f"{' and '.join(unseen)} placeholder not observed {UNSEEN_AFTER:.0f}s after its request"
    return gone + ("; nothing survives" if target is PairState.DELETED else "")


def _first_seen(record: PairRecord, pods: PairPods) -> frozenset[Role]:
    roles = frozenset(pod.role for pod in pods.present())
    return roles - record.seen


Outcome = tuple[PairState, str] | None
#: A rule sees both halves as classified, the pods (for reasons) and the halves seen before.
#: Arguments, not one object per pair: sync runs every rule over every pair each step, and
#: building a holder for them was half of sync's time at 1 000 pairs (bench/reconcile_step.py).
Rule = Callable[[Half, Half, PairPods, frozenset[Role]], Outcome]


def _gone_before_ready(
    runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]
) -> Outcome:
    """A half LOST or vanished before the pair was READY: PREEMPTED, or DELETED if none lives."""
    vanished = _vanished(runner, workflow, seen)
    if LOST not in (runner, workflow) and not vanished:
        return None
    if runner not in _ALIVE and workflow not in _ALIVE:
        return PairState.DELETED, _gone_reason(pods, vanished) + "; nothing survives"
    return PairState.PREEMPTED, _gone_reason(pods, vanished)


def _requested(runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]) -> Outcome:
    gone = _gone_before_ready(runner, workflow, pods, seen)
    if gone is not None:
        return gone
    if runner is RUNNING and workflow is RUNNING:
        return PairState.READY, _ready_reason(pods)
    if RUNNING in (runner, workflow):
        return PairState.PARTIAL, f"{_running_half(runner)} pod Running, the other not yet"
    return None


def _partial(runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]) -> Outcome:
    gone = _gone_before_ready(runner, workflow, pods, seen)
    if gone is not None:
        return gone
    if runner is RUNNING and workflow is RUNNING:
        return PairState.READY, _ready_reason(pods)
    if RUNNING in (runner, workflow):
        return None
    if STALLED in (runner, workflow):
        return PairState.REQUESTED, "the Running pod's node stopped accepting it"
    # Neither half runs any more and none is stalled: the one that ran has vanished.
    return PairState.PREEMPTED, "the Running pod vanished"


def _ready(runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]) -> Outcome:
    if LOST in (runner, workflow):
        return PairState.PREEMPTED, _lost_reason(pods)
    if MISSING in (runner, workflow):
        gone = "runner" if runner is MISSING else "workflow"
        return PairState.PREEMPTED, f"{gone} placeholder deleted"
    return None


def _preempted(runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]) -> Outcome:
    if runner in _GONE and workflow in _GONE:
        return PairState.DELETED, "the surviving pod is gone too"
    return None


def _timed_out(runner: Half, workflow: Half, pods: PairPods, seen: frozenset[Role]) -> Outcome:
    if runner is MISSING and workflow is MISSING:
        return PairState.DELETED, "both pods confirmed gone"
    return None


def _ready_reason(pods: PairPods) -> str:
    if all(pod.running for pod in pods.present()):
        return "both pods Running"
    return "both pods bound, binding confirms (cpu/memory only), not all Running yet"


def _running_half(runner: Half) -> str:
    return "runner" if runner is RUNNING else "workflow"


def _gone_reason(pods: PairPods, vanished: tuple[Role, ...]) -> str:
    if vanished:
        names = " and ".join(role.value for role in vanished)
        return f"{names} placeholder vanished before the pair was ready (seen, then gone)"
    return _lost_reason(pods)


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


_RULES: dict[PairState, Rule] = {
    PairState.REQUESTED: _requested,
    PairState.PARTIAL: _partial,
    PairState.READY: _ready,
    PairState.PREEMPTED: _preempted,
    PairState.TIMED_OUT: _timed_out,
}
