"""Surviving halves as one pool: which PREEMPTED pairs still back a slot, and which to mend.

kube-scheduler chooses preemption victims per node, never per pair. A job's runner pod takes
the runner half of pair A; its workflow pod, seconds later, takes a workflow half on whichever
node ``pickOneNodeForPreemption`` ranks first (fewest, lowest-priority victims, then the
latest-started ones), often pair B's. A workflow pod that finds enough runner halves (-10) on
one node takes those rather than one workflow half (+10): one 4-cpu workflow pod breaks eight
pairs of 0.5-cpu runner halves. What stands afterwards are lone halves. The capacity ledger
counts halves, so a lone runner half and a lone workflow half already back one slot
(docs/design.md#capacity-ledger); releasing both and requesting a new pair in their place is
what made storms launch extra nodes. This pool says which lone halves to keep and which are
spare; resize mends spare ones (creates only the missing half, ``state_machine.table.MEND``)
before it requests new pairs.

Steps, in order (``SurvivorPool.of`` then ``SurvivorPool.plan``):

1. Lone halves: PREEMPTED pairs with one pod standing, Pending or Running on a usable node,
   its partner gone or going. A stalled or lost survivor is retired by the old rules.
2. Awaited: real runner pods alive without a workflow pod yet. In the kubernetes modes each
   creates one, and it may take any workflow half: that many lone workflow halves still
   inside ``survivorWindow`` are kept for them. Bound ones no such half serves are
   ``unserved``: sizing keeps a pair for each while jobs wait (``handover_headroom``).
3. Re-paired = min(lone runner halves, the other lone workflow halves): kept as slots.
4. Spare: the lone halves left over (all of one role, or they would pair), newest first.
   ``mend_or_release`` mends them while pairs are wanted, within the launch budget, and
   releases the rest: a spare runner half at once, a spare workflow half once
   ``survivorWindow`` is over. ``release_repaired`` gives re-paired slots back first when
   there are too many pairs. Both return moves; decide's resize applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.snapshot import ClusterSnapshot, Half, PairPods, PlaceholderPod
from state_machine.record import PairRecord
from state_machine.states import PairState, Role

_POOLED = (Half.PENDING, Half.RUNNING)
_GONE = (Half.MISSING, Half.LOST)


@dataclass(frozen=True, slots=True)
class LoneHalf:
    record: PairRecord
    #: The role still standing.
    role: Role
    #: The partner pod is gone from the cluster: it may be created again under its name.
    mendable: bool
    #: The partner pod still standing though lost (ended by itself, or a DisruptionTarget) and
    #: not being deleted: nothing else removes it, so the pool's user deletes it.
    lost_partner: PlaceholderPod | None = None


@dataclass(frozen=True, slots=True)
class Survivors:
    """What the pool means for this step (newest first within each tuple)."""

    #: Workflow halves kept for runner pods that have not created their workflow pod yet.
    reserved: tuple[LoneHalf, ...] = ()
    #: Re-paired slots: (lone runner half, lone workflow half), kept as they are.
    repaired: tuple[tuple[LoneHalf, LoneHalf], ...] = ()
    #: Lone halves nothing needs as they are: mend or release.
    spare: tuple[LoneHalf, ...] = ()
    #: Bound runner pods still to create their workflow pod that no reserved half serves.
    unserved: int = 0

    @property
    def kept(self) -> tuple[LoneHalf, ...]:
        """Reserved, then the re-paired workflow halves, then the re-paired runner halves."""
        return (
            *self.reserved,
            *(workflow for _, workflow in self.repaired),
            *(runner for runner, _ in self.repaired),
        )

    @property
    def pair_ids(self) -> frozenset[str]:
        return frozenset(h.record.pair_id for h in (*self.kept, *self.spare))


@dataclass(frozen=True, slots=True)
class SurvivorPool:
    #: Lone runner halves, newest first.
    runner_halves: tuple[LoneHalf, ...]
    #: Lone workflow halves, newest first.
    workflow_halves: tuple[LoneHalf, ...]
    #: Real runner pods alive that have not created their workflow pod yet.
    awaited: int
    #: Those of them bound to a node (the others are Pending).
    awaited_bound: int = 0

    @classmethod
    def of(cls, pairs: Mapping[str, PairRecord], snapshot: ClusterSnapshot) -> SurvivorPool:
        runner_halves: list[LoneHalf] = []
        workflow_halves: list[LoneHalf] = []
        for record in pairs.values():
            if record.state is not PairState.PREEMPTED:
                continue
            lone = _lone_half(record, snapshot.placeholders.get(record.pair_id))
            if lone is not None:
                (runner_halves if lone.role is Role.RUNNER else workflow_halves).append(lone)
        awaited, awaited_bound = _awaited(snapshot)
        return cls(
            _newest_first(runner_halves), _newest_first(workflow_halves), awaited, awaited_bound
        )

    def plan(self, now: float, window: float) -> Survivors:
        """Awaited workflow pods are served from workflow halves still inside the window (an
        older one waited long enough: whatever it waits for is not coming); the rest pair up
        with lone runner halves, newest first."""
        fresh = [h for h in self.workflow_halves if now - h.record.since < window]
        awaited = tuple(fresh[: self.awaited])
        reserved = {h.record.pair_id for h in awaited}
        free = [h for h in self.workflow_halves if h.record.pair_id not in reserved]
        repaired = min(len(self.runner_halves), len(free))
        return Survivors(
            reserved=awaited,
            repaired=tuple(zip(self.runner_halves[:repaired], free[:repaired], strict=True)),
            spare=(*free[repaired:], *self.runner_halves[repaired:]),
            unserved=max(0, self.awaited_bound - len(awaited)),
        )


def _lone_half(record: PairRecord, pods: PairPods | None) -> LoneHalf | None:
    """The half that alone stands: usable itself, its partner gone or going (a victim is seen
    terminating for its grace period)."""
    if pods is None:
        return None
    runner, workflow = _half(pods.runner), _half(pods.workflow)
    if runner in _POOLED and workflow in _GONE:
        return LoneHalf(record, Role.RUNNER, workflow is Half.MISSING, _lingering(pods.workflow))
    if workflow in _POOLED and runner in _GONE:
        return LoneHalf(record, Role.WORKFLOW, runner is Half.MISSING, _lingering(pods.runner))
    return None


def _lingering(partner: PlaceholderPod | None) -> PlaceholderPod | None:
    return partner if partner is not None and not partner.deleting else None


def _half(pod: PlaceholderPod | None) -> Half:
    return Half.MISSING if pod is None else pod.half


def _awaited(snapshot: ClusterSnapshot) -> tuple[int, int]:
    """Alive runner pods without a workflow pod yet: all of them, and those bound."""
    with_workflow = {w.runner_pod for w in snapshot.workflow_pods if not w.deleting}
    awaited = [r for r in snapshot.runner_pods if r.alive and r.name not in with_workflow]
    return len(awaited), sum(1 for r in awaited if r.holds_slot)


def _newest_first(halves: list[LoneHalf]) -> tuple[LoneHalf, ...]:
    return tuple(sorted(halves, key=lambda h: (h.record.since, h.record.pair_id), reverse=True))


@dataclass(frozen=True, slots=True)
class HalfMove:
    """A lone half's pair moves (decide applies it)."""

    lone: LoneHalf
    target: PairState
    reason: str


@dataclass(frozen=True, slots=True)
class PoolMoves:
    moves: tuple[HalfMove, ...]
    #: Slots these moves make live (mended, about to be) or release (re-paired ones).
    live: int


def mend_or_release(
    spare: tuple[LoneHalf, ...], wanted: int, budget: int, now: float, window: float
) -> PoolMoves:
    """Mend up to ``wanted`` spare lone halves (pool order) within ``budget``, the launch
    budget every request shares: in a full NodePool a mended half would only wait Pending
    until its ready timeout while its survivor holds room (shared-nodepool: 456 such timeouts
    in one seed when mends ignored it). Release the others no rule protects. A half whose
    partner is still terminating is mended next step (its name is still taken), so it is
    neither released nor replaced by a new pair: it counts as live."""
    moves: list[HalfMove] = []
    live = mended = 0
    for lone in spare:
        if live < wanted and (not lone.mendable or mended < budget):
            live += 1
            if lone.mendable:
                mended += 1
                missing = "runner" if lone.role is Role.WORKFLOW else "workflow"
                moves.append(
                    HalfMove(lone, PairState.REQUESTED, f"mend: {missing} half created again")
                )
        elif lone.role is Role.RUNNER:
            reason = "scale down: a lone runner half, no pair to mend"
            moves.append(HalfMove(lone, PairState.DELETED, reason))
        elif now - lone.record.since >= window:
            reason = f"survivor unclaimed for {window:.0f}s"
            moves.append(HalfMove(lone, PairState.DELETED, reason))
    return PoolMoves(tuple(moves), live)


def release_repaired(survivors: Survivors, excess: int, reason: str) -> PoolMoves:
    """Release up to ``excess`` re-paired slots, oldest halves first (the most scattered)."""
    oldest = survivors.repaired[::-1][:excess]
    moves = tuple(
        HalfMove(lone, PairState.DELETED, f"{reason} (re-paired survivor)")
        for lone in (*(runner for runner, _ in oldest), *(workflow for _, workflow in oldest))
    )
    return PoolMoves(moves, len(oldest))
