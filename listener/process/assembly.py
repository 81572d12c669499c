"""The one assembly of a scale set's runtime, and the listener's ports over Kubernetes.

:func:`assemble_scale_set` builds, from a scale set's settings and its ports, everything that
steps it: the scale-set controller (reconciler/controller.py), the subscribers that carry out
its decisions (placeholder writes; with the process's metrics, also logs and metrics), and the
snapshot source that reads the combined demand. The listener process (:class:`CapacityAwarePart`
below, over the Kubernetes provider) and the simulator's driver (simulator/driver/
capacity_aware.py, over the simulated store) both call it, so the two cannot drift apart.
:func:`scale_set_demand` builds the demand both combine (the configured sources, with the
``statistics`` source the listener's messages feed); it is built before the runtime because
the listener reads statistics from its first message, before any step.

:class:`CapacityAwarePart` is what the process starts once the message session is open and
every permission is granted. In order:

1. :meth:`~CapacityAwarePart.start`: the provider (providers/kubernetes/provider.py) starts
   its watch-fed cache. Events that decisions read go to the reconcile loop once it exists,
   judged as the simulator judges them (providers/kubernetes/relevance.py): a debounced
   trigger; a placeholder that started to count, a step at once; a pod that stopped backing
   capacity, a drop check at once.
2. The process waits for the first sync and refuses to start on an error of the start-up
   checks (:meth:`~CapacityAwarePart.startup_checks`).
3. :meth:`~CapacityAwarePart.build`: the runtime (:func:`assemble_scale_set`) and its asyncio
   driver (listener/process/reconcile_loop.py), whose capacity goes into the listener's
   ``CapacityGate``. Each snapshot comes from the provider (the fit estimate included).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from kubernetes import client as k8s

from listener.arc.config import ListenerConfig
from listener.arc.gate import CapacityGate
from listener.arc.loop_ports import ScalerControls
from listener.observability.http import StatusBoard
from listener.observability.metrics import MetricsSubscriber, PrometheusMetrics
from listener.process.reconcile_loop import Observation, ReconcileLoop
from providers.demand.combine import Combine, CombinedDemand
from providers.demand.statistics import StatisticsDemand
from providers.fleet.share import FleetShareSource
from providers.kubernetes.checks import Finding
from providers.kubernetes.provider import KubernetesProvider
from providers.kubernetes.relevance import Verdict
from providers.kubernetes.scale_set import ScaleSetTarget
from providers.kubernetes.writer import KubernetesPlaceholderWriter
from reconciler.clock import Clock
from reconciler.controller import Output, ScaleSetController, Work, controller_timings
from reconciler.ports import PlaceholderWriter, Subscriber
from reconciler.settings import CapacityAwareSettings, ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot, Demand
from reconciler.subscribers import LoggingSubscriber, PlaceholderSubscriber


@dataclass(frozen=True, slots=True)
class ScaleSetDemand:
    """The demand a scale set's decisions read: the configured sources, combined."""

    combined: CombinedDemand
    #: The ``statistics`` source, fed by the listener's messages and session refreshes.
    statistics: StatisticsDemand
    #: With ``fleetView`` on: this cluster's share of the fleet (providers/fleet/share.py).
    fleet: FleetShareSource | None = None

    @property
    def current(self) -> Demand:
        """The configured sources combined (providers/demand); all failing -> the floor.
        With a fresh fleet view, this cluster's share of it (unchanged while stale)."""
        combined = self.combined.current
        return combined if self.fleet is None else self.fleet.apply(combined)


def scale_set_demand(
    settings: CapacityAwareSettings,
    on_change: Callable[[], None],
    *,
    fleet: FleetShareSource | None = None,
) -> ScaleSetDemand:
    """The configured demand sources and their combination; ``on_change`` is called when a
    source's answer changes (a leading trigger, reconciler/schedule.py). The ``statistics``
    source is attached here; polled ones attach once they start. ``fleet``: the fleet view's
    share (``fleetView`` on; :func:`providers.fleet.share.fleet_share_source`)."""
    combined = CombinedDemand(
        settings.demand.resolved_sources(settings.hud.url), Combine(settings.demand.combine)
    )
    statistics = StatisticsDemand(on_change=on_change)
    if "statistics" in combined.order:
        combined.attach(statistics)
    return ScaleSetDemand(combined, statistics, fleet)


class SnapshotPort(Protocol):
    """Where a scale set's snapshots come from (the Kubernetes cache, the simulated store)."""

    def full(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        """What a step reads, the fit estimate included (None: nothing to read yet)."""
        ...

    def cheap(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        """What a drop check reads: no fit estimate."""
        ...


@dataclass(frozen=True, slots=True)
class ScaleSetPorts:
    """What a scale set's runtime is handed: where it writes, reads and keeps time."""

    target: ScaleSetTarget
    writer: PlaceholderWriter
    snapshots: SnapshotPort
    demand: ScaleSetDemand
    #: Wall time: the start of the controller's reconciler and the placeholders' expiry.
    clock: Clock
    instance: str
    #: The process's metrics: adds the log and metrics subscribers (None: placeholders only).
    metrics: PrometheusMetrics | None = None
    #: The schedule's jitter (None: the controller's default).
    rng: random.Random | None = None


@dataclass(frozen=True, slots=True)
class ScaleSetRuntime:
    """A scale set's controller, its subscribers and what its snapshots read."""

    config: ReconcilerConfig
    controller: ScaleSetController
    #: In notification order: placeholder writes first.
    subscribers: tuple[Subscriber, ...]
    #: The metrics subscriber among them (with the process's metrics), for step outcomes.
    metrics: MetricsSubscriber | None
    snapshots: SnapshotPort
    demand: ScaleSetDemand

    def snapshot(self, work: Work, now: float) -> ClusterSnapshot | None:
        """The snapshot ``work`` needs, with the demand combined now."""
        demand = self.demand.current
        if work is Work.STEP:
            return self.snapshots.full(now, demand)
        return self.snapshots.cheap(now, demand)


def assemble_scale_set(settings: CapacityAwareSettings, ports: ScaleSetPorts) -> ScaleSetRuntime:
    """Build one scale set's runtime from its settings and ports (see the module docstring)."""
    config = settings.reconciler_config(ports.target.ers_name)
    controller = ScaleSetController(
        config,
        controller_timings(settings),
        instance=ports.instance,
        started_at=ports.clock.now(),
        rng=ports.rng,
    )
    subscribers: list[Subscriber] = [
        PlaceholderSubscriber(
            ports.writer,
            namespace=ports.target.placeholder_namespace,
            clock=ports.clock,
            config=config,
        )
    ]
    metrics = None
    if ports.metrics is not None:
        metrics = MetricsSubscriber(ports.metrics, counts=controller.reconciler.store.counts)
        subscribers += [LoggingSubscriber(), metrics]
    return ScaleSetRuntime(
        config, controller, tuple(subscribers), metrics, ports.snapshots, ports.demand
    )


# --- the listener's ports over the Kubernetes provider ---------------------------------------


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


class ProviderSnapshots:
    """Snapshots from the provider's watch-fed cache; None before the first sync."""

    def __init__(self, provider: KubernetesProvider) -> None:
        self.provider = provider

    def full(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        if not self.provider.cache.has_synced:
            return None
        return self.provider.snapshot(now=now, demand=demand)

    def cheap(self, now: float, demand: Demand) -> ClusterSnapshot | None:
        if not self.provider.cache.has_synced:
            return None
        return self.provider.drop_snapshot(now=now, demand=demand)


class CapacityAwarePart:
    """The provider, the runtime and its loop of one listener process (see module doc)."""

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
        demand: ScaleSetDemand,
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
        self.runtime: ScaleSetRuntime | None = None
        self.loop: ReconcileLoop | None = None
        #: The writer the runtime's subscriber uses, once built. Kept here, not asked of
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

    def build(self, scaler: ScalerControls) -> ReconcileLoop:
        """The runtime and its loop (after the first sync and the start-up checks); each
        step's outcome reaches ``scaler`` (ARC's scaler) and the gate."""
        self.writer = writer = self.provider.writer
        self.runtime = runtime = assemble_scale_set(
            self.capacity,
            ScaleSetPorts(
                target=self.target,
                writer=writer,
                snapshots=ProviderSnapshots(self.provider),
                demand=self.demand,
                clock=self.clock,
                instance=self.instance,
                metrics=self.metrics,
            ),
        )
        metrics_subscriber = runtime.metrics
        if metrics_subscriber is None:
            raise RuntimeError("the listener's runtime is assembled with its metrics")
        reconciler = runtime.controller.reconciler

        def on_output(output: Output, duration: float, errors: int) -> None:
            if output.error is not None:
                metrics_subscriber.observe_failure(duration)
            self.metrics.record_failing_closed(output.failing_closed)
            if self.provider.placed_by_hook_template is not None:
                self.metrics.record_workflow_placement(self.provider.placed_by_hook_template)
            if output.failing_closed:
                self.metrics.record_advertised(self.gate.value)  # the fail-closed value
            # Switched off by ARC (runners Outdated), as the snapshot of this step or drop
            # check saw it: the scaler asks for no runner either.
            scaler.set_switched_off(self.provider.switched_off is not None)
            if output.result is None:
                return
            # The live maxRunners the step saw caps the advertised capacity and ARC's scaler's
            # desired runners alike (0 is a drain).
            live_max = output.result.ledger.max_runners
            self.gate.set_live_max_runners(live_max)
            scaler.set_max_runners(live_max)
            # Hot slots: the scaler keeps one idle runner per live slot (one attribute write,
            # read by the scaler's next ERS patch after a poll; docs/design.md#hot-runners).
            scaler.set_hot_runners(output.result.hot_runners)
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

        # Scheduling runs on the monotonic clock (a wall-clock jump must not stall it); pair
        # timestamps are the snapshots' wall time.
        self.loop = ReconcileLoop(
            runtime.controller,
            Observation(
                snapshot=lambda _now: runtime.snapshot(Work.STEP, self.clock.now()),
                drop_snapshot=lambda _now: runtime.snapshot(Work.DROP_CHECK, self.clock.now()),
                stale_for=self.provider.cache.stale_for,
            ),
            runtime.subscribers,
            self.gate,
            MonotonicClock(),
            on_output=on_output,
        )
        return self.loop

    def _count_writes(self, writer: KubernetesPlaceholderWriter) -> None:
        """API write counters from the writer's own tally."""
        for verb, total in writer.calls.items():
            self.metrics.record_api_write(verb, total - self._writes_seen.get(verb, 0))
            self._writes_seen[verb] = total

    def owned_pairs(self) -> set[str]:
        """Pair ids this instance holds, its own and adopted ones: the pairs in the
        reconciler's store and its hot slots (``Reconciler.owned_ids``)."""
        if self.runtime is None:
            return set()
        return self.runtime.controller.reconciler.owned_ids()

    def stop(self, timeout: float) -> None:
        self.provider.stop(timeout=timeout)
