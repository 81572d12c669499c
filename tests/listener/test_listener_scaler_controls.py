"""Each step of the listener's capacity side tells ARC's scaler what its next ERS patch reads
(the step's Output carried out by scaleset/carry_out.py to the ``ScalerControls`` port),
over the Kubernetes face."""

from __future__ import annotations

from kubernetes import client

from tests.providers.kubernetes.listener_part import RecordedControls, started_part

WAIT = 10.0


def test_a_step_sets_switched_off_then_live_max_runners_then_hot_runners_on_the_scaler(
    api: client.ApiClient,
) -> None:
    """Regression: these calls were looked up with getattr on whatever was passed for the
    listener, so a scaler (or a stand-in) without the method was skipped in silence: the hot
    runners or the live maxRunners never reached ARC's ERS patch, and no test or type check
    could say so. The part now takes the scaler's port and calls it directly."""
    app, part = started_part(api, {"enabled": True})
    try:
        assert part.provider.cache.wait_synced(WAIT)
        scaler = RecordedControls()
        loop = part.build(scaler)
        output = loop.run_once()
        assert output is not None and output.result is not None
        assert scaler.calls == [
            ("set_switched_off", False),
            ("set_max_runners", 10),  # started_part's maxRunners (no ARS overrides it)
            ("set_hot_runners", 0),  # no hotRunners configured
        ]
        app.gate.advertise(11)
        assert app.gate.value == 10  # the gate follows the same live maxRunners
    finally:
        part.stop(timeout=1.0)
