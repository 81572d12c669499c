"""The ``capacityAware`` settings block (Helm values / listener config), validated at the edge.

Keys are the camelCase names of the Helm values; snake_case is accepted too. Durations
accept seconds (``30``) or a unit suffix (``"30s"``, ``"5m"``, ``"1h"``). A bad value raises
:class:`SettingsError` naming the field, the value and what is allowed; nothing starts
half-configured. Inside the process the reconciler only sees the frozen
:class:`ReconcilerConfig` built by :meth:`CapacityAwareSettings.reconciler_config`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    StrictBool,
    StrictInt,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

# Re-exported for the modules that still import it from here (listener/process/assembly.py,
# reconciler/controller.py, tests/reconciler/engine.py); new code imports reconciler.config.
from reconciler.config import ReconcilerConfig
from reconciler.demand_settings import DemandSettings, HudSettings
from reconciler.fleet_settings import FleetViewSettings
from reconciler.schedule import Timings
from reconciler.settings_types import (
    DoNotDisrupt,
    ImageRef,
    Quantity,
    ResourceName,
    Seconds,
    SettingsError,
    SettingsModel,
)
from reconciler.warm_pool import ScheduleEntry, WarmPoolPolicy


class PriorityClassNames(SettingsModel):
    """Names of the four PriorityClasses of the ladder (values are checked at start-up)."""

    runner_placeholder: str = "arc-placeholder-runner"
    runner: str = "arc-runner"
    workflow_placeholder: str = "arc-placeholder-workflow"
    workflow: str = "arc-workflow"


_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def _proactive(value: Any) -> Any:
    """A number of warm pairs (0-10000) or ``"auto"``; one message for anything else."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
        raise ValueError("proactiveCapacity is a number of pairs from 0 to 10000, or 'auto'")
    return value


ProactiveCapacity = Annotated[int | Literal["auto"], BeforeValidator(_proactive)]


def _hot(value: Any) -> Any:
    """A number of hot slots (0-10000) or ``"auto"``; one message for anything else."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
        raise ValueError("hotRunners is a number of hot slots from 0 to 10000, or 'auto'")
    return value


HotRunners = Annotated[int | Literal["auto"], BeforeValidator(_hot)]


def _second_of_day(value: Any) -> Any:
    """``"HH:MM"`` (UTC, 24 h clock) to seconds since midnight."""
    match = _CLOCK.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError("a time of day is 'HH:MM' in UTC on a 24 h clock, e.g. '07:00'")
    return int(match.group(1)) * 3600.0 + int(match.group(2)) * 60.0


def _clock_text(second_of_day: float) -> str:
    minutes = int(second_of_day // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


#: Seconds since midnight inside; ``"HH:MM"`` in and out, so a dumped block reads back.
TimeOfDay = Annotated[
    float, BeforeValidator(_second_of_day), PlainSerializer(_clock_text, return_type=str)
]


class WarmPoolScheduleEntry(SettingsModel):
    """From ``start`` to ``end`` (UTC ``HH:MM``; wraps over midnight when end < start)."""

    start: TimeOfDay
    end: TimeOfDay
    pairs: int = Field(ge=0, le=10_000)

    @model_validator(mode="after")
    def _not_empty(self) -> WarmPoolScheduleEntry:
        if self.start == self.end:
            raise ValueError("start and end are equal: the entry would cover no time")
        return self


class WarmPoolSettings(SettingsModel):
    """Bounds and schedule of the adaptive warm pool (``proactiveCapacity: auto``)."""

    min_pairs: int = Field(default=0, ge=0, le=10_000)
    max_pairs: int = Field(default=20, ge=0, le=10_000)
    #: Starting runners are averaged, and pairs taken counted, over this window.
    window: Seconds = Field(default=180.0, ge=60, le=86_400)
    #: Target probability that a job finds no warm pair (reconciler/warm_pool.py).
    miss_probability: float = Field(default=0.25, gt=0, lt=1)
    #: Quantile of recent created -> READY times used as the time to become READY; unset:
    #: their mean (reconciler/warm_pool.py: the Poisson count of refills takes the mean).
    ready_quantile: float | None = Field(default=None, gt=0, le=1)
    #: Time to become READY assumed before any pair was measured.
    default_ready_time: Seconds = Field(default=60.0, gt=0, le=3600)
    #: Time-of-day overrides (first match wins); also apply to a fixed proactiveCapacity.
    schedule: list[WarmPoolScheduleEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _bounds(self) -> WarmPoolSettings:
        if self.min_pairs > self.max_pairs:
            raise ValueError(
                f"minPairs must be <= maxPairs (got {self.min_pairs} > {self.max_pairs})"
            )
        return self


class CapacityAwareSettings(SettingsModel):
    """The whole ``capacityAware`` block. Defaults are safe for a first install."""

    enabled: StrictBool = False
    #: Warm pairs kept ready beyond running jobs, or "auto" (sized by ``warmPool``). With
    #: ``fleetView`` on and fresh it is the fleet's pool, split across its healthy clusters.
    proactive_capacity: ProactiveCapacity = 1
    #: Of that reserve, how many slots are held as hot slots (a registered idle runner paired
    #: with a workflow placeholder, docs/design.md#hot-runners) instead of warm pairs; "auto":
    #: all of it. 0: none (warm pairs only).
    hot_runners: HotRunners = 0
    warm_pool: WarmPoolSettings = Field(default_factory=WarmPoolSettings)
    #: Periodic fallback between watch-triggered reconciles.
    recalculate_interval: Seconds = Field(default=30.0, ge=1, le=3600)
    #: Fraction of the interval added as random jitter so many listeners do not run in lockstep.
    recalculate_jitter: float = Field(default=0.1, ge=0, le=0.5)
    #: Watch events are coalesced for this long before a reconcile runs.
    watch_debounce: Seconds = Field(default=1.0, ge=0, le=60)
    #: A pair not READY this long after it was requested is TIMED_OUT (ICE, limits, quota...).
    placeholder_ready_timeout: Seconds = Field(default=300.0, ge=10, le=86_400)
    #: How long the surviving half of a PREEMPTED pair is protected (runner started -> its
    #: workflow pod takes over the workflow placeholder). Long enough for the slowest workflow
    #: pod seen after its runner bound plus a slow runner image pull; longer only holds idle
    #: CPU (the measurement: docs/design.md#decisions, ``survivorWindow``).
    survivor_window: Seconds = Field(default=120.0, ge=0, le=86_400)
    #: Requests (= limits) of the workflow placeholder, e.g. {"cpu": "2", "memory": "4Gi"}.
    workflow_resources: dict[ResourceName, Quantity] = Field(
        default_factory=lambda: {"cpu": "1", "memory": "2Gi"}
    )
    image: str = Field(default="registry.k8s.io/pause:3.10", min_length=1)
    #: Images the workflow placeholder pulls onto its node before its pause container runs
    #: (one init container each, running ``sh -c :``: job containers need a shell for the
    #: container hook anyway), so a workflow pod that later takes that room starts without the
    #: pull. The job image comes from the workflow, not from ARC: list the ones your jobs use.
    #: Empty (default): placeholders pull only ``image``.
    pre_pull_images: tuple[ImageRef, ...] = Field(default=(), max_length=8)
    #: The workflow placeholder also pulls, first, the runner template's images (a job's
    #: runner lands beside its workflow room on a new node and needs them before anything
    #: else; only where the two halves share a placement), then the job images this scale
    #: set's workflow pods used last (at most ``providers.kubernetes.pods.job_images.LEARNED``),
    #: learned from the hook's ``job`` container of workflow pods that carry no pull secret of
    #: their own. A half confirmed only when Running (GPUs) is confirmed a pull later; an
    #: image whose pull or ``sh -c :`` failed in a placeholder is refused for a while.
    pre_pull_auto: bool = True
    #: Placeholder pods end by themselves after this long (activeDeadlineSeconds), jittered.
    placeholder_lifetime: Seconds = Field(default=4 * 3600.0, ge=60, le=7 * 86_400)
    lifetime_jitter: float = Field(default=0.2, ge=0, le=0.5)
    #: Lease on each placeholder (annotation), renewed by the reconciler at half-life;
    #: expired leases are reaped (orphans of a dead listener instance).
    placeholder_ttl: Seconds = Field(default=1800.0, ge=60, le=86_400)
    priority_classes: PriorityClassNames = Field(default_factory=PriorityClassNames)
    #: The launch ramp follows demand, bounded by maxRunners headroom, NodePool headroom (the
    #: fit estimate) and this node-launch rate: new nodes per minute that our pending pairs may
    #: cause (counted from Karpenter NodeClaims, so the registry/cache storm stays bounded).
    #: Per NodePool in effect (every NodeClaim counts, whoever caused it): the default lets two
    #: scale sets sharing one pool ramp a wide storm about as fast as stock ARC at unchanged
    #: cost (docs/design.md#decisions, ``nodeLaunchRate``); stock ARC itself has no bound.
    node_launch_rate: float = Field(default=30.0, gt=0, le=10_000)
    #: Pairs requested together so one Karpenter batch fills one node; None = estimate it from
    #: the NodePool's instance types (1 when they are unknown).
    launch_group_size: StrictInt | None = Field(default=None, ge=1, le=1_000)
    #: Put ``karpenter.sh/do-not-disrupt`` on workflow placeholders. Without it Karpenter
    #: deletes a node holding only warm placeholders as soon as a finished job frees room
    #: elsewhere (single-node consolidation treats placeholders like any pod), the placeholder
    #: is re-created in that room, and the next refill buys a new node (the launches it cost:
    #: docs/design.md#decisions, ``doNotDisrupt``). ``auto`` (default) = ``1h`` where no
    #: instance type the NodePools hosting the workflow half allow holds two workflow pods
    #: (there consolidation packs nothing and only churns), or where that is unknown; none
    #: where a type holds several (there it packs warm pairs: providers/kubernetes/
    #: churn_guard.py). A duration = protected until that long after the placeholder
    #: started, so an idle warm node can still be consolidated or drifted (Karpenter >=
    #: v1.12; older versions ignore a duration, which means no protection: set ``true``
    #: there); ``true`` = protected while it runs; ``false`` = none.
    do_not_disrupt: DoNotDisrupt = "auto"
    #: Where a NodePool's limit holds fewer than maxRunners pairs and it allows instance types
    #: that hold workflow pods poorly, workflow placeholders prefer (preferred node affinity)
    #: the types that hold them well, so the nodes Karpenter buys for lone pairs run more
    #: jobs at the limit (providers/kubernetes/placement/capped_pools.py).
    prefer_fitting_types: StrictBool = True
    #: Both halves prefer (preferred node affinity by node name) the nodes this scale set's
    #: runner and workflow pods run on, the busiest most, so the jobs that later take their
    #: room keep busy nodes busy and let idle ones empty
    #: (providers/kubernetes/placement/busy_nodes.py).
    prefer_busy_nodes: StrictBool = True
    #: Hard ceilings kept as safety valves (the ramp above is the real bound): pairs
    #: REQUESTED/PARTIAL at once...
    max_pairs_in_flight: StrictInt = Field(default=1_000, ge=1, le=10_000)
    #: ...and pairs requested per reconcile step.
    max_requests_per_step: StrictInt = Field(default=200, ge=1, le=10_000)
    #: Queued jobs assumed when the HUD is unavailable (added to proactiveCapacity).
    hud_fallback_queued_jobs: StrictInt = Field(default=0, ge=0, le=10_000)
    hud: HudSettings = Field(default_factory=HudSettings)
    demand: DemandSettings = Field(default_factory=DemandSettings)
    #: Fleet-aware demand and warm pool from a shared metric store (off by default;
    #: docs/fleet.md). Never changes what is advertised.
    fleet_view: FleetViewSettings = Field(default_factory=FleetViewSettings)
    #: Namespace of the placeholder pods; default (None) = the runner namespace.
    placeholder_namespace: str | None = None
    #: Cut the in-flight long poll short when advertised capacity drops
    #: (docs/design.md#capacity-cut).
    cut_poll_on_drop: StrictBool = True
    cut_poll_on_rise: StrictBool = False
    #: Cut it on a rise while the poll in flight can get no job (every advertised slot taken):
    #: the first job after scale-to-zero or a slot handed over at maxRunners waits for no
    #: long poll (listener/arc/poll_cut.py).
    cut_poll_when_full: StrictBool = True
    cut_poll_debounce: Seconds = Field(default=0.25, ge=0, le=10)
    #: Count a placeholder half that requests only cpu, memory and ephemeral-storage once it
    #: is bound to a Ready node, not when its pause container runs: kubelet admission re-runs
    #: the scheduler's fit for those (providers/kubernetes/observe/admission.py). Halves with device
    #: plugin resources (GPUs) always wait for Running. false: every half waits for Running
    #: (nodes with the static CPU manager + full-pcpus-only or a single-numa-node topology
    #: manager can refuse a pod the scheduler placed).
    confirm_at_binding: StrictBool = True

    @model_validator(mode="after")
    def _check_relations(self) -> CapacityAwareSettings:
        if self.max_requests_per_step > self.max_pairs_in_flight:
            raise ValueError(
                "maxRequestsPerStep must be <= maxPairsInFlight "
                f"(got {self.max_requests_per_step} > {self.max_pairs_in_flight})"
            )
        if self.placeholder_ttl <= self.recalculate_interval:
            raise ValueError(
                "placeholderTtl must exceed recalculateInterval so leases are renewed in time "
                f"(got {self.placeholder_ttl} <= {self.recalculate_interval})"
            )
        if "hud" in self.demand.resolved_sources(self.hud.url) and not self.hud.url:
            raise ValueError("demand.sources has 'hud' but hud.url is not set")
        if not self.workflow_resources:
            raise ValueError("workflowResources needs at least one resource, e.g. {cpu: '1'}")
        hot, reserve = self.hot_runners, self.proactive_capacity
        if (
            not self.warm_pool.schedule
            and isinstance(hot, int)
            and isinstance(reserve, int)
            and hot > reserve
        ):
            raise ValueError(
                "hotRunners is the part of the reserve held as hot slots, so it must be <= "
                f"proactiveCapacity (got hotRunners {self.hot_runners} > proactiveCapacity "
                f"{self.proactive_capacity}); raise proactiveCapacity or use hotRunners: auto"
            )
        auto_only = self.warm_pool.model_fields_set - {"schedule"}
        if self.proactive_capacity != "auto" and auto_only:
            keys = ", ".join(sorted(to_camel(k) for k in auto_only))
            raise ValueError(
                f"warmPool.{keys} only apply to proactiveCapacity: auto "
                f"(got proactiveCapacity: {self.proactive_capacity})"
            )
        return self

    def warm_pool_policy(self) -> WarmPoolPolicy | None:
        """None when the pool is a fixed number with no schedule (the plain, old behaviour)."""
        pool = self.warm_pool
        auto = self.proactive_capacity == "auto"
        if not auto and not pool.schedule:
            return None
        return WarmPoolPolicy(
            auto=auto,
            static_pairs=self.static_proactive_capacity,
            minimum=pool.min_pairs,
            maximum=pool.max_pairs,
            window=pool.window,
            miss_probability=pool.miss_probability,
            default_ready_seconds=pool.default_ready_time,
            ready_quantile=pool.ready_quantile,
            schedule=tuple(ScheduleEntry(e.start, e.end, e.pairs) for e in pool.schedule),
        )

    @property
    def static_proactive_capacity(self) -> int:
        """The fixed pool size; with ``auto``, the lower bound until the first estimate."""
        if self.proactive_capacity == "auto":
            return self.warm_pool.min_pairs
        return self.proactive_capacity

    def controller_timings(self) -> Timings:
        """The controller's schedule: a stream of watch events delays a step at most five
        debounces (at least 1 s)."""
        debounce = self.watch_debounce
        return Timings(
            self.recalculate_interval, self.recalculate_jitter, debounce, max(debounce * 5, 1.0)
        )

    def reconciler_config(self, scale_set: str) -> ReconcilerConfig:
        return ReconcilerConfig(
            scale_set=scale_set,
            proactive_capacity=self.static_proactive_capacity,
            hot_runners=self.hot_runners,
            warm_pool=self.warm_pool_policy(),
            placeholder_ready_timeout=self.placeholder_ready_timeout,
            survivor_window=self.survivor_window,
            placeholder_ttl=self.placeholder_ttl,
            max_pairs_in_flight=self.max_pairs_in_flight,
            max_requests_per_step=self.max_requests_per_step,
            hud_fallback_queued_jobs=self.hud_fallback_queued_jobs,
            node_launch_rate=self.node_launch_rate,
            launch_group_size=self.launch_group_size,
        )


def parse_capacity_aware(data: Mapping[str, Any] | None, *, where: str) -> CapacityAwareSettings:
    """Validate a ``capacityAware`` mapping; ``where`` names its origin for error messages."""
    try:
        return CapacityAwareSettings.model_validate(dict(data or {}))
    except ValidationError as exc:
        message = format_validation_error(exc, where=where, root="capacityAware")
        raise SettingsError(message) from None


def format_validation_error(exc: ValidationError, *, where: str, root: str) -> str:
    """One line per problem: ``<where>: <root>.<path>: got <value>; <what is allowed>``."""
    lines = []
    for err in exc.errors(include_url=False):
        # A dict key's error ends its loc with "[key]": the key itself names the place.
        path = ".".join(str(p) for p in (root, *err["loc"]) if p != "[key]")
        got = err.get("input")
        shown = "<missing>" if err["type"] == "missing" else _short_repr(got)
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            # Never echo the value: a token pasted under a misspelt key must not reach a log.
            lines.append(f"{where}: {path}: unknown key (check spelling; keys are camelCase)")
            continue
        if not err["loc"]:  # a rule across fields: the message names them itself
            lines.append(f"{where}: {path}: {message}")
            continue
        lines.append(f"{where}: {path}: got {shown}; {message}")
    return "\n".join(lines)


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
