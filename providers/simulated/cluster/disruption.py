"""Karpenter's disruption controller, consolidation only (``disruption/controller.go``).

Every ``timings.disruption_poll`` seconds (10 s):

1. If a decision is waiting for validation and ``timings.consolidation_validation`` (15 s) has
   passed, re-check it; execute it if still valid, drop it otherwise. Nothing else this poll.
2. Candidates: Initialized Karpenter nodes not being deleted, whose pool has a
   ``consolidateAfter`` (not Never) that has elapsed since the node's last pod event (a pod
   bound to or left it), without ``karpenter.sh/do-not-disrupt=true`` on the node or on any of
   its pods that have not ended.
3. Emptiness (both policies): candidates with no reschedulable pod (ended, terminating and
   DaemonSet pods do not count), as many per pool as its disruption budget allows
   (``nodes: 10%`` of the pool's nodes, rounded up, minus nodes already being disrupted).
4. Otherwise, single-node consolidation (``WhenEmptyOrUnderutilized`` only): candidates in
   order of disruption cost - the sum over their pods of ``1 + priority / 2^25`` (Karpenter's
   EvictionCost, clamped to [-10, 10]) - so nodes with fewer and lower-priority pods go first;
   the first whose pods all fit on the other schedulable nodes (first fit with the scheduler's
   filters, after placing pods already waiting for capacity) is chosen. Deletion only: no
   replacement launch, no multi-node consolidation.

Execution: taint ``karpenter.sh/disrupted:NoSchedule`` and terminate (see :mod:`.lifecycle`);
evicted pods are logged with reason ``consolidated``.
"""

from __future__ import annotations

from dataclasses import dataclass

from providers.kubernetes.labels import ANNOTATION_DO_NOT_DISRUPT, TAINT_KARPENTER_DISRUPTED
from providers.simulated.cluster.emit import Emitter
from providers.simulated.cluster.lifecycle import ClaimLifecycle
from providers.simulated.cluster.nodepools import PoolView
from providers.simulated.cluster.provisioner import PoolCache, Provisioner
from providers.simulated.cluster.quantity import Resources
from providers.simulated.cluster.scheduler import Scheduler, _fits
from providers.simulated.cluster.spec import ClusterSpec
from providers.simulated.cluster.state import ClusterState, NodeInfo, Observer, PodInfo
from providers.simulated.engine import EventLoop, Timer


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
                decision, self._decision = self._decision, None
                if self._still_valid(decision, now):
                    self._execute(decision)
            return
        decision = self._decide(now)
        if decision is None:
            return
        if self.validation <= 0:
            self._execute(decision)
        else:
            self._decision = decision

    # --- deciding ---------------------------------------------------------------------

    def _candidates(self, now: float) -> list[tuple[NodeInfo, PoolView]]:
        pools = {p.name: p for p in self.pools.views()}
        out = []
        for node in self.state.sorted_nodes():
            claim = self.lifecycle.claims.get(node.name)
            if claim is None or claim.phase != "Initialized":
                continue
            if node.deleting or node.name in self.lifecycle.draining:
                continue
            pool = pools.get(claim.pool)
            if pool is None or pool.consolidate_after is None:
                continue
            if now - node.last_pod_event < pool.consolidate_after:
                continue
            annotations = node.obj["metadata"].get("annotations") or {}
            if annotations.get(ANNOTATION_DO_NOT_DISRUPT) == "true":
                continue
            if any(p.do_not_disrupt and not p.terminal for p in node.pods.values()):
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
            (sum(eviction_cost(p) for p in node.pods.values() if p.reschedulable), node.name,
             node, pool)
            for node, pool in candidates
            if pool.consolidation_policy == "WhenEmptyOrUnderutilized"
        ]
        under.sort(key=lambda c: (c[0], c[1]))
        for _cost, _name, node, pool in under:
            if self._allowed(pool) <= 0:
                continue
            if self._fits_elsewhere(node):
                return Decision("underutilized", (node.name,), now + self.validation)
        return None

    def _fits_elsewhere(self, candidate: NodeInfo) -> bool:
        others = [
            n for n in self.state.sorted_nodes()
            if n is not candidate and n.ready and not n.unschedulable and not n.deleting
            and n.name not in self.lifecycle.draining
            and not any(t[0] == TAINT_KARPENTER_DISRUPTED for t in n.taints)
        ]
        free: dict[str, Resources] = {n.name: n.free() for n in others}

        def place(pod: PodInfo) -> bool:
            for n in others:
                if self.scheduler._static_reason(pod, n) is None and _fits(pod.requests,
                                                                          free[n.name]):
                    free[n.name] = free[n.name] - pod.requests
                    return True
            return False

        def size(p: PodInfo) -> tuple[int, int, int, int]:
            return (-p.requests.cpu, -p.requests.memory, -p.requests.gpu, p.seq)

        for pod in sorted(self.provisioner.pending.values(), key=size):
            place(pod)  # pods already waiting for capacity keep their claim on free space
        moving = sorted((p for p in candidate.pods.values() if p.reschedulable), key=size)
        return all(place(p) for p in moving)

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
            self.lifecycle.add_disrupted_taint(name)
            self.emit("node_disrupted", node=name, nodeclaim=name,
                      nodepool=claim.pool if claim else None, reason=decision.kind,
                      pods=len(node.pods) if node else 0)
            self.consolidated += 1
            self.lifecycle.terminate(name, "consolidated")
