"""The reconciler subscriber: counters from transition events, gauges from each step."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from listener.observability.metrics.registry import PrometheusMetrics
from reconciler.ports import Command, DeleteOrphan, RenewLease
from state_machine.events import AnyTransition, TransitionEvent
from state_machine.states import PairState


class MetricsSubscriber:
    """Reconciler subscriber: counters from events and commands, gauges from each step.

    ``counts`` reads the pair store's counts for the per-state gauges; the assembly
    (listener/process/assembly.py) builds the controller first and passes its store's.
    """

    def __init__(
        self,
        metrics: PrometheusMetrics,
        *,
        counts: Callable[[], Mapping[PairState, int]] | None = None,
    ) -> None:
        self.metrics = metrics
        self.counts = counts

    def notify(self, events: Sequence[AnyTransition], commands: Sequence[Command]) -> None:
        for event in events:
            if isinstance(event, TransitionEvent):
                self.metrics.record_transition(event)
            else:
                self.metrics.record_hot_transition(event)
        orphans = sum(1 for c in commands if isinstance(c, DeleteOrphan))
        renewed = sum(len(c.pods) for c in commands if isinstance(c, RenewLease))
        if orphans:
            self.metrics.record_orphan_deletions(orphans)
        if renewed:
            self.metrics.record_lease_renewals(renewed)

    def observe_step(
        self,
        result: Any,
        duration: float,
        *,
        counts: Mapping[PairState, int] | None = None,
    ) -> None:
        """After ``Reconciler.step`` returned ``result`` (a StepResult) in ``duration`` s."""
        self.metrics.observe_ledger(result.ledger)
        warm_pool = getattr(result, "warm_pool", None)
        if warm_pool is not None:
            self.metrics.observe_warm_pool(warm_pool.pairs, warm_pool.load)
        hot = getattr(result, "hot", None)
        if hot is not None:
            self.metrics.observe_hot(hot.by_state)
        current = counts if counts is not None else (self.counts() if self.counts else None)
        if current is not None:
            self.metrics.observe_pair_counts(current)
        self.metrics.record_reconcile(
            duration, ok=True, subscriber_errors=int(getattr(result, "subscriber_errors", 0))
        )

    def observe_failure(self, duration: float) -> None:
        """After ``Reconciler.step`` raised."""
        self.metrics.record_reconcile(duration, ok=False)
