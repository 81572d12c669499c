"""When reconcile steps run: watch-triggered with debounce, plus a jittered periodic fallback.

:class:`Schedule` is the pure part (no I/O, no sleeping): it is told about triggers and
steps and answers when the next step is due. The simulator drives it in virtual time; the
tests drive it with freezegun; :class:`ReconcileLoop` drives it with asyncio in production.

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
  may be READY: a slot a waiting job needs; providers/kubernetes/rises.py says which events
  and why real pods are not among them). A stream of leading triggers (every placeholder of a
  burst) runs at most one step per ``min_gap``; every other change only matters to the next
  step, so it keeps the debounce.
- Before the first step, a step is due at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.clock import Clock
from reconciler.fast_drop import DropGuard
from reconciler.reconciler import Reconciler, StepResult
from reconciler.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)


@dataclass
class Schedule:
    interval: float
    jitter: float = 0.0
    debounce: float = 1.0
    max_delay: float = 5.0
    #: Leading triggers never run steps closer together than this (capped at ``debounce``).
    min_gap: float = 0.5
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
            gap = min(self.min_gap, self.debounce)
            self.leading_trigger = now if self.last_step is None else max(now, self.last_step + gap)

    def due_at(self) -> float:
        if self.next_periodic is None:
            return float("-inf")
        due = self.next_periodic
        if self.first_trigger is not None and self.last_trigger is not None:
            debounced = min(self.last_trigger + self.debounce, self.first_trigger + self.max_delay)
            due = min(due, debounced)
        if self.leading_trigger is not None:
            due = min(due, self.leading_trigger)
        return due

    def is_due(self, now: float) -> bool:
        return now >= self.due_at()

    def ran(self, now: float) -> None:
        spread = self.rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        self.next_periodic = now + self.interval * (1.0 + spread)
        self.first_trigger = self.last_trigger = self.leading_trigger = None
        self.last_step = now


#: How long to wait before asking again for a snapshot while the caches are not synced.
NOT_SYNCED_RETRY = 1.0

SnapshotSource = Callable[[], ClusterSnapshot | None]


class ReconcileLoop:
    """Runs reconcile steps when the schedule says so, until stopped.

    ``snapshot_source`` returns None while the caches are not synced: no decision is taken
    before every required kind has been listed once (Karpenter's "synced" guard). A step that
    raises is logged and retried at the next due time; it never kills the loop.
    """

    def __init__(
        self,
        reconciler: Reconciler,
        snapshot_source: SnapshotSource,
        schedule: Schedule,
        clock: Clock,
        *,
        on_step: Callable[[StepResult, float], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        drop_guard: DropGuard | None = None,
    ) -> None:
        self.reconciler = reconciler
        #: Publishes a falling ledger between steps (see :mod:`reconciler.fast_drop`); its
        #: checks run in this loop, one at a time with the steps, so they never race them.
        self.drop_guard = drop_guard
        self.snapshot_source = snapshot_source
        self.schedule = schedule
        self.clock = clock
        self.on_step = on_step
        self.on_error = on_error
        self._wake: asyncio.Event | None = None
        self._aio: asyncio.AbstractEventLoop | None = None

    def trigger(self, *, leading: bool = False) -> None:
        """Note an observation change; safe to call from any thread (watch callbacks).
        ``leading``: a demand or pod change, due at once but at most one step per
        ``min_gap`` (see :class:`Schedule`)."""
        self.schedule.trigger(self.clock.now(), leading=leading)
        if self._aio is not None and self._wake is not None:
            self._aio.call_soon_threadsafe(self._wake.set)

    def poke_drop(self) -> None:
        """A pod changed: capacity may have fallen. Safe from any thread (watch callbacks)."""
        armed = self.drop_guard is not None and self.drop_guard.poke()
        if armed and self._aio is not None and self._wake is not None:
            self._aio.call_soon_threadsafe(self._wake.set)

    def run_once(self) -> StepResult | None:
        """One step now, if the caches are synced. Blocking (subscribers do I/O)."""
        snapshot = self.snapshot_source()
        if snapshot is None:
            return None
        started = self.clock.now()
        try:
            result = self.reconciler.step(snapshot)
        finally:
            self.schedule.ran(self.clock.now())
        if self.on_step is not None:
            self.on_step(result, self.clock.now() - started)
        return result

    async def run(self, stop: asyncio.Event) -> None:
        self._aio = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        while not stop.is_set():
            delay = self.schedule.due_at() - self.clock.now()
            if delay > 0 and self.drop_guard is not None and self.drop_guard.pending:
                await self._check_drop()
                continue
            if delay > 0:
                await self._sleep(stop, delay)
                continue
            try:
                result = await asyncio.to_thread(self.run_once)
                if result is None:  # caches not synced yet: look again shortly
                    await self._sleep(stop, NOT_SYNCED_RETRY)
            except Exception as exc:
                log.exception("reconcile step failed; retrying at the next due time")
                if self.on_error is not None:
                    self.on_error(exc)
                self.schedule.ran(self.clock.now())

    async def _check_drop(self) -> None:
        guard = self.drop_guard
        if guard is None:
            return
        try:
            await asyncio.to_thread(guard.check)
        except Exception:
            guard.pending = False
            log.exception("capacity drop check failed; the next step publishes the ledger")

    async def _sleep(self, stop: asyncio.Event, delay: float) -> None:
        wake = self._wake
        if wake is None:
            raise RuntimeError("ReconcileLoop._sleep called outside run()")
        wake.clear()
        waiters = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())}
        try:
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
