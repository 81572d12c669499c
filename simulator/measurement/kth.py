"""The k-th job ratio: does a strategy get its k-th job running as soon as stock ARC does?

Failing a job early must earn nothing, so the comparison is not on percentiles of the jobs that
ran but on *how long until k jobs were running*, for every ``k`` up to the number of jobs the
reference strategy (stock ARC) got running:

    t_k(S) = time the k-th job of S reached Running (order of reaching Running) - origin
    ratio_k = t_k(candidate) / t_k(reference)        for k = 1 .. K(reference)

A job counts once it reached Running and did not fail. A candidate with fewer than ``k`` such
jobs *by the end of the run* is censored: its ``t_k`` is only known to be later than the
horizon (the end of the run, from the same origin), so ``ratio_k >= horizon / t_k(reference)``
and that lower bound is used, marked ``>=``. Without the horizon it would be ``inf`` even for a
job queued in the last seconds that the slower strategy would have started one second after
the end; with it, a job lost *early* (failed, never started while the reference ran it hours
before the end) still shows as a large ratio. The figure reported is ``max_k ratio_k``, its
``k``, and whether it is such a lower bound.

Where the clock starts matters. Over a whole 24 h day, ``t_k`` is dominated by when jobs
*arrive* (the 4 000th job cannot start before it is queued), so a strategy that is minutes late
in a burst still shows a ratio near 1. Two views are therefore computed:

- **whole run**: all jobs, origin = the first job's queue time (not the scenario start, so an
  idle first hour does not pad every ``t_k``).
- **bursts**: per burst window of the scenario (``at`` .. ``at + over`` of a stream's burst),
  only the jobs with that stream's labels queued inside the window, origin = the window's
  start. This is where capacity, not arrivals, sets the pace; the maximum over windows is
  reported with the window it came from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simulator.workload.service_records import Job, JobState

INF = math.inf


@dataclass(frozen=True, slots=True)
class JobTimes:
    """One job, in seconds since the run started. ``running`` is None when it never reached
    Running or failed (it never counts as running)."""

    queued: float
    running: float | None
    labels: tuple[str, ...] = ()


def job_times(jobs: Iterable[Job], start: float) -> list[JobTimes]:
    """The service's jobs of one run as :class:`JobTimes` (a failed job never counts as
    running, even if its workflow pod ran for a while)."""
    return [
        JobTimes(
            j.queued_at - start,
            None if j.running_at is None or j.state is JobState.FAILED else j.running_at - start,
            tuple(j.labels),
        )
        for j in jobs
    ]


@dataclass(frozen=True, slots=True)
class Window:
    start: float
    end: float
    labels: tuple[str, ...]

    def holds(self, job: JobTimes) -> bool:
        return self.start <= job.queued <= self.end and set(self.labels) <= set(job.labels)

    def describe(self) -> str:
        return f"{'/'.join(self.labels)} @ {self.start / 60:g} min"


@dataclass(frozen=True, slots=True)
class Ratio:
    """``max_k t_k(candidate) / t_k(reference)``; ``k`` where it occurs (1-based); ``compared``
    = K(reference). ``value`` is None when there was nothing to compare (K = 0)."""

    value: float | None
    k: int
    compared: int
    where: str = ""
    censored: bool = False  # value is a lower bound: the candidate had not run k jobs by the end


def elapsed_running(jobs: Iterable[JobTimes], origin: float) -> list[float]:
    """Sorted ``running - origin`` of the jobs that reached Running (and did not fail)."""
    return sorted(j.running - origin for j in jobs if j.running is not None)


def kth_ratio(
    candidate: Sequence[float], reference: Sequence[float], horizon: float = INF
) -> Ratio:
    """Both sorted elapsed times. k runs over the reference's running jobs. ``horizon``: the
    end of the run from the same origin (a missing candidate t_k is censored there)."""
    best: Ratio | None = None
    for k, ref in enumerate(reference, start=1):
        censored = k > len(candidate)
        cand = max(horizon, ref) if censored else candidate[k - 1]
        if ref <= 0:  # cannot happen with a positive start latency; skip rather than divide
            continue
        ratio = cand / ref
        if best is None or best.value is None or ratio > best.value:
            best = Ratio(ratio, k, len(reference), censored=censored)
    return best if best is not None else Ratio(None, 0, len(reference))


def whole_run_ratio(
    candidate: Sequence[JobTimes], reference: Sequence[JobTimes], end: float = INF
) -> Ratio:
    """All jobs; origin = the first job's queue time (the same jobs for both strategies)."""
    origin = min((j.queued for j in reference), default=0.0)
    return kth_ratio(
        elapsed_running(candidate, origin), elapsed_running(reference, origin), end - origin
    )


def burst_ratio(
    candidate: Sequence[JobTimes],
    reference: Sequence[JobTimes],
    windows: Sequence[Window],
    end: float = INF,
) -> Ratio:
    """The worst ratio over burst windows (each with its own k and origin)."""
    worst = Ratio(None, 0, 0)
    for window in windows:
        r = kth_ratio(
            elapsed_running((j for j in candidate if window.holds(j)), window.start),
            elapsed_running((j for j in reference if window.holds(j)), window.start),
            end - window.start,
        )
        if r.value is not None and (worst.value is None or r.value > worst.value):
            worst = Ratio(r.value, r.k, r.compared, window.describe(), r.censored)
    return worst


def format_ratio(r: Ratio) -> str:
    if r.value is None:
        return "-"
    value = "inf" if math.isinf(r.value) else f"{'>=' if r.censored else ''}{r.value:.2f}"
    where = f", {r.where}" if r.where else ""
    return f"{value} (k={r.k}/{r.compared}{where})"
