"""Job arrivals: which CI jobs are queued when, with which labels and how long they run.

Three sources, merged into one time-ordered list before the run starts (so every strategy of
a scenario sees exactly the same jobs):

- a Poisson stream with a piecewise-constant rate schedule (jobs per hour from a given
  offset on), e.g. quiet nights and busy days;
- bursts: ``count`` jobs spread uniformly over ``over`` seconds from ``at``;
- a CSV trace with columns ``queue_time`` (seconds since the start), ``labels`` (separated by
  ``;`` or spaces) and ``duration`` (seconds), optionally ``name`` and ``repository``.

Durations are log-normal around a median (``sigma`` is the spread of the log), clipped to
``[min, max]``. Offsets are seconds since the world's start; the Actions service turns them
into virtual epoch times.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


class TraceError(ValueError):
    """A CSV trace line is unusable; the message names the file, the line and the reason."""


@dataclass(frozen=True, slots=True)
class DurationDist:
    median: float
    sigma: float = 0.5
    low: float = 30.0
    high: float = 6 * 3600.0

    def draw(self, rng: random.Random) -> float:
        value = rng.lognormvariate(math.log(self.median), self.sigma) if self.sigma else self.median
        return round(min(self.high, max(self.low, value)), 1)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job to queue: ``at`` is seconds since the world started."""

    at: float
    labels: tuple[str, ...]
    duration: float
    name: str = "build"
    repository: str = "acme/app"


@dataclass(frozen=True, slots=True)
class RateStep:
    """From ``start`` (seconds since the start) on, ``per_hour`` jobs arrive on average."""

    start: float
    per_hour: float


def poisson_stream(
    rng: random.Random,
    schedule: Sequence[RateStep],
    *,
    until: float,
    labels: tuple[str, ...],
    duration: DurationDist,
    name: str,
    repository: str,
) -> list[JobSpec]:
    """Arrivals of a Poisson process whose rate is piecewise constant (memoryless per step)."""
    steps = sorted(schedule, key=lambda s: s.start)
    jobs: list[JobSpec] = []
    for i, step in enumerate(steps):
        end = min(until, steps[i + 1].start if i + 1 < len(steps) else until)
        if step.per_hour <= 0 or step.start >= end:
            continue
        rate = step.per_hour / 3600.0
        t = step.start
        while True:
            t += rng.expovariate(rate)
            if t >= end:
                break
            jobs.append(JobSpec(round(t, 3), labels, duration.draw(rng), name, repository))
    return jobs


def burst(
    rng: random.Random,
    *,
    at: float,
    count: int,
    over: float,
    labels: tuple[str, ...],
    duration: DurationDist,
    name: str,
    repository: str,
) -> list[JobSpec]:
    offsets = sorted(at + (rng.uniform(0.0, over) if over > 0 else 0.0) for _ in range(count))
    return [JobSpec(round(t, 3), labels, duration.draw(rng), name, repository) for t in offsets]


def load_trace(path: Path, *, default_labels: tuple[str, ...] = ()) -> list[JobSpec]:
    """Read a CSV trace (see module doc); :class:`TraceError` names file, line and reason."""
    jobs: list[JobSpec] = []
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = {"queue_time", "duration"} - set(reader.fieldnames or ())
        if missing:
            raise TraceError(
                f"{path}: line 1: missing column(s) {', '.join(sorted(missing))}; "
                "expected queue_time,labels,duration[,name,repository]"
            )
        for row in reader:
            line = reader.line_num
            try:
                at = float(row["queue_time"])
                duration = float(row["duration"])
            except (TypeError, ValueError):
                raise TraceError(
                    f"{path}: line {line}: queue_time and duration must be numbers of seconds "
                    f"(got {row.get('queue_time')!r}, {row.get('duration')!r})"
                ) from None
            if at < 0 or duration <= 0:
                raise TraceError(
                    f"{path}: line {line}: queue_time must be >= 0 and duration > 0 "
                    f"(got {at}, {duration})"
                )
            raw = (row.get("labels") or "").replace(";", " ").split()
            labels = tuple(raw) or default_labels
            if not labels:
                raise TraceError(f"{path}: line {line}: no labels and the stream sets none")
            jobs.append(
                JobSpec(
                    round(at, 3),
                    labels,
                    round(duration, 1),
                    row.get("name") or "trace-job",
                    row.get("repository") or "acme/app",
                )
            )
    return jobs


def merge(streams: Iterable[Sequence[JobSpec]]) -> list[JobSpec]:
    """All jobs in queue order; ties keep the order of the streams (stable, deterministic)."""
    tagged = [
        (job.at, s, i, job) for s, stream in enumerate(streams) for i, job in enumerate(stream)
    ]
    tagged.sort(key=lambda item: item[:3])
    return [job for *_, job in tagged]
