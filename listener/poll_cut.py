"""When a capacity change cuts the long poll in flight: one pure rule, two drivers.

The listener's :class:`~listener.loop.CapacityGate` (asyncio timers) and the simulated
listener (virtual-time timers) both hold a :class:`PollCut` and only arm and fire timers when
it says so:

1. :meth:`PollCut.begin_poll` records the header of the poll being sent.
2. :meth:`PollCut.changed` (the advertised value changed): True when a cut timer must be armed
   now, ``debounce`` seconds out: the value moved away from the header in a direction that
   cuts (a drop with ``cut_on_drop``, a rise with ``cut_on_rise``) and no timer is armed yet,
   so changes inside the window are coalesced.
3. :meth:`PollCut.fire` when the timer fires: the direction to cut, re-checked at that moment,
   so a change that was undone inside the window does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

DROP = "drop"
RISE = "rise"


@dataclass
class PollCut:
    cut_on_drop: bool = True
    cut_on_rise: bool = False
    #: Seconds from the first change to the cut (changes in between are coalesced).
    debounce: float = 0.25
    #: The header of the poll in flight; None between polls.
    in_flight: int | None = None
    armed: bool = False

    def __post_init__(self) -> None:
        if self.debounce < 0:
            raise ValueError(f"debounce must be >= 0 seconds, got {self.debounce}")

    def begin_poll(self, header: int) -> None:
        self.in_flight = header
        self.armed = False

    def end_poll(self) -> None:
        self.in_flight = None
        self.armed = False

    def direction(self, value: int) -> str:
        """``"drop"`` or ``"rise"`` when ``value`` must replace the poll in flight, else ``""``."""
        if self.in_flight is None:
            return ""
        if value < self.in_flight and self.cut_on_drop:
            return DROP
        if value > self.in_flight and self.cut_on_rise:
            return RISE
        return ""

    def changed(self, value: int) -> bool:
        """True when a cut timer must be armed now (``debounce`` seconds out)."""
        if self.armed or not self.direction(value):
            return False
        self.armed = True
        return True

    def fire(self, value: int) -> str:
        """The armed timer fired: the direction to cut now, or ``""`` (the change was undone)."""
        self.armed = False
        return self.direction(value)
