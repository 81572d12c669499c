"""The shipped fleet dashboard (config/grafana-fleet-dashboard.json): every query reads series
the listener exports or the fleet rules record, and every one is kept to the chosen fleet.
tests/e2e/test_fleet_prometheus.py runs the same queries against a real Prometheus."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.monitoring.promql import exported_series, used_metrics
from tests.monitoring.promtool import ROOT
from tests.monitoring.test_fleet_rules import STORE_LABELS, recorded

FLEET_DASHBOARD = ROOT / "config" / "grafana-fleet-dashboard.json"
FLEET_FILTER = 'fleet=~"$fleet"'
#: How a raw listener series is kept to the chosen fleet: joined on its Lease owner's member row.
JOIN = 'group_left (fleet) (arc_capacity_fleet_member{fleet=~"$fleet"} == 1)'


def panels() -> list[dict[str, Any]]:
    data = json.loads(FLEET_DASHBOARD.read_text(encoding="utf-8"))
    return [p for p in data["panels"] if p["type"] != "row"]


def fleet_exprs() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]


@pytest.mark.parametrize("expr", fleet_exprs())
def test_every_query_reads_exported_or_recorded_series(expr: str) -> None:
    exported, rules = exported_series(), recorded()
    for name, labels in used_metrics(expr).items():
        if name in rules:
            assert labels <= {"fleet", "cluster"}, f"{name}{labels}"
            continue
        assert name in exported, f"{name} is neither exported nor recorded"
        assert labels <= set(exported[name]) | STORE_LABELS, f"{name}{labels}"


@pytest.mark.parametrize("panel", panels(), ids=lambda p: p["title"])
def test_every_query_is_kept_to_the_chosen_fleet_and_shown_per_cluster(
    panel: dict[str, Any],
) -> None:
    """A raw series joins its Lease owner's member row of the fleet; a recorded one filters
    by fleet. Either way one line per cluster (or the fleet's total)."""
    rules = recorded()
    for target in panel["targets"]:
        expr = target["expr"]
        raw = [n for n in used_metrics(expr) if n not in rules and n != "arc_capacity_fleet_member"]
        if raw:
            assert JOIN in expr and "sum by (cluster)" in expr, f"{panel['title']}: {expr}"
        else:
            assert FLEET_FILTER in expr, f"{panel['title']}: {expr}"
        assert "{{cluster}}" in target["legendFormat"] or "fleet" in target["legendFormat"]


def test_the_dashboard_shows_each_recorded_fleet_row() -> None:
    shown = {n for e in fleet_exprs() for n in used_metrics(e)}
    rows = {r for r in recorded() if r.startswith("fleet_cluster:")}
    assert rows <= shown, rows - shown
    assert re.search(r"gha_started_jobs_total", " ".join(fleet_exprs())), "where jobs went"
