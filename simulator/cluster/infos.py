"""The records of the cluster's node info cache (simulator/cluster/state.py): a pod
(:class:`PodInfo`, compiled once from its object by :func:`compile_pod`) and a node
(:class:`NodeInfo`, with the pods that hold resources there and their sums), and the
:class:`Observer` interface the scheduler, kubelet, provisioner and others implement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from providers.kubernetes.pods.labels import (
    ANNOTATION_DO_NOT_DISRUPT,
    LABEL_NODEPOOL,
)
from simulator.cluster.matching import (
    Placement,
    TaintT,
    compile_placement,
)
from simulator.cluster.pods import (
    is_daemon,
    is_mirror,
    pod_requests,
    scheduling_gated,
)
from simulator.cluster.quantity import Resources
from simulator.engine.store import Obj

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
    #: providers/kubernetes/pods/do_not_disrupt.py for how Karpenter reads it.
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


def compile_pod(obj: Obj, seq: int, now: float, categorize: Callable[[Obj], str]) -> PodInfo:
    """The index's record of a pod object just added (``seq``: its arrival order)."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    deadline = spec.get("activeDeadlineSeconds")
    annotations = meta.get("annotations") or {}
    return PodInfo(
        uid=meta["uid"],
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        obj=obj,
        seq=seq,
        created_at=now,
        requests=pod_requests(spec),
        priority=int(spec.get("priority") or 0),
        preempt_never=spec.get("preemptionPolicy") == "Never",
        placement=compile_placement(spec),
        category=categorize(obj),
        grace=float(spec.get("terminationGracePeriodSeconds", 30)),
        active_deadline=float(deadline) if deadline is not None else None,
        do_not_disrupt=annotations.get(ANNOTATION_DO_NOT_DISRUPT),
        daemon=is_daemon(meta),
        mirror=is_mirror(meta),
        gated=scheduling_gated(spec),
        ours=spec.get("schedulerName", DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER,
    )
