"""One window of a fleet's run, per cluster: what it did in, say, the hour its shared store
was down, to set beside the same hour of the run with ``fleetView`` off and on.

From one run's event log (``t``: seconds since the run started), for the window
``[start, end)``:

- **jobs queued** in the window (``job_queued``), and each one's queue-to-start, fair as
  simulator/workload/figures.py counts it: ``job_running`` minus ``job_queued``, or
  ``math.inf`` for a job that failed (``job_failed``) or never ran. Per cluster, **taken**:
  how many of those jobs its scale sets were given (``job_assigned``, whenever it came).
- **pairs created** in the window: placeholder units whose first ``pod_created`` falls in it
  (a capacity-aware pair's two halves are one unit, as
  :func:`simulator.measurement.fleet_duplication.unit_name` reads them; a warm pool's pause
  pod is a unit alone), per cluster the ``pod_created`` names.
- **mean READY**: each scale set's ``reconcile_step`` ``ready`` held from one event to its
  next (the step log writes only changes, so this is exact), averaged by time over the window
  and summed over the cluster's scale sets (``scale_set_registered`` says which). ``None``
  for a log without ``reconcile_step`` (stock ARC, the warm pool: no pairs).

Only the standard library is used, so a log can be read anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.measurement.fleet_duplication import unit_name
from simulator.measurement.reserve_cost import PLACEHOLDER_ROLES


class WindowError(ValueError):
    """The window or the log cannot give the figures (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class ClusterWindow:
    cluster: str
    #: Jobs queued in the window that this cluster's scale sets were given.
    jobs_taken: int
    pairs_created: int
    #: Time-weighted mean of READY pairs over the window; None without reconcile_step events.
    mean_ready: float | None


@dataclass(frozen=True, slots=True)
class WindowFigures:
    start: float
    end: float
    #: Queue-to-start of each job queued in the window, queue order; inf: failed or never ran.
    waits: tuple[float, ...]
    clusters: tuple[ClusterWindow, ...]

    @property
    def jobs_queued(self) -> int:
        return len(self.waits)


@dataclass(slots=True)
class _Ready:
    """One scale set's READY count as a step function, integrated over the window."""

    value: float = 0.0
    since: float = 0.0
    area: float = 0.0

    def move(self, t: float, value: float, start: float, end: float) -> None:
        lo, hi = max(self.since, start), min(t, end)
        if hi > lo:
            self.area += self.value * (hi - lo)
        self.value, self.since = value, t


@dataclass(slots=True)
class _Replay:
    clusters: list[str] = field(default_factory=list)
    cluster_of: dict[str, str] = field(default_factory=dict)  # scale set -> cluster
    queued: dict[int, float] = field(default_factory=dict)  # window jobs: id -> queued
    running: dict[int, float] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)
    taken_by: dict[int, str] = field(default_factory=dict)
    units: set[str] = field(default_factory=set)
    created: dict[str, int] = field(default_factory=dict)  # cluster -> units created
    ready: dict[str, _Ready] = field(default_factory=dict)  # scale set -> READY over time
    ended: float | None = None


def window_figures(events: Iterable[Mapping[str, Any]], start: float, end: float) -> WindowFigures:
    """The figures of ``[start, end)`` (seconds since the run started) of one run's log."""
    if not (math.isfinite(start) and math.isfinite(end)) or start < 0 or end <= start:
        raise WindowError(f"window [{start}, {end}): need 0 <= start < end, both finite")
    r = _Replay()
    for event in events:
        _read(r, event, start, end)
    if r.ended is None:
        raise WindowError("no run_ended event: the log is not a whole run")
    if r.ended < end:
        raise WindowError(f"window [{start:g}, {end:g}) s ends after the run ({r.ended:g} s)")
    for ready in r.ready.values():
        ready.move(r.ended, ready.value, start, end)
    waits = tuple(
        math.inf if job in r.failed or job not in r.running else r.running[job] - queued
        for job, queued in r.queued.items()
    )
    stepped = bool(r.ready)
    return WindowFigures(
        start,
        end,
        waits,
        tuple(
            ClusterWindow(
                cluster,
                jobs_taken=sum(1 for c in r.taken_by.values() if c == cluster),
                pairs_created=r.created.get(cluster, 0),
                mean_ready=(
                    sum(rd.area for s, rd in r.ready.items() if r.cluster_of.get(s) == cluster)
                    / (end - start)
                    if stepped
                    else None
                ),
            )
            for cluster in r.clusters
        ),
    )


def _read(r: _Replay, event: Mapping[str, Any], start: float, end: float) -> None:
    kind, t = event.get("type"), float(event.get("t", 0.0))
    if kind == "scale_set_registered":
        cluster = str(event["cluster"])
        r.cluster_of[str(event["scale_set"])] = cluster
        if cluster not in r.clusters:
            r.clusters.append(cluster)
    elif kind == "job_queued":
        if start <= t < end:
            r.queued[int(event["job"])] = t
    elif kind in ("job_assigned", "job_running", "job_failed"):
        job = int(event["job"])
        if job not in r.queued:
            return
        if kind == "job_assigned":
            r.taken_by[job] = str(event["cluster"])
        elif kind == "job_running":
            r.running[job] = t
        else:
            r.failed.add(job)
    elif kind == "pod_created" and event.get("role") in PLACEHOLDER_ROLES:
        unit = unit_name(str(event["pod"]), str(event["role"]))
        if unit not in r.units:
            r.units.add(unit)
            if start <= t < end:
                cluster = str(event.get("cluster") or "")
                r.created[cluster] = r.created.get(cluster, 0) + 1
    elif kind == "reconcile_step":
        scale_set = str(event["scale_set"])
        r.ready.setdefault(scale_set, _Ready()).move(t, float(event["ready"]), start, end)
    elif kind == "run_ended":
        r.ended = t
