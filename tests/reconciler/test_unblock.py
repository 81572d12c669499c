"""Unblock: the newest half-placed pairs give their room to the others' runner halves.

When new nodes come up, kube-scheduler binds every waiting workflow half (+10) before any
runner half (-10); the runner halves of many pairs then report "Insufficient cpu" while their
workflow halves hold the room, and none of those pairs backs a slot until Karpenter launches
another node (wide-storm: a minute with 170 such pairs, seed 8).
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from reconciler.config import ReconcilerConfig
from reconciler.decide import decide
from reconciler.decision import DecideInput
from reconciler.snapshot import ClusterSnapshot, FitEstimate, PairPods, PodPhase
from reconciler.unblock import STUCK_AFTER, stuck_pairs, to_release
from state_machine.record import PairRecord
from state_machine.states import PairState, Role

from .builders import INSTANCE, SCALE_SET, ph, snapshot

S = PairState
NO_ROOM = "0/4 nodes are available: 3 Insufficient cpu, 1 Insufficient memory."
NO_MEMORY = "0/2 nodes are available: 2 Insufficient memory."
NO_MATCH = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
NOW = 1_000.0


def waiting(pair_id: str, since: float, state: PairState = S.PARTIAL) -> PairRecord:
    record = PairRecord.new(pair_id, SCALE_SET, since - 1, "test").moved(S.REQUESTED, since, "t")
    return record.moved(state, since, "t") if state is not S.REQUESTED else record


def half_placed(pair_id: str, message: str | None = NO_ROOM, **runner: object) -> PairPods:
    """Workflow half Running; runner half Pending with the scheduler's ``message``."""
    kw: dict[str, object] = {"phase": PodPhase.PENDING, "message": message, **runner}
    return PairPods(ph(pair_id, Role.RUNNER, **kw), ph(pair_id, Role.WORKFLOW))  # type: ignore[arg-type]


def with_share(snap: ClusterSnapshot, share: float | None) -> ClusterSnapshot:
    fit = None if share is None else FitEstimate(new_pairs=100, runner_share=share)
    return dataclasses.replace(snap, fit=fit)


def step(
    pairs: dict[str, PairRecord], pods: dict[str, PairPods], share: float | None, queued: int = 0
) -> tuple[dict[str, PairState], str | None]:
    """One decide step: every pair's state after it, and why launches waited."""
    inp = DecideInput(
        pairs=pairs,
        snapshot=with_share(snapshot(now=NOW, placeholders=pods, queued=queued), share),
        config=ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=len(pairs)),
        now=NOW,
        instance=INSTANCE,
        first_step=False,
    )
    decision = decide(inp, (f"new{i}" for i in itertools.count()))
    return decision.states, decision.launch_limited_by


def test_stuck_runner_halves_get_the_room_of_the_newest_half_placed_pairs() -> None:
    """Nine pairs of 500m + 4 cpu (share 1/9) wait with their runner halves out of room: one
    released workflow half holds the other eight runner halves, so the newest goes and the
    eight can become READY now instead of after a node launch."""
    pairs = {f"p{i}": waiting(f"p{i}", since=900.0 + i) for i in range(9)}
    pods = {pid: half_placed(pid) for pid in pairs}
    states, _ = step(pairs, pods, share=1 / 9)
    assert [pid for pid, s in states.items() if s is S.DELETED] == ["p8"]
    assert all(states[f"p{i}"] is S.PARTIAL for i in range(8))


def test_launches_wait_one_step_after_an_unblock() -> None:
    """A pair requested in the same step would put a workflow half (+10) ahead of the stuck
    runner halves (-10) in the scheduling queue, and it would take the freed room."""
    pairs = {f"p{i}": waiting(f"p{i}", since=900.0 + i) for i in range(5)}
    pods = {pid: half_placed(pid) for pid in pairs}
    states, limited_by = step(pairs, pods, share=0.2, queued=3)
    assert limited_by == "unblocking"
    assert not [pid for pid, s in states.items() if s is S.REQUESTED and pid not in pairs]
    assert [pid for pid, s in states.items() if s is S.QUEUED]  # wanted, requested next step


@pytest.mark.parametrize(
    ("stuck", "share", "released"),
    [
        (1, 0.2, 0),  # nothing would be left to complete
        (2, 0.2, 1),
        (5, 0.2, 1),  # 1 x 2 cpu holds 4 x 500m
        (6, 0.2, 2),  # one short: ceil(1.2)
        (10, 1 / 3, 4),  # 500m + 1 cpu
        (2, 0.5, 1),  # equal halves: one for one
        (3, 0.5, 2),
        (9, 1 / 9, 1),
        (10, 1 / 9, 2),
        (4, 0.0, 0),  # no estimate of the sizes
        (4, 1.0, 0),  # a workflow half of nothing frees nothing
    ],
)
def test_release_the_fewest_whose_room_holds_the_rest(
    stuck: int, share: float, released: int
) -> None:
    records = [waiting(f"p{i}", since=float(i)) for i in range(stuck)]
    chosen = to_release(records, share)
    assert len(chosen) == released
    assert [r.pair_id for r in chosen] == [
        f"p{i}" for i in range(stuck - 1, stuck - 1 - released, -1)
    ]
    if released:  # the freed workflow halves hold every remaining runner half, and no fewer do
        assert released * (1 - share) / share >= stuck - released - 1e-9
        fewer = released - 1
        assert fewer == 0 or fewer * (1 - share) / share < stuck - fewer


@pytest.mark.parametrize(
    ("name", "state", "pods", "stuck"),
    [
        ("runner half out of cpu", S.PARTIAL, half_placed("p"), True),
        ("out of memory too", S.REQUESTED, half_placed("p", NO_MEMORY), True),
        ("selector mismatch: room does not help", S.PARTIAL,
         half_placed("p", NO_MATCH), False),
        ("not tried by the scheduler yet", S.PARTIAL, half_placed("p", None), False),
        ("runner half being deleted", S.PARTIAL, half_placed("p", deleting=True), False),
        ("workflow half still pending", S.REQUESTED,
         PairPods(ph("p", Role.RUNNER, phase=PodPhase.PENDING, message=NO_ROOM),
                  ph("p", Role.WORKFLOW, phase=PodPhase.PENDING, message=NO_ROOM)), False),
        ("workflow half on a node that stopped accepting it", S.PARTIAL,
         PairPods(ph("p", Role.RUNNER, phase=PodPhase.PENDING, message=NO_ROOM),
                  ph("p", Role.WORKFLOW, blocked=True)), False),
        ("runner half bound, workflow half missing", S.PARTIAL,
         PairPods(ph("p", Role.RUNNER), None), False),
        ("a READY pair is never stuck", S.READY, half_placed("p"), False),
    ],
)  # fmt: skip
def test_which_pairs_are_stuck(name: str, state: PairState, pods: PairPods, stuck: bool) -> None:
    record = PairRecord.new("p", SCALE_SET, 0.0, "t")
    for target in {S.REQUESTED: (S.REQUESTED,), S.PARTIAL: (S.REQUESTED, S.PARTIAL),
                   S.READY: (S.REQUESTED, S.READY)}[state]:  # fmt: skip
        record = record.moved(target, 1.0, "t")
    assert bool(stuck_pairs([record], {"p": pods}, now=NOW)) is stuck, name


@pytest.mark.parametrize(
    ("waited", "stuck"), [(STUCK_AFTER - 1, False), (STUCK_AFTER, True), (STUCK_AFTER + 1, True)]
)
def test_a_runner_half_counts_as_stuck_once_karpenters_batch_window_is_over(
    waited: float, stuck: bool
) -> None:
    """Room a finishing job frees comes within seconds (releasing a pair then only churns:
    the chaos day made 62 placeholders instead of 43); past Karpenter's 10 s batch window the
    runner half waits for a node to boot."""
    pods = half_placed("p")
    assert pods.runner is not None
    pods = PairPods(dataclasses.replace(pods.runner, created_at=NOW - waited), pods.workflow)
    record = waiting("p", since=NOW - waited)
    assert bool(stuck_pairs([record], {"p": pods}, now=NOW)) is stuck


@pytest.mark.parametrize("share", [None, 0.0])
def test_nothing_is_released_without_the_sizes(share: float | None) -> None:
    """No fit estimate (no NodePools), or halves kept to different nodes: no unblock."""
    pairs = {f"p{i}": waiting(f"p{i}", since=900.0 + i) for i in range(6)}
    pods = {pid: half_placed(pid) for pid in pairs}
    states, limited_by = step(pairs, pods, share=share)
    assert S.DELETED not in states.values()
    assert limited_by != "unblocking"
    assert len(states) == 6
