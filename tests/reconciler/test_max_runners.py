"""One maxRunners rule (reconciler/max_runners.py): the ledger, the sizing, the capacity gate
and the scaler clamp a live maxRunners the same way, so no two parts disagree on the cap."""

from __future__ import annotations

import pytest

from listener.arc.gate import CapacityGate
from listener.arc.scaler import Scaler
from reconciler.capacity import compute_ledger
from reconciler.max_runners import MAX_INT32, clamp_max_runners
from reconciler.sizing import max_runners_headroom
from tests.listener.test_scaler import RecordingWriter, scaler
from tests.reconciler.builders import snapshot

CASES = [
    # (live maxRunners, clamped)
    (-1, 0),
    (0, 0),
    (1, 1),
    (MAX_INT32 - 1, MAX_INT32 - 1),
    (MAX_INT32, MAX_INT32),
    (MAX_INT32 + 1, MAX_INT32),
]


@pytest.mark.parametrize(("live", "clamped"), CASES)
def test_max_runners_is_clamped_to_zero_and_int32(live: int, clamped: int) -> None:
    assert clamp_max_runners(live) == clamped


@pytest.mark.parametrize(
    ("live", "floor", "clamped"),
    [(2, 3, 3), (3, 3, 3), (4, 3, 4), (MAX_INT32 + 1, 3, MAX_INT32)],
)
def test_a_floor_keeps_the_scaler_at_min_runners(live: int, floor: int, clamped: int) -> None:
    assert clamp_max_runners(live, floor=floor) == clamped


@pytest.mark.parametrize(("live", "clamped"), CASES)
def test_ledger_sizing_gate_and_scaler_apply_the_same_rule(live: int, clamped: int) -> None:
    snap = snapshot(max_runners=live)
    assert compute_ledger(snap, ready_pairs=0).max_runners == clamped
    assert max_runners_headroom(snap) == clamped  # no runner holds room here
    gate = CapacityGate(10)
    gate.set_live_max_runners(live)
    gate.advertise(MAX_INT32)  # the reconciler asks for everything
    assert gate.value == clamped
    s: Scaler = scaler(RecordingWriter())
    s.set_max_runners(live)
    assert s.max_runners == clamped
