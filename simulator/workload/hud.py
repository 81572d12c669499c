"""The HUD queued-jobs feed: how many jobs wait in GitHub's queue per runner label set.

Derived from the Actions service's queue (jobs queued and not yet assigned to any scale set,
whose labels a runner with the asked labels could take). The feed is best effort: during an
outage window it raises :class:`HudUnavailable`, and the capacity-aware listener must fall
back to its configured floor (docs/design.md#demand-sources: fail open, never to 0 and never to
"unlimited").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.workload.actions import ActionsService


class HudUnavailable(Exception):
    """The HUD did not answer (outage window)."""


@dataclass(frozen=True, slots=True)
class Outage:
    """``[start, end)`` in seconds since the world's start."""

    start: float
    end: float


class Hud:
    def __init__(
        self,
        loop: EventLoop,
        service: ActionsService,
        log: EventLog,
        outages: Sequence[Outage] = (),
    ) -> None:
        self.loop = loop
        self.service = service
        self.outages = tuple(sorted(outages, key=lambda o: o.start))
        self.requests = 0
        self.failures = 0
        for outage in self.outages:
            loop.call_at(loop.start + outage.start, log.emit, "hud_outage_started")
            loop.call_at(loop.start + outage.end, log.emit, "hud_outage_ended")

    def down(self) -> bool:
        elapsed = self.loop.now() - self.loop.start
        return any(o.start <= elapsed < o.end for o in self.outages)

    def queued_jobs(self, labels: Iterable[str]) -> int:
        """Queued jobs for a runner with ``labels``; raises :class:`HudUnavailable` when down."""
        self.requests += 1
        if self.down():
            self.failures += 1
            raise HudUnavailable("HUD returned 503 (simulated outage)")
        return self.service.queued_for(labels)
