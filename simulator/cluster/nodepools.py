"""Karpenter NodePools: the API objects we create, and what Karpenter reads back from them.

The NodePool *objects* in the store are the source of truth at run time (a scenario or a test
may patch ``spec.limits`` or the disruption block); :func:`read_pool` parses one into a
:class:`PoolView` with its *offerings*: every (instance type, zone, capacity type) of the
catalog that the pool's ``spec.template.spec.requirements`` allow, with the labels a node
launched from it would carry. Like Karpenter, a pool that does not constrain
``karpenter.sh/capacity-type`` gets on-demand only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from providers.kubernetes.pods.labels import KARPENTER_GROUP, KARPENTER_VERSION, LABEL_NODEPOOL
from simulator.cluster.infos import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_ZONE
from simulator.cluster.matching import (
    Requirement,
    TaintT,
    compile_requirements,
    compile_taints,
    requirement_matches,
)
from simulator.cluster.quantity import GPU, Resources, cpu_millis, to_int
from simulator.cluster.spec import ClusterSpec, InstanceType, NodePoolSpec
from simulator.engine.store import Obj

LABEL_REGION = "topology.kubernetes.io/region"
NODECLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "Never"
    return f"{seconds:g}s"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s|ms)")


def parse_duration(text: str | None) -> float | None:
    """Go-style duration ("30s", "5m", "1h30m") in seconds; "Never" -> None."""
    if text is None or text == "Never":
        return None
    total, pos = 0.0, 0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        value, unit = float(m.group(1)), m.group(2)
        total += value * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[unit]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"invalid duration {text!r} (expected e.g. 30s, 5m, 1h or Never)")
    return total


def nodepool_object(pool: NodePoolSpec) -> Obj:
    requirements: list[dict[str, Any]] = []
    if pool.instance_types:
        requirements.append(
            {"key": LABEL_INSTANCE_TYPE, "operator": "In", "values": list(pool.instance_types)}
        )
    if pool.zones:
        requirements.append({"key": LABEL_ZONE, "operator": "In", "values": list(pool.zones)})
    requirements.append(
        {"key": LABEL_CAPACITY_TYPE, "operator": "In", "values": list(pool.capacity_types)}
    )
    return {
        "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {
                "metadata": {"labels": dict(pool.labels)},
                "spec": {
                    "requirements": requirements,
                    "taints": [t.to_api() for t in pool.taints],
                    "nodeClassRef": dict(NODECLASS_REF),
                    "expireAfter": "720h",
                },
            },
            "disruption": {
                "consolidationPolicy": pool.consolidation_policy,
                "consolidateAfter": format_duration(pool.consolidate_after),
                "budgets": [{"nodes": pool.budget_nodes}],
            },
            "limits": {k: str(v) for k, v in pool.limits.items()},
            "weight": pool.weight,
        },
        "status": {
            "resources": {"cpu": "0", "memory": "0", "nodes": "0", "pods": "0"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}],
        },
    }


@dataclass(frozen=True, slots=True)
class Offering:
    """One purchasable machine shape: instance type x zone x capacity type."""

    instance_type: str
    zone: str
    capacity_type: str
    price: float
    capacity: Resources
    allocatable: Resources
    labels: tuple[tuple[str, str], ...]  # well-known + instance labels (without pool labels)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.instance_type, self.zone, self.capacity_type)


def offering_labels(
    it: InstanceType, zone: str, capacity_type: str, region: str, vm_overhead: float
) -> dict[str, str]:
    labels = {
        LABEL_INSTANCE_TYPE: it.name,
        LABEL_ZONE: zone,
        LABEL_REGION: region,
        LABEL_CAPACITY_TYPE: capacity_type,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "karpenter.k8s.aws/instance-cpu": str(it.cpu),
        "karpenter.k8s.aws/instance-memory": str(to_int(it.memory) >> 20),
        "karpenter.k8s.aws/instance-gpu-count": str(it.gpu),
    }
    labels.update(it.labels)
    return labels


def all_offerings(spec: ClusterSpec) -> list[Offering]:
    out = []
    for it in spec.instance_types:
        capacity = it.capacity(spec.vm_memory_overhead)
        allocatable = it.allocatable(spec.vm_memory_overhead)
        for zone in it.zones or spec.zones:
            for ct in ("on-demand", "spot"):
                price = it.price_for(ct)
                if price is None:
                    continue
                labels = offering_labels(it, zone, ct, spec.region, spec.vm_memory_overhead)
                out.append(
                    Offering(
                        it.name,
                        zone,
                        ct,
                        price,
                        capacity,
                        allocatable,
                        tuple(sorted(labels.items())),
                    )
                )
    return out


@dataclass(frozen=True, slots=True)
class Limits:
    """``spec.limits`` as integers; None means unlimited."""

    cpu: int | None
    memory: int | None
    gpu: int | None
    nodes: int | None

    def admits(self, used: Resources, nodes_used: int, extra: Resources) -> bool:
        return (
            (self.cpu is None or used.cpu + extra.cpu <= self.cpu)
            and (self.memory is None or used.memory + extra.memory <= self.memory)
            and (self.gpu is None or used.gpu + extra.gpu <= self.gpu)
            and (self.nodes is None or nodes_used + 1 <= self.nodes)
        )


@dataclass(frozen=True, slots=True)
class PoolView:
    name: str
    uid: str
    weight: int
    requirements: tuple[Requirement, ...]
    labels: tuple[tuple[str, str], ...]  # template labels + karpenter.sh/nodepool
    taints: tuple[TaintT, ...]
    limits: Limits
    offerings: tuple[Offering, ...]
    consolidation_policy: str
    consolidate_after: float | None
    budget_nodes: str

    def node_labels(self, offering: Offering) -> dict[str, str]:
        labels = dict(offering.labels)
        labels.update(self.labels)
        return labels

    def budget(self, total_nodes: int) -> int:
        """Disruptions allowed at once (a percentage rounds up, like Karpenter)."""
        text = self.budget_nodes
        if text.endswith("%"):
            return math.ceil(int(text[:-1]) * total_nodes / 100)
        return int(text)


def read_pool(obj: Obj, offerings: list[Offering]) -> PoolView:
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    tspec = template.get("spec") or {}
    requirements = compile_requirements(tspec.get("requirements"))
    if not any(r[0] == LABEL_CAPACITY_TYPE for r in requirements):
        requirements = (*requirements, (LABEL_CAPACITY_TYPE, "In", ("on-demand",)))
    name = obj["metadata"]["name"]
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels[LABEL_NODEPOOL] = name
    matching = []
    for o in offerings:
        node_labels = dict(o.labels)
        node_labels.update(labels)
        if all(requirement_matches(r, node_labels) for r in requirements):
            matching.append(o)
    limits = spec.get("limits") or {}
    disruption = spec.get("disruption") or {}
    budgets = disruption.get("budgets") or [{"nodes": "10%"}]
    return PoolView(
        name=name,
        uid=obj["metadata"].get("uid", ""),
        weight=int(spec.get("weight") or 0),
        requirements=requirements,
        labels=tuple(sorted(labels.items())),
        taints=compile_taints(tspec.get("taints")),
        limits=Limits(
            cpu=cpu_millis(limits["cpu"]) if "cpu" in limits else None,
            memory=to_int(limits["memory"]) if "memory" in limits else None,
            gpu=to_int(limits[GPU]) if GPU in limits else None,
            nodes=to_int(limits["nodes"]) if "nodes" in limits else None,
        ),
        offerings=tuple(sorted(matching, key=lambda o: (o.price, o.key))),
        consolidation_policy=disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized"),
        consolidate_after=parse_duration(disruption.get("consolidateAfter", "0s")),
        budget_nodes=str(budgets[0].get("nodes", "10%")),
    )
