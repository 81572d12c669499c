"""Demand from the scale set's own statistics (the default source: nothing to configure).

Every message of the long poll carries the scale set's statistics (docs/protocol.md#statistics).
Jobs that match the scale set's labels and no scale set has acquired yet are ``totalAvailableJobs``:
with capacity gated by ``X-ScaleSetMaxCapacity`` they wait in GitHub's queue until the scale set
advertises room, so they are exactly the jobs a new placeholder pair would serve.

The source is fed by the listener loop (:meth:`observe`) and reacts at message speed: a change
calls ``on_change`` so the reconciler runs without waiting for its periodic fallback.
Before the first statistics arrive it reports an error, so decide falls back to the floor.

Messages only come when something happens to *this* scale set's jobs. While every advertised
slot is taken (0 advertised at scale-to-zero, or all slots assigned), a newly queued job changes
nothing the broker would tell us, so the statistics go stale exactly when they matter. Then the
listener refreshes its message session (PATCH, docs/protocol.md#sessions: the answer carries
statistics) every ``demand.statisticsRefresh`` seconds (``demand.statisticsRefreshBusy`` while
jobs are assigned); :func:`needs_refresh` is that rule, shared
by the listener (listener/arc/statistics_refresh.py) and the simulated world.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from providers.actions.models import Statistics
from providers.demand import FailureMode, OnChange
from reconciler.snapshot import Demand

NAME = "statistics"


@dataclass(frozen=True, slots=True)
class StatisticsView:
    """The statistics fields this source reads (any object with these attributes will do)."""

    total_available_jobs: int
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0


def needs_refresh(
    *,
    advertised: int,
    assigned_jobs: int,
    age: float,
    interval: float,
    busy_interval: float | None = None,
) -> bool:
    """True when the statistics should be read by a session refresh now.

    1. ``interval`` <= 0 turns the refresh off.
    2. The interval in force is ``busy_interval`` while jobs are assigned to the scale set
       (a batch in flight: the next job is likely, and while every slot is taken only a
       refresh shows it), else ``interval`` (None: ``interval`` always).
    3. Fresh enough (``age`` below that interval): a message or a refresh carried them.
    4. Blind: ``advertised <= assigned_jobs``: no free slot, so a newly queued job would not
       be assigned here and no message would carry the news. With a free slot the broker
       assigns the job at once and its ``JobAvailable`` message brings new statistics.
    """
    if interval <= 0:
        return False
    if busy_interval is not None and assigned_jobs > 0:
        interval = busy_interval
    if age < interval:
        return False
    return advertised <= assigned_jobs


def refresh_tick(interval: float, busy_interval: float | None) -> float:
    """How often :func:`needs_refresh` is asked: the shorter of the two intervals; 0 (off)
    when ``interval`` is 0."""
    if interval <= 0:
        return 0.0
    return interval if busy_interval is None else min(interval, busy_interval)


class StatisticsDemand:
    """Queued jobs = ``totalAvailableJobs`` of the latest statistics."""

    name = NAME
    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, on_change: OnChange | None = None) -> None:
        self._on_change = on_change
        self._current = Demand(queued_jobs=None, error="no statistics received yet", source=NAME)
        self._departures = 0
        self._before_departures: list[Callable[[], None]] = []

    @property
    def current(self) -> Demand:
        return self._current

    @property
    def departures(self) -> int:
        """Jobs seen leaving the queue so far: the sum of every fall of ``totalAvailableJobs``
        between two statistics (assigned here or elsewhere, or cancelled). A polled source's
        answer still counts them until its next poll (:class:`~providers.demand.combine.
        CombinedDemand` takes them off it)."""
        return self._departures

    def before_departures(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` each time, just before :attr:`departures` grows (so a polled
        answer that came before the fall is dated before it)."""
        self._before_departures.append(callback)

    def observe(self, total_available_jobs: int) -> None:
        """Record the latest ``totalAvailableJobs``; wake the reconciler if it changed."""
        queued = max(0, int(total_available_jobs))
        if self._current.queued_jobs == queued and self._current.error is None:
            return
        before = self._current.queued_jobs
        if before is not None and queued < before:
            for callback in self._before_departures:
                callback()
            self._departures += before - queued
        self._current = Demand(queued_jobs=queued, source=NAME)
        if self._on_change is not None:
            self._on_change()

    def observe_statistics(self, stats: Statistics) -> None:
        """Accept a wire ``Statistics`` model (a message's or a session refresh's)."""
        self.observe(stats.total_available_jobs)
