"""What a simulated cluster is made of: the one frozen, validated configuration object.

``ClusterSpec`` is the edge (scenario files are validated into it); everything inside the
cluster reads it and never changes it. Times are virtual seconds. ICE windows are relative to
the world's start (``EventLoop.start``), so a scenario can say "g5.xlarge in us-east-1a is out
of capacity from 2 h to 5 h".

Instance allocatable follows Karpenter's AWS estimate: memory capacity is the nominal memory
minus ``vm_memory_overhead`` (7.5 %), and kube-reserved is the EKS formula (cpu: 6 % of the first
core, 1 % of the second, 0.5 % of cores 3-4, 0.25 % of the rest; memory: 11 MiB per max pod +
255 MiB) plus the 100 MiB hard eviction threshold. So a 4-core node cannot take a 4-cpu pod,
exactly like on EKS.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from providers.kubernetes.pods.labels import DEFAULT_PRIORITY_CLASSES
from simulator.cluster.images import PullTimes
from simulator.cluster.quantity import (
    GPU,
    QuantityError,
    Resources,
    to_int,
)

MiB = 1 << 20
GiB = 1 << 30

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
CapacityType = Literal["on-demand", "spot"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Taint(_Frozen):
    key: str
    value: str = ""
    effect: Effect = "NoSchedule"

    def to_api(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


def _check_quantity(value: str | int | float, what: str) -> str | int | float:
    try:
        to_int(value)
    except QuantityError as exc:
        raise ValueError(f"{what}: {exc}") from None
    return value


class InstanceType(_Frozen):
    """One instance type of the catalog (nominal sizes, hourly prices)."""

    name: str
    cpu: int = Field(gt=0, description="vCPUs")
    memory: str = Field(description='nominal memory, e.g. "16Gi"')
    gpu: int = Field(default=0, ge=0)
    pods: int = Field(default=110, gt=0, description="max pods (VPC CNI limit on EKS)")
    price: float = Field(ge=0, description="on-demand price per hour")
    spot_price: float | None = Field(default=None, ge=0, description="None: no spot offering")
    zones: tuple[str, ...] | None = Field(default=None, description="None: every zone")
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str) -> str:
        return str(_check_quantity(v, "memory"))

    def capacity(self, vm_memory_overhead: float) -> Resources:
        mem = math.floor(to_int(self.memory) * (1 - vm_memory_overhead) / MiB) * MiB
        return Resources(self.cpu * 1000, mem, self.gpu, self.pods)

    def allocatable(self, vm_memory_overhead: float) -> Resources:
        cap = self.capacity(vm_memory_overhead)
        cores = self.cpu
        reserved_cpu = (
            60 * min(cores, 1)
            + 10 * min(max(cores - 1, 0), 1)
            + 5 * min(max(cores - 2, 0), 2)
            + math.ceil(2.5 * max(cores - 4, 0))
        )
        reserved_mem = (11 * self.pods + 255) * MiB + 100 * MiB  # kube-reserved + eviction
        return Resources(cap.cpu - reserved_cpu, cap.memory - reserved_mem, cap.gpu, cap.pods)

    def price_for(self, capacity_type: str) -> float | None:
        return self.price if capacity_type == "on-demand" else self.spot_price


class NodePoolSpec(_Frozen):
    """A Karpenter NodePool (becomes a ``karpenter.sh/v1`` NodePool object at start)."""

    name: str
    instance_types: tuple[str, ...] = Field(default=(), description="empty: whole catalog")
    zones: tuple[str, ...] = Field(default=(), description="empty: every zone of the spec")
    capacity_types: tuple[CapacityType, ...] = ("on-demand",)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    #: ``spec.limits``: cpu / memory / nvidia.com/gpu / nodes quantities.
    limits: dict[str, str | int] = Field(default_factory=dict)
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = (
        "WhenEmptyOrUnderutilized"
    )
    #: Seconds without pod events before a node may be consolidated; None means "Never".
    #: Karpenter v1's default is 0 s.
    consolidate_after: float | None = Field(default=0.0, ge=0)
    #: Disruption budget (``spec.disruption.budgets[0].nodes``): a count or a percentage.
    budget_nodes: str = "10%"
    weight: int = 0

    @field_validator("limits")
    @classmethod
    def _limits(cls, v: dict[str, str | int]) -> dict[str, str | int]:
        allowed = ("cpu", "memory", GPU, "nodes")
        for key, value in v.items():
            if key not in allowed:
                raise ValueError(f"limits: unknown resource {key!r}; allowed: {', '.join(allowed)}")
            _check_quantity(value, f"limits.{key}")
        return v

    @field_validator("budget_nodes")
    @classmethod
    def _budget(cls, v: str) -> str:
        text = v[:-1] if v.endswith("%") else v
        if not text.isdigit():
            raise ValueError(f'budget_nodes: {v!r} is neither a count nor a percentage like "10%"')
        return v


class StaticNodeGroup(_Frozen):
    """Pre-existing nodes that Karpenter does not manage (e.g. a system pool)."""

    name: str = Field(description="node names are <name>-<index>")
    count: int = Field(default=1, ge=0)
    instance_type: str
    zone: str | None = Field(default=None, description="None: spread over the spec's zones")
    capacity_type: CapacityType = "on-demand"
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


class IceWindow(_Frozen):
    """InsufficientCapacity for an offering during ``[start, end)`` seconds since world start."""

    instance_type: str
    zone: str | None = Field(default=None, description="None: every zone")
    capacity_type: CapacityType | None = Field(default=None, description="None: both")
    start: float = Field(ge=0)
    end: float

    @model_validator(mode="after")
    def _order(self) -> IceWindow:
        if self.end <= self.start:
            raise ValueError(
                f"ICE window for {self.instance_type}: end {self.end} <= start {self.start}"
            )
        return self

    def covers(self, instance_type: str, zone: str, capacity_type: str, t: float) -> bool:
        return (
            self.instance_type == instance_type
            and (self.zone is None or self.zone == zone)
            and (self.capacity_type is None or self.capacity_type == capacity_type)
            and self.start <= t < self.end
        )


def _latency_range(span: tuple[float, float], what: str) -> tuple[float, float]:
    if not 0 <= span[0] <= span[1]:
        raise ValueError(f"{what} {span} must satisfy 0 <= low <= high")
    return span


class Latencies(_Frozen):
    """Delays of the machines (seconds). Ranges are drawn uniformly from the seeded RNG."""

    #: Binding -> Running once the pod's images are on the node (sandbox, network, containers).
    pod_start: tuple[float, float] = (1.0, 3.0)
    #: Pulling an image the node lacks (download and unpack), unless ``image_pulls`` names it.
    image_pull: tuple[float, float] = (10.0, 30.0)
    image_pulls: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: {"registry.k8s.io/pause:3.10": (0.5, 1.5)}
    )
    #: ``imagePullPolicy: Always`` with the image present: the registry's manifest round trip.
    image_resolve: tuple[float, float] = (0.3, 1.0)
    launch: tuple[float, float] = (30.0, 60.0)  # NodeClaim created -> Launched
    registration: float = 15.0  # Launched -> Registered (the Node object appears, NotReady)
    initialize: float = 5.0  # Registered -> Initialized (Node Ready, schedulable)
    #: NodeClaim created -> the CreateFleet call returns (Launched, or ICE and deleted).
    ice_failure: float = 2.0
    failed_claim_delete: float = 1.0  # failed NodeClaim -> removed

    @field_validator("pod_start", "launch", "image_pull", "image_resolve")
    @classmethod
    def _range(cls, v: tuple[float, float]) -> tuple[float, float]:
        return _latency_range(v, "latency range")

    @field_validator("image_pulls")
    @classmethod
    def _ranges(cls, v: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for image, span in v.items():
            _latency_range(span, f"image_pulls[{image}]")
        return v

    def pull_times(self) -> PullTimes:
        return PullTimes(
            pull=self.image_pull, resolve=self.image_resolve, per_image=self.image_pulls
        )


class Timings(_Frozen):
    """Controller periods (seconds), defaults from the real components."""

    scheduler_retry: float = Field(default=10.0, gt=0)  # unschedulable pods retried
    batch_idle: float = Field(default=1.0, gt=0)  # Karpenter batch closes after idle ...
    batch_max: float = Field(default=10.0, gt=0)  # ... or at most this long
    #: A provisionable pod re-triggers Karpenter's batcher this often (pod controller).
    provisioner_requeue: float = Field(default=10.0, gt=0)
    ice_ttl: float = Field(default=180.0, gt=0)  # unavailable-offerings cache
    disruption_poll: float = Field(default=10.0, gt=0)  # disruption controller period
    consolidation_validation: float = Field(default=15.0, ge=0)  # decision -> re-check -> act


class PriorityClassSpec(_Frozen):
    value: int
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    global_default: bool = False


def _default_priority_classes() -> dict[str, PriorityClassSpec]:
    out = {}
    for role, (name, value) in DEFAULT_PRIORITY_CLASSES.items():
        never = role in ("runnerPlaceholder", "workflowPlaceholder")
        out[name] = PriorityClassSpec(
            value=value, preemption_policy="Never" if never else "PreemptLowerPriority"
        )
    return out


class ClusterSpec(_Frozen):
    region: str = "us-east-1"
    zones: tuple[str, ...] = ("us-east-1a", "us-east-1b", "us-east-1c")
    instance_types: tuple[InstanceType, ...]
    nodepools: tuple[NodePoolSpec, ...] = ()
    static_nodes: tuple[StaticNodeGroup, ...] = ()
    ice_windows: tuple[IceWindow, ...] = ()
    latencies: Latencies = Field(default_factory=Latencies)
    timings: Timings = Field(default_factory=Timings)
    #: PriorityClasses created at start when absent (set ``{}`` to manage them yourself).
    priority_classes: dict[str, PriorityClassSpec] = Field(
        default_factory=_default_priority_classes
    )
    scoring: Literal["LeastAllocated", "MostAllocated"] = "LeastAllocated"
    #: False: the scheduler profile lacks DefaultPreemption (nothing is ever preempted).
    preemption: bool = True
    vm_memory_overhead: float = Field(default=0.075, ge=0, lt=1)

    @model_validator(mode="after")
    def _references(self) -> ClusterSpec:
        types = {t.name for t in self.instance_types}
        if len(types) != len(self.instance_types):
            raise ValueError("instance_types: duplicate names")
        known = ", ".join(sorted(types))
        pools = [p.name for p in self.nodepools]
        if len(set(pools)) != len(pools):
            raise ValueError(f"nodepools: duplicate names in {pools}")
        for pool in self.nodepools:
            for name in pool.instance_types:
                if name not in types:
                    raise ValueError(
                        f"nodepool {pool.name}: unknown instance type {name!r}; known: {known}"
                    )
            for zone in pool.zones:
                if zone not in self.zones:
                    raise ValueError(f"nodepool {pool.name}: zone {zone!r} not in {self.zones}")
        groups = [g.name for g in self.static_nodes]
        if len(set(groups)) != len(groups):
            raise ValueError(f"static_nodes: duplicate names in {groups}")
        for group in self.static_nodes:
            if group.instance_type not in types:
                raise ValueError(
                    f"static node group {group.name}: unknown instance type "
                    f"{group.instance_type!r}; known: {known}"
                )
            if group.zone is not None and group.zone not in self.zones:
                raise ValueError(
                    f"static node group {group.name}: zone {group.zone!r} not in {self.zones}"
                )
        for window in self.ice_windows:
            if window.instance_type not in types:
                raise ValueError(
                    f"ice window: unknown instance type {window.instance_type!r}; known: {known}"
                )
        return self

    def instance_type(self, name: str) -> InstanceType:
        for it in self.instance_types:
            if it.name == name:
                return it
        raise KeyError(name)

    @staticmethod
    def default() -> ClusterSpec:
        """An EKS-like cluster: 2 static system nodes, a general pool and a GPU pool."""
        return ClusterSpec(
            instance_types=default_catalog(),
            static_nodes=(
                StaticNodeGroup(
                    name="system",
                    count=2,
                    instance_type="m5.xlarge",
                    labels={"node-role": "system"},
                    taints=(Taint(key="CriticalAddonsOnly", value="true"),),
                ),
            ),
            nodepools=(
                NodePoolSpec(
                    name="default",
                    instance_types=(
                        "m5.large",
                        "m5.xlarge",
                        "m5.2xlarge",
                        "m5.4xlarge",
                        "c5.xlarge",
                        "c5.2xlarge",
                        "c5.4xlarge",
                    ),
                    limits={"cpu": 512, "memory": "2048Gi"},
                    consolidate_after=300.0,
                ),
                NodePoolSpec(
                    name="gpu",
                    instance_types=("g5.xlarge", "g5.2xlarge", "g5.4xlarge"),
                    labels={"accelerator": "nvidia"},
                    taints=(Taint(key=GPU, value="true"),),
                    limits={"cpu": 128, GPU: 16},
                    consolidate_after=300.0,
                ),
            ),
        )


def default_catalog() -> tuple[InstanceType, ...]:
    """A few AWS instance types with us-east-1 on-demand prices and VPC CNI max pods."""

    def it(
        name: str, cpu: int, mem_gib: int, price: float, pods: int, gpu: int = 0
    ) -> InstanceType:
        family = name.split(".")[0]
        return InstanceType(
            name=name,
            cpu=cpu,
            memory=f"{mem_gib}Gi",
            gpu=gpu,
            pods=pods,
            price=price,
            spot_price=round(price * 0.4, 4),
            labels={"karpenter.k8s.aws/instance-family": family},
        )

    return (
        it("m5.large", 2, 8, 0.096, 29),
        it("m5.xlarge", 4, 16, 0.192, 58),
        it("m5.2xlarge", 8, 32, 0.384, 58),
        it("m5.4xlarge", 16, 64, 0.768, 234),
        it("m5.8xlarge", 32, 128, 1.536, 234),
        it("c5.xlarge", 4, 8, 0.17, 58),
        it("c5.2xlarge", 8, 16, 0.34, 58),
        it("c5.4xlarge", 16, 32, 0.68, 234),
        it("g5.xlarge", 4, 16, 1.006, 58, gpu=1),
        it("g5.2xlarge", 8, 32, 1.212, 58, gpu=1),
        it("g5.4xlarge", 16, 64, 1.624, 234, gpu=1),
        it("g5.12xlarge", 48, 192, 5.672, 737, gpu=4),
    )
