"""Facts read off a Pod object: effective requests, PodScheduled condition, category."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.kubernetes.pods.labels import COMPONENT_PLACEHOLDER, LABEL_COMPONENT
from simulator.cluster.quantity import GPU, Resources, cpu_millis, to_int
from simulator.engine.store import Obj


def default_category(pod: Obj) -> str:
    labels = pod["metadata"].get("labels") or {}
    return "placeholder" if labels.get(LABEL_COMPONENT) == COMPONENT_PLACEHOLDER else "workload"


def _container_requests(c: Mapping[str, Any]) -> tuple[int, int, int]:
    res = c.get("resources") or {}
    req = res.get("requests") or {}
    lim = res.get("limits") or {}
    # API defaulting: a resource with a limit and no request requests its limit.
    cpu = req.get("cpu", lim.get("cpu"))
    mem = req.get("memory", lim.get("memory"))
    gpu = req.get(GPU, lim.get(GPU))
    return (
        cpu_millis(cpu) if cpu is not None else 0,
        to_int(mem) if mem is not None else 0,
        to_int(gpu) if gpu is not None else 0,
    )


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """Effective requests the way kube-scheduler computes them.

    max(sum of app containers + restartable (sidecar) init containers, the largest init step
    (an init container plus the sidecars started before it)) + pod overhead; one pod slot.
    """
    cpu = mem = gpu = 0
    for c in spec.get("containers") or ():
        a, b, g = _container_requests(c)
        cpu, mem, gpu = cpu + a, mem + b, gpu + g
    side_cpu = side_mem = side_gpu = 0
    init_cpu = init_mem = init_gpu = 0
    for c in spec.get("initContainers") or ():
        a, b, g = _container_requests(c)
        if c.get("restartPolicy") == "Always":
            side_cpu, side_mem, side_gpu = side_cpu + a, side_mem + b, side_gpu + g
        else:
            init_cpu = max(init_cpu, a + side_cpu)
            init_mem = max(init_mem, b + side_mem)
            init_gpu = max(init_gpu, g + side_gpu)
    cpu = max(cpu + side_cpu, init_cpu)
    mem = max(mem + side_mem, init_mem)
    gpu = max(gpu + side_gpu, init_gpu)
    overhead = spec.get("overhead") or {}
    if overhead:
        o = Resources.from_api(overhead)
        cpu, mem, gpu = cpu + o.cpu, mem + o.memory, gpu + o.gpu
    return Resources(cpu, mem, gpu, 1)


def owned_by(meta: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """Karpenter's ``pod.IsOwnedBy``: an owner reference of exactly that apiVersion and kind."""
    return any(
        r.get("apiVersion") == api_version and r.get("kind") == kind
        for r in meta.get("ownerReferences") or ()
    )


def is_daemon(meta: Mapping[str, Any]) -> bool:
    """``IsOwnedByDaemonSet`` (karpenter pkg/utils/pod/scheduling.go)."""
    return owned_by(meta, "apps/v1", "DaemonSet")


def is_mirror(meta: Mapping[str, Any]) -> bool:
    """``IsOwnedByNode``: a static pod's mirror, owned by its Node (``v1``)."""
    return owned_by(meta, "v1", "Node")


def scheduling_gated(spec: Mapping[str, Any]) -> bool:
    """The pod still carries ``spec.schedulingGates`` (kube-scheduler's SchedulingGates
    PreEnqueue plugin keeps it out of the scheduling queue until the list is empty)."""
    return bool(spec.get("schedulingGates"))


def terminating_by_preemption(obj: Obj) -> bool:
    """kube-scheduler's ``podTerminatingByPreemption``: deleting, and its DisruptionTarget
    condition is True with reason ``PreemptionByScheduler``."""
    if not obj["metadata"].get("deletionTimestamp"):
        return False
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return bool(
                cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
            )
    return False


def container_reason(status: Mapping[str, Any]) -> str:
    for cs in status.get("containerStatuses") or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated and terminated.get("reason"):
            return str(terminated["reason"])
    return ""


def scheduled_condition(obj: Obj) -> tuple[str, str, str] | None:
    """``(status, reason, message)`` of the PodScheduled condition, if any."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            return (cond.get("status", ""), cond.get("reason", ""), cond.get("message", ""))
    return None
