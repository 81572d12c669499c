"""One pod subscription per cluster store: route pod changes by name, log ``pod_created``.

Store callbacks run synchronously inside whoever wrote (the cluster's scheduler, a
controller, the placeholder writer), so handlers registered here must not write to the store
directly: they defer their writes with ``loop.call_soon``.

``pod_created`` is logged here for every pod ADDED to the store (whoever created it), with
what the independent checker needs to account for it: its role (``runner``, ``workflow``,
``placeholder-runner``, ``placeholder-workflow``, ``other``), the scale set it serves, the
job it runs (workflow pods) and its requested cpu (cores) and GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from providers.kubernetes.placement.resources import effective_requests
from providers.kubernetes.pods import labels as L
from simulator.engine.eventlog import EventLog
from simulator.engine.store import Obj, ObjectStore

PodHandler = Callable[[str, Obj], None]
#: Label on pods the workload half creates, naming their role for the accounting.
LABEL_SIM_ROLE = "sim.arc-capacity.dev/role"
#: Label naming the scale set a pod serves (runner, workflow, warm-pool pods).
LABEL_SIM_SCALE_SET = "sim.arc-capacity.dev/scale-set"
LABEL_SIM_JOB = "sim.arc-capacity.dev/job"

ROLE_RUNNER = "runner"
ROLE_WORKFLOW = "workflow"
ROLE_PH_RUNNER = "placeholder-runner"
ROLE_PH_WORKFLOW = "placeholder-workflow"
PLACEHOLDER_ROLES = (ROLE_PH_RUNNER, ROLE_PH_WORKFLOW)
GPU = "nvidia.com/gpu"


def pod_role(pod: Obj) -> tuple[str, str | None]:
    """(role, scale set) of a pod from its labels."""
    labels = pod["metadata"].get("labels") or {}
    role = labels.get(LABEL_SIM_ROLE)
    if role is not None:
        return role, labels.get(LABEL_SIM_SCALE_SET)
    placeholder_for = labels.get(L.LABEL_SCALE_SET)
    if placeholder_for is not None:  # built by providers.kubernetes.pods.placeholders
        half = labels.get(L.LABEL_ROLE)
        return (ROLE_PH_RUNNER if half == "runner" else ROLE_PH_WORKFLOW), placeholder_for
    return "other", None


AddedCallback = Callable[[Obj, str, "str | None", float, int], None]


class PodRouter:
    def __init__(self, store: ObjectStore, log: EventLog, cluster: str) -> None:
        self.store = store
        self.log = log
        self.cluster = cluster
        self._handlers: dict[tuple[str, str], PodHandler] = {}
        self._added: list[AddedCallback] = []
        self._changed: list[PodHandler] = []
        self._cpu_cache: dict[str, tuple[float, int]] = {}
        store.subscribe(self._on_pod, kinds=("Pod",))

    def watch(self, namespace: str, name: str, handler: PodHandler) -> None:
        """Call ``handler(event_type, pod)`` for every change of this pod until it is removed."""
        self._handlers[(namespace, name)] = handler

    def unwatch(self, namespace: str, name: str) -> None:
        self._handlers.pop((namespace, name), None)

    def on_added(self, callback: AddedCallback) -> None:
        """``callback(pod, role, scale_set, cpu, gpu)`` for every pod ADDED (accounting)."""
        self._added.append(callback)

    def on_change(self, callback: PodHandler) -> None:
        """``callback(event_type, pod)`` for every change of every pod (after on_added)."""
        self._changed.append(callback)

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event_type == "ADDED":
            role, scale_set = pod_role(pod)
            cpu, gpu = self._requests(pod)
            fields: dict[str, Any] = {
                "pod": meta["name"],
                "namespace": key[0],
                "cluster": self.cluster,
                "role": role,
                "cpu": cpu,
                "gpu": gpu,
            }
            if scale_set is not None:
                fields["scale_set"] = scale_set
            job = (meta.get("labels") or {}).get(LABEL_SIM_JOB)
            if job is not None:
                fields["job"] = int(job)
            self.log.emit("pod_created", **fields)
            for added in self._added:
                added(pod, role, scale_set, cpu, gpu)
        for changed in self._changed:
            changed(event_type, pod)
        handler = self._handlers.get(key)
        if handler is not None:
            if event_type == "DELETED":
                del self._handlers[key]
            handler(event_type, pod)

    def _requests(self, pod: Obj) -> tuple[float, int]:
        """Requested cpu cores and GPUs (kube-scheduler arithmetic), memoised per shape."""
        spec = pod.get("spec") or {}
        shape = repr((spec.get("containers"), spec.get("initContainers"), spec.get("overhead")))
        cached = self._cpu_cache.get(shape)
        if cached is None:
            req = effective_requests(spec)
            cpu = float(req.get("cpu", Decimal(0)))
            gpu = int(req.get(GPU, Decimal(0)))
            cached = self._cpu_cache[shape] = (round(cpu, 3), gpu)
        return cached


def disrupted(pod: Obj) -> bool:
    """The pod carries a ``DisruptionTarget=True`` condition (preempted or evicted)."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return True
    return False
