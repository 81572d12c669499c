"""Karpenter's provisioner: batch the pods the scheduler gave up on, bin-pack them, launch.

Which pods: only those the scheduler marked ``PodScheduled=False/Unschedulable`` and that do
not wait on a preemption (no ``nominatedNodeName``), still unbound and not terminating.

Batching (``provisioning/batcher.go``): the first such pod opens a window; every new one
extends it; the batch runs when no new pod arrived for ``timings.batch_idle`` (1 s) or the
window is ``timings.batch_max`` (10 s) old. A batch also runs when capacity may have come back
(a NodeClaim or node was removed, an ICE cache entry expired).

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
   the pod, are not in the ICE cache and stay within the pool's ``spec.limits`` minus
   ``status.resources`` (every NodeClaim of the pool counts from creation, like Karpenter).

Each new NodeClaim then launches the cheapest remaining candidate (price, then instance type,
zone, capacity type) that the pool's limits still admit; a claim no candidate fits any more
is dropped (its pods stay pending until capacity changes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from providers.kubernetes.labels import TAINT_KARPENTER_DISRUPTED
from providers.simulated.cluster.emit import Emitter
from providers.simulated.cluster.lifecycle import ClaimLifecycle
from providers.simulated.cluster.matching import TaintT
from providers.simulated.cluster.nodepools import Offering, PoolView, all_offerings, read_pool
from providers.simulated.cluster.quantity import Resources, fits
from providers.simulated.cluster.spec import ClusterSpec
from providers.simulated.cluster.state import ClusterState, Observer, PodInfo
from providers.simulated.engine import EventLoop, Timer

#: Taints a node sheds on its own once it is up; Karpenter's simulation ignores them.
EPHEMERAL_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "karpenter.sh/unregistered",
    }
)
MAX_INSTANCE_TYPES = 60  # Karpenter truncates a NodeClaim's instance-type requirement


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
        self.pending: dict[str, PodInfo] = {}
        self._window_start: float | None = None
        self._last: float = 0.0
        self._timer: Timer | None = None
        self.batches = 0
        self.unplaced = 0  # pod-batches that found no home at all (for diagnostics)
        lifecycle.on_capacity_change = self.trigger

    # --- batching ---------------------------------------------------------------------

    def pod_provisionable(self, pod: PodInfo, provisionable: bool) -> None:
        if provisionable:
            self.pending[pod.uid] = pod
            self.trigger()
        else:
            self.pending.pop(pod.uid, None)

    def trigger(self) -> None:
        if not self.pending:
            return
        now = self.loop.now()
        if self._window_start is None:
            self._window_start = now
        self._last = now
        at = min(self._last + self.idle, self._window_start + self.max)
        if self._timer is not None:
            if self._timer.at == at:
                return
            self._timer.cancel()
        self._timer = self.loop.call_at(at, self._due)

    def _due(self) -> None:
        self._timer = None
        self._window_start = None
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
                    placed = True
                    break
            if not placed:
                homeless.add(cls)
                self.unplaced += 1
        created = 0
        for nc in new:
            used, n = usage[nc.pool.name]
            choice = next(
                (o for o in nc.candidates if nc.pool.limits.admits(used, n, o.capacity)), None
            )
            if choice is None:
                self.unplaced += nc.pods
                continue
            names: list[str] = []
            for o in nc.candidates:
                if o.instance_type not in names:
                    names.append(o.instance_type)
            self.lifecycle.create(nc.pool, choice, names[:MAX_INSTANCE_TYPES], nc.requests, nc.pods)
            usage[nc.pool.name] = (used + choice.capacity, n + 1)
            created += 1
        return created

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
