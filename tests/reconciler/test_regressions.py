"""Regression tests named after the failure they prevent (docs/design.md#capacity-ledger)."""

from __future__ import annotations

from reconciler.capacity import compute_ledger
from reconciler.clock import ManualClock
from reconciler.config import ReconcilerConfig
from reconciler.ports import PodRef
from reconciler.snapshot import PairPods, PodPhase
from reconciler.subscribers import PlaceholderSubscriber, RecordingSubscriber
from state_machine.states import PairState, Role

from .builders import SCALE_SET, pending_pair, ph, runner, running_pair, snapshot, workflow
from .engine import Stepper
from .fakes import FakeWriter


def test_runner_running_while_its_workflow_pod_is_pending_adds_no_capacity() -> None:
    snap = snapshot(runners=(runner("r1"),), workflows=(workflow("r1", node=None),))
    assert compute_ledger(snap, ready_pairs=0).capacity == 0


def test_max_runners_changed_to_zero_drops_capacity_to_zero_on_the_next_step() -> None:
    clock = ManualClock(0.0)
    rec = Stepper(ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=2), clock)
    rec.step(snapshot())
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2)}
    assert rec.step(snapshot(placeholders=ready)).capacity == 2
    clock.advance(1)
    result = rec.step(snapshot(placeholders=ready, max_runners=0))
    assert result.capacity == 0
    # and the pairs are released, since nothing may be advertised at all
    assert {e.target for e in result.events} == {PairState.DELETED}


def test_surviving_workflow_placeholder_is_not_deleted_when_its_partner_goes() -> None:
    clock = ManualClock(0.0)
    writer = FakeWriter()
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1, survivor_window=600)
    recorder = RecordingSubscriber()
    subscriber = PlaceholderSubscriber(writer, namespace="arc-runners", clock=clock, config=config)
    rec = Stepper(config, clock, [subscriber, recorder])
    rec.step(snapshot())
    rec.step(snapshot(placeholders={"i0-1": running_pair("i0-1")}))
    # A real runner pod preempts the runner half; the workflow half must wait for its workflow pod.
    clock.advance(10)
    survivor = PairPods(None, ph("i0-1", Role.WORKFLOW))
    rec.step(snapshot(placeholders={"i0-1": survivor}, runners=(runner("r1"),)))
    assert rec.store.get("i0-1").state is PairState.PREEMPTED
    workflow_ref = PodRef("arc-runners", rec.store.get("i0-1").workflow_pod)
    assert workflow_ref not in writer.deleted
    clock.advance(300)
    rec.step(snapshot(placeholders={"i0-1": survivor}, runners=(runner("r1"),)))
    assert workflow_ref not in writer.deleted


def test_a_lone_runner_half_is_released_at_once_instead_of_idling_for_the_window() -> None:
    """Regression (ice-failover's idle CPU): a workflow pod took the workflow half of a pair
    whose runner half no runner pod took (its runner landed on free room). Nothing comes for
    that runner half (a runner pod precedes its workflow pod), yet it was kept for the whole
    survivorWindow, holding idle capacity for most jobs of the day. (When a pair is wanted
    it is mended instead: tests/reconciler/test_survivors.py.)"""
    clock = ManualClock(0.0)
    writer = FakeWriter()
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1, survivor_window=600)
    subscriber = PlaceholderSubscriber(writer, namespace="arc-runners", clock=clock, config=config)
    rec = Stepper(config, clock, [subscriber])
    rec.step(snapshot())
    rec.step(snapshot(placeholders={"i0-1": running_pair("i0-1")}))
    clock.advance(10)
    rec.reconfigure(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=0, survivor_window=600)
    )
    lone_runner = PairPods(ph("i0-1", Role.RUNNER), None)
    runner_ref = PodRef("arc-runners", rec.store.get("i0-1").runner_pod)
    # r1's workflow pod is the one that took the workflow half (bound): nothing waits for room.
    result = rec.step(
        snapshot(
            placeholders={"i0-1": lone_runner},
            runners=(runner("r1"),),
            workflows=(workflow("r1"),),
        )
    )
    moves = [(e.source, e.target) for e in result.events if e.pair_id == "i0-1"]
    assert moves == [
        (PairState.READY, PairState.PREEMPTED),
        (PairState.PREEMPTED, PairState.DELETED),
    ]
    assert runner_ref in writer.deleted


def test_capacity_never_includes_pairs_the_same_step_is_deleting() -> None:
    """Regression (found by the reliability work): the ledger used the snapshot taken before
    the step's own scale-down, advertising for one debounced step slots being deleted."""
    clock = ManualClock(0.0)
    rec = Stepper(ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=3), clock)
    rec.step(snapshot())
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2, 3)}
    assert rec.step(snapshot(placeholders=ready)).capacity == 3
    clock.advance(1)
    rec.reconfigure(ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1))
    result = rec.step(snapshot(placeholders=ready))
    assert sum(e.target is PairState.DELETED for e in result.events) == 2
    assert result.capacity == 1


def test_vanished_half_is_lost_at_once_not_held_in_flight_until_the_ready_timeout() -> None:
    """Regression (issue 13): a REQUESTED pair whose runner half had been seen and was then
    preempted and deleted sat in flight until placeholderReadyTimeout ("never observed:
    runner pod", which was false), blocking the launch budget and shrinking the warm pool."""
    clock = ManualClock(0.0)
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1)
    rec = Stepper(config, clock)
    rec.step(snapshot())
    assert rec.store.get("i0-1").state is PairState.REQUESTED
    clock.advance(5)
    rec.step(snapshot(placeholders={"i0-1": pending_pair("i0-1")}))  # both halves seen Pending
    assert rec.store.get("i0-1").seen == frozenset(Role)
    clock.advance(5)
    workflow_only = PairPods(None, ph("i0-1", Role.WORKFLOW, phase=PodPhase.PENDING))
    result = rec.step(snapshot(placeholders={"i0-1": workflow_only}))
    lost, mended = [e for e in result.events if e.pair_id == "i0-1"]
    assert lost.target is PairState.PREEMPTED
    assert lost.reason == "runner placeholder vanished before the pair was ready (seen, then gone)"
    assert clock.now() < config.placeholder_ready_timeout
    # The warm pool still wants the pair: its missing half is created again at once.
    assert (mended.source, mended.target) == (PairState.PREEMPTED, PairState.REQUESTED)
