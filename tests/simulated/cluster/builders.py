"""Small builders for cluster tests: a world (loop + store + cluster + log) and pods/nodes."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from providers.kubernetes.pods.labels import DEFAULT_PRIORITY_CLASSES
from simulator.cluster import (
    Cluster,
    ClusterSpec,
    InstanceType,
    Latencies,
    NodePoolSpec,
    StaticNodeGroup,
)
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore

NS = "arc-runners"
CLASS = {role: name for role, (name, _value) in DEFAULT_PRIORITY_CLASSES.items()}
# Priority classes by value, for readability in tests.
#: A plain priority-0 class: the scheduler tests pin Kubernetes semantics at numeric values
#: (the product's arc-runner class sits at 20, beside arc-workflow).
PRIORITY_ZERO = "priority-zero"
PC = {
    -10: CLASS["runnerPlaceholder"],
    0: PRIORITY_ZERO,
    10: CLASS["workflowPlaceholder"],
    20: CLASS["workflow"],
}


@dataclass
class World:
    loop: EventLoop
    store: ObjectStore
    cluster: Cluster
    log: EventLog

    def run(self, seconds: float) -> None:
        self.loop.run_for(seconds)

    def pod(self, name: str, namespace: str = NS) -> Obj | None:
        return self.store.find("Pod", namespace, name)

    def phase(self, name: str) -> str | None:
        p = self.pod(name)
        return None if p is None else p.get("status", {}).get("phase", "Pending")

    def node(self, name: str) -> str:
        """The node the pod is bound to, which it must be."""
        node = self.node_of(name)
        if node is None:
            raise AssertionError(f"pod {name} is not bound")
        return node

    def node_of(self, name: str) -> str | None:
        p = self.pod(name)
        return None if p is None else p["spec"].get("nodeName")

    def get(self, name: str) -> Obj:
        """The pod, which must exist."""
        return self.store.get("Pod", NS, name)

    def find_condition(self, name: str, ctype: str) -> dict[str, Any] | None:
        p = self.pod(name)
        for c in (p or {}).get("status", {}).get("conditions") or ():
            if c["type"] == ctype:
                return dict(c)
        return None

    def condition(self, name: str, ctype: str) -> dict[str, Any]:
        """The pod's condition of that type, which must exist."""
        cond = self.find_condition(name, ctype)
        if cond is None:
            raise AssertionError(f"pod {name} has no {ctype} condition")
        return cond

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        out = [json.loads(line) for line in self.log.lines()]
        return [e for e in out if type_ is None or e["type"] == type_]

    def create(self, obj: Obj) -> Obj:
        return self.store.create(obj)

    def nodes(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in self.store.list("Node"))


def small_type(
    name: str = "box",
    cpu: int = 4,
    memory: str = "16Gi",
    gpu: int = 0,
    price: float = 0.2,
    pods: int = 110,
) -> InstanceType:
    return InstanceType(name=name, cpu=cpu, memory=memory, gpu=gpu, price=price, pods=pods)


def world(spec: ClusterSpec, seed: int = 1, start: bool = True) -> World:
    loop = EventLoop()
    store = ObjectStore(loop.now)
    log = EventLog("test", loop, loop.start)
    cluster = Cluster(loop, store, spec, rng=random.Random(seed), log=log)
    store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": PRIORITY_ZERO},
            "value": 0,
            "preemptionPolicy": "PreemptLowerPriority",
        }
    )
    if start:
        cluster.start()
    return World(loop, store, cluster, log)


def latencies(**given: Any) -> Latencies:
    """Machine delays with every image already on every node (no pull, no registry round
    trip), so a test times only what it is about; the image tests set the pulls they need."""
    quiet: dict[str, Any] = {
        "image_pull": (0.0, 0.0),
        "image_pulls": {},
        "image_resolve": (0.0, 0.0),
    }
    return Latencies(**(quiet | given))


def static_world(nodes: int = 1, cpu: int = 4, seed: int = 1, **spec: Any) -> World:
    """Static nodes only (no Karpenter), instant pod start and no image pulls for crisp
    timing; ``latencies={...}`` sets any delay (the rest stay quiet)."""
    defaults: dict[str, Any] = {
        "instance_types": (small_type(cpu=cpu),),
        "static_nodes": (StaticNodeGroup(name="n", count=nodes, instance_type="box"),),
    }
    defaults.update(spec)
    defaults["latencies"] = latencies(
        **({"pod_start": (0.0, 0.0)} | dict(spec.get("latencies", {})))
    )
    return world(ClusterSpec(**defaults), seed=seed)


def karpenter_world(seed: int = 1, **pool: Any) -> World:
    spec = ClusterSpec(
        instance_types=(
            small_type("small", cpu=2, memory="8Gi", price=0.1),
            small_type("large", cpu=8, memory="32Gi", price=0.4),
        ),
        nodepools=(NodePoolSpec(name="default", **pool),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    return world(spec, seed=seed)


def pod(
    name: str,
    cpu: str | int = "1",
    memory: str = "1Gi",
    *,
    priority: int | None = 0,
    namespace: str = NS,
    grace: int | None = 0,
    node_name: str | None = None,
    gpu: int = 0,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    affinity: dict[str, Any] | None = None,
    deadline: int | None = None,
) -> Obj:
    requests: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": requests, "limits": dict(requests)},
            }
        ],
        "restartPolicy": "Never",
    }
    if priority is not None:
        spec["priorityClassName"] = PC[priority]
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
    }
