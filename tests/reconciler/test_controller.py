"""The scale-set controller: when work is due, what is published, fail-closed, drops.

Pure: every input is an argument (``now``, the snapshot, how long the watches have been down),
so these read as stories of one scale set with no clock, thread or sleep.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.config import ReconcilerConfig
from reconciler.controller import (
    NOT_SYNCED_RETRY,
    ScalerTarget,
    ScaleSetController,
    Trigger,
    Work,
)
from reconciler.schedule import Timings

from .builders import SCALE_SET, running_pair, snapshot

INTERVAL = 30.0
READY = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2)}


def controller(proactive: int = 2) -> ScaleSetController:
    return ScaleSetController(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive),
        Timings(interval=INTERVAL, debounce=1.0, max_delay=5.0, min_gap=0.5),
        instance="i0",
        started_at=0.0,
    )


def with_two_ready_pairs() -> ScaleSetController:
    c = controller()
    c.step(0.0, snapshot(now=0.0), stale_for=0.0)  # requests i0-1 and i0-2
    out = c.step(1.0, snapshot(now=1.0, placeholders=READY), stale_for=0.0)
    assert out.capacity == 2
    return c


def test_the_first_step_is_due_at_once_then_the_periodic_interval() -> None:
    c = controller()
    assert c.due(0.0) is Work.STEP
    c.step(0.0, snapshot(), stale_for=0.0)
    assert c.due(INTERVAL - 1) is None
    assert c.due(INTERVAL) is Work.STEP
    assert c.next_wake(1.0) == INTERVAL


@pytest.mark.parametrize(
    ("leading", "due_at"),
    [(False, 10.0 + 1.0), (True, 10.0)],
    ids=["watch change: debounced", "placeholder Running or demand: at once"],
)
def test_a_change_makes_a_step_due_by_its_kind(leading: bool, due_at: float) -> None:
    c = controller()
    c.step(0.0, snapshot(), stale_for=0.0)
    c.changed(10.0, Trigger(leading=leading))
    assert c.next_wake(10.0) == due_at
    assert c.due(due_at - 0.01) is None
    assert c.due(due_at) is Work.STEP


def test_no_decision_before_the_caches_synced_and_a_retry_soon_after() -> None:
    c = controller()
    out = c.step(0.0, None, stale_for=0.0)
    assert out.capacity is None and out.result is None and c.reconciler.steps == 0
    assert c.due(NOT_SYNCED_RETRY - 0.01) is None
    assert c.due(NOT_SYNCED_RETRY) is Work.STEP


@pytest.mark.parametrize(
    ("stale_for", "fails_closed"),
    [(INTERVAL - 1, False), (INTERVAL + 1, True)],
    ids=["down one second less than the interval", "down one second more"],
)
def test_watches_down_longer_than_the_interval_fail_closed(
    stale_for: float, fails_closed: bool
) -> None:
    """A placeholder lost while the watches were down may still look counted: past one
    interval nothing the view shows may back a slot, and nothing is decided on it."""
    c = with_two_ready_pairs()
    steps = c.reconciler.steps
    out = c.step(2.0, snapshot(now=2.0, placeholders=READY), stale_for=stale_for)
    assert out.failing_closed is fails_closed
    assert out.capacity == (0 if fails_closed else 2)
    assert c.reconciler.steps == steps + (0 if fails_closed else 1)


def test_after_an_outage_a_drop_is_compared_with_what_was_really_published() -> None:
    """Regression: the fail-closed write bypassed the published value, so after the outage
    the drop guard compared a falling ledger with the pre-outage 2 and, seeing 1 < 2,
    published it, although 0 was on the wire and only a full step may raise capacity."""
    c = with_two_ready_pairs()
    c.step(2.0, snapshot(now=2.0, placeholders=READY), stale_for=INTERVAL + 1)
    assert c.published == 0
    c.changed(3.0, Trigger(lost=True))
    one_left = snapshot(now=3.0, placeholders={"i0-1": READY["i0-1"]})
    assert c.check_drop(3.0, one_left, stale_for=0.0).capacity is None
    assert c.published == 0


def test_a_lost_placeholder_lowers_capacity_before_the_next_step() -> None:
    c = with_two_ready_pairs()
    c.changed(2.0, Trigger(lost=True))
    assert c.due(2.0) is Work.DROP_CHECK and c.next_wake(2.0) == 2.0
    one_left = snapshot(now=2.0, placeholders={"i0-1": READY["i0-1"]})
    out = c.check_drop(2.0, one_left, stale_for=0.0)
    assert out.capacity == 1 and out.result is None
    assert c.published == 1 and c.drops == 1


def test_a_drop_check_never_raises_capacity() -> None:
    """Rises wait for a full step, the only path that may grow what GitHub is told."""
    c = with_two_ready_pairs()
    c.changed(2.0, Trigger(lost=True))
    three = {**READY, "i0-3": running_pair("i0-3")}
    assert c.check_drop(2.0, snapshot(now=2.0, placeholders=three), stale_for=0.0).capacity is None
    assert c.published == 2


def test_a_failing_step_publishes_the_confirmed_capacity_and_retries_at_the_next_due_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = with_two_ready_pairs()

    def explode(*_args: object, **_kw: object) -> None:
        raise RuntimeError("decide exploded")

    monkeypatch.setattr("reconciler.reconciler.decide", explode)
    one_left = snapshot(now=5.0, placeholders={"i0-1": READY["i0-1"]})
    out = c.step(5.0, one_left, stale_for=0.0)
    assert isinstance(out.error, RuntimeError)
    assert out.capacity == 1 and c.published == 1 and c.errors == 1
    assert c.due(5.0 + INTERVAL - 1) is None and c.due(5.0 + INTERVAL) is Work.STEP


def test_events_and_commands_come_out_for_the_subscribers() -> None:
    """Effects out: the controller writes nothing itself."""
    c = controller(proactive=1)
    out = c.step(0.0, snapshot(), stale_for=0.0)
    assert [(e.pair_id, e.target.value) for e in out.events] == [
        ("i0-1", "QUEUED"),
        ("i0-1", "REQUESTED"),
    ]


OFF = "EphemeralRunnerSet arc-runners status.phase is Outdated"


@pytest.mark.parametrize(
    ("work", "expected"),
    [
        ("step", ScalerTarget(switched_off=False, max_runners=10, hot_runners=0)),
        ("step switched off", ScalerTarget(switched_off=True, max_runners=0, hot_runners=0)),
        ("drop check", ScalerTarget(switched_off=False)),
        ("drop check switched off", ScalerTarget(switched_off=True)),
        ("failing closed", ScalerTarget(switched_off=False)),
        ("not synced", None),
    ],
)
def test_the_output_carries_the_scaler_target_and_placement_the_snapshot_saw(
    work: str, expected: ScalerTarget | None
) -> None:
    """Regression: switched-off and the placement were read off the provider after the step
    (what its last snapshot left there), so the simulator, which has no such provider, never
    fed them. The Output carries them; the live maxRunners and hot runners only from a step."""
    c = with_two_ready_pairs()
    off = OFF if "switched off" in work else None
    seen = replace(
        snapshot(now=2.0, placeholders=READY, max_runners=0 if off else 10),
        switched_off=off,
        placed_by_hook_template=True,
    )
    if work.startswith("step"):
        out = c.step(INTERVAL + 2.0, seen, stale_for=0.0)
    elif work.startswith("drop check"):
        c.changed(2.0, Trigger(lost=True))
        out = c.check_drop(2.0, seen, stale_for=0.0)
    elif work == "failing closed":
        out = c.step(INTERVAL + 2.0, seen, stale_for=INTERVAL + 1)
    else:
        out = c.step(INTERVAL + 2.0, None, stale_for=0.0)
    assert out.scaler == expected
    assert out.placed_by_hook_template is (None if expected is None else True)
