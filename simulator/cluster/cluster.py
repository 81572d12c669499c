"""The ``Cluster`` facade: builds and wires the scheduler, kubelet and Karpenter controllers.

See the package docstring for the public API. Wiring order matters for determinism only
through observer order, which is fixed here: usage, scheduler, kubelet, NodeClaim lifecycle,
provisioner, disruption.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from simulator.cluster.claims import node_object
from simulator.cluster.disruption import Disruption
from simulator.cluster.emit import Emitter
from simulator.cluster.errors import NodeNotFound
from simulator.cluster.kubelet import Kubelet
from simulator.cluster.lifecycle import ClaimLifecycle
from simulator.cluster.matching import compile_taints
from simulator.cluster.nodepools import nodepool_object, offering_labels
from simulator.cluster.pods import default_category
from simulator.cluster.provisioner import PoolCache, Provisioner
from simulator.cluster.scheduler import Scheduler
from simulator.cluster.spec import ClusterSpec
from simulator.cluster.state import ClusterState
from simulator.cluster.usage import Machine, Usage
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore
from simulator.engine.streams import Streams

_EMPTY: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class ClusterStats:
    """Counters and time integrals (virtual seconds) up to ``at``."""

    at: float
    nodes_launched: int
    nodeclaims_created: int
    nodeclaims_failed: int
    nodes_consolidated: int
    node_seconds: float
    cpu_core_seconds: float
    gpu_seconds: float
    cost: float
    requested_cpu_core_seconds: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    requested_gpu_seconds: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    scheduling_passes: int = 0
    bindings: int = 0
    preemptions: int = 0
    preemption_victims: int = 0
    pods_rejected: int = 0
    provisioning_batches: int = 0


@dataclass(frozen=True)
class UsageSample:
    """Instantaneous values at ``at``."""

    at: float
    machines: int
    cpu_cores: float  # allocatable of every machine that exists
    gpus: int
    price_per_hour: float
    requested_cpu_cores: Mapping[str, float]  # by pod category
    requested_gpus: Mapping[str, int]
    pending_pods: int  # waiting for the scheduler
    nodeclaims_in_flight: int


class Cluster:
    def __init__(
        self,
        loop: EventLoop,
        store: ObjectStore,
        spec: ClusterSpec,
        *,
        rng: random.Random,
        log: EventLog | None = None,
        categorize: Callable[[Obj], str] = default_category,
    ) -> None:
        self.loop = loop
        self.store = store
        self.spec = spec
        streams = Streams.from_rng(rng)
        self.emit = Emitter(log)
        self.state = ClusterState(store, loop, self.emit, categorize=categorize)
        self._usage = Usage(loop)
        self.scheduler = Scheduler(
            loop,
            self.state,
            self.emit,
            retry=spec.timings.scheduler_retry,
            scoring=spec.scoring,
            preemption=spec.preemption,
        )
        self.kubelet = Kubelet(
            loop,
            self.state,
            self.emit,
            start_latency=spec.latencies.pod_start,
            pull_times=spec.latencies.pull_times(),
            streams=streams,
        )
        self.lifecycle = ClaimLifecycle(
            loop, self.state, self.emit, self._usage, spec, streams=streams
        )
        self.pools = PoolCache(self.state, spec)
        self.provisioner = Provisioner(
            loop, self.state, self.emit, self.lifecycle, self.pools, spec
        )
        self.disruption = Disruption(
            loop,
            self.state,
            self.emit,
            self.lifecycle,
            self.pools,
            self.scheduler,
            self.provisioner,
            spec,
        )
        self.state.observers = [
            self._usage,
            self.scheduler,
            self.kubelet,
            self.lifecycle,
            self.provisioner,
            self.disruption,
        ]
        self._started = False

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for name, pc in self.spec.priority_classes.items():
            if self.store.find("PriorityClass", None, name) is None:
                obj: Obj = {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": pc.value,
                    "preemptionPolicy": pc.preemption_policy,
                    "globalDefault": pc.global_default,
                }
                self.store.create(obj)
        for pool in self.spec.nodepools:
            if self.store.find("NodePool", None, pool.name) is None:
                self.store.create(nodepool_object(pool))
        self.state.attach()
        self._create_static_nodes()
        self.disruption.start()

    def _create_static_nodes(self) -> None:
        spec = self.spec
        for group in spec.static_nodes:
            it = spec.instance_type(group.instance_type)
            capacity = it.capacity(spec.vm_memory_overhead)
            allocatable = it.allocatable(spec.vm_memory_overhead)
            price = it.price_for(group.capacity_type) or it.price
            for i in range(group.count):
                name = f"{group.name}-{i}"
                if self.store.find("Node", None, name) is not None:
                    continue
                zone = group.zone or spec.zones[i % len(spec.zones)]
                labels = offering_labels(
                    it, zone, group.capacity_type, spec.region, spec.vm_memory_overhead
                )
                labels.update(group.labels)
                taints = compile_taints([t.to_api() for t in group.taints])
                self._usage.machine_started(Machine(name, allocatable.cpu, allocatable.gpu, price))
                self.store.create(
                    node_object(
                        name,
                        labels,
                        taints,
                        capacity,
                        allocatable,
                        ready=True,
                        provider_id=f"aws:///{zone}/static-{name}",
                    )
                )
                self.emit(
                    "node_added",
                    node=name,
                    nodepool=None,
                    instance_type=it.name,
                    zone=zone,
                    capacity_type=group.capacity_type,
                    static=True,
                )

    # --- world hooks ------------------------------------------------------------------

    def finish_pod(self, namespace: str, name: str, succeeded: bool = True) -> bool:
        """The pod's containers ended by themselves (see the package docstring)."""
        return self.kubelet.finish_pod(namespace, name, succeeded)

    def lose_node(self, name: str, reason: str = "node_lost") -> None:
        """The machine is gone: pods, Node and NodeClaim are removed at once."""
        if name not in self.state.nodes:
            raise NodeNotFound(
                f"node {name!r} does not exist (known: "
                f"{', '.join(sorted(self.state.nodes)) or 'none'})"
            )
        self.lifecycle.termination.lose(name, reason)

    # --- figures ----------------------------------------------------------------------

    def stats(self) -> ClusterStats:
        u = self._usage
        u.flush()
        return ClusterStats(
            at=self.loop.now(),
            nodes_launched=self.lifecycle.launched,
            nodeclaims_created=self.lifecycle.created,
            nodeclaims_failed=self.lifecycle.failed,
            nodes_consolidated=self.disruption.consolidated,
            node_seconds=u.node_seconds,
            cpu_core_seconds=u.cpu_core_seconds,
            gpu_seconds=u.gpu_seconds,
            cost=u.cost,
            requested_cpu_core_seconds=MappingProxyType(dict(u.requested_cpu_core_seconds)),
            requested_gpu_seconds=MappingProxyType(dict(u.requested_gpu_seconds)),
            scheduling_passes=self.scheduler.passes,
            bindings=self.scheduler.bindings,
            preemptions=self.scheduler.preemptions,
            preemption_victims=self.scheduler.victims,
            pods_rejected=self.kubelet.rejections,
            provisioning_batches=self.provisioner.batches,
        )

    def usage(self) -> UsageSample:
        u = self._usage
        cpu, gpu = u.requested()
        return UsageSample(
            at=self.loop.now(),
            machines=len(u.machines),
            cpu_cores=u.cpu_cores,
            gpus=u.gpus,
            price_per_hour=u.price_per_hour,
            requested_cpu_cores=MappingProxyType(cpu),
            requested_gpus=MappingProxyType(gpu),
            pending_pods=self.scheduler.pending,
            nodeclaims_in_flight=sum(1 for c in self.lifecycle.claims.values() if c.in_flight),
        )
