"""Pod admission the API server applies on create, in place on the simulated cluster's
ADDED event (the store has no admission hook; see simulator/cluster/state.py): the Priority
plugin and the scheduling-gated condition."""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.clock import Clock
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.pods import scheduling_gated
from simulator.engine.store import Obj

#: PriorityClass name -> (value, preemptionPolicy, globalDefault)
PriorityClasses = Mapping[str, tuple[int, str, bool]]


def priority_class_entry(obj: Obj) -> tuple[int, str, bool]:
    """A PriorityClass object as the registry keeps it."""
    return (
        int(obj.get("value", 0)),
        obj.get("preemptionPolicy") or "PreemptLowerPriority",
        bool(obj.get("globalDefault", False)),
    )


def admit_priority(obj: Obj, priority_classes: PriorityClasses, emit: Emitter) -> None:
    """The Priority admission plugin, applied in place."""
    spec = obj.setdefault("spec", {})
    if spec.get("priority") is not None:
        return
    name = spec.get("priorityClassName")
    resolved = priority_classes.get(name) if name else None
    if resolved is None:
        resolved = next((pc for pc in priority_classes.values() if pc[2]), None)
        if name:
            # The real API server rejects the create; the store cannot, so say it loudly.
            emit(
                "pod_admission_warning",
                pod=obj["metadata"]["name"],
                namespace=obj["metadata"].get("namespace", ""),
                message=f"no PriorityClass with name {name} was found",
            )
    value, policy = (resolved[0], resolved[1]) if resolved else (0, "PreemptLowerPriority")
    spec["priority"] = value
    spec.setdefault("preemptionPolicy", policy)


def admit_gated(obj: Obj, clock: Clock) -> None:
    """The API server's pod strategy (``applySchedulingGatedCondition``): a pod created with
    scheduling gates gets ``PodScheduled=False`` reason ``SchedulingGated``, applied in place
    like the priority admission above."""
    spec = obj.get("spec") or {}
    if scheduling_gated(spec) and not spec.get("nodeName"):
        obj.setdefault("status", {})
        set_condition(
            obj,
            "PodScheduled",
            "False",
            "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates",
            clock.now(),
        )
