"""The fleet recording rules (config/monitoring/fleet-rules.yaml): they load, their shipped
promtool tests pass, they read only series the listener exports with labels it exports, and
the listener's fleet reader asks for exactly the rows they record."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from providers.fleet.prometheus import ROW_FIELDS, TROUBLE
from tests.monitoring.promql import exported_series, used_metrics
from tests.monitoring.promtool import ROOT, run_promtool

FLEET_RULES = ROOT / "config" / "monitoring" / "fleet-rules.yaml"
FLEET_TESTS = ROOT / "config" / "monitoring" / "fleet-rules.test.yaml"
FLEET_PROMETHEUS_RULE = ROOT / "config" / "monitoring" / "fleet-prometheusrule.yaml"
#: Labels the store adds: ``cluster`` (external labels or a relabeling, docs/fleet.md).
STORE_LABELS = {"cluster"}


def recorded(path: Path = FLEET_RULES) -> dict[str, str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {r["record"]: r["expr"] for g in data["groups"] for r in g["rules"]}


def test_promtool_accepts_the_fleet_rules_and_their_prometheus_rule(tmp_path: Path) -> None:
    checked = run_promtool("check", "rules", str(FLEET_RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(recorded())} rules found" in checked.stdout
    spec = yaml.safe_load(FLEET_PROMETHEUS_RULE.read_text(encoding="utf-8"))["spec"]
    extracted = tmp_path / "fleet-from-prometheusrule.yaml"
    extracted.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert recorded(extracted) == recorded()


def test_the_shipped_promtool_tests_of_the_fleet_rules_pass() -> None:
    """Free slots, pairs in flight, queued demand and trouble per cluster and per fleet, on
    two clusters with a standby pod that must not count and a timeout that must."""
    tested = run_promtool("test", "rules", str(FLEET_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.parametrize("record", sorted(recorded()))
def test_a_fleet_rule_reads_only_exported_series_and_labels(record: str) -> None:
    exported = exported_series()
    rules = recorded()
    for name, labels in used_metrics(rules[record]).items():
        if name in rules:
            continue
        assert name in exported, f"{record}: {name} is not exported"
        assert labels <= set(exported[name]) | STORE_LABELS, f"{record}: {name}{labels}"


def test_the_reader_asks_for_the_recorded_rows() -> None:
    rows = {r for r in recorded() if r.startswith("fleet_cluster:")}
    assert set(ROW_FIELDS) == rows
    assert TROUBLE in rows
