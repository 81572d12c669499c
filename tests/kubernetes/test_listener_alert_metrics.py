"""The capacity-aware part reports fail-closed to the metrics the alert rules read
(config/monitoring/alert-rules.yaml: ArcCapacityFailingClosed, ArcCapacityUnconfirmedCapacity)."""

from __future__ import annotations

import types

from kubernetes import client

from listener.app import ListenerApp
from listener.arc_config import parse_listener_config
from listener.capacity_aware import CapacityAwarePart
from reconciler.controller import Output
from reconciler.settings import parse_capacity_aware
from tests.kubernetes import objects as o
from tests.ship.test_metrics import value

WAIT = 10.0


def test_failing_closed_sets_the_gauge_and_the_advertised_value_and_recovery_clears_it(
    api: client.ApiClient,
) -> None:
    """Regression: while failing closed no step result comes, so arc_capacity_advertised kept
    the last step's value (not what GitHub was told) and nothing said the view was stale."""
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
        assert loop.on_output is not None
        app.metrics.record_advertised(4)  # the last step's value
        app.gate.set_max_runners(0)  # what the loop publishes before telling us
        loop.on_output(Output(capacity=0, failing_closed=True), 0.0, 0)
        assert value(app.metrics, "arc_capacity_failing_closed", name=o.ERS) == 1
        assert value(app.metrics, "arc_capacity_advertised", name=o.ERS) == 0

        loop.on_output(Output(failing_closed=False), 0.0, 0)
        assert value(app.metrics, "arc_capacity_failing_closed", name=o.ERS) == 0
    finally:
        part.stop(timeout=1.0)
