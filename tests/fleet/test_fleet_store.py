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
from simulator.faults import (
    FaultKind,
    FaultPlan,
    FaultPlanError,
    FaultScheduler,
    WorldChaos,
    fleet_store_handlers,
    parse_fault_plan,
)
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
def test_a_store_down_fault_mid_run_gives_unshared_demand_in_its_window_shares_around_it() -> None:
    """A plan's ``fleet_store_down`` window, applied as every plan is (WorldChaos): while the
    store is down every scale set's demand is its own sources' answer, unshared (today's
    behaviour), from the first failed read on; before and after it, with the view fresh, the
    fleet's two healthy clusters each build for half. Fails if the fault is not wired to the
    store (the shares would go on through the window) or the listener keeps a stale share."""
    w = world(FLEET_VIEW)
    store = w.fleet_store()
    assert store is not None
    down_from, down_to = 40 * 60.0, 55 * 60.0
    plan = FaultPlan.model_validate(
        {"faults": [{"kind": "fleet_store_down", "start": down_from, "end": down_to}]}
    )
    scheduler = WorldChaos(w, plan).install()
    poll = 15.0  # fleetView.pollInterval default: the first read after the outage starts
    during: list[tuple[Any, Any]] = []
    shares: list[float | None] = []

    def check_down() -> None:
        for d in drivers(w):
            during.append((d.demand, d.scale_set_demand.combined.current))

    def check_share() -> None:
        shares.extend(d.demand.fleet.share if d.demand.fleet else None for d in drivers(w))

    every(w, down_from + poll, down_to, 10.0, check_down)
    every(w, 10 * 60.0, 30 * 60.0, 60.0, check_share)
    every(w, down_to + 3 * 60.0, down_to + 20 * 60.0, 60.0, check_share)
    w.run()
    assert [(what, f.kind) for _, what, f in scheduler.applied] == [
        ("start", FaultKind.FLEET_STORE_DOWN),
        ("end", FaultKind.FLEET_STORE_DOWN),
    ]
    assert store.failed_queries > 0
    assert len(during) == 2 * 89  # two scale sets, every 10 s from 40:15 to 54:55
    assert all(seen == alone for seen, alone in during)
    assert all(seen.fleet is None for seen, _ in during)
    assert shares.count(0.5) > len(shares) // 2


class TestTheFaultReachesTheStore:
    """``fleet_store_down`` through the fault scheduler (simulator/faults/fleet.py)."""

    class _World:
        def __init__(self, store: FleetStore | None) -> None:
            self.store = store

        def fleet_store(self) -> FleetStore | None:
            return self.store

    @pytest.mark.parametrize(
        ("end", "down_at", "up_at"),
        [
            (200.0, (100.0, 150.0, 199.0), (99.0, 200.0, 500.0)),
            (None, (100.0, 500.0, 86_400.0), (99.0,)),  # no end: down to the end of the run
        ],
    )
    def test_the_store_is_down_for_the_window_and_only_then(
        self, end: float | None, down_at: tuple[float, ...], up_at: tuple[float, ...]
    ) -> None:
        loop = EventLoop()
        store = FleetStore(loop)
        data: dict[str, Any] = {"kind": "fleet_store_down", "start": 100.0}
        if end is not None:
            data["end"] = end
        plan = FaultPlan.model_validate({"faults": [data]})
        scheduler = FaultScheduler(loop, plan, fleet_store_handlers(self._World(store)))
        scheduler.schedule()
        loop.run_until(loop.start + 100.0)
        assert scheduler.skipped == []
        assert all(store.is_down(loop.start + t) for t in down_at)
        assert not any(store.is_down(loop.start + t) for t in up_at)

    def test_a_world_without_a_store_skips_the_fault_and_says_so(self) -> None:
        """View off (or another strategy): nothing to take down, so the scheduler lists the
        fault in ``skipped`` (what reports print), as it does for faults needing HTTP."""
        for w in (world(None), self._World(None)):
            assert fleet_store_handlers(w) == {}
        plan = FaultPlan.model_validate(
            {"faults": [{"kind": "fleet_store_down", "start": 60, "end": 120}]}
        )
        scheduler = WorldChaos(world(None), plan).install()
        assert [f.label() for f in scheduler.skipped] == ["fleet_store_down@60-120s"]

    def test_the_kind_takes_no_params(self) -> None:
        with pytest.raises(FaultPlanError, match="not allowed for kind fleet_store_down"):
            parse_fault_plan(
                [{"kind": "fleet_store_down", "start": 0, "end": 60, "params": {"status": 503}}],
                where="plan",
            )
