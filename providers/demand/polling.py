"""A demand source that polls something remote every interval and fails open to the floor.

Every remote source (HUD, GitHub REST, an HTTP endpoint) is one of these around its own fetch
function: the latest answer is ``current``; a failure makes it ``Demand(None, error)`` (decide
then uses the floor); an outage is logged once when it starts and once when it ends; a changed
answer wakes the reconciler. An unexpected exception from the fetch (a bug, a library error) is
treated like an outage, not allowed to end the poller with demand frozen at its last value: its
traceback is logged once and it is counted as ``internal``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from providers.demand import FailureMode, OnChange
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.snapshot import Demand

log = logging.getLogger(__name__)

#: ``observe(duration_seconds, error_kind)`` per request; error_kind None on success.
RequestObserver = Callable[[float, "str | None"], None]


class DemandFetchError(Exception):
    """The source could not answer; ``str()`` says why (never a credential), ``kind`` is the
    metrics label of the failure (timeout, http, malformed, ...)."""

    def __init__(self, reason: str, *, kind: str = "error") -> None:
        super().__init__(reason)
        self.kind = kind


class PolledDemand:
    """``fetch()`` returns the queued jobs or raises :class:`DemandFetchError`.

    ``label`` names the source in logs (default: ``name``); ``detail`` is appended to the
    recovery line (e.g. the labels asked for); ``logger`` is the source's own module logger.
    """

    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(
        self,
        name: str,
        fetch: Callable[[], Awaitable[int]],
        *,
        on_change: OnChange | None = None,
        observe: RequestObserver | None = None,
        clock: Clock = SYSTEM_CLOCK,
        label: str | None = None,
        detail: str = "",
        logger: logging.Logger = log,
    ) -> None:
        self.name = name
        self._fetch = fetch
        self._on_change = on_change
        self._observe = observe
        self._clock = clock
        self._label = label or name
        self._detail = detail
        self._log = logger
        self._failures = 0
        self._unexpected = 0
        self._current = Demand(queued_jobs=None, error=f"{self._label} not polled yet", source=name)

    @property
    def current(self) -> Demand:
        return self._current

    async def poll(self) -> Demand:
        started = self._clock.monotonic()
        try:
            queued = await self._fetch()
        except DemandFetchError as exc:
            self._record(started, exc.kind)
            self._failed(str(exc))
        except Exception as exc:  # supervision: see the module doc
            self._record(started, "internal")
            self._unexpected += 1
            if self._unexpected == 1:
                self._log.exception(
                    "%s poll failed unexpectedly; using the fallback and polling on", self._label
                )
            self._failed(f"internal: {type(exc).__name__}: {exc}")
        else:
            self._record(started, None)
            if self._failures:
                self._log.info(
                    "%s demand is back after %d failed poll(s): %d queued jobs%s",
                    self._label,
                    self._failures,
                    queued,
                    self._detail,
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
            self._log.warning(
                "%s demand unavailable (%s); using the other sources or the configured floor "
                "until it recovers",
                self._label,
                reason,
            )
        else:
            self._log.debug(
                "%s demand still unavailable (%d polls): %s", self._label, self._failures, reason
            )
        self._set(Demand(queued_jobs=None, error=reason, source=self.name))

    def _set(self, demand: Demand) -> None:
        changed = demand.queued_jobs != self._current.queued_jobs
        self._current = demand
        if changed and self._on_change is not None:
            self._on_change()

    def _record(self, started: float, error_kind: str | None) -> None:
        if self._observe is not None:
            self._observe(self._clock.monotonic() - started, error_kind)
