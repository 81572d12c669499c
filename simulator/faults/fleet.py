"""The fleet's shared metric store under a fault plan: ``fleet_store_down``.

The store (:class:`simulator.driver.fleet_store.FleetStore`) exists only in a world where a
capacity-aware scale set has ``fleetView`` on. In any other world there is nothing to take
down, so :func:`fleet_store_handlers` gives no handler and :class:`FaultScheduler` lists the
fault in ``skipped`` (as it lists ``actions_*`` faults, which need HTTP): a report says it
was not applied, never silently.
"""

from __future__ import annotations

import math
from typing import Protocol

from simulator.driver.fleet_store import FleetStore
from simulator.faults.plan import Fault, FaultKind
from simulator.faults.schedule import FaultHandler


class HasFleetStore(Protocol):
    """What the handlers need of a world (:meth:`simulator.engine.world.World.fleet_store`)."""

    def fleet_store(self) -> FleetStore | None: ...


class StoreOutage:
    """``fleet_store_down``: at the fault's start the store goes down for the whole window
    (to the end of the run when the fault has no ``end``); from then until the window ends no
    scrape, no rule evaluation, every query an error (FleetStore.down)."""

    def __init__(self, store: FleetStore) -> None:
        self.store = store

    def start(self, fault: Fault) -> None:
        self.store.down(fault.start, fault.end if fault.end is not None else math.inf)

    def end(self, fault: Fault) -> None:
        """Nothing to undo: the outage was given its end at the start."""


def fleet_store_handlers(world: HasFleetStore) -> dict[FaultKind, FaultHandler]:
    """The handler of ``fleet_store_down`` for ``world``'s store; none when it has no store."""
    store = world.fleet_store()
    if store is None:
        return {}
    return {FaultKind.FLEET_STORE_DOWN: StoreOutage(store)}
