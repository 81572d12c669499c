"""Karpenter's provisioner: batch the pods the scheduler gave up on, bin-pack them, launch.

Which pods (``pod.IsProvisionable``): those the scheduler marked
``PodScheduled=False/Unschedulable``, still unbound, not waiting on a preemption (no
``nominatedNodeName``), not owned by a DaemonSet or a Node.

Triggers (``provisioning/controller.go``, the pod controller): a pod triggers the batcher when
it becomes provisionable and then every ``timings.provisioner_requeue`` (10 s, its
``RequeueAfter``) for as long as it stays provisionable - whether or not a NodeClaim is
already on its way for it. Nothing else triggers (no trigger on NodeClaim deletion or ICE cache
expiry: the waiting pods' own requeues pick that up within 10 s). We do not model the extra
reconcile a pod gets on every update of its object.

Batching (``provisioning/batcher.go``): a trigger for a pod not yet seen in the current window
opens the window or resets its idle timer; a repeat trigger of the same pod within one window
does nothing. The batch runs when no new pod triggered for ``timings.batch_idle`` (1 s) or the
window is ``timings.batch_max`` (10 s) old. So under a stream of waiting pods (each
re-triggering every 10 s at its own phase) windows stay open towards the 10 s maximum, and
each opens as the last one closes: the pod that opened a window re-triggers at that instant
(see :meth:`Provisioner.trigger`).

Scheduling simulation of one batch (``provisioning/scheduling``), pods sorted by cpu then
memory, largest first:

1. existing nodes that are not being deleted/disrupted (their not-ready taints ignored: they
   will become ready) and in-flight NodeClaims (no Node yet: capacity of their offering),
   first fit, in name / creation order - so pods already waiting for a launching node do not
   launch another;
2. NodeClaims opened earlier in this batch, if some candidate offering still fits the
   claim's pods plus this one (the candidates narrow as pods are added);
3. a new NodeClaim from the first NodePool (weight desc, then name) whose taints the pod
   tolerates and whose offerings the pod's nodeSelector / required affinity accept, that fit
   the pod, are not in the ICE cache and whose capacity fits in the pool's *remaining*
   resources (``filterByRemainingResources``). Remaining starts as ``spec.limits`` minus the
   capacity of every NodeClaim of the pool (counted from creation) and, for each NodeClaim
   the batch opens, shrinks by the *largest* capacity among its candidate instance types
   (``subtractMax`` in ``scheduling/scheduler.go``), not by the one that will launch: a
   capped pool is therefore reached over several batches, not in one.

Each new NodeClaim is created with its (narrowed) candidates; the launch picks among them
(:mod:`.lifecycle`, :mod:`.fleet`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from providers.kubernetes.labels import TAINT_KARPENTER_DISRUPTED
from simulator.cluster.emit import Emitter
from simulator.cluster.lifecycle import ClaimLifecycle
from simulator.cluster.matching import TaintT
from simulator.cluster.nodepools import Offering, PoolView, all_offerings, read_pool
from simulator.cluster.quantity import Resources, fits
from simulator.cluster.spec import ClusterSpec
from simulator.cluster.state import ClusterState, Observer, PodInfo
from simulator.engine.loop import EventLoop, Timer

#: Taints a node sheds on its own once it is up; Karpenter's simulation ignores them.
EPHEMERAL_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "karpenter.sh/unregistered",
    }
)


class PoolCache:
    """Parsed NodePools, re-read only when an object's spec changes."""

    def __init__(self, state: ClusterState, spec: ClusterSpec) -> None:
        self.store = state.store
        self.offerings = all_offerings(spec)
        self._views: dict[str, tuple[str, PoolView]] = {}  # name -> (resourceVersion, view)
        self._specs: dict[str, tuple[str, PoolView]] = {}  # name -> (spec fingerprint, view)
        self._labels: dict[tuple[str, tuple[str, str, str]], dict[str, str]] = {}

    def views(self) -> list[PoolView]:
        out = []
        for obj in self.store.list("NodePool"):
            name = obj["metadata"]["name"]
            rv = obj["metadata"].get("resourceVersion", "")
            cached = self._views.get(name)
            if cached is None or cached[0] != rv:
                # Status writes bump resourceVersion too: re-parse only if the spec changed.
                fingerprint = json.dumps(obj.get("spec"), sort_keys=True)
                if name not in self._specs or self._specs[name][0] != fingerprint:
                    self._specs[name] = (fingerprint, read_pool(obj, self.offerings))
                    self._labels = {k: v for k, v in self._labels.items() if k[0] != name}
                cached = (rv, self._specs[name][1])
                self._views[name] = cached
            out.append(cached[1])
        out.sort(key=lambda p: (-p.weight, p.name))
        return out

    def view(self, name: str) -> PoolView | None:
        for pool in self.views():
            if pool.name == name:
                return pool
        return None

    def labels(self, pool: PoolView, offering: Offering) -> dict[str, str]:
        key = (pool.name, offering.key)
        labels = self._labels.get(key)
        if labels is None:
            labels = self._labels[key] = pool.node_labels(offering)
        return labels


@dataclass(eq=False, slots=True)
class _Target:
    name: str
    labels: dict[str, str]
    taints: tuple[TaintT, ...]
    free: Resources


@dataclass(eq=False, slots=True)
class _NewClaim:
    pool: PoolView
    candidates: list[Offering]
    requests: Resources
    pods: int = 1
    names: list[str] = field(default_factory=list)


def largest(offerings: list[Offering]) -> Resources:
    """``resources.MaxResources`` over the candidates' capacities, resource by resource."""
    return Resources(
        max(o.capacity.cpu for o in offerings),
        max(o.capacity.memory for o in offerings),
        max(o.capacity.gpu for o in offerings),
        max(o.capacity.pods for o in offerings),
    )


class Provisioner(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        lifecycle: ClaimLifecycle,
        pools: PoolCache,
        spec: ClusterSpec,
    ) -> None:
        self.loop = loop
        self.state = state
        self.emit = emit
        self.lifecycle = lifecycle
        self.pools = pools
        self.idle = spec.timings.batch_idle
        self.max = spec.timings.batch_max
        self.requeue = spec.timings.provisioner_requeue
        self.pending: dict[str, PodInfo] = {}
        self._requeues: dict[str, Timer] = {}  # pod uid -> its next pod-controller reconcile
        self._window_start: float | None = None
        self._elems: set[str] = set()  # uids that triggered the open window
        self._timer: Timer | None = None
        self.batches = 0
        self.triggers = 0
        self.unplaced = 0  # pod-batches that found no home at all (for diagnostics)

    # --- triggers (the pod controller) ------------------------------------------------

    def pod_provisionable(self, pod: PodInfo, provisionable: bool) -> None:
        if provisionable:
            self.pending[pod.uid] = pod
            self._reconcile_pod(pod.uid)
        else:
            self.pending.pop(pod.uid, None)
            timer = self._requeues.pop(pod.uid, None)
            if timer is not None:
                timer.cancel()

    def _reconcile_pod(self, uid: str) -> None:
        """One pod-controller reconcile: Trigger(uid), RequeueAfter 10 s."""
        if uid not in self.pending:
            return
        self.trigger(uid)
        old = self._requeues.get(uid)
        if old is not None:
            old.cancel()
        self._requeues[uid] = self.loop.call_later(self.requeue, self._reconcile_pod, uid)

    # --- batching ---------------------------------------------------------------------

    def trigger(self, elem: str) -> None:
        """``Batcher.Trigger``: only an element new to this window opens or extends it.

        A trigger at the very instant the window reaches its maximum belongs to the next
        window. It happens every round under a stream of waiting pods: the pod that opened a
        window re-triggers (the pod controller's 10 s requeue) exactly when the window's 10 s
        maximum ends. Upstream the maximum timer starts when ``Wait`` receives that pod's
        trigger, before its reconcile returns and registers the requeue, so the timer fires
        first: ``Wait`` returns, clears its elements, and the requeued trigger opens the next
        window (``batcher.go``). Run first, it was swallowed as a repeat and the next window
        opened only at the next trigger, so the windows drifted (10.0, 20.5, 30.7 s with a
        pod every 0.7 s, where batcher.go gives 10.0, 20.0, 30.0 s).
        """
        now = self.loop.now()
        if self._window_start is not None and now >= self._window_start + self.max:
            self.loop.call_at(now, self.trigger, elem)  # runs after the close, same instant
            return
        if elem in self._elems:
            return
        self.triggers += 1
        self._elems.add(elem)
        if self._window_start is None:
            self._window_start = now
        at = min(now + self.idle, self._window_start + self.max)
        if self._timer is not None:
            if self._timer.at == at:
                return
            self._timer.cancel()
        self._timer = self.loop.call_at(at, self._due)

    def _due(self) -> None:
        self._timer = None
        self._window_start = None
        self._elems.clear()
        self.provision()

    # --- one batch --------------------------------------------------------------------

    def provision(self) -> int:
        """Run the scheduling simulation over pending pods; returns NodeClaims created."""
        pods = [p for p in self.pending.values() if p.provisionable]
        if not pods:
            return 0
        self.batches += 1
        pools = self.pools.views()
        targets = self._targets()
        pods.sort(key=lambda p: (-p.requests.cpu, -p.requests.memory, -p.requests.gpu, p.seq))
        # Per pool: capacity counted against spec.limits so far, and NodeClaims.
        usage = {pool.name: self.lifecycle.pool_usage(pool.name) for pool in pools}
        new: list[_NewClaim] = []
        compat: dict[tuple[str, str], bool] = {}
        # Within a batch room only shrinks, so a pod class that found no home fails again.
        homeless: set[tuple[str, Resources]] = set()
        for pod in pods:
            req = pod.requests
            placement = pod.placement
            cls = (placement.key, req)
            if cls in homeless:
                self.unplaced += 1
                continue
            placed = False
            for t in targets:
                key = (placement.key, t.name)
                ok = compat.get(key)
                if ok is None:
                    ok = compat[key] = placement.untolerated(
                        t.taints
                    ) is None and placement.matches(t.labels, t.name)
                if ok and fits(req, t.free):
                    t.free = t.free - req
                    placed = True
                    break
            if placed:
                continue
            for nc in new:
                if placement.untolerated(nc.pool.taints) is not None:
                    continue
                total = nc.requests + req
                narrowed = [
                    o
                    for o in nc.candidates
                    if fits(total, o.allocatable)
                    and placement.matches(self.pools.labels(nc.pool, o), "")
                ]
                if narrowed:
                    nc.candidates, nc.requests = narrowed, total
                    nc.pods += 1
                    placed = True
                    break
            if placed:
                continue
            for pool in pools:
                if placement.untolerated(pool.taints) is not None:
                    continue
                used, n = usage[pool.name]
                candidates = [
                    o
                    for o in pool.offerings
                    if not self.lifecycle.unavailable(o.key)
                    and fits(req, o.allocatable)
                    and pool.limits.admits(used, n, o.capacity)
                    and placement.matches(self.pools.labels(pool, o), "")
                ]
                if candidates:
                    new.append(_NewClaim(pool, candidates, req))
                    usage[pool.name] = (used + largest(candidates), n + 1)  # subtractMax
                    placed = True
                    break
            if not placed:
                homeless.add(cls)
                self.unplaced += 1
        for nc in new:
            self.lifecycle.create(nc.pool, nc.candidates, nc.requests, nc.pods)
        return len(new)

    def _targets(self) -> list[_Target]:
        targets = []
        for node in self.state.sorted_nodes():
            if node.deleting or node.unschedulable or node.name in self.lifecycle.draining:
                continue
            if any(t[0] == TAINT_KARPENTER_DISRUPTED for t in node.taints):
                continue
            taints = tuple(t for t in node.taints if t[0] not in EPHEMERAL_TAINTS)
            targets.append(_Target(node.name, node.labels, taints, node.free()))
        for claim in self.lifecycle.claims.values():
            if claim.phase in ("Pending", "Launched") and claim.name not in self.state.nodes:
                targets.append(
                    _Target(claim.name, claim.labels, claim.taints, claim.offering.allocatable)
                )
        return targets
