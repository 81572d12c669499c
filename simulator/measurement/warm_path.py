"""The warm path, step by step: where each job's queue-to-start wait goes, from the event log.

Issue 31: on a warm cluster with room, capacity-aware started each later merge-queue batch's
jobs seconds later than stock ARC. This module splits every job's wait into the steps it goes
through, and every capacity-aware pair's life until GitHub saw it, so a bench can say which
step the seconds sit in.

**A job's steps** (milestones read from the log, each clipped to be no earlier than the one
before, so the steps of one job add up to its wait exactly):

====================  ============================================================
milestone             event
====================  ============================================================
queued                ``job_queued``
assigned              ``job_assigned`` (GitHub gave it to the scale set)
runner bound          ``pod_bound`` of the runner pod that took it (``job_started``'s
                      ``runner``)
runner Running        ``pod_running`` of that pod
registered            ``runner_registered`` of that runner
acquired              ``job_started`` (the runner took the job)
workflow created      ``pod_created`` of ``<runner>-workflow`` (the container hook)
workflow bound        ``pod_bound`` of the workflow pod
workflow Running      ``pod_running`` of the workflow pod
started               ``job_running`` (the hook read the pod Running)
====================  ============================================================

A runner pod that was up before its job was assigned (an idle runner) gives zero-length
steps: its milestones are clipped to the assignment. The step ending at a milestone is named
after it (``runner bound`` = assigned .. runner bound). Jobs that failed or never started are
counted apart and left out of the steps.

**A pair's steps** (capacity-aware only; a pair is the two placeholder pods ``<pair>-r`` and
``<pair>-w``, first creation of each): requested (the first half created) -> both bound (the
later ``pod_bound``) -> both Running (the later ``pod_running``), and apart from that chain
"header" = the first ``capacity_advertised`` at or after both were bound: the header GitHub
saw next. The ledger confirms a cpu/memory half at binding
(providers/kubernetes/observe/admission.py) and a half with device-plugin resources at Running; the
log does not say which rule applied, so both marks are given. A pair taken before a milestone never
gets the later ones; it is counted as such. "header" is an upper bound when the header did not
change at the next poll (a job finishing as the pair was confirmed leaves it equal): then the next
change is used.

**Groups.** A job is in burst ``i`` when it was queued inside the scenario's ``i``-th burst
window (``at .. at + over``), otherwise *between* bursts. For a merge queue the first batch
finds a cold pool, the later batches the previous batch's nodes.

Only the standard library is used, so a log can be read anywhere.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

JOB_STEPS = (
    "assigned",
    "runner bound",
    "runner Running",
    "registered",
    "acquired",
    "workflow created",
    "workflow bound",
    "workflow Running",
    "started",
)
PAIR_STEPS = ("both bound", "both Running", "header after bound")
PLACEHOLDER_ROLES = ("placeholder-runner", "placeholder-workflow")


@dataclass(frozen=True, slots=True)
class JobPath:
    """One job: when it was queued (s since the run started) and each step's seconds."""

    job: Any
    queued: float
    steps: tuple[float, ...]  # aligned with JOB_STEPS

    @property
    def wait(self) -> float:
        return sum(self.steps)


@dataclass(frozen=True, slots=True)
class PairPath:
    """One pair: when it was requested and the seconds of each step it reached."""

    pair: str
    requested: float
    steps: tuple[float | None, ...]  # aligned with PAIR_STEPS; None = never reached


@dataclass(frozen=True, slots=True)
class Paths:
    jobs: tuple[JobPath, ...]
    #: Queue times of the jobs that failed or never reached Running (not in ``jobs``).
    unfinished: tuple[float, ...]
    pairs: tuple[PairPath, ...]


def _first(index: dict[tuple[str, str], float], kind: str, name: str) -> float | None:
    return index.get((kind, name))


def paths(log: Iterable[Mapping[str, Any]]) -> Paths:
    """Every job's and every pair's steps from one strategy's event log."""
    events = list(log)
    first: dict[tuple[str, str], float] = {}  # (event type, pod/runner/job) -> first time
    roles: dict[str, str] = {}
    adverts: list[float] = []
    queued: dict[Any, float] = {}
    runner_of: dict[Any, str] = {}
    failed: set[Any] = set()
    for e in events:
        kind, t = e["type"], float(e["t"])
        if kind in ("pod_created", "pod_bound", "pod_running"):
            first.setdefault((kind, e["pod"]), t)
            if kind == "pod_created":
                roles.setdefault(e["pod"], e.get("role", "other"))
        elif kind == "runner_registered":
            first.setdefault((kind, e["runner"]), t)
        elif kind in ("job_assigned", "job_started", "job_running"):
            first.setdefault((kind, str(e["job"])), t)
            if kind == "job_started":
                runner_of[e["job"]] = e["runner"]
        elif kind == "job_queued":
            queued[e["job"]] = t
        elif kind == "job_failed":
            failed.add(e["job"])
        elif kind == "capacity_advertised":
            adverts.append(t)
    jobs: list[JobPath] = []
    unfinished: list[float] = []
    for job, t0 in queued.items():
        path = _job_path(first, job, t0, runner_of.get(job))
        if path is None or job in failed:
            unfinished.append(t0)
        else:
            jobs.append(path)
    return Paths(tuple(jobs), tuple(unfinished), tuple(_pair_paths(first, roles, adverts)))


def _job_path(
    first: dict[tuple[str, str], float], job: Any, t0: float, runner: str | None
) -> JobPath | None:
    key = str(job)
    if runner is None or ("job_running", key) not in first:
        return None
    workflow = f"{runner}-workflow"
    raw = (
        _first(first, "job_assigned", key),
        _first(first, "pod_bound", runner),
        _first(first, "pod_running", runner),
        _first(first, "runner_registered", runner),
        _first(first, "job_started", key),
        _first(first, "pod_created", workflow),
        _first(first, "pod_bound", workflow),
        _first(first, "pod_running", workflow),
        _first(first, "job_running", key),
    )
    steps: list[float] = []
    last = t0
    for mark in raw:
        at = last if mark is None else max(last, mark)
        steps.append(at - last)
        last = at
    return JobPath(job, t0, tuple(steps))


def _pair_paths(
    first: dict[tuple[str, str], float], roles: dict[str, str], adverts: Sequence[float]
) -> list[PairPath]:
    halves: dict[str, list[str]] = {}
    for pod, role in roles.items():
        if role in PLACEHOLDER_ROLES and pod[-2:] in ("-r", "-w"):
            halves.setdefault(pod[:-2], []).append(pod)
    out = []
    for pair, pods in halves.items():
        if len(pods) != 2:
            continue
        requested = min(first[("pod_created", p)] for p in pods)
        bound = _latest(first, "pod_bound", pods)
        running = _latest(first, "pod_running", pods)
        header = None if bound is None else _next_at_or_after(adverts, bound)
        steps: list[float | None] = []
        prev: float | None = requested
        for mark in (bound, running):
            # A pair taken or lost before a milestone never reaches the later ones either.
            if prev is None or mark is None:
                prev = None
                steps.append(None)
                continue
            at = max(prev, mark)
            steps.append(at - prev)
            prev = at
        steps.append(None if header is None or bound is None else header - bound)
        out.append(PairPath(pair, requested, tuple(steps)))
    return out


def _latest(first: dict[tuple[str, str], float], kind: str, pods: list[str]) -> float | None:
    times = [first.get((kind, p)) for p in pods]
    return None if any(t is None for t in times) else max(t for t in times if t is not None)


def _next_at_or_after(times: Sequence[float], t: float) -> float | None:
    # ``times`` is in log order, hence sorted.
    i = bisect_left(times, t)
    return times[i] if i < len(times) else None


# --- groups -------------------------------------------------------------------------------


def group_of(queued: float, windows: Sequence[tuple[float, float]]) -> int | None:
    """The index of the burst window ``queued`` falls in, or None (between bursts)."""
    for i, (start, end) in enumerate(windows):
        if start <= queued <= end:
            return i
    return None


@dataclass(frozen=True, slots=True)
class StepSummary:
    """Per step: mean seconds (they add up to the mean wait) and p50 seconds."""

    jobs: int
    mean: tuple[float, ...]
    p50: tuple[float, ...]
    wait_p50: float
    wait_mean: float


def summarize(jobs: Sequence[JobPath]) -> StepSummary | None:
    if not jobs:
        return None
    columns = list(zip(*(j.steps for j in jobs), strict=True))
    waits = [j.wait for j in jobs]
    return StepSummary(
        len(jobs),
        tuple(statistics.fmean(c) for c in columns),
        tuple(statistics.median(c) for c in columns),
        statistics.median(waits),
        statistics.fmean(waits),
    )


@dataclass(frozen=True, slots=True)
class PairSummary:
    """Per pair step: how many pairs reached it, and their p50 / mean seconds."""

    pairs: int
    reached: tuple[int, ...]
    p50: tuple[float | None, ...]
    mean: tuple[float | None, ...]


def summarize_pairs(pairs: Sequence[PairPath]) -> PairSummary:
    reached, p50, mean = [], [], []
    for i in range(len(PAIR_STEPS)):
        got = [s for p in pairs if (s := p.steps[i]) is not None]
        reached.append(len(got))
        p50.append(statistics.median(got) if got else None)
        mean.append(statistics.fmean(got) if got else None)
    return PairSummary(len(pairs), tuple(reached), tuple(p50), tuple(mean))


def batch_p50s(
    found: Paths, windows: Sequence[tuple[float, float]]
) -> tuple[list[float | None], float | None]:
    """Fair median wait per burst window and between bursts: a job that failed or never
    started is infinitely late; None where that median is infinite or the group is empty."""
    per: list[list[float]] = [[] for _ in windows]
    between: list[float] = []
    waits = [(j.queued, j.wait) for j in found.jobs]
    waits += [(q, math.inf) for q in found.unfinished]
    for queued, wait in waits:
        g = group_of(queued, windows)
        (between if g is None else per[g]).append(wait)
    return [_finite_median(w) for w in per], _finite_median(between)


def _finite_median(values: list[float]) -> float | None:
    if not values:
        return None
    m = statistics.median(values)
    return None if math.isinf(m) else m
