"""The launch ramp and node-sized groups (issue 13): how many QUEUED pairs decide requests.

Every bound is a fact about the cluster: maxRunners headroom (how many pairs exist), NodePool
headroom (the fit estimate), and the node-launch rate counted from Karpenter's NodeClaims.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from reconciler.config import ReconcilerConfig
from reconciler.decide import decide
from reconciler.decision import DecideInput
from reconciler.ramp import launch_budget
from reconciler.sizing import packed_target
from reconciler.snapshot import ClusterSnapshot, FitEstimate, LaunchFacts, PairPods, PodPhase
from state_machine.record import PairRecord
from state_machine.states import PairState, Role
from state_machine.store import Move, NewPair

from .builders import INSTANCE, SCALE_SET, ph, snapshot

S = PairState


def config(**kw: object) -> ReconcilerConfig:
    return ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=0, **kw)  # type: ignore[arg-type]


def with_cluster(
    snap: ClusterSnapshot,
    *,
    new_pairs: int = 1_000,
    on_existing: int = 0,
    group: int = 3,
    large: int = 12,
    launched: int = 0,
    launching: int = 0,
    covered: int = 0,
) -> ClusterSnapshot:
    return dataclasses.replace(
        snap,
        fit=FitEstimate(new_pairs, "", on_existing, group, large),
        launches=LaunchFacts(launched, launching, covered),
    )


def budget(snap: ClusterSnapshot, cfg: ReconcilerConfig, *, in_flight: int = 0, unbound: int = 0):  # type: ignore[no-untyped-def]
    inp = DecideInput({}, snap, cfg, 100.0, INSTANCE, False)
    return launch_budget(inp, in_flight, unbound)


@pytest.mark.parametrize(
    ("cluster", "cfg", "unbound", "expected"),
    [
        # 20 nodes/min, none launched: 20 nodes of the largest type (12 pairs) = 240 pairs.
        ({}, {"node_launch_rate": 20}, 0, (200, "per-step cap")),
        ({}, {"node_launch_rate": 10}, 0, (120, "ramp")),
        # NodeClaims created in the last minute use up the rate.
        ({"launched": 8}, {"node_launch_rate": 10}, 0, (24, "ramp")),
        ({"launched": 10}, {"node_launch_rate": 10}, 0, (0, "ramp")),
        # Pending pairs not covered by a launching NodeClaim will still cause nodes.
        ({"launched": 2}, {"node_launch_rate": 10}, 30, (60, "ramp")),  # 30 pending: 3 nodes
        (
            {"launched": 2, "launching": 2, "covered": 24},
            {"node_launch_rate": 10},
            30,
            (84, "ramp"),
        ),
        # Free allocatable needs no new node, but pending pairs take it first.
        ({"launched": 10, "on_existing": 5}, {"node_launch_rate": 10}, 0, (5, "ramp")),
        ({"launched": 10, "on_existing": 5}, {"node_launch_rate": 10}, 3, (2, "ramp")),
        # The NodePool limit is tighter than the rate.
        ({"new_pairs": 7}, {"node_launch_rate": 10}, 0, (7, "nodepool")),
    ],
    ids=str,
)
def test_launch_budget_is_the_tightest_cluster_bound(
    cluster: dict[str, int], cfg: dict[str, float], unbound: int, expected: tuple[int, str]
) -> None:
    snap = with_cluster(snapshot(queued=1_000, max_runners=1_000), **cluster)
    result = budget(snap, config(**cfg), unbound=unbound)
    assert (result.pairs, result.limited_by) == expected


def test_without_karpenter_only_the_safety_valves_bound_launches() -> None:
    result = budget(snapshot(queued=50), config(max_requests_per_step=7))
    assert (result.pairs, result.limited_by) == (7, "per-step cap")


def test_decide_reports_what_held_queued_pairs_back() -> None:
    snap = with_cluster(snapshot(queued=100, max_runners=100), launched=10)
    ids = (f"new-{i}" for i in itertools.count(1))
    decision = decide(DecideInput({}, snap, config(node_launch_rate=10), 0.0, INSTANCE, False), ids)
    assert sum(isinstance(c, NewPair) for c in decision.changes) >= 100
    assert not any(isinstance(c, Move) and c.target is S.REQUESTED for c in decision.changes)
    assert decision.launch_limited_by == "ramp"


#: A NodePool whose limit binds before maxRunners (100) does: room for 50 more pairs.
CAPPED = 50


@pytest.mark.parametrize(
    ("want", "live", "on_existing", "queued", "max_runners", "new_pairs", "expected"),
    [
        (4, 0, 0, 4, 100, CAPPED, 6),  # 4 pairs need nodes: round up to 2 nodes of 3
        (6, 0, 0, 6, 100, CAPPED, 6),  # already whole
        (4, 0, 1, 4, 100, CAPPED, 4),  # one fits free allocatable, 3 make one node
        (4, 2, 0, 4, 100, CAPPED, 5),  # 2 exist, 2 need a node: 3
        (4, 0, 0, 4, 5, 4, 5),  # never beyond maxRunners headroom
        (4, 0, 0, 0, 100, CAPPED, 4),  # no queued jobs: the warm pool is kept as configured
        (0, 0, 0, 0, 100, CAPPED, 0),  # scale to zero stays zero
        (1, 0, 0, 1, 10, 25, 1),  # room for all 10: a lone job gets a pair of its own size
        (4, 0, 0, 4, 100, 1_000, 4),  # room for every pair maxRunners allows: not rounded
    ],
)
def test_pairs_needing_new_nodes_are_rounded_up_to_whole_node_groups_where_the_limit_binds(
    want: int,
    live: int,
    on_existing: int,
    queued: int,
    max_runners: int,
    new_pairs: int,
    expected: int,
) -> None:
    snap = with_cluster(
        snapshot(queued=queued, max_runners=max_runners),
        new_pairs=new_pairs,
        on_existing=on_existing,
        group=3,
    )
    assert packed_target(want, live, snap, config()) == expected


def test_a_partly_used_node_group_is_not_scaled_down_while_jobs_queue() -> None:
    """No flapping: the extra pairs the rounding made are not deleted on the next step while
    the same demand holds; they go when it ends."""
    snap = with_cluster(snapshot(queued=4, max_runners=100), new_pairs=CAPPED, group=3)
    ids = (f"p-{i}" for i in itertools.count(1))
    first = decide(DecideInput({}, snap, config(), 0.0, INSTANCE, False), ids)
    assert sum(isinstance(c, NewPair) for c in first.changes) == 6
    records = {
        pid: PairRecord.new(pid, SCALE_SET, 0.0, "t").moved(S.REQUESTED, 0.0, "t")
        for pid, state in first.states.items()
    }
    same = with_cluster(snapshot(queued=4, max_runners=100), new_pairs=CAPPED, group=3)
    again = decide(DecideInput(records, same, config(), 1.0, INSTANCE, False), ids)
    assert not any(isinstance(c, Move) and c.target is S.DELETED for c in again.changes)
    gone = with_cluster(snapshot(queued=0, max_runners=100), group=3)
    after = decide(DecideInput(records, gone, config(), 2.0, INSTANCE, False), ids)
    assert sum(isinstance(c, Move) and c.target is S.DELETED for c in after.changes) == 6


@pytest.mark.parametrize(
    ("on_existing", "unbound", "expected"),
    [
        (1, 0, 5),  # the free slot takes the fifth pair: nothing needs a node
        (1, 1, 7),  # a pair in flight takes that slot: the fifth needs a node, of 3
        (1, 4, 7),  # more in flight than free slots: never below none free
        (3, 1, 5),  # two slots left after the pair in flight: the fifth fits
        (0, 0, 7),
    ],
)
def test_free_slots_that_pairs_in_flight_will_take_are_not_counted_for_new_pairs(
    on_existing: int, unbound: int, expected: int
) -> None:
    snap = with_cluster(
        snapshot(queued=5, max_runners=100), new_pairs=CAPPED, on_existing=on_existing, group=3
    )
    assert packed_target(5, 4, snap, config(), unbound_in_flight=unbound) == expected


def unbound_pair(pair_id: str) -> PairPods:
    return PairPods(
        ph(pair_id, Role.RUNNER, phase=PodPhase.PENDING, node=None),
        ph(pair_id, Role.WORKFLOW, phase=PodPhase.PENDING, node=None),
    )


def test_a_pair_needing_a_node_is_requested_with_its_node_group_while_the_estimate_is_stale() -> (
    None
):
    """The fit estimate is refreshed every 10 s: a free slot it saw may already be taken by
    pairs requested since. Counted as free, the next job's pair was requested alone, and
    Karpenter launched a node sized for one pair (burst seed 4: four c5.2xlarge with one
    workflow half each under a NodePool limit, where a c5.4xlarge holds three)."""
    in_flight = {f"p-{i}": unbound_pair(f"p-{i}") for i in range(4)}
    records = {
        pid: PairRecord.new(pid, SCALE_SET, 0.0, "t").moved(S.REQUESTED, 0.0, "t")
        for pid in in_flight
    }
    stale = with_cluster(
        snapshot(queued=5, max_runners=100, placeholders=in_flight),
        new_pairs=CAPPED,
        on_existing=1,
        group=3,
    )
    ids = (f"new-{i}" for i in itertools.count(1))
    decision = decide(DecideInput(records, stale, config(), 1.0, INSTANCE, False), ids)
    requested = [c for c in decision.changes if isinstance(c, Move) and c.target is S.REQUESTED]
    assert len(requested) == 3
