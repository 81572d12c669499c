"""`promtool` over the alert rules: they load, and each fires on its failure and stays
silent on a healthy day (the cases are the table in tests/monitoring/rule_cases.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.monitoring.promql import rule_exprs, used_metrics
from tests.monitoring.promtool import PROMETHEUS_RULE, RULES, alerts, run_promtool, unit_test_file
from tests.monitoring.rule_cases import FAILURES, HEALTHY_DAY, HEALTHY_MINUTES


def test_promtool_accepts_the_rules_file() -> None:
    """A typo in PromQL or a bad `for` must fail here, not when Prometheus reloads."""
    checked = run_promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in checked.stdout


def test_promtool_accepts_the_rules_of_the_prometheus_rule(tmp_path: Path) -> None:
    """What prometheus-operator hands Prometheus is the PrometheusRule's spec."""
    spec = yaml.safe_load(PROMETHEUS_RULE.read_text(encoding="utf-8"))["spec"]
    extracted = tmp_path / "from-prometheusrule.yaml"
    extracted.write_text(yaml.safe_dump(spec), encoding="utf-8")
    checked = run_promtool("check", "rules", str(extracted))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_rule_fires_on_its_failure_and_stays_silent_on_a_healthy_day(
    tmp_path: Path,
) -> None:
    """An alert that never fires (or pages on a good day) fails this test, with promtool's
    own account of which alert said what at which minute."""
    tests = tmp_path / "alert-rules.test.yaml"
    tests.write_text(
        yaml.safe_dump(unit_test_file(HEALTHY_DAY, HEALTHY_MINUTES, FAILURES), sort_keys=False),
        encoding="utf-8",
    )
    result = run_promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_case_table_covers_every_rule_both_ways() -> None:
    """A new rule without a failure case, or one whose failure is never seen firing and
    silent before its `for`, fails here (the healthy day covers every rule by build)."""
    firing = {e.alert for case in FAILURES for e in case.expect if e.fires is not None}
    silent = {e.alert for case in FAILURES for e in case.expect if e.fires is None}
    assert firing == set(alerts()), sorted(set(alerts()) ^ firing)
    assert silent == set(alerts()), sorted(set(alerts()) ^ silent)


def test_the_healthy_day_feeds_every_metric_the_rules_read() -> None:
    """A rule is only proven silent on a healthy day if its series are there: a misspelled
    or missing input series would make its silence vacuous."""
    fed = {s["series"].split("{", 1)[0] for s in HEALTHY_DAY.input_series}
    read = {name for expr in rule_exprs() for name in used_metrics(expr)}
    assert read <= fed, sorted(read - fed)


def test_the_shipped_test_file_runs_with_promtool_alone_from_any_directory(tmp_path: Path) -> None:
    """Issue 32: a team that edits a rule re-runs `promtool test rules` without Python: the
    shipped file names the rules beside it, so it works from a copy of config/monitoring/."""
    copy = tmp_path / "monitoring"
    copy.mkdir()
    for name in ("alert-rules.yaml", "alert-rules.test.yaml"):
        (copy / name).write_bytes((RULES.parent / name).read_bytes())
    result = run_promtool("test", "rules", str(copy / "alert-rules.test.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
