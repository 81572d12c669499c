"""A demand source that polls something remote every interval and fails open to the floor.

The remote sources (GitHub REST, an HTTP endpoint) share this: the latest answer is
``current``; a failure makes it ``Demand(None, error)`` (decide then uses the floor); an outage
is logged once when it starts and once when it ends; a changed answer wakes the reconciler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from providers.demand import FailureMode, OnChange
from reconciler.snapshot import Demand

log = logging.getLogger(__name__)


class DemandFetchError(Exception):
    """The source could not answer; ``str()`` says why (never a credential)."""


class PolledDemand:
    """``fetch()`` returns the queued jobs or raises :class:`DemandFetchError`."""

    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(
        self,
        name: str,
        fetch: Callable[[], Awaitable[int]],
        *,
        on_change: OnChange | None = None,
    ) -> None:
        self.name = name
        self._fetch = fetch
        self._on_change = on_change
        self._failures = 0
        self._current = Demand(queued_jobs=None, error=f"{name} not polled yet", source=name)

    @property
    def current(self) -> Demand:
        return self._current

    async def poll(self) -> Demand:
        try:
            queued = await self._fetch()
        except DemandFetchError as exc:
            self._failed(str(exc))
        else:
            if self._failures:
                log.info(
                    "%s demand is back after %d failed poll(s): %d queued jobs",
                    self.name,
                    self._failures,
                    queued,
                )
            self._failures = 0
            self._set(Demand(queued_jobs=queued, source=self.name))
        return self._current

    async def run(self, stop: asyncio.Event, interval: float) -> None:
        """Poll every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            await self.poll()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)

    def _failed(self, reason: str) -> None:
        self._failures += 1
        if self._failures == 1:
            log.warning(
                "%s demand unavailable (%s); using the other sources or the configured floor",
                self.name,
                reason,
            )
        else:
            log.debug(
                "%s demand still unavailable (%d polls): %s", self.name, self._failures, reason
            )
        self._set(Demand(queued_jobs=None, error=reason, source=self.name))

    def _set(self, demand: Demand) -> None:
        changed = demand.queued_jobs != self._current.queued_jobs
        self._current = demand
        if changed and self._on_change is not None:
            self._on_change()
