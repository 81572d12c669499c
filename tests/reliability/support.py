"""A small simulated cluster for reliability tests: one scale set, static nodes, the real
reconciler and placeholder subscriber, and a store that can kill the listener mid-write.

``ListenerProcess`` is one listener incarnation (its own instance id, reconciler and writer,
all sharing the cluster's store); tests start, step, kill and replace incarnations like ARC
recreating a crashed listener pod.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.capacity import CapacityLedger, compute_ledger
from reconciler.controller import ScaleSetController
from reconciler.ports import Subscriber
from reconciler.reconciler import Reconciler, StepResult
from reconciler.schedule import Timings
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand
from reconciler.subscribers import PlaceholderSubscriber
from scaleset.carry_out import Effects, carry_out
from simulator.cluster import Cluster, ClusterSpec, Latencies, StaticNodeGroup
from simulator.cluster.spec import default_catalog
from simulator.driver.store_view import StorePlaceholderWriter
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore
from simulator.faults import KillSignal, placeholder_pods

NS = "arc-runners"
ERS = "arc-runners"


def ers_object() -> Obj:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": ERS,
            "namespace": NS,
            "labels": {"actions.github.com/scale-set-name": ERS},
        },
        "spec": {
            "replicas": 0,
            "ephemeralRunnerSpec": {
                "spec": {
                    "containers": [
                        {
                            "name": "runner",
                            "image": "runner:latest",
                            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                        }
                    ],
                    "priorityClassName": "arc-runner",
                }
            },
        },
    }


def ars_object(max_runners: int) -> Obj:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": ERS, "namespace": NS},
        "spec": {"maxRunners": max_runners, "minRunners": 0},
    }


class KillingStore:
    """The ObjectStore as one listener process sees it: after ``arm(n)``, its ``n+1``-th pod
    write (create, delete, patch) raises :class:`KillSignal` instead of happening."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._left: int | None = None
        self.writes = 0

    def arm(self, writes: int | None) -> None:
        self._left = writes

    def _write(self) -> None:
        if self._left is not None:
            if self._left <= 0:
                self._left = None
                raise KillSignal("listener killed mid-reconcile")
            self._left -= 1
        self.writes += 1

    def create(self, obj: Obj) -> Obj:
        self._write()
        return self._store.create(obj)

    def delete(self, *args: Any, **kwargs: Any) -> Obj:
        self._write()
        return self._store.delete(*args, **kwargs)

    def mutate(self, *args: Any, **kwargs: Any) -> Obj:
        self._write()
        return self._store.mutate(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # reads (find, get, list) go straight through
        return getattr(self._store, name)


class CapacityRecorder:
    """The gate (scaleset/ports.py ``CapacityGatePort``): every value published, with the
    virtual time, and the live maxRunners the steps handed it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.values: list[tuple[float, int]] = []
        self.on_publish: list[Callable[[float, int], None]] = []
        self.live_max_runners: int | None = None

    @property
    def value(self) -> int:
        """The latest value published (0 before any), capped by the live maxRunners."""
        latest = self.values[-1][1] if self.values else 0
        cap = self.live_max_runners
        return latest if cap is None else max(0, min(latest, cap))

    def advertise(self, capacity: int) -> None:
        self.values.append((self.clock(), capacity))
        for callback in self.on_publish:
            callback(self.clock(), capacity)

    def set_live_max_runners(self, max_runners: int) -> None:
        self.live_max_runners = max_runners


@dataclass
class ListenerProcess:
    instance: str
    controller: ScaleSetController
    subscribers: list[Subscriber]
    store: KillingStore
    sink: CapacityRecorder
    steps: int = 0
    alive: bool = True

    @property
    def reconciler(self) -> Reconciler:
        return self.controller.reconciler


@dataclass
class SimCluster:
    loop: EventLoop
    store: ObjectStore
    cluster: Cluster
    settings: CapacityAwareSettings
    target: ScaleSetTarget
    rng: random.Random
    demand: Demand = field(default_factory=lambda: Demand(queued_jobs=0))

    @classmethod
    def build(
        cls, *, seed: int, nodes: int = 6, max_runners: int = 30, **settings: Any
    ) -> SimCluster:
        loop = EventLoop()
        store = ObjectStore(loop.now)
        spec = ClusterSpec(
            instance_types=default_catalog(),
            static_nodes=(StaticNodeGroup(name="node", count=nodes, instance_type="m5.2xlarge"),),
            latencies=Latencies(pod_start=(1.0, 3.0)),
        )
        cluster = Cluster(loop, store, spec, rng=random.Random(seed))
        cluster.start()
        store.create(ers_object())
        store.create(ars_object(max_runners))
        values = {
            "enabled": True,
            "proactiveCapacity": 4,
            "recalculateInterval": 30,
            "placeholderTtl": 600,
            "maxPairsInFlight": 6,
            "maxRequestsPerStep": 3,
            "workflowResources": {"cpu": "1", "memory": "2Gi"},
            **settings,
        }
        target = ScaleSetTarget(
            ers_name=ERS, runner_namespace=NS, placeholder_namespace=NS, max_runners=max_runners
        )
        return cls(
            loop,
            store,
            cluster,
            CapacityAwareSettings.model_validate(values),
            target,
            random.Random(f"{seed}/listener"),
        )

    @property
    def interval(self) -> float:
        return self.settings.recalculate_interval

    def new_instance_id(self) -> str:
        return "".join(self.rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))

    def start_listener(self) -> ListenerProcess:
        instance = self.new_instance_id()
        ers = self.store.get("EphemeralRunnerSet", NS, ERS)
        builder = PlaceholderPodBuilder(
            self.settings, ers, instance=instance, namespace=NS, owner=ers
        )
        killing = KillingStore(self.store)
        writer = StorePlaceholderWriter(killing, builder)  # type: ignore[arg-type]
        config = self.settings.reconciler_config(ERS)
        sink = CapacityRecorder(self.loop.now)
        controller = ScaleSetController(
            config, Timings(self.interval), instance=instance, started_at=self.loop.now()
        )
        subscribers: list[Subscriber] = [
            PlaceholderSubscriber(writer, namespace=NS, clock=self.loop, config=config)
        ]
        return ListenerProcess(instance, controller, subscribers, killing, sink)

    def snapshot(self) -> ClusterSnapshot:
        return build_snapshot(self.store, self.target, now=self.loop.now(), demand=self.demand)

    def truth(self) -> CapacityLedger:
        """The ledger recomputed from the store now: what is really reservable."""
        return compute_ledger(self.snapshot(), 0)

    def step(
        self, process: ListenerProcess, *, kill_after_writes: int | None = None
    ) -> StepResult | None:
        """One reconcile of ``process``; None (and the process is dead) if it was killed."""
        process.store.arm(kill_after_writes)
        try:
            # Carried out as every driver does (scaleset/carry_out.py): subscribers, then the
            # capacity (a kill in a write publishes nothing).
            output = process.controller.step(self.loop.now(), self.snapshot(), stale_for=0.0)
            carry_out(output, Effects(process.subscribers, gate=process.sink))
            if output.error is not None:
                raise output.error
            result = output.result
        except KillSignal:
            process.alive = False
            return None
        finally:
            process.store.arm(None)
        process.steps += 1
        return result

    def placeholders(self) -> list[Obj]:
        return placeholder_pods(self.store, ERS)

    def unowned(self, process: ListenerProcess) -> list[str]:
        """Live placeholder pods whose pair the process does not hold (orphans)."""
        held = set(process.reconciler.store.view())
        out = []
        for pod in self.placeholders():
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            if meta["labels"].get("arc-capacity.dev/pair") not in held:
                out.append(meta["name"])
        return sorted(out)

    def run(self, seconds: float) -> None:
        self.loop.run_for(seconds)
