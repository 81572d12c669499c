"""When a capacity change cuts the long poll in flight: one pure rule, two drivers.

The listener's :class:`~listener.arc.message_loop.CapacityGate` (asyncio timers) and the simulated
listener (virtual-time timers) both hold a :class:`PollCut` and only arm and fire timers when
it says so:

1. :meth:`PollCut.begin_poll` records the header of the poll being sent and whether that poll
   is *full*: its header is no more than the jobs already assigned to the scale set, so the
   service cannot assign a job on it however long it waits.
2. :meth:`PollCut.changed` (the advertised value changed): True when a cut timer must be armed
   now, ``debounce`` seconds out: the value moved away from the header in a direction that
   cuts (a drop with ``cut_on_drop``; a rise with ``cut_on_rise``, or with ``cut_when_full``
   while the poll in flight is full) and no timer is armed yet, so changes inside the window
   are coalesced.

Why a full poll is cut on a rise by default: without it a slot confirmed while every
advertised slot is taken (the first job after scale-to-zero, a slot handed over at maxRunners)
waits for the poll in flight to end, up to its ~50 s, before GitHub may use it; cutting it
costs one extra GetMessage per rise only while no job could be assigned anyway. Measured on
the shipped scenarios (docs/benchmarks.md): worst k-th job ratio at k = 1 over 10 seeds,
drain 1.47 -> 1.07, scale-to-zero 1.55 -> 1.09 against a listener that never cuts on a rise.
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
    #: Cut a full poll on a rise even without ``cut_on_rise`` (see the module docstring).
    cut_when_full: bool = False
    #: The header of the poll in flight; None between polls.
    in_flight: int | None = None
    #: The poll in flight can get no job: its header <= the jobs already assigned.
    full: bool = False
    armed: bool = False

    def __post_init__(self) -> None:
        if self.debounce < 0:
            raise ValueError(f"debounce must be >= 0 seconds, got {self.debounce}")

    def begin_poll(self, header: int, assigned: int | None = None) -> None:
        """``assigned``: jobs assigned to the scale set by the latest statistics (None:
        unknown, the poll is not taken as full)."""
        self.in_flight = header
        self.full = assigned is not None and header <= assigned
        self.armed = False

    def end_poll(self) -> None:
        self.in_flight = None
        self.full = False
        self.armed = False

    def direction(self, value: int) -> str:
        """``"drop"`` or ``"rise"`` when ``value`` must replace the poll in flight, else ``""``."""
        if self.in_flight is None:
            return ""
        if value < self.in_flight and self.cut_on_drop:
            return DROP
        if value > self.in_flight and (self.cut_on_rise or (self.cut_when_full and self.full)):
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
