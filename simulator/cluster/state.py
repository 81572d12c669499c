"""The cluster's shared, incrementally maintained view of pods and nodes (the "node info cache").

One store subscription feeds it; everything else reads it. It keeps, per node, the pods that
hold resources there and their summed requests, so a fit check is a few integer compares and
nothing ever scans all pods. A pod holds resources on its node from binding (or kubelet
admission when pinned) until it reaches a terminal phase or is removed; a terminating pod
still holds them, like on a real kubelet.

Store callbacks run synchronously inside whoever wrote (possibly the workload half), so this
module never writes to the store: it only updates the index and notifies the observers, which
defer their writes to the event loop. The one exception is priority admission, applied in
place on ADDED because the store has no admission hook (no extra write, no extra event).

Observed transitions are logged here (``pod_bound``, ``pod_running``, ``pod_ended``,
``pod_deleted``) so they appear exactly once whoever caused them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from providers.kubernetes.labels import (
    ANNOTATION_DO_NOT_DISRUPT,
    LABEL_NODEPOOL,
)
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.matching import (
    Placement,
    TaintT,
    compile_placement,
    compile_taints,
)
from simulator.cluster.pods import (
    container_reason,
    default_category,
    is_daemon,
    is_mirror,
    pod_requests,
    scheduled_condition,
    scheduling_gated,
)
from simulator.cluster.quantity import Resources
from simulator.engine.store import Obj, ObjectStore

DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = ("Succeeded", "Failed")
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"


@dataclass(eq=False, slots=True)
class PodInfo:
    """Compiled, mutable view of one pod (identity is the uid)."""

    uid: str
    namespace: str
    name: str
    obj: Obj
    seq: int
    created_at: float
    requests: Resources
    priority: int
    preempt_never: bool
    placement: Placement
    category: str
    grace: float
    active_deadline: float | None
    #: The raw ``karpenter.sh/do-not-disrupt`` value (None: absent); see
    #: providers/kubernetes/do_not_disrupt.py for how Karpenter reads it.
    do_not_disrupt: str | None
    daemon: bool  # owned by an apps/v1 DaemonSet
    mirror: bool  # a static pod's mirror, owned by its v1 Node
    ours: bool  # scheduled by default-scheduler
    gated: bool = False  # spec.schedulingGates not empty yet
    phase: str = "Pending"
    node: str | None = None  # spec.nodeName as observed
    counted: bool = False  # holds resources on ``node``
    terminating: bool = False
    nominated: str | None = None
    sched: tuple[str, str, str] | None = None  # PodScheduled condition as observed
    provisionable: bool = False
    bound_at: float | None = None  # kubelet start time (binding / admission)
    rejected: str | None = None  # kubelet admission failure reason (pinned pods)
    rejected_message: str = ""
    end_reason: str = ""  # status.reason when terminal
    deletion_reason: str | None = None  # why we deleted it (for the event log)
    timers: list[Any] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL

    @property
    def pending_unbound(self) -> bool:
        """Waits for the scheduler: no node, not terminating, not ended, ours, not gated."""
        return (
            self.node is None
            and not self.terminating
            and not self.terminal
            and self.ours
            and not self.gated
        )

    @property
    def reschedulable(self) -> bool:
        """Would need a new home if its node went away (Karpenter's notion)."""
        return not self.terminal and not self.terminating and not self.daemon

    def cancel_timers(self) -> None:
        for t in self.timers:
            t.cancel()
        self.timers.clear()


@dataclass(eq=False, slots=True)
class NodeInfo:
    """One node: static facts from the Node object plus incrementally summed requests."""

    name: str
    obj: Obj
    labels: dict[str, str]
    taints: tuple[TaintT, ...]
    unschedulable: bool
    ready: bool
    allocatable: Resources
    created_at: float
    version: int = 0
    req_cpu: int = 0
    req_mem: int = 0
    req_gpu: int = 0
    npods: int = 0
    pods: dict[str, PodInfo] = field(default_factory=dict)  # uid -> pod holding resources
    nominated: dict[str, PodInfo] = field(default_factory=dict)  # uid -> nominated pod
    #: Last time a pod was bound to or left this node (Karpenter's lastPodEventTime).
    last_pod_event: float = 0.0
    #: Placement key -> why this node is out for such pods (the scheduler's filter memo);
    #: reset whenever the node's labels, taints, readiness or allocatable change.
    filter_memo: dict[str, str | None] = field(default_factory=dict)

    @property
    def pool(self) -> str | None:
        return self.labels.get(LABEL_NODEPOOL)

    @property
    def deleting(self) -> bool:
        return bool(self.obj["metadata"].get("deletionTimestamp"))

    def free(self) -> Resources:
        a = self.allocatable
        return Resources(
            a.cpu - self.req_cpu, a.memory - self.req_mem, a.gpu - self.req_gpu, a.pods - self.npods
        )

    def requested(self) -> Resources:
        return Resources(self.req_cpu, self.req_mem, self.req_gpu, self.npods)


class Observer:
    """Callbacks from the index (all no-ops here). They must not write to the store
    synchronously: schedule writes on the event loop."""

    def pod_pending(self, pod: PodInfo) -> None:
        """A pod now waits for the scheduler (added, or its nomination changed)."""

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        """The pod holds resources on ``node`` from now on."""

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        """The pod stopped holding resources on ``node`` (ended or removed)."""

    def pod_terminating(self, pod: PodInfo) -> None:
        """``deletionTimestamp`` appeared."""

    def pod_running(self, pod: PodInfo) -> None:
        """The pod was observed Running."""

    def pod_removed(self, pod: PodInfo) -> None:
        """The pod is gone from the store (after ``pod_released`` if it held resources)."""

    def nomination_dropped(self, pod: PodInfo, node_name: str) -> None:
        """The pod no longer reserves room on ``node_name`` (bound, moved, cleared, gone)."""

    def pod_provisionable(self, pod: PodInfo, provisionable: bool) -> None:
        """The pod became (or stopped being) a candidate for Karpenter provisioning."""

    def pod_rejected(self, pod: PodInfo, node: NodeInfo | None) -> None:
        """A pod created with ``spec.nodeName`` failed kubelet admission (``pod.rejected``)."""

    def node_changed(self, node: NodeInfo, added: bool) -> None:
        """A node appeared or changed in a way that may let pods schedule."""

    def node_removed(self, node: NodeInfo, orphans: list[PodInfo]) -> None:
        """A node is gone; ``orphans`` still referenced it (they no longer hold resources)."""


class ClusterState:
    """Pods by uid and by key, nodes by name, per-node allocated sums, PriorityClasses."""

    def __init__(
        self,
        store: ObjectStore,
        clock: Callable[[], float],
        emitter: Emitter,
        *,
        categorize: Callable[[Obj], str] = default_category,
    ) -> None:
        self.store = store
        self.now = clock
        self.emit = emitter
        self.categorize = categorize
        self.pods: dict[str, PodInfo] = {}
        self.by_key: dict[tuple[str, str], str] = {}
        self.nodes: dict[str, NodeInfo] = {}
        #: name -> (value, preemptionPolicy, globalDefault)
        self.priority_classes: dict[str, tuple[int, str, bool]] = {}
        self.observers: list[Observer] = []
        #: Decides whether a pod created with ``spec.nodeName`` may run (kubelet admission):
        #: returns None to admit or a rejection reason.
        self.admit_pinned: Callable[[PodInfo, NodeInfo | None], str | None] = lambda p, n: None
        self._seq = 0
        self._sorted_nodes: list[NodeInfo] | None = None
        #: Bumped on every change of what pods hold, where, and of nodes: lets periodic
        #: controllers (disruption) skip work when nothing moved.
        self.changes = 0

    # --- subscription -----------------------------------------------------------------

    def attach(self) -> None:
        """Subscribe and ingest what already exists (PriorityClasses, Nodes, then Pods)."""
        self.store.subscribe(self._on_priority_class, ["PriorityClass"])
        self.store.subscribe(self._on_node, ["Node"])
        self.store.subscribe(self._on_pod, ["Pod"])
        for pc in self.store.list("PriorityClass"):
            self._on_priority_class("ADDED", pc)
        for node in sorted(self.store.list("Node"), key=lambda n: n["metadata"]["name"]):
            self._on_node("ADDED", node)
        for pod in self.store.list("Pod"):
            self._on_pod("ADDED", pod)

    def sorted_nodes(self) -> list[NodeInfo]:
        if self._sorted_nodes is None:
            self._sorted_nodes = [self.nodes[n] for n in sorted(self.nodes)]
        return self._sorted_nodes

    def pod(self, namespace: str, name: str) -> PodInfo | None:
        uid = self.by_key.get((namespace, name))
        return self.pods.get(uid) if uid else None

    # --- priority classes -------------------------------------------------------------

    def _on_priority_class(self, event: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if event == "DELETED":
            self.priority_classes.pop(name, None)
            return
        self.priority_classes[name] = (
            int(obj.get("value", 0)),
            obj.get("preemptionPolicy") or "PreemptLowerPriority",
            bool(obj.get("globalDefault", False)),
        )

    def _admit_priority(self, obj: Obj) -> None:
        """The Priority admission plugin, applied in place (see module docstring)."""
        spec = obj.setdefault("spec", {})
        if spec.get("priority") is not None:
            return
        name = spec.get("priorityClassName")
        resolved = self.priority_classes.get(name) if name else None
        if resolved is None:
            resolved = next((pc for pc in self.priority_classes.values() if pc[2]), None)
            if name:
                # The real API server rejects the create; the store cannot, so say it loudly.
                self.emit(
                    "pod_admission_warning",
                    pod=obj["metadata"]["name"],
                    namespace=obj["metadata"].get("namespace", ""),
                    message=f"no PriorityClass with name {name} was found",
                )
        value, policy = (resolved[0], resolved[1]) if resolved else (0, "PreemptLowerPriority")
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", policy)

    def _admit_gated(self, obj: Obj) -> None:
        """The API server's pod strategy (``applySchedulingGatedCondition``): a pod created
        with scheduling gates gets ``PodScheduled=False`` reason ``SchedulingGated``, applied
        in place like the priority admission above."""
        spec = obj.get("spec") or {}
        if scheduling_gated(spec) and not spec.get("nodeName"):
            obj.setdefault("status", {})
            set_condition(
                obj,
                "PodScheduled",
                "False",
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates",
                self.now(),
            )

    # --- nodes ------------------------------------------------------------------------

    def _on_node(self, event: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        self.changes += 1
        if event == "DELETED":
            node = self.nodes.pop(name, None)
            if node is None:
                return
            self._sorted_nodes = None
            orphans = list(node.pods.values())
            for pod in orphans:
                self._uncount(pod, node)
            for pod in list(node.nominated.values()):
                pod.nominated = None
            node.nominated.clear()
            for o in self.observers:
                o.node_removed(node, orphans)
            return
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        labels = dict(obj["metadata"].get("labels") or {})
        taints = compile_taints(spec.get("taints"))
        unschedulable = bool(spec.get("unschedulable", False))
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        allocatable = Resources.from_api(status.get("allocatable"))
        node = self.nodes.get(name)
        if node is None:
            node = NodeInfo(
                name,
                obj,
                labels,
                taints,
                unschedulable,
                ready,
                allocatable,
                created_at=self.now(),
                last_pod_event=self.now(),
            )
            self.nodes[name] = node
            self._sorted_nodes = None
            for o in self.observers:
                o.node_changed(node, True)
            return
        node.obj = obj
        if (labels, taints, unschedulable, ready, allocatable) != (
            node.labels,
            node.taints,
            node.unschedulable,
            node.ready,
            node.allocatable,
        ):
            node.labels, node.taints, node.unschedulable = labels, taints, unschedulable
            node.ready, node.allocatable = ready, allocatable
            node.version += 1
            node.filter_memo = {}
            for o in self.observers:
                o.node_changed(node, False)

    # --- pods -------------------------------------------------------------------------

    def _compile(self, obj: Obj) -> PodInfo:
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        self._seq += 1
        deadline = spec.get("activeDeadlineSeconds")
        annotations = meta.get("annotations") or {}
        return PodInfo(
            uid=meta["uid"],
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            obj=obj,
            seq=self._seq,
            created_at=self.now(),
            requests=pod_requests(spec),
            priority=int(spec.get("priority") or 0),
            preempt_never=spec.get("preemptionPolicy") == "Never",
            placement=compile_placement(spec),
            category=self.categorize(obj),
            grace=float(spec.get("terminationGracePeriodSeconds", 30)),
            active_deadline=float(deadline) if deadline is not None else None,
            do_not_disrupt=annotations.get(ANNOTATION_DO_NOT_DISRUPT),
            daemon=is_daemon(meta),
            mirror=is_mirror(meta),
            gated=scheduling_gated(spec),
            ours=spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER,
        )

    def _on_pod(self, event: str, obj: Obj) -> None:
        if event == "ADDED":
            self._pod_added(obj)
        elif event == "MODIFIED":
            pod = self.pods.get(obj["metadata"]["uid"])
            if pod is None:  # a replace() changed the uid: treat as new
                self._pod_added(obj)
            else:
                self._pod_modified(pod, obj)
        else:
            pod = self.pods.get(obj["metadata"]["uid"])
            if pod is not None:
                self._pod_deleted(pod)

    def _pod_added(self, obj: Obj) -> None:
        self._admit_priority(obj)
        self._admit_gated(obj)
        pod = self._compile(obj)
        self.pods[pod.uid] = pod
        self.by_key[pod.key] = pod.uid
        status = obj.get("status") or {}
        pod.phase = status.get("phase") or "Pending"
        pod.terminating = bool(obj["metadata"].get("deletionTimestamp"))
        pod.nominated = status.get("nominatedNodeName") or None
        pod.sched = scheduled_condition(obj)
        node_name = (obj.get("spec") or {}).get("nodeName")
        if node_name:
            pod.node = node_name
            if not pod.terminal:
                node = self.nodes.get(node_name)
                reason = self.admit_pinned(pod, node)
                if reason is None and node is not None:
                    self._count(pod, node)
                    pod.bound_at = self.now()
                    self.emit(
                        "pod_bound",
                        pod=pod.name,
                        namespace=pod.namespace,
                        node=node_name,
                        pinned=True,
                    )
                    for o in self.observers:
                        o.pod_bound(pod, node)
                else:
                    pod.rejected = reason or "NodeNotFound"
                    for o in self.observers:
                        o.pod_rejected(pod, node)
            return
        if pod.nominated:
            self._nominate(pod, pod.nominated)
        if pod.pending_unbound:
            for o in self.observers:
                o.pod_pending(pod)
        self._update_provisionable(pod)

    def _pod_modified(self, pod: PodInfo, obj: Obj) -> None:
        pod.obj = obj
        meta = obj["metadata"]
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        # 1. binding
        node_name = spec.get("nodeName")
        if node_name and pod.node is None:
            pod.node = node_name
            self._nominate(pod, None)
            node = self.nodes.get(node_name)
            if node is not None and not pod.terminal:
                self._count(pod, node)
                pod.bound_at = self.now()
                self.emit("pod_bound", pod=pod.name, namespace=pod.namespace, node=node_name)
                for o in self.observers:
                    o.pod_bound(pod, node)
        # 2. nomination (scheduler writes it; anyone may clear it)
        nominated = status.get("nominatedNodeName") or None
        if nominated != pod.nominated and pod.node is None:
            self._nominate(pod, nominated)
        pod.sched = scheduled_condition(obj)
        # 2b. scheduling gates can only be removed; the last one gone enqueues the pod
        if pod.gated and not scheduling_gated(spec):
            pod.gated = False
            if pod.pending_unbound:
                for o in self.observers:
                    o.pod_pending(pod)
        # 3. phase
        phase = status.get("phase") or "Pending"
        if phase != pod.phase:
            old, pod.phase = pod.phase, phase
            if phase == "Running" and old == "Pending":
                self.emit("pod_running", pod=pod.name, namespace=pod.namespace, node=pod.node)
                for o in self.observers:
                    o.pod_running(pod)
            if phase in TERMINAL:
                pod.end_reason = status.get("reason") or container_reason(status)
                self.emit(
                    "pod_ended",
                    pod=pod.name,
                    namespace=pod.namespace,
                    node=pod.node,
                    phase=phase,
                    reason=pod.end_reason,
                )
                self._release(pod)
        # 4. deletion requested
        if meta.get("deletionTimestamp") and not pod.terminating:
            pod.terminating = True
            self.changes += 1
            for o in self.observers:
                o.pod_terminating(pod)
        self._update_provisionable(pod)

    def _pod_deleted(self, pod: PodInfo) -> None:
        self._release(pod)
        self._nominate(pod, None)
        self.pods.pop(pod.uid, None)
        if self.by_key.get(pod.key) == pod.uid:
            del self.by_key[pod.key]
        if pod.provisionable:
            pod.provisionable = False
            for o in self.observers:
                o.pod_provisionable(pod, False)
        pod.cancel_timers()
        self.emit(
            "pod_deleted",
            pod=pod.name,
            namespace=pod.namespace,
            node=pod.node,
            reason=pod.deletion_reason or self._default_reason(pod),
        )
        for o in self.observers:
            o.pod_removed(pod)

    @staticmethod
    def _default_reason(pod: PodInfo) -> str:
        if pod.rejected:
            return "rejected"
        if pod.end_reason == "DeadlineExceeded":
            return "deadline"
        if pod.terminal:
            return "completed"
        return "deleted"

    # --- accounting -------------------------------------------------------------------

    def _count(self, pod: PodInfo, node: NodeInfo) -> None:
        r = pod.requests
        node.req_cpu += r.cpu
        node.req_mem += r.memory
        node.req_gpu += r.gpu
        node.npods += 1
        node.pods[pod.uid] = pod
        node.last_pod_event = self.now()
        pod.counted = True
        self.changes += 1

    def _uncount(self, pod: PodInfo, node: NodeInfo) -> None:
        r = pod.requests
        node.req_cpu -= r.cpu
        node.req_mem -= r.memory
        node.req_gpu -= r.gpu
        node.npods -= 1
        node.pods.pop(pod.uid, None)
        node.last_pod_event = self.now()
        pod.counted = False
        self.changes += 1

    def _release(self, pod: PodInfo) -> None:
        if not pod.counted:
            return
        node = self.nodes.get(pod.node or "")
        if node is not None:
            self._uncount(pod, node)
        else:
            pod.counted = False
        for o in self.observers:
            o.pod_released(pod, node)

    def _nominate(self, pod: PodInfo, node_name: str | None) -> None:
        previous = pod.nominated
        if previous and previous in self.nodes:
            self.nodes[previous].nominated.pop(pod.uid, None)
        pod.nominated = node_name
        if node_name and node_name in self.nodes:
            self.nodes[node_name].nominated[pod.uid] = pod
        # Binding on the nominated node turns the reservation into requests: no room appears.
        if previous and previous != node_name and pod.node != previous:
            for o in self.observers:
                o.nomination_dropped(pod, previous)

    def _update_provisionable(self, pod: PodInfo) -> None:
        """Karpenter's ``IsProvisionable``: the scheduler marked the pod Unschedulable, it is
        not bound, does not wait on a preemption (no nominatedNodeName) and is not owned by a
        DaemonSet or a Node. A gated pod's reason is SchedulingGated, so it never qualifies."""
        sched = pod.sched
        now = (
            pod.pending_unbound
            and pod.nominated is None
            and not pod.daemon
            and not pod.mirror
            and sched is not None
            and sched[0] == "False"
            and sched[1] == "Unschedulable"
        )
        if now != pod.provisionable:
            pod.provisionable = now
            self.changes += 1
            for o in self.observers:
                o.pod_provisionable(pod, now)
