"""The shipped monitoring files agree with each other, with the metrics the listener really
exports, and with the runbooks they link to."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.monitoring.promql import dashboard_exprs, exported_series, rule_exprs, used_metrics
from tests.monitoring.promtool import PROMETHEUS_RULE, ROOT, RULES, alerts
from tools import alert_rules

TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"


def test_the_prometheus_rule_is_generated_from_the_rules_file() -> None:
    """Edit alert-rules.yaml, forget `make docs`: this fails instead of shipping two sets."""
    assert PROMETHEUS_RULE.read_text(encoding="utf-8") == alert_rules.render(
        RULES.read_text(encoding="utf-8")
    ), "config/monitoring/prometheusrule.yaml is stale: run `python -m tools.alert_rules`"


def test_the_prometheus_rule_holds_exactly_the_groups_of_the_rules_file() -> None:
    plain = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    operator = yaml.safe_load(PROMETHEUS_RULE.read_text(encoding="utf-8"))
    assert operator["apiVersion"] == "monitoring.coreos.com/v1"
    assert operator["kind"] == "PrometheusRule"
    assert operator["spec"]["groups"] == plain["groups"]


def test_a_rules_file_without_groups_is_one_clear_error() -> None:
    with pytest.raises(alert_rules.RulesSourceError, match="no top-level `groups:` line"):
        alert_rules.render("# nothing here\n")


@pytest.mark.parametrize(
    ("where", "exprs"), [("alert rules", rule_exprs()), ("dashboard", dashboard_exprs())]
)
def test_every_metric_a_rule_or_panel_uses_is_exported_with_those_labels(
    where: str, exprs: list[str]
) -> None:
    """A renamed metric, a histogram queried without `_bucket`, or a label a metric does not
    carry would leave an alert silent forever or a panel empty."""
    exported = exported_series()
    problems = []
    for expr in exprs:
        for name, labels in used_metrics(expr).items():
            if name not in exported:
                problems.append(f"{name} (in {expr!r}) is not exported")
            elif missing := labels - set(exported[name]):
                problems.append(f"{name} has no label {sorted(missing)} (in {expr!r})")
    assert exprs and not problems, f"{where}:\n" + "\n".join(problems)


def test_every_capacity_metric_a_rule_uses_is_in_the_generated_metrics_doc() -> None:
    doc = METRICS_DOC.read_text(encoding="utf-8")
    for expr in rule_exprs():
        for name in used_metrics(expr):
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            assert f"`{family}`" in doc, name


def test_the_metric_parser_sees_names_labels_and_not_functions() -> None:
    used = used_metrics(
        'sum without (from, kind) (increase(a_total{to="X", kind!~"y|z"}[30m])) > 3 '
        "and on (name) time() - b_seconds > 0.5 * c unless ignoring (source) d == 1"
    )
    assert used == {"a_total": {"to", "kind"}, "b_seconds": set(), "c": set(), "d": set()}


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the headings (lower case, spaces to dashes, punctuation dropped)."""
    heads = re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in heads}


def test_every_alert_links_a_runbook_section_that_exists() -> None:
    anchors = _anchors(TROUBLESHOOTING.read_text(encoding="utf-8"))
    for name, rule in alerts().items():
        url = rule["annotations"]["runbook_url"]
        path, _, anchor = url.partition("#")
        assert path == "docs/troubleshooting.md", (name, url)
        assert anchor == name.lower() and anchor in anchors, (name, url)


def test_every_runbook_says_what_it_means_how_to_confirm_and_what_to_do() -> None:
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    for name in alerts():
        section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        for part in ("**Means**", "**Confirm**", "**Do**"):
            assert part in section, (name, part)


def test_every_alert_has_a_severity_summary_and_description() -> None:
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def test_the_operations_guide_names_both_rule_files() -> None:
    ops = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for path in (RULES, PROMETHEUS_RULE):
        assert f"config/monitoring/{path.name}" in ops, path.name


def test_the_shipped_promtool_test_file_is_generated_from_the_case_table() -> None:
    """Edit a rule or a case, forget `make docs`: this fails instead of shipping tests that no
    longer test the rules beside them."""
    assert alert_rules.main(["--check"]) == 0, "run `python -m tools.alert_rules`"
    shipped = yaml.safe_load(alert_rules.UNIT_TESTS.read_text(encoding="utf-8"))
    assert shipped["rule_files"] == ["alert-rules.yaml"]  # beside it, wherever it is copied


def test_one_runbook_base_points_every_alert_at_its_section() -> None:
    """Regression (issue 32): runbook_url was a repository path that on-call could not open;
    pointing it elsewhere took a sed over several files."""
    base = "https://git.example.com/acme/arc-capacity-listener/blob/main/docs/troubleshooting.md"
    source = alert_rules.with_runbook_base(RULES.read_text(encoding="utf-8"), base)
    rules = alert_rules.alerts(source)
    assert {name: rule["annotations"]["runbook_url"] for name, rule in rules.items()} == {
        name: f"{base}#{name.lower()}" for name in alerts()
    }
    # The same rules otherwise, and the generated files follow the source.
    assert {n: r["expr"] for n, r in rules.items()} == {n: r["expr"] for n, r in alerts().items()}
    assert f"runbook_url: {base}#arccapacityfailingclosed" in alert_rules.render(source)
    back = alert_rules.with_runbook_base(source, alert_rules.DEFAULT_RUNBOOK_BASE)
    assert back == RULES.read_text(encoding="utf-8")


@pytest.mark.parametrize("base", ["", "https://x.example/a b", "https://x.example/t.md#top"])
def test_a_runbook_base_that_cannot_prefix_an_anchor_is_one_clear_error(base: str) -> None:
    with pytest.raises(alert_rules.RulesSourceError, match="--runbook-base"):
        alert_rules.with_runbook_base("runbook_url: docs/troubleshooting.md#a\n", base)
