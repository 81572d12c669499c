"""What a scale set's runtime reads and drives, as ports: where its snapshots come from, ARC's
scaler and the listener's gate. The Kubernetes provider and the simulated store implement
:class:`SnapshotPort`; ARC's scaler (listener/arc/scaler.py) implements
:class:`ScalerControls`; the listener's ``CapacityGate`` (listener/arc/gate.py) implements
:class:`CapacityGatePort`, in the listener process and in the simulated world alike."""

from __future__ import annotations

from typing import Protocol

from reconciler.ports import CapacitySink
from reconciler.snapshot import ClusterSnapshot, Demand


class SnapshotPort(Protocol):
    """Where a scale set's snapshots come from (the Kubernetes cache, the simulated store)."""

    def full(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        """What a step reads, the fit estimate included (None: nothing to read yet)."""
        ...

    def cheap(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        """What a drop check reads: no fit estimate."""
        ...


class ScalerControls(Protocol):
    """What a step's output sets on ARC's scaler, for its next ERS patch to read.

    Not part of the message loop's scaler port (listener/arc/loop_ports.py ``JobScaler``):
    the message loop never calls these, and they are not Kubernetes calls: each is one
    attribute write, made from the reconcile loop's thread while a patch may be running on
    the write lane."""

    def set_max_runners(self, max_runners: int) -> None:
        """The live ``maxRunners`` the step saw (ARS); the scaler clamps its target by it."""
        ...

    def set_hot_runners(self, hot_runners: int) -> None:
        """The live hot slots: idle runners the target keeps on top of the assigned jobs."""
        ...

    def set_switched_off(self, switched_off: bool) -> None:
        """ARC switched the scale set off (its runners ``Outdated``): ask for no runner."""
        ...


class CapacityGatePort(CapacitySink, Protocol):
    """The listener's advertised capacity: the capacity sink, capped by the live
    ``maxRunners`` (0 is a hard cap: a drain between two steps)."""

    @property
    def value(self) -> int:
        """What the next poll sends as ``X-ScaleSetMaxCapacity``."""
        ...

    def set_live_max_runners(self, max_runners: int) -> None: ...
