"""Hot-slot metrics (docs/metrics.md): slots by state per step (gauges), and transitions and
jobs that started on a hot slot (counters, from the step's hot-slot transition events), from a
real reconcile step."""

from __future__ import annotations

from listener.observability.metrics import MetricsSubscriber
from reconciler.controller import Output
from scaleset.carry_out import CarriedOut
from tests.reconciler.builders import runner
from tests.reconciler.test_hot_keeper import confirmed_slot, world
from tests.ship.test_metrics import SCALE_SET, make, value


def test_hot_slots_by_state_and_jobs_started_on_them_follow_each_step() -> None:
    metrics = make()
    subscriber = MetricsSubscriber(metrics)
    rec, pod = confirmed_slot()
    taken = rec.step(
        world(10.0, hot={pod.name: pod}, runners=(runner("r1"),), busy=frozenset({"r1"})),
        now=10.0,
    )
    subscriber.notify(taken.events, taken.commands)
    subscriber.observe(CarriedOut(Output(result=taken)))
    assert value(metrics, "arc_capacity_hot_slots", state="TAKEN", **SCALE_SET) == 1
    assert value(metrics, "arc_capacity_hot_slots", state="WARMING") == 1  # the refill
    assert value(metrics, "arc_capacity_hot_slots", state="HOT") == 0
    assert value(metrics, "arc_capacity_hot_slot_jobs_total", **SCALE_SET) == 1
    moved = {"from": "HOT", "to": "TAKEN", "kind": "passive"}
    refill = {"from": "new", "to": "WARMING", "kind": "active"}
    assert value(metrics, "arc_capacity_hot_slot_transitions_total", **moved, **SCALE_SET) == 1
    assert value(metrics, "arc_capacity_hot_slot_transitions_total", **refill) == 1
    # Gauges come from the step, counters from events only: a step seen twice counts once.
    subscriber.observe(CarriedOut(Output(result=taken)))
    assert value(metrics, "arc_capacity_hot_slot_jobs_total", **SCALE_SET) == 1


def test_without_hot_slots_no_hot_series_are_set() -> None:
    metrics = make()
    assert value(metrics, "arc_capacity_hot_slots", state="HOT") is None
