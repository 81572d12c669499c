"""The listener's reconcile loop schedules on a clock a wall-clock jump cannot move."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from tests.providers.kubernetes.listener_part import RecordedControls, started_part

WAIT = 10.0


def test_stepping_the_wall_clock_back_an_hour_does_not_postpone_the_periodic_reconcile(
    api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop the listener builds (CapacityAwarePart.build) must run the controller's
    schedule on a monotonic clock: when it read the wall clock (issue 10, failure 5), an NTP
    step of an hour back pushed the next periodic step an hour out, and capacity froze
    meanwhile. Pair timestamps keep wall time; only scheduling must ignore the jump."""
    app, part = started_part(api, {"enabled": True})
    try:
        assert part.provider.cache.wait_synced(WAIT)
        loop = part.build(RecordedControls())
        schedule = loop.controller.schedule
        schedule.ran(loop.clock.monotonic())
        due_in = schedule.due_at() - loop.clock.monotonic()

        real_time = time.time
        monkeypatch.setattr(time, "time", lambda: real_time() - 3600.0)

        assert schedule.due_at() - loop.clock.monotonic() == pytest.approx(due_in, abs=1.0)
        assert app.ctx.clock.now() < real_time() - 3000.0  # the jump is real for wall time
    finally:
        part.stop(timeout=1.0)
