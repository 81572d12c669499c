"""The fastest a job on a hot slot can start in the simulated world, whatever the listener does.

A job that lands on a hot slot (a registered idle runner beside a Running workflow
placeholder) still goes through three steps that belong to the runner, the container hook
and the kubelet, not to the listener:

1. JobStarted -> workflow pod created: "Set up job" and the hook's prepare_job, drawn from
   ``arc.hook_delay`` (:class:`simulator.workload.arc.ArcTimings`);
2. created -> Running: the pod preempts the slot's placeholder at once (grace 0) and the
   kubelet starts it: with the job image already on the node (the best case), after the
   registry's round trip of its ``Always`` policy (``latencies.image_resolve``, the image
   being ``:latest``; :mod:`simulator.cluster.images`) and ``latencies.pod_start``
   (:mod:`simulator.cluster.kubelet`);
3. Running -> the job sees it: the hook reads the phase only on its ``waitForPodPhases``
   back-off (:func:`simulator.workload.hook.poll_schedule`: at 0, 1, 3, 7, 15 ... s after
   creating the pod), so the job starts at the first read at or after the pod runs.

With everything before JobStarted taking no time (the job assigned the moment it is queued,
the idle runner's long poll answering at once), the wait is ``H + R(K)``: ``H`` the hook
delay, ``K`` the pod start, ``R(K)`` the first read at or after ``K``. The draws are
uniform and independent (``K`` the sum of two), so the distribution is exact:
:func:`hot_floor_quantile` solves ``P(H + R(K) <= x) = q`` by bisection. The bench prints it
beside the measured hot-slot p50: what is left above it is the listener's (or the service's)
part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from simulator.workload.hook import poll_schedule


@dataclass(frozen=True, slots=True)
class Uniform:
    """A delay drawn uniformly from ``[low, high]`` (``low == high``: a fixed delay)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError(f"a delay range must satisfy 0 <= low <= high, got {self}")

    def cdf(self, x: float) -> float:
        if x < self.low:
            return 0.0
        if x >= self.high:
            return 1.0
        return (x - self.low) / (self.high - self.low)


@dataclass(frozen=True, slots=True)
class UniformSum:
    """The sum of two independent uniform delays (a registry round trip, then a start)."""

    first: Uniform
    second: Uniform

    @property
    def high(self) -> float:
        return self.first.high + self.second.high

    def cdf(self, x: float) -> float:
        a, b = self.first, self.second
        wa, wb = a.high - a.low, b.high - b.low
        if wa == 0:
            return b.cdf(x - a.low)
        if wb == 0:
            return a.cdf(x - b.low)

        def g(t: float) -> float:  # the integral of the integral of a unit step
            return max(t, 0.0) ** 2 / 2

        area = (
            g(x - a.low - b.low) - g(x - a.high - b.low) - g(x - a.low - b.high)
            + g(x - a.high - b.high)
        )  # fmt: skip
        return min(1.0, max(0.0, area / (wa * wb)))


class Delay(Protocol):
    @property
    def high(self) -> float: ...

    def cdf(self, x: float) -> float: ...


def read_weights(start: Delay, reads: Sequence[float]) -> list[tuple[float, float]]:
    """(read offset, probability that it is the first read at or after the pod runs), for
    every read the pod's start can fall before. A start after the last read has no weight
    here (the job fails at the prepare-job timeout; with the default 600 s that is beyond
    any pod start the world draws)."""
    out, before = [], 0.0
    for at in reads:
        upto = start.cdf(at)
        if upto > before:
            out.append((at, upto - before))
        before = upto
    return out


def hot_floor_cdf(x: float, hook: Uniform, start: Delay, reads: Sequence[float]) -> float:
    """``P(H + R(K) <= x)``."""
    return sum(w * hook.cdf(x - at) for at, w in read_weights(start, reads))


def hot_floor_quantile(q: float, hook: Uniform, start: Delay, *, timeout: float = 600.0) -> float:
    """The ``q`` quantile of a hot-slot job's wait when nothing before JobStarted takes time
    (seconds, to 1 ms)."""
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    reads = poll_schedule(timeout).reads
    lo, hi = 0.0, hook.high + reads[-1]
    if hot_floor_cdf(hi, hook, start, reads) < q:
        raise ValueError(
            f"the pod starts after the hook's last read too often for a {q} quantile "
            f"(start {start}, last read {reads[-1]} s)"
        )
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if hot_floor_cdf(mid, hook, start, reads) >= q:
            hi = mid
        else:
            lo = mid
    return hi
