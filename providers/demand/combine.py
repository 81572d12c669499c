"""Several demand sources as one: take the first that answers, or the largest answer.

Only when every source fails is the result a failure (``queued_jobs=None``), and decide falls
back to the floor: a second source is a fallback, never a way to reach 0 or "unlimited".
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from providers.demand import DemandSource, FailureMode
from reconciler.snapshot import Demand


class Combine(StrEnum):
    #: The first source (in configured order) that has an answer.
    FIRST = "first"
    #: The largest answer among the sources that have one.
    MAX = "max"


def combine(demands: Sequence[Demand], policy: Combine) -> Demand:
    """Pure: the demand the reconciler sees, given each source's latest answer.

    While some sources fail, the answer carries their errors: a failing source still counts
    for the configured floor (decide takes ``max(answer, floor)``), so a source that cannot
    see the queue (statistics while 0 is advertised) never masks another's outage as "0".
    """
    answered = [d for d in demands if d.queued_jobs is not None]
    failing = [d for d in demands if d.queued_jobs is None]
    reasons = "; ".join(f"{d.source or '?'}: {d.error or 'no answer'}" for d in failing)
    if not answered:
        return Demand(queued_jobs=None, error=reasons or "no demand source", source="none")
    best = (
        answered[0] if policy is Combine.FIRST else max(answered, key=lambda d: d.queued_jobs or 0)
    )
    return Demand(queued_jobs=best.queued_jobs, error=reasons or None, source=best.source)


class CombinedDemand:
    """A :class:`DemandSource` over the configured sources, in order of preference.

    Sources are attached as they start (remote ones need the scale set's labels, known once
    the message session is open); one not attached yet counts as failing ("not started").
    """

    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, order: Sequence[str], policy: Combine = Combine.FIRST) -> None:
        if not order:
            raise ValueError("at least one demand source is needed")
        self.order = tuple(order)
        self.policy = policy
        self.name = "+".join(self.order)
        self._sources: dict[str, DemandSource] = {}

    def attach(self, source: DemandSource) -> None:
        if source.name not in self.order:
            raise ValueError(f"demand source {source.name!r} is not one of {list(self.order)}")
        self._sources[source.name] = source

    @property
    def current(self) -> Demand:
        return combine([self.latest(name) for name in self.order], self.policy)

    def latest(self, name: str) -> Demand:
        """One configured source's latest answer ("not started" until it is attached)."""
        if name not in self._sources:
            return Demand(queued_jobs=None, error="not started", source=name)
        return _stamped(self._sources[name].current, name)


def _stamped(demand: Demand, name: str) -> Demand:
    """Sources written before ``Demand.source`` existed (HUD) leave it empty: name them."""
    if demand.source:
        return demand
    return Demand(queued_jobs=demand.queued_jobs, error=demand.error, source=name)
