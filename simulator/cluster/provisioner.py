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
memory, largest first. What a pod requires of a node in the three steps below is its
nodeSelector, required node affinity and tolerations plus - Karpenter's ``NewPodRequirements``
(``pkg/scheduling/requirements.go``) - the matchExpressions of its heaviest preferred
node-affinity term, if it has one:

1. existing nodes that are not being deleted/disrupted (their not-ready taints ignored: they
   will become ready) and in-flight NodeClaims (no Node yet: capacity of their offering),
   first fit, in name / creation order - so pods already waiting for a launching node do not
   launch another;
2. NodeClaims opened earlier in this batch, those holding the fewest pods first (``add``
   sorts ``newNodeClaims`` by pod count before each pod; a stable sort here, as Go's
   ``sort.Slice`` is for fewer than 12 claims), if some candidate offering still fits the
   claim's pods plus this one (the candidates narrow as pods are added). So small pods
   spread over the batch's claims instead of piling onto the first: three 0.5-cpu / 1Gi
   pods after three 4-cpu / 8Gi ones would narrow one claim from c5.4xlarge to m5.4xlarge
   (27 GiB > its 26.7 allocatable) where a claim holding one pod has room;
3. a new NodeClaim from the first NodePool (weight desc, then name) whose taints the pod
   tolerates and whose offerings the pod's requirements accept, that fit
   the pod, are not in the ICE cache and whose capacity fits in the pool's *remaining*
   resources (``filterByRemainingResources``). Remaining starts as ``spec.limits`` minus the
   capacity of every NodeClaim of the pool (counted from creation) and, for each NodeClaim
   the batch opens, shrinks by the *largest* capacity among its candidate instance types
   (``subtractMax`` in ``scheduling/scheduler.go``), not by the one that will launch: a
   capped pool is therefore reached over several batches, not in one;
4. a pod that fits nowhere with a preferred term as a requirement is relaxed at once, on its
   own turn (``trySchedule`` in ``scheduling/scheduler.go``, ``removePreferredNodeAffinityTerm``
   in ``scheduling/preferences.go``): the heaviest term is dropped, the next heaviest becomes
   the requirement, and steps 1-3 run again, down to the plain requirements. So a pod
   preferring some instance types first goes only to nodes or in-flight claims of those types,
   joins an open claim only by narrowing it to them, or opens a claim whose candidates are
   those types (within the pool's remaining limits, not in the ICE cache); only if all fail is
   it placed as if it had no preference. Karpenter before v1.4.0 pushed the relaxed pod to
   the end of the queue instead; from v1.4.0 (#2119) only a pod that fails even fully relaxed
   is requeued, and it would fail again here (room only shrinks in a batch), so it is not.

Each new NodeClaim is created with its (narrowed) candidates; the launch picks among them
(:mod:`.lifecycle`, :mod:`.fleet`).

Not modelled: the relaxation of Karpenter's other soft constraints - several required
node-affinity terms, which it tries one at a time and drops before any preference (we require
their OR throughout), preferred pod (anti-)affinity, ScheduleAnyway spreads and tolerating
PreferNoSchedule taints, none of which the simulated pods use - and ``PREFERENCE_POLICY=Ignore``
(preferences never required; the default is ``Respect``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from providers.kubernetes.pods.labels import TAINT_KARPENTER_DISRUPTED
from simulator.cluster.emit import Emitter
from simulator.cluster.infos import Observer, PodInfo
from simulator.cluster.lifecycle import ClaimLifecycle
from simulator.cluster.matching import Placement, TaintT
from simulator.cluster.nodepools import Offering, PoolView, all_offerings, read_pool
from simulator.cluster.quantity import Resources, fits
from simulator.cluster.spec import ClusterSpec
from simulator.cluster.state import ClusterState
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


class _Existing:
    """Where a pod went when an existing or in-flight node had room for it."""


ON_TARGET = _Existing()

#: ``on_claim(nodeclaim name, pods the batch placed on it)``: an observer of launches.
ClaimObserver = Callable[[str, tuple[str, ...]], None]


@dataclass(eq=False, slots=True)
class _NewClaim:
    pool: PoolView
    candidates: list[Offering]
    requests: Resources
    pods: int = 1
    #: The pods this batch placed on the claim (what it was created for), in batch order.
    names: list[str] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _Batch:
    """One scheduling simulation: room on targets, open claims and pool limits only shrink."""

    pools: list[PoolView]
    targets: list[_Target]
    usage: dict[str, tuple[Resources, int]]  # pool -> (capacity counted, NodeClaims)
    new: list[_NewClaim] = field(default_factory=list)
    compat: dict[tuple[str, str], bool] = field(default_factory=dict)


def _relaxations(placement: Placement) -> Iterator[Placement]:
    """What Karpenter requires of a node for the pod, in the order it tries: the heaviest
    preferred node-affinity term as a requirement, then without it (the next heaviest as a
    requirement, ...), then the plain placement. Without preferences, only the placement."""
    while placement.preferred:
        yield placement.strict()
        placement = placement.relaxed()
    yield placement


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
        #: Told which pods each new NodeClaim was created for (measurement only: the
        #: attribution of launches, simulator/measurement/fleet_duplication.py); None = off.
        self.on_claim: ClaimObserver | None = None

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
        pods.sort(key=lambda p: (-p.requests.cpu, -p.requests.memory, -p.requests.gpu, p.seq))
        # Per pool: capacity counted against spec.limits so far, and NodeClaims.
        usage = {pool.name: self.lifecycle.pool_usage(pool.name) for pool in pools}
        batch = _Batch(pools, self._targets(), usage)
        # Within a batch room only shrinks, so a (placement, requests) that found no home
        # fails again: a strict placement and its relaxed one are different keys.
        homeless: set[tuple[str, Resources]] = set()
        for pod in pods:
            home = self._schedule(batch, pod.placement, pod.requests, homeless)
            if home is None:
                self.unplaced += 1
            elif isinstance(home, _NewClaim):
                home.names.append(pod.name)
        for nc in batch.new:
            claim = self.lifecycle.create(nc.pool, nc.candidates, nc.requests, nc.pods)
            if self.on_claim is not None:
                self.on_claim(claim.name, tuple(nc.names))
        return len(batch.new)

    def _schedule(
        self,
        batch: _Batch,
        placement: Placement,
        req: Resources,
        homeless: set[tuple[str, Resources]],
    ) -> _NewClaim | _Existing | None:
        """``trySchedule``: place the pod with its heaviest preferred node-affinity term as a
        requirement; while it fits nowhere, drop that term and try again at once.

        Since Karpenter v1.4.0 (``perf: Relax preferences all the way per-pod``, #2119),
        ``Solve`` relaxes a pod all the way on its own turn (``trySchedule`` in
        pkg/controllers/provisioning/scheduling/scheduler.go); only a pod that fits nowhere
        even fully relaxed goes back to the end of the queue, with its preferences, and it
        would fail again here (room only shrinks), so it is not retried.

        Returns where the pod went: :data:`ON_TARGET` (an existing or in-flight node), the
        new claim of this batch, or None (nowhere)."""
        for step in _relaxations(placement):
            cls = (step.key, req)
            if cls in homeless:
                continue
            home = self._place(batch, step, req)
            if home is not None:
                return home
            homeless.add(cls)
        return None

    def _place(
        self, batch: _Batch, placement: Placement, req: Resources
    ) -> _NewClaim | _Existing | None:
        """``add``: an existing or in-flight node, else an open claim, else a new claim."""
        if self._on_target(batch, placement, req):
            return ON_TARGET
        return self._on_open_claim(batch, placement, req) or self._on_new_claim(
            batch, placement, req
        )

    @staticmethod
    def _on_target(batch: _Batch, placement: Placement, req: Resources) -> bool:
        compat = batch.compat
        for t in batch.targets:
            key = (placement.key, t.name)
            ok = compat.get(key)
            if ok is None:
                ok = compat[key] = placement.untolerated(t.taints) is None and placement.matches(
                    t.labels, t.name
                )
            if ok and fits(req, t.free):
                t.free = t.free - req
                return True
        return False

    def _on_open_claim(
        self, batch: _Batch, placement: Placement, req: Resources
    ) -> _NewClaim | None:
        batch.new.sort(key=lambda nc: nc.pods)
        for nc in batch.new:
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
                return nc
        return None

    def _on_new_claim(
        self, batch: _Batch, placement: Placement, req: Resources
    ) -> _NewClaim | None:
        for pool in batch.pools:
            if placement.untolerated(pool.taints) is not None:
                continue
            used, n = batch.usage[pool.name]
            candidates = [
                o
                for o in pool.offerings
                if not self.lifecycle.unavailable(o.key)
                and fits(req, o.allocatable)
                and pool.limits.admits(used, n, o.capacity)
                and placement.matches(self.pools.labels(pool, o), "")
            ]
            if candidates:
                claim = _NewClaim(pool, candidates, req)
                batch.new.append(claim)
                batch.usage[pool.name] = (used + largest(candidates), n + 1)  # subtractMax
                return claim
        return None

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
