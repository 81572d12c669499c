"""Prometheus metrics of the listener: ARC's own families plus the capacity families.

What this module owns, in order:

1. **The ARC families** (PROTOCOL §8.1): the twelve ``gha_*`` metrics of ARC's listener with
   the same names, types, help strings, label sets, buckets and label-value rules, so existing
   dashboards and alerts keep working when the image is swapped. The ``metrics`` key of the
   listener config (ARS ``spec.listenerMetrics``, PROTOCOL §8.2) replaces that default set:
   only the listed metrics are registered, each with exactly the listed labels; unknown names
   are logged and skipped; histogram buckets default to ARC's list.
2. **The capacity families** (prefix ``arc_capacity_``): pairs by state, the ledger (advertised
   capacity, runner / workflow side, live maxRunners, READY pairs, starved and idle runners),
   transitions, reconcile timing, HUD health, long-poll cuts, placeholder API writes, orphan
   deletions and lease renewals. They are always registered (``metrics`` does not touch them)
   and carry the scale-set labels so several listeners share one dashboard.
3. :class:`PrometheusMetrics`: one fresh :class:`~prometheus_client.CollectorRegistry` with no
   process/platform collectors (like ARC's), and the hook methods the listener loop calls
   (``record_statistics``, ``record_job_started``, ``record_job_completed``,
   ``record_desired_runners``, ``record_poll_cut``).
4. :class:`MetricsSubscriber`: a reconciler subscriber. Counters come from transition events
   and commands; gauges come from each step's ledger and the store's counts
   (:meth:`MetricsSubscriber.observe_step`).
5. ``python -m listener.metrics [--check]`` writes (or checks) ``docs/metrics.md``, generated
   from the family definitions below, so the reference cannot drift from the code.

Label cardinality: transition reasons are free text, so the ``reason`` label is a bounded
category (:class:`ReasonCategory`, first matching rule of :data:`REASON_RULES`); the full
reason is in the log line of every transition. Every other label of the capacity families
takes values from a fixed set.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from pydantic import BaseModel, ConfigDict, ValidationError

from reconciler.capacity import CapacityLedger
from reconciler.clock import Clock
from reconciler.ports import Command, DeleteOrphan, RenewLease
from state_machine.events import TransitionEvent
from state_machine.states import PairState, Role

log = logging.getLogger(__name__)

MetricKind = Literal["counter", "gauge", "histogram"]

# --- 1. ARC families (PROTOCOL §8.1) ---------------------------------------------------------

#: ARC's ``defaultRuntimeBuckets`` (both job histograms).
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60,
    70, 80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200,
    1800, 2400, 3000, 3600,
)  # fmt: skip

#: Scale-set label set S.
SCALE_SET_LABELS = ("enterprise", "organization", "repository", "name", "namespace")
#: Job label set J.
JOB_LABELS = ("enterprise", "organization", "repository", "job_name", "event_name")
#: Optional job labels a custom ``metrics`` config may add (never in the default set).
WORKFLOW_LABELS: tuple[str, ...] = ("job_workflow_ref", "job_workflow_name", "job_workflow_target")


class Source(StrEnum):
    """Where an ARC family takes its label values from."""

    SCALE_SET = "scale set (config)"
    JOB = "job message"
    COMPLETED_JOB = "job message + result"


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family: everything needed to register it and to document it."""

    name: str
    kind: MetricKind
    help: str
    labels: tuple[str, ...]
    #: When it changes and what its value is (for docs/metrics.md).
    when: str
    buckets: tuple[float, ...] = ()
    source: Source | None = None


def _arc(name: str, kind: MetricKind, help_: str, source: Source, when: str) -> Family:
    labels = {
        Source.SCALE_SET: SCALE_SET_LABELS,
        Source.JOB: JOB_LABELS,
        Source.COMPLETED_JOB: (*JOB_LABELS, "job_result"),
    }[source]
    buckets = DEFAULT_BUCKETS if kind == "histogram" else ()
    return Family(name, kind, help_, labels, when, buckets, source)


S, J, JR = Source.SCALE_SET, Source.JOB, Source.COMPLETED_JOB

ARC_FAMILIES: tuple[Family, ...] = (
    _arc("gha_assigned_jobs", "gauge", "Number of jobs assigned to this scale set.", S,
         "`totalAssignedJobs`, on the initial session and every message with statistics"),
    _arc("gha_running_jobs", "gauge", "Number of jobs running (or about to be run).", S,
         "`totalRunningJobs`, same cadence"),
    _arc("gha_registered_runners", "gauge", "Number of runners registered by the scale set.", S,
         "`totalRegisteredRunners`, same cadence"),
    _arc("gha_busy_runners", "gauge", "Number of registered runners running a job.", S,
         "`totalBusyRunners`, same cadence"),
    _arc("gha_idle_runners", "gauge", "Number of registered runners not running a job.", S,
         "`totalIdleRunners`, same cadence"),
    _arc("gha_min_runners", "gauge", "Minimum number of runners.", S,
         "`min_runners` of the listener config, set once at start"),
    _arc("gha_max_runners", "gauge", "Maximum number of runners.", S,
         "`max_runners` of the listener config, set once at start (the live value is "
         "`arc_capacity_max_runners_live`)"),
    _arc("gha_desired_runners", "gauge", "Number of runners desired by the scale set.", S,
         "the scaler's target, at start and per message (not on an empty poll)"),
    _arc("gha_started_jobs_total", "counter", "Total number of jobs started.", J,
         "+1 per JobStarted"),
    _arc("gha_completed_jobs_total", "counter", "Total number of jobs completed.", JR,
         "+1 per JobCompleted that has a runnerAssignTime"),
    _arc("gha_job_startup_duration_seconds", "histogram",
         "Time spent waiting for workflow job to get started on the runner owned by the scale "
         "set (in seconds).", J,
         "per JobStarted: runnerAssignTime - scaleSetAssignTime, whole seconds"),
    _arc("gha_job_execution_duration_seconds", "histogram",
         "Time spent executing workflow jobs by the scale set (in seconds).", JR,
         "per JobCompleted with a runnerAssignTime: finishTime - runnerAssignTime, whole "
         "seconds"),
)  # fmt: skip

_ARC_BY_KIND: dict[str, dict[str, Family]] = {
    kind: {f.name: f for f in ARC_FAMILIES if f.kind == kind}
    for kind in ("counter", "gauge", "histogram")
}
#: The config section that lists each kind (PROTOCOL §8.2).
_SECTIONS: dict[str, MetricKind] = {
    "counters": "counter",
    "gauges": "gauge",
    "histograms": "histogram",
}

PROMHTTP_ERRORS = "promhttp_metric_handler_errors_total"

# --- 2. Capacity families ----------------------------------------------------------------------

PREFIX = "arc_capacity_"
#: Fast buckets: a reconcile step is pure CPU over the cached snapshot.
RECONCILE_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
)  # fmt: skip
HUD_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)


class ReasonCategory(StrEnum):
    """Bounded ``reason`` label of ``arc_capacity_transitions_total`` (reasons are free text)."""

    DEMAND = "demand"  # decide wants more pairs (or adopts one)
    LAUNCH = "launch"  # a launch slot was free: both pods requested
    RUNNING = "running"  # pods observed Running (PARTIAL / READY)
    NODE_BLOCKED = "node_blocked"  # a pod's node stopped accepting it (cordon, disruption, taint)
    PREEMPTED = "preempted"  # preempted or evicted (DisruptionTarget)
    ENDED = "ended"  # a placeholder ended by itself (lifetime, OOM, ...)
    DELETED = "deleted"  # a placeholder was deleted or vanished behind our back
    TIMEOUT = "timeout"  # not READY within placeholderReadyTimeout
    SURVIVOR_EXPIRED = "survivor_expired"  # survivor unclaimed for survivorWindow
    GONE = "gone"  # pods confirmed gone (PREEMPTED/TIMED_OUT -> DELETED)
    SCALE_DOWN = "scale_down"  # fewer pairs wanted
    ADOPTED = "adopted"  # taken over from an earlier listener instance
    OTHER = "other"  # anything the rules below do not recognise


#: First match wins; patterns are case-insensitive and searched anywhere in the reason.
REASON_RULES: tuple[tuple[str, ReasonCategory], ...] = (
    (r"adopted", ReasonCategory.ADOPTED),
    (r"not ready within|timed? ?out", ReasonCategory.TIMEOUT),
    (r"survivor unclaimed|outlived", ReasonCategory.SURVIVOR_EXPIRED),
    (r"surviving pod is gone|confirmed gone", ReasonCategory.GONE),
    (r"scale down", ReasonCategory.SCALE_DOWN),
    (r"stopped accepting|no longer accepts|cordon|disrupt|taint", ReasonCategory.NODE_BLOCKED),
    (r"preempt|evict", ReasonCategory.PREEMPTED),
    (r"ended by itself", ReasonCategory.ENDED),
    (r"deleted|vanished|lost", ReasonCategory.DELETED),
    (r"launch slot", ReasonCategory.LAUNCH),
    (r"\brunning\b", ReasonCategory.RUNNING),
    (r"desired \d+ pairs|wanted|demand", ReasonCategory.DEMAND),
)
_REASON_PATTERNS = tuple((re.compile(p, re.IGNORECASE), c) for p, c in REASON_RULES)


def reason_category(reason: str) -> ReasonCategory:
    """Map a free-text transition reason to its bounded label value."""
    for pattern, category in _REASON_PATTERNS:
        if pattern.search(reason):
            return category
    return ReasonCategory.OTHER


#: Bounded label values (anything else is reported as ``other``).
POLL_CUT_DIRECTIONS = ("drop", "rise")
_POLL_CUT_ALIASES = {"down": "drop", "decrease": "drop", "up": "rise", "increase": "rise"}
HUD_ERROR_KINDS = ("timeout", "connect", "http", "decode", "other")
API_WRITE_VERBS = ("create", "delete", "patch")
BACKGROUND_TASKS = ("hud", "reconcile", "demand", "statistics", "other")
NEW_PAIR = "new"  # ``from`` label of the creation edge (no source state)

_CAP_S = SCALE_SET_LABELS


def _cap(
    name: str,
    kind: MetricKind,
    help_: str,
    when: str,
    labels: tuple[str, ...] = (),
    buckets: tuple[float, ...] = (),
) -> Family:
    return Family(PREFIX + name, kind, help_, (*_CAP_S, *labels), when, buckets)


CAPACITY_FAMILIES: tuple[Family, ...] = (
    _cap("pairs", "gauge", "Placeholder pairs by state.",
         "per reconcile step, from the pair store; `state` is one of "
         + ", ".join(f"`{s.value}`" for s in PairState), ("state",)),
    _cap("advertised", "gauge",
         "Capacity advertised to GitHub as X-ScaleSetMaxCapacity (min of runner side, "
         "workflow side and live maxRunners).",
         "per reconcile step, from the ledger (and on every change when wired to the "
         "capacity sink)"),
    _cap("runner_side", "gauge",
         "Runner halves backed by the scheduler: bound real runner pods + counted runner "
         "placeholders.", "per reconcile step"),
    _cap("workflow_side", "gauge",
         "Workflow halves backed by the scheduler: bound real workflow pods + counted workflow "
         "placeholders.", "per reconcile step"),
    _cap("max_runners_live", "gauge",
         "maxRunners as read live from the AutoscalingRunnerSet (0 = drained).",
         "per reconcile step"),
    _cap("ready_pairs", "gauge", "READY placeholder pairs (warm slots).", "per reconcile step"),
    _cap("warm_pool_pairs", "gauge",
         "Warm pairs kept beyond running jobs and queued demand: the fixed proactiveCapacity, "
         "the `auto` estimate or a schedule entry.", "per reconcile step"),
    _cap("warm_pool_load", "gauge",
         "`auto`: slots expected out of the warm pool (starting runners + pairs taken per "
         "second x time to READY), which the pool size covers with a Poisson margin.",
         "per reconcile step that estimated it (not with a fixed size or a schedule entry)"),
    _cap("starved_runners", "gauge",
         "Bound runner pods whose workflow pod exists but is not bound: claimed jobs waiting "
         "for a node.", "per reconcile step"),
    _cap("idle_runners", "gauge",
         "Registered runners without a job (GitHub can hand them jobs without a capacity "
         "check).", "per reconcile step"),
    _cap("real_pods_bound", "gauge", "Real runner / workflow pods bound to a node.",
         "per reconcile step; `role` is `runner` or `workflow`", ("role",)),
    _cap("placeholders_counted", "gauge",
         "Placeholder pods that count towards capacity (Running, bound, usable node).",
         "per reconcile step; `role` is `runner` or `workflow`", ("role",)),
    _cap("transitions_total", "counter", "Placeholder pair state transitions.",
         "+1 per transition event; `from` is a state or `new`, `kind` is `active`/`passive`, "
         "`reason` is a bounded category (see below)", ("from", "to", "kind", "reason")),
    _cap("reconcile_duration_seconds", "histogram",
         "Duration of one reconcile step (sync, decide, commit, publish).",
         "per reconcile step, successful or not", (), RECONCILE_BUCKETS),
    _cap("reconcile_errors_total", "counter", "Reconcile steps that raised.",
         "+1 per failed step (the loop retries on the next tick)"),
    _cap("subscriber_errors_total", "counter",
         "Subscriber failures during reconcile steps (effects are re-observed next step).",
         "+ the step's subscriber error count"),
    _cap("last_successful_reconcile_timestamp_seconds", "gauge",
         "Unix time of the last reconcile step that completed.",
         "per successful reconcile step; alert on `time() - this`"),
    _cap("hud_request_duration_seconds", "histogram",
         "Duration of HUD queued-jobs requests (successful or not).",
         "per HUD request", (), HUD_BUCKETS),
    _cap("hud_errors_total", "counter", "Failed HUD requests (demand falls back to the floor).",
         "+1 per failed HUD request; `kind` is one of "
         + ", ".join(f"`{k}`" for k in HUD_ERROR_KINDS), ("kind",)),
    _cap("long_poll_cuts_total", "counter",
         "In-flight long polls cut short so GitHub hears a capacity change at once.",
         "+1 per cut; `direction` is `drop`, `rise` or `other`", ("direction",)),
    _cap("placeholder_api_writes_total", "counter",
         "Kubernetes API writes made for placeholder pods.",
         "+1 per API call by the placeholder writer; `verb` is `create`, `delete`, `patch` or "
         "`other`", ("verb",)),
    _cap("orphan_deletions_total", "counter",
         "Placeholder pods no pair owns that were deleted (earlier instance, expired lease, "
         "retried delete).", "+1 per DeleteOrphan command"),
    _cap("lease_renewals_total", "counter",
         "Placeholder pods whose TTL lease was renewed.",
         "+ number of pods per RenewLease command"),
    _cap("statistics_refreshes_total", "counter",
         "Message-session refreshes made only to read statistics while no message could bring "
         "them (every advertised slot taken; `demand.statisticsRefresh`).",
         "+1 per refresh; `result` is `ok` or `error`", ("result",)),
    _cap("background_task_failures_total", "counter",
         "Background tasks (HUD poller, reconcile loop) that raised and were restarted.",
         "+1 per failure; `task` is one of "
         + ", ".join(f"`{t}`" for t in BACKGROUND_TASKS), ("task",)),
    _cap("undecodable_messages_total", "counter",
         "Actions messages that could not be understood: logged with their id, acked and "
         "skipped (their jobs come back through the statistics).", "+1 per skipped message"),
    _cap("owner", "gauge",
         "1 while this process holds the scale set's Lease (owns its placeholders), else 0.",
         "on every Lease acquire and release"),
)  # fmt: skip

_CAPACITY = {f.name: f for f in CAPACITY_FAMILIES}


# --- label values ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScaleSetIdentity:
    """The scale-set label values (PROTOCOL §8.1: from the config URL and the ERS)."""

    name: str
    namespace: str
    enterprise: str = ""
    organization: str = ""
    repository: str = ""

    @classmethod
    def from_config_url(cls, url: str, *, name: str, namespace: str) -> ScaleSetIdentity:
        """Parse ``configure_url`` like PROTOCOL §1.1; an unparsable URL leaves them empty
        (the config loader rejects it before metrics exist; labels must never raise)."""
        path = urlparse(url.strip("/")).path.strip("/")
        parts = path.split("/") if path else []
        if len(parts) == 1 and parts[0]:
            return cls(name, namespace, organization=parts[0])
        if len(parts) == 2 and parts[0].lower() == "enterprises":
            return cls(name, namespace, enterprise=parts[1])
        if len(parts) == 2:
            return cls(name, namespace, organization=parts[0], repository=parts[1])
        return cls(name, namespace)

    def labels(self) -> dict[str, str]:
        return {
            "enterprise": self.enterprise,
            "organization": self.organization,
            "repository": self.repository,
            "name": self.name,
            "namespace": self.namespace,
        }


def parse_workflow_ref(ref: str) -> tuple[str, str]:
    """``(job_workflow_name, job_workflow_target)`` of a ``jobWorkflowRef`` (ARC's rules).

    ``owner/repo/.github/workflows/ci.yml@refs/heads/main`` -> ``("ci", "heads/main")``;
    ``refs/tags/X`` -> ``tags/X``; ``refs/pull/N/merge`` -> ``pull/N``; any other ref -> "";
    both empty unless the ref has exactly one ``@``.
    """
    parts = ref.split("@")
    if len(parts) != 2:
        return "", ""
    path, target_ref = parts
    file_name = path.rsplit("/", 1)[-1]
    name = file_name.removesuffix(".yml").removesuffix(".yaml")
    target = ""
    if target_ref.startswith("refs/heads/"):
        target = "heads/" + target_ref.removeprefix("refs/heads/")
    elif target_ref.startswith("refs/tags/"):
        target = "tags/" + target_ref.removeprefix("refs/tags/")
    elif target_ref.startswith("refs/pull/"):
        number, slash, _ = target_ref.removeprefix("refs/pull/").partition("/")
        if slash and number:
            target = "pull/" + number
    return name, target


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def _field(obj: Any, camel: str, default: Any = None) -> Any:
    """Read a wire field whether the model names it ``totalAssignedJobs`` or
    ``total_assigned_jobs``, or the object is a plain mapping (duck-typed on purpose: the
    Actions wire models live in ``providers/actions`` and are built independently)."""
    if isinstance(obj, Mapping):
        return obj.get(camel, obj.get(_snake(camel), default))
    for attr in (camel, _snake(camel)):
        value = getattr(obj, attr, None)
        if value is not None:
            return value
    return default


#: Go's zero time: ``0001-01-01T00:00:00Z`` means "unset".
_ZERO_YEAR = 1


def unix_seconds(value: Any) -> int | None:
    """Whole Unix seconds of a wire timestamp (datetime, RFC 3339 text or epoch number);
    ``None`` for Go's zero time or a missing / unparsable value."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return math.floor(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.year <= _ZERO_YEAR:
        return None
    when: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return math.floor(when.timestamp())


# --- custom config (PROTOCOL §8.2) -------------------------------------------------------------


class MetricsConfigError(ValueError):
    """The ``metrics`` config (ARS ``spec.listenerMetrics``) cannot be installed."""


class _MetricSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    labels: list[str] = []
    buckets: list[float] | None = None


class CustomMetricsConfig(BaseModel):
    """``{"counters": {name: {labels}}, "gauges": ..., "histograms": {...}}``"""

    model_config = ConfigDict(extra="ignore", frozen=True)
    counters: dict[str, _MetricSpec] | None = None
    gauges: dict[str, _MetricSpec] | None = None
    histograms: dict[str, _MetricSpec] | None = None


def parse_metrics_config(raw: Mapping[str, Any] | BaseModel | None) -> CustomMetricsConfig | None:
    """``None`` (or absent) = ARC's default set; a mapping (or the listener config's own
    pydantic model of the ``metrics`` key) replaces it."""
    if raw is None:
        return None
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw)
    try:
        return CustomMetricsConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"metrics.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise MetricsConfigError(
            f"listener config: {problems} (expected {{counters|gauges|histograms: "
            "{<gha_* name>: {labels: [...], buckets: [...]}}}})"
        ) from None


@dataclass(frozen=True, slots=True)
class _Installed:
    family: Family
    labels: tuple[str, ...]
    metric: Any  # Counter | Gauge | Histogram with ``labels`` as label names


def _selected_arc_families(
    config: CustomMetricsConfig | None,
) -> list[tuple[Family, tuple[str, ...], tuple[float, ...]]]:
    if config is None:
        return [(f, f.labels, f.buckets) for f in ARC_FAMILIES]
    chosen = []
    for section, kind in _SECTIONS.items():
        for name, spec in (getattr(config, section) or {}).items():
            family = _ARC_BY_KIND[kind].get(name)
            if family is None:
                # ARC logs and skips unknown names (and names listed under the wrong kind).
                log.error("unknown metric name %r in metrics.%s; skipped", name, section)
                continue
            buckets = tuple(spec.buckets) if spec.buckets else DEFAULT_BUCKETS
            chosen.append((family, tuple(spec.labels), buckets if kind == "histogram" else ()))
    return chosen


#: Classic Prometheus label names: what every scraper and query language accepts.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _check_label_names(metric: str, labels: tuple[str, ...]) -> None:
    bad = [label for label in labels if not _LABEL_NAME.match(label) or label.startswith("__")]
    if bad or len(set(labels)) != len(labels):
        problem = f"invalid label names {bad}" if bad else "a label is listed twice"
        raise MetricsConfigError(
            f"listener config: metrics: {metric}: {problem}; label names match "
            "[a-zA-Z_][a-zA-Z0-9_]* and do not start with '__'"
        )


def _make(
    family: Family, labels: tuple[str, ...], buckets: tuple[float, ...], registry: CollectorRegistry
) -> Any:
    common: dict[str, Any] = {"labelnames": labels, "registry": registry}
    if family.kind == "counter":
        return Counter(family.name, family.help, **common)
    if family.kind == "gauge":
        return Gauge(family.name, family.help, **common)
    return Histogram(family.name, family.help, buckets=buckets, **common)


# --- 3. the metrics object ---------------------------------------------------------------------


class PrometheusMetrics:
    """All listener metrics in one fresh registry, plus the hooks that update them.

    Thread-safe (prometheus_client metrics are); the HTTP server reads ``registry`` from its
    own threads while the loop writes.
    """

    def __init__(
        self,
        identity: ScaleSetIdentity,
        *,
        min_runners: int,
        max_runners: int,
        clock: Clock,
        metrics_config: Mapping[str, Any] | BaseModel | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        _disable_created_series()
        self.identity = identity
        self.clock = clock
        self.registry = registry or CollectorRegistry()
        self._scale_set = identity.labels()
        self._arc: dict[str, _Installed] = {}
        custom = parse_metrics_config(metrics_config)
        for family, labels, buckets in _selected_arc_families(custom):
            _check_label_names(family.name, labels)
            try:
                metric = _make(family, labels, buckets, self.registry)
            except ValueError as exc:
                raise MetricsConfigError(
                    f"listener config: metrics: {family.name} with labels {list(labels)} "
                    f"and buckets {list(buckets)}: {exc}"
                ) from None
            self._arc[family.name] = _Installed(family, labels, metric)
        # ARC's registry also carries promhttp's own error counter, at 0 until an error.
        self.exposition_errors = Counter(
            PROMHTTP_ERRORS,
            "Total number of internal errors encountered by the promhttp metric handler.",
            ["cause"],
            registry=self.registry,
        )
        for cause in ("encoding", "gathering"):
            self.exposition_errors.labels(cause=cause)
        self._cap: dict[str, Any] = {
            f.name: _make(f, f.labels, f.buckets, self.registry) for f in CAPACITY_FAMILIES
        }
        self._init_capacity_series()
        self.record_static(min_runners, max_runners)

    # -- ARC hooks (the listener loop's ListenerMetrics protocol) -----------------------------

    def record_static(self, min_runners: int, max_runners: int) -> None:
        self._set("gha_min_runners", self._scale_set, min_runners)
        self._set("gha_max_runners", self._scale_set, max_runners)

    def record_statistics(self, stats: Any) -> None:
        for name, field in (
            ("gha_assigned_jobs", "totalAssignedJobs"),
            ("gha_running_jobs", "totalRunningJobs"),
            ("gha_registered_runners", "totalRegisteredRunners"),
            ("gha_busy_runners", "totalBusyRunners"),
            ("gha_idle_runners", "totalIdleRunners"),
        ):
            self._set(name, self._scale_set, int(_field(stats, field, 0) or 0))

    def record_job_started(self, msg: Any) -> None:
        labels = self._job_labels(msg)
        self._inc("gha_started_jobs_total", labels)
        assigned = unix_seconds(_field(msg, "runnerAssignTime"))
        scale_set_assigned = unix_seconds(_field(msg, "scaleSetAssignTime"))
        # ARC subtracts the two Unix seconds as they are (Go zero time included).
        startup = _go_unix(assigned) - _go_unix(scale_set_assigned)
        self._observe("gha_job_startup_duration_seconds", labels, startup)

    def record_job_completed(self, msg: Any) -> None:
        assigned = unix_seconds(_field(msg, "runnerAssignTime"))
        if assigned is None:
            return  # never reached a runner (e.g. canceled while queued): ARC ignores it
        labels = self._job_labels(msg)
        labels["job_result"] = str(_field(msg, "result", "") or "")
        self._inc("gha_completed_jobs_total", labels)
        finished = _go_unix(unix_seconds(_field(msg, "finishTime")))
        self._observe("gha_job_execution_duration_seconds", labels, finished - assigned)

    def record_desired_runners(self, count: int) -> None:
        self._set("gha_desired_runners", self._scale_set, count)

    def record_poll_cut(self, direction: str) -> None:
        value = _POLL_CUT_ALIASES.get(direction.lower(), direction.lower())
        if value not in POLL_CUT_DIRECTIONS:
            value = "other"
        self._cap_metric("long_poll_cuts_total", direction=value).inc()

    # -- capacity hooks --------------------------------------------------------------------

    def record_advertised(self, capacity: int) -> None:
        """The value handed to the long poll (e.g. a ``LatestCapacity`` listener); also set
        from each step's ledger. With capacity-aware mode off it is ``max_runners``."""
        self._cap_metric("advertised").set(capacity)

    def observe_ledger(self, ledger: CapacityLedger) -> None:
        for name, value in (
            ("advertised", ledger.capacity),
            ("runner_side", ledger.runner_side),
            ("workflow_side", ledger.workflow_side),
            ("max_runners_live", ledger.max_runners),
            ("ready_pairs", ledger.ready_pairs),
            ("starved_runners", ledger.starved_runners),
            ("idle_runners", ledger.idle_runners),
        ):
            self._cap_metric(name).set(value)
        self._cap_metric("real_pods_bound", role=Role.RUNNER.value).set(ledger.real_runners_bound)
        self._cap_metric("real_pods_bound", role=Role.WORKFLOW.value).set(
            ledger.real_workflows_bound
        )
        self._cap_metric("placeholders_counted", role=Role.RUNNER.value).set(
            ledger.runner_placeholders
        )
        self._cap_metric("placeholders_counted", role=Role.WORKFLOW.value).set(
            ledger.workflow_placeholders
        )

    def observe_warm_pool(self, pairs: int, load: float | None) -> None:
        self._cap_metric("warm_pool_pairs").set(pairs)
        if load is not None:
            self._cap_metric("warm_pool_load").set(load)

    def observe_pair_counts(self, counts: Mapping[PairState, int]) -> None:
        for state in PairState:
            self._cap_metric("pairs", state=state.value).set(counts.get(state, 0))

    def record_transition(self, event: TransitionEvent) -> None:
        self._cap_metric(
            "transitions_total",
            **{
                "from": event.source.value if event.source is not None else NEW_PAIR,
                "to": event.target.value,
                "kind": event.kind.value,
                "reason": reason_category(event.reason).value,
            },
        ).inc()

    def record_reconcile(self, duration: float, *, ok: bool, subscriber_errors: int = 0) -> None:
        self._cap_metric("reconcile_duration_seconds").observe(max(0.0, duration))
        if ok:
            self._cap_metric("last_successful_reconcile_timestamp_seconds").set(self.clock.now())
        else:
            self._cap_metric("reconcile_errors_total").inc()
        if subscriber_errors:
            self._cap_metric("subscriber_errors_total").inc(subscriber_errors)

    def record_hud_request(self, duration: float, *, error_kind: str | None = None) -> None:
        """One HUD request; ``error_kind`` is None on success, else one of HUD_ERROR_KINDS."""
        self._cap_metric("hud_request_duration_seconds").observe(max(0.0, duration))
        if error_kind is not None:
            kind = error_kind if error_kind in HUD_ERROR_KINDS else "other"
            self._cap_metric("hud_errors_total", kind=kind).inc()

    def record_api_write(self, verb: str, count: int = 1) -> None:
        """Called by the placeholder writer per Kubernetes API write it makes."""
        value = verb.lower() if verb.lower() in API_WRITE_VERBS else "other"
        self._cap_metric("placeholder_api_writes_total", verb=value).inc(count)

    def record_orphan_deletions(self, count: int = 1) -> None:
        self._cap_metric("orphan_deletions_total").inc(count)

    def record_lease_renewals(self, pods: int) -> None:
        self._cap_metric("lease_renewals_total").inc(pods)

    def record_statistics_refresh(self, *, ok: bool) -> None:
        self._cap_metric("statistics_refreshes_total", result="ok" if ok else "error").inc()

    def record_background_failure(self, task: str) -> None:
        value = task if task in BACKGROUND_TASKS else "other"
        self._cap_metric("background_task_failures_total", task=value).inc()

    def record_undecodable_message(self) -> None:
        self._cap_metric("undecodable_messages_total").inc()

    def record_owner(self, owner: bool) -> None:
        self._cap_metric("owner").set(1 if owner else 0)

    # -- internals -------------------------------------------------------------------------

    def _job_labels(self, msg: Any) -> dict[str, str]:
        ref = str(_field(msg, "jobWorkflowRef", "") or "")
        name, target = parse_workflow_ref(ref)
        return {
            "enterprise": self.identity.enterprise,
            # Job metrics take organization/repository from the job, not the config URL.
            "organization": str(_field(msg, "ownerName", "") or ""),
            "repository": str(_field(msg, "repositoryName", "") or ""),
            "job_name": str(_field(msg, "jobDisplayName", "") or ""),
            "event_name": str(_field(msg, "eventName", "") or ""),
            "job_workflow_ref": ref,
            "job_workflow_name": name,
            "job_workflow_target": target,
        }

    def _arc_child(self, name: str, values: Mapping[str, str]) -> Any | None:
        installed = self._arc.get(name)
        if installed is None:
            return None  # not selected by a custom config
        if not installed.labels:  # a custom config may list a metric with no labels
            return installed.metric
        # A configured label the source does not provide gets "" (ARC's rule).
        return installed.metric.labels(*(values.get(label, "") for label in installed.labels))

    def _set(self, name: str, values: Mapping[str, str], value: float) -> None:
        child = self._arc_child(name, values)
        if child is not None:
            child.set(value)

    def _inc(self, name: str, values: Mapping[str, str]) -> None:
        child = self._arc_child(name, values)
        if child is not None:
            child.inc()

    def _observe(self, name: str, values: Mapping[str, str], value: float) -> None:
        child = self._arc_child(name, values)
        if child is not None:
            child.observe(value)

    def _cap_metric(self, short: str, **labels: str) -> Any:
        metric = self._cap[PREFIX + short]
        return metric.labels(**self._scale_set, **labels)

    def _init_capacity_series(self) -> None:
        """Create every bounded series at 0 so dashboards and rate() see them from the start."""
        for family in CAPACITY_FAMILIES:
            extra = family.labels[len(_CAP_S) :]
            if not extra:
                self._cap[family.name].labels(**self._scale_set)
        self.observe_pair_counts({})
        for role in Role:
            self._cap_metric("real_pods_bound", role=role.value)
            self._cap_metric("placeholders_counted", role=role.value)
        for kind in HUD_ERROR_KINDS:
            self._cap_metric("hud_errors_total", kind=kind)
        for direction in POLL_CUT_DIRECTIONS:
            self._cap_metric("long_poll_cuts_total", direction=direction)
        for verb in API_WRITE_VERBS:
            self._cap_metric("placeholder_api_writes_total", verb=verb)
        for task in BACKGROUND_TASKS:
            self._cap_metric("background_task_failures_total", task=task)

    def arc_families(self) -> dict[str, tuple[str, ...]]:
        """Installed ARC families and their label names (for tests and start-up logs)."""
        return {name: inst.labels for name, inst in self._arc.items()}


def _go_unix(seconds: int | None) -> int:
    """Go's ``Time.Unix()`` of a possibly-zero time: the zero time is year 1."""
    return seconds if seconds is not None else _GO_ZERO_UNIX


_GO_ZERO_UNIX = -62135596800

_created_disabled = False


def _disable_created_series() -> None:
    """ARC's Go client emits no ``*_created`` series; prometheus_client does by default.

    The switch is process-wide in prometheus_client; the listener process owns its metrics,
    so turning it off once is right here.
    """
    global _created_disabled
    if not _created_disabled:
        from prometheus_client import disable_created_metrics

        disable_created_metrics()  # type: ignore[no-untyped-call]
        _created_disabled = True


# --- 4. the subscriber -------------------------------------------------------------------------


class MetricsSubscriber:
    """Reconciler subscriber: counters from events and commands, gauges from each step.

    ``counts`` (e.g. ``lambda: reconciler.store.counts()``) may be given at construction,
    because the subscriber must exist before the reconciler that it observes.
    """

    def __init__(
        self,
        metrics: PrometheusMetrics,
        *,
        counts: Callable[[], Mapping[PairState, int]] | None = None,
    ) -> None:
        self.metrics = metrics
        self.counts = counts

    def notify(self, events: Sequence[TransitionEvent], commands: Sequence[Command]) -> None:
        for event in events:
            self.metrics.record_transition(event)
        orphans = sum(1 for c in commands if isinstance(c, DeleteOrphan))
        renewed = sum(len(c.pods) for c in commands if isinstance(c, RenewLease))
        if orphans:
            self.metrics.record_orphan_deletions(orphans)
        if renewed:
            self.metrics.record_lease_renewals(renewed)

    def observe_step(
        self,
        result: Any,
        duration: float,
        *,
        counts: Mapping[PairState, int] | None = None,
    ) -> None:
        """After ``Reconciler.step`` returned ``result`` (a StepResult) in ``duration`` s."""
        self.metrics.observe_ledger(result.ledger)
        self.metrics.observe_warm_pool(
            int(getattr(result, "warm_pairs", 0)), getattr(result, "warm_load", None)
        )
        current = counts if counts is not None else (self.counts() if self.counts else None)
        if current is not None:
            self.metrics.observe_pair_counts(current)
        self.metrics.record_reconcile(
            duration, ok=True, subscriber_errors=int(getattr(result, "subscriber_errors", 0))
        )

    def observe_failure(self, duration: float) -> None:
        """After ``Reconciler.step`` raised."""
        self.metrics.record_reconcile(duration, ok=False)


# --- 5. docs/metrics.md ------------------------------------------------------------------------

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
DOC_COMMAND = "python -m listener.metrics"


def _row(family: Family) -> str:
    labels = ", ".join(f"`{label}`" for label in family.labels) or "-"
    return f"| `{family.name}` | {family.kind} | {labels} | {family.when} | {family.help} |"


def render_metrics_doc() -> str:
    """The whole of docs/metrics.md, from the family definitions above."""
    lines = [
        "# Metrics",
        "",
        f"<!-- Generated by `{DOC_COMMAND}` from listener/metrics.py. Do not edit. -->",
        "",
        "Served on `metrics_addr` at `metrics_endpoint` of the listener config, from a fresh",
        "registry: no `process_*` or `python_*` series, like ARC's listener. ARC's controller",
        "chart leaves listener metrics **off** by default (empty `metrics_addr`): then",
        "`/metrics` answers 404 while `/healthz`, `/readyz` and `/debug/pairs` are still served",
        "on `:8080`. Turn them on with the controller's `metrics.listenerAddr` and",
        "`metrics.listenerEndpoint` ([quick start](quickstart.md) step 8).",
        "",
        "## ARC listener metrics (unchanged)",
        "",
        "Same names, types, help strings, labels and buckets as ARC's listener, so existing",
        "dashboards keep working. Scale-set labels come from the config (`name` = the",
        "EphemeralRunnerSet name, `namespace` = its namespace, `enterprise` / `organization` /",
        "`repository` from `configure_url`). Job labels take `organization` and `repository` from",
        "the job message (`ownerName`, `repositoryName`), `job_name` = `jobDisplayName`,",
        "`event_name` = `eventName`, `job_result` = `result`.",
        "",
        "| metric | type | default labels | value / when | help |",
        "|---|---|---|---|---|",
        *(_row(f) for f in ARC_FAMILIES),
        f"| `{PROMHTTP_ERRORS}` | counter | `cause` | stays 0 unless exposition fails "
        "(`encoding` / `gathering`) | Total number of internal errors encountered by the "
        "promhttp metric handler. |",
        "",
        "Histogram buckets (both): " + ", ".join(f"{b:g}" for b in DEFAULT_BUCKETS) + ".",
        "",
        "### Custom set (`listenerMetrics`)",
        "",
        "When the AutoscalingRunnerSet sets `spec.listenerMetrics` (the `metrics` key of the",
        "listener config), it **replaces** the set above: only the listed `gha_*` metrics are",
        "registered, each with exactly the listed labels; unknown names (or names under the",
        "wrong kind) are logged and skipped; histogram buckets default to the list above. Extra",
        "job labels available there: "
        + ", ".join(f"`{label}`" for label in WORKFLOW_LABELS)
        + " (from `jobWorkflowRef`: the raw ref, the workflow file name without",
        "`.yml`/`.yaml`, and `heads/<branch>` / `tags/<tag>` / `pull/<n>`). A listed label a",
        'metric has no value for is exported as `""`. The capacity metrics below are always',
        "registered.",
        "",
        "## Capacity metrics",
        "",
        "All carry the scale-set labels "
        + ", ".join(f"`{label}`" for label in SCALE_SET_LABELS)
        + " plus the labels shown after them.",
        "",
        "| metric | type | extra labels | value / when | help |",
        "|---|---|---|---|---|",
    ]
    for family in CAPACITY_FAMILIES:
        extra = family.labels[len(_CAP_S) :]
        labels = ", ".join(f"`{label}`" for label in extra) or "-"
        lines.append(
            f"| `{family.name}` | {family.kind} | {labels} | {family.when} | {family.help} |"
        )
    lines += [
        "",
        "Reconcile duration buckets: " + ", ".join(f"{b:g}" for b in RECONCILE_BUCKETS) + ".",
        "HUD request buckets: " + ", ".join(f"{b:g}" for b in HUD_BUCKETS) + ".",
        "",
        "### `reason` categories of `arc_capacity_transitions_total`",
        "",
        "Transition reasons are free text (the full text is in the log line of every",
        "transition), so the label holds a bounded category: the first rule whose pattern",
        "(case-insensitive) occurs in the reason.",
        "",
        "| order | pattern | category |",
        "|---|---|---|",
    ]
    for i, (pattern, category) in enumerate(REASON_RULES, 1):
        escaped = pattern.replace("|", "\\|")
        lines.append(f"| {i} | `{escaped}` | `{category.value}` |")
    lines += [
        f"| - | anything else | `{ReasonCategory.OTHER.value}` |",
        "",
        "## Useful queries",
        "",
        "```promql",
        "# Warm slots GitHub may fill right now (advertised minus runners already busy)",
        f"{PREFIX}advertised - gha_busy_runners",
        "# Pairs that never became READY (ICE, NodePool limits, quota), per hour",
        f'increase({PREFIX}transitions_total{{to="TIMED_OUT"}}[1h])',
        "# Jobs claimed but waiting for a node (should stay 0)",
        f"{PREFIX}starved_runners > 0",
        "# The reconcile loop is stuck (no successful step for 5 minutes)",
        f"time() - {PREFIX}last_successful_reconcile_timestamp_seconds > 300",
        "```",
        "",
    ]
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=DOC_COMMAND, description="Write (or check) docs/metrics.md from listener/metrics.py."
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--output", type=Path, default=DOC_PATH)
    args = parser.parse_args(list(argv) if argv is not None else None)
    text = render_metrics_doc()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale; run `{DOC_COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


__all__ = [
    "ARC_FAMILIES",
    "CAPACITY_FAMILIES",
    "DEFAULT_BUCKETS",
    "Family",
    "MetricsConfigError",
    "MetricsSubscriber",
    "PrometheusMetrics",
    "ReasonCategory",
    "ScaleSetIdentity",
    "parse_workflow_ref",
    "reason_category",
    "render_metrics_doc",
]

if __name__ == "__main__":
    raise SystemExit(main())
