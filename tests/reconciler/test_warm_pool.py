"""Adaptive warm pool (``proactiveCapacity: auto``): the slots out of the pool (starting
runners + pairs taken x time to READY, Little's law) over what the reconciler observes, a
Poisson margin, [min, max] bounds, a time-of-day schedule, same safety rules."""

from __future__ import annotations

import pytest
from freezegun import freeze_time

from reconciler.clock import ManualClock, SystemClock
from reconciler.config import ReconcilerConfig
from reconciler.settings import parse_capacity_aware
from reconciler.settings_types import SettingsError
from reconciler.warm_pool import (
    MIN_RATE_SPAN,
    ScheduleEntry,
    WarmPoolObservation,
    WarmPoolPolicy,
    WarmPoolWindow,
    poisson_quantile,
    quantile,
    warm_pairs,
)
from state_machine.events import Kind, TransitionEvent
from state_machine.states import PairState

from .builders import SCALE_SET, runner, snapshot, workflow
from .engine import Stepper

S = PairState
MONDAY = 1_767_571_200.0  # 2026-01-05T00:00:00Z
HOUR = 3600.0


def event(pair_id: str, source: PairState | None, target: PairState, at: float) -> TransitionEvent:
    return TransitionEvent(pair_id, SCALE_SET, source, target, Kind.ACTIVE, "", at, 1, "r", "w")


def policy(**kw: object) -> WarmPoolPolicy:
    return WarmPoolPolicy(**{"minimum": 0, "maximum": 20, **kw})  # type: ignore[arg-type]


# --- the pure estimator ---------------------------------------------------------------------


def test_poisson_quantile_is_the_smallest_pool_that_is_rarely_exhausted() -> None:
    assert poisson_quantile(0.0, 0.05) == 0
    # mean 0.26 (about one job per 4 s, 6 s to refill): P(N >= 1) = 0.23, P(N >= 2) = 0.028
    assert poisson_quantile(0.26, 0.05) == 2
    assert poisson_quantile(0.26, 0.02) == 3
    # mean 4: P(N >= 8) = 0.051, P(N >= 9) = 0.021
    assert poisson_quantile(4.0, 0.05) == 9
    # P(N >= 4) = 0.57, P(N >= 5) = 0.37: half the time more than the mean is in flight
    assert poisson_quantile(4.0, 0.5) == 5


@pytest.mark.parametrize(
    ("ready_quantile", "pairs", "reason"),
    [
        # 9 pairs taken in 15 min = 0.01/s. By default W is the mean time to READY (Little's
        # law and the Poisson count of refills in flight take the mean): (10+20+60)/3 = 30 s,
        # so 0.3 refills in flight, plus 1.7 starting runners on average: L = 2.0;
        # P(N >= 2) = 0.59, P(N >= 3) = 0.32, so 3 pairs miss less than half the time.
        (None, 3, "starting=1.70 taken=0.0100/s W=30.0s L=2.00"),
        # A quantile instead (the maximum: 60 s): L = 1.7 + 0.6 = 2.3; P(N >= 3) = 0.40 -> 3.
        (1.0, 3, "taken=0.0100/s W=60.0s L=2.30"),
    ],
)
def test_starting_runners_plus_refills_in_flight_size_the_pool(
    ready_quantile: float | None, pairs: int, reason: str
) -> None:
    obs = WarmPoolObservation(
        started=90, span=900.0, ready_seconds=(10.0, 20.0, 60.0), starting=1.7, taken=9
    )
    p = policy(miss_probability=0.5, ready_quantile=ready_quantile)
    size = warm_pairs(p, obs, MONDAY + 10 * HOUR)
    assert size.pairs == pairs
    assert reason in size.reason
    assert "jobs=0.1000/s" in size.reason  # reported, not used


def test_jobs_that_never_take_a_pair_still_hold_a_slot_while_starting() -> None:
    """Regression: the first estimator charged every job start a refill and nothing else, so
    a day where jobs land on freed room kept a pool sized by the wrong term."""
    landing_on_free_room = WarmPoolObservation(started=900, span=900.0, starting=4.0, taken=0)
    size = warm_pairs(policy(miss_probability=0.05), landing_on_free_room, MONDAY)
    assert size.pairs == poisson_quantile(4.0, 0.05) == 9
    assert "W=60.0s" in size.reason  # no refill needed: W does not matter


def test_in_a_fleet_the_auto_pool_is_sized_for_the_fleets_load_then_split() -> None:
    """With the fleet view fresh the caller splits the pool across ``fleet_members`` clusters
    (reconciler/fleet.py), so the estimate must be the fleet's: this cluster's load times the
    members. Sized for this cluster's load alone and then split, two clusters with L = 2 each
    kept 2 + 1 pairs where the fleet (L = 4, miss 0.05) needs 9 between them."""
    obs = WarmPoolObservation(started=0, span=900.0, starting=2.0, taken=0)
    p = policy(miss_probability=0.05)
    alone = warm_pairs(p, obs, MONDAY)
    fleet = warm_pairs(p, obs, MONDAY, fleet_members=2)
    assert alone.pairs == poisson_quantile(2.0, 0.05)
    assert fleet.pairs == poisson_quantile(4.0, 0.05) == 9
    assert "L=4.00 (fleet of 2)" in fleet.reason
    # A fixed size is already the fleet's: the members do not change it.
    fixed = policy(auto=False, static_pairs=3)
    assert warm_pairs(fixed, obs, MONDAY, fleet_members=2).pairs == 3


def test_nothing_starting_and_nothing_taken_keeps_the_minimum() -> None:
    obs = WarmPoolObservation(started=0, span=900.0)
    assert warm_pairs(policy(minimum=1), obs, MONDAY).pairs == 1
    assert warm_pairs(policy(minimum=0), obs, MONDAY).pairs == 0


def test_the_estimate_is_clamped_to_the_maximum() -> None:
    obs = WarmPoolObservation(started=900, span=900.0, ready_seconds=(120.0,), taken=900)
    assert warm_pairs(policy(maximum=6), obs, MONDAY).pairs == 6


def test_before_any_pair_was_measured_the_default_ready_time_is_used() -> None:
    obs = WarmPoolObservation(started=60, span=600.0, taken=60)  # 0.1/s taken
    size = warm_pairs(policy(default_ready_seconds=30.0, miss_probability=0.5), obs, MONDAY)
    assert "W=30.0s" in size.reason and size.pairs == poisson_quantile(3.0, 0.5) == 4


def test_a_few_pairs_taken_just_after_a_restart_do_not_look_like_a_flood() -> None:
    # 3 pairs taken in the first 10 s: the rate is taken over at least MIN_RATE_SPAN seconds
    obs = WarmPoolObservation(started=3, span=10.0, ready_seconds=(30.0,), taken=3)
    size = warm_pairs(policy(miss_probability=0.5), obs, MONDAY)
    assert f"taken={3 / MIN_RATE_SPAN:.4f}/s" in size.reason


def test_a_matching_schedule_entry_replaces_the_estimate_and_the_bounds() -> None:
    day = ScheduleEntry(start=7 * HOUR, end=19 * HOUR, pairs=12)
    busy = WarmPoolObservation(started=0, span=900.0)
    p = policy(maximum=4, schedule=(day,))
    assert warm_pairs(p, busy, MONDAY + 7 * HOUR).pairs == 12
    assert warm_pairs(p, busy, MONDAY + 7 * HOUR).reason == "schedule 07:00-19:00"
    # one second either side of the window
    assert warm_pairs(p, busy, MONDAY + 7 * HOUR - 1).pairs == 0
    assert warm_pairs(p, busy, MONDAY + 19 * HOUR - 1).pairs == 12
    assert warm_pairs(p, busy, MONDAY + 19 * HOUR).pairs == 0


def test_a_schedule_entry_may_wrap_over_midnight() -> None:
    night = ScheduleEntry(start=22 * HOUR, end=6 * HOUR, pairs=0)
    assert night.matches(23 * HOUR) and night.matches(1 * HOUR)
    assert not night.matches(12 * HOUR) and not night.matches(6 * HOUR)


def test_a_fixed_pool_with_a_schedule_uses_the_fixed_size_outside_it() -> None:
    p = policy(auto=False, static_pairs=3, schedule=(ScheduleEntry(0.0, HOUR, 0),))
    obs = WarmPoolObservation(started=900, span=900.0)
    assert warm_pairs(p, obs, MONDAY + 2 * HOUR).pairs == 3
    assert warm_pairs(p, obs, MONDAY + 30 * 60).pairs == 0


def test_quantile_is_nearest_rank() -> None:
    assert quantile([], 0.5) is None
    assert quantile([5.0, 1.0, 3.0], 0.5) == 3.0
    assert quantile([5.0, 1.0, 3.0], 1.0) == 5.0


# --- the rolling window ------------------------------------------------------------------------


def test_window_counts_new_runner_pods_as_job_starts_and_forgets_old_ones() -> None:
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe_runners([], 0.0)
    window.observe_runners(["r1", "r2"], 10.0)
    window.observe_runners(["r2", "r3"], 20.0)  # r1 finished, r3 started
    assert window.observation(20.0).started == 3
    # 600 s later the starts at 10 s are out of the window (one second either side)
    assert window.observation(609.0).started == 3
    assert window.observation(611.0).started == 1


def test_the_first_snapshot_only_sets_the_baseline() -> None:
    """A listener restarting among 30 running jobs has not just seen 30 jobs start."""
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe_runners([f"r{i}" for i in range(30)], 0.0)
    assert window.observation(0.0).started == 0


def test_window_measures_created_to_ready_and_drops_pairs_that_leave() -> None:
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe(
        [
            event("a", None, S.QUEUED, 100.0),
            event("b", None, S.QUEUED, 100.0),
            event("a", S.QUEUED, S.REQUESTED, 101.0),
            event("b", S.QUEUED, S.DELETED, 102.0),
            event("a", S.PARTIAL, S.READY, 125.0),
            event("b", S.REQUESTED, S.READY, 130.0),  # b left: no duration for it
        ]
    )
    assert window.observation(130.0).ready_seconds == (25.0,)


def test_a_mended_pair_is_a_refill_measured_from_its_mend() -> None:
    """Regression (issue 24): refills that are mends (only the missing half created again)
    were not sampled, so W came from new pairs alone, the slow ones that need a node, and
    the auto pool grew (ice-failover defaults: 0.80x -> 0.95x the static pool's idle)."""
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe(
        [
            event("a", None, S.QUEUED, 100.0),
            event("a", S.PARTIAL, S.READY, 130.0),
            event("a", S.READY, S.PREEMPTED, 200.0),
            event("a", S.PREEMPTED, S.REQUESTED, 201.0),
            event("a", S.PARTIAL, S.READY, 205.0),
        ]
    )
    assert window.observation(205.0).ready_seconds == (30.0, 4.0)


def test_an_adopted_pair_is_not_a_refill() -> None:
    """Adoption enters READY through its own edge (nothing was created, so nothing was
    refilled). Walked through QUEUED -> REQUESTED -> READY at one instant, as it once was,
    every pair adopted after a restart added a 0 s refill time and pulled W down."""
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe([event("a", None, S.READY, 100.0)])
    assert window.observation(100.0).ready_seconds == ()


def test_window_counts_pairs_taken_and_forgets_old_ones() -> None:
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe(
        [event("a", S.READY, S.PREEMPTED, 10.0), event("b", S.PARTIAL, S.PREEMPTED, 20.0)]
    )
    window.observe([event("c", S.READY, S.DELETED, 30.0)])  # our own scale-down: not taken
    assert window.observation(609.0).taken == 2
    assert window.observation(611.0).taken == 1  # one second either side of 10 + 600


def test_starting_runners_are_averaged_over_time_not_over_snapshots() -> None:
    """Snapshots come faster while things change (watch triggers): a plain mean of samples
    would weight the busy seconds more than the quiet ones."""
    window = WarmPoolWindow(600.0, started_at=0.0)
    window.observe_runners([], 0.0, starting=0)
    for t in (100.0, 100.5, 101.0, 101.5):  # a burst of snapshots, 2 starting
        window.observe_runners(["r1", "r2"], t, starting=2)
    window.observe_runners(["r1", "r2"], 102.0, starting=0)
    # 2 for 2 s of 200 s observed
    assert window.observation(200.0).starting == pytest.approx(2 * 2.0 / 200.0)


def test_the_starting_average_slides_with_the_window() -> None:
    window = WarmPoolWindow(100.0, started_at=0.0)
    window.observe_runners([], 0.0, starting=4)
    window.observe_runners([], 50.0, starting=0)
    assert window.observation(100.0).starting == pytest.approx(2.0)  # 4 for 50 of 100 s
    # the sample at 0 held until 50: 1 s either side of it leaving the window
    assert window.observation(149.0).starting == pytest.approx(4 * 1.0 / 100.0)
    assert window.observation(151.0).starting == 0.0


def test_a_single_snapshot_is_its_own_average() -> None:
    window = WarmPoolWindow(600.0, started_at=0.0)
    assert window.observation(0.0).starting == 0.0
    window.observe_runners(["r1"], 5.0, starting=1)
    assert window.observation(5.0).starting == 1.0


def test_the_span_grows_from_the_start_up_to_the_window() -> None:
    window = WarmPoolWindow(600.0, started_at=1000.0)
    assert window.observation(1100.0).span == 100.0
    assert window.observation(5000.0).span == 600.0


# --- in the reconciler -------------------------------------------------------------------------


def auto_config(**kw: object) -> ReconcilerConfig:
    return ReconcilerConfig(
        scale_set=SCALE_SET,
        proactive_capacity=0,
        warm_pool=policy(**kw),
    )


def test_reconciler_grows_the_pool_with_the_runners_it_sees_starting() -> None:
    clock = ManualClock(MONDAY)
    rec = Stepper(auto_config(minimum=1, miss_probability=0.05), clock)
    rec.step(snapshot())
    assert rec.reconciler.warm_pool.pairs == 1
    # 6 runner pods appear, 2 of which already have their workflow pod bound: 4 starting
    running = tuple(runner(f"r{i}") for i in range(6))
    clock.advance(60)
    rec.step(snapshot(runners=running, workflows=(workflow("r0"), workflow("r1"))))
    clock.advance(60)
    rec.step(snapshot(runners=running, workflows=(workflow("r0"), workflow("r1"))))
    # 0 starting for the first 60 s, 4 for the next 60 s: L = 2.0
    assert rec.reconciler.warm_pool.pairs == poisson_quantile(2.0, 0.05)
    assert "starting=2.00" in rec.reconciler.warm_pool.reason
    result = rec.step(snapshot(runners=running, workflows=(workflow("r0"), workflow("r1"))))
    assert result.result is not None and result.result.warm_pool is not None
    assert (result.result.warm_pool.pairs, result.result.warm_pool.load) == (
        rec.reconciler.warm_pool.pairs,
        pytest.approx(2.0),
    )


def test_a_pending_workflow_pod_does_not_give_the_slot_back() -> None:
    pending = workflow("r0", node=None)
    snap = snapshot(runners=(runner("r0"), runner("r1")), workflows=(pending, workflow("r1")))
    assert snap.starting_runners == 1


def test_reconciler_creates_the_auto_pool_size_of_pairs() -> None:
    clock = ManualClock(MONDAY)
    rec = Stepper(auto_config(minimum=3), clock)
    result = rec.step(snapshot())
    assert sum(1 for e in result.events if e.target is S.QUEUED) == 3


def test_max_runners_zero_is_still_a_hard_cap_under_auto() -> None:
    clock = ManualClock(MONDAY)
    rec = Stepper(auto_config(minimum=5), clock)
    result = rec.step(snapshot(max_runners=0))
    assert not [e for e in result.events if e.target is S.QUEUED]


def test_headroom_caps_auto_like_a_fixed_pool() -> None:
    clock = ManualClock(MONDAY)
    rec = Stepper(auto_config(minimum=8), clock)
    result = rec.step(snapshot(max_runners=3, runners=(runner("r1"),)))
    assert sum(1 for e in result.events if e.target is S.QUEUED) == 2


@freeze_time("2026-01-05 07:00:00", tz_offset=0)
def test_schedule_follows_the_wall_clock_in_production() -> None:
    config = ReconcilerConfig(
        scale_set=SCALE_SET,
        proactive_capacity=1,
        warm_pool=policy(
            auto=False, static_pairs=1, schedule=(ScheduleEntry(7 * HOUR, 8 * HOUR, 4),)
        ),
    )
    rec = Stepper(config, SystemClock())
    rec.step(snapshot())
    warm_pool = rec.reconciler.warm_pool
    assert (warm_pool.pairs, warm_pool.reason) == (4, "schedule 07:00-08:00")


def test_the_settings_defaults_are_the_estimators_defaults() -> None:
    """The shipped defaults live in two places (the settings model and the policy the
    reconciler's tests build directly); measured figures are for the settings' ones."""
    settings = parse_capacity_aware({"proactiveCapacity": "auto"}, where="t")
    # static_pairs is the floor until the first estimate (minPairs), not an estimator dial
    assert settings.warm_pool_policy() == WarmPoolPolicy(static_pairs=0)


def test_a_fixed_pool_without_schedule_keeps_the_old_path() -> None:
    settings = parse_capacity_aware({"proactiveCapacity": 2}, where="t")
    assert settings.reconciler_config(SCALE_SET).warm_pool is None
    assert settings.reconciler_config(SCALE_SET).proactive_capacity == 2


@pytest.mark.parametrize("value", ["auto", "AUTO", " auto "])
def test_settings_accept_auto(value: str) -> None:
    settings = parse_capacity_aware(
        {"proactiveCapacity": value, "warmPool": {"minPairs": 1, "maxPairs": 6}}, where="t"
    )
    config = settings.reconciler_config(SCALE_SET)
    assert config.warm_pool is not None and config.warm_pool.auto
    assert (config.warm_pool.minimum, config.warm_pool.maximum) == (1, 6)
    assert config.proactive_capacity == 1  # until the first estimate


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {"proactiveCapacity": "lots"},
            "capacityAware.proactiveCapacity: got 'lots'; proactiveCapacity is a number of "
            "pairs from 0 to 10000, or 'auto'",
        ),
        ({"proactiveCapacity": True}, "capacityAware.proactiveCapacity: got True"),
        ({"proactiveCapacity": 10_001}, "capacityAware.proactiveCapacity: got 10001"),
        (
            {"proactiveCapacity": 3, "warmPool": {"maxPairs": 3}},
            "warmPool.maxPairs only apply to proactiveCapacity: auto (got proactiveCapacity: 3)",
        ),
        (
            {"proactiveCapacity": "auto", "warmPool": {"minPairs": 5, "maxPairs": 2}},
            "minPairs must be <= maxPairs (got 5 > 2)",
        ),
        (
            {"warmPool": {"schedule": [{"start": "7am", "end": "19:00", "pairs": 1}]}},
            "capacityAware.warmPool.schedule.0.start: got '7am'; a time of day is 'HH:MM' in UTC",
        ),
        (
            {"warmPool": {"schedule": [{"start": "24:00", "end": "01:00", "pairs": 1}]}},
            "warmPool.schedule.0.start: got '24:00'",
        ),
        (
            {"warmPool": {"schedule": [{"start": "07:00", "end": "07:00", "pairs": 1}]}},
            "start and end are equal",
        ),
        (
            {"proactiveCapacity": "auto", "warmPool": {"missProbability": 0}},
            "capacityAware.warmPool.missProbability: got 0",
        ),
    ],
)
def test_bad_warm_pool_settings_name_the_key_and_what_is_allowed(
    block: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        parse_capacity_aware(block, where="values.yaml")
    assert message in str(raised.value)
    assert str(raised.value).startswith("values.yaml: ")


def test_a_fixed_pool_may_carry_a_schedule() -> None:
    settings = parse_capacity_aware(
        {
            "proactiveCapacity": 2,
            "warmPool": {"schedule": [{"start": "22:00", "end": "06:00", "pairs": 0}]},
        },
        where="t",
    )
    policy_ = settings.reconciler_config(SCALE_SET).warm_pool
    assert policy_ is not None and not policy_.auto and policy_.static_pairs == 2
    assert policy_.schedule == (ScheduleEntry(22 * HOUR, 6 * HOUR, 0),)
