"""The small interfaces between the reconciler and the outside world.

Providers implement these; the reconciler and its subscribers only know these shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from state_machine.events import AnyTransition
from state_machine.states import Role


@dataclass(frozen=True, slots=True)
class PodRef:
    """A pod to act on. ``uid`` (when known) is used as a delete precondition."""

    namespace: str
    name: str
    uid: str | None = None


@dataclass(frozen=True, slots=True)
class PairSpec:
    """What a placeholder writer needs to create both pods of one pair."""

    pair_id: str
    scale_set: str
    runner_pod: str
    workflow_pod: str
    #: Lease expiry to write into the TTL annotation.
    expires_at: float
    #: A hot slot's placeholder: only the workflow pod (its runner is a real idle runner).
    workflow_only: bool = False


# --- Commands: maintenance decided by the reconciler that is not a state change -------------


@dataclass(frozen=True, slots=True)
class RenewLease:
    """Push the TTL annotation of a live pair's pods forward."""

    pair_id: str
    pods: tuple[PodRef, ...]
    expires_at: float


@dataclass(frozen=True, slots=True)
class DeleteOrphan:
    """Delete a placeholder pod no pair owns (earlier instance, expired lease)."""

    pod: PodRef
    reason: str


@dataclass(frozen=True, slots=True)
class CreatePlaceholder:
    """Create a hot slot's workflow placeholder (``spec.workflow_only``)."""

    spec: PairSpec
    reason: str


Command = RenewLease | DeleteOrphan | CreatePlaceholder


class Subscriber(Protocol):
    """Reacts to the committed events (and commands) of one reconcile step: pair and hot-slot
    transitions alike (:data:`~state_machine.events.AnyTransition`).

    Side effects happen only here. A subscriber never calls back into the reconciler: the
    results of its actions are observed in a later snapshot.
    """

    def notify(self, events: Sequence[AnyTransition], commands: Sequence[Command]) -> None: ...


class PlaceholderWriter(Protocol):
    """Creates and deletes placeholder pods (Kubernetes provider or simulated world).

    All calls are idempotent: AlreadyExists on create and NotFound on delete are success.
    """

    def create_pair(self, spec: PairSpec) -> None: ...

    def delete_pods(self, pods: Sequence[PodRef]) -> None: ...

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None: ...


class CapacitySink(Protocol):
    """Receives the capacity to advertise (the ``X-ScaleSetMaxCapacity`` header); the latest value
    wins. Not ARC's maxRunners: the live maxRunners reaches the gate as ``set_live_max_runners``."""

    def advertise(self, capacity: int) -> None: ...


__all__ = [
    "CapacitySink",
    "Command",
    "CreatePlaceholder",
    "DeleteOrphan",
    "PairSpec",
    "PlaceholderWriter",
    "PodRef",
    "RenewLease",
    "Role",
    "Subscriber",
]
