"""Decide: active transitions and maintenance commands. Pure; runs after sync.

Steps, in order (each is one function below):

1. ``retire_survivors``   PREEMPTED pairs whose survivor outlived ``survivor_window``, or whose
                          survivor is a lone runner half (nothing comes for it) -> DELETED,
                          unless the survivor pool re-pairs it (``reconciler/survivors.py``).
2. ``time_out``           REQUESTED/PARTIAL pairs not READY within ``placeholder_ready_timeout``
                          of their first request -> TIMED_OUT, with the scheduler's and
                          Karpenter's explanation in the reason.
3. ``unblock``            of the waiting pairs whose workflow half is bound and whose runner
                          half has no room, the newest few -> DELETED, so their room
                          completes the others (``reconciler/unblock.py``); launches wait
                          for the next step.
4. ``retire_blocked``     READY pairs with a half on a node that stopped accepting it
                          (cordoned, disrupted, untolerated taint) -> DELETED, to be replaced.
5. ``sweep``              adopt complete pairs of an earlier instance on the first step; delete
                          orphans (other instances, expired leases, incomplete pairs) and pods
                          of TIMED_OUT pairs that survived their delete
                          (``reconciler/sweep.py``).
6. ``resize``             desired = clamp(proactive + queued jobs, 0, maxRunners headroom),
                          rounded up to node-sized groups where the NodePool limit binds
                          (``reconciler/sizing.py``);
                          re-paired survivors count as pairs; create QUEUED pairs up to it,
                          or scale down in the order re-paired survivors, QUEUED,
                          REQUESTED/PARTIAL, READY (newest first within each group).
7. ``launch``             QUEUED -> REQUESTED, oldest first, bounded by the ramp
                          (``launch_budget``: node-launch rate in node-sized groups, NodePool
                          headroom, safety caps; ``reconciler/ramp.py``).
8. ``renew_leases``       RenewLease for pods of pairs we keep whose lease is past half-life.

Decisions accumulate in a :class:`Decision` (``reconciler/decision.py``); nothing is applied
here.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from reconciler.decision import DecideInput, Decision, pod_ref, records_in
from reconciler.ports import DeleteOrphan, RenewLease
from reconciler.ramp import LaunchBudget, launch_budget, unbound_in_flight
from reconciler.sizing import (
    desired_pairs,
    free_pair_slots,
    group_size,
    handover_headroom,
    max_runners_headroom,
    packed_target,
)
from reconciler.snapshot import ClusterSnapshot, Half, PairPods, PlaceholderPod
from reconciler.survivors import HalfMove, SurvivorPool, mend_or_release, release_repaired
from reconciler.sweep import sweep
from reconciler.unblock import stuck_pairs, to_release
from state_machine.events import Kind
from state_machine.states import PairState
from state_machine.store import Move
from state_machine.table import IN_FLIGHT, KEEPS_PODS, LIVE

S = PairState
# Read once per pair or pod per step, so bound to module names: on Python 3.11 (the image's)
# reading an enum member off its class (``Half.STALLED``) costs ~150 ns, 30x a global.
_STALLED, _LOST = Half.STALLED, Half.LOST


def decide(inp: DecideInput, ids: Iterator[str]) -> Decision:
    decision = Decision(
        states={pid: r.state for pid, r in inp.pairs.items()},
        unbound_in_flight=unbound_in_flight(inp),
    )
    retire_survivors(inp, decision)
    time_out(inp, decision)
    unblock(inp, decision)
    retire_blocked(inp, decision)
    sweep(inp, decision)
    resize(inp, decision, ids)
    launch(inp, decision)
    renew_leases(inp, decision)
    return decision


# 1 -------------------------------------------------------------------------------------


def retire_survivors(inp: DecideInput, decision: Decision) -> None:
    """The survivor window protects a *workflow* half: a runner pod took the runner half and
    its workflow pod comes for a workflow half 10-15 s later. Lone halves go to the survivor
    pool (``reconciler/survivors.py``: kept, re-paired, mended or released by resize); this
    step retires the PREEMPTED pairs outside it (a stalled or lost survivor) as before."""
    window = inp.config.survivor_window
    decision.survivors = SurvivorPool.of(inp.pairs, inp.snapshot).plan(inp.now, window)
    pooled = decision.survivors.pair_ids
    for lone in (*decision.survivors.kept, *decision.survivors.spare):
        if lone.lost_partner is not None:  # an ended pod stays until deleted
            reason = "ended half of a surviving pair"
            decision.commands.append(DeleteOrphan(pod_ref(lone.lost_partner), reason))
    for record in records_in(inp, S.PREEMPTED):
        if record.pair_id in pooled:
            continue
        if inp.now - record.since >= window:
            decision.move(record, S.DELETED, f"survivor unclaimed for {window:.0f}s")
        elif _lone_runner_half(inp.snapshot.placeholders.get(record.pair_id)):
            decision.move(record, S.DELETED, "workflow half gone; nothing waits for the runner")


def _lone_runner_half(pods: PairPods | None) -> bool:
    return pods is not None and pods.workflow is None and pods.runner is not None


# 2 -------------------------------------------------------------------------------------


def time_out(inp: DecideInput, decision: Decision) -> None:
    timeout = inp.config.placeholder_ready_timeout
    for record in records_in(inp, *IN_FLIGHT):
        requested_at = record.entered(S.REQUESTED)
        if requested_at is not None and inp.now - requested_at >= timeout:
            pods = inp.snapshot.placeholders.get(record.pair_id, PairPods())
            decision.move(record, S.TIMED_OUT, _timeout_reason(timeout, pods, inp.snapshot))


def _timeout_reason(timeout: float, pods: PairPods, snapshot: ClusterSnapshot) -> str:
    parts = [f"not READY within {timeout:.0f}s"]
    for pod in pods.present():
        if not pod.running and pod.unschedulable_message:
            parts.append(f"{pod.role.value} pod unschedulable: {pod.unschedulable_message}")
    halves = (("runner", pods.runner), ("workflow", pods.workflow))
    missing = [role for role, pod in halves if pod is None]
    if missing:
        parts.append(f"never observed: {', '.join(missing)} pod")
    signals = snapshot.capacity_signals
    if signals:
        parts.append("Karpenter: " + "; ".join(signals[:3]))
    return "; ".join(parts)


# 3 -------------------------------------------------------------------------------------


def unblock(inp: DecideInput, decision: Decision) -> None:
    """Release the few half-placed pairs whose room completes the others (see
    ``reconciler/unblock.py``); ``launch`` then waits a step."""
    fit = inp.snapshot.fit
    if fit is None or not fit.runner_share:
        return
    # Pairs this step already moved (timed out) are not waiting any more.
    unmoved = (r for r in inp.pairs.values() if decision.states.get(r.pair_id) is r.state)
    stuck = stuck_pairs(unmoved, inp.snapshot.placeholders, inp.now)
    released = to_release(stuck, fit.runner_share)
    for record in released:
        reason = (
            f"unblock: its bound workflow half makes room for the runner halves of "
            f"{len(stuck) - len(released)} other waiting pairs"
        )
        decision.move(record, S.DELETED, reason)
    decision.unblocked = len(released)


# 4 -------------------------------------------------------------------------------------


def retire_blocked(inp: DecideInput, decision: Decision) -> None:
    observed = inp.snapshot.placeholders
    for record in records_in(inp, S.READY):
        pods = observed.get(record.pair_id)
        if pods is not None and (_stalled(pods.runner) or _stalled(pods.workflow)):
            decision.move(record, S.DELETED, "a pod sits on a node that no longer accepts it")


def _stalled(pod: PlaceholderPod | None) -> bool:
    return pod is not None and pod.half is _STALLED


# 5 -------------------------------------------------------------------------------------
# ``sweep`` lives in reconciler/sweep.py.


# 6 -------------------------------------------------------------------------------------


def resize(inp: DecideInput, decision: Decision, ids: Iterator[str]) -> None:
    """Re-paired survivors count as pairs and are the first released; spare lone halves are
    mended before any new pair is requested, and released when nothing wants them."""
    survivors = decision.survivors
    headroom = handover_headroom(inp.snapshot, survivors.unserved)
    # Where the NodePool limit binds the workflow pod takes room of its own anyway: no pair
    # is kept for an unserved runner there (handover_headroom says why).
    widened = headroom > max_runners_headroom(inp.snapshot)
    unserved = survivors.unserved if widened else 0
    free = free_pair_slots(inp.snapshot, decision.unbound_in_flight)
    ready = len(decision.in_states(S.READY))
    want = desired_pairs(inp.snapshot, inp.config, headroom, unserved, free, ready_pairs=ready)
    # Pairs already there for a slot its job's pods may bind beside are kept, not flapped
    # away: only new requests leave the free room out (sizing.pairs_taken), and only new
    # requests skip the refill without a warm pool.
    hold = desired_pairs(inp.snapshot, inp.config, headroom, unserved, standing=True)
    live = len(decision.in_states(*LIVE)) + len(survivors.repaired)
    target = packed_target(
        want, live, inp.snapshot, inp.config, headroom, decision.unbound_in_flight
    )
    wanted = target - live
    budget = _budget_now(inp, decision).pairs if survivors.spare and wanted > 0 else 0
    mend = mend_or_release(survivors.spare, wanted, budget, inp.now, inp.config.survivor_window)
    _apply(decision, mend.moves)
    live += mend.live
    if live < target:
        taken = (inp.snapshot.placeholders, decision.states)  # looked up, not merged: 2 000 keys
        for _ in range(target - live):
            decision.add(_fresh_id(ids, taken), f"desired {want} pairs, have {live}")
        return
    # Keep a partly used node's worth of extra pairs (the rounding above made them) instead
    # of flapping them away; never beyond maxRunners headroom, never when nothing is wanted.
    keep = hold
    if inp.snapshot.demand.queued_jobs:
        keep = min(headroom, hold + group_size(inp.snapshot, inp.config) - 1)
    excess = live - max(hold, keep)
    if excess > 0:
        released = release_repaired(survivors, excess, f"scale down to {hold} pairs")
        _apply(decision, released.moves)
        excess -= released.live
    for group in ((S.QUEUED,), tuple(IN_FLIGHT), (S.READY,)):
        if excess <= 0:
            return
        candidates = sorted(
            (inp.pairs[pid] for pid in decision.in_states(*group) if pid in inp.pairs),
            key=lambda r: (r.since, r.pair_id),
            reverse=True,
        )
        for record in candidates[:excess]:
            decision.move(record, S.DELETED, f"scale down to {hold} pairs")
        excess -= min(excess, len(candidates))


def _apply(decision: Decision, moves: tuple[HalfMove, ...]) -> None:
    for move in moves:
        decision.move(move.lone.record, move.target, move.reason)


def _fresh_id(ids: Iterator[str], taken: tuple[Container[str], ...]) -> str:
    """The next id no pair and no observed pod uses (an earlier instance may share a prefix)."""
    for pair_id in ids:
        if not any(pair_id in used for used in taken):
            return pair_id
    raise RuntimeError("pair id source exhausted")


# 7 -------------------------------------------------------------------------------------


def launch(inp: DecideInput, decision: Decision) -> None:
    queued = decision.in_states(S.QUEUED)  # insertion order: existing (oldest) first, then new
    if not queued:
        return
    if decision.unblocked:
        # A new pair's workflow half (+10) would take the room just freed before the stuck
        # runner halves (-10) do: request it next step, once they have bound.
        decision.launch_limited_by = "unblocking"
        return
    budget = _budget_now(inp, decision)
    decision.launch_limited_by = budget.limited_by if budget.pairs < len(queued) else None
    for pair_id in queued[: budget.pairs]:
        decision.changes.append(Move(pair_id, S.REQUESTED, Kind.ACTIVE, "launch slot free"))
        decision.states[pair_id] = S.REQUESTED


def _budget_now(inp: DecideInput, decision: Decision) -> LaunchBudget:
    """The ramp's budget for this step's requests (mends and launches share it)."""
    return launch_budget(inp, len(decision.in_states(*IN_FLIGHT)), decision.unbound_in_flight)


# 8 -------------------------------------------------------------------------------------


def renew_leases(inp: DecideInput, decision: Decision) -> None:
    renew_if_before = inp.now + inp.config.lease_renew_before
    expires_at = inp.now + inp.config.placeholder_ttl
    observed = inp.snapshot.placeholders
    for pair_id, state in decision.states.items():
        pods = observed.get(pair_id)
        if pods is None or state not in KEEPS_PODS:
            continue
        runner, workflow = pods.runner, pods.workflow
        # Checked half by half first: nearly every pair has nothing due, and building the
        # tuple of references for each of them was a fifth of decide's time at 1 000 pairs.
        if _lease_due(runner, renew_if_before) or _lease_due(workflow, renew_if_before):
            due = tuple(
                pod_ref(p)
                for p in (runner, workflow)
                if p is not None and _lease_due(p, renew_if_before)
            )
            decision.commands.append(RenewLease(pair_id, due, expires_at))


def _lease_due(pod: PlaceholderPod | None, renew_if_before: float) -> bool:
    """The pod's lease runs out before ``renew_if_before`` and the pod is still usable."""
    return (
        pod is not None
        and pod.expires_at is not None
        and pod.expires_at < renew_if_before
        and pod.half is not _LOST
    )
