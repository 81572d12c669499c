"""Boundaries one second either side, with freezegun moving the one clock (SystemClock)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from reconciler.clock import SystemClock
from reconciler.config import ReconcilerConfig
from reconciler.ports import DeleteOrphan, RenewLease
from reconciler.schedule import Schedule, Timings
from reconciler.snapshot import PairPods
from reconciler.subscribers import RecordingSubscriber
from state_machine.states import PairState, Role

from .builders import SCALE_SET, pending_pair, ph, runner, running_pair, snapshot
from .engine import Stepper

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
S = PairState


def reconciler(**kw: object) -> tuple[Stepper, RecordingSubscriber]:
    recorder = RecordingSubscriber()
    config = ReconcilerConfig(scale_set=SCALE_SET, **kw)  # type: ignore[arg-type]
    return Stepper(config, SystemClock(), subscribers=[recorder]), recorder


def test_ready_timeout_boundary() -> None:
    with freeze_time(START) as frozen:
        rec, recorder = reconciler(proactive_capacity=2, placeholder_ready_timeout=300)
        rec.step(snapshot())  # i0-1 and i0-2 requested at START
        pending = {"i0-1": pending_pair("i0-1"), "i0-2": pending_pair("i0-2")}
        frozen.move_to(START + timedelta(seconds=299))
        rec.step(snapshot(placeholders=pending))
        assert rec.store.counts()[S.TIMED_OUT] == 0
        frozen.move_to(START + timedelta(seconds=301))
        rec.step(snapshot(placeholders=pending))
        assert rec.store.counts()[S.TIMED_OUT] == 2
        timed_out = [
            (e.pair_id, e.source, e.target) for e in recorder.events if e.target is S.TIMED_OUT
        ]
        assert timed_out == [("i0-1", S.REQUESTED, S.TIMED_OUT), ("i0-2", S.REQUESTED, S.TIMED_OUT)]


def test_partial_flapping_does_not_postpone_the_timeout() -> None:
    with freeze_time(START) as frozen:
        rec, _ = reconciler(proactive_capacity=1, placeholder_ready_timeout=300)
        rec.step(snapshot())
        half = PairPods(ph("i0-1", Role.RUNNER), pending_pair("i0-1").workflow)
        stalled = PairPods(ph("i0-1", Role.RUNNER, blocked=True), pending_pair("i0-1").workflow)
        for second in range(0, 300, 50):
            frozen.move_to(START + timedelta(seconds=second))
            rec.step(snapshot(placeholders={"i0-1": half if second % 100 else stalled}))
        frozen.move_to(START + timedelta(seconds=301))
        rec.step(snapshot(placeholders={"i0-1": half}))
        assert "i0-1" in rec.store and rec.store.get("i0-1").state is S.TIMED_OUT


def test_survivor_window_boundary() -> None:
    with freeze_time(START) as frozen:
        rec, _ = reconciler(proactive_capacity=1, survivor_window=600)
        rec.step(snapshot())
        rec.step(snapshot(placeholders={"i0-1": running_pair("i0-1")}))
        survivor = {"i0-1": PairPods(None, ph("i0-1", Role.WORKFLOW))}
        busy = (runner("r1"),)
        rec.step(snapshot(placeholders=survivor, runners=busy))  # PREEMPTED at START
        assert rec.store.get("i0-1").state is S.PREEMPTED
        frozen.move_to(START + timedelta(seconds=599))
        rec.step(snapshot(placeholders=survivor, runners=busy))
        assert rec.store.get("i0-1").state is S.PREEMPTED
        frozen.move_to(START + timedelta(seconds=601))
        result = rec.step(snapshot(placeholders=survivor, runners=busy))
        assert "i0-1" not in rec.store
        assert any(e.pair_id == "i0-1" and e.target is S.DELETED for e in result.events)


def test_lease_renewal_boundary() -> None:
    with freeze_time(START) as frozen:
        now = START.timestamp()
        rec, recorder = reconciler(proactive_capacity=1, placeholder_ttl=1000)
        rec.step(snapshot())
        ready = {"i0-1": running_pair("i0-1", expires_at=now + 1000)}
        rec.step(snapshot(placeholders=ready))
        frozen.move_to(START + timedelta(seconds=499))  # 501 s left: more than half
        rec.step(snapshot(placeholders=ready))
        assert not [c for c in recorder.commands if isinstance(c, RenewLease)]
        frozen.move_to(START + timedelta(seconds=501))  # 499 s left: renew
        rec.step(snapshot(placeholders=ready))
        [renewal] = [c for c in recorder.commands if isinstance(c, RenewLease)]
        assert renewal.expires_at == now + 501 + 1000


def test_lease_expiry_boundary_for_orphans() -> None:
    with freeze_time(START) as frozen:
        now = START.timestamp()
        rec, recorder = reconciler(proactive_capacity=0)
        rec.step(snapshot())  # first step done; adoption window closed
        ours_unknown = {"i0-77": running_pair("i0-77", expires_at=now + 100, instance="i0")}
        frozen.move_to(START + timedelta(seconds=99))
        rec.step(snapshot(placeholders=ours_unknown))
        assert not [c for c in recorder.commands if isinstance(c, DeleteOrphan)]
        frozen.move_to(START + timedelta(seconds=101))
        rec.step(snapshot(placeholders=ours_unknown))
        orphans = [c for c in recorder.commands if isinstance(c, DeleteOrphan)]
        assert {c.reason for c in orphans} == {"lease expired"}
        assert len(orphans) == 2


def test_periodic_fallback_boundary() -> None:
    with freeze_time(START) as frozen:
        clock = SystemClock()
        schedule = Schedule(Timings(interval=30, jitter=0.0, debounce=1.0), rng=random.Random(1))
        assert clock.now() >= schedule.due_at()  # never ran: due at once
        schedule.ran(clock.now())
        frozen.move_to(START + timedelta(seconds=29))
        assert clock.now() < schedule.due_at()
        frozen.move_to(START + timedelta(seconds=31))
        assert clock.now() >= schedule.due_at()


def test_watch_trigger_is_debounced_but_never_starved() -> None:
    with freeze_time(START) as frozen:
        clock = SystemClock()
        schedule = Schedule(Timings(interval=30, debounce=1.0, max_delay=5.0))
        schedule.ran(clock.now())
        t0 = clock.now()
        for second in range(0, 5):  # an event every second keeps pushing the debounce out
            frozen.move_to(START + timedelta(seconds=second))
            schedule.trigger(clock.now())
            assert clock.now() < schedule.due_at()
        frozen.move_to(START + timedelta(seconds=4.9))
        assert clock.now() < schedule.due_at()
        frozen.move_to(START + timedelta(seconds=5.1))  # max_delay after the first trigger
        assert clock.now() >= schedule.due_at()
        assert schedule.due_at() == t0 + 5.0


def test_jitter_spreads_periodic_steps_within_bounds() -> None:
    schedule = Schedule(Timings(interval=100, jitter=0.1), rng=random.Random(7))
    dues = []
    for _ in range(200):
        schedule.ran(0.0)
        dues.append(schedule.due_at())
    assert min(dues) >= 90 and max(dues) <= 110
    assert len({round(d, 3) for d in dues}) > 100  # listeners drift apart, not lockstep


def test_a_leading_trigger_after_the_min_gap_runs_a_step_at_once() -> None:
    """A cold job's demand, or a pair turning READY, must not wait for the debounce."""
    with freeze_time(START) as frozen:
        clock = SystemClock()
        schedule = Schedule(Timings(30, 0.0, debounce=2.0, max_delay=5.0, min_gap=1.0))
        schedule.ran(clock.now())
        frozen.move_to(START + timedelta(seconds=1))  # exactly one min_gap since the step
        schedule.trigger(clock.now(), leading=True)
        assert clock.now() >= schedule.due_at()


def test_a_leading_trigger_inside_the_min_gap_waits_for_the_gap_not_the_debounce() -> None:
    """A stream of leading triggers (every pod of a burst) runs one step per min_gap."""
    with freeze_time(START) as frozen:
        clock = SystemClock()
        schedule = Schedule(Timings(30, 0.0, debounce=2.0, max_delay=5.0, min_gap=1.0))
        schedule.ran(clock.now())
        step = clock.now()
        frozen.move_to(START + timedelta(seconds=0.5))  # half a gap after the step
        schedule.trigger(clock.now(), leading=True)
        assert clock.now() < schedule.due_at()
        assert schedule.due_at() == step + 1.0  # the gap, not now + debounce (2.5)
        frozen.move_to(START + timedelta(seconds=0.9))
        schedule.trigger(clock.now(), leading=True)  # a second one does not push it out
        assert schedule.due_at() == step + 1.0
        schedule.ran(step + 1.0)
        assert schedule.leading_trigger is None


def test_an_ordinary_trigger_keeps_the_debounce_beside_a_leading_one() -> None:
    """Node and NodeClaim changes stay debounced; a later leading trigger still runs early."""
    with freeze_time(START) as frozen:
        clock = SystemClock()
        schedule = Schedule(Timings(30, 0.0, debounce=2.0, max_delay=5.0, min_gap=0.5))
        schedule.ran(clock.now())
        frozen.move_to(START + timedelta(seconds=3))
        schedule.trigger(clock.now())
        assert schedule.due_at() == clock.now() + 2.0
        frozen.move_to(START + timedelta(seconds=3.2))
        schedule.trigger(clock.now(), leading=True)
        assert clock.now() >= schedule.due_at()


@pytest.mark.parametrize(("gap", "debounce", "due"), [(0.5, 2.0, 0.5), (5.0, 2.0, 2.0)])
def test_the_min_gap_never_exceeds_the_debounce(gap: float, debounce: float, due: float) -> None:
    """A leading trigger is never later than an ordinary one would be."""
    schedule = Schedule(Timings(30, 0.0, debounce=debounce, max_delay=5.0, min_gap=gap))
    schedule.ran(100.0)
    schedule.trigger(100.0, leading=True)
    assert schedule.due_at() == 100.0 + due
