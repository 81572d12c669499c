"""Metrics: ARC's families exactly as ARC exports them, custom sets, and the capacity metrics."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from listener.observability.metrics import (
    ARC_FAMILIES,
    CAPACITY_FAMILIES,
    DEFAULT_BUCKETS,
    MetricsConfigError,
    MetricsSubscriber,
    PrometheusMetrics,
    ReasonCategory,
    ScaleSetIdentity,
    parse_workflow_ref,
    reason_category,
    unix_seconds,
)
from reconciler.capacity import CapacityLedger
from reconciler.clock import ManualClock
from reconciler.controller import Output
from reconciler.ports import DeleteOrphan, PodRef, RenewLease
from reconciler.reconciler import StepResult
from reconciler.warm_pool import WarmPoolSize
from scaleset.carry_out import CarriedOut
from state_machine.events import Kind, TransitionEvent
from state_machine.states import PairState

S_LABELS = {"enterprise", "organization", "repository", "name", "namespace"}
J_LABELS = {"enterprise", "organization", "repository", "job_name", "event_name"}

IDENTITY = ScaleSetIdentity.from_config_url(
    "https://github.com/my-org", name="arc-runners", namespace="arc-runners"
)
SCALE_SET = {
    "enterprise": "",
    "organization": "my-org",
    "repository": "",
    "name": "arc-runners",
    "namespace": "arc-runners",
}


def make(config: dict[str, Any] | None = None, now: float = 1_700_000_000.0) -> PrometheusMetrics:
    return PrometheusMetrics(
        IDENTITY, min_runners=1, max_runners=20, clock=ManualClock(now), metrics_config=config
    )


def scrape(metrics: PrometheusMetrics) -> dict[str, Any]:
    text = generate_latest(metrics.registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(metrics: PrometheusMetrics, sample_name: str, **labels: str) -> float | None:
    for family in scrape(metrics).values():
        for sample in family.samples:
            if sample.name == sample_name and all(
                sample.labels.get(k) == v for k, v in labels.items()
            ):
                return float(sample.value)
    return None


def job(**overrides: Any) -> SimpleNamespace:
    """A job message with the attribute names of providers/actions/models.py (snake_case)."""
    fields: dict[str, Any] = {
        "message_type": "JobStarted",
        "owner_name": "octo-org",
        "repository_name": "octo-repo",
        "job_display_name": "build (ubuntu)",
        "event_name": "push",
        "job_workflow_ref": "octo-org/octo-repo/.github/workflows/ci.yaml@refs/heads/main",
        "scale_set_assign_time": datetime(2026, 1, 1, 12, 0, 0, 900_000, tzinfo=UTC),
        "runner_assign_time": datetime(2026, 1, 1, 12, 0, 42, 100_000, tzinfo=UTC),
        "finish_time": datetime(2026, 1, 1, 12, 5, 42, tzinfo=UTC),
        "result": "succeeded",
    }
    fields.update(overrides)
    return SimpleNamespace(**fields)


# --- ARC families ----------------------------------------------------------------------------


def test_default_registry_holds_exactly_arcs_families_and_no_process_metrics() -> None:
    families = scrape(make())
    gha = {name for name in families if name.startswith("gha_")}
    # prometheus_client names counter families without the _total suffix
    expected = {f.name.removesuffix("_total") for f in ARC_FAMILIES}
    assert gha == expected
    assert not [n for n in families if n.startswith(("process_", "python_", "go_"))]
    assert "promhttp_metric_handler_errors" in families


@pytest.mark.parametrize("family", ARC_FAMILIES, ids=lambda f: f.name)
def test_arc_family_type_help_and_labels_match_protocol(family: Any) -> None:
    metrics = make()
    metrics.record_statistics(SimpleNamespace(total_assigned_jobs=3))
    metrics.record_desired_runners(4)
    metrics.record_job_started(job())
    metrics.record_job_completed(job(message_type="JobCompleted"))
    scraped = scrape(metrics)[family.name.removesuffix("_total")]
    assert scraped.type == family.kind
    assert scraped.documentation == family.help
    sample = next(s for s in scraped.samples if not s.name.endswith(("_bucket", "_sum")))
    expected = {
        "gauge": S_LABELS,
        "counter": J_LABELS | ({"job_result"} if "completed" in family.name else set()),
        "histogram": J_LABELS | ({"job_result"} if "execution" in family.name else set()),
    }[family.kind]
    assert set(sample.labels) == expected


def test_histograms_use_arcs_buckets() -> None:
    metrics = make()
    metrics.record_job_started(job())
    buckets = [
        float(s.labels["le"])
        for s in scrape(metrics)["gha_job_startup_duration_seconds"].samples
        if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
    ]
    assert buckets == [float(b) for b in DEFAULT_BUCKETS]
    assert len(DEFAULT_BUCKETS) == 45 and DEFAULT_BUCKETS[0] == 0.01 and DEFAULT_BUCKETS[-1] == 3600


def test_help_strings_are_arcs_verbatim() -> None:
    helps = {f.name: f.help for f in ARC_FAMILIES}
    assert helps["gha_assigned_jobs"] == "Number of jobs assigned to this scale set."
    assert helps["gha_running_jobs"] == "Number of jobs running (or about to be run)."
    assert helps["gha_job_startup_duration_seconds"] == (
        "Time spent waiting for workflow job to get started on the runner owned by the scale "
        "set (in seconds)."
    )


def test_statistics_set_the_five_gauges_with_scale_set_labels() -> None:
    metrics = make()
    stats = {
        "totalAssignedJobs": 7,
        "totalRunningJobs": 5,
        "totalRegisteredRunners": 6,
        "totalBusyRunners": 5,
        "totalIdleRunners": 1,
        "totalAvailableJobs": 99,
    }
    metrics.record_statistics(stats)
    assert value(metrics, "gha_assigned_jobs", **SCALE_SET) == 7
    assert value(metrics, "gha_running_jobs", **SCALE_SET) == 5
    assert value(metrics, "gha_registered_runners", **SCALE_SET) == 6
    assert value(metrics, "gha_busy_runners", **SCALE_SET) == 5
    assert value(metrics, "gha_idle_runners", **SCALE_SET) == 1
    # ARC's gha_* set stays ARC's; the queue depth is the project's own family (issue 32).
    names = [n for n in scrape(metrics) if "available" in n or "acquired" in n]
    assert names == ["arc_capacity_available_jobs", "arc_capacity_acquired_jobs"]


def test_statistics_from_the_actions_wire_model() -> None:
    models = pytest.importorskip("providers.actions.models")
    stats = models.Statistics.model_validate({"totalAssignedJobs": 4, "totalBusyRunners": 2})
    metrics = make()
    metrics.record_statistics(stats)
    assert value(metrics, "gha_assigned_jobs", **SCALE_SET) == 4
    assert value(metrics, "gha_busy_runners", **SCALE_SET) == 2


def test_min_and_max_runners_are_set_once_at_start_and_desired_per_call() -> None:
    metrics = make()
    assert value(metrics, "gha_min_runners", **SCALE_SET) == 1
    assert value(metrics, "gha_max_runners", **SCALE_SET) == 20
    metrics.record_desired_runners(9)
    assert value(metrics, "gha_desired_runners", **SCALE_SET) == 9


def test_job_labels_take_organization_and_repository_from_the_job() -> None:
    metrics = make()
    metrics.record_job_started(job())
    labels = {
        "enterprise": "",
        "organization": "octo-org",
        "repository": "octo-repo",
        "job_name": "build (ubuntu)",
        "event_name": "push",
    }
    assert value(metrics, "gha_started_jobs_total", **labels) == 1


def test_startup_duration_is_whole_seconds_of_truncated_timestamps() -> None:
    metrics = make()
    # 12:00:00.9 -> 12:00:42.1 is 41.2 s, but ARC truncates each side first: 42 - 0 = 42
    metrics.record_job_started(job())
    assert value(metrics, "gha_job_startup_duration_seconds_sum") == 42
    assert value(metrics, "gha_job_startup_duration_seconds_bucket", le="40.0") == 0
    assert value(metrics, "gha_job_startup_duration_seconds_bucket", le="50.0") == 1


def test_completed_job_counts_and_times_execution_with_result_label() -> None:
    metrics = make()
    metrics.record_job_completed(job(message_type="JobCompleted", result="failed"))
    assert value(metrics, "gha_completed_jobs_total", job_result="failed") == 1
    assert value(metrics, "gha_job_execution_duration_seconds_sum", job_result="failed") == 300


def test_completed_job_without_runner_assign_time_is_not_counted() -> None:
    metrics = make()
    zero = datetime(1, 1, 1, tzinfo=UTC)
    metrics.record_job_completed(job(result="canceled", runner_assign_time=zero))
    metrics.record_job_completed({"result": "canceled", "runnerAssignTime": "0001-01-01T00:00:00Z"})
    assert value(metrics, "gha_completed_jobs_total") is None
    assert value(metrics, "gha_job_execution_duration_seconds_count") is None


def test_wire_timestamps_with_seven_fractional_digits_parse() -> None:
    assert unix_seconds("2026-01-01T00:00:01.9999999Z") == 1767225601
    assert unix_seconds("0001-01-01T00:00:00Z") is None
    assert unix_seconds(None) is None
    assert unix_seconds("not a time") is None


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("o/r/.github/workflows/ci.yml@refs/heads/main", ("ci", "heads/main")),
        ("o/r/.github/workflows/rel.yaml@refs/tags/v1.2.3", ("rel", "tags/v1.2.3")),
        ("o/r/.github/workflows/pr.yml@refs/pull/42/merge", ("pr", "pull/42")),
        ("o/r/.github/workflows/ci.yml@refs/heads/feature/x", ("ci", "heads/feature/x")),
        ("o/r/.github/workflows/ci.yml@0123abcd", ("ci", "")),
        ("o/r/.github/workflows/ci.yml", ("", "")),
        ("a@b@c", ("", "")),
        ("", ("", "")),
    ],
)
def test_workflow_ref_parsing_follows_arc(ref: str, expected: tuple[str, str]) -> None:
    assert parse_workflow_ref(ref) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/my-org", ("", "my-org", "")),
        ("https://github.com/my-org/my-repo/", ("", "my-org", "my-repo")),
        ("https://github.com/enterprises/acme", ("acme", "", "")),
        ("https://ghes.example.com/Enterprises/acme", ("acme", "", "")),
        ("https://github.com/a/b/c", ("", "", "")),
    ],
)
def test_scale_set_labels_from_config_url(url: str, expected: tuple[str, str, str]) -> None:
    identity = ScaleSetIdentity.from_config_url(url, name="n", namespace="ns")
    assert (identity.enterprise, identity.organization, identity.repository) == expected


# --- custom set (docs/protocol.md#custom-metrics) -------------------------------------------------


def test_custom_config_replaces_the_default_set(caplog: pytest.LogCaptureFixture) -> None:
    config = {
        "counters": {
            "gha_started_jobs_total": {"labels": ["repository", "job_workflow_name", "name"]},
            "gha_made_up_total": {"labels": ["repository"]},
        },
        "gauges": {"gha_assigned_jobs": {"labels": ["name"]}},
        "histograms": {
            "gha_job_startup_duration_seconds": {
                "labels": ["job_workflow_target"],
                "buckets": [1, 60],
            }
        },
    }
    with caplog.at_level(logging.ERROR, logger="listener.observability.metrics"):
        metrics = make(config)
    assert "gha_made_up_total" in caplog.text
    gha = {name for name in scrape(metrics) if name.startswith("gha_")}
    assert gha == {"gha_started_jobs", "gha_assigned_jobs", "gha_job_startup_duration_seconds"}
    metrics.record_statistics({"totalAssignedJobs": 2, "totalRunningJobs": 1})
    metrics.record_job_started(job())
    metrics.record_desired_runners(3)  # not configured: silently not exported
    # a configured label the metric has no value for is exported as ""
    assert (
        value(
            metrics,
            "gha_started_jobs_total",
            repository="octo-repo",
            job_workflow_name="ci",
            name="",
        )
        == 1
    )
    assert value(metrics, "gha_assigned_jobs", name="arc-runners") == 2
    buckets = [
        s.labels["le"]
        for s in scrape(metrics)["gha_job_startup_duration_seconds"].samples
        if s.name.endswith("_bucket")
    ]
    assert buckets == ["1.0", "60.0", "+Inf"]
    assert (
        value(metrics, "gha_job_startup_duration_seconds_count", job_workflow_target="heads/main")
        == 1
    )


def test_custom_histogram_without_buckets_gets_arcs_defaults() -> None:
    metrics = make({"histograms": {"gha_job_execution_duration_seconds": {"labels": []}}})
    metrics.record_job_completed(job())
    count = sum(
        1
        for s in scrape(metrics)["gha_job_execution_duration_seconds"].samples
        if s.name.endswith("_bucket")
    )
    assert count == len(DEFAULT_BUCKETS) + 1


def test_a_name_under_the_wrong_kind_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="listener.observability.metrics"):
        metrics = make({"counters": {"gha_assigned_jobs": {"labels": ["name"]}}})
    assert "gha_assigned_jobs" in caplog.text
    assert not [n for n in scrape(metrics) if n.startswith("gha_")]


@pytest.mark.parametrize(
    "config",
    [
        {"gauges": {"gha_assigned_jobs": {"labels": ["bad-label"]}}},
        {"histograms": {"gha_job_startup_duration_seconds": {"buckets": [60, 1]}}},
        {"gauges": {"gha_assigned_jobs": {"labels": "name"}}},
    ],
)
def test_an_uninstallable_custom_config_is_one_clear_error(config: dict[str, Any]) -> None:
    with pytest.raises(MetricsConfigError, match="metrics"):
        make(config)


# --- capacity metrics ------------------------------------------------------------------------


def event(
    source: PairState | None, target: PairState, reason: str, kind: Kind = Kind.PASSIVE
) -> TransitionEvent:
    return TransitionEvent(
        pair_id="abcde-1",
        scale_set="arc-runners",
        source=source,
        target=target,
        kind=kind,
        reason=reason,
        at=10.0,
        version=2,
        runner_pod="arc-runners-ph-abcde-1-r",
        workflow_pod="arc-runners-ph-abcde-1-w",
    )


def carried(
    ledger: CapacityLedger | None = None,
    *,
    warm_pool: WarmPoolSize | None = None,
    errors: int = 0,
    duration: float = 0.001,
) -> CarriedOut:
    """A step with ``ledger`` (None: a step that raised) as scaleset/carry_out.py hands it
    to the observers."""
    if ledger is None:
        return CarriedOut(Output(error=RuntimeError("step failed")), duration=duration)
    result = StepResult((), (), ledger, warm_pool=warm_pool)
    return CarriedOut(Output(ledger.capacity, result), errors, duration, advertised=ledger.capacity)


LEDGER = CapacityLedger(
    capacity=3,
    runner_side=4,
    workflow_side=3,
    max_runners=10,
    ready_pairs=2,
    real_runners_bound=2,
    real_workflows_bound=1,
    runner_placeholders=2,
    workflow_placeholders=2,
    starved_runners=1,
    idle_runners=0,
)


def test_capacity_series_exist_at_zero_before_the_first_step() -> None:
    metrics = make()
    for state in PairState:
        assert value(metrics, "arc_capacity_pairs", state=state.value, **SCALE_SET) == 0
    assert value(metrics, "arc_capacity_advertised", **SCALE_SET) == 0
    assert value(metrics, "arc_capacity_long_poll_cuts_total", direction="drop") == 0
    assert value(metrics, "arc_capacity_hud_errors_total", kind="timeout") == 0


def test_a_carried_out_step_sets_gauges_from_the_ledger_and_the_store() -> None:
    metrics = make(now=1_800_000_000.0)
    subscriber = MetricsSubscriber(
        metrics, counts=lambda: {PairState.READY: 2, PairState.REQUESTED: 1}
    )
    subscriber.observe(carried(LEDGER, errors=1, duration=0.004))
    assert value(metrics, "arc_capacity_advertised", **SCALE_SET) == 3
    assert value(metrics, "arc_capacity_runner_side") == 4
    assert value(metrics, "arc_capacity_workflow_side") == 3
    assert value(metrics, "arc_capacity_max_runners_live") == 10
    assert value(metrics, "arc_capacity_ready_pairs") == 2
    assert value(metrics, "arc_capacity_starved_runners") == 1
    assert value(metrics, "arc_capacity_idle_runners") == 0
    assert value(metrics, "arc_capacity_real_pods_bound", role="workflow") == 1
    assert value(metrics, "arc_capacity_placeholders_counted", role="runner") == 2
    assert value(metrics, "arc_capacity_pairs", state="READY") == 2
    assert value(metrics, "arc_capacity_pairs", state="REQUESTED") == 1
    assert value(metrics, "arc_capacity_pairs", state="QUEUED") == 0
    assert value(metrics, "arc_capacity_reconcile_duration_seconds_count") == 1
    assert (
        value(metrics, "arc_capacity_last_successful_reconcile_timestamp_seconds")
        == 1_800_000_000.0
    )
    assert value(metrics, "arc_capacity_subscriber_errors_total") == 1
    assert value(metrics, "arc_capacity_reconcile_errors_total") == 0


def test_the_warm_pool_size_and_auto_load_follow_each_step() -> None:
    metrics = make()
    subscriber = MetricsSubscriber(metrics)
    subscriber.observe(carried(LEDGER, warm_pool=WarmPoolSize(3, "auto", load=1.25)))
    assert value(metrics, "arc_capacity_warm_pool_pairs", **SCALE_SET) == 3
    assert value(metrics, "arc_capacity_warm_pool_load", **SCALE_SET) == 1.25
    # a schedule entry took over: the size follows, the last estimate is kept
    subscriber.observe(carried(LEDGER, warm_pool=WarmPoolSize(8, "schedule")))
    assert value(metrics, "arc_capacity_warm_pool_pairs") == 8
    assert value(metrics, "arc_capacity_warm_pool_load") == 1.25


def test_a_failed_step_counts_an_error_and_keeps_the_last_success_time() -> None:
    metrics = make(now=5.0)
    subscriber = MetricsSubscriber(metrics)
    subscriber.observe(carried(LEDGER, duration=0.01))
    metrics.clock.advance(30)  # type: ignore[attr-defined]
    subscriber.observe(carried(None, duration=0.02))
    assert value(metrics, "arc_capacity_reconcile_errors_total") == 1
    assert value(metrics, "arc_capacity_last_successful_reconcile_timestamp_seconds") == 5.0
    assert value(metrics, "arc_capacity_reconcile_duration_seconds_count") == 2


def test_transitions_are_counted_with_bounded_labels() -> None:
    metrics = make()
    subscriber = MetricsSubscriber(metrics)
    subscriber.notify(
        [
            event(None, PairState.QUEUED, "desired 3 pairs, have 1", Kind.ACTIVE),
            event(PairState.QUEUED, PairState.REQUESTED, "launch slot free", Kind.ACTIVE),
            event(
                PairState.REQUESTED,
                PairState.TIMED_OUT,
                "not READY within 300s; runner pod unschedulable: 0/3 nodes are available",
                Kind.ACTIVE,
            ),
            event(PairState.READY, PairState.PREEMPTED, "runner placeholder preempted or evicted"),
            event(
                PairState.READY, PairState.PREEMPTED, "workflow placeholder preempted or evicted"
            ),
        ],
        [],
    )
    assert (
        value(
            metrics,
            "arc_capacity_transitions_total",
            **{"from": "new", "to": "QUEUED", "kind": "active", "reason": "demand"},
        )
        == 1
    )
    assert value(metrics, "arc_capacity_transitions_total", to="REQUESTED", reason="launch") == 1
    assert value(metrics, "arc_capacity_transitions_total", to="TIMED_OUT", reason="timeout") == 1
    assert (
        value(
            metrics,
            "arc_capacity_transitions_total",
            to="PREEMPTED",
            kind="passive",
            reason="preempted",
        )
        == 2
    )


def test_commands_count_orphan_deletions_and_renewed_pods() -> None:
    metrics = make()
    pod_a, pod_b = PodRef("arc-runners", "a"), PodRef("arc-runners", "b")
    MetricsSubscriber(metrics).notify(
        [],
        [
            DeleteOrphan(pod_a, "lease expired"),
            DeleteOrphan(pod_b, "left by instance zzzzz"),
            RenewLease("abcde-1", (pod_a, pod_b), 99.0),
        ],
    )
    assert value(metrics, "arc_capacity_orphan_deletions_total") == 2
    assert value(metrics, "arc_capacity_lease_renewals_total") == 2


def test_poll_cuts_hud_requests_and_api_writes_use_fixed_label_values() -> None:
    metrics = make()
    metrics.record_poll_cut("drop")
    metrics.record_poll_cut("UP")
    metrics.record_poll_cut("sideways")
    metrics.record_hud_request(0.2)
    metrics.record_hud_request(5.0, error_kind="timeout")
    metrics.record_hud_request(0.1, error_kind="a brand new failure")
    metrics.record_api_write("create", 2)
    metrics.record_api_write("DELETE")
    metrics.record_api_write("update")
    assert value(metrics, "arc_capacity_long_poll_cuts_total", direction="drop") == 1
    assert value(metrics, "arc_capacity_long_poll_cuts_total", direction="rise") == 1
    assert value(metrics, "arc_capacity_long_poll_cuts_total", direction="other") == 1
    assert value(metrics, "arc_capacity_hud_request_duration_seconds_count") == 3
    assert value(metrics, "arc_capacity_hud_errors_total", kind="timeout") == 1
    assert value(metrics, "arc_capacity_hud_errors_total", kind="other") == 1
    assert value(metrics, "arc_capacity_placeholder_api_writes_total", verb="create") == 2
    assert value(metrics, "arc_capacity_placeholder_api_writes_total", verb="delete") == 1
    assert value(metrics, "arc_capacity_placeholder_api_writes_total", verb="other") == 1


# Reasons as sync.py and decide.py write them today (free text, some with numbers in them).
REASONS = {
    "desired 4 pairs, have 2": ReasonCategory.DEMAND,
    "launch slot free": ReasonCategory.LAUNCH,
    "both pods Running": ReasonCategory.RUNNING,
    "runner pod Running, the other not yet": ReasonCategory.RUNNING,
    "the Running pod's node stopped accepting it": ReasonCategory.NODE_BLOCKED,
    "a pod sits on a node that no longer accepts it": ReasonCategory.NODE_BLOCKED,
    "runner placeholder preempted or evicted": ReasonCategory.PREEMPTED,
    "workflow placeholder ended by itself (Succeeded)": ReasonCategory.ENDED,
    "runner placeholder deleted": ReasonCategory.DELETED,
    "workflow placeholder deleted": ReasonCategory.DELETED,
    "the Running pod vanished": ReasonCategory.DELETED,
    "a placeholder was lost": ReasonCategory.DELETED,
    "not READY within 300s; never observed: workflow pod; Karpenter: InsufficientCapacity": (
        ReasonCategory.TIMEOUT
    ),
    "survivor unclaimed for 600s": ReasonCategory.SURVIVOR_EXPIRED,
    "the surviving pod is gone too": ReasonCategory.GONE,
    "both pods confirmed gone": ReasonCategory.GONE,
    "scale down to 1 pairs": ReasonCategory.SCALE_DOWN,
    "scale down to 3 pairs (re-paired survivor)": ReasonCategory.SCALE_DOWN,
    "scale down: a lone runner half, no pair to mend": ReasonCategory.SCALE_DOWN,
    "mend: runner half created again": ReasonCategory.MENDED,
    "mend: workflow half created again": ReasonCategory.MENDED,
    "unblock: its bound workflow half makes room for the runner halves of 8 other waiting pairs": (
        ReasonCategory.UNBLOCKED
    ),
    "adopted from instance qwert": ReasonCategory.ADOPTED,
    "adopted: both pods Running": ReasonCategory.ADOPTED,
    "something nobody wrote a rule for": ReasonCategory.OTHER,
}


@pytest.mark.parametrize(("reason", "category"), REASONS.items())
def test_reason_categories(reason: str, category: ReasonCategory) -> None:
    assert reason_category(reason) is category


def test_every_capacity_family_is_prefixed_and_labelled_with_the_scale_set() -> None:
    names = scrape(make())
    for family in CAPACITY_FAMILIES:
        assert family.name.startswith("arc_capacity_")
        assert family.name.removesuffix("_total") in names
        assert set(family.labels) >= S_LABELS


# --- contracts with the rest of the listener -------------------------------------------------


def test_the_listener_configs_own_metrics_model_is_accepted() -> None:
    arc_config = pytest.importorskip("listener.arc.config")
    import json
    from pathlib import Path

    example = json.loads(
        (Path(__file__).parents[2] / "config" / "listener-config.example.json").read_text()
    )
    example["metrics"] = {"gauges": {"gha_assigned_jobs": {"labels": ["name"]}}}
    config = arc_config.parse_listener_config(example)
    metrics = make(config.metrics)
    assert metrics.arc_families() == {"gha_assigned_jobs": ("name",)}


def test_implements_the_listener_loops_metrics_hooks() -> None:
    loop = pytest.importorskip("listener.arc.message_loop")
    hooks = [name for name in vars(loop.ListenerMetrics) if name.startswith("record_")]
    assert hooks, "listener.arc.message_loop.ListenerMetrics declares no hooks"
    metrics = make()
    for name in hooks:
        assert callable(getattr(metrics, name, None)), name


def test_advertised_can_follow_the_capacity_sink_directly() -> None:
    """With capacity-aware mode off there is no reconciler: the sink's value is what counts."""
    metrics = make()
    metrics.record_advertised(20)
    assert value(metrics, "arc_capacity_advertised", **SCALE_SET) == 20


# --- queue metrics ARC does not export (ARC #4429, #4431, PR #4430) ------------------------


def test_available_and_acquired_jobs_follow_every_statistics_update() -> None:
    """Issue 32: ARC's listener drops totalAvailableJobs / totalAcquiredJobs of the statistics
    it receives; the listener exports them per scale set."""
    metrics = make()
    metrics.record_statistics({"totalAvailableJobs": 7, "totalAcquiredJobs": 2})
    assert value(metrics, "arc_capacity_available_jobs", **SCALE_SET) == 7
    assert value(metrics, "arc_capacity_acquired_jobs", **SCALE_SET) == 2
    metrics.record_statistics(SimpleNamespace(total_available_jobs=0, total_acquired_jobs=0))
    assert value(metrics, "arc_capacity_available_jobs", **SCALE_SET) == 0
    assert value(metrics, "arc_capacity_acquired_jobs", **SCALE_SET) == 0


def test_queue_metrics_stay_when_a_custom_listener_metrics_set_drops_every_gha_family() -> None:
    metrics = make({"counters": {}, "gauges": {}, "histograms": {}})
    metrics.record_statistics({"totalAvailableJobs": 3})
    assert value(metrics, "arc_capacity_available_jobs", **SCALE_SET) == 3


@pytest.mark.parametrize(
    ("queued_at", "observed"),
    [
        # 12:00:00.9 assigned; whole seconds like ARC's startup histogram (floor of each time).
        (datetime(2026, 1, 1, 11, 58, 30, tzinfo=UTC), 90.0),
        (datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC), 0.0),
        # A clock skew that puts the queue time after the assignment is no negative wait.
        (datetime(2026, 1, 1, 12, 0, 5, tzinfo=UTC), 0.0),
    ],
)
def test_job_queue_duration_is_scale_set_assign_time_minus_queue_time(
    queued_at: datetime, observed: float
) -> None:
    metrics = make()
    metrics.record_job_started(job(queue_time=queued_at))
    assert value(metrics, "arc_capacity_job_queue_duration_seconds_count", **SCALE_SET) == 1
    assert value(metrics, "arc_capacity_job_queue_duration_seconds_sum", **SCALE_SET) == observed


@pytest.mark.parametrize("missing", ["queue_time", "scale_set_assign_time"])
def test_a_job_without_its_queue_or_assign_time_is_not_a_queue_observation(missing: str) -> None:
    """Go's zero time (or no field) would otherwise observe a wait of ~2000 years."""
    fields: dict[str, Any] = {"queue_time": datetime(2026, 1, 1, 11, 59, tzinfo=UTC)}
    fields[missing] = "0001-01-01T00:00:00Z"
    metrics = make()
    metrics.record_job_started(job(**fields))
    assert value(metrics, "arc_capacity_job_queue_duration_seconds_count", **SCALE_SET) == 0
