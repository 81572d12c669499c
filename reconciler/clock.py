"""The one injectable clock.

Everything that needs "now" takes a :class:`Clock`. :class:`SystemClock` reads
``time.time()`` at call time, so freezegun's frozen time is what it returns; the simulated
world passes its own virtual clock.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch (virtual in the simulator)."""
        ...


class SystemClock:
    """Wall-clock time; resolved per call so freezegun can move it."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to: for tests and virtual time."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds})")
        self._now += seconds

    def set(self, when: float) -> None:
        self._now = when
