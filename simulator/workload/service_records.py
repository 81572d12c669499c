"""What the simulated Actions service (:mod:`simulator.workload.actions`) keeps: jobs and
their states, registered runners, scale sets with their queue and advertised capacity, and
the ``JobFeed`` interface the Actions HTTP face serves."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class JobState(StrEnum):
    QUEUED = "queued"
    ASSIGNED = "assigned"  # to a scale set, no runner yet
    STARTED = "started"  # a runner took it (JobStarted)
    RUNNING = "running"  # its workflow pod runs: the steps execute
    SUCCEEDED = "succeeded"
    FAILED = "failed"


FINISHED = (JobState.SUCCEEDED, JobState.FAILED)


@dataclass(eq=False, slots=True)
class Job:
    seq: int
    request_id: int
    job_id: str
    labels: tuple[str, ...]
    queued_at: float
    duration: float
    name: str
    repository: str
    workflow_run_id: int
    state: JobState = JobState.QUEUED
    scale_set: str | None = None
    runner_name: str | None = None
    runner_id: int = 0
    assigned_at: float | None = None
    started_at: float | None = None
    running_at: float | None = None
    finished_at: float | None = None
    reason: str | None = None
    acquired: bool = False


class JobFeed(Protocol):
    """What the Actions HTTP face needs from the service (names are a contract)."""

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]: ...

    def statistics(self, scale_set_id: int) -> dict[str, int]: ...

    def acquire(self, scale_set_id: int, request_ids: Sequence[int]) -> list[int]: ...


@dataclass(eq=False, slots=True)
class Runner:
    name: str
    runner_id: int
    on_job: Callable[[Job], None]
    job: Job | None = None


#: The broker assigns a scale set at most the capacity its latest poll advertised, in total
#: (jobs assigned and not finished count); idle runners take jobs only within that room.
BROKER_CAPACITY = "capacity"
#: The older model: each idle registered runner adds one to the room, whatever was advertised.
BROKER_IDLE_RUNNERS = "idle-runners"
BROKERS = (BROKER_CAPACITY, BROKER_IDLE_RUNNERS)


@dataclass(eq=False, slots=True)
class ScaleSet:
    id: int
    name: str
    labels: frozenset[str]
    cluster: str
    advertised: int = 0
    has_polled: bool = False
    #: The listener deleted its message session (ARC's listener does on exit) and no new
    #: session has polled yet: nothing is assigned against the old session's capacity.
    session_closed: bool = False
    last_poll: float | None = None
    #: Assigned and not finished (waiting + started + running), by runnerRequestId.
    assigned: dict[int, Job] = field(default_factory=dict)
    #: Assigned, waiting for a runner (FIFO).
    waiting: deque[Job] = field(default_factory=deque)
    runners: dict[str, Runner] = field(default_factory=dict)
    #: Registered runners without a job, in the order they became idle.
    idle: dict[str, Runner] = field(default_factory=dict)
    running: int = 0
    outbox: list[dict[str, Any]] = field(default_factory=list)
    #: Called when the outbox gets its first message (the long poll returns).
    wake: Callable[[], None] | None = None
    groups: list[tuple[str, ...]] = field(default_factory=list)

    #: How the broker treats idle registered runners (:data:`BROKER_CAPACITY` or
    #: :data:`BROKER_IDLE_RUNNERS`, docs/semantics.md "Actions service").
    broker: str = "capacity"

    @property
    def room(self) -> int:
        """Jobs the service may still assign here. Under the ``capacity`` broker: up to the
        capacity the latest poll advertised, counting every job assigned and not finished, so
        an idle registered runner is handed a job only within that room. Under the older
        ``idle-runners`` broker each idle runner adds one on top, whatever was advertised,
        and even with no listener session."""
        if not self.has_polled:
            return 0
        idle_room = 0
        if self.broker == BROKER_IDLE_RUNNERS:
            idle_room = max(0, len(self.idle) - len(self.waiting))
        if self.session_closed:  # no listener session: nothing against the old capacity
            return idle_room
        return max(0, self.advertised - len(self.assigned)) + idle_room


CapacityObserver = Callable[[ScaleSet, int], None]
