"""Statistics while blind: refresh the message session when no message can bring them.

The ``statistics`` demand source reads ``totalAvailableJobs`` from the statistics that every
message carries (docs/protocol.md#statistics). Messages only come when something happens to this
scale set's jobs, so while every advertised slot is taken (0 advertised at scale-to-zero, or all
slots assigned) a newly queued job produces no message and the listener would never learn of it.
A session refresh (``PATCH .../sessions/{id}``, docs/protocol.md#sessions) answers with the session
and its current statistics; ARC itself only refreshes on a 401.

Rules, one tick every ``interval`` seconds (``demand.statisticsRefresh``; 0 = off), or every
``busy_interval`` (``demand.statisticsRefreshBusy``) if that is shorter:

1. Nothing before the first statistics (the session's own, observed when the listener starts).
2. Refresh only when :func:`providers.demand.statistics.needs_refresh` says so: the latest
   statistics are at least ``interval`` old (``busy_interval`` while jobs are assigned: a
   batch in flight) and no slot is free (the header the next poll
   sends <= ``totalAssignedJobs``). With a free slot a new job is assigned at once and its
   message brings the statistics, so a busy or warm listener makes no extra request.
3. The answer's statistics go to the demand source like a message's (which wakes the
   reconciler when ``totalAvailableJobs`` changed). The listener loop's own statistics
   (ARC's scaling input, ``latest``) are left alone: scaling stays exactly ARC's.
4. A failed refresh is logged (once per outage as a warning, then at debug), counted, and
   retried after a back-off that doubles up to :data:`MAX_BACKOFF`; the loop is never
   disturbed (its own 401 path refreshes the session by itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from providers.actions.errors import ActionsError
from providers.actions.models import Statistics
from providers.backoff import Backoff
from providers.demand.statistics import needs_refresh, refresh_tick
from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

#: Longest wait between refresh attempts while they fail.
MAX_BACKOFF = 60.0


class RefreshableSession(Protocol):
    @property
    def is_open(self) -> bool: ...

    async def refresh_statistics(self) -> Statistics | None: ...


class Advertised(Protocol):
    @property
    def value(self) -> int: ...


class RefreshMetrics(Protocol):
    def record_statistics_refresh(self, *, ok: bool) -> None: ...


class StatisticsRefresher:
    """See the module docstring. :meth:`observe` is the listener loop's ``on_statistics``."""

    def __init__(
        self,
        session: RefreshableSession,
        gate: Advertised,
        forward: Callable[[Statistics], None],
        *,
        interval: float,
        busy_interval: float | None = None,
        metrics: RefreshMetrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.session = session
        self.gate = gate
        self.forward = forward
        self.interval = interval
        self.busy_interval = busy_interval
        self.metrics = metrics
        self._clock = clock
        self._latest: Statistics | None = None
        self._latest_at = 0.0
        self._failures = 0
        self.refreshes = 0

    def observe(self, stats: Statistics) -> None:
        """Statistics from the session or a message (and from our own refreshes)."""
        self._latest = stats
        self._latest_at = self._clock.monotonic()
        self.forward(stats)

    def due(self) -> bool:
        """Rules 1 and 2."""
        latest = self._latest
        if latest is None or not self.session.is_open:
            return False
        return needs_refresh(
            advertised=self.gate.value,
            assigned_jobs=latest.total_assigned_jobs,
            age=self._clock.monotonic() - self._latest_at,
            interval=self.interval,
            busy_interval=self.busy_interval,
        )

    async def tick(self) -> bool:
        """One check; True when a refresh was made and its statistics observed."""
        if not self.due():
            return False
        try:
            stats = await self.session.refresh_statistics()
        except ActionsError as exc:
            self._failed(exc)
            return False
        self._record(ok=True)
        if self._failures:
            log.info("statistics refresh works again after %d failure(s)", self._failures)
        self._failures = 0
        self.refreshes += 1
        if stats is not None:
            self.observe(stats)
        return True

    def next_delay(self) -> float:
        """The tick (the shorter interval), doubled per consecutive failure up to
        :data:`MAX_BACKOFF`."""
        tick = refresh_tick(self.interval, self.busy_interval)
        if not self._failures:
            return tick
        return Backoff(tick, MAX_BACKOFF).delay(self._failures)

    async def run(self, stop: asyncio.Event) -> None:
        """Tick every :meth:`next_delay` seconds until ``stop`` is set (off when interval <= 0)."""
        if self.interval <= 0:
            return
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.next_delay())
            if stop.is_set():
                return
            await self.tick()

    def _failed(self, exc: ActionsError) -> None:
        self._failures += 1
        self._record(ok=False)
        if self._failures == 1:
            log.warning(
                "statistics refresh failed (%s); demand from statistics may lag until it "
                "recovers, retrying with back-off",
                exc,
            )
        else:
            log.debug("statistics refresh still failing (%d): %s", self._failures, exc)

    def _record(self, *, ok: bool) -> None:
        if self.metrics is not None:
            self.metrics.record_statistics_refresh(ok=ok)


__all__ = ["MAX_BACKOFF", "StatisticsRefresher"]
