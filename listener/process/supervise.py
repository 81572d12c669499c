"""Supervision of the listener's background tasks (HUD poller, reconcile loop, ...).

A background task that raises must neither die silently (demand frozen, nothing reconciled)
nor take the process down for a transient fault. :func:`supervised` runs one task and:

1. logs every failure with the task's name; the traceback only for the first one (a task
   failing every second must not flood the log);
2. counts it (``on_failure(name)``, the ``..._background_task_failures_total`` metric);
3. restarts it after a backoff (``first * 2^n`` capped at ``cap``; reset after a run that
   lasted longer than ``healthy_after``) until ``stop`` is set.

A task that returns while ``stop`` is not set is restarted the same way (it should not end).
Cancellation is never swallowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from providers.backoff import Backoff as CappedBackoff
from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = 1.0
    cap: float = 30.0
    #: A run longer than this was healthy: the next failure starts a new episode.
    healthy_after: float = 60.0

    def delay(self, failures: int) -> float:
        """Delay before restart number ``failures`` (1-based)."""
        return CappedBackoff(self.first, self.cap).delay(failures - 1)


async def supervised(
    name: str,
    factory: Callable[[], Awaitable[None]],
    stop: asyncio.Event,
    *,
    on_failure: Callable[[str], None] | None = None,
    backoff: Backoff | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> None:
    policy = backoff or Backoff()
    failures = 0
    while not stop.is_set():
        started = clock.monotonic()
        try:
            await factory()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if stop.is_set():
                return
            if clock.monotonic() - started > policy.healthy_after:
                failures = 0  # it ran fine for a while: this is a new episode
            failures += 1
            delay = policy.delay(failures)
            log.error(
                "background task %s failed (%s: %s); restarting in %.1fs",
                name,
                type(exc).__name__,
                exc,
                delay,
                exc_info=failures == 1,
            )
            if on_failure is not None:
                on_failure(name)
        else:
            if stop.is_set():
                return
            failures += 1
            delay = policy.delay(failures)
            log.error("background task %s ended unexpectedly; restarting in %.1fs", name, delay)
            if on_failure is not None:
                on_failure(name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)


__all__ = ["Backoff", "supervised"]
