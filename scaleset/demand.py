"""The demand a scale set's decisions read: the configured sources, combined
(providers/demand). Built before the runtime: the listener reads statistics from its first
message, before any step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from providers.demand.combine import Combine, CombinedDemand
from providers.demand.statistics import StatisticsDemand
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import Demand


@dataclass(frozen=True, slots=True)
class ScaleSetDemand:
    """The demand a scale set's decisions read: the configured sources, combined."""

    combined: CombinedDemand
    #: The ``statistics`` source, fed by the listener's messages and session refreshes.
    statistics: StatisticsDemand

    @property
    def current(self) -> Demand:
        """The configured sources combined (providers/demand); all failing -> the floor."""
        return self.combined.current


def scale_set_demand(
    settings: CapacityAwareSettings, on_change: Callable[[], None]
) -> ScaleSetDemand:
    """The configured demand sources and their combination; ``on_change`` is called when a
    source's answer changes (the driver's ``DEMAND_CHANGED`` trigger, reconciler/controller.py).
    The ``statistics`` source is attached here; polled ones attach once they start."""
    combined = CombinedDemand(
        settings.demand.resolved_sources(settings.hud.url), Combine(settings.demand.combine)
    )
    statistics = StatisticsDemand(on_change=on_change)
    if "statistics" in combined.order:
        combined.attach(statistics)
    return ScaleSetDemand(combined, statistics)
