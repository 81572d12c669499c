"""The listener's capacity-aware part: its ports over Kubernetes, the shared runtime and its
loop.

The runtime itself (controller, placeholder subscriber, snapshot source) is built by the one
assembly both drivers share (:func:`scaleset.assembly.assemble_scale_set`); this module
gives it the listener's ports (the Kubernetes provider's cache and writer) and adds what a
process has beyond it: the transition log, the metrics and the status board (typed
subscribers and observers of :func:`scaleset.carry_out.carry_out`).

:class:`CapacityAwarePart` is what the process starts once the message session is open and
every permission is granted. In order:

1. :meth:`~CapacityAwarePart.start`: the provider (providers/kubernetes/provider.py) starts
   its watch-fed cache. Events that decisions read go to the reconcile loop once it exists,
   judged as the simulator judges them (providers/kubernetes/observe/relevance.py), as one
   :class:`~reconciler.controller.Trigger`.
2. The process waits for the first sync and refuses to start on an error of the start-up
   checks (:meth:`~CapacityAwarePart.startup_checks`).
3. :meth:`~CapacityAwarePart.build`: the runtime and its asyncio driver
   (listener/process/reconcile_loop.py), whose outputs go to the listener's ``CapacityGate``
   and ARC's scaler. Each snapshot comes from the provider (the fit estimate included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kubernetes import client as k8s

from listener.arc.config import ListenerConfig
from listener.observability.metrics import MetricsSubscriber, PrometheusMetrics
from listener.observability.status import StatusSubscriber
from listener.process.context import ProcessContext
from listener.process.reconcile_loop import Observation, ReconcileLoop
from providers.kubernetes.checks import Finding
from providers.kubernetes.observe.relevance import Verdict
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.provider import KubernetesProvider
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.controller import Trigger, Work
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand
from reconciler.subscribers import LoggingSubscriber
from scaleset.assembly import ScaleSetPorts, ScaleSetRuntime, assemble_scale_set
from scaleset.carry_out import CarriedOut, Effects
from scaleset.demand import ScaleSetDemand
from scaleset.ports import ScalerControls


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


class CountedWrites(Protocol):
    """A placeholder writer's own tally of API writes by verb."""

    @property
    def calls(self) -> Mapping[str, int]: ...


class ApiWriteCounter:
    """A step observer: the placeholder API write counters, from the writer's own tally."""

    def __init__(self, writer: CountedWrites, metrics: PrometheusMetrics) -> None:
        self.writer = writer
        self.metrics = metrics
        self._seen: dict[str, int] = {}

    def observe(self, step: CarriedOut) -> None:
        if step.output.result is None:
            return
        for verb, total in self.writer.calls.items():
            self.metrics.record_api_write(verb, total - self._seen.get(verb, 0))
            self._seen[verb] = total


class CapacityAwarePart:
    """The provider, the runtime and its loop of one listener process (see module doc)."""

    def __init__(
        self, api_client: k8s.ApiClient, ctx: ProcessContext, demand: ScaleSetDemand
    ) -> None:
        self.ctx = ctx
        self.demand = demand
        self.target = scale_set_target(ctx.config, ctx.settings)
        self.provider = KubernetesProvider(
            api_client,
            ctx.settings,
            self.target,
            instance=ctx.instance,
            on_event=self._observed,
        )
        self.runtime: ScaleSetRuntime | None = None
        self.loop: ReconcileLoop | None = None
        #: The writer the runtime's subscriber uses, once built. Kept here, not asked of
        #: the provider again: that re-reads the EphemeralRunnerSet, which may be gone by
        #: shutdown (an uninstall), when our placeholders must still be deleted. The
        #: provider swaps a changed template's builder into this same object.
        self.writer: KubernetesPlaceholderWriter | None = None

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
        """A watch event decisions read (providers/kubernetes/observe/relevance.py): a placeholder
        that started to count steps at once, a pod that stopped backing capacity is checked
        for a drop before the debounce, anything else is a debounced trigger."""
        self.trigger(Trigger(leading=verdict.rise, lost=verdict.lost))

    def trigger(self, trigger: Trigger) -> None:
        """Hand ``trigger`` to the reconcile loop (dropped before it is built: its first step
        runs at once anyway)."""
        if self.loop is not None:
            self.loop.trigger(trigger)

    def build(self, scaler: ScalerControls) -> ReconcileLoop:
        """The runtime and its loop (after the first sync and the start-up checks); each
        output is carried out to ``scaler`` (ARC's scaler), the gate, the metrics and the
        status board."""
        ctx = self.ctx
        self.writer = writer = self.provider.writer
        self.runtime = runtime = assemble_scale_set(
            ctx.settings,
            ScaleSetPorts(
                target=self.target,
                writer=writer,
                snapshots=ProviderSnapshots(self.provider),
                demand=self.demand,
                clock=ctx.clock,
                instance=ctx.instance,
            ),
        )
        store = runtime.controller.reconciler.store
        metrics = MetricsSubscriber(ctx.metrics, counts=store.counts)
        # Scheduling and durations run on the clock's monotonic() (a wall-clock jump must not
        # stall them); pair timestamps are the snapshots' wall time, its now().
        scheduling = ctx.clock
        effects = Effects(
            subscribers=(*runtime.subscribers, LoggingSubscriber(), metrics),
            gate=ctx.gate,
            scaler=scaler,
            observers=(
                metrics,
                ApiWriteCounter(writer, ctx.metrics),
                StatusSubscriber(ctx.status, store.records, ctx.clock),
            ),
            clock=scheduling,
        )
        self.loop = ReconcileLoop(
            runtime.controller,
            Observation(
                snapshot=lambda _now: runtime.snapshot(Work.STEP, ctx.clock.now()),
                drop_snapshot=lambda _now: runtime.snapshot(Work.DROP_CHECK, ctx.clock.now()),
                stale_for=self.provider.cache.stale_for,
            ),
            effects,
            scheduling,
        )
        return self.loop

    def owned_pairs(self) -> set[str]:
        """Pair ids this instance holds, its own and adopted ones: the pairs in the
        reconciler's store and its hot slots (``Reconciler.owned_ids``)."""
        if self.runtime is None:
            return set()
        return self.runtime.controller.reconciler.owned_ids()

    def stop(self, timeout: float) -> None:
        self.provider.stop(timeout=timeout)
