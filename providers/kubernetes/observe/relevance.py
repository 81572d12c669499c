"""What one watch event means to the controller: a change its decisions read, a rise, a loss.

The listener's watch cache (providers/kubernetes/watch/cache.py) and the simulated world's view of
its store (simulator/driver/store_view.py) both judge every event here, so the listener and
the simulator wake the controller on the same events:

1. :func:`facts` reads what decisions and the ledger read from an object, nothing else:
   pods (placeholders: bound, Running, terminating, DisruptionTarget, ended, and whether the
   placeholder counts, judged by :func:`~providers.kubernetes.observe.rises.placeholder_counts`;
   real runner and workflow pods: bound, terminating, ended); nodes (Ready, cordon, taints); the
   AutoscalingRunnerSet (live min/max runners); the EphemeralRunnerSet's ``spec.replicas``
   (assigned jobs: the scaler patches it on every poll, only a changed value counts); the
   ``status.phase`` of both (``Outdated``: switched off). Other
   kinds (EphemeralRunners, NodeClaims, NodePools, PriorityClasses) wake nothing: the
   periodic step reads them.
2. :func:`judge` compares the facts before and after the event:
   - ``relevant``: they differ (a debounced step). Two ADDED events are not: a fresh
     placeholder (the reconciler's own write coming back, Pending and unbound) and an
     unbound workflow pod (it holds nothing until it binds);
   - ``rise``: a placeholder started to count (a step at once: rises.py says why only those
     pods), or the EphemeralRunnerSet's replicas rose (GitHub assigned jobs that will take
     warm pairs: refilling them cannot wait for the runner pods);
   - ``lost``: a pod that backed capacity stopped backing it, the live ``maxRunners`` fell,
     or the set or its ARS turned ``Outdated`` (ARC switched it off): a drop check at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from providers.kubernetes.observe.object_fields import pod_phase
from providers.kubernetes.observe.rises import placeholder_counts
from providers.kubernetes.observe.scale_set import OUTDATED
from providers.kubernetes.pods import labels as L
from reconciler.snapshot import holds_slot

_ENDED = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodFacts:
    placeholder: bool
    bound: bool
    running: bool
    deleting: bool
    disrupted: bool
    ended: bool
    #: It backs capacity in the ledger: a placeholder that counts, or a real runner or
    #: workflow pod that holds its slot (reconciler/snapshot.py holds_slot, the same rule).
    counts: bool


@dataclass(frozen=True, slots=True)
class ObjectFacts:
    kind: str
    values: tuple[Any, ...]


Facts = PodFacts | ObjectFacts


@dataclass(frozen=True, slots=True)
class Verdict:
    relevant: bool = False
    rise: bool = False
    lost: bool = False


NOTHING = Verdict()


def _condition(obj: Mapping[str, Any], cond_type: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type:
            return str(cond.get("status"))
    return None


def pod_facts(pod: Mapping[str, Any]) -> PodFacts:
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    deleting = bool(meta.get("deletionTimestamp"))
    ended = phase in _ENDED
    placeholder = L.LABEL_SCALE_SET in (meta.get("labels") or {})
    if placeholder:
        return PodFacts(
            placeholder=True,
            bound=bound,
            running=phase == "Running",
            deleting=deleting,
            disrupted=_condition(pod, "DisruptionTarget") == "True",
            ended=ended,
            counts=placeholder_counts(pod),
        )
    return PodFacts(
        placeholder=False,
        bound=bound,
        running=False,
        deleting=deleting,
        disrupted=False,
        ended=ended,
        counts=holds_slot(bound=bound, deleting=deleting, phase=pod_phase(pod)),
    )


def facts(kind: str, obj: Mapping[str, Any]) -> Facts | None:
    """What the controller's decisions read from ``obj``; None: nothing (see module doc)."""
    if kind == "Pod":
        return pod_facts(obj)
    spec = obj.get("spec") or {}
    if kind == "Node":
        values = (
            _condition(obj, "Ready"),
            bool(spec.get("unschedulable")),
            repr(spec.get("taints")),
        )
        return ObjectFacts(kind, values)
    phase = (obj.get("status") or {}).get("phase")
    if kind == "AutoscalingRunnerSet":
        return ObjectFacts(kind, (spec.get("maxRunners"), spec.get("minRunners"), phase))
    if kind == "EphemeralRunnerSet":
        # The scaler patches it on every poll; only the replicas (assigned jobs) matter, and
        # the phase (``Outdated``: ARC switched the scale set off).
        return ObjectFacts(kind, (spec.get("replicas"), phase))
    return None


def _fresh(event_type: str, after: PodFacts, obj: Mapping[str, Any]) -> bool:
    """An ADDED pod that holds nothing yet: our own placeholder write, an unbound workflow pod."""
    if event_type != "ADDED" or after.bound or after.deleting or after.ended:
        return False
    if after.placeholder:
        return not after.running and not after.disrupted
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return L.LABEL_WORKFLOW_RUNNER_POD in labels


def judge(
    kind: str, event_type: str, before: Facts | None, obj: Mapping[str, Any]
) -> tuple[Verdict, Facts | None]:
    """The verdict of one event, and the facts to remember for the object (None once it is
    gone or when its kind wakes nothing). ``before``: the facts remembered for it."""
    counted = isinstance(before, PodFacts) and before.counts
    if event_type == "DELETED":
        if before is None and facts(kind, obj) is None:
            return NOTHING, None
        return Verdict(relevant=True, lost=counted), None
    after = facts(kind, obj)
    if after is None:
        return NOTHING, None
    if isinstance(after, PodFacts):
        verdict = Verdict(
            relevant=after != before and not _fresh(event_type, after, obj),
            rise=after.placeholder and after.counts and not counted,
            lost=counted and not after.counts,
        )
        return verdict, after
    verdict = Verdict(
        relevant=after != before,
        rise=_replicas_rose(before, after),
        lost=_max_runners_fell(before, after) or _switched_off(before, after),
    )
    return verdict, after


def _replicas_rose(before: Facts | None, after: ObjectFacts) -> bool:
    """GitHub assigned more jobs: the warm pairs they will take are to be refilled now."""
    if after.kind != "EphemeralRunnerSet" or not isinstance(before, ObjectFacts):
        return False
    new, old = after.values[0], before.values[0]
    return isinstance(new, int) and isinstance(old, int) and new > old


def _switched_off(before: Facts | None, after: ObjectFacts) -> bool:
    """The set or its ARS turned ``Outdated`` (ARC switched the scale set off): like a drain
    to zero, checked at once (providers/kubernetes/observe/scale_set.py ``switched_off``)."""
    if not isinstance(before, ObjectFacts):
        return False
    return bool(after.values[-1] == OUTDATED and before.values[-1] != OUTDATED)


def _max_runners_fell(before: Facts | None, after: ObjectFacts) -> bool:
    """A lower live ``maxRunners`` (a drain) lowers the ledger: checked at once like a loss."""
    if after.kind != "AutoscalingRunnerSet" or not isinstance(before, ObjectFacts):
        return False
    old, new = before.values[0], after.values[0]
    return isinstance(old, int) and isinstance(new, int) and new < old
