"""Demand from the scale set's own statistics (the default source: nothing to configure).

Every message of the long poll carries the scale set's statistics (PROTOCOL §3.3). Jobs that
match the scale set's labels but are not assigned to it yet are ``totalAvailableJobs``: with
capacity gated by ``X-ScaleSetMaxCapacity`` they wait in GitHub's queue until the scale set
advertises room, so they are exactly the jobs a new placeholder pair would serve.

The source is fed by the listener loop (:meth:`observe`) and reacts at message speed: a change
calls ``on_change`` so the reconciler runs without waiting for its periodic fallback.
Before the first statistics arrive it reports an error, so decide falls back to the floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from providers.demand import FailureMode, OnChange
from reconciler.snapshot import Demand

NAME = "statistics"


@dataclass(frozen=True, slots=True)
class StatisticsView:
    """The statistics fields this source reads (any object with these attributes will do)."""

    total_available_jobs: int
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0


class StatisticsDemand:
    """Queued jobs = ``totalAvailableJobs`` of the latest statistics."""

    name = NAME
    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, on_change: OnChange | None = None) -> None:
        self._on_change = on_change
        self._current = Demand(queued_jobs=None, error="no statistics received yet", source=NAME)

    @property
    def current(self) -> Demand:
        return self._current

    def observe(self, total_available_jobs: int) -> None:
        """Record the latest ``totalAvailableJobs``; wake the reconciler if it changed."""
        queued = max(0, int(total_available_jobs))
        if self._current.queued_jobs == queued and self._current.error is None:
            return
        self._current = Demand(queued_jobs=queued, source=NAME)
        if self._on_change is not None:
            self._on_change()

    def observe_statistics(self, stats: object) -> None:
        """Accept a wire ``Statistics`` model (or anything with ``total_available_jobs``)."""
        self.observe(int(getattr(stats, "total_available_jobs", 0) or 0))
