"""Periodic scheduling uses a monotonic clock (issue 10, failure 5)."""

from __future__ import annotations

import time

import pytest

from listener import capacity_aware
from listener.capacity_aware import MonotonicClock


def test_a_backward_wall_clock_jump_stalls_the_periodic_reconcile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: the reconcile schedule read the wall clock, so stepping it back an hour
    pushed the next periodic step an hour out. The schedule's clock ignores the jump."""
    clock = MonotonicClock()
    before = clock.now()
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() - 3600.0)
    after = clock.now()
    assert 0.0 <= after - before < 1.0


def test_the_reconcile_loop_is_built_with_the_monotonic_clock() -> None:
    """The loop gets MonotonicClock (wall time stays for pair timestamps only)."""
    import inspect

    source = inspect.getsource(capacity_aware.CapacityAwarePart.build)
    loop_call = source[source.index("ReconcileLoop(") :]
    assert "MonotonicClock()" in loop_call[: loop_call.index("on_step=")]
