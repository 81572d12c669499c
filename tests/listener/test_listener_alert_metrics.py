"""The capacity-aware part reports fail-closed to the metrics the alert rules read
(config/monitoring/alert-rules.yaml: ArcCapacityFailingClosed, ArcCapacityUnconfirmedCapacity)."""

from __future__ import annotations

from kubernetes import client

from reconciler.controller import Output, ScalerTarget
from scaleset.carry_out import carry_out
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.listener_part import RecordedControls, started_part
from tests.ship.test_metrics import value

WAIT = 10.0


def test_failing_closed_sets_the_gauge_and_the_advertised_value_and_recovery_clears_it(
    api: client.ApiClient,
) -> None:
    """Regression: while failing closed no step result comes, so arc_capacity_advertised kept
    the last step's value (not what GitHub was told) and nothing said the view was stale."""
    app, part = started_part(api, {"enabled": True})
    try:
        assert part.provider.cache.wait_synced(WAIT)
        scaler = RecordedControls()
        loop = part.build(scaler)
        app.metrics.record_advertised(4)  # the last step's value
        on = ScalerTarget(switched_off=False)  # what a snapshot outside a step carries
        carry_out(Output(capacity=0, failing_closed=True, scaler=on), loop.effects)
        assert value(app.metrics, "arc_capacity_failing_closed", name=o.ERS) == 1
        assert value(app.metrics, "arc_capacity_advertised", name=o.ERS) == 0

        carry_out(Output(failing_closed=False, scaler=on), loop.effects)
        assert value(app.metrics, "arc_capacity_failing_closed", name=o.ERS) == 0
        # No step result: ARC's scaler only hears that the set is on, no maxRunners or hot runners.
        assert scaler.calls == [("set_switched_off", False)] * 2
    finally:
        part.stop(timeout=1.0)
