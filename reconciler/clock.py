"""The one injectable clock.

Everything that needs the time takes a :class:`Clock`: ``now()`` is wall time (timestamps,
token expiry, what a user reads), ``monotonic()`` is for measuring intervals and deadlines
(a wall-clock jump must not stretch or cut them). :class:`SystemClock` reads ``time`` at call
time, so freezegun's frozen time is what it returns; the simulated world passes its own
virtual clock, where both readings are the one virtual time.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch (virtual in the simulator)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        ...


class SystemClock:
    """Wall and monotonic time; resolved per call so freezegun can move them."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


#: The process's clock where no other is injected (stateless, so one instance is shared).
SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock that only moves when told to: for tests and virtual time.

    ``monotonic()`` is the same virtual time: it moves only by :meth:`advance` and
    :meth:`set`, so a test steps deadlines and timestamps together.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds})")
        self._now += seconds

    def set(self, when: float) -> None:
        self._now = when
