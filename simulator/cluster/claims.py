"""Karpenter's NodeClaims in the simulated cluster (simulator/cluster/lifecycle.py runs their
lifecycle): the :class:`Claim` record, and the API objects a claim is written as (the
NodeClaim, its Warning Event, the Node it registers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from providers.kubernetes.pods.labels import KARPENTER_GROUP, KARPENTER_VERSION, LABEL_NODEPOOL
from simulator.cluster.matching import TaintT
from simulator.cluster.nodepools import NODECLASS_REF, Offering, PoolView
from simulator.cluster.quantity import Resources
from simulator.engine.loop import Timer
from simulator.engine.store import Obj, iso

FINALIZER = "karpenter.sh/termination"
EVENTS_NAMESPACE = "default"


@dataclass(eq=False)
class Claim:
    name: str
    pool: str
    offering: Offering  # planned (cheapest candidate) until launch, then the launched one
    labels: dict[str, str]
    taints: tuple[TaintT, ...]
    created_at: float
    candidates: tuple[Offering, ...] = ()  # the fleet's possible overrides, cheapest first
    phase: str = "Pending"  # Pending | Launched | Registered | Initialized | Failed
    provider_id: str = ""
    timers: list[Timer] = field(default_factory=list)

    @property
    def in_flight(self) -> bool:
        return self.phase in ("Pending", "Launched", "Registered")


def taints_api(taints: tuple[TaintT, ...]) -> list[dict[str, str]]:
    out = []
    for key, value, effect in taints:
        t = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        out.append(t)
    return out


def node_object(
    name: str,
    labels: dict[str, str],
    taints: tuple[TaintT, ...],
    capacity: Resources,
    allocatable: Resources,
    *,
    ready: bool,
    provider_id: str,
    finalizers: list[str] | None = None,
    owner: dict[str, str] | None = None,
) -> Obj:
    meta: dict[str, object] = {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"providerID": provider_id, "taints": taints_api(taints)},
        "status": {
            "capacity": capacity.to_api(),
            "allocatable": allocatable.to_api(),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                }
            ],
        },
    }


def nodeclaim_object(
    name: str,
    pool: PoolView,
    requirements: list[dict[str, Any]],
    requests: Resources,
    now: float,
) -> Obj:
    """A new NodeClaim of ``pool``: every condition Unknown until the lifecycle moves it."""
    return {
        "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {LABEL_NODEPOOL: pool.name, **dict(pool.labels)},
            "finalizers": [FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
                    "kind": "NodePool",
                    "name": pool.name,
                    "uid": pool.uid,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "requirements": requirements,
            "resources": {"requests": requests.to_api()},
            "taints": taints_api(pool.taints),
            "nodeClassRef": dict(NODECLASS_REF),
            "expireAfter": "720h",
        },
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": "Unknown",
                    "reason": "AwaitingReconciliation",
                    "lastTransitionTime": iso(now),
                }
                for t in ("Launched", "Registered", "Initialized", "Ready")
            ]
        },
    }


def claim_event(claim_name: str, seq: int, uid: str, reason: str, message: str, now: str) -> Obj:
    """A Warning Event on NodeClaim ``claim_name`` (``seq``: this lifecycle's event count)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{claim_name}.{seq:016x}",
            "namespace": EVENTS_NAMESPACE,
        },
        "involvedObject": {
            "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
            "kind": "NodeClaim",
            "name": claim_name,
            "uid": uid,
        },
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "karpenter"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def insufficient_capacity_message(claim_name: str, tried: list[Offering]) -> str:
    """The ``InsufficientCapacityError`` Event message for a launch whose overrides all
    failed (``tried``: the ICE'd ones; empty when none was available)."""
    if tried:
        types = ", ".join(sorted({x.instance_type for x in tried}))
        zones = ", ".join(sorted({x.zone for x in tried}))
        cause = (
            "with fleet error(s), InsufficientInstanceCapacity: We currently do not have "
            f"sufficient {types} capacity in the Availability Zone you requested ({zones})."
        )
    else:
        cause = "all requested instance types were unavailable during launch"
    return f"NodeClaim {claim_name} event: creating instance, insufficient capacity, {cause}"
