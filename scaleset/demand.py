"""The demand a scale set's decisions read: the configured sources, combined
(providers/demand). Built before the runtime: the listener reads statistics from its first
message, before any step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from providers.demand.combine import Combine, CombinedDemand
from providers.demand.statistics import StatisticsDemand
from providers.fleet.share import FleetShareSource
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import Demand


@dataclass(frozen=True, slots=True)
class ScaleSetDemand:
    """The demand a scale set's decisions read: the configured sources, combined."""

    combined: CombinedDemand
    #: The ``statistics`` source, fed by the listener's messages and session refreshes.
    statistics: StatisticsDemand
    #: With ``fleetView`` on: this cluster's share of the fleet (providers/fleet/share.py).
    fleet: FleetShareSource | None = None

    @property
    def current(self) -> Demand:
        """The configured sources combined (providers/demand); all failing -> the floor.
        With a fresh fleet view, this cluster's share of it (unchanged while stale)."""
        combined = self.combined.current
        return combined if self.fleet is None else self.fleet.apply(combined)


def scale_set_demand(
    settings: CapacityAwareSettings,
    on_change: Callable[[], None],
    *,
    fleet: FleetShareSource | None = None,
) -> ScaleSetDemand:
    """The configured demand sources and their combination; ``on_change`` is called when a
    source's answer changes (the driver's ``DEMAND_CHANGED`` trigger, reconciler/controller.py).
    The ``statistics`` source is attached here; polled ones attach once they start. ``fleet``:
    the fleet view's share (``fleetView`` on; :func:`providers.fleet.share.fleet_share_source`)."""
    combined = CombinedDemand(
        settings.demand.resolved_sources(settings.hud.url), Combine(settings.demand.combine)
    )
    statistics = StatisticsDemand(on_change=on_change)
    if "statistics" in combined.order:
        combined.attach(statistics)
    return ScaleSetDemand(combined, statistics, fleet)
