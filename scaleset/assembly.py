"""The one assembly of a scale set's runtime.

:func:`assemble_scale_set` builds, from a scale set's settings and its ports, everything that
steps it: the scale-set controller (reconciler/controller.py), the subscriber that carries out
its placeholder decisions, and the snapshot source that reads the combined demand. The
listener process (listener/process/assembly.py, over the Kubernetes provider) and the
simulator's driver (simulator/driver/capacity_aware.py, over the simulated store) both call
it; each adds only what a process has and a simulated one does not (logs, metrics, the
status board: typed subscribers and observers of scaleset/carry_out.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from reconciler.clock import Clock
from reconciler.config import ReconcilerConfig
from reconciler.controller import ScaleSetController, Work
from reconciler.ports import PlaceholderWriter, Subscriber
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot
from reconciler.subscribers import PlaceholderSubscriber
from scaleset.demand import ScaleSetDemand
from scaleset.ports import SnapshotPort


@dataclass(frozen=True, slots=True)
class ScaleSetPorts:
    """What a scale set's runtime is handed: where it writes, reads and keeps time."""

    target: ScaleSetTarget
    writer: PlaceholderWriter
    snapshots: SnapshotPort
    demand: ScaleSetDemand
    #: Wall time: the start of the controller's reconciler and the placeholders' expiry.
    clock: Clock
    instance: str
    #: The schedule's jitter (None: the controller's default).
    rng: random.Random | None = None


@dataclass(frozen=True, slots=True)
class ScaleSetRuntime:
    """A scale set's controller, its subscribers and what its snapshots read."""

    config: ReconcilerConfig
    controller: ScaleSetController
    #: The scale set's own subscribers (placeholder writes), notified first.
    subscribers: tuple[Subscriber, ...]
    snapshots: SnapshotPort
    demand: ScaleSetDemand

    def snapshot(self, work: Work, now: float) -> ClusterSnapshot | None:
        """The snapshot ``work`` needs, with the demand combined now."""
        demand = self.demand.current
        if work is Work.STEP:
            return self.snapshots.full(now, demand)
        return self.snapshots.cheap(now, demand)


def assemble_scale_set(settings: CapacityAwareSettings, ports: ScaleSetPorts) -> ScaleSetRuntime:
    """Build one scale set's runtime from its settings and ports (see the module docstring)."""
    config = settings.reconciler_config(ports.target.ers_name)
    controller = ScaleSetController(
        config,
        settings.controller_timings(),
        instance=ports.instance,
        started_at=ports.clock.now(),
        rng=ports.rng,
    )
    placeholders = PlaceholderSubscriber(
        ports.writer,
        namespace=ports.target.placeholder_namespace,
        clock=ports.clock,
        config=config,
    )
    return ScaleSetRuntime(config, controller, (placeholders,), ports.snapshots, ports.demand)
