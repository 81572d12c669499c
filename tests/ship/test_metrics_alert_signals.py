"""The metrics the alert rules need (config/monitoring/alert-rules.yaml): readiness, demand,
fail-closed and Actions errors, each exported from the same state the listener acts on."""

from __future__ import annotations

import math

import pytest

from listener.observability.metrics import PrometheusMetrics
from providers.actions.retry import failure_kind
from providers.demand.combine import Combine, CombinedDemand
from providers.demand.statistics import StatisticsDemand
from tests.ship.test_metrics import SCALE_SET, make, value


class TestReadiness:
    def test_ready_gauge_answers_the_readiness_check_at_each_scrape(self) -> None:
        """An alert on arc_capacity_ready must see what /readyz says, not a stale copy."""
        metrics = make()
        state = {"ready": False}
        metrics.watch_readiness(lambda: state["ready"])
        assert value(metrics, "arc_capacity_ready", **SCALE_SET) == 0
        state["ready"] = True
        assert value(metrics, "arc_capacity_ready", **SCALE_SET) == 1

    def test_a_failing_readiness_check_reads_not_ready_and_the_scrape_still_answers(
        self,
    ) -> None:
        """A bug in the check must not turn /metrics into an error page (all alerts blind)."""
        metrics = make()

        def broken() -> bool:
            raise RuntimeError("boom")

        metrics.watch_readiness(broken)
        assert value(metrics, "arc_capacity_ready", **SCALE_SET) == 0
        assert value(metrics, "arc_capacity_owner", **SCALE_SET) == 0  # the rest is there


class TestDemand:
    def watched(self, metrics: PrometheusMetrics) -> tuple[CombinedDemand, StatisticsDemand]:
        combined = CombinedDemand(("statistics", "hud"), Combine.MAX)
        statistics = StatisticsDemand()
        combined.attach(statistics)
        metrics.watch_demand(
            lambda: combined.current.queued_jobs,
            {name: (lambda n=name: combined.latest(n).queued_jobs) for name in combined.order},
        )
        return combined, statistics

    def test_no_answer_yet_is_nan_demand_and_every_source_down(self) -> None:
        """Unknown demand must not read as 0 queued jobs (that would hide a queue)."""
        metrics = make()
        self.watched(metrics)
        queued = value(metrics, "arc_capacity_demand_queued_jobs", **SCALE_SET)
        assert queued is not None and math.isnan(queued)
        for source in ("statistics", "hud"):
            assert value(metrics, "arc_capacity_demand_source_up", source=source) == 0

    def test_an_answering_source_is_up_and_its_jobs_are_the_demand(self) -> None:
        """The demand-source-down rule fires only for the source that does not answer."""
        metrics = make()
        _, statistics = self.watched(metrics)
        statistics.observe(7)
        assert value(metrics, "arc_capacity_demand_queued_jobs", **SCALE_SET) == 7
        assert value(metrics, "arc_capacity_demand_source_up", source="statistics") == 1
        assert value(metrics, "arc_capacity_demand_source_up", source="hud") == 0  # not started

    def test_combined_latest_names_a_source_that_never_started(self) -> None:
        combined = CombinedDemand(("statistics", "hud"))
        assert combined.latest("hud").error == "not started"
        assert combined.latest("hud").queued_jobs is None


class TestFailClosedAndActionsErrors:
    def test_failing_closed_is_exported_as_set(self) -> None:
        metrics = make()
        assert value(metrics, "arc_capacity_failing_closed", **SCALE_SET) == 0
        metrics.record_failing_closed(True)
        assert value(metrics, "arc_capacity_failing_closed", **SCALE_SET) == 1
        metrics.record_failing_closed(False)
        assert value(metrics, "arc_capacity_failing_closed", **SCALE_SET) == 0

    def test_workflow_placement_says_whether_the_hook_template_is_read(self) -> None:
        """An alert on 0 finds the listener that silently fell back to the runner's placement
        (no RBAC for ConfigMaps after an upgrade, a template it cannot parse)."""
        metrics = make()
        name = "arc_capacity_workflow_placement_from_hook_template"
        assert value(metrics, name, **SCALE_SET) == 0
        metrics.record_workflow_placement(True)
        assert value(metrics, name, **SCALE_SET) == 1
        metrics.record_workflow_placement(False)
        assert value(metrics, name, **SCALE_SET) == 0

    def test_every_actions_error_kind_exists_at_zero_from_the_start(self) -> None:
        """rate() needs the series before the first error, or the first error is missed."""
        metrics = make()
        for kind in ("transport", "throttled", "server", "conflict", "unauthorized", "client"):
            assert value(metrics, "arc_capacity_actions_errors_total", kind=kind) == 0
        metrics.record_actions_error("server")
        metrics.record_actions_error("surprise")
        assert value(metrics, "arc_capacity_actions_errors_total", kind="server") == 1
        assert value(metrics, "arc_capacity_actions_errors_total", kind="other") == 1

    @pytest.mark.parametrize(
        ("status", "kind"),
        [
            (None, "transport"),
            (0, "transport"),
            (429, "throttled"),
            (409, "conflict"),
            (401, "unauthorized"),
            (404, "client"),
            (500, "server"),
            (501, "server"),
            (503, "server"),
            (302, "other"),
        ],
    )
    def test_failure_kind_is_a_bounded_label(self, status: int | None, kind: str) -> None:
        assert failure_kind(status) == kind
