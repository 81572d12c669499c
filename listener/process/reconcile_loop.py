"""The listener's asyncio driver of the scale-set controller (reconciler/controller.py).

The controller decides when to act and what to publish; this loop only does what it says:

1. Sleep until the controller's next wake (or until a watch event wakes it).
2. Ask which work is due; build the snapshot that work needs in a worker thread (a full one
   with the fit estimate for a step, a cheap one for a drop check; None before the caches
   synced) and hand it over with how long the watches have been down.
3. Carry out the output: notify the subscribers (placeholder writes, logs, metrics), then
   publish the capacity into the gate.

Watch callbacks arrive on informer threads; every call into the controller holds one lock,
so a trigger never interleaves with a step's bookkeeping. A step that raises is logged by the
controller and retried at the next due time; it never kills the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reconciler.clock import Clock
from reconciler.controller import Output, ScaleSetController, Work
from reconciler.ports import CapacitySink, Subscriber
from reconciler.snapshot import ClusterSnapshot
from reconciler.subscribers import notify_subscribers

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
        subscribers: Sequence[Subscriber],
        sink: CapacitySink,
        clock: Clock,
        *,
        on_output: Callable[[Output, float, int], None] | None = None,
    ) -> None:
        self.controller = controller
        self.observation = observation
        self.subscribers = list(subscribers)
        self.sink = sink
        self.clock = clock
        #: Called after every piece of work with its output, duration and subscriber errors.
        self.on_output = on_output
        self._lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        self._aio: asyncio.AbstractEventLoop | None = None

    def changed(self, *, leading: bool = False, lost: bool = False) -> None:
        """A watch event decisions read; safe from any thread (informer callbacks)."""
        with self._lock:
            self.controller.changed(self.clock.now(), leading=leading, lost=lost)
        self._poke()

    def demand_changed(self) -> None:
        """A demand source's answer changed; safe from any thread."""
        with self._lock:
            self.controller.demand_changed(self.clock.now())
        self._poke()

    def _poke(self) -> None:
        if self._aio is not None and self._wake is not None:
            self._aio.call_soon_threadsafe(self._wake.set)

    def run_once(self) -> Output | None:
        """The work due now, if any. Blocking (snapshots and subscribers do I/O)."""
        started = self.clock.now()
        with self._lock:
            work = self.controller.due(started)
        if work is None:
            return None
        observe = self.observation
        snapshot = (observe.snapshot if work is Work.STEP else observe.drop_snapshot)(started)
        with self._lock:
            now = self.clock.now()
            if work is Work.STEP:
                output = self.controller.step(now, snapshot, stale_for=observe.stale_for())
            else:
                output = self.controller.check_drop(now, snapshot, stale_for=observe.stale_for())
        errors = notify_subscribers(self.subscribers, output.events, output.commands)
        if output.capacity is not None:
            self.sink.advertise(output.capacity)
        if self.on_output is not None:
            self.on_output(output, self.clock.now() - started, errors)
        return output

    async def run(self, stop: asyncio.Event) -> None:
        self._aio = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        while not stop.is_set():
            self._wake.clear()  # before reading the wake time: a trigger after this wakes us
            now = self.clock.now()
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
                    self.controller.observation_failed(self.clock.now())

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
