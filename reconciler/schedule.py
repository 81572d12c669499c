"""When reconcile steps run: watch-triggered with debounce, plus a jittered periodic fallback.

:class:`Schedule` is the pure part (no I/O, no sleeping): it is told about triggers and
steps and answers when the next step is due. It belongs to the scale-set controller
(:mod:`reconciler.controller`), which the simulator drives in virtual time and the listener
(:mod:`listener.process.reconcile_loop`) with asyncio.

Rules:
- A step is due ``interval`` (+/- ``jitter`` x interval, drawn per step so many listeners
  drift apart instead of running in lockstep) after the previous one: the periodic fallback
  (ARC's ``recalculateInterval``).
- A trigger (a watch event) makes a step due ``debounce`` seconds after the latest trigger,
  but never later than ``max_delay`` after the first trigger since the last step, so a
  steady stream of events cannot starve the loop.
- A *leading* trigger makes a step due at once, but never sooner than ``min_gap`` after the
  previous step. Two kinds of change are leading: demand (a statistics or demand-source
  answer: a cold job's pair is requested at once) and a placeholder turning Running (its pair
  may be READY: a slot a waiting job needs; providers/kubernetes/observe/rises.py says which events
  and why real pods are not among them). A stream of leading triggers (every placeholder of a
  burst) runs at most one step per ``min_gap``; every other change only matters to the next
  step, so it keeps the debounce.
- Before the first step, a step is due at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Timings:
    """When steps run (``recalculateInterval`` and friends), from the listener's settings."""

    interval: float
    jitter: float = 0.0
    debounce: float = 1.0
    #: A stream of triggers never delays a step longer than this after the first one.
    max_delay: float = 5.0
    #: Leading triggers never run steps closer together than this (capped at ``debounce``).
    min_gap: float = 0.5


@dataclass
class Schedule:
    """The rules above over one scale set's :class:`Timings` (``rng`` draws the jitter)."""

    timings: Timings
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    next_periodic: float | None = None
    first_trigger: float | None = None
    last_trigger: float | None = None
    last_step: float | None = None
    leading_trigger: float | None = None

    def trigger(self, now: float, *, leading: bool = False) -> None:
        if self.first_trigger is None:
            self.first_trigger = now
        self.last_trigger = now
        if leading and self.leading_trigger is None:
            gap = min(self.timings.min_gap, self.timings.debounce)
            self.leading_trigger = now if self.last_step is None else max(now, self.last_step + gap)

    def due_at(self) -> float:
        if self.next_periodic is None:
            return float("-inf")
        due = self.next_periodic
        if self.first_trigger is not None and self.last_trigger is not None:
            timings = self.timings
            debounced = min(
                self.last_trigger + timings.debounce, self.first_trigger + timings.max_delay
            )
            due = min(due, debounced)
        if self.leading_trigger is not None:
            due = min(due, self.leading_trigger)
        return due

    def ran(self, now: float) -> None:
        jitter = self.timings.jitter
        spread = self.rng.uniform(-jitter, jitter) if jitter else 0.0
        self.next_periodic = now + self.timings.interval * (1.0 + spread)
        self.first_trigger = self.last_trigger = self.leading_trigger = None
        self.last_step = now
