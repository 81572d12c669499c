"""The metrics object: one fresh registry and the hooks the listener calls."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter
from pydantic import BaseModel

from listener.observability.metrics.custom import (
    MetricsConfigError,
    _check_label_names,
    _Installed,
    _make,
    _selected_arc_families,
    parse_metrics_config,
)
from listener.observability.metrics.families import (
    _CAP_S,
    _POLL_CUT_ALIASES,
    ACTIONS_ERROR_KINDS,
    API_WRITE_VERBS,
    BACKGROUND_TASKS,
    CAPACITY_FAMILIES,
    FLEET_ERROR_KINDS,
    HUD_ERROR_KINDS,
    NEW_PAIR,
    POLL_CUT_DIRECTIONS,
    PREFIX,
    PROMHTTP_ERRORS,
    reason_category,
)
from listener.observability.metrics.labels import (
    ScaleSetIdentity,
    _field,
    parse_workflow_ref,
    unix_seconds,
)
from reconciler.capacity import CapacityLedger
from reconciler.clock import Clock
from state_machine.events import HotTransitionEvent, TransitionEvent
from state_machine.hot import HotState
from state_machine.states import PairState, Role

if TYPE_CHECKING:
    from providers.fleet.share import FleetShareSource

log = logging.getLogger(__name__)


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
        self._owner = False
        self._fleet: str | None = None
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
        for short, field in (
            ("available_jobs", "totalAvailableJobs"),
            ("acquired_jobs", "totalAcquiredJobs"),
        ):
            self._cap_metric(short).set(int(_field(stats, field, 0) or 0))

    def record_job_started(self, msg: Any) -> None:
        labels = self._job_labels(msg)
        self._inc("gha_started_jobs_total", labels)
        assigned = unix_seconds(_field(msg, "runnerAssignTime"))
        scale_set_assigned = unix_seconds(_field(msg, "scaleSetAssignTime"))
        # ARC subtracts the two Unix seconds as they are (Go zero time included).
        startup = _go_unix(assigned) - _go_unix(scale_set_assigned)
        self._observe("gha_job_startup_duration_seconds", labels, startup)
        queued = unix_seconds(_field(msg, "queueTime"))
        if queued is not None and scale_set_assigned is not None:
            # Unlike ARC's Go-zero arithmetic above, a missing time is no observation.
            waited = max(0, scale_set_assigned - queued)
            self._cap_metric("job_queue_duration_seconds").observe(waited)

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
        """The value handed to the long poll; also set from each step's ledger. With
        capacity-aware mode off it is ``max_runners``."""
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

    def observe_hot(self, by_state: Mapping[HotState, int]) -> None:
        for state in HotState:
            if state is not HotState.RELEASED:
                self._cap_metric("hot_slots", state=state.value).set(by_state.get(state, 0))

    def record_hot_transition(self, event: HotTransitionEvent) -> None:
        self._cap_metric(
            "hot_slot_transitions_total",
            **{
                "from": event.source.value if event.source is not None else NEW_PAIR,
                "to": event.target.value,
                "kind": event.kind.value,
            },
        ).inc()
        if event.target is HotState.TAKEN:
            self._cap_metric("hot_slot_jobs_total").inc()

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
        self._owner = owner
        if self._fleet is not None:
            self._cap_metric("fleet_member", fleet=self._fleet).set(1 if owner else 0)

    def set_fleet(self, fleet: str) -> None:
        """Export ``arc_capacity_fleet_member{fleet}``: this scale set's fleet key, 1 while
        this process owns the Lease (capacity-aware only)."""
        self._fleet = fleet
        self._cap_metric("fleet_member", fleet=fleet).set(1 if self._owner else 0)

    def watch_fleet_view(self, source: FleetShareSource) -> None:
        """The fleet view's freshness, age and share, and its read failures, at each scrape."""
        self._cap_metric("fleet_view_enabled").set(1)
        self._cap_metric("fleet_view_fresh").set_function(
            _safe(lambda: 1.0 if source.share().fresh else 0.0, 0.0)
        )
        self._cap_metric("fleet_view_age_seconds").set_function(
            _safe(lambda: _nan_if_none(source.share().age), math.nan)
        )
        self._cap_metric("fleet_share").set_function(
            _safe(lambda: source.share().share or 1.0, 1.0)
        )
        for kind in FLEET_ERROR_KINDS:
            self._cap_metric("fleet_view_errors_total", kind=kind)

    def record_fleet_view_error(self, kind: str) -> None:
        """One failed read of the fleet view (``kind`` outside FLEET_ERROR_KINDS: ``other``)."""
        value = kind if kind in FLEET_ERROR_KINDS else "other"
        self._cap_metric("fleet_view_errors_total", kind=value).inc()

    def record_failing_closed(self, failing: bool) -> None:
        self._cap_metric("failing_closed").set(1 if failing else 0)

    def record_workflow_placement(self, from_hook_template: bool) -> None:
        self._cap_metric("workflow_placement_from_hook_template").set(
            1 if from_hook_template else 0
        )

    def record_actions_error(self, kind: str) -> None:
        """One failed attempt of an Actions-service call (``failure_kind`` of its status)."""
        value = kind if kind in ACTIONS_ERROR_KINDS else "other"
        self._cap_metric("actions_errors_total", kind=value).inc()

    # -- read at scrape time (the value is a question, not an event) -----------------------

    def watch_readiness(self, ready: Callable[[], bool]) -> None:
        """``arc_capacity_ready`` answers ``ready()`` at each scrape: the same check as
        ``/readyz``, so an alert sees exactly what the kubelet sees."""
        self._cap_metric("ready").set_function(_safe(lambda: 1.0 if ready() else 0.0, 0.0))

    def watch_demand(
        self,
        combined: Callable[[], int | None],
        sources: Mapping[str, Callable[[], int | None]],
    ) -> None:
        """``arc_capacity_demand_queued_jobs`` answers ``combined()`` (None = no source
        answers: NaN) and ``arc_capacity_demand_source_up{source}`` whether each configured
        source answers, at each scrape."""
        self._cap_metric("demand_queued_jobs").set_function(
            _safe(lambda: _nan_if_none(combined()), math.nan)
        )
        for name, queued in sources.items():
            up = _safe(_answers(queued), 0.0)
            self._cap_metric("demand_source_up", source=name).set_function(up)

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
        for kind in ACTIONS_ERROR_KINDS:
            self._cap_metric("actions_errors_total", kind=kind)

    def arc_families(self) -> dict[str, tuple[str, ...]]:
        """Installed ARC families and their label names (for tests and start-up logs)."""
        return {name: inst.labels for name, inst in self._arc.items()}


#: A gauge's scrape-time reader (a value, not a time).
GaugeReader = Callable[[], float]


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _answers(queued: Callable[[], int | None]) -> GaugeReader:
    return lambda: 0.0 if queued() is None else 1.0


def _safe(read: GaugeReader, fallback: float) -> GaugeReader:
    """A scrape-time reader that cannot break the scrape: an exception gives ``fallback``
    (logged once per reader), never a failed /metrics answer."""
    failed = False

    def guarded() -> float:
        nonlocal failed
        try:
            return read()
        except Exception as exc:
            if not failed:
                failed = True
                log.warning(
                    "metric reader failed (%s: %s); exporting %s", type(exc).__name__, exc, fallback
                )
            return fallback

    return guarded


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
