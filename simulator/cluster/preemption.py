"""DefaultPreemption's pure half (kube-scheduler ``defaultpreemption``): whether a pod may
preempt now (``PodEligibleToPreemptOthers``), which pods on a node must go for a preemptor to
fit (``SelectVictimsOnNode``) and how candidate nodes are ranked
(``pickOneNodeForPreemption``), PodDisruptionBudgets included (:mod:`.pdb`).
:class:`~simulator.cluster.scheduler.Scheduler` decides when to preempt and does the writes
(DisruptionTarget, deletion, nomination)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.cluster.filters import static_reason
from simulator.cluster.infos import NodeInfo, PodInfo
from simulator.cluster.pdb import Budget, split_by_violation
from simulator.cluster.pods import terminating_by_preemption

MAX_INT32 = 2**31 - 1
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def start_time(pod: PodInfo) -> float:
    """When the pod started (bound), or was created if it never was: the tie-breaker."""
    return pod.bound_at if pod.bound_at is not None else pod.created_at


def select_victims(
    pod: PodInfo, node: NodeInfo, free: tuple[int, int, int, int]
) -> list[PodInfo] | None:
    """:func:`select_victims_on_node` without PodDisruptionBudgets: the victims only."""
    found = select_victims_on_node(pod, node, free, ())
    return None if found is None else found[0]


def select_victims_on_node(
    pod: PodInfo, node: NodeInfo, free: tuple[int, int, int, int], pdbs: Sequence[Budget]
) -> tuple[list[PodInfo], int] | None:
    """Minimal victim set on ``node`` (most important first) and how many of them violate a
    PodDisruptionBudget, or None if no set helps (``SelectVictimsOnNode``).

    ``free`` is the node's free (cpu, memory, gpu, pods) for ``pod``. Every lower-priority
    pod is removed; if the pod still does not fit, the node is no candidate. Otherwise the
    removed pods, sorted from the most important down (higher priority, then earlier start),
    are split into those whose PDB their eviction would violate and the rest (stable); the
    violating ones are reprieved first, then the others, each while the pod still fits. The
    pods not reprieved are the victims; the violating ones among them are counted."""
    prio = pod.priority
    potential = [v for v in node.pods.values() if v.priority < prio]
    if not potential:
        return None
    cpu, mem, gpu, pods = free
    for v in potential:
        r = v.requests
        cpu, mem, gpu, pods = cpu + r.cpu, mem + r.memory, gpu + r.gpu, pods + 1
    req = pod.requests
    rc, rm, rg = req.cpu, req.memory, req.gpu
    if (rc and rc > cpu) or (rm and rm > mem) or (rg and rg > gpu) or pods < 1:
        return None
    potential.sort(key=_importance)
    violating, non_violating = split_by_violation(potential, pdbs) if pdbs else ([], potential)
    victims = []
    violations = 0
    for group_violates, group in ((True, violating), (False, non_violating)):
        for v in group:
            r = v.requests
            c, m, g, p = cpu - r.cpu, mem - r.memory, gpu - r.gpu, pods - 1
            if (rc and rc > c) or (rm and rm > m) or (rg and rg > g) or p < 1:
                victims.append(v)
                violations += group_violates
            else:
                cpu, mem, gpu, pods = c, m, g, p  # reprieved: it stays
    if violating and non_violating:
        victims.sort(key=_importance)
    return victims, violations


def _importance(v: PodInfo) -> tuple[int, float, int]:
    """MoreImportantPod: higher priority first, then the earlier start."""
    return (-v.priority, start_time(v), v.seq)


def candidate_key(node: NodeInfo, victims: list[PodInfo], violations: int = 0) -> tuple[Any, ...]:
    """The smallest key wins: fewest PodDisruptionBudget violations, lowest highest-victim
    priority, then lowest sum of victim
    priorities each offset by MaxInt32+1 (so fewer victims wins before a lower raw sum, as in
    kube-scheduler), then fewest victims, then the latest start among the highest-priority
    victims, then the node name (upstream picks randomly among ties; we need determinism)."""
    top = victims[0].priority
    earliest_top_start = min(start_time(v) for v in victims if v.priority == top)
    return (
        violations,
        top,
        sum(v.priority + MAX_INT32 + 1 for v in victims),
        len(victims),
        -earliest_top_start,
        node.name,
    )


def ineligible(pod: PodInfo, nodes: Mapping[str, NodeInfo]) -> str | None:
    """``PodEligibleToPreemptOthers`` (defaultpreemption/default_preemption.go): why this
    pod may not preempt now, or None.

    A nominated pod waits only while a lower-priority pod on its nominated node is
    terminating *because of a scheduler preemption* (DisruptionTarget reason
    PreemptionByScheduler); a pod evicted by Karpenter or deleted by its owner does not
    hold it back. If the nominated node now fails the pod's non-resource filters
    (UnschedulableAndUnresolvable), it may preempt elsewhere at once."""
    if pod.preempt_never:
        return "preemption: not eligible due to preemptionPolicy=Never."
    if pod.nominated:
        nominated = nodes.get(pod.nominated)
        if (
            nominated is not None
            and static_reason(pod, nominated) is None
            and any(
                v.priority < pod.priority and v.terminating and terminating_by_preemption(v.obj)
                for v in nominated.pods.values()
            )
        ):
            return "preemption: not eligible due to a terminating pod on the nominated node."
    return None
