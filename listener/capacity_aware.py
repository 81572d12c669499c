"""Phase D of the listener process: the capacity-aware part, over the Kubernetes provider.

:class:`CapacityAwarePart` is what ``ListenerApp`` starts once the message session is open
and every permission is granted. In order:

1. :meth:`~CapacityAwarePart.start`: the provider (providers/kubernetes/provider.py) starts
   its watch-fed cache. Pod events go to the reconcile loop once it exists: any change is a
   debounced trigger (a lost placeholder also pokes the drop guard), a placeholder turning
   Running a leading one (providers/kubernetes/rises.py).
2. The app waits for the first sync and refuses to start on an error of the start-up checks
   (:meth:`~CapacityAwarePart.startup_checks`).
3. :meth:`~CapacityAwarePart.build`: the reconciler (subscribers: placeholders, logs,
   metrics; sink: the listener's ``CapacityGate``) and its loop. Each snapshot comes from
   the provider (the fit estimate included); while the watches are down the header fails
   closed and no decision is taken.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kubernetes import client as k8s

from listener.arc_config import ListenerConfig
from listener.http import StatusBoard
from listener.loop import CapacityGate, Listener
from listener.metrics import MetricsSubscriber, PrometheusMetrics
from providers.kubernetes.checks import Finding
from providers.kubernetes.provider import KubernetesProvider
from providers.kubernetes.translate import ScaleSetTarget, build_snapshot
from providers.kubernetes.writer import KubernetesPlaceholderWriter
from reconciler.capacity import fail_closed_capacity
from reconciler.clock import Clock
from reconciler.fast_drop import DropGuard
from reconciler.loop import ReconcileLoop, Schedule
from reconciler.reconciler import Reconciler, StepResult
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand
from reconciler.subscribers import LoggingSubscriber, PlaceholderSubscriber

log = logging.getLogger("listener")


class MonotonicClock:
    """The reconcile loop's scheduling clock: a wall-clock jump must not stall it."""

    def now(self) -> float:
        return time.monotonic()


def scale_set_target(config: ListenerConfig, capacity: CapacityAwareSettings) -> ScaleSetTarget:
    """Where this scale set's runners and placeholders live (ARC's listener config)."""
    return ScaleSetTarget(
        ers_name=config.ephemeral_runner_set_name,
        runner_namespace=config.ephemeral_runner_set_namespace,
        placeholder_namespace=capacity.placeholder_namespace
        or config.ephemeral_runner_set_namespace,
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
            on_change=self._changed,
            on_rise=self._rose,
        )
        self.reconciler: Reconciler | None = None
        self.loop: ReconcileLoop | None = None
        #: The writer the reconciler's subscriber uses, once built. Kept here, not asked of
        #: the provider again: that re-reads the EphemeralRunnerSet, which may be gone by
        #: shutdown (an uninstall), when our placeholders must still be deleted. The
        #: provider swaps a changed template's builder into this same object.
        self.writer: KubernetesPlaceholderWriter | None = None
        self._failing_closed = False
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

    def _changed(self, kind: str) -> None:
        if self.loop is not None:
            self.loop.trigger()
            if kind == "Pod":  # a lost placeholder lowers the header before the debounce
                self.loop.poke_drop()

    def _rose(self) -> None:
        """A placeholder turned Running: its pair may be READY, so step at once."""
        if self.loop is not None:
            self.loop.trigger(leading=True)

    def build(self, listener: Listener) -> ReconcileLoop:
        """The reconciler and its loop (after the first sync and the start-up checks)."""
        capacity = self.capacity
        reconciler_config = capacity.reconciler_config(self.target.ers_name)
        metrics_subscriber = MetricsSubscriber(self.metrics)
        self.writer = writer = self.provider.writer
        self.reconciler = reconciler = Reconciler(
            reconciler_config,
            clock=self.clock,
            subscribers=[
                PlaceholderSubscriber(
                    writer,
                    namespace=self.target.placeholder_namespace,
                    clock=self.clock,
                    config=reconciler_config,
                ),
                LoggingSubscriber(),
                metrics_subscriber,
            ],
            sink=self.gate,
            instance=self.instance,
        )
        metrics_subscriber.counts = reconciler.store.counts

        def on_step(result: StepResult, duration: float) -> None:
            metrics_subscriber.observe_step(result, duration)
            self._count_writes(writer)
            self.metrics.record_advertised(self.gate.value)
            self.status.publish(
                records=reconciler.store.records(), ledger=result.ledger, at=self.clock.now()
            )

        def on_error(_exc: BaseException) -> None:
            metrics_subscriber.observe_failure(0.0)

        self.loop = ReconcileLoop(
            reconciler,
            lambda: self._snapshot(listener),
            Schedule(
                interval=capacity.recalculate_interval,
                jitter=capacity.recalculate_jitter,
                debounce=capacity.watch_debounce,
                max_delay=max(capacity.watch_debounce * 5, 1.0),
            ),
            # Scheduling runs on the monotonic clock: a wall-clock jump must not stall it.
            MonotonicClock(),
            on_step=on_step,
            on_error=on_error,
            drop_guard=DropGuard(reconciler, self._drop_snapshot),
        )
        return self.loop

    def _count_writes(self, writer: KubernetesPlaceholderWriter) -> None:
        """API write counters from the writer's own tally."""
        for verb, total in writer.calls.items():
            self.metrics.record_api_write(verb, total - self._writes_seen.get(verb, 0))
            self._writes_seen[verb] = total

    def _stale(self) -> float | None:
        """Seconds the watches have been down beyond the interval; None when fresh."""
        stale = self.provider.cache.stale_for()
        return stale if stale > self.capacity.recalculate_interval else None

    def _snapshot(self, listener: Listener) -> ClusterSnapshot | None:
        """The loop's snapshot; None (no step) before the first sync or while failing closed."""
        cache = self.provider.cache
        if not cache.has_synced:
            return None
        snap = self.provider.snapshot(now=self.clock.now(), demand=self.demand())
        # A live maxRunners (ARS) change moves the header and the scaler's clamp together.
        listener.set_live_max_runners(snap.max_runners)
        stale = self._stale()
        if stale is not None:
            # Fail closed: a placeholder lost while we were blind must not stay advertised.
            # No decisions either: they would act on a view we cannot trust.
            held = fail_closed_capacity(snap)
            self.gate.set_max_runners(held)
            if not self._failing_closed:
                log.warning(
                    "Kubernetes watches down for %.0fs: advertising %d (assigned jobs keep "
                    "running) until they recover",
                    stale,
                    held,
                )
            self._failing_closed = True
            return None
        if self._failing_closed:
            log.info("Kubernetes watches recovered; reconciling again")
        self._failing_closed = False
        return snap

    def _drop_snapshot(self) -> ClusterSnapshot | None:
        """What the drop check reads: no fit (cheap); nothing while failing closed."""
        cache = self.provider.cache
        if not cache.has_synced or self._stale() is not None:
            return None
        return build_snapshot(cache, self.target, now=self.clock.now(), demand=self.demand())

    def owned_pairs(self) -> set[str]:
        """Pair ids in the reconciler's store (its own and adopted ones)."""
        if self.reconciler is None:
            return set()
        return {record.pair_id for record in self.reconciler.store.records()}

    def stop(self, timeout: float) -> None:
        self.provider.stop(timeout=timeout)
