"""One simulated world: clusters + ARC + the Actions service + HUD + one strategy, one seed.

Assembly, in order (the order is part of determinism):

1. One :class:`EventLoop` and one :class:`EventLog` (tagged with the strategy).
2. Per cluster: an :class:`ObjectStore`, the :class:`PodRouter` (subscribed first, so
   ``pod_created`` precedes the cluster's ``pod_bound``), the :class:`Cluster` (scheduler,
   kubelet, Karpenter), started.
3. The Actions service, the HUD, the accounting.
4. Per scale set: the ARC objects and controllers, the listener, then the strategy attaches
   (warm pool, or the capacity-aware reconciler), then the listener starts (first poll).
   Scheduled ``maxRunners`` changes (a drain) are put on the loop.
5. Job arrivals: the merged list from the scenario's streams, fed in queue order.

Randomness: every component gets its own ``random.Random`` seeded from
``"<seed>/<component>"`` (string seeds hash with SHA-512, independent of PYTHONHASHSEED), and
the job list and cluster latencies do not depend on the strategy, so every strategy sees the
same jobs. Inside a component each kind of draw has a stream of its own (common random
numbers, :mod:`simulator.engine.streams`): the n-th NodeClaim of a pool boots, and the n-th
runner pod starts, after the same draw in every strategy. Nothing reads the wall clock.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from listener.arc.version import ArcVersion
from simulator.cluster import Cluster
from simulator.driver.capacity_aware import CapacityAware, CapacityAwareDriver
from simulator.driver.fleet_store import FleetStore
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import ObjectStore
from simulator.scenarios.blocks import ScaleSetModel
from simulator.scenarios.placeholder_pdb import placeholder_pdb
from simulator.scenarios.scenario import Scenario
from simulator.scenarios.strategies import (
    BASELINE,
    CAPACITY_AWARE,
    OVERPROVISION,
    STRATEGIES,
    Baseline,
    Overprovision,
    ScaleSetContext,
    Strategy,
)
from simulator.workload.actions import ActionsService
from simulator.workload.arc import ArcScaleSet
from simulator.workload.arc_spec import ArcTimings, ContainerMode, ScaleSetSpec
from simulator.workload.hook_template import install_hook_template
from simulator.workload.hud import Hud, Outage
from simulator.workload.jobs import (
    DurationDist,
    JobSpec,
    RateStep,
    burst,
    load_trace,
    merge,
    poisson_stream,
)
from simulator.workload.listener import ListenerModel, ListenerTimings
from simulator.workload.metrics import Accounting
from simulator.workload.pods import PodRouter


class UnknownStrategy(ValueError):
    pass


def make_strategy(name: str, scenario: Scenario) -> Strategy:
    s = scenario.strategies
    if name == BASELINE:
        return Baseline()
    if name == OVERPROVISION:
        return Overprovision(scenario.warm_slots, recreate_delay=s.overprovision.recreate_delay)
    if name == CAPACITY_AWARE:
        return CapacityAware(
            s.capacity_aware,
            use_fit=s.capacity_aware_sim.fit_estimate,
            fit_refresh=s.capacity_aware_sim.fit_refresh,
            per_scale_set={
                ss.name: scenario.capacity_aware_for(ss.name) for ss in scenario.scale_sets
            },
        )
    raise UnknownStrategy(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")


def build_jobs(scenario: Scenario, seed: int) -> list[JobSpec]:
    """The scenario's jobs in queue order (depends on the seed only, not on the strategy)."""
    streams: list[list[JobSpec]] = []
    for i, stream in enumerate(scenario.jobs):
        rng = random.Random(f"{seed}/jobs/{i}")
        labels = tuple(stream.labels)
        until = min(
            stream.until if stream.until is not None else scenario.duration, scenario.duration
        )
        dist = None
        if stream.duration is not None:
            d = stream.duration
            dist = DurationDist(d.median, d.sigma, d.min, d.max)
        jobs: list[JobSpec] = []
        if dist is not None:
            schedule = [RateStep(s.at, s.per_hour) for s in stream.schedule]
            if stream.per_hour is not None:
                schedule = [RateStep(0.0, stream.per_hour)]
            if schedule:
                jobs += poisson_stream(
                    rng,
                    schedule,
                    until=until,
                    labels=labels,
                    duration=dist,
                    name=stream.name,
                    repository=stream.repository,
                )
            for b in stream.bursts:
                jobs += burst(
                    rng,
                    at=b.at,
                    count=b.count,
                    over=b.over,
                    labels=labels,
                    duration=dist,
                    name=stream.name,
                    repository=stream.repository,
                )
        if stream.trace is not None:
            jobs += [
                j for j in load_trace(Path(stream.trace), default_labels=labels) if j.at < until
            ]
        streams.append(sorted(jobs, key=lambda j: j.at))
    return merge(streams)


def scale_set_spec(model: ScaleSetModel, strategy: Strategy) -> ScaleSetSpec:
    return ScaleSetSpec(
        name=model.name,
        namespace=model.namespace,
        labels=tuple(model.labels),
        min_runners=model.min_runners,
        max_runners=model.max_runners,
        container_mode=ContainerMode(model.container_mode),
        runner_requests=dict(model.runner.requests),
        runner_placement=model.runner.placement(),
        workflow_requests=dict(model.workflow.requests),
        workflow_placement=model.workflow.placement(),
        runner_priority_class=strategy.runner_priority_class,
        workflow_priority_class=strategy.workflow_priority_class,
    )


@dataclass
class ClusterHandle:
    name: str
    store: ObjectStore
    router: PodRouter
    cluster: Cluster


@dataclass
class ScaleSetHandle:
    spec: ScaleSetSpec
    arc: ArcScaleSet
    listener: ListenerModel
    cluster: str


class World:
    def __init__(
        self,
        scenario: Scenario,
        strategy: str,
        *,
        seed: int | None = None,
        keep_log: bool = True,
        scheduled_arrivals: bool = True,
    ) -> None:
        """``keep_log=False``: the event log only counts (results do not read its lines).
        ``scheduled_arrivals=False``: the scenario's jobs are built (``self.jobs``) but not
        queued; the caller queues jobs with :meth:`submit` when its own condition holds (a
        run that mirrors a real-control-plane scenario queues once pairs are confirmed)."""
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.strategy_name = strategy
        self.loop = loop = EventLoop()
        self.log = log = EventLog(strategy, loop, loop.start, keep=keep_log)
        self.strategy = make_strategy(strategy, scenario)
        log.emit(
            "run_started",
            scenario=scenario.name,
            seed=self.seed,
            duration=scenario.duration,
            stuck_after=scenario.stuck_after,
        )
        # 2. clusters
        self.service = ActionsService(loop, log, broker=scenario.actions.broker)
        self.accounting = Accounting(loop, self.service, stuck_after=scenario.stuck_after)
        self.clusters: dict[str, ClusterHandle] = {}
        for i, model in enumerate(scenario.clusters):
            store = ObjectStore(loop.now, uid_prefix=f"{i + 1:08x}")
            router = PodRouter(store, log, model.name)
            router.on_added(partial(self.accounting.pod_added, model.name))
            router.on_change(partial(self.accounting.pod_changed, model.name))
            self.accounting.watch_machines(model.name, store)  # before start: static nodes
            cluster = Cluster(
                loop, store, model.spec, rng=self._rng(f"cluster/{model.name}"), log=log
            )
            cluster.start()
            self.accounting.watch_cluster(model.name, partial(store.count, "Node"))
            self.clusters[model.name] = ClusterHandle(model.name, store, router, cluster)
        # 3. service side
        self.hud = Hud(
            loop, self.service, log, [Outage(o.start, o.end) for o in scenario.hud.outages]
        )
        a = scenario.arc
        arc_timings = ArcTimings(
            controller_delay=a.controller_delay,
            runner_startup=a.runner_startup,
            hook_delay=a.hook_delay,
            prepare_job_timeout=a.prepare_job_timeout,
            runner_exit=a.runner_exit,
        )
        lt = scenario.listener
        listener_timings = ListenerTimings(
            long_poll=lt.long_poll,
            handling_latency=lt.handling_latency,
            restart_delay=lt.restart_delay,
        )
        # 4. scale sets
        self.scale_sets: dict[str, ScaleSetHandle] = {}
        for ss_model in scenario.scale_sets:
            handle = self.clusters[ss_model.cluster]
            spec = scale_set_spec(ss_model, self.strategy)
            ss = self.service.add_scale_set(spec.name, spec.labels, cluster=ss_model.cluster)
            arc = ArcScaleSet(
                loop=loop,
                store=handle.store,
                router=handle.router,
                cluster=handle.cluster,
                service=self.service,
                scale_set=ss,
                spec=spec,
                timings=arc_timings,
                rng=self._rng(f"arc/{spec.name}"),
                log=log,
                version=ArcVersion(a.version),
            )
            arc.install()
            install_hook_template(
                handle.store,
                scale_set=spec.name,
                namespace=spec.namespace,
                workflow_requests=spec.workflow_requests,
                pod_spec=spec.workflow_pod_spec(),
            )
            listener = ListenerModel(
                loop=loop,
                service=self.service,
                scale_set=ss,
                store=handle.store,
                namespace=spec.namespace,
                ers_name=spec.name,
                min_runners=spec.min_runners,
                max_runners=spec.max_runners,
                timings=listener_timings,
                arc_version=None if a.listener_sets_phase else ArcVersion.V0_14,
            )
            ctx = ScaleSetContext(
                loop=loop,
                store=handle.store,
                router=handle.router,
                arc=arc,
                listener=listener,
                spec=spec,
                hud=self.hud,
                log=log,
                rng=self._rng(f"strategy/{strategy}/{spec.name}"),
                cluster=ss_model.cluster,
            )
            self.strategy.attach(ctx)
            strategies = scenario.strategies
            if strategy == CAPACITY_AWARE and strategies.capacity_aware_sim.placeholder_pdb:
                # What a user applies by hand: config/placeholder-pdb.yaml (opt-in).
                namespace = strategies.capacity_aware.placeholder_namespace or spec.namespace
                handle.store.create(placeholder_pdb(namespace, spec.name))
            loop.call_soon(listener.start)
            for change in ss_model.changes:
                loop.call_at(
                    loop.start + change.at, self._change_max_runners, spec.name, change.max_runners
                )
            self.scale_sets[spec.name] = ScaleSetHandle(spec, arc, listener, ss_model.cluster)
        # 5. jobs
        self.jobs = build_jobs(scenario, self.seed)
        self._next_job = 0
        if self.jobs and scheduled_arrivals:
            loop.call_at(loop.start + self.jobs[0].at, self._arrive)
        loop.call_soon(self._sample)
        self.end = loop.start + scenario.duration
        self._results: dict[str, Any] | None = None

    def _rng(self, component: str) -> random.Random:
        return random.Random(f"{self.seed}/{component}")

    def _arrive(self) -> None:
        self.service.submit(self.jobs[self._next_job])
        self._next_job += 1
        if self._next_job < len(self.jobs):
            self.loop.call_at(self.loop.start + self.jobs[self._next_job].at, self._arrive)

    def submit(self, spec: JobSpec) -> None:
        """Queue one job now (its ``at`` is ignored)."""
        self.service.submit(spec)

    def _sample(self) -> None:
        self.accounting.sample()
        self.loop.call_later(self.scenario.sample_interval, self._sample)

    def _change_max_runners(self, name: str, max_runners: int) -> None:
        handle = self.scale_sets[name]
        self.log.emit("max_runners_changed", scale_set=name, value=max_runners)
        handle.arc.set_max_runners(max_runners)
        handle.listener.set_max_runners(max_runners)

    # --- fault surface (simulator.faults) -----------------------------------------

    def capacity_drivers(self) -> list[CapacityAwareDriver]:
        """The capacity-aware drivers, one per scale set ([] under other strategies)."""
        if isinstance(self.strategy, CapacityAware):
            return list(self.strategy.drivers)
        return []

    def fleet_store(self) -> FleetStore | None:
        """The fleet's shared metric store: None unless a capacity-aware scale set has
        ``fleetView`` on."""
        if isinstance(self.strategy, CapacityAware):
            return self.strategy.fleet_store
        return None

    def cluster_of(self, scale_set: str) -> ClusterHandle:
        """The cluster (store, router, simulated cluster) a scale set runs in."""
        return self.clusters[self.scale_sets[scale_set].cluster]

    # --- running ------------------------------------------------------------------------------

    def run(
        self, progress: Callable[[float], None] | None = None, chunks: int = 200
    ) -> dict[str, Any]:
        """Run to the end of the scenario; ``progress(fraction)`` after each chunk."""
        if self._results is not None:
            return self._results
        start, duration = self.loop.start, self.scenario.duration
        for i in range(1, chunks + 1):
            self.loop.run_until(start + duration * i / chunks)
            if progress is not None:
                progress(i / chunks)
        self.loop.run_until(self.end)
        end = self.accounting.finish()
        self.log.emit("run_ended", jobs=len(self.service.jobs))
        self._results = self._collect(end)
        return self._results

    def _collect(self, end: float) -> dict[str, Any]:
        res = self.accounting.results(end)
        stats = [h.cluster.stats() for h in self.clusters.values()]
        writes: dict[str, int] = {}
        for h in self.clusters.values():
            for verb, n in h.store.writes.items():
                writes[verb] = writes.get(verb, 0) + n
        contract = {
            "jobs_total": res.pop("jobs_total"),
            "jobs_completed": res.pop("jobs_completed"),
            "jobs_failed": res.pop("jobs_failed"),
            "jobs_stuck": res.pop("jobs_stuck"),
            "queue_to_start_seconds": res.pop("queue_to_start_seconds"),
            "over_advertised_slot_seconds": res.pop("over_advertised_slot_seconds"),
            "idle_reserved_cpu_hours": res.pop("idle_reserved_cpu_hours"),
            "idle_reserved_gpu_hours": res.pop("idle_reserved_gpu_hours"),
            "nodes_launched": sum(s.nodes_launched for s in stats),
            "placeholder_pods_created": res.pop("placeholder_pods_created"),
            "api_writes": sum(writes.values()),
        }
        per_set = res.pop("scale_sets")
        extra = {
            **res,
            "api_writes_by_verb": writes,
            "nodeclaims_failed": sum(s.nodeclaims_failed for s in stats),
            "nodes_consolidated": sum(s.nodes_consolidated for s in stats),
            "preemptions": sum(s.preemptions for s in stats),
            "node_hours": round(sum(s.node_seconds for s in stats) / 3600.0, 2),
            "node_cost_usd": round(sum(s.cost for s in stats), 2),
            # The listener process's own writes: ARC's scaler patches, plus placeholder pods
            # under capacity-aware (a warm pool is written by its Deployment controller).
            "listener_api_writes": sum(h.listener.writer.patches for h in self.scale_sets.values())
            + self.strategy.listener_writes(),
            "listener_polls": sum(h.listener.polls for h in self.scale_sets.values()),
            "listener_poll_cuts": sum(h.listener.cuts for h in self.scale_sets.values()),
            "runners_created": sum(h.arc.runners_created for h in self.scale_sets.values()),
            **self.strategy.stats(),
            "scale_sets": per_set,
        }
        return {**contract, **extra}
