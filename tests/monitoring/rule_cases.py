"""The `promtool test rules` cases of config/monitoring/alert-rules.yaml, as a table.

One listener pod is scraped every minute. Each :class:`Case` is a story of its series
(promtool's expanding notation: ``a+bxn`` = n+1 samples from a in steps of b, ``_`` = no
sample) and what each alert must say at some minutes: firing (with the labels of the
series) or silent. :data:`HEALTHY_DAY` is three hours of a good day, bursts and blips
included, on which every rule must stay silent; :data:`FAILURES` holds, for every rule, its
failure (silent just before its ``for`` has passed, firing after) and the look-alikes it
must not fire on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

#: The target labels of the scraped pod plus the scale-set labels the listener exports
#: (empty ones, like ``enterprise=""``, are dropped by Prometheus at ingestion).
POD = {
    "organization": "acme",
    "name": "arc-runners",
    "namespace": "arc-runners",
    "job": "arc-listeners",
    "instance": "10.0.0.7:8080",
}


def series(metric: str, values: str, **extra: str) -> dict[str, str]:
    labels = {**POD, **extra}
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{text}}}", "values": values}


def up(values: str, **extra: str) -> dict[str, str]:
    """Prometheus's own ``up`` of the listener's scrape target: the target labels only (the
    scrape job, the pod address, the scale set the PodMonitor copies from the pod's labels),
    none of the labels the listener exports."""
    labels = {k: POD[k] for k in ("job", "instance", "namespace", "name")} | extra
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"up{{{text}}}", "values": values}


def per_minute(minutes: int, value: Callable[[int], float]) -> str:
    """Explicit samples for minutes 0..minutes (for shapes the notation cannot say)."""
    return " ".join(f"{value(t):g}" for t in range(minutes + 1))


@dataclass(frozen=True)
class Expect:
    """At ``minute``, ``alert`` fires once with these extra labels, or (None) is silent.
    ``exact``: the alert carries only ``fires`` (and the rule's labels), not the pod's (a
    rule that aggregates, or reads ``absent``)."""

    minute: int
    alert: str
    fires: dict[str, str] | None = None
    exact: bool = False


@dataclass(frozen=True)
class Case:
    name: str
    input_series: list[dict[str, str]]
    expect: list[Expect] = field(default_factory=list)


# --- the healthy day ---------------------------------------------------------------------

DAY = 180  # minutes


def _bound(t: int) -> int:
    """Runner pods bound: a working session from minute 30 to 150."""
    if t < 30 or t >= 150:
        return 0
    if t < 40:
        return t - 30 + 1  # ramping up
    return 8 if t < 140 else 150 - t


def _queued(t: int) -> int:
    """A burst lands before capacity has caught up; a straggler at 90."""
    if 30 <= t < 33:
        return 6
    if 33 <= t < 36:
        return 2
    return 1 if 90 <= t < 92 else 0


def _advertised(t: int) -> int:
    """Bound runners + 2 warm pairs; during the burst the warm pairs are taken and new ones
    take three minutes to become READY."""
    return 2 if 30 <= t < 33 else _bound(t) + 2


HEALTHY_SERIES = [
    # Prometheus's own series of the scrape target: every scrape answered.
    up(f"1x{DAY}"),
    series("arc_capacity_ready", f"1x{DAY}"),
    series("arc_capacity_owner", f"1x{DAY}"),
    series("arc_capacity_failing_closed", f"0x{DAY}"),
    # 0 until the first step builds the placeholders, then placed by the hook template.
    series("arc_capacity_workflow_placement_from_hook_template", f"0 1x{DAY - 1}"),
    series("arc_capacity_max_runners_live", f"20x{DAY}"),
    series("arc_capacity_advertised", per_minute(DAY, _advertised)),
    series("arc_capacity_runner_side", per_minute(DAY, lambda t: _advertised(t) + 1)),
    series("arc_capacity_workflow_side", per_minute(DAY, _advertised)),
    series("arc_capacity_real_pods_bound", per_minute(DAY, _bound), role="runner"),
    series("arc_capacity_real_pods_bound", per_minute(DAY, _bound), role="workflow"),
    series("arc_capacity_demand_queued_jobs", per_minute(DAY, _queued)),
    series("arc_capacity_demand_source_up", f"1x{DAY}", source="statistics"),
    # The HUD blips for 3 minutes (less than the rule's 5).
    series("arc_capacity_demand_source_up", "1x69 0 0 0 1x107", source="hud"),
    series("arc_capacity_last_successful_reconcile_timestamp_seconds", f"0+60x{DAY}"),
    series("arc_capacity_reconcile_duration_seconds_count", f"0+30x{DAY}"),
    series("arc_capacity_reconcile_errors_total", "0x100 1x79"),  # one failed step
    series(
        "arc_capacity_transitions_total",
        "0x60 1x59 2x59",  # two timeouts in three hours
        to="TIMED_OUT",
        **{"from": "REQUESTED"},
        kind="active",
        reason="timeout",
    ),
    series("arc_capacity_background_task_failures_total", f"0x{DAY}", task="hud"),
    series("arc_capacity_actions_errors_total", "0x80 1x99", kind="server"),  # one 503
    # Queue tokens expire and are refreshed: a 401 now and then is routine.
    series("arc_capacity_actions_errors_total", "0+0.05x180", kind="unauthorized"),
    series("arc_capacity_starved_runners", "0x30 1 1 1 0x147"),  # a workflow pod waits 3 min
    series("arc_capacity_undecodable_messages_total", f"0x{DAY}"),
    # fleetView on: one read misses at minute 70 (a store restart), fresh otherwise.
    series("arc_capacity_fleet_view_enabled", f"1x{DAY}"),
    series("arc_capacity_fleet_view_fresh", "1x69 0 0 1x108"),
]

#: Minutes of the healthy day every rule is evaluated at (the burst, the blips, the rest).
HEALTHY_MINUTES = (20, 32, 36, 45, 62, 72, 82, 92, 102, 125, 150, 175)


# --- failures, one or more per rule ------------------------------------------------------

OWNER = series("arc_capacity_owner", "1x40")


def _fires(alert: str, silent_at: int, fires_at: int, **labels: str) -> list[Expect]:
    return [Expect(silent_at, alert), Expect(fires_at, alert, labels)]


#: ARC names the listener pod after its AutoscalingListener: the same name when recreated.
LISTENER_POD = "arc-runners-754b578d-listener"
#: What survives a recreated listener pod: the scrape job and the scale set.
SCALE_SET = {k: POD[k] for k in ("job", "namespace", "name")}


def _recreated_pods(minutes: int, answers: Callable[[int], str]) -> list[dict[str, str]]:
    """A listener pod recreated every 3 minutes, as ARC does when one exits: the same pod
    name each time, a new ``instance`` (pod IP); each is scraped twice (``answers(i)`` is
    its two ``up`` samples), then is gone (no samples) while the next one starts."""
    out = []
    for i, start in enumerate(range(0, minutes, 3)):
        values = " ".join(["_"] * start + [answers(i)] + ["_"] * (minutes - start - 2))
        out.append(up(values, instance=f"10.0.0.{10 + i}:8080", pod=LISTENER_POD))
    return out


FAILURES = [
    Case(
        "a listener that exits at start: every recreated pod refuses scrapes",
        _recreated_pods(30, lambda i: "0 0"),
        [
            Expect(4, "ArcCapacityListenerMissing"),
            Expect(6, "ArcCapacityListenerMissing", SCALE_SET, exact=True),
            Expect(25, "ArcCapacityListenerMissing", SCALE_SET, exact=True),
        ],
    ),
    Case(
        "a healthy listener pod replaced (the new one answers from its second scrape): silent",
        [
            up("1x10", instance="10.0.0.7:8080"),
            up("_x10 0 1x19", instance="10.0.0.9:8080"),
        ],
        [Expect(12, "ArcCapacityListenerMissing"), Expect(25, "ArcCapacityListenerMissing")],
    ),
    Case(
        "no listener target at all (metrics off, PodMonitor not selected)",
        [{"series": 'up{job="node-exporter",instance="10.0.0.1:9100"}', "values": "1x20"}],
        [
            Expect(4, "ArcCapacityListenerMissing"),
            Expect(6, "ArcCapacityListenerMissing", {}, exact=True),
        ],
    ),
    Case(
        "not ready from the start: silent at 4 min, firing after 5",
        [series("arc_capacity_ready", "0x20")],
        _fires("ArcCapacityListenerNotReady", 4, 6),
    ),
    Case(
        "advertising 0 for 10 min while 5 jobs are queued",
        [
            series("arc_capacity_advertised", "0x30"),
            series("arc_capacity_demand_queued_jobs", "5x30"),
            series("arc_capacity_max_runners_live", "20x30"),
            OWNER,
        ],
        _fires("ArcCapacityAdvertisingZeroWhileJobsWait", 9, 11),
    ),
    Case(
        "a drain (maxRunners 0) with jobs queued is intended: silent",
        [
            series("arc_capacity_advertised", "0x30"),
            series("arc_capacity_demand_queued_jobs", "5x30"),
            series("arc_capacity_max_runners_live", "0x30"),
            OWNER,
        ],
        [Expect(20, "ArcCapacityAdvertisingZeroWhileJobsWait")],
    ),
    Case(
        "a standby pod (not the Lease owner) advertising 0: silent",
        [
            series("arc_capacity_advertised", "0x30"),
            series("arc_capacity_demand_queued_jobs", "5x30"),
            series("arc_capacity_max_runners_live", "20x30"),
            series("arc_capacity_owner", "0x30"),
        ],
        [Expect(20, "ArcCapacityAdvertisingZeroWhileJobsWait")],
    ),
    Case(
        "advertising 2 while 4 run and 20 wait (maxRunners 20) for 15 min",
        [
            series("arc_capacity_advertised", "2x30"),
            series("arc_capacity_real_pods_bound", "4x30", role="runner"),
            series("arc_capacity_real_pods_bound", "4x30", role="workflow"),
            series("arc_capacity_demand_queued_jobs", "20x30"),
            series("arc_capacity_max_runners_live", "20x30"),
            OWNER,
        ],
        _fires("ArcCapacityAdvertisingFarBelowDemand", 14, 16),
    ),
    Case(
        "saturated at maxRunners 10 with 100 queued is not far below demand: silent",
        [
            series("arc_capacity_advertised", "6x30"),
            series("arc_capacity_real_pods_bound", "6x30", role="runner"),
            series("arc_capacity_demand_queued_jobs", "100x30"),
            series("arc_capacity_max_runners_live", "10x30"),
            OWNER,
        ],
        [Expect(20, "ArcCapacityAdvertisingFarBelowDemand")],
    ),
    Case(
        "unknown demand (NaN: no source answers) is not far below it: silent",
        [
            series("arc_capacity_advertised", "2x30"),
            series("arc_capacity_real_pods_bound", "4x30", role="runner"),
            series("arc_capacity_demand_queued_jobs", " ".join(["NaN"] * 31)),
            series("arc_capacity_max_runners_live", "20x30"),
            OWNER,
        ],
        [
            Expect(20, "ArcCapacityAdvertisingFarBelowDemand"),
            Expect(20, "ArcCapacityAdvertisingZeroWhileJobsWait"),
        ],
    ),
    Case(
        "a pair times out every minute (ICE)",
        [
            series(
                "arc_capacity_transitions_total",
                "0+1x40",
                to="TIMED_OUT",
                **{"from": "REQUESTED"},
                kind="active",
                reason="timeout",
            )
        ],
        _fires("ArcCapacityPlaceholderTimeouts", 5, 20, to="TIMED_OUT"),
    ),
    Case(
        "watches down from minute 2: failing closed",
        [series("arc_capacity_failing_closed", "0 0 1x20")],
        _fires("ArcCapacityFailingClosed", 3, 5),
    ),
    Case(
        "the hook template cannot be read from minute 2: placed like the runner",
        [series("arc_capacity_workflow_placement_from_hook_template", "1 1 0x30"), OWNER],
        _fires("ArcCapacityWorkflowPlacementFallback", 11, 13),
    ),
    Case(
        "the last successful step at minute 6, none since",
        [
            series("arc_capacity_last_successful_reconcile_timestamp_seconds", "0+60x6 360x30"),
            series("arc_capacity_failing_closed", "0x36"),
            OWNER,
        ],
        _fires("ArcCapacityReconcileStalled", 12, 14),
    ),
    Case(
        "no successful step because the watches are down: FailingClosed, not Stalled",
        [
            series("arc_capacity_last_successful_reconcile_timestamp_seconds", "0+60x6 360x30"),
            series("arc_capacity_failing_closed", "0x5 1x30"),
            OWNER,
        ],
        [Expect(20, "ArcCapacityReconcileStalled")],
    ),
    Case(
        "a third of the reconcile steps raise",
        [
            series("arc_capacity_reconcile_duration_seconds_count", "0+30x40"),
            series("arc_capacity_reconcile_errors_total", "0+10x40"),
        ],
        _fires("ArcCapacityReconcileErrors", 3, 25),
    ),
    Case(
        "the HUD poller raised once at minute 3",
        [series("arc_capacity_background_task_failures_total", "0 0 0 1x20", task="hud")],
        _fires("ArcCapacityBackgroundTaskFailing", 2, 5, task="hud"),
    ),
    Case(
        "the HUD does not answer",
        [
            series("arc_capacity_demand_source_up", "0x20", source="hud"),
            series("arc_capacity_demand_source_up", "1x20", source="statistics"),
            OWNER,
        ],
        _fires("ArcCapacityDemandSourceDown", 4, 6, source="hud"),
    ),
    Case(
        "a standby pod has no demand sources running: silent",
        [
            series("arc_capacity_demand_source_up", "0x20", source="hud"),
            series("arc_capacity_owner", "0x20"),
        ],
        [Expect(10, "ArcCapacityDemandSourceDown")],
    ),
    Case(
        "the Actions service answers 503 twice a minute",
        [series("arc_capacity_actions_errors_total", "0+2x30", kind="server")],
        _fires("ArcCapacityActionsErrors", 5, 15),
    ),
    Case(
        "only 401s (queue token refreshes): silent",
        [series("arc_capacity_actions_errors_total", "0+2x30", kind="unauthorized")],
        [Expect(20, "ArcCapacityActionsErrors")],
    ),
    Case(
        "advertising 3 with only 2 workflow halves bound from minute 2",
        [
            series("arc_capacity_advertised", "2 2 3x10"),
            series("arc_capacity_runner_side", "3x12"),
            series("arc_capacity_workflow_side", "2x12"),
            OWNER,
        ],
        _fires("ArcCapacityUnconfirmedCapacity", 2, 4),
    ),
    Case(
        "the runner side is the smaller one and backs what is advertised: silent",
        [
            series("arc_capacity_advertised", "3x12"),
            series("arc_capacity_runner_side", "3x12"),
            series("arc_capacity_workflow_side", "5x12"),
            OWNER,
        ],
        [Expect(10, "ArcCapacityUnconfirmedCapacity")],
    ),
    Case(
        "a runner's workflow pod waits for a node",
        [series("arc_capacity_starved_runners", "1x20")],
        _fires("ArcCapacityStarvedRunners", 9, 11),
    ),
    Case(
        "fleetView on, the store unreachable from minute 5",
        [
            series("arc_capacity_fleet_view_enabled", "1x30"),
            series("arc_capacity_fleet_view_fresh", "1x4 0x25"),
        ],
        _fires("ArcCapacityFleetViewStale", 14, 16),
    ),
    Case(
        "fleetView on, one missed read in a row of fresh ones: silent",
        [
            series("arc_capacity_fleet_view_enabled", "1x30"),
            series("arc_capacity_fleet_view_fresh", "1x9 0 0 1x18"),
        ],
        [Expect(20, "ArcCapacityFleetViewStale")],
    ),
    Case(
        "fleetView off (fresh is 0, as it is never read): silent",
        [
            series("arc_capacity_fleet_view_enabled", "0x30"),
            series("arc_capacity_fleet_view_fresh", "0x30"),
        ],
        [Expect(20, "ArcCapacityFleetViewStale")],
    ),
    Case(
        "a message could not be decoded at minute 2",
        [series("arc_capacity_undecodable_messages_total", "0 0 1x10")],
        _fires("ArcCapacityUndecodableMessages", 1, 3),
    ),
]

HEALTHY_DAY = Case("a healthy day: bursts, blips, one timeout, one 503", HEALTHY_SERIES)
