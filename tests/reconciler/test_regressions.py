"""Regression tests named after the failure they prevent (DESIGN §4 field lessons)."""

from __future__ import annotations

from reconciler.capacity import compute_ledger
from reconciler.clock import ManualClock
from reconciler.ports import PodRef
from reconciler.reconciler import Reconciler
from reconciler.settings import ReconcilerConfig
from reconciler.snapshot import PairPods
from reconciler.subscribers import PlaceholderSubscriber, RecordingSubscriber
from state_machine.states import PairState, Role

from .builders import SCALE_SET, ph, runner, running_pair, snapshot, workflow
from .fakes import FakeWriter


def test_runner_running_while_its_workflow_pod_is_pending_adds_no_capacity() -> None:
    snap = snapshot(runners=(runner("r1"),), workflows=(workflow("r1", node=None),))
    assert compute_ledger(snap, ready_pairs=0).capacity == 0


def test_max_runners_changed_to_zero_drops_capacity_to_zero_on_the_next_step() -> None:
    clock = ManualClock(0.0)
    rec = Reconciler(ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=2), clock=clock)
    rec.step(snapshot())
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2)}
    assert rec.step(snapshot(placeholders=ready)).ledger.capacity == 2
    clock.advance(1)
    result = rec.step(snapshot(placeholders=ready, max_runners=0))
    assert result.ledger.capacity == 0
    # and the pairs are released, since nothing may be advertised at all
    assert {e.target for e in result.events} == {PairState.DELETED}


def test_surviving_workflow_placeholder_is_not_deleted_when_its_partner_goes() -> None:
    clock = ManualClock(0.0)
    writer = FakeWriter()
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1, survivor_window=600)
    recorder = RecordingSubscriber()
    subscriber = PlaceholderSubscriber(writer, namespace="arc-runners", clock=clock, config=config)
    rec = Reconciler(config, clock=clock, subscribers=[subscriber, recorder])
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


def test_capacity_never_includes_pairs_the_same_step_is_deleting() -> None:
    """Regression (found by the reliability work): the ledger used the snapshot taken before
    the step's own scale-down, advertising for one debounced step slots being deleted."""
    clock = ManualClock(0.0)
    rec = Reconciler(ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=3), clock=clock)
    rec.step(snapshot())
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2, 3)}
    assert rec.step(snapshot(placeholders=ready)).ledger.capacity == 3
    clock.advance(1)
    rec.config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1)
    result = rec.step(snapshot(placeholders=ready))
    assert sum(e.target is PairState.DELETED for e in result.events) == 2
    assert result.ledger.capacity == 1
