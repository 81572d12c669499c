"""kube-scheduler's filters and scoring (simulator/cluster/scheduler.py runs them per pass).

Filters, in kube-scheduler's order: NodeUnschedulable (``spec.unschedulable`` unless the pod
tolerates ``node.kubernetes.io/unschedulable``), TaintToleration (NoSchedule/NoExecute),
NodeAffinity (nodeSelector + required affinity), NodeResourcesFit (cpu, memory,
nvidia.com/gpu, pod count; a zero request is not checked). Resources in use are the requests
of pods bound to the node that have not ended - terminating pods keep holding theirs until the
kubelet removes them - plus the requests of pods *nominated* to the node with priority >= the
pod's (the real scheduler's addNominatedPods), so a preemptor's space is not stolen by a lower
priority pod while its victims terminate.

Scoring: ``LeastAllocated`` (default, kube-scheduler's default strategy) or ``MostAllocated``
on cpu and memory, equal weights; ties go to the first node by name (the real scheduler picks
randomly among ties; we need determinism). A pod with preferred node affinity is also scored
by the NodeAffinity plugin (the weights of the preferred terms a node matches, normalized to
0-100 over the feasible nodes) at twice the weight of NodeResourcesFit, as in the default
profile (:mod:`.scoring`): it goes to a matching node that fits rather than a merely emptier
one, and to a non-matching node when no matching one fits (preferences never filter). A
nominated pod tries its nominated node first.

Pure functions of a pod and nodes (the scheduler's pass calls them; the disruption
controller reuses :func:`static_reason`)."""

from __future__ import annotations

from collections.abc import Mapping

from simulator.cluster.infos import NodeInfo, PodInfo
from simulator.cluster.matching import tolerates
from simulator.cluster.quantity import Resources, fits
from simulator.cluster.scoring import best_preferred

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
_UNKNOWN = object()


def insufficient(req: Resources, free: Resources) -> list[str]:
    out = []
    if req.pods > free.pods:
        out.append("Too many pods")
    if req.cpu and req.cpu > free.cpu:
        out.append("Insufficient cpu")
    if req.memory and req.memory > free.memory:
        out.append("Insufficient memory")
    if req.gpu and req.gpu > free.gpu:
        out.append("Insufficient nvidia.com/gpu")
    return out


def static_reason(pod: PodInfo, node: NodeInfo) -> str | None:
    """Why the node is out for the pod regardless of resources (None: it is not).
    Memoised per node and placement; the node's memo is reset when the node changes."""
    key = pod.placement.key
    memo = node.filter_memo
    try:
        return memo[key]
    except KeyError:
        pass
    reason: str | None = None
    placement = pod.placement
    if node.unschedulable and not tolerates(placement.tolerations, UNSCHEDULABLE_TAINT):
        reason = REASON_UNSCHEDULABLE_NODE
    else:
        taint = placement.untolerated(node.taints)
        if taint is not None:
            reason = f"node(s) had untolerated taint {{{taint[0]}: {taint[1]}}}"
        elif not placement.matches(node.labels, node.name):
            reason = REASON_AFFINITY
    memo[key] = reason
    return reason


def free_room(pod: PodInfo, node: NodeInfo) -> tuple[int, int, int, int]:
    """Free (cpu, memory, gpu, pods) for ``pod``: allocatable minus requests of pods
    holding resources minus pods nominated here with priority >= the pod's."""
    a = node.allocatable
    cpu = a.cpu - node.req_cpu
    mem = a.memory - node.req_mem
    gpu = a.gpu - node.req_gpu
    pods = a.pods - node.npods
    if node.nominated:
        for other in node.nominated.values():
            if other is not pod and other.priority >= pod.priority:
                r = other.requests
                cpu, mem, gpu, pods = cpu - r.cpu, mem - r.memory, gpu - r.gpu, pods - 1
    return cpu, mem, gpu, pods


def free_room_for(pod: PodInfo, node: NodeInfo) -> Resources:
    return Resources(*free_room(pod, node))


def find_node(
    pod: PodInfo, nodes: list[NodeInfo], by_name: Mapping[str, NodeInfo], most: bool
) -> tuple[NodeInfo | None, dict[str, tuple[str, ...]]]:
    """The best feasible node, or None and why each node failed."""
    req = pod.requests
    rc, rm, rg = req.cpu, req.memory, req.gpu
    if pod.nominated:
        nominated = by_name.get(pod.nominated)
        if (
            nominated is not None
            and static_reason(pod, nominated) is None
            and fits(req, free_room_for(pod, nominated))
        ):
            return nominated, {}
    static_failures: list[tuple[str, str]] = []
    short: list[tuple[str, tuple[int, int, int, int]]] = []
    best: NodeInfo | None = None
    best_score = -1.0
    key = pod.placement.key
    # Preferred node affinity is scored against every feasible node (it is normalized
    # over them); other pods keep the running maximum.
    scored: list[tuple[NodeInfo, float]] | None = [] if pod.placement.preferred else None
    for node in nodes:
        # Hot loop (every pending pod x every node): the filters and the fit are inlined.
        reason = node.filter_memo.get(key, _UNKNOWN)
        if reason is _UNKNOWN:
            reason = static_reason(pod, node)
        if reason is not None:
            static_failures.append((node.name, reason))  # type: ignore[arg-type]
            continue
        a = node.allocatable
        if node.nominated:
            fc, fm, fg, fp = free_room(pod, node)
        else:
            fc, fm = a.cpu - node.req_cpu, a.memory - node.req_mem
            fg, fp = a.gpu - node.req_gpu, a.pods - node.npods
        if (rc and rc > fc) or (rm and rm > fm) or (rg and rg > fg) or fp < 1:
            short.append((node.name, (fc, fm, fg, fp)))
            continue
        # LeastAllocated / MostAllocated on cpu and memory, equal weights.
        used = ((node.req_cpu + rc) / a.cpu if a.cpu else 1.0) + (
            (node.req_mem + rm) / a.memory if a.memory else 1.0
        )
        score = used if most else 2.0 - used
        if scored is not None:
            scored.append((node, score))
        elif score > best_score:
            best, best_score = node, score
    if scored:
        return best_preferred(pod.placement, scored), {}
    if best is not None:
        return best, {}
    # Only a failure needs the reasons (for the message).
    reasons: dict[str, tuple[str, ...]] = {name: (r,) for name, r in static_failures}
    for name, free in short:
        reasons[name] = tuple(insufficient(req, Resources(*free)))
    return None, reasons
