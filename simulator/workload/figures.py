"""Pure functions behind the fair figures of results.json (issue 13).

**Fair queue-to-start.** A job that failed, or never reached Running before the run ended,
is infinitely late: it sorts after every job that started, so shedding load by failing jobs
cannot improve a percentile. Percentiles interpolate linearly between closest ranks (numpy's
default); a percentile that touches an infinite value is infinite. In JSON an infinite (or
undefined: no jobs at all) percentile is written ``null``; tables render it ``never``.

**Time to x% running.** ``t_k`` is the time (seconds since the run started) at which the
k-th job, in order of reaching Running, reached Running, over the jobs that did so and did
not fail. ``time_to_50pct_running`` is ``t_k`` at ``k = ceil(0.5 N)``, ``time_to_95pct_running``
at ``k = ceil(0.95 N)``, ``N`` = all jobs queued; ``null`` (never) when fewer jobs ran.

**Over-advertised episodes.** An episode is a maximal stretch of time during which a scale
set's advertised capacity exceeds what pods confirm (``advertised - min(R, W) > 0``, the same
gap as the unconfirmed slot-seconds integral). Episodes of zero length (the gap opened and
closed at the same instant) are not counted. An episode still open at the end is closed there.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

INF = math.inf
PERCENTILES = (50, 95, 99)


def interpolated(sorted_values: Sequence[float], p: float) -> float | None:
    """Linear interpolation between closest ranks; infinity-aware. None when empty."""
    if not sorted_values:
        return None
    rank = p / 100.0 * (len(sorted_values) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    lo_v, hi_v = sorted_values[low], sorted_values[high]
    frac = rank - low
    if math.isinf(lo_v) or (frac > 0 and math.isinf(hi_v)):
        return INF
    if frac == 0:
        return lo_v
    return lo_v + (hi_v - lo_v) * frac


def finite_or_none(value: float | None, digits: int = 1) -> float | None:
    """JSON form: None for infinite or undefined, else rounded."""
    if value is None or math.isinf(value):
        return None
    return round(value, digits)


def fair_summary(waits: Iterable[float]) -> dict[str, float | None]:
    """p50/p95/p99 of waits where ``math.inf`` stands for a job that never started."""
    ordered = sorted(waits)
    return {f"p{p}": finite_or_none(interpolated(ordered, p)) for p in PERCENTILES}


def time_to_fraction(running_times: Iterable[float], total: int, fraction: float) -> float | None:
    """``t_k`` for ``k = ceil(fraction * total)``; None when fewer than k jobs ran (or none)."""
    if total <= 0:
        return None
    k = max(1, math.ceil(fraction * total - 1e-9))
    ordered = sorted(running_times)
    if len(ordered) < k:
        return None
    return round(ordered[k - 1], 1)


@dataclass(slots=True)
class EpisodeTracker:
    """Turns a gap that changes at points in time into episode durations."""

    open_since: float | None = None
    durations: list[float] = field(default_factory=list)

    def update(self, t: float, gap: float) -> None:
        """The gap is ``gap`` from ``t`` on."""
        if gap > 0 and self.open_since is None:
            self.open_since = t
        elif gap <= 0 and self.open_since is not None:
            self._close(t)

    def close(self, end: float) -> None:
        if self.open_since is not None:
            self._close(end)

    def _close(self, t: float) -> None:
        start, self.open_since = self.open_since, None
        if start is not None and t > start:
            self.durations.append(t - start)


def episode_summary(durations: Iterable[float]) -> dict[str, float | int | None]:
    """count, p50, p99, max (seconds, 0.001 s) of episode durations; None when there are none."""
    ordered = sorted(durations)

    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 3)

    return {
        "count": len(ordered),
        "p50": r(interpolated(ordered, 50)),
        "p99": r(interpolated(ordered, 99)),
        "max": r(ordered[-1] if ordered else None),
    }
