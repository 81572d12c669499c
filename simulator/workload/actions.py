"""The GitHub Actions service, as the runner scale sets see it (docs/design.md#simulator,
docs/protocol.md#messages).

Semantics modelled:

- Jobs are queued with labels. A scale set may take a job when the job's labels are a subset
  of its labels. Several scale sets (in several clusters) may serve the same labels.
- Each scale set is filled up to the capacity it advertised on its **latest poll**
  (``X-ScaleSetMaxCapacity``): room = advertised - jobs assigned to it and not finished.
  Lowering the capacity never revokes an assigned job. Until a scale set has polled once it
  gets nothing (no session).
- The queue is FIFO per label set; across label sets the oldest job that fits goes first.
  A new job goes to a scale set with room, rotating round-robin among the eligible ones (which
  listener's long poll the broker answers first is not deterministic in reality; rotation is
  the fair, reproducible stand-in). When room opens in a scale set (a poll raised its
  capacity, a job finished) it takes the backlog it can serve.
- Registered runners of a scale set take its assigned jobs in FIFO order as soon as they are
  idle (``JobStarted``). The broker (``broker``, a scenario's ``actions.broker``) decides what
  an idle runner adds: under ``capacity`` (the default) nothing, the scale set is assigned at
  most the capacity it advertised in total, counting jobs already assigned or running, and an
  idle runner (kept by minRunners, or a hot slot's) takes a job only within that room; under
  ``idle-runners`` (the world before issue 43) each idle runner adds one to the room, whatever
  was advertised. docs/semantics.md cites the evidence for the default.
- A job finishes as ``succeeded`` or ``failed`` (``JobCompleted``); an ephemeral runner is
  deregistered after its job.
- Wire shapes: :meth:`poll`, :meth:`statistics` and :meth:`acquire` are the ``JobFeed`` the
  Actions HTTP face serves; they return job message dicts (docs/protocol.md#messages) and
  statistics (docs/protocol.md#statistics).

Everything runs on the world's event loop thread; the service never calls back into a runner
re-entrantly except through ``on_job`` (the runner schedules its own work).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.workload.jobs import JobSpec
from simulator.workload.service_records import (
    BROKER_CAPACITY,
    BROKERS,
    CapacityObserver,
    Job,
    JobState,
    Runner,
    ScaleSet,
)

#: Go's zero time, sent for timestamps that are not set yet (docs/protocol.md#messages).
ZERO_TIME = "0001-01-01T00:00:00Z"
#: First runnerRequestId handed out (any positive int64 works; large ones look realistic).
FIRST_REQUEST_ID = 1_000_001


class ServiceError(Exception):
    """A call the real service would reject (unknown scale set, runner, job)."""


def rfc3339(ts: float | None) -> str:
    """RFC 3339 with 7 fractional digits, as the service writes them; None = Go's zero time."""
    if ts is None:
        return ZERO_TIME
    moment = datetime.fromtimestamp(ts, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond * 10:07d}Z"


class ActionsService:
    def __init__(
        self, loop: EventLoop, log: EventLog, *, owner: str = "acme", broker: str = BROKER_CAPACITY
    ) -> None:
        if broker not in BROKERS:
            raise ServiceError(f"unknown broker {broker!r}; known: {', '.join(BROKERS)}")
        self.broker = broker
        self.loop = loop
        self.log = log
        self.owner = owner
        self._scale_sets: dict[int, ScaleSet] = {}
        self._by_name: dict[str, ScaleSet] = {}
        self._groups: dict[tuple[str, ...], deque[Job]] = {}
        self._eligible: dict[tuple[str, ...], list[ScaleSet]] = {}
        self._rotation: dict[tuple[str, ...], int] = {}
        self.jobs: list[Job] = []
        self._next_runner_id = 1
        self.capacity_observers: list[CapacityObserver] = []

    # --- set-up ----------------------------------------------------------------------------

    def add_scale_set(self, name: str, labels: Iterable[str], *, cluster: str) -> ScaleSet:
        if name in self._by_name:
            raise ServiceError(f"scale set {name!r} exists already (names must be unique)")
        ss = ScaleSet(len(self._scale_sets) + 1, name, frozenset(labels), cluster)
        ss.broker = self.broker
        self._scale_sets[ss.id] = ss
        self._by_name[name] = ss
        for key in self._groups:  # label sets seen before this scale set existed
            if ss.labels.issuperset(key):
                self._eligible[key].append(ss)
                ss.groups.append(key)
        self.log.emit(
            "scale_set_registered",
            scale_set=name,
            scale_set_id=ss.id,
            cluster=cluster,
            labels=sorted(ss.labels),
        )
        return ss

    def scale_set(self, scale_set_id: int) -> ScaleSet:
        try:
            return self._scale_sets[scale_set_id]
        except KeyError:
            raise ServiceError(f"no runner scale set with id {scale_set_id}") from None

    def by_name(self, name: str) -> ScaleSet:
        try:
            return self._by_name[name]
        except KeyError:
            raise ServiceError(f"no runner scale set named {name!r}") from None

    @property
    def scale_sets(self) -> list[ScaleSet]:
        return list(self._scale_sets.values())

    # --- the queue ---------------------------------------------------------------------------

    def submit(self, spec: JobSpec) -> Job:
        seq = len(self.jobs)
        now = self.loop.now()
        job = Job(
            seq=seq,
            request_id=FIRST_REQUEST_ID + seq,
            job_id=f"{0x5EED0000 + seq:08x}",
            labels=spec.labels,
            queued_at=now,
            duration=spec.duration,
            name=spec.name,
            repository=spec.repository,
            workflow_run_id=500_000 + seq,
        )
        self.jobs.append(job)
        self.log.emit(
            "job_queued", job=job.request_id, labels=list(job.labels), duration=job.duration
        )
        key = tuple(sorted(set(job.labels)))
        group = self._group(key)
        group.append(job)
        if len(group) == 1:  # nothing older with the same labels is waiting for room
            self._place_head(key)
        return job

    def _group(self, key: tuple[str, ...]) -> deque[Job]:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = deque()
            eligible = [ss for ss in self._scale_sets.values() if ss.labels.issuperset(key)]
            self._eligible[key] = eligible
            self._rotation[key] = 0
            for ss in eligible:
                ss.groups.append(key)
        return group

    def _place_head(self, key: tuple[str, ...]) -> None:
        group = self._groups[key]
        eligible = self._eligible[key]
        n = len(eligible)
        while group and n:
            start = self._rotation[key]
            chosen = None
            for i in range(n):
                ss = eligible[(start + i) % n]
                if ss.room > 0:
                    chosen = ss
                    self._rotation[key] = (start + i + 1) % n
                    break
            if chosen is None:
                return
            self._assign(group.popleft(), chosen)

    def _fill(self, ss: ScaleSet) -> None:
        """Give ``ss`` the oldest queued jobs it can serve while it has room."""
        while ss.room > 0:
            best: deque[Job] | None = None
            for key in ss.groups:
                group = self._groups[key]
                if group and (best is None or group[0].seq < best[0].seq):
                    best = group
            if best is None:
                return
            self._assign(best.popleft(), ss)

    def _assign(self, job: Job, ss: ScaleSet) -> None:
        job.state = JobState.ASSIGNED
        job.scale_set = ss.name
        job.assigned_at = self.loop.now()
        ss.assigned[job.request_id] = job
        ss.waiting.append(job)
        self.log.emit("job_assigned", job=job.request_id, scale_set=ss.name, cluster=ss.cluster)
        self._send(
            ss,
            self._message(
                "JobAvailable",
                job,
                acquireJobUrl=(f"https://broker.actions.invalid/acquire/{job.request_id}"),
            ),
        )
        self._start_waiting(ss)

    # --- runners ---------------------------------------------------------------------------

    def register_runner(self, scale_set_id: int, name: str, on_job: Callable[[Job], None]) -> int:
        """A runner came online and listens for a job; returns its runner id."""
        ss = self.scale_set(scale_set_id)
        if name in ss.runners:
            raise ServiceError(f"runner {name!r} is already registered in {ss.name}")
        runner = Runner(name, self._next_runner_id, on_job)
        self._next_runner_id += 1
        ss.runners[name] = runner
        ss.idle[name] = runner
        self._start_waiting(ss)
        self._fill(ss)  # room an idle runner opens under the idle-runners broker
        return runner.runner_id

    def remove_idle_runner(self, scale_set_id: int, name: str) -> bool:
        """Deregister an idle runner; False when it has a job (JobStillRunningException)."""
        ss = self.scale_set(scale_set_id)
        runner = ss.runners.get(name)
        if runner is None:
            return True
        if runner.job is not None:
            return False
        del ss.runners[name]
        ss.idle.pop(name, None)
        return True

    def _start_waiting(self, ss: ScaleSet) -> None:
        while ss.waiting and ss.idle:
            job = ss.waiting.popleft()
            name = next(iter(ss.idle))
            runner = ss.idle.pop(name)
            runner.job = job
            job.state = JobState.STARTED
            job.started_at = self.loop.now()
            job.runner_name = runner.name
            job.runner_id = runner.runner_id
            self.log.emit("job_started", job=job.request_id, scale_set=ss.name, runner=name)
            self._send(
                ss,
                self._message("JobStarted", job, runnerId=runner.runner_id, runnerName=runner.name),
            )
            runner.on_job(job)

    def job_running(self, job: Job, pod: str) -> None:
        """The job's workflow pod runs: its steps execute from now on."""
        if job.state is not JobState.STARTED:
            raise ServiceError(f"job {job.request_id} cannot start running from {job.state}")
        job.state = JobState.RUNNING
        job.running_at = self.loop.now()
        self._scale_set_of(job).running += 1
        self.log.emit("job_running", job=job.request_id, scale_set=job.scale_set, pod=pod)

    def finish_job(self, job: Job, *, succeeded: bool, reason: str | None = None) -> None:
        """The runner reports the job's result; the ephemeral runner deregisters."""
        if job.state not in (JobState.STARTED, JobState.RUNNING):
            raise ServiceError(f"job {job.request_id} cannot finish from {job.state}")
        ss = self._scale_set_of(job)
        if job.state is JobState.RUNNING:
            ss.running -= 1
        job.state = JobState.SUCCEEDED if succeeded else JobState.FAILED
        job.finished_at = self.loop.now()
        job.reason = reason
        del ss.assigned[job.request_id]
        if job.runner_name is not None:
            ss.runners.pop(job.runner_name, None)
            ss.idle.pop(job.runner_name, None)
        if succeeded:
            self.log.emit("job_completed", job=job.request_id, scale_set=ss.name)
        else:
            self.log.emit("job_failed", job=job.request_id, scale_set=ss.name, reason=reason)
        self._send(
            ss,
            self._message(
                "JobCompleted",
                job,
                result=job.state.value,
                runnerId=job.runner_id,
                runnerName=job.runner_name or "",
            ),
        )
        self._fill(ss)

    def _scale_set_of(self, job: Job) -> ScaleSet:
        if job.scale_set is None:
            raise ServiceError(f"job {job.request_id} is not assigned to a scale set")
        return self._by_name[job.scale_set]

    # --- JobFeed (the wire face) -------------------------------------------------------------

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        """A long poll with ``X-ScaleSetMaxCapacity: max_capacity``; returns pending messages.

        The capacity becomes the scale set's advertised capacity at once (the broker fills the
        session up to it while the poll is open), then the backlog it can serve is assigned.
        """
        ss = self.scale_set(scale_set_id)
        if max_capacity < 0:
            raise ServiceError(f"X-ScaleSetMaxCapacity must be >= 0 (got {max_capacity})")
        ss.last_poll = self.loop.now()
        if not ss.has_polled or ss.session_closed or max_capacity != ss.advertised:
            ss.has_polled = True
            ss.session_closed = False
            ss.advertised = max_capacity
            self.log.emit("capacity_advertised", scale_set=ss.name, value=max_capacity)
            for observer in self.capacity_observers:
                observer(ss, max_capacity)
            self._fill(ss)
        messages, ss.outbox = ss.outbox, []
        return messages

    def close_session(self, scale_set_id: int) -> None:
        """DELETE of the message session (the listener's exit, docs/protocol.md#sequence step 6):
        the service stops assigning against the capacity its last poll advertised until a new
        session polls."""
        ss = self.scale_set(scale_set_id)
        if ss.session_closed or not ss.has_polled:
            return
        ss.session_closed = True
        self.log.emit("capacity_advertised", scale_set=ss.name, value=0, reason="session closed")
        for observer in self.capacity_observers:
            observer(ss, 0)

    def acquire(self, scale_set_id: int, request_ids: Sequence[int]) -> list[int]:
        """Acquire offered jobs; returns the ids that are (still) this scale set's."""
        ss = self.scale_set(scale_set_id)
        acquired = []
        for request_id in request_ids:
            job = ss.assigned.get(request_id)
            if job is None or job.acquired:
                continue
            job.acquired = True
            acquired.append(request_id)
            self._send(ss, self._message("JobAssigned", job))
        return acquired

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        ss = self.scale_set(scale_set_id)
        busy = len(ss.runners) - len(ss.idle)
        return {
            "totalAvailableJobs": sum(len(self._groups[k]) for k in ss.groups),
            "totalAcquiredJobs": sum(1 for j in ss.assigned.values() if j.acquired),
            "totalAssignedJobs": len(ss.assigned),
            "totalRunningJobs": ss.running,
            "totalRegisteredRunners": len(ss.runners),
            "totalBusyRunners": busy,
            "totalIdleRunners": len(ss.idle),
        }

    def assigned_count(self, scale_set_id: int) -> int:
        return len(self.scale_set(scale_set_id).assigned)

    # --- read-only views (HUD, metrics) ------------------------------------------------------

    def queued_for(self, labels: Iterable[str]) -> int:
        """Queued (unassigned) jobs that a runner with ``labels`` could take."""
        have = frozenset(labels)
        return sum(len(g) for key, g in self._groups.items() if have.issuperset(key))

    @property
    def queue_depth(self) -> int:
        return sum(len(g) for g in self._groups.values())

    # --- messages ------------------------------------------------------------------------------

    def _send(self, ss: ScaleSet, message: dict[str, Any]) -> None:
        ss.outbox.append(message)
        if len(ss.outbox) == 1 and ss.wake is not None:
            ss.wake()

    def _message(self, message_type: str, job: Job, **extra: Any) -> dict[str, Any]:
        owner, _, repo = job.repository.partition("/")
        message: dict[str, Any] = {
            "messageType": message_type,
            "runnerRequestId": job.request_id,
            "repositoryName": repo or owner,
            "ownerName": owner if repo else self.owner,
            "jobId": job.job_id,
            "jobWorkflowRef": f"{job.repository}/.github/workflows/ci.yml@refs/heads/main",
            "jobDisplayName": job.name,
            "workflowRunId": job.workflow_run_id,
            "eventName": "push",
            "requestLabels": list(job.labels),
            "queueTime": rfc3339(job.queued_at),
            "scaleSetAssignTime": rfc3339(job.assigned_at),
            "runnerAssignTime": rfc3339(job.started_at),
            "finishTime": rfc3339(job.finished_at),
        }
        message.update(extra)
        return message
