"""The listener's reconcile loop schedules on a clock a wall-clock jump cannot move."""

from __future__ import annotations

import time
import types

import pytest
from kubernetes import client

from listener.app import ListenerApp
from listener.arc_config import parse_listener_config
from listener.capacity_aware import CapacityAwarePart
from reconciler.settings import parse_capacity_aware
from tests.kubernetes import objects as o

WAIT = 10.0


def test_stepping_the_wall_clock_back_an_hour_does_not_postpone_the_periodic_reconcile(
    api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop the listener builds (CapacityAwarePart.build) must run the controller's
    schedule on a monotonic clock: when it read the wall clock (issue 10, failure 5), an NTP
    step of an hour back pushed the next periodic step an hour out, and capacity froze
    meanwhile. Pair timestamps keep wall time; only scheduling must ignore the jump."""
    config = parse_listener_config(
        {
            "configure_url": "https://github.com/acme",
            "github_token": "ghp_" + "t" * 36,
            "ephemeral_runner_set_namespace": o.NS,
            "ephemeral_runner_set_name": o.ERS,
            "runner_scale_set_id": 1,
            "max_runners": 10,
        }
    )
    capacity = parse_capacity_aware({"enabled": True}, where="test")
    app = ListenerApp(config, capacity, {})
    part = CapacityAwarePart(
        api,
        config,
        capacity,
        instance=app.instance,
        clock=app.clock,
        gate=app.gate,
        metrics=app.metrics,
        status=app.status,
        demand=app._demand,
    ).start()
    try:
        assert part.provider.cache.wait_synced(WAIT)
        loop = part.build(types.SimpleNamespace())  # type: ignore[arg-type]
        schedule = loop.controller.schedule
        schedule.ran(loop.clock.now())
        due_in = schedule.due_at() - loop.clock.now()

        real_time = time.time
        monkeypatch.setattr(time, "time", lambda: real_time() - 3600.0)

        assert schedule.due_at() - loop.clock.now() == pytest.approx(due_in, abs=1.0)
        assert app.clock.now() < real_time() - 3000.0  # the jump is real for wall time
    finally:
        part.stop(timeout=1.0)
