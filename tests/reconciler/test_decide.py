"""Decide: sizing, scale-down order, burst cap, fit bound, HUD fallback, adoption, orphans."""

from __future__ import annotations

import dataclasses
import itertools

from reconciler.config import ReconcilerConfig
from reconciler.decide import decide
from reconciler.decision import DecideInput
from reconciler.ports import DeleteOrphan, RenewLease
from reconciler.sizing import desired_pairs
from reconciler.snapshot import ClusterSnapshot, Demand, PairPods, PodPhase
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import Move, NewPair

from .builders import INSTANCE, SCALE_SET, pending_pair, runner, running_pair, snapshot

S = PairState


def config(**kw: object) -> ReconcilerConfig:
    return ReconcilerConfig(scale_set=SCALE_SET, **kw)  # type: ignore[arg-type]


def pairs(*specs: tuple[str, PairState, float]) -> dict[str, PairRecord]:
    out = {}
    for pair_id, state, since in specs:
        record = PairRecord.new(pair_id, SCALE_SET, since, "test")
        if state is not S.QUEUED:
            record = record.moved(S.REQUESTED, since, "t") if state is not S.REQUESTED else record
            record = record.moved(state, since, "t")
        out[pair_id] = record
    return out


def run(
    records: dict[str, PairRecord],
    snap: ClusterSnapshot,
    cfg: ReconcilerConfig,
    *,
    now: float = 100.0,
    first_step: bool = False,
):  # type: ignore[no-untyped-def]
    ids = (f"new-{i}" for i in itertools.count(1))
    return decide(DecideInput(records, snap, cfg, now, INSTANCE, first_step), ids)


def test_desired_is_proactive_plus_queued_clamped_by_headroom() -> None:
    assert desired_pairs(snapshot(queued=3), config(proactive_capacity=2)) == 5
    assert desired_pairs(snapshot(queued=30, max_runners=10), config(proactive_capacity=2)) == 10
    live = tuple(runner(f"r{i}") for i in range(8))
    # 2 of headroom for the queue, and the warm pair on top of it while jobs wait
    assert desired_pairs(snapshot(queued=30, max_runners=10, runners=live), config()) == 3
    assert (
        desired_pairs(
            snapshot(queued=30, max_runners=10, runners=live), config(proactive_capacity=0)
        )
        == 2
    )
    assert desired_pairs(snapshot(max_runners=0), config(proactive_capacity=5)) == 0


def test_warm_pairs_stand_beside_a_full_max_runners_only_while_jobs_wait() -> None:
    """A finished job's successor starts in a warm pair at once (the hand-over) instead of
    waiting for a pair to be confirmed in the room it freed; without a queue nothing is
    handed over, so the warm pool stays within the headroom."""
    full = tuple(runner(f"r{i}") for i in range(10))
    cfg = config(proactive_capacity=4)
    assert desired_pairs(snapshot(queued=50, max_runners=10, runners=full), cfg) == 4
    assert desired_pairs(snapshot(queued=0, max_runners=10, runners=full), cfg) == 0
    assert desired_pairs(snapshot(queued=50, max_runners=3, runners=full[:3]), cfg) == 3


def test_hud_failure_falls_back_to_the_floor_never_zero_or_unlimited() -> None:
    cfg = config(proactive_capacity=2, hud_fallback_queued_jobs=3)
    assert desired_pairs(snapshot(queued=None), cfg) == 5
    assert desired_pairs(snapshot(queued=None, max_runners=4), cfg) == 4


def test_negative_demand_counts_as_zero() -> None:
    assert desired_pairs(snapshot(queued=-7), config(proactive_capacity=1)) == 1


def test_new_pairs_are_queued_then_launched_within_the_per_step_cap() -> None:
    d = run({}, snapshot(queued=9), config(proactive_capacity=1, max_requests_per_step=3))
    new = [c for c in d.changes if isinstance(c, NewPair)]
    launched = [c for c in d.changes if isinstance(c, Move) and c.target is S.REQUESTED]
    assert len(new) == 10
    assert [m.pair_id for m in launched] == ["new-1", "new-2", "new-3"]


def test_burst_cap_bounds_pairs_in_flight() -> None:
    records = pairs(*((f"p{i}", S.REQUESTED, 50.0) for i in range(4)), ("q", S.QUEUED, 60.0))
    d = run(records, snapshot(queued=20), config(max_pairs_in_flight=5, max_requests_per_step=5))
    launched = [c.pair_id for c in d.changes if isinstance(c, Move) and c.target is S.REQUESTED]
    assert launched == ["q"]  # 4 in flight + 1 = the cap of 5; oldest queued first


def test_fit_estimate_bounds_new_requests() -> None:
    d = run({}, snapshot(queued=5, fit=2), config(proactive_capacity=0))
    launched = [c for c in d.changes if isinstance(c, Move) and c.target is S.REQUESTED]
    assert len(launched) == 2


def test_scale_down_order_is_queued_then_pending_then_ready_newest_first() -> None:
    records = pairs(
        ("ready-old", S.READY, 10.0),
        ("ready-new", S.READY, 20.0),
        ("partial", S.PARTIAL, 30.0),
        ("requested", S.REQUESTED, 40.0),
        ("queued", S.QUEUED, 50.0),
    )
    placeholders = {"ready-old": running_pair("ready-old"), "ready-new": running_pair("ready-new")}
    snap = snapshot(placeholders=placeholders, queued=0)
    d = run(records, snap, config(proactive_capacity=1, max_requests_per_step=1), now=55.0)
    deleted = [c.pair_id for c in d.changes if isinstance(c, Move) and c.target is S.DELETED]
    assert deleted == ["queued", "requested", "partial", "ready-new"]


def test_first_step_adopts_complete_pairs_and_deletes_incomplete_ones() -> None:
    snap = snapshot(
        placeholders={
            "old-1": running_pair("old-1", instance="old"),
            "old-2": PairPods(None, pending_pair("old-2").workflow),
        }
    )
    d = run({}, snap, config(proactive_capacity=1), first_step=True)
    assert [c.pair_id for c in d.changes if isinstance(c, NewPair)] == ["old-1"]
    assert d.states["old-1"] is S.READY
    orphans = [c for c in d.commands if isinstance(c, DeleteOrphan)]
    assert [o.pod.name for o in orphans] == [snap.placeholders["old-2"].workflow.name]  # type: ignore[union-attr]


def test_later_steps_delete_pods_of_other_instances_and_expired_leases_only() -> None:
    snap = snapshot(
        placeholders={
            "other-1": running_pair("other-1", instance="zzzzz", expires_at=10_000.0),
            "mine-9": running_pair("mine-9", expires_at=10_000.0),  # ours, being deleted
            "mine-8": running_pair("mine-8", expires_at=50.0),  # ours, lease expired
        }
    )
    d = run({}, snap, config(proactive_capacity=0), now=100.0)
    reasons = sorted(
        {
            (c.pod.name.split("-ph-")[1][:7], c.reason)
            for c in d.commands
            if isinstance(c, DeleteOrphan)
        }
    )
    assert reasons == [("mine-8-", "lease expired"), ("other-1", "left by instance zzzzz")]


def test_leases_are_renewed_past_half_life_only() -> None:
    cfg = config(proactive_capacity=2, placeholder_ttl=1000.0)
    records = pairs(("fresh", S.READY, 0.0), ("aging", S.READY, 0.0))
    snap = snapshot(
        placeholders={
            "fresh": running_pair("fresh", expires_at=100.0 + 501),
            "aging": running_pair("aging", expires_at=100.0 + 499),
        }
    )
    d = run(records, snap, cfg, now=100.0)
    renewals = [c for c in d.commands if isinstance(c, RenewLease)]
    assert [r.pair_id for r in renewals] == ["aging"]
    assert renewals[0].expires_at == 1100.0
    assert len(renewals[0].pods) == 2


def test_timed_out_reason_carries_scheduler_and_karpenter_explanations() -> None:
    records = pairs(("p", S.REQUESTED, 0.0))
    snap = snapshot(
        placeholders={
            "p": pending_pair(
                "p", message="0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
            )
        },
        signals=("InsufficientCapacity g5.xlarge us-east-1a",),
    )
    d = run(records, snap, config(placeholder_ready_timeout=300.0), now=400.0)
    [move] = [c for c in d.changes if isinstance(c, Move) and c.target is S.TIMED_OUT]
    assert "not READY within 300s" in move.reason
    assert "Insufficient nvidia.com/gpu" in move.reason
    assert "InsufficientCapacity g5.xlarge" in move.reason


def test_ready_pair_on_a_cordoned_node_is_retired_and_replaced() -> None:
    records = pairs(("p", S.READY, 0.0))
    snap = snapshot(placeholders={"p": running_pair("p", blocked=True)})
    d = run(records, snap, config(proactive_capacity=1))
    [retired] = [c for c in d.changes if isinstance(c, Move) and c.target is S.DELETED]
    assert retired.pair_id == "p"
    assert "no longer accepts it" in retired.reason
    assert [c.pair_id for c in d.changes if isinstance(c, NewPair)] == ["new-1"]


def test_a_pending_real_runner_reduces_headroom() -> None:
    pending = (runner("r1", node=None, phase=PodPhase.PENDING),)
    assert (
        desired_pairs(snapshot(max_runners=1, runners=pending), config(proactive_capacity=1)) == 0
    )


def test_new_pair_ids_never_collide_with_observed_or_adopted_pairs() -> None:
    """Regression (found by hypothesis): an earlier instance with our prefix left pods behind."""
    snap = snapshot(placeholders={"new-1": running_pair("new-1", instance="new")})
    d = run({}, snap, config(proactive_capacity=3), first_step=True)
    created = [c.pair_id for c in d.changes if isinstance(c, NewPair)]
    assert created == ["new-1", "new-2", "new-3"]  # new-1 adopted, two fresh ones
    assert len(set(created)) == len(created)


def test_pending_leftovers_are_not_adopted_so_the_burst_cap_holds() -> None:
    """Regression (found by hypothesis): adopting pending pairs exceeded maxPairsInFlight."""
    snap = snapshot(placeholders={f"old-{i}": pending_pair(f"old-{i}") for i in range(6)})
    d = run(
        {},
        snap,
        config(proactive_capacity=6, max_pairs_in_flight=2, max_requests_per_step=2),
        first_step=True,
    )
    assert len(d.in_states(S.REQUESTED, S.PARTIAL)) == 2
    assert len([c for c in d.commands if isinstance(c, DeleteOrphan)]) == 12


def test_a_partly_failing_demand_never_goes_below_the_floor() -> None:
    """A source that failed still counts for the floor under the answers of the others."""
    cfg = config(proactive_capacity=0, hud_fallback_queued_jobs=2)
    partial = dataclasses.replace(snapshot(queued=0), demand=Demand(0, error="hud: down"))
    assert desired_pairs(partial, cfg) == 2
    more = dataclasses.replace(snapshot(queued=0), demand=Demand(5, error="hud: down"))
    assert desired_pairs(more, cfg) == 5
