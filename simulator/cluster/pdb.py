"""PodDisruptionBudgets as kube-scheduler's preemption and Karpenter's disruption read them.

Three upstream pieces, each ported as it reads there:

- ``disruptions_allowed`` is what the disruption controller of kube-controller-manager writes
  into ``status.disruptionsAllowed`` (kubernetes/kubernetes
  ``pkg/controller/disruption/disruption.go``: ``getExpectedPodCount``, ``countHealthyPods``,
  ``updatePdbStatus``). An integer ``minAvailable`` expects every matching pod; an integer
  ``maxUnavailable`` expects the scale of the pods' controllers, and pods without a
  controller reference are *unmanaged* and add nothing, so a budget over bare pods has
  ``expectedCount`` 0 and allows no disruption at all (``expectedCount <= 0`` -> 0). Healthy =
  not deleting and Ready (here: Running). Percentages need the controllers' scale; they are
  not modelled and allow nothing (the controller's ``failSafe`` when it cannot sync).
  The controller's status lags the pods by a watch round trip; here it is computed at the
  moment it is read.
- ``split_by_violation`` is ``filterPodsWithPDBViolation`` (kubernetes/kubernetes
  ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``): stable, each
  matching budget's allowance is decremented per pod, a pod whose budget went below zero
  violates it.
- ``blocks_eviction`` is Karpenter's ``Limits.CanEvictPods`` (kubernetes-sigs/karpenter
  ``pkg/utils/pdb/pdb.go``): a reschedulable pod matched by a budget with
  ``disruptionsAllowed == 0`` makes its node no candidate for graceful disruption
  (consolidation), unless ``unhealthyPodEvictionPolicy: AlwaysAllow`` and the pod is not Ready.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.cluster.infos import PodInfo


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget with its allowance computed now."""

    namespace: str
    name: str
    selector: Mapping[str, Any]
    allowed: int
    always_allow_unhealthy: bool

    def matches(self, pod: PodInfo) -> bool:
        return pod.namespace == self.namespace and selector_matches(
            self.selector, pod.obj.get("metadata", {}).get("labels") or {}
        )


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector`` then ``Matches``; a nil or empty selector matches
    nothing for a PDB (default_preemption.go: "A PDB with a nil or empty selector matches
    nothing")."""
    if not selector:
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return False
    for key, value in match_labels.items():
        if labels.get(key) != value:
            return False
    for expr in expressions:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _controlled(pod: PodInfo) -> bool:
    refs = pod.obj.get("metadata", {}).get("ownerReferences") or []
    return any(ref.get("controller") for ref in refs)


def _healthy(pod: PodInfo) -> bool:
    return not pod.terminating and pod.phase == "Running"


def disruptions_allowed(pdb: Mapping[str, Any], pods: Sequence[PodInfo]) -> int:
    """``status.disruptionsAllowed`` for ``pdb`` over ``pods`` (those its selector matches)."""
    spec = pdb.get("spec") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        if not isinstance(max_unavailable, int) or any(_controlled(p) for p in pods):
            # Percentages and controller scale (getExpectedScale) are not modelled: allow
            # nothing, as failSafe does when the controller cannot compute the scale.
            return 0
        expected, desired = 0, 0  # every pod is unmanaged: no controller adds to the scale
    elif isinstance(min_available, int):
        expected, desired = len(pods), min_available
    else:
        return 0
    allowed = sum(1 for p in pods if _healthy(p)) - desired
    return 0 if expected <= 0 or allowed <= 0 else allowed


def budgets(pdbs: Iterable[Mapping[str, Any]], pods: Iterable[PodInfo]) -> list[Budget]:
    """Every PDB with its allowance over the (live) pods it selects."""
    pods = [p for p in pods if not p.terminal]
    out = []
    for pdb in pdbs:
        meta = pdb.get("metadata") or {}
        spec = pdb.get("spec") or {}
        selector = spec.get("selector") or {}
        ns = meta.get("namespace", "")
        matched = [
            p
            for p in pods
            if p.namespace == ns
            and selector_matches(selector, p.obj.get("metadata", {}).get("labels") or {})
        ]
        out.append(
            Budget(
                namespace=ns,
                name=meta.get("name", ""),
                selector=selector,
                allowed=disruptions_allowed(pdb, matched),
                always_allow_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
            )
        )
    return out


def split_by_violation(
    victims: Sequence[PodInfo], pdbs: Sequence[Budget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), each in the order received (``filterPodsWithPDBViolation``).

    Preemption deletes its victims (no Eviction API), so ``status.disruptedPods`` stays empty
    for them and is not modelled."""
    allowed = [b.allowed for b in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in victims:
        violated = False
        for i, budget in enumerate(pdbs):
            if budget.matches(pod):
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def blocks_eviction(pods: Iterable[PodInfo], pdbs: Sequence[Budget]) -> Budget | None:
    """The budget that stops Karpenter from evicting these pods (``CanEvictPods``), or None.

    Only reschedulable pods are evicted through the Eviction API (``podutil.IsEvictable``)."""
    for pod in pods:
        if not pod.reschedulable:
            continue
        for budget in pdbs:
            if not budget.matches(pod):
                continue
            if budget.always_allow_unhealthy and not _healthy(pod):
                continue
            if budget.allowed == 0:
                return budget
    return None
