"""The listener's asyncio driver of the scale-set controller (reconciler/controller.py).

The controller decides when to act and what to publish; this loop only does what it says:

1. Sleep until the controller's next wake (or until a watch event wakes it).
2. Ask which work is due; build the snapshot that work needs in a worker thread (a full one
   with the fit estimate for a step, a cheap one for a drop check; None before the caches
   synced) and hand it over with how long the watches have been down.
3. Carry out the output (scaleset/carry_out.py, the simulator's driver calls the same
   function): the subscribers (placeholder writes, logs, metrics counters), the capacity into
   the gate, the scaler target into ARC's scaler and the gate, then the observers (gauges,
   the status board).

Watches and demand sources reach it through one call, :meth:`ReconcileLoop.trigger`.

Watch callbacks arrive on informer threads; every call into the controller holds one lock,
so a trigger never interleaves with a step's bookkeeping. A step that raises is logged by the
controller and retried at the next due time; it never kills the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from reconciler.clock import Clock
from reconciler.controller import Output, ScaleSetController, Trigger, Work
from reconciler.snapshot import ClusterSnapshot
from scaleset.carry_out import Effects, carry_out

log = logging.getLogger(__name__)

#: Builds a snapshot at ``now`` (None while the caches have not synced).
SnapshotSource = Callable[[float], ClusterSnapshot | None]


@dataclass(frozen=True, slots=True)
class Observation:
    """What the loop reads from the cluster side, each on demand."""

    #: The full snapshot a step needs (fit estimate included).
    snapshot: SnapshotSource
    #: The cheap snapshot a drop check needs (no fit).
    drop_snapshot: SnapshotSource
    #: Seconds the watches have been down (0 when fresh).
    stale_for: Callable[[], float]


class ReconcileLoop:
    def __init__(
        self,
        controller: ScaleSetController,
        observation: Observation,
        effects: Effects,
        clock: Clock,
    ) -> None:
        self.controller = controller
        self.observation = observation
        #: Where each output goes (scaleset/carry_out.py).
        self.effects = effects
        self.clock = clock
        self._lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        self._aio: asyncio.AbstractEventLoop | None = None

    def trigger(self, trigger: Trigger) -> None:
        """A watch event decisions read or a demand change; safe from any thread (informer
        callbacks, demand pollers)."""
        with self._lock:
            self.controller.changed(self.clock.monotonic(), trigger)
        self._poke()

    def _poke(self) -> None:
        if self._aio is not None and self._wake is not None:
            self._aio.call_soon_threadsafe(self._wake.set)

    def run_once(self) -> Output | None:
        """The work due now, if any. Blocking (snapshots and subscribers do I/O)."""
        started = self.clock.monotonic()
        with self._lock:
            work = self.controller.due(started)
        if work is None:
            return None
        observe = self.observation
        snapshot = (observe.snapshot if work is Work.STEP else observe.drop_snapshot)(started)
        with self._lock:
            now = self.clock.monotonic()
            if work is Work.STEP:
                output = self.controller.step(now, snapshot, stale_for=observe.stale_for())
            else:
                output = self.controller.check_drop(now, snapshot, stale_for=observe.stale_for())
        carry_out(output, self.effects, started=started)
        return output

    async def run(self, stop: asyncio.Event) -> None:
        self._aio = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        while not stop.is_set():
            self._wake.clear()  # before reading the wake time: a trigger after this wakes us
            now = self.clock.monotonic()
            with self._lock:
                delay = self.controller.next_wake(now) - now
            if delay > 0:
                await self._sleep(stop, delay)
                continue
            try:
                await asyncio.to_thread(self.run_once)
            except Exception:
                log.exception("reading the cluster failed; retrying at the next due time")
                with self._lock:
                    self.controller.observation_failed(self.clock.monotonic())

    async def _sleep(self, stop: asyncio.Event, delay: float) -> None:
        wake = self._wake
        if wake is None:
            raise RuntimeError("ReconcileLoop._sleep called outside run()")
        waiters = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())}
        try:
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
