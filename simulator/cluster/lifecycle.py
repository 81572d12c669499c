"""Karpenter's NodeClaim lifecycle, the unavailable-offerings (ICE) cache and node termination.

NodeClaim lifecycle (times from ``spec.latencies``):

1. created (by the provisioner) with its candidate offerings (every instance type x zone x
   capacity type that fits its pods within the pool's limits; ``spec.requirements`` lists the
   instance types). Until launch the provisioner plans with the cheapest candidate.
2. The launch (``Create`` -> EC2 ``CreateFleet``, karpenter-provider-aws
   ``pkg/providers/instance/instance.go``) returns ``ice_failure`` s after creation. The
   capacity type is spot if the claim allows spot and some spot candidate is not in the
   unavailable-offerings cache, else on-demand (``getCapacityType``). The fleet gets every
   available candidate of that capacity type as an override and tries them cheapest first:
   each override an ICE window of ``spec.ice_windows`` covers is a fleet error and enters the
   cache for ``timings.ice_ttl`` (3 min, ``UnavailableOfferingsTTL``); the first one not
   covered is launched. No available candidate at all, or every override ICE'd, is an
   ``InsufficientCapacityError`` (karpenter ``nodeclaim/lifecycle/launch.go``): a Warning Event
   with that reason on the NodeClaim and the NodeClaim is deleted (no status condition is
   written; the finalizer is released ``failed_claim_delete`` s later). Its pods stay pending
   and re-trigger the provisioner on their own 10 s requeue.
3. On success ``Launched`` at once: providerID, the launched instance type / zone / capacity
   type labels, capacity, allocatable. The machine is billed from here (:mod:`.usage`), i.e.
   from the launch request plus the fleet call's latency.
4. ``Registered`` at creation + U(``launch``) + ``registration``: the Node object appears,
   NotReady with the taint ``node.kubernetes.io/not-ready:NoSchedule`` (so nothing schedules
   yet) plus the pool taints.
5. ``Initialized`` ``initialize`` s later: Node Ready, not-ready taint removed, label
   ``karpenter.sh/initialized=true``; pods can bind.

Node names equal NodeClaim names (as with Karpenter's KWOK provider; on AWS they would be EC2
private DNS names).

Termination (consolidation; :mod:`.termination`): the node carries
``karpenter.sh/disrupted:NoSchedule``; Node and NodeClaim get ``deletionTimestamp`` (finalizer
``karpenter.sh/termination``); every reschedulable pod is evicted through the eviction path
(``DisruptionTarget`` reason ``EvictionByEvictionAPI``, graceful delete); when no pod holds
resources any more, pods left on the node (ended ones) are removed, then the Node and the
NodeClaim. Node loss removes the pods, the Node and the NodeClaim at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from providers.kubernetes.pods.labels import (
    KARPENTER_GROUP,
    KARPENTER_VERSION,
)
from simulator.cluster.claims import (
    FINALIZER,
    Claim,
    claim_event,
    insufficient_capacity_message,
    node_object,
    nodeclaim_object,
)
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.fleet import fleet_overrides
from simulator.cluster.infos import LABEL_INSTANCE_TYPE, NodeInfo, Observer, PodInfo
from simulator.cluster.nodepools import Offering, PoolView
from simulator.cluster.quantity import GPU, Resources, format_cpu, format_memory
from simulator.cluster.spec import ClusterSpec
from simulator.cluster.state import ClusterState
from simulator.cluster.termination import NodeTermination
from simulator.cluster.usage import Machine, Usage
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, StoreError, iso
from simulator.engine.streams import Streams

MAX_INSTANCE_TYPES = 60  # Karpenter truncates a NodeClaim's instance-type requirement
TAINT_NOT_READY = ("node.kubernetes.io/not-ready", "", "NoSchedule")
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName alphabet


class ClaimLifecycle(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        usage: Usage,
        spec: ClusterSpec,
        *,
        streams: Streams,
    ) -> None:
        self.loop = loop
        self.state = state
        self.store = state.store
        self.emit = emit
        self.usage = usage
        self.spec = spec
        self.lat = spec.latencies
        self.streams = streams
        self.claims: dict[str, Claim] = {}
        #: Offering key -> virtual time it becomes available again.
        self.ice: dict[tuple[str, str, str], float] = {}
        self.created = 0
        self.launched = 0
        self.failed = 0
        self.fleet_errors = 0  # ICE'd overrides (each enters the unavailable-offerings cache)
        self._events = 0
        self.termination = NodeTermination(
            loop, state, emit, usage, self.claims, self._write_pool_status
        )
        #: node name -> pod deletion reason, while the node drains
        self.draining = self.termination.draining

    # --- queries ----------------------------------------------------------------------

    def unavailable(self, key: tuple[str, str, str]) -> bool:
        until = self.ice.get(key)
        return until is not None and until > self.loop.now()

    def pool_usage(self, pool: str) -> tuple[Resources, int]:
        total = Resources()
        n = 0
        for c in self.claims.values():
            if c.pool == pool and c.phase != "Failed":
                total = total + c.offering.capacity
                n += 1
        return total, n

    def _new_name(self, pool: str) -> str:
        while True:
            names = self.streams("nodeclaim-names")
            suffix = "".join(names.choice(ALPHABET) for _ in range(5))
            name = f"{pool}-{suffix}"
            if name not in self.claims and name not in self.state.nodes:
                return name

    # --- creation ---------------------------------------------------------------------

    def create(
        self,
        pool: PoolView,
        candidates: list[Offering],
        requests: Resources,
        n_pods: int,
    ) -> Claim:
        """A NodeClaim for ``candidates`` (cheapest first); the launch picks among them."""
        now = self.loop.now()
        name = self._new_name(pool.name)
        offering = candidates[0]
        labels = pool.node_labels(offering)
        claim = Claim(name, pool.name, offering, labels, pool.taints, now, tuple(candidates))
        names: list[str] = []
        for o in candidates:
            if o.instance_type not in names:
                names.append(o.instance_type)
        self.claims[name] = claim
        self.created += 1
        requirements = [
            {"key": k, "operator": op, "values": list(v)}
            for k, op, v in pool.requirements
            if k != LABEL_INSTANCE_TYPE
        ]
        requirements.append(
            {"key": LABEL_INSTANCE_TYPE, "operator": "In", "values": names[:MAX_INSTANCE_TYPES]}
        )
        self.store.create(nodeclaim_object(name, pool, requirements, requests, now))
        # The launch request: what is known now is the pool, the candidate instance types and
        # the planned (cheapest) offering; the launched one is in ``nodeclaim_launched``.
        self.emit(
            "nodeclaim_created",
            nodeclaim=name,
            nodepool=pool.name,
            instance_type=offering.instance_type,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            instance_types=names[:MAX_INSTANCE_TYPES],
            pods=n_pods,
        )
        self._write_pool_status(pool.name)
        claim.timers.append(self.loop.call_later(self.lat.ice_failure, self._launch_call, claim))
        return claim

    def _claim_condition(
        self,
        claim: Claim,
        ctype: str,
        status: str,
        reason: str,
        message: str = "",
        extra: Callable[[Obj], None] | None = None,
    ) -> None:
        now = self.loop.now()

        def change(obj: Obj) -> None:
            set_condition(obj, ctype, status, reason, message, now)
            if extra is not None:
                extra(obj)

        with contextlib.suppress(StoreError):
            self.store.mutate("NodeClaim", None, claim.name, change)

    # --- launch -----------------------------------------------------------------------

    def _launch_call(self, claim: Claim) -> None:
        """``CloudProvider.Create``: one CreateFleet call over every available override."""
        if self.claims.get(claim.name) is not claim:
            return
        overrides = fleet_overrides(claim.candidates, self.unavailable)
        t = self.loop.now() - self.loop.start
        windows = self.spec.ice_windows
        tried: list[Offering] = []
        for o in overrides:
            if not any(w.covers(o.instance_type, o.zone, o.capacity_type, t) for w in windows):
                self._mark_unavailable(tried)  # fleet errors returned beside the instance
                self._launched(claim, o)
                return
            tried.append(o)
        self._mark_unavailable(tried)
        self._fail(claim, tried)

    def _mark_unavailable(self, offerings: list[Offering]) -> None:
        until = self.loop.now() + self.spec.timings.ice_ttl
        self.fleet_errors += len(offerings)
        for o in offerings:
            self.ice[o.key] = until

    def _fail(self, claim: Claim, tried: list[Offering]) -> None:
        """``InsufficientCapacityError``: Warning Event on the NodeClaim, NodeClaim deleted."""
        o = tried[0] if tried else claim.offering
        claim.phase = "Failed"
        self.failed += 1
        message = insufficient_capacity_message(claim.name, tried)
        self._event(claim, "InsufficientCapacityError", message)
        self.emit(
            "nodeclaim_failed",
            nodeclaim=claim.name,
            nodepool=claim.pool,
            instance_type=o.instance_type,
            zone=o.zone,
            capacity_type=o.capacity_type,
            offerings=[f"{x.instance_type}/{x.zone}/{x.capacity_type}" for x in tried],
            reason="InsufficientCapacityError",
        )
        with contextlib.suppress(StoreError):
            self.store.delete("NodeClaim", None, claim.name)  # finalizer: deletionTimestamp
        claim.timers.append(
            self.loop.call_later(self.lat.failed_claim_delete, self._remove_failed, claim)
        )

    def _remove_failed(self, claim: Claim) -> None:
        with contextlib.suppress(StoreError):
            self.store.remove("NodeClaim", None, claim.name)  # termination: finalizer released
        self.claims.pop(claim.name, None)
        self._write_pool_status(claim.pool)
        self.emit(
            "nodeclaim_deleted",
            nodeclaim=claim.name,
            nodepool=claim.pool,
            reason="insufficient_capacity",
        )

    def _event(self, claim: Claim, reason: str, message: str) -> None:
        self._events += 1
        now = iso(self.loop.now())
        obj = self.store.find("NodeClaim", None, claim.name)
        uid = obj["metadata"]["uid"] if obj else ""
        self.store.create(claim_event(claim.name, self._events, uid, reason, message, now))

    def _launched(self, claim: Claim, o: Offering) -> None:
        claim.phase = "Launched"
        claim.offering = o
        claim.labels = {**claim.labels, **dict(o.labels)}
        self.launched += 1
        instance = self.streams("instance-ids").getrandbits(68)
        provider_id = f"aws:///{o.zone}/i-{instance:017x}"
        claim.provider_id = provider_id

        def extra(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["providerID"] = provider_id
            status["capacity"] = o.capacity.to_api()
            status["allocatable"] = o.allocatable.to_api()
            obj["metadata"]["labels"].update(
                {
                    LABEL_INSTANCE_TYPE: o.instance_type,
                    "topology.kubernetes.io/zone": o.zone,
                    "karpenter.sh/capacity-type": o.capacity_type,
                }
            )

        self._claim_condition(claim, "Launched", "True", "Launched", extra=extra)
        self._write_pool_status(claim.pool)
        self.usage.machine_started(
            Machine(claim.name, o.allocatable.cpu, o.allocatable.gpu, o.price)
        )
        self.emit(
            "nodeclaim_launched",
            nodeclaim=claim.name,
            nodepool=claim.pool,
            instance_type=o.instance_type,
            zone=o.zone,
            capacity_type=o.capacity_type,
            price=o.price,
        )
        # The node registers when the machine has booted: creation + U(launch) + registration.
        lo, hi = self.lat.launch
        boot = max(self.streams("boot", claim.pool).uniform(lo, hi) - self.lat.ice_failure, 0.0)
        claim.timers.append(
            self.loop.call_later(boot + self.lat.registration, self._registered, claim)
        )

    def _registered(self, claim: Claim) -> None:
        if self.claims.get(claim.name) is not claim:
            return
        claim.phase = "Registered"
        o = claim.offering
        labels = {**claim.labels, "karpenter.sh/registered": "true"}
        claim_obj = self.store.find("NodeClaim", None, claim.name)
        self.store.create(
            node_object(
                claim.name,
                labels,
                (*claim.taints, TAINT_NOT_READY),
                o.capacity,
                o.allocatable,
                ready=False,
                provider_id=claim.provider_id,
                finalizers=[FINALIZER],
                owner={
                    "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
                    "kind": "NodeClaim",
                    "name": claim.name,
                    "uid": claim_obj["metadata"]["uid"] if claim_obj else "",
                },
            )
        )

        def extra(obj: Obj) -> None:
            obj.setdefault("status", {})["nodeName"] = claim.name

        self._claim_condition(claim, "Registered", "True", "Registered", extra=extra)
        self.emit(
            "node_added",
            node=claim.name,
            nodeclaim=claim.name,
            nodepool=claim.pool,
            instance_type=o.instance_type,
            zone=o.zone,
            capacity_type=o.capacity_type,
        )
        claim.timers.append(self.loop.call_later(self.lat.initialize, self._initialized, claim))

    def _initialized(self, claim: Claim) -> None:
        if self.claims.get(claim.name) is not claim:
            return
        claim.phase = "Initialized"
        now = self.loop.now()

        def change(obj: Obj) -> None:
            spec = obj["spec"]
            spec["taints"] = [
                t for t in spec.get("taints") or () if t.get("key") != TAINT_NOT_READY[0]
            ]
            obj["metadata"]["labels"]["karpenter.sh/initialized"] = "true"
            for cond in obj["status"]["conditions"]:
                if cond["type"] == "Ready":
                    cond.update(status="True", reason="KubeletReady", lastTransitionTime=iso(now))

        try:
            self.store.mutate("Node", None, claim.name, change)
        except StoreError:
            return
        self._claim_condition(claim, "Initialized", "True", "Initialized")
        self._claim_condition(claim, "Ready", "True", "Ready")
        self.emit("node_ready", node=claim.name, nodeclaim=claim.name, nodepool=claim.pool)

    # --- pool status ------------------------------------------------------------------

    def _write_pool_status(self, pool: str) -> None:
        total, n = self.pool_usage(pool)
        resources = {
            "cpu": format_cpu(total.cpu),
            "memory": format_memory(total.memory),
            "nodes": str(n),
            "pods": str(total.pods),
        }
        if total.gpu:
            resources[GPU] = str(total.gpu)

        def change(obj: Obj) -> None:
            obj.setdefault("status", {})["resources"] = resources

        current = self.store.find("NodePool", None, pool)
        if current is None or (current.get("status") or {}).get("resources") == resources:
            return
        self.store.mutate("NodePool", None, pool, change)

    # --- termination (simulator/cluster/termination.py: ``self.termination``) ----------

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        self.termination.pod_released(pod, node)

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        self.termination.pod_bound(pod, node)
