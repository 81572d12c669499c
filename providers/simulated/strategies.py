"""The three ways a scale set can advertise capacity, on the same simulated world.

- ``baseline``: stock ARC. ``X-ScaleSetMaxCapacity`` = the static ``maxRunners``; no
  placeholders; runner and workflow pods carry no PriorityClass (priority 0), as in a stock
  install. Nodes appear only after jobs were assigned and their pods went Pending.
- ``overprovision``: the cluster-overprovisioner pattern. A fixed number of *warm slots*
  per scale set, each made of two pause pods at priority ``overprovisioning`` (-1, below every
  real pod): one sized and placed like the runner pod, one sized and placed like the workflow
  pod. A Deployment keeps the count: a pod that is preempted, evicted or ends is replaced
  after ``recreate_delay``. Capacity is still the static ``maxRunners`` (the pool only makes
  nodes exist before they are needed).
- ``capacity-aware``: this project. The production :class:`reconciler.reconciler.Reconciler`
  with its :class:`reconciler.subscribers.PlaceholderSubscriber`, fed by
  :func:`providers.kubernetes.translate.build_snapshot` (and ``fit_estimate``) over
  :class:`StoreCacheView` (the store seen through the production cache's selectors),
  creating pods built by :class:`providers.kubernetes.placeholders.PlaceholderPodBuilder`
  through :class:`StorePlaceholderWriter`, stepped on the schedule of
  :class:`reconciler.loop.Schedule` (periodic ``recalculateInterval`` with jitter, plus
  debounced triggers on relevant changes). Its capacity goes to the listener's
  :class:`listener.loop.CapacityGate`; demand comes from the HUD every ``hud.pollInterval``
  (an outage gives ``Demand(None, error)``: the reconciler falls back). Runner and workflow
  pods use the product's PriorityClasses (``arc-runner`` / ``arc-workflow``, DESIGN §5).
"""

from __future__ import annotations

import contextlib
import logging
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from listener.loop import CapacityGate
from providers.demand.combine import Combine, combine
from providers.demand.statistics import StatisticsDemand
from providers.kubernetes import labels as L
from providers.kubernetes.packing import PlacementBounds
from providers.kubernetes.placeholders import PlaceholderPodBuilder, format_expiry
from providers.kubernetes.translate import ScaleSetTarget, SnapshotMemo, build_snapshot
from providers.simulated.engine import EventLoop, Timer
from providers.simulated.eventlog import EventLog
from providers.simulated.store import AlreadyExists, Conflict, NotFound, Obj, ObjectStore
from providers.simulated.workload.arc import ArcScaleSet, ScaleSetSpec
from providers.simulated.workload.hud import Hud, HudUnavailable
from providers.simulated.workload.listener import ListenerModel
from providers.simulated.workload.pods import (
    LABEL_SIM_ROLE,
    LABEL_SIM_SCALE_SET,
    ROLE_PH_RUNNER,
    ROLE_PH_WORKFLOW,
    PodRouter,
)
from reconciler.capacity import fail_closed_capacity
from reconciler.fast_drop import DropGuard
from reconciler.loop import Schedule
from reconciler.ports import PairSpec, PodRef
from reconciler.reconciler import Reconciler
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand, FitEstimate, LaunchFacts
from reconciler.subscribers import PlaceholderSubscriber
from state_machine.states import PairState

log = logging.getLogger(__name__)

BASELINE = "baseline"
OVERPROVISION = "overprovision"
CAPACITY_AWARE = "capacity-aware"
STRATEGIES = (BASELINE, OVERPROVISION, CAPACITY_AWARE)

OVERPROVISIONING_CLASS = "overprovisioning"
OVERPROVISIONING_PRIORITY = -1


@dataclass
class ScaleSetContext:
    """Everything a strategy may attach to, for one scale set."""

    loop: EventLoop
    store: ObjectStore
    router: PodRouter
    arc: ArcScaleSet
    listener: ListenerModel
    spec: ScaleSetSpec
    hud: Hud
    log: EventLog
    rng: random.Random


class Strategy:
    name = ""
    #: PriorityClasses of runner and workflow pods under this strategy (None: no class).
    runner_priority_class: str | None = None
    workflow_priority_class: str | None = None

    def attach(self, ctx: ScaleSetContext) -> None:
        """Wire this strategy into one scale set before the world runs."""

    def stats(self) -> dict[str, int]:
        """Extra counters for results.json."""
        return {}

    def listener_writes(self) -> int:
        """Kubernetes API writes the listener process makes besides ARC's scaler patches."""
        return 0


class Baseline(Strategy):
    name = BASELINE


# --- overprovision ---------------------------------------------------------------------------


def overprovisioning_priority_class() -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": OVERPROVISIONING_CLASS},
        "value": OVERPROVISIONING_PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "cluster-overprovisioner pause pods: evicted by any real pod",
    }


class WarmPool:
    """A Deployment-like fixed set of pause pods for one scale set (see module doc)."""

    def __init__(self, ctx: ScaleSetContext, slots: int, *, recreate_delay: float) -> None:
        self.ctx = ctx
        self.slots = slots
        self.recreate_delay = recreate_delay
        self.created = 0
        self._seq = 0
        spec = ctx.spec
        self._halves = (
            ("r", ROLE_PH_RUNNER, dict(spec.runner_requests), dict(spec.runner_placement)),
            ("w", ROLE_PH_WORKFLOW, dict(spec.workflow_requests), dict(spec.workflow_placement)),
        )

    def start(self) -> None:
        for _ in range(self.slots):
            for half in self._halves:
                self._create(half)

    def _create(self, half: tuple[str, str, dict[str, str], dict[str, Any]]) -> None:
        suffix, role, requests, placement = half
        self._seq += 1
        name = f"{self.ctx.spec.name[:40]}-overprov-{self._seq}-{suffix}"
        ns = self.ctx.spec.namespace
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {
                    "app": "overprovisioning",
                    L.LABEL_COMPONENT: L.COMPONENT_PLACEHOLDER,
                    LABEL_SIM_ROLE: role,
                    LABEL_SIM_SCALE_SET: self.ctx.spec.name,
                },
            },
            "spec": {
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": dict(requests), "limits": dict(requests)},
                    }
                ],
                "priorityClassName": OVERPROVISIONING_CLASS,
                "terminationGracePeriodSeconds": 0,
                "restartPolicy": "Always",
                **placement,
            },
        }
        state = {"replaced": False}

        def on_change(event_type: str, obj: Obj) -> None:
            status = obj.get("status") or {}
            gone = (
                event_type == "DELETED"
                or obj["metadata"].get("deletionTimestamp")
                or status.get("phase") in ("Succeeded", "Failed")
                or any(
                    c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                    for c in status.get("conditions") or ()
                )
            )
            if gone and not state["replaced"]:
                # A terminating or disrupted pod no longer counts toward the replicas.
                state["replaced"] = True
                self.ctx.loop.call_later(self.recreate_delay, self._create, half)

        self.ctx.router.watch(ns, name, on_change)
        self.ctx.store.create(pod)
        self.created += 1


class Overprovision(Strategy):
    name = OVERPROVISION

    def __init__(self, slots_for: Callable[[str], int], *, recreate_delay: float = 1.0) -> None:
        self.slots_for = slots_for
        self.recreate_delay = recreate_delay
        self.pools: list[WarmPool] = []

    def attach(self, ctx: ScaleSetContext) -> None:
        if ctx.store.find("PriorityClass", None, OVERPROVISIONING_CLASS) is None:
            ctx.store.create(overprovisioning_priority_class())
        pool = WarmPool(ctx, self.slots_for(ctx.spec.name), recreate_delay=self.recreate_delay)
        self.pools.append(pool)
        ctx.loop.call_soon(pool.start)

    def stats(self) -> dict[str, int]:
        return {"placeholder_writes": sum(p.created for p in self.pools)}


# --- capacity-aware --------------------------------------------------------------------------


class StorePlaceholderWriter:
    """``reconciler.ports.PlaceholderWriter`` over the ObjectStore; counts its API writes.

    Idempotent like the Kubernetes writer: AlreadyExists on create and NotFound on delete are
    success; a pod already gone (or replaced by a different uid) costs no call.
    """

    def __init__(self, store: ObjectStore, builder: PlaceholderPodBuilder) -> None:
        self.store = store
        self.builder = builder
        self.writes = 0
        self.pods_created = 0

    def create_pair(self, spec: PairSpec) -> None:
        for pod in self.builder.build(spec):
            self.writes += 1
            try:
                self.store.create(pod)
                self.pods_created += 1
            except AlreadyExists:
                pass

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        for ref in pods:
            current = self.store.find("Pod", ref.namespace, ref.name)
            if current is None:
                continue
            if ref.uid is not None and current["metadata"]["uid"] != ref.uid:
                continue
            self.writes += 1
            with contextlib.suppress(NotFound, Conflict):
                self.store.delete("Pod", ref.namespace, ref.name, uid=ref.uid)

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        text = format_expiry(expires_at)

        def change(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[L.ANNOTATION_EXPIRES_AT] = text

        for ref in pods:
            self.writes += 1
            with contextlib.suppress(NotFound, Conflict):
                self.store.mutate("Pod", ref.namespace, ref.name, change, uid=ref.uid)


#: What the production cache holds (``providers.kubernetes.cache.default_targets``).
CACHED_KINDS = frozenset(
    {
        "Pod",
        "Node",
        "EphemeralRunnerSet",
        "EphemeralRunner",
        "PriorityClass",
        "AutoscalingRunnerSet",
        "NodePool",
        "NodeClaim",
    }
)
#: Kinds besides pods whose changes can wake the loop (see :func:`_object_facts`).
WATCHED_KINDS = ("Node", "AutoscalingRunnerSet")


def _condition_status(obj: Obj, cond_type: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type:
            return str(cond.get("status"))
    return None


#: A placeholder just created: Pending, unbound. Its ADDED event is the reconciler's own
#: write coming back; sync has nothing to do with a Pending half, so it does not wake the loop.
_FRESH_PLACEHOLDER = (False, False, False, False, False)


def _pod_facts(pod: Obj) -> tuple[Any, ...]:
    """What decisions and the ledger read from a pod; a change of anything else cannot matter.

    Placeholders: bound, Running, terminating, DisruptionTarget, ended (sync's half
    classification). Real runner and workflow pods: bound, terminating, ended (a bound pod
    holds its slot whether Pending or Running); a new runner pod matters at once (it counts
    against maxRunners headroom), an unbound workflow pod does not.
    """
    meta = pod["metadata"]
    phase = (pod.get("status") or {}).get("phase")
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    deleting = bool(meta.get("deletionTimestamp"))
    ended = phase in ("Succeeded", "Failed")
    if L.LABEL_SCALE_SET in (meta.get("labels") or {}):
        return (
            bound,
            phase == "Running",
            deleting,
            _condition_status(pod, "DisruptionTarget") == "True",
            ended,
        )
    return (bound, deleting, ended)


def _counts(facts: tuple[Any, ...] | None) -> bool:
    """The pod's facts say it backs capacity in the ledger: a placeholder bound, Running and
    not leaving; a real runner or workflow pod bound and not leaving (it holds its slot)."""
    if facts is None:
        return False
    if len(facts) == len(_FRESH_PLACEHOLDER):
        bound, running, deleting, disrupted, ended = facts
        return bool(bound and running and not (deleting or disrupted or ended))
    bound, deleting, ended = facts
    return bool(bound and not (deleting or ended))


def _object_facts(obj: Obj) -> tuple[Any, ...] | None:
    """What the reconciler's decisions read from other kinds; None: nothing.

    Nodes: readiness, cordon, taints. The AutoscalingRunnerSet: the live min/max runners.
    The EphemeralRunnerSet (the scaler patches it on every poll), EphemeralRunners (they only
    feed the idle-runner warning figure), NodeClaims (explanations only), NodePools (the fit
    estimate, refreshed on its own period) and PriorityClasses do not wake the loop.
    """
    kind = obj["kind"]
    if kind == "Node":
        spec = obj.get("spec") or {}
        return (
            _condition_status(obj, "Ready"),
            bool(spec.get("unschedulable")),
            repr(spec.get("taints")),
        )
    if kind == "AutoscalingRunnerSet":
        spec = obj.get("spec") or {}
        return (spec.get("maxRunners"), spec.get("minRunners"))
    return None


class StoreCacheView:
    """The ObjectSource the reconciler reads: the store seen through the production cache's
    label selectors (``providers.kubernetes.cache.default_targets``).

    Pods: this scale set's placeholders (``arc-capacity.dev/scale-set=<ers>`` in the
    placeholder namespace), ARC runner pods (``actions-ephemeral-runner=True``) and workflow
    pods (``runner-pod`` label) of the runner namespace. The other cached kinds are read from
    the store as is; kinds the cache does not watch (Events) list empty, as in production.

    ``on_change`` (the loop's trigger) is called for *relevant* changes only: a watched
    object added or removed, or a change of a fact the reconciler reads (see
    :func:`_pod_facts`, :func:`_object_facts`). The production cache notifies on every watch
    event; the debounced schedule makes the two equivalent except that irrelevant events
    (chiefly the scaler's ERS patch on every poll) do not cause extra steps here.
    """

    def __init__(
        self,
        store: ObjectStore,
        router: PodRouter,
        target: ScaleSetTarget,
        on_change: Callable[[], None],
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.target = target
        self.on_change = on_change
        #: Called when a pod that backed capacity stops backing it (fast drop path).
        self.on_lost = on_lost
        self._pods: dict[tuple[str, str], Obj] = {}
        self._facts: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        router.on_change(self._on_pod)
        store.subscribe(self._on_object, kinds=WATCHED_KINDS)

    def _selected(self, pod: Obj) -> bool:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        namespace = meta.get("namespace")
        if namespace == self.target.placeholder_namespace and (
            labels.get(L.LABEL_SCALE_SET) == self.target.ers_name
        ):
            return True
        return namespace == self.target.runner_namespace and (
            labels.get(L.LABEL_EPHEMERAL_RUNNER) == "True" or L.LABEL_WORKFLOW_RUNNER_POD in labels
        )

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        if not self._selected(pod):
            return
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        counted = _counts(self._facts.get(("Pod", *key)))
        if event_type == "DELETED":
            self._pods.pop(key, None)
            self._facts.pop(("Pod", *key), None)
            if counted and self.on_lost is not None:
                self.on_lost()
            self.on_change()
            return
        self._pods[key] = pod
        facts = _pod_facts(pod)
        if counted and not _counts(facts) and self.on_lost is not None:
            self.on_lost()
        if event_type == "ADDED" and (
            facts == _FRESH_PLACEHOLDER
            or (facts == (False, False, False) and L.LABEL_WORKFLOW_RUNNER_POD in meta["labels"])
        ):
            self._facts[("Pod", *key)] = facts  # see _FRESH_PLACEHOLDER / _pod_facts
            return
        self._changed(("Pod", *key), facts)

    def _on_object(self, event_type: str, obj: Obj) -> None:
        facts = _object_facts(obj)
        if facts is None:
            return
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            self._facts.pop(key, None)
            self.on_change()
        else:
            self._changed(key, facts)

    def _changed(self, key: tuple[str, str, str], facts: tuple[Any, ...]) -> None:
        if self._facts.get(key) != facts:
            self._facts[key] = facts
            self.on_change()

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        if kind not in CACHED_KINDS:
            return []  # not watched by the production cache (e.g. Events): it has none
        if kind != "Pod":
            return self.store.list(kind, namespace)
        if namespace is None:
            return list(self._pods.values())
        return [p for (ns, _), p in self._pods.items() if ns == namespace]


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
    """Fault hooks of a :class:`CapacityAwareDriver` (used by :mod:`providers.simulated.faults`).

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
        self.statistics = StatisticsDemand(on_change=self.demand_changed)
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
            ctx.store, ctx.router, self.target, self.trigger, on_lost=self._lost
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

    def demand_changed(self) -> None:
        """A demand source's answer changed: a leading trigger (see reconciler/loop.py)."""
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
        """The production listener's fail-closed rule (listener/app.py): a cache whose watches
        have been down for more than one interval may hide a lost placeholder."""
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
            self.demand_changed()
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
