"""The metric families: ARC's ``gha_*`` set (docs/protocol.md#metrics) and the ``arc_capacity_*``
set, with the bounded label values of the capacity families (see
:mod:`listener.observability.metrics`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from state_machine.hot import HotState
from state_machine.states import PairState

MetricKind = Literal["counter", "gauge", "histogram"]

# --- 1. ARC families (docs/protocol.md#metrics) ---------------------------------------------------

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
#: The config section that lists each kind (docs/protocol.md#custom-metrics).
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
    MENDED = "mended"  # a lone survivor's missing half created again (PREEMPTED -> REQUESTED)
    UNBLOCKED = "unblocked"  # a half-placed pair released so its room completes others
    OTHER = "other"  # anything the rules below do not recognise


#: First match wins; patterns are case-insensitive and searched anywhere in the reason.
REASON_RULES: tuple[tuple[str, ReasonCategory], ...] = (
    (r"adopted", ReasonCategory.ADOPTED),
    (r"^mend\b", ReasonCategory.MENDED),
    (r"^unblock\b", ReasonCategory.UNBLOCKED),
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
BACKGROUND_TASKS = ("hud", "reconcile", "demand", "statistics", "fleet", "other")
#: ``kind`` of ``arc_capacity_actions_errors_total`` (providers/actions/retry.py failure_kind).
ACTIONS_ERROR_KINDS = (
    "transport", "throttled", "server", "conflict", "unauthorized", "client", "other",
)  # fmt: skip
#: ``kind`` of ``arc_capacity_fleet_view_errors_total`` (providers/fleet/prometheus.py).
FLEET_ERROR_KINDS = ("timeout", "connect", "http", "decode", "query", "other")
NEW_PAIR = "new"  # ``from`` label of an insert edge (no source state: a new or adopted record)

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
         "the `auto` estimate or a schedule entry; with the fleet view fresh, this cluster's "
         "part of the fleet's pool.", "per reconcile step"),
    _cap("warm_pool_load", "gauge",
         "`auto`: slots expected out of the warm pool (starting runners + pairs taken per "
         "second x time to READY), which the pool size covers with a Poisson margin; with the "
         "fleet view fresh, the fleet's (this cluster's x its healthy clusters).",
         "per reconcile step that estimated it (not with a fixed size or a schedule entry)"),
    _cap("hot_slots", "gauge",
         "Hot slots (hotRunners: an idle registered runner + a workflow placeholder) by state; "
         "only `HOT` ones are advertised.",
         "per reconcile step while hot slots are kept; `state` is one of "
         + ", ".join(f"`{s.value}`" for s in HotState if s is not HotState.RELEASED),
         ("state",)),
    _cap("hot_slot_jobs_total", "counter",
         "Jobs that started on a hot slot (its runner took the job: a move to TAKEN).",
         "+1 per hot-slot transition event to TAKEN"),
    _cap("hot_slot_transitions_total", "counter",
         "Hot slot state transitions (the hot-slot table's edges; the reason is in the log "
         "line).",
         "+1 per hot-slot transition event; `from` is a state or `new` (a new or adopted "
         "slot), `to` a state, `kind` is `active`/`passive`", ("from", "to", "kind")),
    _cap("starved_runners", "gauge",
         "Bound runner pods whose workflow pod exists but is not bound: claimed jobs waiting "
         "for a node.", "per reconcile step"),
    _cap("idle_runners", "gauge",
         "Registered runners without a job (minRunners' or hot slots'; GitHub hands them "
         "jobs within the advertised capacity).", "per reconcile step"),
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
    _cap("ready", "gauge",
         "1 while /readyz answers 200 (message session open and, capacity-aware, the Lease "
         "held and the watch caches synced and fresh), else 0.",
         "read at each scrape, from the same check as `/readyz`"),
    _cap("failing_closed", "gauge",
         "1 while the Kubernetes watches have been down longer than recalculateInterval: the "
         "advertised capacity is held at the fail-closed value and no decision is taken.",
         "per reconcile attempt (every `recalculateInterval`, also while failing closed)"),
    _cap("workflow_placement_from_hook_template", "gauge",
         "1 while workflow placeholders are placed like the hook template's workflow pods "
         "(read from the ConfigMap the runner template mounts), 0 while they fall back to the "
         "runner template's placement because it cannot be read (the log says why), and "
         "until the first reconcile step.",
         "per reconcile step (capacity-aware only)"),
    _cap("demand_queued_jobs", "gauge",
         "Queued jobs for this scale set's labels, the configured demand sources combined "
         "(what the reconciler sees); NaN while no source answers (decide uses the floor).",
         "read at each scrape (capacity-aware only)"),
    _cap("demand_source_up", "gauge",
         "1 while this demand source answers, 0 while it fails or has not answered yet.",
         "read at each scrape, one series per configured source (capacity-aware only); "
         "`source` is `statistics`, `hud`, `github` or `http`", ("source",)),
    _cap("fleet_member", "gauge",
         "1 while this process owns the scale set's Lease in capacity-aware mode, else 0; "
         "`fleet` is the key its peers in other clusters share (`fleetView.fleet`, default the "
         "scale set's name). The fleet recording rules (config/monitoring/fleet-rules.yaml) "
         "join on it.",
         "on every Lease acquire and release (capacity-aware only)", ("fleet",)),
    _cap("fleet_view_enabled", "gauge", "1 while `fleetView.enabled` is set, else 0.",
         "at start"),
    _cap("fleet_view_fresh", "gauge",
         "1 while the fleet view is fresh and this cluster builds for its share of it, 0 "
         "while it acts alone (view off, not read yet, unreachable or older than "
         "`fleetView.maxAge`).",
         "read at each scrape (with `fleetView` on)"),
    _cap("fleet_view_age_seconds", "gauge",
         "Age of this cluster's own row in the fleet view (scrape + rule evaluation + the "
         "store's delay + the poll); NaN while there is none.",
         "read at each scrape (with `fleetView` on)"),
    _cap("fleet_share", "gauge",
         "1 / the fleet's healthy clusters: queued jobs and the warm pool are split exactly "
         "across them (1 while acting alone).",
         "read at each scrape (with `fleetView` on)"),
    _cap("fleet_view_errors_total", "counter",
         "Fleet view reads that failed (the listener acts alone while no fresh view is read).",
         "read at each scrape; `kind` is one of " + ", ".join(f"`{k}`" for k in FLEET_ERROR_KINDS),
         ("kind",)),
    # Queue metrics ARC's listener does not export (ARC issues #4429/#4431, PR #4430 proposes
    # gha_available_jobs / gha_acquired_jobs): project-prefixed, so a later ARC release with
    # those gha_* names cannot collide with a custom `listenerMetrics` set.
    _cap("available_jobs", "gauge",
         "Jobs matching the scale set's labels that no scale set has acquired yet "
         "(statistics totalAvailableJobs).",
         "`totalAvailableJobs`, on the initial session and every message with statistics"),
    _cap("acquired_jobs", "gauge",
         "Jobs this scale set acquired that are not assigned to it yet (statistics "
         "totalAcquiredJobs).",
         "`totalAcquiredJobs`, same cadence"),
    _cap("job_queue_duration_seconds", "histogram",
         "Time a workflow job waited in GitHub's queue before it was assigned to this scale "
         "set (in seconds).",
         "per JobStarted with both times set: scaleSetAssignTime - queueTime, whole seconds "
         "(ARC's job buckets)", (), DEFAULT_BUCKETS),
    _cap("actions_errors_total", "counter",
         "Failed calls to the Actions service (admin token chain, sessions, messages, acquire "
         "jobs), each failed attempt of a retried call included.",
         "+1 per failed attempt; `kind` is one of "
         + ", ".join(f"`{k}`" for k in ACTIONS_ERROR_KINDS)
         + " (429 = `throttled`, 5xx = `server`, 409 = `conflict`, 401 = `unauthorized`: an "
         "expired queue token, refreshed at once)", ("kind",)),
)  # fmt: skip

_CAPACITY = {f.name: f for f in CAPACITY_FAMILIES}
