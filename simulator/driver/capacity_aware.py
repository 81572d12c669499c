"""The capacity-aware strategy in the simulated world: the production reconciler, stepped in
virtual time (see simulator/scenarios/strategies.py for the three strategies side by side).

- :class:`CapacityAware`: the strategy; one :class:`CapacityAwareDriver` per scale set.
- :class:`CapacityAwareDriver`: builds snapshots over :class:`~simulator.driver.store_view.
  StoreCacheView`, steps the :class:`~reconciler.reconciler.Reconciler` on the production
  :class:`~reconciler.loop.Schedule`, feeds demand (HUD polls, statistics from the listener's
  messages and, while blind, its session refreshes), runs the fast drop path, and exposes
  public fault hooks (:class:`DriverHooks`).
- :class:`StepLog`: one ``reconcile_step`` event per step (what the breakdown tool reads).
"""

from __future__ import annotations

import logging
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from listener.loop import CapacityGate
from providers.demand.combine import Combine, combine
from providers.demand.statistics import StatisticsDemand
from providers.kubernetes.placeholders import PlaceholderPodBuilder
from providers.kubernetes.placement import PlacementBounds
from providers.kubernetes.translate import ScaleSetTarget, SnapshotMemo, build_snapshot
from reconciler.capacity import fail_closed_capacity
from reconciler.fast_drop import DropGuard
from reconciler.loop import Schedule
from reconciler.reconciler import Reconciler
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand, FitEstimate, LaunchFacts
from reconciler.subscribers import PlaceholderSubscriber
from simulator.driver.store_view import StoreCacheView, StorePlaceholderWriter
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import Timer
from simulator.scenarios.strategies import CAPACITY_AWARE, ScaleSetContext, Strategy
from simulator.workload.hud import HudUnavailable
from simulator.workload.listener import ListenerModel
from state_machine.states import PairState

log = logging.getLogger(__name__)


class _GateSink:
    """CapacitySink: the reconciler's capacity into the listener's gate, with a cut check."""

    def __init__(self, gate: CapacityGate, listener: ListenerModel) -> None:
        self.gate = gate
        self.listener = listener

    def set_max_runners(self, capacity: int) -> None:
        before = self.gate.value
        self.gate.set_max_runners(capacity)
        if self.gate.value != before:
            self.listener.capacity_changed()


def _instance_id(rng: random.Random) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(rng.choice(alphabet) for _ in range(5))


@dataclass
class DriverHooks:
    """Fault hooks of a :class:`CapacityAwareDriver` (used by :mod:`simulator.faults`).

    ``source`` replaces the cache view each step reads (a stale cache); ``step`` runs each
    step (it must call the function it gets; a crash fault raises through it). None: no
    fault. HUD faults use the driver's ``hud_filter``."""

    source: Callable[[StoreCacheView], Any] | None = None
    step: Callable[[Callable[[], None]], None] | None = None


class CapacityAwareDriver:
    """Runs the production reconciler for one scale set in virtual time."""

    def __init__(
        self,
        ctx: ScaleSetContext,
        settings: CapacityAwareSettings,
        *,
        use_fit: bool,
        fit_refresh: float,
        demand_source: str = "both",
    ) -> None:
        self.ctx = ctx
        self.demand_source = demand_source
        self.settings = settings
        self.use_fit = use_fit
        self.fit_refresh = fit_refresh
        spec = ctx.spec
        self.namespace = settings.placeholder_namespace or spec.namespace
        self.config = settings.reconciler_config(spec.name)
        self.instance = _instance_id(ctx.rng)
        ers = ctx.arc.ers()
        self.builder = PlaceholderPodBuilder(
            settings,
            ers,
            instance=self.instance,
            namespace=self.namespace,
            owner=ers if self.namespace == spec.namespace else None,
            workflow_pod_spec=spec.workflow_pod_spec(),
        )
        self.writer = StorePlaceholderWriter(ctx.store, self.builder)
        self.target = ScaleSetTarget(
            ers_name=spec.name,
            runner_namespace=spec.namespace,
            placeholder_namespace=self.namespace,
            max_runners=spec.max_runners,
            min_runners=spec.min_runners,
            ars_name=spec.name,
        )
        self.source: StoreCacheView | None = None
        self.sink = _GateSink(ctx.listener.gate, ctx.listener)
        self.reconciler = Reconciler(
            self.config,
            clock=ctx.loop,
            subscribers=[
                PlaceholderSubscriber(
                    self.writer, namespace=self.namespace, clock=ctx.loop, config=self.config
                )
            ],
            sink=self.sink,
            instance=self.instance,
        )
        self.drop_guard = DropGuard(self.reconciler, self._drop_snapshot)
        self.schedule = Schedule(
            interval=settings.recalculate_interval,
            jitter=settings.recalculate_jitter,
            debounce=settings.watch_debounce,
            rng=random.Random(ctx.rng.random()),
        )
        self.hud_demand = Demand(queued_jobs=None, error="HUD not polled yet", source="hud")
        self.statistics = StatisticsDemand(on_change=self.lead)
        #: Fault injection: rewrites each HUD answer (an outage, a slow or absurd feed).
        self.hud_filter: Callable[[Demand], Demand] | None = None
        self._timer: Timer | None = None
        self._placement: PlacementBounds | None = None
        #: Pod, node and runner parses reused across this driver's snapshots (same facts).
        self._memo = SnapshotMemo()
        self.steps = 0
        self.step_errors = 0
        self.step_log = StepLog(ctx.log, ctx.spec.name)
        self.hooks = DriverHooks()
        self.paused = False

    def start(self) -> None:
        ctx = self.ctx
        self.source = StoreCacheView(
            ctx.store, ctx.router, self.target, self.trigger, on_lost=self._lost, on_rise=self.lead
        )
        if self.demand_source in ("statistics", "both"):
            ctx.listener.statistics_observers.append(
                lambda stats: self.statistics.observe(stats["totalAvailableJobs"])
            )
            if self.settings.demand.statistics_refresh > 0:
                self._refresh_statistics()
        if self.demand_source in ("hud", "both"):
            self._poll_hud()
        self._arm()

    @property
    def demand(self) -> Demand:
        """The demand decide sees: the configured source(s); with both, the larger known
        value wins (each undercounts in its own way: HUD lags by its poll, statistics arrive
        only with messages); unknown only when every source is."""
        if self.demand_source == "hud":
            return self.hud_demand
        if self.demand_source == "statistics":
            return self.statistics.current
        return combine([self.statistics.current, self.hud_demand], Combine.MAX)

    # --- triggers -----------------------------------------------------------------------

    def trigger(self) -> None:
        self.schedule.trigger(self.ctx.loop.now())
        self._arm()

    def lead(self) -> None:
        """A leading trigger (reconciler/loop.py), as in the production listener: a demand
        source's answer changed, or a placeholder turned Running (providers/kubernetes/rises.py)."""
        self.schedule.trigger(self.ctx.loop.now(), leading=True)
        self._arm()

    def pause(self) -> None:
        """Stop stepping (a crashed listener process) until :meth:`resume`."""
        self.paused = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def resume(self) -> None:
        """Allow steps again; the next :meth:`trigger` (or HUD change) schedules one."""
        self.paused = False

    def _lost(self) -> None:
        """A placeholder stopped backing capacity: check the ledger now, not after the
        debounce (coalesced: one check per instant, after the world's own handlers ran)."""
        if self.drop_guard.poke():
            self.ctx.loop.call_later(0.0, self.drop_guard.check)

    def _failing_closed(self) -> bool:
        """The production listener's fail-closed rule (listener/capacity_aware.py): a cache
        whose watches have been down for more than one interval may hide a lost placeholder."""
        stale_for = getattr(self._source(), "stale_for", None)
        return callable(stale_for) and stale_for() > self.settings.recalculate_interval

    def _drop_snapshot(self) -> ClusterSnapshot | None:
        """What the drop check reads: no fit (cheap); nothing while failing closed (0 is
        advertised already), as in the production listener."""
        if self._failing_closed():
            return None
        return build_snapshot(
            self._source(),
            self.target,
            now=self.ctx.loop.now(),
            demand=self.demand,
            memo=self._memo,
        )

    def _arm(self) -> None:
        if self.paused:
            return
        due = self.schedule.due_at()
        timer = self._timer
        if timer is not None and timer.active:
            if timer.at <= due:
                return
            timer.cancel()
        self._timer = self.ctx.loop.call_at(due, self._step)

    def _refresh_statistics(self) -> None:
        """Every ``demand.statisticsRefresh``: read statistics by a session refresh when no
        message can bring them (the listener's StatisticsRefresher, same rule)."""
        every = self.settings.demand.statistics_refresh
        if not self.paused:
            self.ctx.listener.refresh_statistics(every)
        self.ctx.loop.call_later(every, self._refresh_statistics)

    def _poll_hud(self) -> None:
        ctx = self.ctx
        try:
            queued = ctx.hud.queued_jobs(ctx.spec.labels)
            demand = Demand(queued_jobs=queued, source="hud")
        except HudUnavailable as exc:
            demand = Demand(queued_jobs=None, error=str(exc), source="hud")
        if self.hud_filter is not None:
            demand = self.hud_filter(demand)
        if demand != self.hud_demand:
            self.hud_demand = demand
            self.lead()
        ctx.loop.call_later(self.settings.hud.poll_interval, self._poll_hud)

    # --- one step ------------------------------------------------------------------------

    def _source(self) -> StoreCacheView:
        if self.source is None:
            raise RuntimeError("CapacityAwareDriver stepped before start()")
        if self.hooks.source is not None:
            return self.hooks.source(self.source)  # type: ignore[no-any-return]
        return self.source

    def _bounds(self, now: float) -> tuple[FitEstimate | None, LaunchFacts | None]:
        if not self.use_fit:
            return None, None
        if self._placement is None:
            self._placement = PlacementBounds(
                self._source(), self.target, self.builder, refresh=self.fit_refresh
            )
        return self._placement(now)

    def _step(self) -> None:
        if self.hooks.step is not None:
            self.hooks.step(self._run_step)
        else:
            self._run_step()

    def _run_step(self) -> None:
        self._timer = None
        now = self.ctx.loop.now()
        source = self._source()
        fit, launches = self._bounds(now)
        snapshot = build_snapshot(
            source,
            self.target,
            now=now,
            demand=self.demand,
            fit=fit,
            launches=launches,
            memo=self._memo,
        )
        # Failing closed: advertise only what fail_closed_capacity allows, take no decisions.
        if self._failing_closed():
            self.sink.set_max_runners(fail_closed_capacity(snapshot))
            self.step_log.emit(self, snapshot, self.step_log.in_flight(self))
            self.steps += 1
            self.schedule.ran(self.ctx.loop.now())
            self._arm()
            return
        in_flight_before = self.step_log.in_flight(self)
        result = None
        try:
            result = self.reconciler.step(snapshot)
        except Exception:  # the production loop logs and retries next tick; so do we
            self.step_errors += 1
            log.exception("reconcile step failed for %s", self.ctx.spec.name)
        self.step_log.emit(self, snapshot, in_flight_before, result)
        self.steps += 1
        self.schedule.ran(self.ctx.loop.now())
        self._arm()


# --- measurement only: the reconcile_step event (issue 13, bench/wait_breakdown.py) ---------
#
# Kept apart from the driver so the reconciler side of the file can change independently. It
# reads the reconciler's store and the snapshot after a step; it decides nothing.


def launch_limit(
    *,
    queued_pairs: int,
    in_flight_before: int,
    fit_new_pairs: int | None,
    max_in_flight: int | None,
    max_per_step: int | None,
    wanted: int,
    headroom: int,
) -> str:
    """Why pairs the reconciler wants are not requested, as the current ``decide.launch`` rule
    reads (an inference until the reconciler reports its own limit):

    - ``"nodepool"``: pairs wait in QUEUED and the fit estimate (NodePool limits + free room)
      allowed fewer requests than the ramp did;
    - ``"ramp"``: pairs wait in QUEUED because of the in-flight / per-step caps;
    - ``"max_runners"``: nothing waits in QUEUED but demand + proactive capacity exceeds the
      maxRunners headroom, so fewer pairs are wanted than the queue asks for;
    - ``"none"``: nothing holds launches back.
    """
    if queued_pairs > 0:
        ramp = min(
            max_per_step if max_per_step is not None else queued_pairs,
            max(0, max_in_flight - in_flight_before) if max_in_flight is not None else queued_pairs,
        )
        if fit_new_pairs is not None and fit_new_pairs < ramp:
            return "nodepool"
        return "ramp"
    if wanted > headroom:
        return "max_runners"
    return "none"


class StepLog:
    """Emits ``reconcile_step`` after every step, skipping steps that changed none of its
    fields (the state is piecewise constant between the events that are written).

    Fields: ``desired`` (live pairs after the step: QUEUED + REQUESTED + PARTIAL + READY),
    ``queued_pairs``, ``in_flight`` (REQUESTED + PARTIAL), ``ready``, ``advertised`` (the value
    the step left in the capacity gate), ``demand`` (queued jobs the driver has seen; null when
    the HUD failed), ``launch_limited_by`` (the step result's own answer when it names a limit:
    "ramp", "nodepool", "in-flight cap", "per-step cap"; else :func:`launch_limit`) and
    ``headroom`` (maxRunners - live runners, the clamp on what the reconciler may want)."""

    def __init__(self, log: EventLog, scale_set: str) -> None:
        self.log = log
        self.scale_set = scale_set
        self._last: tuple[Any, ...] | None = None

    @staticmethod
    def in_flight(driver: CapacityAwareDriver) -> int:
        counts = driver.reconciler.store.counts()
        return counts.get(PairState.REQUESTED, 0) + counts.get(PairState.PARTIAL, 0)

    def emit(
        self,
        driver: CapacityAwareDriver,
        snapshot: Any,
        in_flight_before: int,
        result: Any = None,
    ) -> None:
        """``result``: the step's StepResult; its ``launch_limited_by`` (the reconciler's own
        answer) wins over the inference of :func:`launch_limit` when it names a limit."""
        counts = driver.reconciler.store.counts()
        queued = counts.get(PairState.QUEUED, 0)
        in_flight = counts.get(PairState.REQUESTED, 0) + counts.get(PairState.PARTIAL, 0)
        ready = counts.get(PairState.READY, 0)
        demand = driver.demand.queued_jobs
        config = driver.config
        live_runners = sum(1 for p in snapshot.runner_pods if p.alive)
        headroom = max(0, snapshot.max_runners - live_runners)
        fit = snapshot.fit
        limited_by = launch_limit(
            queued_pairs=queued,
            in_flight_before=in_flight_before,
            fit_new_pairs=fit.new_pairs if fit is not None else None,
            max_in_flight=getattr(config, "max_pairs_in_flight", None),
            max_per_step=getattr(config, "max_requests_per_step", None),
            wanted=getattr(config, "proactive_capacity", 0)
            + max(0, demand if demand is not None else 0),
            headroom=headroom,
        )
        reported = getattr(result, "launch_limited_by", None)
        if reported is not None:
            limited_by = str(reported)
        fields = (
            queued + in_flight + ready,
            queued,
            in_flight,
            ready,
            driver.ctx.listener.gate.value,
            demand,
            limited_by,
            headroom,
        )
        if fields == self._last:
            return
        self._last = fields
        self.log.emit(
            "reconcile_step",
            scale_set=self.scale_set,
            desired=fields[0],
            queued_pairs=queued,
            in_flight=in_flight,
            ready=ready,
            advertised=fields[4],
            demand=demand,
            launch_limited_by=limited_by,
            headroom=headroom,
        )


class CapacityAware(Strategy):
    name = CAPACITY_AWARE
    # The product's install puts runner and workflow pods on the priority ladder (DESIGN §5).
    runner_priority_class = "arc-runner"
    workflow_priority_class = "arc-workflow"

    def __init__(
        self,
        settings: CapacityAwareSettings,
        *,
        use_fit: bool = True,
        fit_refresh: float = 10.0,
        demand_source: str = "both",
    ) -> None:
        self.settings = settings
        self.use_fit = use_fit
        self.fit_refresh = fit_refresh
        self.demand_source = demand_source
        self.drivers: list[CapacityAwareDriver] = []

    def attach(self, ctx: ScaleSetContext) -> None:
        gate = ctx.listener.gate
        gate.cut_on_drop = self.settings.cut_poll_on_drop
        gate.cut_on_rise = self.settings.cut_poll_on_rise
        gate.debounce = self.settings.cut_poll_debounce
        gate.set_max_runners(0)  # nothing is confirmed before the first step
        driver = CapacityAwareDriver(
            ctx,
            self.settings,
            use_fit=self.use_fit,
            fit_refresh=self.fit_refresh,
            demand_source=self.demand_source,
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
