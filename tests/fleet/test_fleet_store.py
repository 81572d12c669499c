"""The simulated fleet store (simulator/driver/fleet_store.py) and the listener against it: the
view is as stale as scrape + evaluation make it, and with the store down the listener acts
exactly as with ``fleetView`` off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from simulator.driver.capacity_aware import CapacityAware, CapacityAwareDriver
from simulator.driver.fleet_store import FleetStore, MemberSample
from simulator.engine.loop import EventLoop
from simulator.engine.world import World
from tests.simulated.workload.builders import ice_failover, load

FLEET_VIEW = {
    "enabled": True,
    "url": "http://fleet-store.simulated",
    "cluster": "set-by-the-world",
    "fleet": "linux-gpu",
}
HOURS = 1.5


def sample(free: int = 1) -> MemberSample:
    return MemberSample(free_slots=free, in_flight=0, queued=2, trouble=False)


def test_a_row_appears_only_after_a_scrape_and_an_evaluation() -> None:
    loop = EventLoop()
    store = FleetStore(loop, scrape_interval=30, evaluation_interval=60)
    store.join("east", "gpu", sample)
    loop.run_until(loop.start + 59)
    assert store.query("gpu").rows == ()
    loop.run_until(loop.start + 61)
    (row,) = store.query("gpu").rows
    assert (row.cluster, row.sampled_at, row.free_slots, row.queued) == ("east", loop.start + 60,
                                                                         1.0, 2.0)  # fmt: skip
    assert store.query("other").rows == ()


def test_while_down_the_store_answers_errors_and_records_nothing() -> None:
    loop = EventLoop()
    store = FleetStore(loop, scrape_interval=30, evaluation_interval=30)
    free = [1]
    store.join("east", "gpu", lambda: sample(free[0]))
    store.down(100, 200)
    loop.run_until(loop.start + 99)
    before = store.query("gpu").rows
    free[0] = 7
    loop.run_until(loop.start + 150)
    assert store.query("gpu").error is not None
    loop.run_until(loop.start + 201)
    # Back up: the last row is the one evaluated before the outage until the next evaluation.
    assert store.query("gpu").rows == before
    loop.run_until(loop.start + 241)
    (row,) = store.query("gpu").rows
    assert row.free_slots == 7.0 and row.sampled_at == loop.start + 240


def world(fleet: dict[str, Any] | None, *, seed: int = 3) -> World:
    scenario = load(ice_failover(hours=HOURS))
    if fleet is not None:
        scenario = scenario.with_capacity_aware({"fleetView": fleet}, where="test")
    return World(scenario, "capacity-aware", seed=seed)


def drivers(w: World) -> list[CapacityAwareDriver]:
    assert isinstance(w.strategy, CapacityAware)
    return list(w.strategy.drivers)


def every(w: World, start: float, end: float, step: float, check: Callable[[], None]) -> None:
    at = start
    while at < end:
        w.loop.call_at(w.loop.start + at, check)
        at += step


@pytest.mark.slow
def test_with_the_store_down_all_day_the_listener_behaves_exactly_as_with_the_view_off() -> None:
    """Fail safe: an unreachable store leaves every decision alone, so every figure of the
    run equals the run with ``fleetView`` off."""
    off = world(None)
    down = world(FLEET_VIEW)
    store = down.strategy.fleet_store  # type: ignore[attr-defined]
    assert isinstance(store, FleetStore)
    store.down(0, HOURS * 3600 + 1)
    assert down.run() == off.run()
    assert store.queries > 0 and store.failed_queries == store.queries


@pytest.mark.slow
def test_the_store_down_mid_run_gives_todays_demand_for_that_window_and_shares_around_it() -> None:
    """While the store is down every scale set's demand is its own sources' answer, unshared
    (today's behaviour), from the first failed read on; before and after it, with the view
    fresh, the fleet's two healthy clusters each build for half."""
    w = world(FLEET_VIEW)
    store = w.strategy.fleet_store  # type: ignore[attr-defined]
    assert isinstance(store, FleetStore)
    down_from, down_to = 40 * 60.0, 55 * 60.0
    store.down(down_from, down_to)
    poll = 15.0  # fleetView.pollInterval default: the first read after the outage starts
    during: list[tuple[Any, Any]] = []
    shares: list[float | None] = []

    def check_down() -> None:
        for d in drivers(w):
            during.append((d.demand, d.scale_set_demand.combined.current))

    def check_share() -> None:
        shares.extend(d.demand.fleet.share for d in drivers(w) if d.demand.fleet is not None)

    every(w, down_from + poll, down_to, 10.0, check_down)
    every(w, 10 * 60.0, 30 * 60.0, 60.0, check_share)
    w.run()
    assert during and all(seen == alone for seen, alone in during)
    assert all(seen.fleet is None for seen, _ in during)
    assert 0.5 in shares
