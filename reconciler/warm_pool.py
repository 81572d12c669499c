"""Adaptive warm pool: how many warm pairs to keep when ``proactiveCapacity: auto``.

Every job this scale set starts takes one slot of advertised capacity, i.e. one READY pair
(its runner pod preempts the placeholder, or lands on room the pair proved free), and the
pool is refilled by a new pair that needs some time to become READY (a node may have to be
launched). Jobs that arrive while the refills are on their way find no warm pair and wait. By
Little's law the number of refills in flight is, on average,

    L = lambda * W

with ``lambda`` the rate at which this scale set starts jobs (new runner pods observed) and
``W`` the mean time a pair takes from creation (QUEUED) to READY over the recent pairs. With
Poisson arrivals the number of refills in flight is Poisson with mean ``lambda * E[W]``
whatever the distribution of ``W`` (an M/G/inf queue), so the mean is the right statistic: a
median ignores the slow refills (a node to launch) behind the fast ones (room freed by a
finished job), and those slow ones are when jobs miss. (Counting READY -> PREEMPTED
transitions instead undercounts badly: in the simulated day most runner pods land on nodes freed by
finished jobs, and only about one job in ten preempts a placeholder.)

Arrivals are bursty (roughly Poisson), so keeping ``L`` pairs would leave a job without a warm
pair about half the time. The pool is the smallest ``S`` such that the number of refills in
flight exceeds it with probability at most ``miss_probability``:
``P(Poisson(L) >= S) <= miss_probability`` (an (S-1, S) base-stock rule). The result is
clamped to ``[minimum, maximum]``. A time-of-day schedule entry (UTC), when one matches,
replaces the estimate (also when ``proactiveCapacity`` is a fixed number).

:func:`warm_pairs` is pure over explicit inputs; :class:`WarmPoolWindow` is the small rolling
window the reconciler updates from each snapshot's runner pods and from committed transition
events (it never reads a clock: every call passes ``now``). The safety rules of
``desired_pairs`` apply unchanged to the result (``maxRunners`` headroom, ``maxRunners: 0``
is a hard cap).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from state_machine.events import TransitionEvent
from state_machine.states import PairState

S = PairState
DAY = 86_400.0
#: Durations kept to estimate W (the newest ones; old ones describe another cluster state).
READY_SAMPLES = 64
#: The start rate is never computed over less than this much history, so the first jobs
#: after a (re)start do not look like a huge rate.
MIN_RATE_SPAN = 120.0


@dataclass(frozen=True, slots=True)
class ScheduleEntry:
    """From ``start`` to ``end`` (seconds since midnight UTC; wraps when end < start)."""

    start: float
    end: float
    pairs: int

    def matches(self, second_of_day: float) -> bool:
        if self.start <= self.end:
            return self.start <= second_of_day < self.end
        return second_of_day >= self.start or second_of_day < self.end


@dataclass(frozen=True, slots=True)
class WarmPoolPolicy:
    """How the warm pool is sized (built from the settings; see module doc)."""

    #: False: the static ``proactiveCapacity`` (only the schedule can override it).
    auto: bool = True
    static_pairs: int = 1
    minimum: int = 0
    maximum: int = 20
    #: Job starts are counted over this many seconds.
    window: float = 900.0
    #: Target probability that a job finds no warm pair (see module doc).
    miss_probability: float = 0.05
    #: W before any pair was seen to become READY.
    default_ready_seconds: float = 60.0
    #: Quantile of the recent created -> READY durations used as W; None: their mean (what
    #: Little's law and the M/G/inf Poisson count take; see module doc).
    ready_quantile: float | None = None
    schedule: tuple[ScheduleEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class WarmPoolObservation:
    """What the estimator reads: jobs started in the last ``span`` seconds, READY times."""

    started: int
    span: float
    ready_seconds: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class WarmPoolSize:
    pairs: int
    #: Why: "schedule 07:00-19:00", "auto: lambda=0.0450/s W=42.0s L=1.89", "static".
    reason: str


def quantile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank quantile (no interpolation: W is a duration that happened)."""
    ordered = sorted(values)
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def poisson_quantile(mean: float, miss_probability: float) -> int:
    """Smallest ``s`` with ``P(Poisson(mean) >= s) <= miss_probability`` (0 for mean 0)."""
    if mean <= 0:
        return 0
    term = math.exp(-mean)  # P(N = 0)
    below = 0.0  # P(N < s)
    s = 0
    while 1.0 - below > miss_probability and s < _QUANTILE_LIMIT:
        below += term
        s += 1
        term *= mean / s
    return s


#: Loop bound of :func:`poisson_quantile` (a pool larger than this is never useful).
_QUANTILE_LIMIT = 10_000


def matching_entry(schedule: Iterable[ScheduleEntry], now: float) -> ScheduleEntry | None:
    """The first schedule entry covering ``now``'s time of day (UTC), if any."""
    second_of_day = now % DAY
    for entry in schedule:
        if entry.matches(second_of_day):
            return entry
    return None


def warm_pairs(
    policy: WarmPoolPolicy, observation: WarmPoolObservation, now: float
) -> WarmPoolSize:
    """The number of warm pairs to keep now (before ``desired_pairs`` adds demand and clamps)."""
    entry = matching_entry(policy.schedule, now)
    if entry is not None:
        return WarmPoolSize(entry.pairs, f"schedule {_hhmm(entry.start)}-{_hhmm(entry.end)}")
    if not policy.auto:
        return WarmPoolSize(policy.static_pairs, "static")
    rate = observation.started / max(observation.span, MIN_RATE_SPAN)
    measured = (
        mean(observation.ready_seconds)
        if policy.ready_quantile is None
        else quantile(observation.ready_seconds, policy.ready_quantile)
    )
    ready = policy.default_ready_seconds if measured is None else measured
    load = rate * ready
    raw = poisson_quantile(load, policy.miss_probability)
    pairs = min(policy.maximum, max(policy.minimum, raw))
    return WarmPoolSize(pairs, f"auto: lambda={rate:.4f}/s W={ready:.1f}s L={load:.2f}")


def _hhmm(second_of_day: float) -> str:
    minutes = int(second_of_day // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


class WarmPoolWindow:
    """Rolling record of job starts and READY durations.

    Fed with the runner pods of each snapshot (a name not seen in the previous snapshot is a
    job start) and with committed transition events (REQUESTED -> READY durations). Bounded:
    start times older than the window are dropped on every call, the seen names are those of
    the latest snapshot, at most :data:`READY_SAMPLES` durations are kept, and a pair's
    creation time is forgotten once it becomes READY or leaves (DELETED, TIMED_OUT).
    """

    def __init__(self, window: float, *, started_at: float) -> None:
        self.window = window
        self.started_at = started_at
        self._starts: deque[float] = deque()
        self._runners: frozenset[str] | None = None
        self._ready: deque[float] = deque(maxlen=READY_SAMPLES)
        self._created_at: dict[str, float] = {}

    def observe_runners(self, names: Iterable[str], now: float) -> None:
        """Runner pods alive in a snapshot; the first snapshot only sets the baseline."""
        current = frozenset(names)
        if self._runners is not None:
            self._starts.extend(now for _ in range(len(current - self._runners)))
        self._runners = current

    def observe(self, events: Iterable[TransitionEvent]) -> None:
        for event in events:
            if event.target is S.QUEUED:
                self._created_at[event.pair_id] = event.at
            elif event.target is S.READY:
                created = self._created_at.pop(event.pair_id, None)
                if created is not None:
                    self._ready.append(event.at - created)
            elif event.target in (S.DELETED, S.TIMED_OUT):
                self._created_at.pop(event.pair_id, None)

    def observation(self, now: float) -> WarmPoolObservation:
        horizon = now - self.window
        while self._starts and self._starts[0] < horizon:
            self._starts.popleft()
        span = min(self.window, max(0.0, now - self.started_at))
        return WarmPoolObservation(len(self._starts), span, tuple(self._ready))
