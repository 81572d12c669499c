"""Demand: how many jobs want this scale set's runners, from sources behind one interface.

Every source reports the reconciler's :class:`reconciler.snapshot.Demand` and declares how it
fails. None fails to 0 (that would hide a queue) or to "unlimited" (that would launch a node
storm): a failing source reports ``Demand(queued_jobs=None, error=...)`` and decide falls back to
the configured floor (``hudFallbackQueuedJobs`` on top of ``proactiveCapacity``).

Sources:

- :class:`providers.demand.statistics.StatisticsDemand`: the scale set's own signal, from the
  statistics and job messages the listener already receives (default; zero configuration; reacts
  at message speed).
- HUD (``providers.hud.client.HudDemandSource``): queued jobs per label from PyTorch's HUD.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

from reconciler.snapshot import Demand


class FailureMode(StrEnum):
    """What a source reports when it cannot answer."""

    #: ``Demand(None, error)``: decide uses the configured floor (never 0, never unlimited).
    OPEN_TO_FLOOR = "open-to-floor"


class DemandSource(Protocol):
    """The latest demand one source knows, and how it fails."""

    name: str
    failure_mode: FailureMode

    @property
    def current(self) -> Demand: ...


#: Called (without arguments) when a source's demand changed, to wake the reconciler.
OnChange = Callable[[], None]


__all__ = ["DemandSource", "FailureMode", "OnChange"]
