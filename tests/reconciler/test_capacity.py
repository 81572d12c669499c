"""The capacity ledger: halves, not pods; bound, not created; maxRunners is a hard cap."""

from __future__ import annotations

from reconciler.capacity import compute_ledger
from reconciler.snapshot import PairPods, PodPhase
from state_machine.states import Role

from .builders import ph, runner, running_pair, snapshot, workflow


def test_steady_state_capacity_is_running_jobs_plus_ready_pairs() -> None:
    snap = snapshot(
        placeholders={"p-1": running_pair("p-1"), "p-2": running_pair("p-2")},
        runners=(runner("r1"),),
        workflows=(workflow("r1"),),
    )
    ledger = compute_ledger(snap, ready_pairs=2)
    assert (ledger.runner_side, ledger.workflow_side, ledger.capacity) == (3, 3, 3)


def test_pending_runner_is_not_counted_twice_with_the_pair_it_will_take() -> None:
    snap = snapshot(
        placeholders={"p-1": running_pair("p-1")},
        runners=(runner("r1", node=None, phase=PodPhase.PENDING),),
    )
    assert compute_ledger(snap, ready_pairs=1).capacity == 1


def test_terminating_or_disrupted_or_blocked_placeholders_do_not_count() -> None:
    snap = snapshot(
        placeholders={
            "a": running_pair("a", deleting=True),
            "b": running_pair("b", disrupted=True),
            "c": running_pair("c", blocked=True),
            "d": PairPods(ph("d", Role.RUNNER), ph("d", Role.WORKFLOW, phase=PodPhase.PENDING)),
        }
    )
    ledger = compute_ledger(snap, ready_pairs=0)
    assert (ledger.runner_placeholders, ledger.workflow_placeholders, ledger.capacity) == (1, 0, 0)


def test_survivor_workflow_placeholder_backs_the_job_whose_runner_took_its_partner() -> None:
    # Runner r1 preempted p-1's runner half; p-1's workflow half still reserves r1's workflow slot.
    snap = snapshot(
        placeholders={"p-1": PairPods(None, ph("p-1", Role.WORKFLOW))},
        runners=(runner("r1"),),
    )
    ledger = compute_ledger(snap, ready_pairs=0)
    assert (ledger.runner_side, ledger.workflow_side, ledger.capacity) == (1, 1, 1)


def test_starved_runner_is_reported() -> None:
    snap = snapshot(runners=(runner("r1"),), workflows=(workflow("r1", node=None),))
    ledger = compute_ledger(snap, ready_pairs=0)
    assert ledger.starved_runners == 1
    assert ledger.capacity == 0
