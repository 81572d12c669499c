"""Adaptive warm pool: how many warm pairs to keep when ``proactiveCapacity: auto``.

A job takes one free slot of advertised capacity when GitHub assigns it. The pool gets that
slot back in one of two ways, and the warm pairs are what covers the jobs that arrive in
between:

1. *The job's pods land on room a finished job freed* (most jobs on a busy day). The slot is
   still out of the pool until the job's workflow pod is bound: the ledger counts
   ``min(runner side, workflow side)``, so a runner pod without its bound workflow pod keeps
   one workflow half spoken for (the runner pod starts, registers, claims the job, and the
   container hook creates the workflow pod: about ten seconds on a warm node, minutes when the
   workflow pod waits for a node). Measured directly: the time-average number of *starting
   runners* (alive runner pods whose workflow pod does not hold a slot yet).
2. *The job's pods preempt a pair's placeholders.* The slot comes back only when a refill
   pair is READY, ``W`` after it is created (a node may have to be launched). By Little's law
   the refills in flight average ``taken rate x W``, with ``taken rate`` the pairs leaving for
   PREEMPTED per second and ``W`` the mean time from creation (QUEUED) or mend (PREEMPTED ->
   REQUESTED) to READY of the recent pairs.

So the slots out of the pool average

    L = E[starting runners] + taken rate x W

With Poisson arrivals each term is the count of an M/G/inf queue, Poisson whatever the spread
of its durations, so the mean is the right statistic (a median of ``W`` would ignore the slow
refills that need a node behind the fast ones on freed room, and those are when jobs miss);
the sum of the two is Poisson too (a preempting job is counted in both terms for its first
seconds: a little conservative). The pool is the smallest ``S`` such that more than ``S - 1``
slots are out with probability at most ``miss_probability``: ``P(Poisson(L) >= S) <=
miss_probability`` (an (S-1, S) base-stock rule), clamped to ``[minimum, maximum]``. A
time-of-day schedule entry (UTC), when one matches, replaces the estimate (also when
``proactiveCapacity`` is a fixed number).

(Why not ``job start rate x W``, the first version: it charged every job a refill although
only about one job in ten preempts a pair on the simulated ice-failover day, and it ignored
term 1, which holds a slot for every job; it missed more jobs at the same idle cost.)

:func:`warm_pairs` is pure over explicit inputs; :class:`WarmPoolWindow` is the small rolling
window the reconciler updates from each snapshot's runner and workflow pods and from committed
transition events (it never reads a clock: every call passes ``now``). The safety rules of
``desired_pairs`` apply unchanged to the result (``maxRunners`` headroom, ``maxRunners: 0``
is a hard cap).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from state_machine.events import TransitionEvent
from state_machine.states import PairState
from state_machine.table import RELEASED

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
    window: float = 180.0
    #: Target probability that a job finds no warm pair (see module doc).
    miss_probability: float = 0.25
    #: W before any pair was seen to become READY.
    default_ready_seconds: float = 60.0
    #: Quantile of the recent created -> READY durations used as W; None: their mean (what
    #: Little's law and the M/G/inf Poisson count take; see module doc).
    ready_quantile: float | None = None
    schedule: tuple[ScheduleEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class WarmPoolObservation:
    """What the estimator reads, over the last ``span`` seconds (see module doc)."""

    #: Jobs started (new runner pods): only reported, as the job start rate.
    started: int
    span: float
    ready_seconds: tuple[float, ...] = ()
    #: Time-average number of starting runners (term 1).
    starting: float = 0.0
    #: Pairs that moved to PREEMPTED (term 2's rate, times ``span``).
    taken: int = 0


@dataclass(frozen=True, slots=True)
class WarmPoolSize:
    pairs: int
    #: Why: "schedule 07:00-19:00", "auto: jobs=0.0450/s starting=0.41 ... L=0.62", "static".
    reason: str
    #: The auto estimate's L (slots expected out of the pool); None when not estimated.
    load: float | None = None


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
    policy: WarmPoolPolicy, observation: WarmPoolObservation, now: float, fleet_members: int = 1
) -> WarmPoolSize:
    """The number of warm pairs to keep now (before ``desired_pairs`` adds demand and clamps).

    ``fleet_members``: the healthy clusters of this scale set's fleet while the fleet view is
    fresh (reconciler/fleet.py). The size is then the fleet's pool, which the caller splits:
    the ``auto`` estimate sizes it for the fleet's load, taken as this cluster's times the
    members (an even split sends each about the same share of the jobs). Sized for this
    cluster's load and then split, each cluster would keep a pool for a fraction of its own
    jobs, missing far more often than ``missProbability``."""
    entry = matching_entry(policy.schedule, now)
    if entry is not None:
        return WarmPoolSize(entry.pairs, f"schedule {_hhmm(entry.start)}-{_hhmm(entry.end)}")
    if not policy.auto:
        return WarmPoolSize(policy.static_pairs, "static")
    per_second = 1.0 / max(observation.span, MIN_RATE_SPAN)
    measured = (
        mean(observation.ready_seconds)
        if policy.ready_quantile is None
        else quantile(observation.ready_seconds, policy.ready_quantile)
    )
    ready = policy.default_ready_seconds if measured is None else measured
    taken_rate = observation.taken * per_second
    load = (observation.starting + taken_rate * ready) * max(1, fleet_members)
    raw = poisson_quantile(load, policy.miss_probability)
    pairs = min(policy.maximum, max(policy.minimum, raw))
    return WarmPoolSize(
        pairs,
        load=load,
        reason=f"auto: jobs={observation.started * per_second:.4f}/s "
        f"starting={observation.starting:.2f} taken={taken_rate:.4f}/s W={ready:.1f}s "
        f"L={load:.2f}" + (f" (fleet of {fleet_members})" if fleet_members > 1 else ""),
    )


def _hhmm(second_of_day: float) -> str:
    minutes = int(second_of_day // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


class WarmPoolWindow:
    """Rolling record of job starts, starting runners, pairs taken and READY durations.

    Fed with each snapshot's runner pods (a name not seen in the previous snapshot is a job
    start) and starting-runner count (held until the next snapshot, for the time-average), and
    with committed transition events (QUEUED -> READY durations, pairs PREEMPTED). Bounded:
    samples older than the window are dropped on every call (one starting-runner sample before
    the window is kept: it holds at the window's start), the seen names are those of the latest
    snapshot, at most :data:`READY_SAMPLES` durations are kept, and a pair's creation time is
    forgotten once it becomes READY or leaves (DELETED, TIMED_OUT).
    """

    def __init__(self, window: float, *, started_at: float) -> None:
        self.window = window
        self.started_at = started_at
        self._starts: deque[float] = deque()
        self._runners: frozenset[str] | None = None
        self._starting: deque[tuple[float, int]] = deque()
        self._taken: deque[float] = deque()
        self._ready: deque[float] = deque(maxlen=READY_SAMPLES)
        self._created_at: dict[str, float] = {}

    def observe_runners(self, names: Iterable[str], now: float, *, starting: int = 0) -> None:
        """Runner pods alive in a snapshot and how many of them are starting (see module
        doc); the first snapshot only sets the baseline of job starts."""
        current = frozenset(names)
        if self._runners is not None:
            self._starts.extend(now for _ in range(len(current - self._runners)))
        self._runners = current
        self._starting.append((now, starting))

    def observe(self, events: Iterable[TransitionEvent]) -> None:
        for event in events:
            if event.target is S.QUEUED or (
                event.target is S.REQUESTED and event.source is S.PREEMPTED
            ):
                # A mend is a refill too: it starts when the missing half is requested. Left
                # out, W was sampled from new pairs only, the slow ones that need a node, and
                # the pool grew (docs/design.md#decisions: mends in the refill time).
                self._created_at[event.pair_id] = event.at
            elif event.target is S.READY:
                created = self._created_at.pop(event.pair_id, None)
                if created is not None:
                    self._ready.append(event.at - created)
            elif event.target is S.PREEMPTED:
                self._taken.append(event.at)
            elif event.target in RELEASED:
                self._created_at.pop(event.pair_id, None)

    def observe_hot(
        self, opened: Iterable[str], confirmed: Iterable[str], taken: int, now: float
    ) -> None:
        """Hot slots are the same reserve (docs/design.md#hot-runners): a slot's placeholder
        requested is a refill started, a slot confirmed (HOT) a refill done, a job landing on
        a slot a slot taken."""
        for slot_id in opened:
            self._created_at[slot_id] = now
        for slot_id in confirmed:
            created = self._created_at.pop(slot_id, None)
            if created is not None:
                self._ready.append(now - created)
        self._taken.extend([now] * taken)

    def observation(self, now: float) -> WarmPoolObservation:
        horizon = now - self.window
        for times in (self._starts, self._taken):
            while times and times[0] < horizon:
                times.popleft()
        span = min(self.window, max(0.0, now - self.started_at))
        return WarmPoolObservation(
            len(self._starts),
            span,
            tuple(self._ready),
            starting=self._mean_starting(horizon, now),
            taken=len(self._taken),
        )

    def _mean_starting(self, horizon: float, now: float) -> float:
        """Time-average of the starting-runner count over ``[horizon, now]``: each sample
        holds until the next one (the latest until ``now``); before the first, nothing is
        known, so the average covers only the time since it."""
        samples = self._starting
        while len(samples) > 1 and samples[1][0] <= horizon:
            samples.popleft()
        if not samples:
            return 0.0
        total = covered = 0.0
        ends = [*(t for t, _ in itertools.islice(samples, 1, None)), now]
        for (at, count), until in zip(samples, ends, strict=True):
            begin = max(at, horizon)
            if until > begin:
                total += count * (until - begin)
                covered += until - begin
        return total / covered if covered > 0 else float(samples[-1][1])
