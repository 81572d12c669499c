"""The metrics subscriber: counters from transition events, gauges from each carried-out step."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from listener.observability.metrics.registry import PrometheusMetrics
from reconciler.ports import Command, DeleteOrphan, RenewLease
from scaleset.carry_out import CarriedOut
from state_machine.events import AnyTransition, TransitionEvent
from state_machine.states import PairState


class MetricsSubscriber:
    """Reconciler subscriber (``notify``: counters from events and commands) and step
    observer (``observe``: gauges from each output as scaleset/carry_out.py carried it out).

    ``counts`` reads the pair store's counts for the per-state gauges; the listener's part
    (listener/process/assembly.py) builds the runtime first and passes its store's.
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

    def observe(self, step: CarriedOut) -> None:
        """One output, carried out: fail-closed, placement, the step's gauges and timing, and
        the advertised value (what the gate holds, also while failing closed)."""
        output = step.output
        if output.error is not None:
            self.metrics.record_reconcile(step.duration, ok=False)
        self.metrics.record_failing_closed(output.failing_closed)
        if output.placed_by_hook_template is not None:
            self.metrics.record_workflow_placement(output.placed_by_hook_template)
        result = output.result
        if result is not None:
            self.metrics.observe_ledger(result.ledger)
            if result.warm_pool is not None:
                self.metrics.observe_warm_pool(result.warm_pool.pairs, result.warm_pool.load)
            if result.hot is not None:
                self.metrics.observe_hot(result.hot.by_state)
            if self.counts is not None:
                self.metrics.observe_pair_counts(self.counts())
            self.metrics.record_reconcile(
                step.duration, ok=True, subscriber_errors=step.subscriber_errors
            )
        if (result is not None or output.failing_closed) and step.advertised is not None:
            self.metrics.record_advertised(step.advertised)
