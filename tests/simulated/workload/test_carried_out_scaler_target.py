"""The simulated listener follows each step's scaler target through the production carry-out
(scaleset/carry_out.py), exactly as the listener process does: a drain to ``maxRunners: 0``
mid-run, and ARC switching the scale set off (runners ``Outdated``) and on again.

"Exactly as the listener" is checked against the listener's own driver: at each moment a
twin listener (listener/process/reconcile_loop.py ``ReconcileLoop``, a fresh controller, its
own ``CapacityGate`` and ARC ``Scaler``) steps once on the snapshot the simulated driver
reads, and its gate and scaler must say what the simulated listener's say.
"""

from __future__ import annotations

import copy
from typing import Any

from listener.arc.gate import CapacityGate
from listener.arc.scaler import Scaler
from listener.process.reconcile_loop import Observation, ReconcileLoop
from reconciler.clock import ManualClock
from reconciler.controller import ScaleSetController, Work
from scaleset.carry_out import Effects
from simulator.engine.world import World
from simulator.workload.listener import ListenerModel
from tests.listener.test_scaler import RecordingWriter

from .builders import load, scale_set, scenario

SET = "cpu-east"
NS = "arc-runners"
MIN_RUNNERS = 1
MAX_RUNNERS = 20


def world(**extra: Any) -> World:
    """One CPU scale set with ``minRunners: 1`` (so a scaler that did not follow the target
    would keep asking for a runner), busy enough to hold pairs and runners at 20 minutes."""
    data = scenario(
        scale_sets=[scale_set(SET, "east", gpu=False, min_runners=MIN_RUNNERS, **extra)],
        jobs=[{"labels": ["linux"], "per_hour": 40, "duration": {"median": "10m", "sigma": 0.3}}],
        duration="40m",
    )
    data["strategies"]["capacity_aware"]["workflowResources"] = {"cpu": "2", "memory": "4Gi"}
    return World(load(data), "capacity-aware")


def run_to(sim: World, seconds: float) -> None:
    sim.loop.run_until(sim.loop.start + seconds)


def desired(scaler: Scaler, assigned: int) -> int:
    """The runners ``scaler``'s next ERS patch asks for with ``assigned`` jobs, read on a copy
    whose patch goes nowhere (the world's ERS is left alone)."""
    probe = copy.copy(scaler)
    probe.writer = RecordingWriter()
    return probe.handle_desired_runner_count(assigned)


def twin_listener(sim: World) -> tuple[CapacityGate, Scaler]:
    """The listener process's driver, stepped once on the simulated driver's snapshot: its
    gate and scaler as a listener just started on this cluster would have them."""
    driver = sim.capacity_drivers()[0]
    now = sim.loop.now()
    snapshot = driver.runtime.snapshot(Work.STEP, now)
    gate = CapacityGate(MAX_RUNNERS, initial=0)
    scaler = Scaler(
        RecordingWriter(), namespace=NS, name=SET, min_runners=MIN_RUNNERS, max_runners=MAX_RUNNERS
    )
    controller = ScaleSetController(
        driver.config, driver.settings.controller_timings(), instance="twin", started_at=now
    )
    loop = ReconcileLoop(
        controller,
        Observation(lambda _now: snapshot, lambda _now: snapshot, lambda: 0.0),
        Effects((), gate=gate, scaler=scaler),
        ManualClock(now),
    )
    output = loop.run_once()
    assert output is not None and output.result is not None  # a full step ran
    return gate, scaler


def assert_follows_like_the_listener(sim: World, listener: ListenerModel) -> None:
    gate, scaler = twin_listener(sim)
    assert listener.gate.value == gate.value
    assert listener.scaler.switched_off == scaler.switched_off
    assert listener.scaler.max_runners == scaler.max_runners
    for assigned in (0, 3):
        assert desired(listener.scaler, assigned) == desired(scaler, assigned)


def test_a_drain_to_max_runners_0_caps_the_gate_and_the_scaler_at_the_next_step() -> None:
    """Before the simulator carried outputs out with the listener's function, the live
    maxRunners reached the simulated gate and scaler only when ARC restarted the listener
    (5 s later); the listener's own gate and scaler follow the first step that sees it."""
    sim = world(changes=[{"at": "20m", "max_runners": 0}])
    listener = sim.scale_sets[SET].listener
    run_to(sim, 20 * 60 - 1)
    assert listener.gate.value > 0  # capacity was advertised before the drain
    assert_follows_like_the_listener(sim, listener)
    run_to(sim, 20 * 60 + 3)  # the debounced step ran; ARC has not restarted the listener
    assert listener.gate.value == 0
    assert listener.scaler.max_runners == MIN_RUNNERS  # 0, clamped at the scaler's floor
    assert desired(listener.scaler, 3) == MIN_RUNNERS
    assert_follows_like_the_listener(sim, listener)


def test_arc_switching_the_set_off_parks_the_scaler_and_closes_the_gate_then_reopens() -> None:
    """Runners Outdated (#4652): the simulated scaler asks for no runner, not minRunners plus
    the assigned jobs, and nothing is advertised; back on, both follow the next steps."""
    sim = world()
    listener = sim.scale_sets[SET].listener
    arc = sim.scale_sets[SET].arc
    store = sim.clusters["east"].store
    run_to(sim, 20 * 60)
    assert listener.gate.value > 0 and not listener.scaler.switched_off
    arc.switch_off()
    run_to(sim, 20 * 60 + 3)
    assert listener.scaler.switched_off
    assert listener.gate.value == 0
    assert desired(listener.scaler, 3) == 0
    assert_follows_like_the_listener(sim, listener)
    run_to(sim, 22 * 60)  # the listener polled since and patched the ERS
    assert not store.get("EphemeralRunnerSet", NS, SET)["spec"].get("replicas")

    arc.switch_off(False)
    run_to(sim, 25 * 60)
    assert not listener.scaler.switched_off
    assert desired(listener.scaler, 0) == MIN_RUNNERS
    assert store.get("EphemeralRunnerSet", NS, SET)["spec"]["replicas"] >= MIN_RUNNERS
    assert_follows_like_the_listener(sim, listener)
