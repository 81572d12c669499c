"""Several demand sources as one: take the first that answers, or the largest answer.

Only when every source fails is the result a failure (``queued_jobs=None``), and decide falls
back to the floor: a second source is a fallback, never a way to reach 0 or "unlimited".

A polled source (HUD, GitHub REST, an HTTP endpoint) answers every ``pollInterval`` (HUD: 30 s);
until its next answer it still counts the jobs that left the queue since. The scale set's own
statistics see them leave at message speed (``totalAvailableJobs`` falls when a job is
assigned), so while statistics are a source too, a polled answer is read less the jobs
statistics saw leave since it came (:func:`discount`). Without it, a job's pair was counted
again by the stale answer after the job took it: with ``proactiveCapacity: 0`` the half its
workflow pod took was mended on a new node that was consolidated empty minutes later
(scale-to-zero: most of its extra node launches, docs/benchmarks-cost.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from providers.demand import DemandSource, FailureMode
from providers.demand.statistics import NAME as STATISTICS
from providers.demand.statistics import StatisticsDemand
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


def discount(answer: Demand, departed: int) -> Demand:
    """Pure: a polled answer less the jobs seen leaving the queue since it came (never below 0).

    Statistics see every job this scale set could take; a job they saw leave (assigned, here or
    to another scale set, or cancelled) is no longer queued, whichever source counted it. What a
    polled source sees that statistics never do (jobs for labels the scale set does not match)
    may be taken off too, until its next answer: combined by ``max``, the answer never falls
    below the statistics' own count, so a job both see is never lost."""
    if answer.queued_jobs is None or departed <= 0:
        return answer
    queued = max(0, answer.queued_jobs - departed)
    return Demand(queued_jobs=queued, error=answer.error, source=answer.source)


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
        #: Per polled source: its answer last seen and the statistics' departures then.
        self._anchors: dict[str, tuple[Demand, int]] = {}

    def attach(self, source: DemandSource) -> None:
        if source.name not in self.order:
            raise ValueError(f"demand source {source.name!r} is not one of {list(self.order)}")
        self._sources[source.name] = source
        if isinstance(source, StatisticsDemand):
            source.before_departures(self._date_answers)

    @property
    def current(self) -> Demand:
        return combine([self._fresh(name) for name in self.order], self.policy)

    def _fresh(self, name: str) -> Demand:
        """A source's latest answer; a polled one's less the jobs statistics saw leave since
        it came (module doc)."""
        latest = self.latest(name)
        statistics = self._sources.get(STATISTICS)
        if name == STATISTICS or name not in self._sources:
            return latest
        if not isinstance(statistics, StatisticsDemand):
            return latest
        return discount(latest, statistics.departures - self._date(name, statistics))

    def _date(self, name: str, statistics: StatisticsDemand) -> int:
        """The statistics' departures when the source's current answer came. A new answer is
        told by identity (a poller replaces its answer on every poll, an unchanged count
        included) and dated before the next fall at the latest (:meth:`_date_answers`)."""
        answer = self._sources[name].current
        anchor = self._anchors.get(name)
        if anchor is None or anchor[0] is not answer:
            anchor = (answer, statistics.departures)
            self._anchors[name] = anchor
        return anchor[1]

    def _date_answers(self) -> None:
        statistics = self._sources.get(STATISTICS)
        if isinstance(statistics, StatisticsDemand):
            for name in self._sources:
                if name != STATISTICS:
                    self._date(name, statistics)

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
