"""Decide: active transitions and maintenance commands. Pure; runs after sync.

Steps, in order (each is one function below):

1. ``retire_survivors``   PREEMPTED pairs whose survivor outlived ``survivor_window`` -> DELETED.
2. ``time_out``           REQUESTED/PARTIAL pairs not READY within ``placeholder_ready_timeout``
                          of their first request -> TIMED_OUT, with the scheduler's and
                          Karpenter's explanation in the reason.
3. ``retire_blocked``     READY pairs with a half on a node that stopped accepting it
                          (cordoned, disrupted, untolerated taint) -> DELETED, to be replaced.
4. ``sweep``              adopt complete pairs of an earlier instance on the first step; delete
                          orphans (other instances, expired leases, incomplete pairs) and pods
                          of TIMED_OUT pairs that survived their delete.
5. ``resize``             desired = clamp(proactive + queued jobs, 0, maxRunners - live real
                          runners); create QUEUED pairs up to it, or scale down in the order
                          QUEUED, REQUESTED/PARTIAL, READY (newest first within each group).
6. ``launch``             QUEUED -> REQUESTED, oldest first, bounded by the burst cap (pairs in
                          flight), the per-step cap and the fit estimate.
7. ``renew_leases``       RenewLease for pods of pairs we keep whose lease is past half-life.

Decisions accumulate in a :class:`Decision`; nothing is applied here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field

from reconciler.ports import Command, DeleteOrphan, PodRef, RenewLease
from reconciler.settings import ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot, Half, PairPods, PlaceholderPod
from reconciler.sync import classify
from state_machine.events import Kind
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import Change, Move, NewPair
from state_machine.table import IN_FLIGHT, LIVE

S = PairState
#: A timed-out pair's pods still standing this long after the timeout are deleted again.
DELETE_RETRY_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class DecideInput:
    """Everything decide reads, explicitly."""

    pairs: Mapping[str, PairRecord]  # state after sync
    snapshot: ClusterSnapshot
    config: ReconcilerConfig
    now: float
    instance: str
    first_step: bool


@dataclass(slots=True)
class Decision:
    changes: list[Change] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    #: The state each pair will be in once ``changes`` apply (pairs deleted are dropped).
    states: dict[str, PairState] = field(default_factory=dict)

    def move(self, record: PairRecord, target: PairState, reason: str) -> None:
        self.changes.append(Move(record.pair_id, target, Kind.ACTIVE, reason))
        self.states[record.pair_id] = target

    def add(self, pair_id: str, reason: str) -> None:
        self.changes.append(NewPair(pair_id, reason))
        self.states[pair_id] = S.QUEUED

    def in_states(self, *states: PairState) -> list[str]:
        return [pid for pid, s in self.states.items() if s in states]


def decide(inp: DecideInput, ids: Iterator[str]) -> Decision:
    decision = Decision(states={pid: r.state for pid, r in inp.pairs.items()})
    retire_survivors(inp, decision)
    time_out(inp, decision)
    retire_blocked(inp, decision)
    sweep(inp, decision)
    resize(inp, decision, ids)
    launch(inp, decision)
    renew_leases(inp, decision)
    return decision


# 1 -------------------------------------------------------------------------------------


def retire_survivors(inp: DecideInput, decision: Decision) -> None:
    window = inp.config.survivor_window
    for record in _records_in(inp, S.PREEMPTED):
        if inp.now - record.since >= window:
            decision.move(record, S.DELETED, f"survivor unclaimed for {window:.0f}s")


# 2 -------------------------------------------------------------------------------------


def time_out(inp: DecideInput, decision: Decision) -> None:
    timeout = inp.config.placeholder_ready_timeout
    for record in _records_in(inp, S.REQUESTED, S.PARTIAL):
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
    if snapshot.capacity_signals:
        parts.append("Karpenter: " + "; ".join(snapshot.capacity_signals[:3]))
    return "; ".join(parts)


# 3 -------------------------------------------------------------------------------------


def retire_blocked(inp: DecideInput, decision: Decision) -> None:
    for record in _records_in(inp, S.READY):
        pods = inp.snapshot.placeholders.get(record.pair_id, PairPods())
        if Half.STALLED in (classify(pods.runner), classify(pods.workflow)):
            decision.move(record, S.DELETED, "a pod sits on a node that no longer accepts it")


# 4 -------------------------------------------------------------------------------------


def sweep(inp: DecideInput, decision: Decision) -> None:
    for pair_id, pods in inp.snapshot.placeholders.items():
        if pair_id in inp.pairs:
            record = inp.pairs[pair_id]
            if record.state is S.TIMED_OUT and inp.now - record.since >= DELETE_RETRY_AFTER:
                _delete(decision, pods, "retry delete of a timed-out pair")
            continue
        if inp.first_step and _adoptable(pods):
            _adopt(decision, pair_id, pods)
            continue
        reason = _orphan_reason(pods, inp)
        if reason:
            _delete(decision, pods, reason)


def _adoptable(pods: PairPods) -> bool:
    """Only pairs that already back a slot: adopting pending ones would bypass the burst cap."""
    return classify(pods.runner) is Half.RUNNING and classify(pods.workflow) is Half.RUNNING


def _adopt(decision: Decision, pair_id: str, pods: PairPods) -> None:
    """Take over a READY pair of an earlier instance through the table's own edges.

    QUEUED -> REQUESTED -> READY in one batch; the subscriber's create on REQUESTED meets
    AlreadyExists, which writers treat as success.
    """
    decision.add(pair_id, f"adopted from instance {pods.present()[0].instance or '?'}")
    decision.changes.append(Move(pair_id, S.REQUESTED, Kind.ACTIVE, "adopted"))
    decision.changes.append(Move(pair_id, S.READY, Kind.PASSIVE, "adopted: both pods Running"))
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


def _delete(decision: Decision, pods: PairPods, reason: str) -> None:
    for pod in pods.present():
        if not pod.deleting:
            decision.commands.append(DeleteOrphan(_ref(pod), reason))


def _ref(pod: PlaceholderPod) -> PodRef:
    return PodRef(pod.namespace, pod.name, pod.uid)


def _records_in(inp: DecideInput, *states: PairState) -> Iterator[PairRecord]:
    for record in inp.pairs.values():
        if record.state in states:
            yield record


# 5 -------------------------------------------------------------------------------------


def desired_pairs(snapshot: ClusterSnapshot, config: ReconcilerConfig) -> int:
    """clamp(proactiveCapacity + queued jobs, 0, maxRunners - live real runners)."""
    queued = snapshot.demand.queued_jobs
    if queued is None:  # HUD failed: fail open to the configured floor, never 0 or unlimited
        queued = config.hud_fallback_queued_jobs
    live_runners = sum(1 for p in snapshot.runner_pods if p.alive)
    headroom = max(0, snapshot.max_runners - live_runners)
    return max(0, min(config.proactive_capacity + max(0, queued), headroom))


def resize(inp: DecideInput, decision: Decision, ids: Iterator[str]) -> None:
    want = desired_pairs(inp.snapshot, inp.config)
    live = decision.in_states(*LIVE)
    if len(live) < want:
        taken = inp.snapshot.placeholders.keys() | decision.states.keys()
        for _ in range(want - len(live)):
            decision.add(_fresh_id(ids, taken), f"desired {want} pairs, have {len(live)}")
        return
    excess = len(live) - want
    if excess <= 0:
        return
    for group in ((S.QUEUED,), (S.REQUESTED, S.PARTIAL), (S.READY,)):
        candidates = sorted(
            (inp.pairs[pid] for pid in decision.in_states(*group) if pid in inp.pairs),
            key=lambda r: (r.since, r.pair_id),
            reverse=True,
        )
        for record in candidates[:excess]:
            decision.move(record, S.DELETED, f"scale down to {want} pairs")
        excess -= min(excess, len(candidates))
        if excess == 0:
            return


def _fresh_id(ids: Iterator[str], taken: Set[str]) -> str:
    """The next id no pair and no observed pod uses (an earlier instance may share a prefix)."""
    for pair_id in ids:
        if pair_id not in taken:
            return pair_id
    raise RuntimeError("pair id source exhausted")


# 6 -------------------------------------------------------------------------------------


def launch(inp: DecideInput, decision: Decision) -> None:
    in_flight = len(decision.in_states(*IN_FLIGHT))
    slots = min(
        inp.config.max_requests_per_step,
        inp.config.max_pairs_in_flight - in_flight,
    )
    if inp.snapshot.fit is not None:
        slots = min(slots, inp.snapshot.fit.new_pairs)
    if slots <= 0:
        return
    queued = decision.in_states(S.QUEUED)  # insertion order: existing (oldest) first, then new
    for pair_id in queued[:slots]:
        decision.changes.append(Move(pair_id, S.REQUESTED, Kind.ACTIVE, "launch slot free"))
        decision.states[pair_id] = S.REQUESTED


# 7 -------------------------------------------------------------------------------------


def renew_leases(inp: DecideInput, decision: Decision) -> None:
    renew_if_before = inp.now + inp.config.lease_renew_before
    expires_at = inp.now + inp.config.placeholder_ttl
    observed = inp.snapshot.placeholders
    for pair_id, state in decision.states.items():
        if state not in _KEEPS_PODS or pair_id not in observed:
            continue
        pods = observed[pair_id]
        due = tuple(
            _ref(pod)
            for pod in (pods.runner, pods.workflow)
            if pod is not None
            and pod.expires_at is not None
            and pod.expires_at < renew_if_before
            and pod.half is not Half.LOST
        )
        if due:
            decision.commands.append(RenewLease(pair_id, due, expires_at))


#: States whose pods we keep (and so keep leasing); TIMED_OUT pods are on their way out.
_KEEPS_PODS = frozenset((S.REQUESTED, S.PARTIAL, S.READY, S.PREEMPTED))
