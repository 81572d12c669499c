"""The cluster's shared, incrementally maintained view of pods and nodes (the "node info cache").

One store subscription feeds it; everything else reads it. It keeps, per node, the pods that
hold resources there and their summed requests, so a fit check is a few integer compares and
nothing ever scans all pods. A pod holds resources on its node from binding (or kubelet
admission when pinned) until it reaches a terminal phase or is removed; a terminating pod
still holds them, like on a real kubelet.

Store callbacks run synchronously inside whoever wrote (possibly the workload half), so this
module never writes to the store: it only updates the index and notifies the observers, which
defer their writes to the event loop. The one exception is admission
(simulator/cluster/admission.py), applied in place on ADDED because the store has no
admission hook (no extra write, no extra event). Its records are in simulator/cluster/infos.py.

Observed transitions are logged here (``pod_bound``, ``pod_running``, ``pod_ended``,
``pod_deleted``) so they appear exactly once whoever caused them.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.clock import Clock
from simulator.cluster.admission import admit_gated, admit_priority, priority_class_entry
from simulator.cluster.emit import Emitter
from simulator.cluster.infos import TERMINAL, NodeInfo, Observer, PodInfo, compile_pod
from simulator.cluster.matching import compile_taints
from simulator.cluster.pods import (
    container_reason,
    default_category,
    scheduled_condition,
    scheduling_gated,
)
from simulator.cluster.quantity import Resources
from simulator.engine.store import Obj, ObjectStore


class ClusterState:
    """Pods by uid and by key, nodes by name, per-node allocated sums, PriorityClasses."""

    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        emitter: Emitter,
        *,
        categorize: Callable[[Obj], str] = default_category,
    ) -> None:
        self.store = store
        self.clock = clock
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
        self.priority_classes[name] = priority_class_entry(obj)

    def _admit(self, obj: Obj) -> None:
        """Admission applied in place on ADDED (see module docstring)."""
        admit_priority(obj, self.priority_classes, self.emit)
        admit_gated(obj, self.clock)

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
                created_at=self.clock.now(),
                last_pod_event=self.clock.now(),
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
        self._seq += 1
        return compile_pod(obj, self._seq, self.clock.now(), self.categorize)

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
        self._admit(obj)
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
                    pod.bound_at = self.clock.now()
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
                pod.bound_at = self.clock.now()
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
        node.last_pod_event = self.clock.now()
        pod.counted = True
        self.changes += 1

    def _uncount(self, pod: PodInfo, node: NodeInfo) -> None:
        r = pod.requests
        node.req_cpu -= r.cpu
        node.req_mem -= r.memory
        node.req_gpu -= r.gpu
        node.npods -= 1
        node.pods.pop(pod.uid, None)
        node.last_pod_event = self.clock.now()
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
