"""The listener's capacity side hands "ARC switched this scale set off" and the live maxRunners
to ARC's scaler and the gate (the step's Output, carried out by scaleset/carry_out.py), over
the Kubernetes face and the real watch."""

from __future__ import annotations

import types

from kubernetes import client

from listener.arc.scaler import Scaler
from reconciler.controller import Trigger
from simulator.engine.store import ObjectStore
from tests.listener.test_scaler import RecordingWriter
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.listener_part import started_part

WAIT = 10.0


def test_an_outdated_set_reaches_the_scaler_and_the_gate_and_back(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """Prevents the scaler asking for minRunners + assigned jobs, and the header advertising
    capacity, for a scale set ARC pinned at zero (runners Outdated, #4652)."""
    app, part = started_part(api, {"enabled": True})
    writer = RecordingWriter()
    scaler = Scaler(writer, namespace=o.NS, name=o.ERS, min_runners=1, max_runners=10)

    def set_phase(phase: str) -> None:
        o.set_ers_phase(store, part.provider.cache, phase, WAIT)

    try:
        assert part.provider.cache.wait_synced(WAIT)
        loop = part.build(scaler)
        set_phase("Outdated")
        assert loop.run_once() is not None
        assert scaler.switched_off
        assert scaler.handle_desired_runner_count(3) == 0
        app.gate.advertise(5)
        assert app.gate.value == 0  # the step's live maxRunners is 0: a hard cap

        set_phase("Running")
        loop.trigger(Trigger(lost=True))  # a drop check first: the scaler follows it at once
        assert loop.run_once() is not None
        assert not scaler.switched_off
        # The next periodic step gives the gate and the scaler their live maxRunners back.
        later = loop.clock.monotonic() + part.ctx.settings.recalculate_interval + 1
        loop.clock = types.SimpleNamespace(monotonic=lambda: later)  # type: ignore[assignment]
        assert loop.run_once() is not None
        assert scaler.max_runners == 10
        assert scaler.handle_desired_runner_count(3) == 4
        app.gate.advertise(5)
        assert app.gate.value == 5
    finally:
        part.stop(timeout=1.0)
