"""The job side of the Actions face: the JobFeed protocol and a scripted feed for tests."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


# --- the job side ------------------------------------------------------------------------


class JobFeed(Protocol):
    """The Actions service's job side, as the face needs it."""

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        """Record the advertised capacity, assign backlog up to it, return new job messages
        (docs/protocol.md#messages wire dicts) for this scale set since the last call."""
        ...

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        """docs/protocol.md#statistics wire dict."""
        ...

    def acquire(self, scale_set_id: int, request_ids: list[int]) -> list[int]: ...


def wire_time(when: float | None) -> str:
    """RFC 3339 with 7 fractional digits, as the service writes; None = Go zero time."""
    if when is None:
        return "0001-01-01T00:00:00Z"
    moment = datetime.fromtimestamp(when, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond * 10:07d}Z"


@dataclass
class ScriptedJob:
    request_id: int
    scale_set_id: int
    labels: tuple[str, ...]
    repository: str
    owner: str
    workflow_ref: str
    display_name: str
    event_name: str
    workflow_run_id: int
    queued_at: float
    state: str = "queued"  # queued -> assigned -> acquired -> started -> completed
    assigned_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    runner_id: int = 0
    runner_name: str = ""
    result: str = ""

    @property
    def job_id(self) -> str:
        return f"job-{self.request_id:x}"

    def message(self, kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messageType": kind,
            "runnerRequestId": self.request_id,
            "repositoryName": self.repository,
            "ownerName": self.owner,
            "jobId": self.job_id,
            "jobWorkflowRef": self.workflow_ref,
            "jobDisplayName": self.display_name,
            "workflowRunId": self.workflow_run_id,
            "eventName": self.event_name,
            "requestLabels": list(self.labels),
            "queueTime": wire_time(self.queued_at),
            "scaleSetAssignTime": wire_time(self.assigned_at),
            "runnerAssignTime": wire_time(self.started_at),
            "finishTime": wire_time(self.finished_at),
        }
        if kind == "JobAvailable":
            body["acquireJobUrl"] = f"https://example.invalid/acquire/{self.request_id}"
        if kind in ("JobStarted", "JobCompleted"):
            body["runnerId"] = self.runner_id
            body["runnerName"] = self.runner_name
        if kind == "JobCompleted":
            body["result"] = self.result
        return body


class ScriptedJobFeed:
    """A real, simple in-memory job feed: a FIFO of jobs per scale set, assigned up to the
    advertised capacity (lowering it never revokes assigned jobs); tests start and complete
    jobs, which queues JobStarted / JobCompleted messages. Thread-safe."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SYSTEM_CLOCK
        self._lock = threading.Lock()
        self._jobs: dict[int, ScriptedJob] = {}
        self._outbox: dict[int, list[dict[str, Any]]] = {}
        self._next_id = 9001
        self.idle_runners: dict[int, int] = {}
        #: (scale set id, advertised capacity) per poll, oldest first (bounded).
        self.capacity_history: deque[tuple[int, int]] = deque(maxlen=10_000)

    def add_job(
        self,
        scale_set_id: int,
        *,
        labels: Sequence[str] = ("arc-runners",),
        repository: str = "web",
        owner: str = "acme",
        display_name: str | None = None,
        workflow_ref: str = "acme/web/.github/workflows/ci.yml@refs/heads/main",
        event_name: str = "push",
    ) -> int:
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            self._jobs[request_id] = ScriptedJob(
                request_id=request_id,
                scale_set_id=scale_set_id,
                labels=tuple(labels),
                repository=repository,
                owner=owner,
                workflow_ref=workflow_ref,
                display_name=display_name or f"job {request_id}",
                event_name=event_name,
                workflow_run_id=555_000 + request_id,
                queued_at=self._clock.now(),
            )
            return request_id

    def start(self, request_id: int, runner_name: str, runner_id: int | None = None) -> None:
        with self._lock:
            job = self._job(request_id, "assigned", "acquired")
            job.state, job.started_at = "started", self._clock.now()
            job.runner_name, job.runner_id = runner_name, runner_id or 300 + request_id % 1000
            self._emit(job.scale_set_id, job.message("JobStarted"))

    def complete(self, request_id: int, result: str = "succeeded") -> None:
        with self._lock:
            job = self._job(request_id, "assigned", "acquired", "started")
            job.state, job.finished_at, job.result = "completed", self._clock.now(), result
            self._emit(job.scale_set_id, job.message("JobCompleted"))

    def push_raw(self, scale_set_id: int, message: dict[str, Any]) -> None:
        """Queue any job-message dict as is (e.g. an unknown ``messageType``)."""
        with self._lock:
            self._emit(scale_set_id, dict(message))

    def job(self, request_id: int) -> ScriptedJob:
        with self._lock:
            return self._jobs[request_id]

    def jobs_in(self, state: str) -> list[int]:
        with self._lock:
            return [j.request_id for j in self._jobs.values() if j.state == state]

    # --- JobFeed ---

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        with self._lock:
            self.capacity_history.append((scale_set_id, max_capacity))
            room = max_capacity - sum(1 for j in self._active(scale_set_id))
            for job in self._jobs.values():
                if room <= 0:
                    break
                if job.scale_set_id == scale_set_id and job.state == "queued":
                    job.state, job.assigned_at = "assigned", self._clock.now()
                    self._emit(scale_set_id, job.message("JobAvailable"))
                    room -= 1
            return self._outbox.pop(scale_set_id, [])

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        with self._lock:
            active = list(self._active(scale_set_id))
            running = sum(1 for j in active if j.state == "started")
            idle = self.idle_runners.get(scale_set_id, 0)
            # Jobs of this scale set not acquired yet: those still queued for advertised room
            # (docs/protocol.md#statistics, as simulator.workload.actions.ActionsService
            # counts them) and those offered but not acquired (docs/metrics.md; a moment's
            # transient, since the listener acquires what it is offered at once).
            waiting = sum(
                1
                for j in self._jobs.values()
                if j.scale_set_id == scale_set_id and j.state in ("queued", "assigned")
            )
            return {
                "totalAvailableJobs": waiting,
                "totalAcquiredJobs": sum(1 for j in active if j.state == "acquired"),
                "totalAssignedJobs": len(active),
                "totalRunningJobs": running,
                "totalRegisteredRunners": running + idle,
                "totalBusyRunners": running,
                "totalIdleRunners": idle,
            }

    def acquire(self, scale_set_id: int, request_ids: list[int]) -> list[int]:
        acquired = []
        with self._lock:
            for request_id in request_ids:
                job = self._jobs.get(request_id)
                if job and job.scale_set_id == scale_set_id and job.state == "assigned":
                    job.state = "acquired"
                    acquired.append(request_id)
                    self._emit(scale_set_id, job.message("JobAssigned"))
        return acquired

    def _active(self, scale_set_id: int) -> Iterable[ScriptedJob]:
        return (
            j
            for j in self._jobs.values()
            if j.scale_set_id == scale_set_id and j.state in ("assigned", "acquired", "started")
        )

    def _job(self, request_id: int, *states: str) -> ScriptedJob:
        job = self._jobs.get(request_id)
        if job is None or job.state not in states:
            got = "unknown" if job is None else job.state
            raise ValueError(f"job {request_id} is {got}; expected one of {states}")
        return job

    def _emit(self, scale_set_id: int, message: dict[str, Any]) -> None:
        self._outbox.setdefault(scale_set_id, []).append(message)
