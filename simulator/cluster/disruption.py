"""Karpenter's disruption controller, consolidation only (``disruption/controller.go``).

Every ``timings.disruption_poll`` seconds (10 s):

1. If a decision is waiting for validation and ``timings.consolidation_validation`` (15 s) has
   passed, re-check it; execute it if still valid, drop it otherwise. Nothing else this poll.
2. Candidates: Initialized Karpenter nodes not being deleted nor nominated for a pending
   pod, whose pool has a ``consolidateAfter`` (not Never) that has elapsed since the node's
   last pod event (a pod bound to or left it), without ``karpenter.sh/do-not-disrupt=true`` on
   the node, nor an active one on any of its pods that have not ended (``"true"``, or a
   duration not yet elapsed since the pod started: providers/kubernetes/pods/do_not_disrupt.py),
   and none of whose reschedulable pods is covered by a PodDisruptionBudget that allows no
   disruption now (Karpenter's ``pdb.Limits.CanEvictPods``, pkg/utils/pdb/pdb.go: "pdb
   prevents pod evictions"; see :mod:`.pdb`).
3. Emptiness (both policies): candidates with no reschedulable pod (ended, terminating and
   DaemonSet pods do not count), as many per pool as its disruption budget allows
   (``nodes: 10%`` of the pool's nodes, rounded up, minus nodes already being disrupted).
4. Otherwise, single-node consolidation (``WhenEmptyOrUnderutilized`` only): candidates in
   order of disruption cost - the sum over their pods of ``1 + priority / 2^25`` (Karpenter's
   EvictionCost, clamped to [-10, 10]) - so nodes with fewer and lower-priority pods go first;
   the first whose pods all fit on the other schedulable nodes (first fit with the scheduler's
   filters, after placing pods already waiting for capacity) is chosen. Deletion only: no
   replacement launch, no multi-node consolidation.

Execution: taint ``karpenter.sh/disrupted:NoSchedule`` and terminate (see :mod:`.termination`);
evicted pods are logged with reason ``consolidated``.
"""

from __future__ import annotations

from dataclasses import dataclass

from providers.kubernetes.pods.do_not_disrupt import protected_until
from providers.kubernetes.pods.labels import ANNOTATION_DO_NOT_DISRUPT, TAINT_KARPENTER_DISRUPTED
from simulator.cluster.emit import Emitter
from simulator.cluster.infos import NodeInfo, Observer, PodInfo
from simulator.cluster.lifecycle import ClaimLifecycle
from simulator.cluster.nodepools import PoolView
from simulator.cluster.pdb import blocks_eviction, budgets
from simulator.cluster.provisioner import PoolCache, Provisioner
from simulator.cluster.quantity import Resources, fits
from simulator.cluster.scheduler import Scheduler
from simulator.cluster.spec import ClusterSpec
from simulator.cluster.state import ClusterState
from simulator.engine.loop import EventLoop, Timer


def eviction_cost(pod: PodInfo) -> float:
    cost = 1.0 + pod.priority / 2**25
    return max(-10.0, min(cost, 10.0))


@dataclass(frozen=True, slots=True)
class Decision:
    kind: str  # "empty" | "underutilized"
    nodes: tuple[str, ...]
    validate_at: float


class Disruption(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        lifecycle: ClaimLifecycle,
        pools: PoolCache,
        scheduler: Scheduler,
        provisioner: Provisioner,
        spec: ClusterSpec,
    ) -> None:
        self.loop = loop
        self.state = state
        self.emit = emit
        self.lifecycle = lifecycle
        self.pools = pools
        self.scheduler = scheduler
        self.provisioner = provisioner
        self.period = spec.timings.disruption_poll
        self.validation = spec.timings.consolidation_validation
        self._decision: Decision | None = None
        self._quiet = -1  # state.changes when the last decision found nothing to do
        self._quiet_until = 0.0
        self._next_eligible = float("inf")
        self._timer: Timer | None = None
        self.consolidated = 0

    def start(self) -> None:
        if self._timer is None:
            self._timer = self.loop.call_later(self.period, self._poll)

    def _poll(self) -> None:
        self._timer = self.loop.call_later(self.period, self._poll)
        if not self.lifecycle.claims:
            self._decision = None
            return
        now = self.loop.now()
        if self._decision is not None:
            if now >= self._decision.validate_at:
                pending, self._decision = self._decision, None
                if self._still_valid(pending, now):
                    self._execute(pending)
            return
        if self._quiet == self.state.changes and now < self._quiet_until:
            return  # nothing moved and no node's consolidateAfter elapsed since last time
        self._next_eligible = float("inf")
        decision = self._decide(now)
        if decision is None:
            self._quiet, self._quiet_until = self.state.changes, self._next_eligible
            return
        if self.validation <= 0:
            self._execute(decision)
        else:
            self._decision = decision

    # --- deciding ---------------------------------------------------------------------

    def _candidates(self, now: float) -> list[tuple[NodeInfo, PoolView]]:
        pools = {p.name: p for p in self.pools.views()}
        listed = self.state.store.list("PodDisruptionBudget")
        pdbs = budgets(listed, self.state.pods.values()) if listed else []
        out = []
        nodes = self.state.nodes
        for claim in self.lifecycle.claims.values():  # creation order
            if claim.phase != "Initialized":
                continue
            node = nodes.get(claim.name)
            if node is None:
                continue
            if node.deleting or node.name in self.lifecycle.draining or node.nominated:
                continue  # a node a preemptor waits for is not a candidate either
            pool = pools.get(claim.pool)
            if pool is None or pool.consolidate_after is None:
                continue
            if now - node.last_pod_event < pool.consolidate_after:
                self._next_eligible = min(
                    self._next_eligible, node.last_pod_event + pool.consolidate_after
                )
                continue
            annotations = node.obj["metadata"].get("annotations") or {}
            if annotations.get(ANNOTATION_DO_NOT_DISRUPT) == "true":
                continue
            until = _protected_until(node, now)
            if until > now:
                # A duration ends by itself: look again then even if nothing else moved.
                if until != float("inf"):
                    self._next_eligible = min(self._next_eligible, until)
                continue
            if pdbs and blocks_eviction(node.pods.values(), pdbs) is not None:
                continue
            out.append((node, pool))
        return out

    @staticmethod
    def _empty(node: NodeInfo) -> bool:
        return not any(p.reschedulable for p in node.pods.values())

    def _allowed(self, pool: PoolView) -> int:
        total = disrupting = 0
        for node in self.state.nodes.values():
            if node.pool == pool.name:
                total += 1
                if node.name in self.lifecycle.draining:
                    disrupting += 1
        return pool.budget(total) - disrupting

    def _decide(self, now: float) -> Decision | None:
        candidates = self._candidates(now)
        if not candidates:
            return None
        allowed: dict[str, int] = {}
        empties = []
        for node, pool in candidates:
            if not self._empty(node):
                continue
            left = allowed.setdefault(pool.name, self._allowed(pool))
            if left > 0:
                empties.append(node.name)
                allowed[pool.name] = left - 1
        if empties:
            return Decision("empty", tuple(empties), now + self.validation)
        under = [
            (
                sum(eviction_cost(p) for p in node.pods.values() if p.reschedulable),
                node.name,
                node,
                pool,
            )
            for node, pool in candidates
            if pool.consolidation_policy == "WhenEmptyOrUnderutilized"
        ]
        if not under:
            return None
        under.sort(key=lambda c: (c[0], c[1]))
        sim = _Simulation(self)
        for _cost, _name, node, pool in under:
            if self._allowed(pool) > 0 and sim.fits_elsewhere(node):
                return Decision("underutilized", (node.name,), now + self.validation)
        return None

    def _fits_elsewhere(self, candidate: NodeInfo) -> bool:
        return _Simulation(self).fits_elsewhere(candidate)

    def _still_valid(self, decision: Decision, now: float) -> bool:
        current = {node.name: node for node, _pool in self._candidates(now)}
        for name in decision.nodes:
            node = current.get(name)
            if node is None:
                return False
            if decision.kind == "empty" and not self._empty(node):
                return False
            if decision.kind == "underutilized" and not self._fits_elsewhere(node):
                return False
        return True

    # --- acting -----------------------------------------------------------------------

    def _execute(self, decision: Decision) -> None:
        for name in decision.nodes:
            node = self.state.nodes.get(name)
            claim = self.lifecycle.claims.get(name)
            self.lifecycle.termination.add_disrupted_taint(name)
            self.emit(
                "node_disrupted",
                node=name,
                nodeclaim=name,
                nodepool=claim.pool if claim else None,
                reason=decision.kind,
                pods=len(node.pods) if node else 0,
            )
            self.consolidated += 1
            self.lifecycle.termination.terminate(name, "consolidated")


def _positive(r: Resources) -> Resources:
    return Resources(max(r.cpu, 0), max(r.memory, 0), max(r.gpu, 0), max(r.pods, 0))


def _size(p: PodInfo) -> tuple[int, int, int, int]:
    return (-p.requests.cpu, -p.requests.memory, -p.requests.gpu, p.seq)


class _Simulation:
    """Where would a node's pods go? First fit with the scheduler's filters.

    Built once per poll: pods already waiting for capacity (the provisioner's pending pods)
    are placed first on every schedulable node, so consolidation does not count space they
    need. For a candidate, its reschedulable pods plus the pending pods the base placement
    put on it must all fit on the other nodes. Preferred node affinity is not checked: the
    consolidation simulation relaxes preferences as provisioning does (``Relax`` in
    scheduling/preferences.go), so a preference never stops a consolidation.
    """

    def __init__(self, d: Disruption) -> None:
        self.static = d.scheduler.static_reason
        draining = d.lifecycle.draining
        self.nodes = [
            n
            for n in d.state.sorted_nodes()
            if n.ready
            and not n.unschedulable
            and not n.deleting
            and n.name not in draining
            and not any(t[0] == TAINT_KARPENTER_DISRUPTED for t in n.taints)
        ]
        self.base: dict[str, Resources] = {n.name: n.free() for n in self.nodes}
        self.pending_on: dict[str, list[PodInfo]] = {}
        for pod in sorted(d.provisioner.pending.values(), key=_size):
            target = self._place(pod, self.nodes, self.base)
            if target is not None:
                self.pending_on.setdefault(target, []).append(pod)
        self.room = Resources()
        for r in self.base.values():
            self.room = self.room + _positive(r)

    def _place(self, pod: PodInfo, nodes: list[NodeInfo], free: dict[str, Resources]) -> str | None:
        req = pod.requests
        for n in nodes:
            room = free[n.name]
            if fits(req, room) and self.static(pod, n) is None:
                free[n.name] = room - req
                return n.name
        return None

    def fits_elsewhere(self, candidate: NodeInfo) -> bool:
        moving = [p for p in candidate.pods.values() if p.reschedulable]
        moving += self.pending_on.get(candidate.name, [])
        others = [n for n in self.nodes if n is not candidate]
        free = {n.name: self.base[n.name] for n in others}
        # Cheap necessary condition first: the totals must fit.
        need = Resources()
        for p in moving:
            need = need + p.requests
        mine = self.base.get(candidate.name)
        room = self.room - _positive(mine) if mine is not None else self.room
        if not need.fits_in(room):
            return False
        moving.sort(key=_size)
        return all(self._place(p, others, free) is not None for p in moving)


def _protected_until(node: NodeInfo, now: float) -> float:
    """When the last ``karpenter.sh/do-not-disrupt`` protection of the node's live pods ends:
    ``now`` or earlier = unprotected, ``inf`` = a ``"true"`` (or a pod not started yet)."""
    until = now
    for pod in node.pods.values():
        if pod.terminal:
            continue
        ends = protected_until(pod.do_not_disrupt, pod.bound_at)
        if ends is not None and ends > now:
            until = max(until, ends)
    return until
