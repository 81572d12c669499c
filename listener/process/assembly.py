"""Phase D of the listener process: the capacity-aware part, over the Kubernetes provider.

:class:`CapacityAwarePart` is what ``ListenerApp`` starts once the message session is open
and every permission is granted. In order:

1. :meth:`~CapacityAwarePart.start`: the provider (providers/kubernetes/provider.py) starts
   its watch-fed cache. Events that decisions read go to the reconcile loop once it exists,
   judged as the simulator judges them (providers/kubernetes/relevance.py): a debounced
   trigger; a placeholder that started to count, a step at once; a pod that stopped backing
   capacity, a drop check at once.
2. The app waits for the first sync and refuses to start on an error of the start-up checks
   (:meth:`~CapacityAwarePart.startup_checks`).
3. :meth:`~CapacityAwarePart.build`: the scale-set controller (reconciler/controller.py:
   schedule, fail-closed, drop guard, published value) and its asyncio driver
   (listener/process/reconcile_loop.py), whose subscribers write placeholders, logs and metrics and
   whose capacity goes into the listener's ``CapacityGate``. Each snapshot comes from the
   provider (the fit estimate included).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from kubernetes import client as k8s

from listener.arc.config import ListenerConfig
from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener
from listener.observability.http import StatusBoard
from listener.observability.metrics import MetricsSubscriber, PrometheusMetrics
from listener.process.reconcile_loop import Observation, ReconcileLoop
from providers.kubernetes.checks import Finding
from providers.kubernetes.provider import KubernetesProvider
from providers.kubernetes.relevance import Verdict
from providers.kubernetes.scale_set import ScaleSetTarget
from providers.kubernetes.translate import build_snapshot
from providers.kubernetes.writer import KubernetesPlaceholderWriter
from reconciler.clock import Clock
from reconciler.controller import Output, ScaleSetController, controller_timings
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand
from reconciler.subscribers import LoggingSubscriber, PlaceholderSubscriber


class MonotonicClock:
    """The reconcile loop's scheduling clock: a wall-clock jump must not stall it."""

    def now(self) -> float:
        return time.monotonic()


def scale_set_target(config: ListenerConfig, capacity: CapacityAwareSettings) -> ScaleSetTarget:
    """Where this scale set's runners and placeholders live (ARC's listener config)."""
    return ScaleSetTarget.of(
        capacity,
        ers_name=config.ephemeral_runner_set_name,
        runner_namespace=config.ephemeral_runner_set_namespace,
        max_runners=config.max_runners,
        min_runners=config.min_runners,
        ars_name=config.runner_scale_set_name or None,
    )


class CapacityAwarePart:
    """The provider, the reconciler and its loop of one listener process (see module doc)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        config: ListenerConfig,
        capacity: CapacityAwareSettings,
        *,
        instance: str,
        clock: Clock,
        gate: CapacityGate,
        metrics: PrometheusMetrics,
        status: StatusBoard,
        demand: Callable[[], Demand],
    ) -> None:
        self.capacity = capacity
        self.instance = instance
        self.clock = clock
        self.gate = gate
        self.metrics = metrics
        self.status = status
        self.demand = demand
        self.target = scale_set_target(config, capacity)
        self.provider = KubernetesProvider(
            api_client,
            capacity,
            self.target,
            instance=instance,
            on_event=self._observed,
        )
        self.controller: ScaleSetController | None = None
        self.loop: ReconcileLoop | None = None
        #: The writer the reconciler's subscriber uses, once built. Kept here, not asked of
        #: the provider again: that re-reads the EphemeralRunnerSet, which may be gone by
        #: shutdown (an uninstall), when our placeholders must still be deleted. The
        #: provider swaps a changed template's builder into this same object.
        self.writer: KubernetesPlaceholderWriter | None = None
        self._writes_seen: dict[str, int] = {}

    @property
    def namespaces(self) -> set[str]:
        """The namespaces whose permissions the listener needs."""
        return {self.target.runner_namespace, self.target.placeholder_namespace}

    def start(self) -> CapacityAwarePart:
        self.provider.start()
        return self

    def startup_checks(self) -> list[Finding]:
        return self.provider.startup_checks()

    def _observed(self, verdict: Verdict) -> None:
        """A watch event decisions read (providers/kubernetes/relevance.py): a placeholder
        that started to count steps at once, a pod that stopped backing capacity is checked
        for a drop before the debounce, anything else is a debounced trigger."""
        if self.loop is not None:
            self.loop.changed(leading=verdict.rise, lost=verdict.lost)

    def build(self, listener: Listener) -> ReconcileLoop:
        """The controller and its loop (after the first sync and the start-up checks)."""
        capacity = self.capacity
        reconciler_config = capacity.reconciler_config(self.target.ers_name)
        metrics_subscriber = MetricsSubscriber(self.metrics)
        self.writer = writer = self.provider.writer
        # Scheduling runs on the monotonic clock (a wall-clock jump must not stall it); pair
        # timestamps are the snapshots' wall time.
        monotonic = MonotonicClock()
        self.controller = controller = ScaleSetController(
            reconciler_config,
            controller_timings(capacity),
            instance=self.instance,
            started_at=self.clock.now(),
        )
        reconciler = controller.reconciler
        metrics_subscriber.counts = reconciler.store.counts

        def on_output(output: Output, duration: float, errors: int) -> None:
            if output.error is not None:
                metrics_subscriber.observe_failure(duration)
            self.metrics.record_failing_closed(output.failing_closed)
            if output.failing_closed:
                self.metrics.record_advertised(self.gate.value)  # the fail-closed value
            if output.result is None:
                return
            # ARC's scaler clamps desired runners by the live maxRunners the step saw.
            listener.set_live_max_runners(output.result.ledger.max_runners)
            # Hot slots: the scaler keeps one idle runner per live slot (one attribute write,
            # read by the scaler's next ERS patch after a poll; docs/design.md#hot-runners).
            set_hot = getattr(listener.scaler, "set_hot_runners", None)
            if callable(set_hot):
                set_hot(output.result.hot_runners)
            metrics_subscriber.observe_step(
                replace(output.result, subscriber_errors=errors), duration
            )
            self._count_writes(writer)
            self.metrics.record_advertised(self.gate.value)
            self.status.publish(
                records=reconciler.store.records(),
                ledger=output.result.ledger,
                at=self.clock.now(),
            )

        self.loop = ReconcileLoop(
            controller,
            Observation(
                snapshot=lambda _now: self._snapshot(),
                drop_snapshot=lambda _now: self._drop_snapshot(),
                stale_for=self.provider.cache.stale_for,
            ),
            [
                PlaceholderSubscriber(
                    writer,
                    namespace=self.target.placeholder_namespace,
                    clock=self.clock,
                    config=reconciler_config,
                ),
                LoggingSubscriber(),
                metrics_subscriber,
            ],
            self.gate,
            monotonic,
            on_output=on_output,
        )
        return self.loop

    def _count_writes(self, writer: KubernetesPlaceholderWriter) -> None:
        """API write counters from the writer's own tally."""
        for verb, total in writer.calls.items():
            self.metrics.record_api_write(verb, total - self._writes_seen.get(verb, 0))
            self._writes_seen[verb] = total

    def _snapshot(self) -> ClusterSnapshot | None:
        """A step's snapshot (fit estimate included); None before the first sync."""
        if not self.provider.cache.has_synced:
            return None
        return self.provider.snapshot(now=self.clock.now(), demand=self.demand())

    def _drop_snapshot(self) -> ClusterSnapshot | None:
        """What the drop check reads: no fit (cheap); None before the first sync."""
        cache = self.provider.cache
        if not cache.has_synced:
            return None
        return build_snapshot(
            cache,
            self.target,
            now=self.clock.now(),
            demand=self.demand(),
            hot=self.capacity.hot_runners != 0,
        )

    def owned_pairs(self) -> set[str]:
        """Pair ids in the reconciler's store (its own and adopted ones)."""
        if self.controller is None:
            return set()
        return {record.pair_id for record in self.controller.reconciler.store.records()}

    def stop(self, timeout: float) -> None:
        self.provider.stop(timeout=timeout)
