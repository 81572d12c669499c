"""The refill at assignment counts only the slots whose real pods will take a READY pair.

Issue 31: GitHub counts a slot taken when it assigns the job, so the warm pool is refilled at
the assignment. But the scheduler preempts only where no node fits the pod: a runner (and its
workflow pod) with free room on an existing node binds there and leaves the READY pairs
standing. Each case is the slots taken, the free pair slots on existing nodes, and how many of
those slots the refill counts.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from reconciler.config import ReconcilerConfig
from reconciler.decide import decide
from reconciler.decision import DecideInput
from reconciler.sizing import desired_pairs, free_pair_slots, pairs_taken
from reconciler.snapshot import FitEstimate
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import NewPair

from .builders import INSTANCE, SCALE_SET, runner, running_pair, snapshot

S = PairState
NOW = 1_000.0


@pytest.mark.parametrize(
    ("name", "slots_taken", "free_slots", "counted"),
    [
        ("no free room: every slot takes a READY pair", 3, 0, 3),
        ("free room for one of three", 3, 1, 2),
        ("free room for exactly all three", 3, 3, 0),
        ("more free room than slots taken", 3, 10, 0),
        ("nothing taken", 0, 4, 0),
        ("a negative estimate counts as no room", 2, -1, 2),
    ],
)
def test_pairs_taken_counts_only_slots_beyond_free_room(
    name: str, slots_taken: int, free_slots: int, counted: int
) -> None:
    del name
    assert pairs_taken(slots_taken, free_slots) == counted


@pytest.mark.parametrize(
    ("name", "on_existing", "unbound_in_flight", "free"),
    [
        ("no fit estimate", None, 0, 0),
        ("room for four, none in flight", 4, 0, 4),
        ("pairs in flight take the room first", 4, 3, 1),
        ("more in flight than room", 2, 5, 0),
    ],
)
def test_free_pair_slots_leave_the_room_pairs_in_flight_will_take(
    name: str, on_existing: int | None, unbound_in_flight: int, free: int
) -> None:
    del name
    fit = None if on_existing is None else FitEstimate(new_pairs=50, on_existing_nodes=on_existing)
    snap = replace(snapshot(), fit=fit)
    assert free_pair_slots(snap, unbound_in_flight) == free


def ready_pool(count: int) -> tuple[dict[str, PairRecord], dict[str, object]]:
    records, pods = {}, {}
    for i in range(count):
        pair_id = f"warm-{i}"
        record = PairRecord.new(pair_id, SCALE_SET, NOW - 60, "test")
        records[pair_id] = record.moved(S.REQUESTED, NOW - 60, "t").moved(S.READY, NOW - 50, "t")
        pods[pair_id] = running_pair(pair_id)
    return records, pods


def refill_step(
    *, live: int, assigned: int, queued: int, free_room: int, proactive: int
) -> tuple[int, int]:
    """One decide over ``live`` READY pairs and ``assigned`` jobs whose runners are not bound
    yet: (pairs requested, pairs released). One node holds one pair, so no rounding up to
    node-sized groups."""
    records, pods = ready_pool(live)
    pending = tuple(runner(f"job-{i}", node=None) for i in range(assigned))
    snap = replace(
        snapshot(now=NOW, placeholders=pods, runners=pending, queued=queued),  # type: ignore[arg-type]
        assigned_jobs=assigned,
        fit=FitEstimate(new_pairs=50, on_existing_nodes=free_room),
    )
    config = ReconcilerConfig(
        scale_set=SCALE_SET, proactive_capacity=proactive, launch_group_size=1
    )
    ids = (f"new-{i}" for i in itertools.count(1))
    decision = decide(DecideInput(records, snap, config, NOW, INSTANCE, False), ids)
    requested = sum(isinstance(c, NewPair) for c in decision.changes)
    released = sum(getattr(c, "target", None) is S.DELETED for c in decision.changes)
    return requested, released


@pytest.mark.parametrize(
    ("name", "assigned", "free_room", "queued", "live", "new_pairs", "released"),
    [
        # the runners of both jobs will preempt READY pairs: refill both at the assignment
        ("no free room: refill both at the assignment", 2, 0, 0, 6, 2, 0),
        # one runner binds into free room, the other takes a READY pair
        ("room for one: refill the other", 2, 1, 0, 6, 1, 0),
        # both bind into free room: the 6 READY pairs stay warm, nothing to refill
        ("room for both: no refill", 2, 2, 0, 6, 0, 0),
        ("room for more: no refill", 2, 5, 0, 6, 0, 0),
        # no job assigned, free room: the warm pool as configured, no refill either way
        ("nothing assigned", 0, 3, 0, 6, 0, 0),
        # jobs queued: a pair in free room is how that room is advertised to the next job,
        # so the refill counts every slot taken (2) on top of the queued job (1)
        ("jobs queued: free room does not cut the refill", 2, 5, 1, 6, 3, 0),
        # the queue emptied while the refill pairs stand: they are kept, not released and
        # requested again on the next queued job (the flapping that made 6 083 pairs/seed)
        ("queue emptied: refill pairs kept while slots are taken", 2, 5, 0, 8, 0, 0),
        # every READY pair spoken for: no slot is free and no message can show the next
        # job, so the free room is refilled as if jobs were queued (up to maxRunners, 10)
        ("every warm pair spoken for: free room refilled", 6, 6, 0, 6, 4, 0),
        ("all but one spoken for: the free slot shows the next job", 5, 6, 0, 6, 0, 0),
        # the assigned jobs' pods bound: the refill pairs are not wanted any more
        ("nothing taken any more: extra pairs released", 0, 5, 0, 8, 0, 2),
    ],
)
def test_assigned_jobs_binding_into_free_room_do_not_refill_the_warm_pool(
    name: str,
    assigned: int,
    free_room: int,
    queued: int,
    live: int,
    new_pairs: int,
    released: int,
) -> None:
    """Regression (issue 31's churn): the refill at assignment counted every assigned job
    whose runner was not bound as a READY pair taken, also where the runner pod bound into
    free room on an existing node (the scheduler preempts only where nothing fits). Each such
    job got a new pair that confirmed that free room and was released once the job's own pods
    bound there: one short-lived pair per job on drain, and node launches above stock ARC's on
    scale-to-zero and merge-queue (docs/benchmarks.md, the warm path)."""
    del name
    step = refill_step(
        live=live, assigned=assigned, queued=queued, free_room=free_room, proactive=6
    )
    assert step == (new_pairs, released)


@pytest.mark.parametrize(
    ("name", "proactive", "queued", "assigned", "want"),
    [
        # scale to zero: the assigned job's pair was requested while it was queued; the HUD's
        # 30 s poll still counts it queued: one pair, not a second one for the refill
        ("no warm pool, a lagging queue count", 0, 1, 1, 1),
        ("no warm pool, nothing queued", 0, 0, 2, 0),
        # a batch: 5 assigned jobs hold pairs until their pods bind; 2 slots stay free
        ("more slots taken than the warm pool", 2, 0, 5, 7),
        ("fewer slots taken than the warm pool", 6, 0, 2, 8),
        # near maxRunners (20) the 18 pending runners leave a headroom of 2; the warm pool
        # stands on top of it (hand-over pairs), never more
        ("slots taken near maxRunners", 6, 0, 18, 8),
    ],
)
def test_the_refill_keeps_the_warm_pool_free_and_there_is_none_without_one(
    name: str, proactive: int, queued: int, assigned: int, want: int
) -> None:
    """Regressions, both from issue 31.

    Scale-to-zero's churn: with proactiveCapacity 0 every job's pair was requested while it
    was queued, and the refill at assignment counted its slot again while a lagging queue
    count still held the job: a second pair, and a second node, for most jobs (nodes per seed
    27 -> 35, stock ARC 20).

    Merge-queue's batches: the refill was capped at proactiveCapacity, but in a batch more
    assigned jobs than that hold a pair at once (8-11 s from the assignment to the workflow
    pod's binding, about a job a second), so no slot stayed free and each next job waited for
    its own pair to be confirmed (later batches 1.03x stock ARC's p50)."""
    del name
    pending = tuple(runner(f"job-{i}", node=None) for i in range(assigned))
    snap = replace(snapshot(runners=pending, queued=queued, max_runners=20), assigned_jobs=assigned)
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive)
    assert desired_pairs(snap, config) == want


@pytest.mark.parametrize(
    ("name", "assigned", "queued", "released", "new_pairs"),
    [
        # the job GitHub was handed for this pair: its runner pod is not bound yet
        ("an assigned job's pair is kept until its pods bind", 1, 0, 0, 0),
        # a lagging queue count still holds the job: kept, and no second pair for it
        ("kept, and no second pair for a lagging queue count", 1, 1, 0, 0),
        ("no job assigned: the pair is released", 0, 0, 1, 0),
    ],
)
def test_without_a_warm_pool_the_pair_of_an_assigned_job_is_kept(
    name: str, assigned: int, queued: int, released: int, new_pairs: int
) -> None:
    """Regression (issue 31, scale-to-zero): with proactiveCapacity 0 the pair requested for
    a queued job was released in the step after GitHub assigned the job, before the job's
    runner pod had bound: the room just advertised was free for any pod, and the runner pod
    was left to find its own."""
    del name
    step = refill_step(live=1, assigned=assigned, queued=queued, free_room=0, proactive=0)
    assert step == (new_pairs, released)
