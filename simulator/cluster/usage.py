"""Time integrals of what the cluster reserves and what pods request (for cost figures).

Machines are counted while they exist and cost money: static nodes from start, Karpenter
machines from ``Launched`` until removal. Requests are counted while a pod holds resources on
a node (binding to end/removal), keyed by the pod's category. Every change first integrates
the current rates up to now, so the integrals are exact in virtual time and cost O(1) per
change (no sampling ticks).
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.clock import Clock
from simulator.cluster.infos import NodeInfo, Observer, PodInfo


@dataclass(frozen=True, slots=True)
class Machine:
    name: str
    cpu_m: int  # allocatable millicores
    gpu: int
    price: float  # per hour


class Usage(Observer):
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._t = clock.now()
        self.machines: dict[str, Machine] = {}
        self._cpu_m = 0
        self._gpu = 0
        self._price = 0.0
        self._req_cpu_m: dict[str, int] = {}
        self._req_gpu: dict[str, int] = {}
        self.node_seconds = 0.0
        self.cpu_core_seconds = 0.0
        self.gpu_seconds = 0.0
        self.cost = 0.0
        self.requested_cpu_core_seconds: dict[str, float] = {}
        self.requested_gpu_seconds: dict[str, float] = {}

    def flush(self) -> None:
        now = self._clock.now()
        dt = now - self._t
        if dt <= 0:
            return
        self._t = now
        self.node_seconds += len(self.machines) * dt
        self.cpu_core_seconds += self._cpu_m / 1000 * dt
        self.gpu_seconds += self._gpu * dt
        self.cost += self._price * dt / 3600
        for cat, cpu in self._req_cpu_m.items():
            self.requested_cpu_core_seconds[cat] = (
                self.requested_cpu_core_seconds.get(cat, 0.0) + cpu / 1000 * dt
            )
        for cat, gpu in self._req_gpu.items():
            self.requested_gpu_seconds[cat] = self.requested_gpu_seconds.get(cat, 0.0) + gpu * dt

    # --- machines ---------------------------------------------------------------------

    def machine_started(self, machine: Machine) -> None:
        self.flush()
        if machine.name in self.machines:
            return
        self.machines[machine.name] = machine
        self._cpu_m += machine.cpu_m
        self._gpu += machine.gpu
        self._price += machine.price

    def machine_stopped(self, name: str) -> None:
        self.flush()
        machine = self.machines.pop(name, None)
        if machine is None:
            return
        self._cpu_m -= machine.cpu_m
        self._gpu -= machine.gpu
        self._price -= machine.price

    # --- pods (observer hooks) --------------------------------------------------------

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        self.flush()
        cat = pod.category
        self._req_cpu_m[cat] = self._req_cpu_m.get(cat, 0) + pod.requests.cpu
        self._req_gpu[cat] = self._req_gpu.get(cat, 0) + pod.requests.gpu

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        self.flush()
        cat = pod.category
        self._req_cpu_m[cat] = self._req_cpu_m.get(cat, 0) - pod.requests.cpu
        self._req_gpu[cat] = self._req_gpu.get(cat, 0) - pod.requests.gpu

    # --- instantaneous ----------------------------------------------------------------

    @property
    def cpu_cores(self) -> float:
        return self._cpu_m / 1000

    @property
    def gpus(self) -> int:
        return self._gpu

    @property
    def price_per_hour(self) -> float:
        return self._price

    def requested(self) -> tuple[dict[str, float], dict[str, int]]:
        return (
            {k: v / 1000 for k, v in self._req_cpu_m.items()},
            dict(self._req_gpu),
        )
