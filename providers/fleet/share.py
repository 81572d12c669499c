"""The fleet view as this cluster's share of the demand it sees (docs/fleet.md).

:class:`FleetShareSource` keeps the latest read of the view (the listener polls it every
``fleetView.pollInterval``; the simulator's store hands it each answer) and answers, at the
moment decide reads demand, this cluster's share (reconciler/fleet.py: an even split across
the healthy clusters). A stale or unreadable view gives no share at once: the combined demand
goes to decide unchanged, exactly as with the view off. Each change between "sharing" and
"alone" is logged once with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from providers.fleet.prometheus import FleetReadError
from reconciler.clock import Clock
from reconciler.fleet import ClusterRow, FleetShare, FleetView, fleet_share, with_share
from reconciler.fleet_settings import FleetViewSettings
from reconciler.snapshot import Demand

log = logging.getLogger(__name__)

#: Reads the fleet's rows or raises :class:`FleetReadError`.
ReadRows = Callable[[], Awaitable[tuple[ClusterRow, ...]]]


class FleetShareSource:
    """This cluster's share of its fleet, from the latest view (module doc)."""

    def __init__(
        self,
        *,
        cluster: str,
        fleet: str,
        max_age: float,
        clock: Clock,
        on_change: Callable[[], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self._on_failure = on_failure
        self.fleet = fleet
        self.max_age = max_age
        self.clock = clock
        self._on_change = on_change
        self.view: FleetView | None = None
        self.last = FleetShare(None, "fleet view not read yet")

    def observe(self, view: FleetView) -> None:
        """A new read of the view (rows, or the error of a failed read)."""
        before = self.share().share
        self.view = view
        if self.share().share != before and self._on_change is not None:
            self._on_change()

    def share(self) -> FleetShare:
        """The share in force now; logs each change between sharing and acting alone."""
        share = fleet_share(
            self.view, cluster=self.cluster, now=self.clock.now(), max_age=self.max_age
        )
        if share.fresh != self.last.fresh or (share.fresh and share.share != self.last.share):
            if share.fresh:
                log.info(
                    "fleet %s: building for a share of %.2f of queued jobs and warm pool (%s: %s)",
                    self.fleet,
                    share.share,
                    share.reason,
                    ", ".join(share.healthy),
                )
            else:
                log.warning(
                    "fleet %s: acting alone, as with fleetView off (%s)", self.fleet, share.reason
                )
        self.last = share
        return share

    def apply(self, demand: Demand) -> Demand:
        """``demand`` as this cluster's share (unchanged while there is none)."""
        return with_share(demand, self.share())

    async def poll(self, read: ReadRows) -> None:
        try:
            rows = await read()
        except FleetReadError as exc:
            # Counted by kind where the process keeps its counters (on_failure: the metrics).
            if self._on_failure is not None:
                self._on_failure(exc.kind)
            self.observe(FleetView(error=str(exc)))
        else:
            self.observe(FleetView(rows=rows))

    async def run(self, read: ReadRows, stop: asyncio.Event, interval: float) -> None:
        """Read every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            await self.poll(read)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)


def fleet_share_source(
    settings: FleetViewSettings,
    scale_set: str,
    clock: Clock,
    on_change: Callable[[], None] | None = None,
    on_failure: Callable[[str], None] | None = None,
) -> FleetShareSource | None:
    """The share source ``fleetView`` asks for, or None while it is off."""
    if not settings.enabled or settings.cluster is None:
        return None
    return FleetShareSource(
        cluster=settings.cluster,
        fleet=settings.fleet_for(scale_set),
        max_age=settings.max_age,
        clock=clock,
        on_change=on_change,
        on_failure=on_failure,
    )
