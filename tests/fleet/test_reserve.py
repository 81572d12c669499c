"""Fleet-aware reserve and demand in the reconciler: a fleet share changes how many pairs are
built and how many warm pairs are kept, never what is advertised."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.clock import ManualClock
from reconciler.config import ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot, Demand
from state_machine.events import TransitionEvent
from tests.reconciler.builders import INSTANCE, SCALE_SET, running_pair, snapshot
from tests.reconciler.engine import Stepper


def shared(base: ClusterSnapshot, share: float | None) -> ClusterSnapshot:
    queued = base.demand.queued_jobs
    return replace(base, demand=Demand(queued_jobs=queued, fleet_share=share))


def new_pairs(events: tuple[TransitionEvent, ...]) -> int:
    return sum(e.source is None for e in events)


def creates(stepper: Stepper, snap: ClusterSnapshot) -> int:
    return new_pairs(stepper.step(snap).events)


@pytest.mark.parametrize(
    ("proactive", "queued", "share", "expected"),
    [
        # Alone: the whole warm pool plus every queued job.
        (3, 4, None, 7),
        # Half of each, rounded up: ceil(3/2) + the queued jobs already shared by the source.
        (3, 2, 0.5, 4),
        (1, 0, 0.5, 1),
        (3, 0, 1 / 3, 1),
        (0, 3, 0.5, 3),
    ],
)
def test_the_warm_pool_kept_is_the_share_of_proactive_capacity(
    proactive: int, queued: int, share: float | None, expected: int
) -> None:
    """``queued`` here is what the demand source hands decide (already the share, see
    providers/fleet/share.py); the reconciler shares only the warm pool."""
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive)
    stepper = Stepper(config, ManualClock(1000.0), instance=INSTANCE)
    assert creates(stepper, shared(snapshot(queued=queued, max_runners=50), share)) == expected


def test_a_fleet_share_never_changes_what_is_advertised() -> None:
    """Regression guard for the rule of docs/fleet.md: the header is only this cluster's
    confirmed slots. The same cluster (four READY pairs) with and without a share of a fresh
    view advertises the same, and the share only trims pairs it would build next."""
    config = ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=4)
    pairs = {f"{INSTANCE}-{i}": running_pair(f"{INSTANCE}-{i}") for i in range(1, 5)}
    base = snapshot(placeholders=pairs, queued=6, max_runners=50)
    alone, sharing = (Stepper(config, ManualClock(1000.0), instance=INSTANCE) for _ in range(2))
    out_alone = alone.step(shared(base, None))
    out_sharing = sharing.step(shared(replace(base, demand=Demand(queued_jobs=3)), 0.5))
    assert out_alone.capacity == out_sharing.capacity == 4
    assert out_alone.result is not None and out_sharing.result is not None
    assert out_alone.result.ledger == out_sharing.result.ledger
    assert new_pairs(out_sharing.events) < new_pairs(out_alone.events)
