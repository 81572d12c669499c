"""The advertised capacity of one listener: what the next long poll sends as
``X-ScaleSetMaxCapacity``, and when a change cuts the poll in flight.

:class:`CapacityGate` is the controller's capacity sink (``scaleset.ports.CapacityGatePort``,
the port the one carry-out of scaleset/carry_out.py drives in the listener and the simulator):
set from any thread, read by the loop on every poll, clamped to ``[0, live maxRunners]`` (the
hard cap of a drain between two steps). When a change cuts the poll in flight is decided by the
pure rule in listener/arc/poll_cut.py; the gate only arms and fires asyncio timers as it says.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

from listener.arc.poll_cut import PollCut
from reconciler.max_runners import clamp_max_runners


class CapacityGate:
    """The advertised capacity: set from any thread, read by the loop on every poll.

    Implements ``scaleset.ports.CapacityGatePort``. ``value`` is what the next poll will send;
    ``advertised`` is the header of the latest poll sent. Before the loop binds, changes are
    just stored.
    """

    def __init__(
        self,
        max_runners: int,
        *,
        initial: int | None = None,
        cut_on_drop: bool = True,
        cut_on_rise: bool = False,
        debounce: float = 0.25,
        cut_when_full: bool = False,
    ) -> None:
        #: When a change cuts the poll in flight (listener/arc/poll_cut.py, shared with the
        #: simulator).
        self.cut_rule = PollCut(cut_on_drop, cut_on_rise, debounce, cut_when_full)
        self._lock = threading.Lock()
        self._live_max = clamp_max_runners(max_runners)
        self._requested = self._live_max if initial is None else initial
        self._advertised: int | None = None
        #: Why the gate is held at 0 regardless of the reconciler (None: not held).
        self._closed_for: str | None = None
        # Touched only on the event loop's thread:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cut = asyncio.Event()
        self._cut_direction = ""
        self._timer: asyncio.TimerHandle | None = None

    @property
    def value(self) -> int:
        with self._lock:
            if self._closed_for is not None:
                return 0
            return max(0, min(self._requested, self._live_max))

    @property
    def closed_for(self) -> str | None:
        return self._closed_for

    def close(self, reason: str) -> None:
        """Fail closed (advertise 0) until :meth:`reopen`, whatever the reconciler says: a
        Kubernetes write that is stuck means the runners we would be given may never be
        scaled up. Thread-safe; a drop cuts the poll in flight like any other."""
        with self._lock:
            self._closed_for = reason
        self._notify()

    def reopen(self) -> None:
        with self._lock:
            self._closed_for = None
        self._notify()

    @property
    def advertised(self) -> int | None:
        return self._advertised

    def advertise(self, capacity: int) -> None:
        """The reconciler's capacity (latest wins); thread-safe."""
        with self._lock:
            self._requested = capacity
        self._notify()

    def set_live_max_runners(self, max_runners: int) -> None:
        """Follow a live ``maxRunners`` change (0 is a hard cap: a drain); thread-safe."""
        with self._lock:
            self._live_max = clamp_max_runners(max_runners)
        self._notify()

    # --- loop side ---

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._cut = asyncio.Event()  # an asyncio.Event belongs to the loop that first awaits it

    def unbind(self) -> None:
        self.end_poll()
        self._loop = None

    def begin_poll(self, assigned: int | None = None) -> int:
        """A poll is about to be sent: returns its header value and arms the cut."""
        self._cancel_timer()
        self._cut.clear()
        value = self._advertised = self.value
        self.cut_rule.begin_poll(value, assigned)
        return value

    def end_poll(self) -> None:
        self._cancel_timer()
        self.cut_rule.end_poll()

    async def wait_cut(self) -> str:
        """Resolves with ``"drop"`` or ``"rise"`` when the poll in flight must be cut."""
        await self._cut.wait()
        return self._cut_direction

    def _notify(self) -> None:
        loop = self._loop
        if loop is None:
            return
        # RuntimeError: the loop closed meanwhile, so nothing is in flight any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._on_change)

    def _on_change(self) -> None:
        if self._loop is not None and self.cut_rule.changed(self.value):
            self._timer = self._loop.call_later(self.cut_rule.debounce, self._fire)

    def _fire(self) -> None:
        self._timer = None
        direction = self.cut_rule.fire(self.value)
        if direction:
            self._cut_direction = direction
            self._cut.set()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
