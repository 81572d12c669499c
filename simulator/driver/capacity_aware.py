"""The capacity-aware strategy in the simulated world: the production reconciler, stepped in
virtual time (see simulator/scenarios/strategies.py for the three strategies side by side).

- :class:`CapacityAware`: the strategy; one :class:`CapacityAwareDriver` per scale set.
- :class:`CapacityAwareDriver`: the simulator's driver of the production scale-set controller
  (:class:`~reconciler.controller.ScaleSetController`, the same object the listener drives
  with asyncio: it owns the schedule, fail-closed, the drop guard and the published value).
  The driver only moves bytes in virtual time: it feeds the controller the cache view's
  changes and the demand the listener's configuration names (statistics from the listener's
  messages and, while blind, its session refreshes; the HUD feed) as one typed trigger,
  builds the snapshot each piece of work needs, and carries the output out with the
  listener's own function (scaleset/carry_out.py): the subscribers, the capacity into the
  listener's gate, the scaler target into its gate and ARC's scaler. Public fault hooks:
  :class:`DriverHooks`.
- The ``reconcile_step`` event each step emits lives in simulator/driver/step_log.py.

The controller, its subscribers and the demand combination are built by the listener's own
assembly (:func:`scaleset.assembly.assemble_scale_set`); the driver is their ports: the
simulated store as writer and snapshot source, the loop's virtual time as clock.
"""

from __future__ import annotations

import logging
import random
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from listener.arc.poll_cut import PollCut
from providers.demand import FailureMode
from providers.demand.statistics import refresh_tick
from providers.fleet.share import FleetShareSource
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.pods.hook_template import HookTemplateError, read_hook_template
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder, runner_pod_template
from reconciler.clock import Clock
from reconciler.controller import CHANGED, DEMAND_CHANGED, Output, Trigger, Work
from reconciler.ports import PlaceholderWriter
from reconciler.reconciler import Reconciler
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand
from scaleset.assembly import ScaleSetPorts, ScaleSetRuntime, assemble_scale_set
from scaleset.carry_out import Effects, carry_out
from scaleset.demand import ScaleSetDemand, scale_set_demand
from simulator.driver.fleet_store import FleetStore, MemberSample, TroubleSeries
from simulator.driver.step_log import StepLog
from simulator.driver.store_snapshots import StoreSnapshots
from simulator.driver.store_view import StoreCacheView, StorePlaceholderWriter
from simulator.engine.loop import Timer
from simulator.engine.store import Obj
from simulator.scenarios.strategies import CAPACITY_AWARE, ScaleSetContext, Strategy
from simulator.workload.hud import HudUnavailable
from state_machine.table import IN_FLIGHT

log = logging.getLogger(__name__)


def _instance_id(rng: random.Random) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(rng.choice(alphabet) for _ in range(5))


@dataclass
class DriverHooks:
    """Fault hooks of a :class:`CapacityAwareDriver` (used by :mod:`simulator.faults`).

    ``source`` replaces the cache view each step reads (a stale cache: its ``stale_for`` says
    how long its watches have been down); ``step`` runs each
    step (it must call the function it gets; a crash fault raises through it). None: no
    fault. HUD faults use the driver's ``hud_filter``."""

    source: Callable[[StoreCacheView], CacheView] | None = None
    step: Callable[[Callable[[], None]], None] | None = None


class CacheView(Protocol):
    """What the driver's snapshots read: the store's cache view, or a fault's stale copy."""

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]: ...

    def stale_for(self) -> float:
        """Seconds the watches have been down (0 while fresh)."""
        ...


class _HudFeed:
    """The simulated HUD's latest answer as a demand source: it serves both the ``hud`` and
    the ``http`` source (an endpoint serving HUD's rows)."""

    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, name: str, driver: CapacityAwareDriver) -> None:
        self.name = name
        self._driver = driver

    @property
    def current(self) -> Demand:
        return self._driver.hud_demand


class CapacityAwareDriver:
    """Runs the production reconciler for one scale set in virtual time."""

    def __init__(
        self,
        ctx: ScaleSetContext,
        settings: CapacityAwareSettings,
        *,
        use_fit: bool,
        fit_refresh: float,
        fleet_store: FleetStore | None = None,
    ) -> None:
        self.ctx = ctx
        self.settings = settings
        self.use_fit = use_fit
        self.fit_refresh = fit_refresh
        spec = ctx.spec
        self.target = ScaleSetTarget.of(
            settings,
            ers_name=spec.name,
            runner_namespace=spec.namespace,
            max_runners=spec.max_runners,
            min_runners=spec.min_runners,
            ars_name=spec.name,
        )
        self.namespace = self.target.placeholder_namespace
        self.instance = _instance_id(ctx.rng)
        self.builder, self.writer = self.process_writer(self.instance)
        self.source: StoreCacheView | None = None
        #: Wall time: snapshots' ``taken_at`` and pair timestamps (a clock fault skews it);
        #: the controller's schedule runs on the loop's own time, like the listener's
        #: monotonic clock.
        self.wall: Clock = ctx.loop
        self.sources = settings.demand.resolved_sources(settings.hud.url)
        unmodelled = set(self.sources) - {"statistics", "hud", "http"}
        if unmodelled:
            raise ValueError(
                f"scale set {spec.name}: demand source(s) {sorted(unmodelled)} are not modelled "
                "by the simulator (statistics, hud and http are)"
            )
        self.hud_demand = Demand(queued_jobs=None, error="HUD not polled yet", source="hud")
        #: The listener's demand (providers/demand/combine.py) over the same sources; a
        #: restarted process keeps it (the world's statistics and HUD feed go on).
        #: ``fleetView`` on: the world's shared store and this scale set's share of its
        #: fleet; the store's ``cluster`` label is the world's name of this cluster.
        self.fleet_store = fleet_store if settings.fleet_view.enabled else None
        self.fleet: FleetShareSource | None = None
        if self.fleet_store is not None:
            self.fleet = FleetShareSource(
                cluster=ctx.cluster,
                fleet=settings.fleet_view.fleet_for(spec.name),
                max_age=settings.fleet_view.max_age,
                clock=ctx.loop,
                on_change=self._demand_changed,
            )
        #: What the store's trouble rule reads of this listener's series (failing closed,
        #: the last pair timeout), fed by the carry-out like the listener's metrics.
        self.trouble = TroubleSeries(ctx.loop)
        self.scale_set_demand: ScaleSetDemand = scale_set_demand(
            settings, self._demand_changed, fleet=self.fleet
        )
        for name in {"hud", "http"} & set(self.sources):
            self.scale_set_demand.combined.attach(_HudFeed(name, self))
        self.snapshots = StoreSnapshots(
            self._source,
            self.target,
            lambda: self.builder,
            use_fit=use_fit,
            fit_refresh=fit_refresh,
            hot=settings.hot_runners != 0,
        )
        self._assemble(self.instance, self.writer, ctx.loop)
        #: Fault injection: rewrites each HUD answer (an outage, a slow or absurd feed).
        self.hud_filter: Callable[[Demand], Demand] | None = None
        self._timer: Timer | None = None
        self.step_log = StepLog(ctx.log, ctx.spec.name)
        self.hooks = DriverHooks()
        self.paused = False

    def process_writer(self, instance: str) -> tuple[PlaceholderPodBuilder, StorePlaceholderWriter]:
        """The placeholder builder and writer of a listener process with this instance id
        (this driver's, a restarted one's, a second pod's)."""
        spec, store = self.ctx.spec, self.ctx.store
        ers = self.ctx.arc.ers()
        try:  # placed by the hook template where it can be read, as the listener does
            workflow_pod_spec: Mapping[str, Any] | None = read_hook_template(
                runner_pod_template(ers), lambda name: store.find("ConfigMap", spec.namespace, name)
            ).spec
        except HookTemplateError:
            workflow_pod_spec = None
        builder = PlaceholderPodBuilder(
            self.settings,
            ers,
            instance=instance,
            namespace=self.namespace,
            owner=ers if self.namespace == spec.namespace else None,
            workflow_pod_spec=workflow_pod_spec,
        )
        return builder, StorePlaceholderWriter(self.ctx.store, builder)

    def _assemble(self, instance: str, writer: PlaceholderWriter, clock: Clock) -> None:
        """A listener process's runtime (scaleset/assembly.py) over this driver's ports: the
        controller and the subscribers this driver carries out."""
        self.runtime: ScaleSetRuntime = assemble_scale_set(
            self.settings,
            ScaleSetPorts(
                target=self.target,
                writer=writer,
                snapshots=self.snapshots,
                demand=self.scale_set_demand,
                clock=clock,
                instance=instance,
                rng=random.Random(self.ctx.rng.random()),
            ),
        )
        self.config = self.runtime.config
        self.controller = self.runtime.controller
        #: Mutable: a fault ends a dead process's subscribers or adds observers.
        self.subscribers = list(self.runtime.subscribers)

    @property
    def reconciler(self) -> Reconciler:
        """The current process's reconciler (a restart replaces the controller)."""
        return self.controller.reconciler

    @property
    def steps(self) -> int:
        return self.controller.steps

    @property
    def step_errors(self) -> int:
        return self.controller.errors

    def start(self) -> None:
        ctx = self.ctx
        self.source = StoreCacheView(ctx.store, ctx.router, self.target, self.trigger)
        if "statistics" in self.sources:
            ctx.listener.statistics_observers.append(
                lambda stats: self.scale_set_demand.statistics.observe(stats["totalAvailableJobs"])
            )
            if self.settings.demand.statistics_refresh > 0:
                self._refresh_statistics()
        if {"hud", "http"} & set(self.sources):
            self._poll_hud()
        if self.fleet is not None and self.fleet_store is not None:
            self.fleet_store.join(ctx.cluster, self.fleet.fleet, self.fleet_sample)
            self._poll_fleet()
        self._arm()

    def fleet_sample(self) -> MemberSample:
        """What this listener's series say at a scrape (the fleet rules' inputs)."""
        stats = self.ctx.listener.latest_statistics or {}
        assigned = int(stats.get("totalAssignedJobs", 0))
        return MemberSample(
            free_slots=max(0, self.ctx.listener.gate.value - assigned),
            in_flight=self.reconciler.store.count(IN_FLIGHT),
            queued=int(stats.get("totalAvailableJobs", 0)),
            trouble=self.trouble.trouble,
        )

    def _poll_fleet(self) -> None:
        """Every ``fleetView.pollInterval``: read the fleet view from the store (the
        listener's providers/fleet poller)."""
        if self.fleet is not None and self.fleet_store is not None:
            self.fleet.observe(self.fleet_store.query(self.fleet.fleet))
            self.ctx.loop.call_later(self.settings.fleet_view.poll_interval, self._poll_fleet)

    @property
    def demand(self) -> Demand:
        """The demand decide sees: the sources the listener's configuration names, combined
        by the listener's own :class:`~providers.demand.combine.CombinedDemand`."""
        return self.scale_set_demand.current

    # --- inputs to the controller ---------------------------------------------------------

    def trigger(self, trigger: Trigger = CHANGED) -> None:
        """The driver's one input, as in the production listener (reconciler/controller.py
        ``Trigger``): a change the decisions read (debounced), a leading one (a demand
        source's answer changed, a placeholder turned Running:
        providers/kubernetes/observe/rises.py) or a loss (a drop check before the debounce)."""
        self.controller.changed(self.ctx.loop.now(), trigger)
        self._arm()

    def _demand_changed(self) -> None:
        self.trigger(DEMAND_CHANGED)

    def pause(self) -> None:
        """Stop stepping (a crashed listener process) until :meth:`resume`."""
        self.paused = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def resume(self) -> None:
        """Allow steps again; the next :meth:`trigger` (or HUD change) schedules one."""
        self.paused = False

    def restart(
        self, instance: str, builder: PlaceholderPodBuilder, writer: PlaceholderWriter, clock: Clock
    ) -> None:
        """A new listener process (after a crash): a new instance id and controller, its own
        placeholder writer; it adopts the pairs it finds, as the listener does at start."""
        self.instance, self.builder, self.wall = instance, builder, clock
        self._assemble(instance, writer, clock)

    def _refresh_statistics(self) -> None:
        """Every ``demand.statisticsRefresh`` (``statisticsRefreshBusy`` while jobs are
        assigned): read statistics by a session refresh when no message can bring them (the
        listener's StatisticsRefresher, same rule and tick)."""
        demand = self.settings.demand
        busy = demand.statistics_refresh_busy
        if not self.paused:
            self.ctx.listener.refresh_statistics(demand.statistics_refresh, busy)
        self.ctx.loop.call_later(
            refresh_tick(demand.statistics_refresh, busy), self._refresh_statistics
        )

    def _poll_hud(self) -> None:
        ctx = self.ctx
        try:
            queued = ctx.hud.queued_jobs(ctx.spec.labels)
            demand = Demand(queued_jobs=queued, source="hud")
        except HudUnavailable as exc:
            demand = Demand(queued_jobs=None, error=str(exc), source="hud")
        if self.hud_filter is not None:
            demand = self.hud_filter(demand)
        # Every answer replaces the last, an unchanged count included (as the listener's
        # PolledDemand does): the combination dates a polled answer by its identity.
        changed, self.hud_demand = demand != self.hud_demand, demand
        if changed:
            self.trigger(DEMAND_CHANGED)
        ctx.loop.call_later(self.settings.hud.poll_interval, self._poll_hud)

    # --- the controller's work --------------------------------------------------------------

    def _arm(self) -> None:
        if self.paused:
            return
        due = self.controller.next_wake(self.ctx.loop.now())
        timer = self._timer
        if timer is not None and timer.active:
            if timer.at <= due:
                return
            timer.cancel()
        self._timer = self.ctx.loop.call_at(due, self._step)

    def _source(self) -> CacheView:
        if self.source is None:
            raise RuntimeError("CapacityAwareDriver stepped before start()")
        if self.hooks.source is not None:
            return self.hooks.source(self.source)
        return self.source

    def _stale_for(self) -> float:
        """How long the cache's watches have been down (a stale-cache fault), else 0."""
        return self._source().stale_for()

    def _snapshot(self, work: Work) -> ClusterSnapshot:
        snapshot = self.runtime.snapshot(work, self.wall.now())
        if snapshot is None:  # the store's view is always readable
            raise RuntimeError("the simulated store gave no snapshot")
        return snapshot

    def _step(self) -> None:
        if self.hooks.step is not None:
            self.hooks.step(self._work)
        else:
            self._work()

    def _work(self) -> None:
        self._timer = None
        now = self.ctx.loop.now()
        work = self.controller.due(now)
        if work is Work.DROP_CHECK:
            self._carry(
                self.controller.check_drop(
                    now, self._snapshot(Work.DROP_CHECK), stale_for=self._stale_for()
                )
            )
        elif work is Work.STEP:
            snapshot = self._snapshot(Work.STEP)
            in_flight_before = self.step_log.in_flight(self)
            output = self.controller.step(now, snapshot, stale_for=self._stale_for())
            self._carry(output)
            self.step_log.emit(self, snapshot, in_flight_before, output.result)
        self._arm()

    def _carry(self, output: Output) -> None:
        """Carry out an output with the listener's own function (scaleset/carry_out.py): the
        subscribers, the capacity into the listener's gate, the scaler target into the gate
        and ARC's scaler. A change of the gate's value may cut the long poll in flight."""
        listener = self.ctx.listener
        before = listener.gate.value
        carry_out(
            output,
            Effects(
                self.subscribers,
                gate=listener.gate,
                scaler=listener.scaler_controls,
                observers=(self.trouble,),
            ),
        )
        if listener.gate.value != before:
            listener.capacity_changed()

    def set_capacity(self, capacity: int) -> None:
        """Publish ``capacity`` outside a step (a fault: a dead process advertises 0)."""
        self._carry(Output(capacity))


class CapacityAware(Strategy):
    name = CAPACITY_AWARE
    # The product's install puts runner and workflow pods on the priority ladder
    # (docs/design.md#priority-ladder).
    runner_priority_class = "arc-runner"
    workflow_priority_class = "arc-workflow"

    def __init__(
        self,
        settings: CapacityAwareSettings,
        *,
        use_fit: bool = True,
        fit_refresh: float = 10.0,
        per_scale_set: Mapping[str, CapacityAwareSettings] | None = None,
    ) -> None:
        self.settings = settings
        #: A scale set's own block (scenario.capacity_aware_for); others use ``settings``.
        self.per_scale_set = dict(per_scale_set or {})
        self.use_fit = use_fit
        self.fit_refresh = fit_refresh
        self.drivers: list[CapacityAwareDriver] = []
        #: The world's shared metric store (simulator/driver/fleet_store.py), built for the
        #: first scale set with ``fleetView`` on.
        self.fleet_store: FleetStore | None = None

    def attach(self, ctx: ScaleSetContext) -> None:
        settings = self.per_scale_set.get(ctx.spec.name, self.settings)
        if settings.fleet_view.enabled and self.fleet_store is None:
            self.fleet_store = FleetStore(ctx.loop)
        gate = ctx.listener.gate
        gate.cut_rule = PollCut(
            settings.cut_poll_on_drop,
            settings.cut_poll_on_rise,
            settings.cut_poll_debounce,
            settings.cut_poll_when_full,
        )
        gate.advertise(0)  # nothing is confirmed before the first step
        driver = CapacityAwareDriver(
            ctx,
            settings,
            use_fit=self.use_fit,
            fit_refresh=self.fit_refresh,
            fleet_store=self.fleet_store,
        )
        self.drivers.append(driver)
        ctx.loop.call_soon(driver.start)

    def listener_writes(self) -> int:
        return sum(d.writer.writes for d in self.drivers)

    def stats(self) -> dict[str, int]:
        return {
            "placeholder_writes": sum(d.writer.writes for d in self.drivers),
            "reconcile_steps": sum(d.steps for d in self.drivers),
            "reconcile_errors": sum(d.step_errors for d in self.drivers),
        }
