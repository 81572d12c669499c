"""Properties over random snapshots and random sequences of observations (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.capacity import compute_ledger
from reconciler.clock import ManualClock
from reconciler.config import ReconcilerConfig
from reconciler.sizing import desired_pairs
from reconciler.snapshot import ClusterSnapshot, Demand, PairPods, PlaceholderPod, PodPhase
from reconciler.subscribers import RecordingSubscriber
from state_machine.states import PairState, Role
from state_machine.table import EDGES, IN_FLIGHT, INITIAL

from .builders import SCALE_SET, runner, workflow
from .engine import Stepper

PAIR_IDS = [f"i0-{n}" for n in range(1, 13)] + ["old-1", "old-2"]


@st.composite
def placeholder(draw: st.DrawFn, pair_id: str, role: Role) -> PlaceholderPod | None:
    if draw(st.booleans()) and draw(st.booleans()):
        return None
    phase = draw(st.sampled_from(list(PodPhase)))
    bound = (phase is not PodPhase.PENDING and draw(st.booleans())) or phase is PodPhase.RUNNING
    return PlaceholderPod(
        name=f"{pair_id}-{role.value}",
        namespace="ns",
        uid=f"{pair_id}-{role.value}",
        pair_id=pair_id,
        role=role,
        phase=phase,
        node_name="node" if bound else None,
        deleting=draw(st.booleans()) and draw(st.booleans()),
        disruption_target=draw(st.booleans()) and draw(st.booleans()),
        node_blocked=draw(st.booleans()) and draw(st.booleans()),
        instance=draw(st.sampled_from(["i0", "i0", "old"])),
        expires_at=draw(st.sampled_from([None, 0.0, 1e12])),
    )


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    placeholders = {}
    for pair_id in draw(st.lists(st.sampled_from(PAIR_IDS), unique=True, max_size=10)):
        placeholders[pair_id] = PairPods(
            draw(placeholder(pair_id, Role.RUNNER)), draw(placeholder(pair_id, Role.WORKFLOW))
        )
    n_runners = draw(st.integers(0, 8))
    runners = tuple(
        runner(
            f"r{i}",
            node=draw(st.sampled_from(["n1", None])),
            phase=draw(st.sampled_from([PodPhase.RUNNING, PodPhase.PENDING, PodPhase.SUCCEEDED])),
        )
        for i in range(n_runners)
    )
    workflows = tuple(
        workflow(f"r{i}", node=draw(st.sampled_from(["n2", None])))
        for i in range(n_runners)
        if draw(st.booleans())
    )
    return ClusterSnapshot(
        taken_at=0.0,
        max_runners=draw(st.integers(0, 15)),
        placeholders=placeholders,
        runner_pods=runners,
        workflow_pods=workflows,
        demand=Demand(queued_jobs=draw(st.one_of(st.none(), st.integers(-5, 50)))),
    )


def reservable_pairs(snap: ClusterSnapshot) -> int:
    """Independent count of new jobs the cluster could take right now.

    A new job needs a runner placeholder that is Running on a usable node and not leaving,
    and a workflow slot that no job already holding a runner is entitled to.
    """

    def usable(p: PlaceholderPod | None) -> bool:
        return (
            p is not None
            and p.phase is PodPhase.RUNNING
            and p.node_name is not None
            and not p.deleting
            and not p.disruption_target
            and not p.node_blocked
            and p.phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED)
        )

    runner_halves = sum(usable(p.runner) for p in snap.placeholders.values())
    workflow_halves = sum(usable(p.workflow) for p in snap.placeholders.values())
    jobs = sum(
        1
        for r in snap.runner_pods
        if r.node_name and r.phase in (PodPhase.RUNNING, PodPhase.PENDING)
    )
    workflow_bound = sum(1 for w in snap.workflow_pods if w.node_name)
    free_workflow_slots = workflow_bound + workflow_halves - jobs
    return max(0, min(runner_halves, free_workflow_slots))


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_capacity_never_exceeds_live_max_runners(snap: ClusterSnapshot) -> None:
    assert 0 <= compute_ledger(snap, 0).capacity <= snap.max_runners


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_capacity_beyond_jobs_holding_resources_is_really_reservable(snap: ClusterSnapshot) -> None:
    ledger = compute_ledger(snap, 0)
    jobs_holding = ledger.real_runners_bound
    assert ledger.capacity - jobs_holding <= reservable_pairs(snap)


def runners_needing_room(snap: ClusterSnapshot) -> int:
    """Live runners, except Pending ones a Running runner placeholder is there to absorb
    (each will preempt one: real pods outrank every placeholder)."""
    bound = sum(1 for p in snap.runner_pods if p.alive and p.node_name is not None)
    pending = sum(1 for p in snap.runner_pods if p.alive and p.node_name is None)
    halves = sum(1 for pods in snap.placeholders.values() if pods.runner and pods.runner.counts)
    return bound + max(0, pending - halves)


@settings(max_examples=200, deadline=None)
@given(snapshots(), st.integers(0, 20), st.integers(0, 20), st.integers(0, 50))
def test_the_warm_pool_and_every_queued_job_get_a_pair_within_max_runners_room(
    snap: ClusterSnapshot, proactive: int, floor: int, queued: int
) -> None:
    """proactiveCapacity plus one pair per queued job, cut by the room maxRunners leaves
    beside live runners (a pair for a job GitHub cannot hand out only costs a node; a Pending
    runner counts only when no runner placeholder waits for it), except that while jobs
    wait the warm pairs may stand on top of that room (hand-over pairs), never more than
    maxRunners in all; a failed demand source fails open to at least the configured floor,
    never to zero and never unlimited."""
    config = ReconcilerConfig(
        scale_set=SCALE_SET, proactive_capacity=proactive, hud_fallback_queued_jobs=floor
    )
    room = max(0, snap.max_runners - runners_needing_room(snap))

    def expected(jobs: int) -> int:
        ceiling = room + proactive if jobs > 0 else room
        return min(proactive + jobs, ceiling, max(0, snap.max_runners))

    known = desired_pairs(replace(snap, demand=Demand(queued)), config)
    assert known == expected(queued)
    failed = desired_pairs(replace(snap, demand=Demand(None, error="down")), config)
    assert failed == expected(floor)
    partial = desired_pairs(replace(snap, demand=Demand(queued, error="partial")), config)
    assert partial == expected(max(queued, floor))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(snapshots(), min_size=1, max_size=12), st.integers(1, 400))
def test_random_observation_sequences_only_ever_follow_the_table(
    sequence: list[ClusterSnapshot], tick: int
) -> None:
    clock = ManualClock(0.0)
    recorder = RecordingSubscriber()
    config = ReconcilerConfig(
        scale_set=SCALE_SET,
        proactive_capacity=3,
        max_pairs_in_flight=4,
        max_requests_per_step=2,
        placeholder_ready_timeout=300,
        survivor_window=200,
    )
    rec = Stepper(config, clock, [recorder])
    for snap in sequence:
        rec.step(snap)
        clock.advance(tick)
        for record in rec.store.records():
            assert record.state is not PairState.DELETED
            assert record.state in PairState
        assert rec.store.count(IN_FLIGHT) <= config.max_pairs_in_flight
    table = {(None, INITIAL), *((e.source, e.target) for e in EDGES)}  # creation included
    for event in recorder.events:
        assert (event.source, event.target) in table
