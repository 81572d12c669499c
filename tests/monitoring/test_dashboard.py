"""The shipped Grafana dashboard: on-call sees what pages it, filtered and in the right units."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.monitoring.promql import DASHBOARD, rule_exprs, used_metrics
from tests.monitoring.promtool import alerts

FILTER = ('namespace=~"$namespace"', 'name=~"$name"')
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")


def panels() -> list[dict[str, Any]]:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [p for p in data["panels"] if p["type"] != "row"]


def family(series: str) -> str:
    """A histogram's ``_bucket`` / ``_count`` / ``_sum`` series are one family on a panel."""
    return re.sub(r"_(bucket|count|sum)$", "", series)


def panel_metrics() -> set[str]:
    return {
        family(name) for p in panels() for t in p["targets"] for name in used_metrics(t["expr"])
    }


@pytest.mark.parametrize("alert", sorted(alerts()))
def test_every_metric_an_alert_fires_on_has_a_panel(alert: str) -> None:
    """Regression (issue 32): alerts fired on demand, demand sources, readiness, the Lease
    owner, failing closed and error counters that no panel showed, so the page named a
    metric on-call could not look at."""
    missing = {family(m) for m in used_metrics(alerts()[alert]["expr"])} - panel_metrics()
    assert not missing, f"{alert}: no panel shows {sorted(missing)}"


def test_the_alert_table_reads_metrics_at_all() -> None:
    assert rule_exprs() and all(used_metrics(e) for e in rule_exprs())


@pytest.mark.parametrize("name", ["available_jobs", "acquired_jobs", "job_queue_duration_seconds"])
def test_the_queue_metrics_are_on_the_dashboard(name: str) -> None:
    assert f"arc_capacity_{name}" in panel_metrics()


@pytest.mark.parametrize("panel", panels(), ids=lambda p: p["title"])
def test_every_series_a_panel_selects_is_filtered_by_namespace_and_scale_set(
    panel: dict[str, Any],
) -> None:
    """Regression (issue 32): "Job startup time" selected gha_job_startup_duration_seconds
    without the filters and blended every listener whatever scale set was chosen."""
    for target in panel["targets"]:
        expr = target["expr"]
        bare = set(used_metrics(expr)) - {m for m, _ in _SELECTOR.findall(expr)}
        assert not bare, f"{panel['title']}: {sorted(bare)} selected without a filter"
        for metric, matchers in _SELECTOR.findall(expr):
            assert all(f in matchers for f in FILTER), f"{panel['title']}: {metric}{{{matchers}}}"


def _is_seconds(expr: str) -> bool:
    """A duration: a quantile of a *_seconds histogram, or an age from a timestamp."""
    quantile = re.fullmatch(r"histogram_quantile\(.*_seconds_bucket\{.*", expr, flags=re.S)
    age = "time() - " in expr and "_timestamp_seconds" in expr
    return bool(quantile or age)


@pytest.mark.parametrize("panel", panels(), ids=lambda p: p["title"])
def test_a_seconds_axis_plots_only_durations_and_rates_never_sit_on_one(
    panel: dict[str, Any],
) -> None:
    """Regression (issue 32): errors per minute were plotted on a seconds axis (reconcile
    duration) and a latency on a count axis (HUD requests)."""
    unit = panel["fieldConfig"]["defaults"]["unit"]
    for target in panel["targets"]:
        seconds = _is_seconds(target["expr"])
        assert seconds == (unit == "s"), f"{panel['title']}: {target['expr']!r} on unit {unit}"


def test_no_two_panels_overlap() -> None:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    cells: dict[tuple[int, int], str] = {}
    for p in data["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]
