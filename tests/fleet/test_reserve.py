"""Fleet-aware reserve and demand in the reconciler: a fleet share changes how many pairs are
built and how many warm pairs are kept, never what is advertised."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.clock import ManualClock
from reconciler.config import ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot, Demand, FleetPart
from reconciler.warm_pool import WarmPoolPolicy
from state_machine.events import TransitionEvent
from tests.reconciler.builders import INSTANCE, SCALE_SET, running_pair, snapshot
from tests.reconciler.engine import Stepper


def shared(base: ClusterSnapshot, part: FleetPart | None) -> ClusterSnapshot:
    queued = base.demand.queued_jobs
    return replace(base, demand=Demand(queued_jobs=queued, fleet=part))


def new_pairs(events: tuple[TransitionEvent, ...]) -> int:
    return sum(e.source is None for e in events)


def creates(stepper: Stepper, snap: ClusterSnapshot) -> int:
    return new_pairs(stepper.step(snap).events)


def part(rank: int, members: int) -> FleetPart:
    return FleetPart(rank=rank, members=members)


@pytest.mark.parametrize(
    ("proactive", "queued", "fleet", "expected"),
    [
        # Alone: the whole warm pool plus every queued job.
        (3, 4, None, 7),
        # The warm pool split exactly (3 = 2 + 1; the first cluster by name takes the one
        # left over), plus the queued jobs already this cluster's part (from the source).
        (3, 2, part(0, 2), 4),
        (3, 2, part(1, 2), 3),
        # One warm pair for two clusters: one keeps it, the other keeps none (a job that
        # finds no room there goes to the cluster that advertises it).
        (1, 0, part(0, 2), 1),
        (1, 0, part(1, 2), 0),
        (3, 0, part(2, 3), 1),
        (4, 0, part(0, 3), 2),
        (0, 3, part(0, 2), 3),
        # A cluster whose peers all dropped out keeps the whole pool.
        (3, 0, part(0, 1), 3),
    ],
)
def test_the_warm_pool_kept_is_this_clusters_part_of_an_exact_split(
    proactive: int, queued: int, fleet: FleetPart | None, expected: int
) -> None:
    """``queued`` here is what the demand source hands decide (already this cluster's part,
    see providers/fleet/share.py); the reconciler splits only the warm pool. Rounded up in
    every cluster (the first version), two clusters kept 2 + 2 pairs of a pool of 3."""
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive)
    stepper = Stepper(config, ManualClock(1000.0), instance=INSTANCE)
    assert creates(stepper, shared(snapshot(queued=queued, max_runners=50), fleet)) == expected


@pytest.mark.parametrize("clusters", [1, 2, 3, 5])
@pytest.mark.parametrize("proactive", [0, 1, 2, 3, 4, 7])
def test_the_fleets_warm_pools_sum_to_proactive_capacity(proactive: int, clusters: int) -> None:
    """The fleet keeps one warm pool of ``proactiveCapacity`` pairs, not one per cluster."""
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive)
    kept = [
        creates(
            Stepper(config, ManualClock(1000.0), instance=INSTANCE),
            shared(snapshot(queued=0, max_runners=50), part(rank, clusters)),
        )
        for rank in range(clusters)
    ]
    assert sum(kept) == proactive


def test_a_fleet_share_never_changes_what_is_advertised() -> None:
    """Regression guard for the rule of docs/fleet.md: the header is only this cluster's
    confirmed slots. The same cluster (four READY pairs) with and without a share of a fresh
    view advertises the same, and the share only trims pairs it would build next."""
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=4)
    pairs = {f"{INSTANCE}-{i}": running_pair(f"{INSTANCE}-{i}") for i in range(1, 5)}
    base = snapshot(placeholders=pairs, queued=6, max_runners=50)
    alone, sharing = (Stepper(config, ManualClock(1000.0), instance=INSTANCE) for _ in range(2))
    out_alone = alone.step(shared(base, None))
    out_sharing = sharing.step(shared(replace(base, demand=Demand(queued_jobs=3)), part(0, 2)))
    assert out_alone.capacity == out_sharing.capacity == 4
    assert out_alone.result is not None and out_sharing.result is not None
    assert out_alone.result.ledger == out_sharing.result.ledger
    assert new_pairs(out_sharing.events) < new_pairs(out_alone.events)


def test_an_auto_pool_is_split_like_a_fixed_one() -> None:
    """``auto`` (nothing observed yet: its minimum of 4) is the fleet's pool too: the second
    of two clusters keeps 2 of it, not 4."""
    policy = WarmPoolPolicy(auto=True, minimum=4, maximum=20)
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=4, warm_pool=policy)
    stepper = Stepper(config, ManualClock(1000.0), instance=INSTANCE)
    assert creates(stepper, shared(snapshot(queued=0, max_runners=50), part(1, 2))) == 2
