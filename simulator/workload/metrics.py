"""The simulator's own accounting of the results.json figures, from in-memory state.

The independent checker (:mod:`simulator.measurement.checker`) recomputes the same figures from
the event log alone; a test holds the two to agreement. Definitions (all times are virtual
seconds since the start, rounded to milliseconds like the log):

- **completed / failed**: jobs that finished ``succeeded`` / ``failed`` (prepare-job timeout,
  workflow pod rejected or lost, runner lost).
- **stuck**: a job assigned to a scale set at ``a`` that no runner started by ``a +
  stuck_after``, counted when ``a + stuck_after <= end``. (Stock GitHub would keep it until
  its 24 h timeout; a job assigned less than ``stuck_after`` before the end is "waiting".)
- **queue-to-start**: ``job_queued`` to ``job_running`` (its workflow pod Running: the steps
  begin), over jobs that got that far; percentiles by linear interpolation.
  **queue-to-runner** is ``job_queued`` to ``job_started`` (GitHub's JobStarted).
- **over-advertised slot-seconds (realized)**: capacity GitHub used that the cluster could
  not back. Every job that failed or got stuck held one advertised slot of its scale set from
  ``job_assigned`` until it failed, or (stuck) until a runner finally started it or the run
  ended; the figure is the sum of those intervals.
- **unconfirmed advertised slot-seconds (instantaneous)**: the integral over time, per scale
  set, of ``max(0, advertised - min(R, W))``. ``advertised`` is the value of the latest poll
  (``capacity_advertised``). ``R`` counts runner pods and runner-sized placeholders (pairs'
  runner halves, warm-pool runner pods) that are bound to a node and hold it: from binding
  (``pod_bound``) until they end (``pod_ended``), are marked for disruption
  (``pod_disrupted``) or are removed (``pod_deleted``). ``W`` is the same for workflow pods
  and workflow-sized placeholders. ``min(R, W)`` is what the scheduler has confirmed: jobs
  holding resources plus complete reserved pairs (the ledger's formula, recounted). A pod
  that is only terminating (``deletionTimestamp`` without ``DisruptionTarget``) counts until
  it is removed, because the log has no event for a plain delete request. The figure
  measures, for capacity-aware, how long a loss takes to reach GitHub (reconcile debounce +
  poll cut); for stock ARC, how much of ``maxRunners`` was never backed by anything.
- **idle reserved CPU / GPU hours**: requests of placeholder pods (both strategies' kinds)
  integrated from binding until they end or are removed. Idle *nodes* are reported apart
  (``node_hours``, ``node_cost_usd``, from the cluster's own figures, counted from Launched;
  ``billed_node_hours``, ``billed_cost_usd`` from the launch request: see
  :mod:`simulator.workload.machines`).

Fair figures (issue 13; definitions in :mod:`simulator.workload.figures`):

- **queue_to_start_fair_seconds**: like queue-to-start, but over *all* jobs, a job that failed
  or never reached Running counting as infinitely late (``null`` in JSON when a percentile
  lands on such a job). ``queue_to_start_seconds`` keeps its old meaning (jobs that got that
  far; it flatters a strategy that fails jobs) because the output contract keeps field names.
- **jobs_never_started**: jobs whose workflow pod never reached Running by the end (failed
  before starting, or still waiting).
- **time_to_50pct_running / time_to_95pct_running**: seconds since the run started until
  ``ceil(0.5 N)`` / ``ceil(0.95 N)`` of all ``N`` jobs had reached Running (failed jobs excluded).
- **over_advertised_episodes**: count, p50, p99, max duration of the stretches during which a
  scale set's advertised capacity exceeded ``min(R, W)`` (per scale set too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore
from simulator.workload.actions import ActionsService
from simulator.workload.figures import (
    INF,
    EpisodeTracker,
    episode_summary,
    fair_summary,
    time_to_fraction,
)
from simulator.workload.machines import MachineBilling
from simulator.workload.pods import (
    PLACEHOLDER_ROLES,
    ROLE_PH_RUNNER,
    ROLE_PH_WORKFLOW,
    ROLE_RUNNER,
    ROLE_WORKFLOW,
)
from simulator.workload.service_records import JobState, ScaleSet

_RUNNER_SIDE = (ROLE_RUNNER, ROLE_PH_RUNNER)
_WORKFLOW_SIDE = (ROLE_WORKFLOW, ROLE_PH_WORKFLOW)


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return None
    rank = p / 100.0 * (len(sorted_values) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


def summary(values: list[float]) -> dict[str, float | None]:
    values.sort()
    out: dict[str, float | None] = {}
    for p in (50, 95, 99):
        v = percentile(values, p)
        out[f"p{p}"] = None if v is None else round(v, 1)
    return out


@dataclass(slots=True)
class _PodTrack:
    role: str
    scale_set: str | None
    cpu: float
    gpu: int
    bound_at: float | None = None
    held: bool = False  # bound, resources reserved on the node
    counting: bool = False  # bound and not ended / disrupted / removed


@dataclass(slots=True)
class _ScaleSetTrack:
    advertised: int = 0
    runner_side: int = 0
    workflow_side: int = 0
    last: float = 0.0
    unconfirmed: float = 0.0
    episodes: EpisodeTracker = field(default_factory=EpisodeTracker)

    @property
    def confirmed(self) -> int:
        return min(self.runner_side, self.workflow_side)


@dataclass
class Series:
    """Time series for the plots (sampled every ``interval``)."""

    t: list[float] = field(default_factory=list)
    queue_depth: list[int] = field(default_factory=list)
    advertised: dict[str, list[int]] = field(default_factory=dict)
    confirmed: dict[str, list[int]] = field(default_factory=dict)
    assigned: dict[str, list[int]] = field(default_factory=dict)
    nodes: dict[str, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "queue_depth": self.queue_depth,
            "advertised": self.advertised,
            "confirmed": self.confirmed,
            "assigned": self.assigned,
            "nodes": self.nodes,
        }


def _disrupted(pod: Obj) -> bool:
    return any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


class Accounting:
    def __init__(self, loop: EventLoop, service: ActionsService, *, stuck_after: float) -> None:
        self.loop = loop
        self.service = service
        self.stuck_after = stuck_after
        self._pods: dict[tuple[str, str, str], _PodTrack] = {}
        self._sets: dict[str, _ScaleSetTrack] = {}
        self.placeholder_pods_created = 0
        self.placeholder_cpu_seconds = 0.0
        self.placeholder_gpu_seconds = 0.0
        self.series = Series()
        self._node_counts: dict[str, Callable[[], int]] = {}
        self.machines = MachineBilling(self._t)
        service.capacity_observers.append(self._on_capacity)

    def _t(self) -> float:
        return round(self.loop.now() - self.loop.start, 3)

    def _set(self, name: str) -> _ScaleSetTrack:
        track = self._sets.get(name)
        if track is None:
            track = self._sets[name] = _ScaleSetTrack()
        return track

    def _advance(self, track: _ScaleSetTrack, t: float) -> None:
        gap = track.advertised - track.confirmed
        if gap > 0:
            track.unconfirmed += (t - track.last) * gap
        track.last = t

    # --- inputs ------------------------------------------------------------------------------

    def watch_cluster(self, name: str, node_count: Callable[[], int]) -> None:
        self._node_counts[name] = node_count

    def watch_machines(self, name: str, store: ObjectStore) -> None:
        """Bill the cluster's machines from their launch request (see ``machines``)."""
        store.subscribe(self.machines.listener(name), kinds=("Node", "NodeClaim"))

    def pod_added(
        self, cluster: str, pod: Obj, role: str, scale_set: str | None, cpu: float, gpu: int
    ) -> None:
        meta = pod["metadata"]
        self._pods[(cluster, meta.get("namespace", ""), meta["name"])] = _PodTrack(
            role, scale_set, cpu, gpu
        )
        if role in PLACEHOLDER_ROLES:
            self.placeholder_pods_created += 1

    def pod_changed(self, cluster: str, event_type: str, pod: Obj) -> None:
        meta = pod["metadata"]
        key = (cluster, meta.get("namespace", ""), meta["name"])
        track = self._pods.get(key)
        if track is None:
            return
        removed = event_type == "DELETED"
        phase = (pod.get("status") or {}).get("phase")
        ended = removed or phase in ("Succeeded", "Failed")
        t = self._t()
        if track.bound_at is None and not ended and (pod.get("spec") or {}).get("nodeName"):
            track.bound_at = t
            track.held = True
            if not _disrupted(pod):
                self._count(track, +1, t)
        if track.counting and (ended or _disrupted(pod)):
            self._count(track, -1, t)
        if track.held and ended:
            track.held = False
            if track.role in PLACEHOLDER_ROLES:
                held = t - (track.bound_at or t)
                self.placeholder_cpu_seconds += held * track.cpu
                self.placeholder_gpu_seconds += held * track.gpu
        if removed:
            del self._pods[key]

    def _count(self, track: _PodTrack, delta: int, t: float) -> None:
        track.counting = delta > 0
        if track.scale_set is None:
            return
        ss = self._set(track.scale_set)
        self._advance(ss, t)
        if track.role in _RUNNER_SIDE:
            ss.runner_side += delta
        elif track.role in _WORKFLOW_SIDE:
            ss.workflow_side += delta
        ss.episodes.update(t, ss.advertised - ss.confirmed)

    def _on_capacity(self, scale_set: ScaleSet, value: int) -> None:
        track = self._set(scale_set.name)
        t = self._t()
        self._advance(track, t)
        track.advertised = value
        track.episodes.update(t, track.advertised - track.confirmed)

    def sample(self) -> None:
        s = self.series
        s.t.append(self._t())
        s.queue_depth.append(self.service.queue_depth)
        for ss in self.service.scale_sets:
            track = self._set(ss.name)
            s.advertised.setdefault(ss.name, []).append(ss.advertised if ss.has_polled else 0)
            s.confirmed.setdefault(ss.name, []).append(max(0, track.confirmed))
            s.assigned.setdefault(ss.name, []).append(len(ss.assigned))
        for name, count in self._node_counts.items():
            s.nodes.setdefault(name, []).append(count())

    # --- results -----------------------------------------------------------------------------

    def finish(self) -> float:
        """Close every open interval at the current time; returns the end time."""
        end = self._t()
        for track in self._sets.values():
            self._advance(track, end)
            track.episodes.close(end)
        self.machines.finish(end)
        for pod in self._pods.values():
            if pod.held and pod.role in PLACEHOLDER_ROLES:
                held = end - (pod.bound_at or end)
                self.placeholder_cpu_seconds += held * pod.cpu
                self.placeholder_gpu_seconds += held * pod.gpu
                pod.held = False
        return end

    def results(self, end: float) -> dict[str, Any]:
        start = self.loop.start
        stuck_after = self.stuck_after

        def rel(ts: float | None) -> float | None:
            return None if ts is None else round(ts - start, 3)

        completed = failed = stuck = waiting = running = queued = 0
        to_start: list[float] = []
        to_runner: list[float] = []
        over = 0.0
        reasons: dict[str, int] = {}
        per_set: dict[str, dict[str, Any]] = {
            ss.name: {
                "jobs_assigned": 0,
                "jobs_failed": 0,
                "jobs_stuck": 0,
                "over_advertised_slot_seconds": 0.0,
            }
            for ss in self.service.scale_sets
        }
        for job in self.service.jobs:
            queued_at = rel(job.queued_at) or 0.0
            assigned = rel(job.assigned_at)
            started = rel(job.started_at)
            if job.running_at is not None:
                to_start.append((rel(job.running_at) or 0.0) - queued_at)
            if started is not None:
                to_runner.append(started - queued_at)
            if job.state is JobState.SUCCEEDED:
                completed += 1
            elif job.state is JobState.FAILED:
                failed += 1
                key = (job.reason or "unknown").split(":")[0]
                reasons[key] = reasons.get(key, 0) + 1
            if assigned is None:
                queued += 1
                continue
            row = per_set[job.scale_set or ""]
            row["jobs_assigned"] += 1
            is_stuck = assigned + stuck_after <= end and (
                started is None or started > assigned + stuck_after
            )
            if is_stuck:
                stuck += 1
                row["jobs_stuck"] += 1
            if job.state is JobState.FAILED:
                row["jobs_failed"] += 1
            if job.state is JobState.FAILED or is_stuck:
                until = (
                    rel(job.finished_at)
                    if job.state is JobState.FAILED
                    else (started if started is not None else end)
                )
                held = (until if until is not None else end) - assigned
                over += held
                row["over_advertised_slot_seconds"] += held
            if job.state in (JobState.STARTED, JobState.RUNNING):
                running += 1
            elif job.state is JobState.ASSIGNED and not is_stuck:
                waiting += 1
        for name, row in per_set.items():
            row["over_advertised_slot_seconds"] = round(row["over_advertised_slot_seconds"], 1)
            row["unconfirmed_advertised_slot_seconds"] = round(self._set(name).unconfirmed, 1)
            row["over_advertised_episodes"] = episode_summary(self._set(name).episodes.durations)
        return {
            "jobs_total": len(self.service.jobs),
            "jobs_completed": completed,
            "jobs_failed": failed,
            "jobs_stuck": stuck,
            "jobs_running_at_end": running,
            "jobs_waiting_at_end": waiting,
            "jobs_never_assigned": queued,
            "failed_by_reason": dict(sorted(reasons.items())),
            "queue_to_start_seconds": summary(to_start),
            "queue_to_runner_seconds": summary(to_runner),
            "over_advertised_slot_seconds": round(over, 1),
            "unconfirmed_advertised_slot_seconds": round(
                sum(t.unconfirmed for t in self._sets.values()), 1
            ),
            "idle_reserved_cpu_hours": round(self.placeholder_cpu_seconds / 3600.0, 2),
            "idle_reserved_gpu_hours": round(self.placeholder_gpu_seconds / 3600.0, 2),
            "placeholder_pods_created": self.placeholder_pods_created,
            **self._fair(start),
            "over_advertised_episodes": episode_summary(
                d for t in self._sets.values() for d in t.episodes.durations
            ),
            **self.machines.results(),
            "scale_sets": per_set,
        }

    def episode_durations(self) -> list[float]:
        """Durations of every closed over-advertised episode, all scale sets (after finish)."""
        return [d for t in self._sets.values() for d in t.episodes.durations]

    def _fair(self, start: float) -> dict[str, Any]:
        """The fair figures (see :mod:`simulator.workload.figures`)."""
        jobs = self.service.jobs
        waits: list[float] = []
        running_times: list[float] = []
        for job in jobs:
            if job.running_at is None or job.state is JobState.FAILED:
                waits.append(INF)
                continue
            ran = round(job.running_at - start, 3)
            running_times.append(ran)
            waits.append(ran - round(job.queued_at - start, 3))
        return {
            "queue_to_start_fair_seconds": fair_summary(waits),
            "jobs_never_started": sum(1 for j in jobs if j.running_at is None),
            "time_to_50pct_running": time_to_fraction(running_times, len(jobs), 0.5),
            "time_to_95pct_running": time_to_fraction(running_times, len(jobs), 0.95),
        }
