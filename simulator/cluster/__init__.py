"""The CLUSTER half of the simulated world: kube-scheduler, kubelet and Karpenter
(docs/design.md#simulator).

Controllers over the shared :class:`~simulator.engine.store.ObjectStore`, driven by the
virtual-time :class:`~simulator.engine.loop.EventLoop`. They react to store changes
(``ObjectStore.subscribe``) and write back through the store like the real components write
through the API server, so whatever the workload half (ARC, placeholders) sees is API-shaped.

Public API (everything else in this package is internal)
---------------------------------------------------------
``Cluster(loop, store, spec, *, rng, log=None)``
    Build the cluster. ``spec`` is a :class:`ClusterSpec` (pydantic, frozen; validate scenario
    files with ``ClusterSpec.model_validate(data)``; ``ClusterSpec.default()`` is a sensible
    EKS-like catalog with a static system pool, a general pool and a GPU pool). ``rng`` seeds
    every random latency (the cluster takes one draw from it at construction and derives a
    stream per kind of draw from that, :mod:`simulator.engine.streams`, so it does not perturb
    the caller's sequence afterwards). ``log`` is an
    optional :class:`~simulator.engine.eventlog.EventLog`.
``Cluster.start()``
    Creates the PriorityClasses of ``spec.priority_classes`` that do not exist yet, the
    NodePool objects and the static Nodes, and subscribes to the store. Call once, before the
    loop runs (pods created before ``start()`` are picked up too).
``Cluster.finish_pod(namespace, name, succeeded=True) -> bool``
    The pod's containers ended by themselves (a runner or job finished): phase Succeeded (or
    Failed, reason ``Error``); its resources are released at once. Returns False when there is
    nothing to finish (pod gone or already terminal); raises :class:`PodStateError` when the
    pod never started (not Running).
``Cluster.lose_node(name, reason="node_lost")``
    The machine is gone: its pods are removed at once, then the Node (and its NodeClaim).
    Raises :class:`NodeNotFound`.
``Cluster.stats() -> ClusterStats``
    Counters and time integrals up to now: ``nodes_launched`` (NodeClaims that launched),
    ``nodeclaims_failed``, ``node_seconds``, ``cpu_core_seconds`` / ``gpu_seconds`` of
    *allocatable* capacity of every machine that exists (billed from launch for Karpenter
    machines, from start for static ones), ``cost`` (instance price x hours) and
    ``requested_cpu_core_seconds`` / ``requested_gpu_seconds`` keyed by pod category
    (``"placeholder"`` for pods labelled ``app.kubernetes.io/component=placeholder``, else
    ``"workload"``; pass ``categorize=`` to ``Cluster`` to change that). Idle reserved CPU hours
    = ``(cpu_core_seconds - requested_cpu_core_seconds["workload"]) / 3600``.
``Cluster.usage() -> UsageSample``
    The same quantities as instantaneous values (for sampling).

Example::

    loop = EventLoop(); store = ObjectStore(loop.now)
    cluster = Cluster(loop, store, ClusterSpec.default(), rng=random.Random(7), log=log)
    cluster.start()
    store.create(pod)            # the scheduler / Karpenter / kubelet take it from here
    loop.run_for(120)
    cluster.finish_pod("arc-runners", "runner-1")   # the runner's job is done

Event log (``log``): ``pod_bound``, ``pod_running``, ``pod_unschedulable``, ``pod_nominated``,
``pod_disrupted`` (DisruptionTarget set: reason ``preempted`` / ``consolidated`` / ``evicted``),
``pod_ended`` (phase, reason), ``pod_deleted`` (reason ``preempted`` / ``evicted`` /
``consolidated`` / ``node_lost`` / ``deleted`` / ``deadline`` / ``completed`` / ``rejected``),
``node_added``, ``node_ready``, ``node_disrupted``, ``node_removed``; per NodeClaim
``nodeclaim_created`` at the provisioner's launch request (nodepool, the planned cheapest
instance_type / zone / capacity_type, the candidate ``instance_types``), ``nodeclaim_launched``
when the CreateFleet call returned (the launched instance_type, zone, capacity_type, price:
billing starts here), ``nodeclaim_failed`` on InsufficientCapacity (the ``offerings`` tried)
and exactly one ``nodeclaim_deleted`` (reason) when the NodeClaim is gone; each with the ids
it concerns (``pod``, ``namespace``, ``node``, ``nodeclaim``, ``nodepool``). Machine cost is
therefore recomputable from the log alone: price x (``nodeclaim_deleted`` or end -
``nodeclaim_launched``).

Semantics in one screen (details in each module's docstring)
-------------------------------------------------------------
* Admission: a Pod ADDED without ``spec.priority`` gets ``spec.priority`` and
  ``spec.preemptionPolicy`` from its PriorityClass (global default or 0 otherwise). The store
  has no admission hook, so this is applied in place in the ADDED callback (no extra write).
* kube-scheduler (:mod:`.scheduler`): event-driven passes (pod add / pod release / node
  change; at most one pass per virtual instant) plus a retry of unschedulable pods every
  ``timings.scheduler_retry`` s. Filters: unschedulable, taints, nodeSelector + required node
  affinity, resources (cpu, memory, nvidia.com/gpu, pod count; terminating pods hold resources
  until removed; nominated pods of >= priority reserve their nominated node). Scoring:
  ``LeastAllocated`` (default) or ``MostAllocated``, ties by node name. Preemption with the
  real DefaultPreemption algorithm (see module).
* kubelet (:mod:`.kubelet`): start latency, graceful deletion, activeDeadlineSeconds (from
  the kubelet's start time, i.e. binding), admission of ``spec.nodeName``-pinned pods
  (``OutOfcpu`` ...).
* Karpenter (:mod:`.provisioner`, :mod:`.lifecycle`, :mod:`.fleet`, :mod:`.disruption`):
  per-pod triggers re-sent every 10 s while a pod is provisionable (never for DaemonSet or
  mirror pods), batching, bin-packing, NodePool limits with the largest option reserved per
  new NodeClaim, one CreateFleet call over every available offering (ICE: Event on the
  NodeClaim and deletion, the unavailable-offerings cache), NodeClaim lifecycle, emptiness /
  single-node consolidation, node termination.
* Pods with ``spec.schedulingGates`` are marked ``PodScheduled=False/SchedulingGated`` and
  neither scheduled nor provisioned until the gates are removed.
* Every behaviour above is listed with its upstream source and test in
  ``docs/semantics.md`` (generated from ``tools/semantics/*.yaml``).

Writes: the cluster writes through the store like the real components (binding, pod status,
DisruptionTarget + delete, Node/NodeClaim/NodePool status, Warning Events for ICE), so
``store.writes`` counts them with everyone else's.

Not modelled (on purpose): PodDisruptionBudgets, inter-pod (anti-)affinity and topology
spread, DaemonSet controllers (instance allocatable already subtracts kube-reserved; pods a test
marks as DaemonSet-owned are only excluded from provisioning), the extra provisioner trigger on
every pod update and the node controller's trigger, ephemeral storage,
host ports, Karpenter drift / expiration / replace-consolidation / multi-node consolidation.
"""

from __future__ import annotations

from simulator.cluster.cluster import Cluster, ClusterStats, UsageSample
from simulator.cluster.errors import (
    ClusterError,
    NodeNotFound,
    PodNotFound,
    PodStateError,
)
from simulator.cluster.spec import (
    ClusterSpec,
    IceWindow,
    InstanceType,
    Latencies,
    NodePoolSpec,
    PriorityClassSpec,
    StaticNodeGroup,
    Taint,
    Timings,
)

__all__ = [
    "Cluster",
    "ClusterError",
    "ClusterSpec",
    "ClusterStats",
    "IceWindow",
    "InstanceType",
    "Latencies",
    "NodeNotFound",
    "NodePoolSpec",
    "PodNotFound",
    "PodStateError",
    "PriorityClassSpec",
    "StaticNodeGroup",
    "Taint",
    "Timings",
    "UsageSample",
]
