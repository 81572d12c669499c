"""The one way an ``Output`` (reconciler/controller.py) leaves a step, for every driver: the
listener's reconcile loop, the simulator's driver and the test engines all call
:func:`carry_out`.

In order:

1. Notify the subscribers of the step's events and commands (placeholder writes first, then
   logs and metrics counters); a failing subscriber is logged and counted, never turned into
   a transition (reconciler/subscribers.py ``notify_subscribers``).
2. Publish the capacity (if any) into the sink: the gate behind ``X-ScaleSetMaxCapacity``.
3. Hand the scaler target to ARC's scaler and the gate: switched off, then the live
   maxRunners (the gate's hard cap and the scaler's clamp: 0 is a drain), then the hot runners.
4. Tell the observers (gauges, the status board) what was carried out: the output, the
   subscriber errors, how long the work took and what the gate now holds.

Everything it applies is in the ``Output``: nothing here reads a provider or a closure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from reconciler.clock import Clock
from reconciler.controller import Output
from reconciler.ports import Subscriber
from reconciler.subscribers import notify_subscribers
from scaleset.ports import CapacityGatePort, ScalerControls


@dataclass(frozen=True, slots=True)
class CarriedOut:
    """One output as carried out: what observers read."""

    output: Output
    #: Subscribers that raised while notified (their effects are re-observed next step).
    subscriber_errors: int = 0
    #: Seconds the work took: snapshot, step, subscribers and publication (0 without a clock).
    duration: float = 0.0
    #: What the gate holds after this output (None: no gate, a test engine).
    advertised: int | None = None


class StepObserver(Protocol):
    """Reads each output once it is carried out (gauges, the status board); never writes."""

    def observe(self, step: CarriedOut) -> None: ...


@dataclass(frozen=True, slots=True)
class Effects:
    """Where a scale set's outputs go. ``subscribers`` is read at every call (a driver may
    replace its process's subscribers, a fault may add some)."""

    subscribers: Sequence[Subscriber]
    #: The listener's gate (None: nothing is advertised, e.g. a second listener whose
    #: session is refused, or a unit-test engine).
    gate: CapacityGatePort | None = None
    #: ARC's scaler (None: no scaler follows this scale set's steps).
    scaler: ScalerControls | None = None
    observers: Sequence[StepObserver] = ()
    #: The driver's scheduling clock, for the duration observers read (None: not measured).
    clock: Clock | None = None


def carry_out(output: Output, effects: Effects, *, started: float | None = None) -> CarriedOut:
    """Apply ``output`` to ``effects`` in the module docstring's order; returns what observers
    were told. ``started``: when the driver began this work, on ``effects.clock``."""
    errors = notify_subscribers(effects.subscribers, output.events, output.commands)
    gate, scaler = effects.gate, effects.scaler
    if output.capacity is not None and gate is not None:
        gate.advertise(output.capacity)
    target = output.scaler
    if target is not None:
        if scaler is not None:
            scaler.set_switched_off(target.switched_off)
        if target.max_runners is not None:
            if gate is not None:
                gate.set_live_max_runners(target.max_runners)
            if scaler is not None:
                scaler.set_max_runners(target.max_runners)
        if target.hot_runners is not None and scaler is not None:
            scaler.set_hot_runners(target.hot_runners)
    clock = effects.clock
    duration = clock.monotonic() - started if clock is not None and started is not None else 0.0
    carried = CarriedOut(output, errors, duration, gate.value if gate is not None else None)
    for observer in effects.observers:
        observer.observe(carried)
    return carried
