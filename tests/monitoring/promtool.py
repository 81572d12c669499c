"""Helpers of the alert-rule tests: the rules file, promtool, and the unit-test file built
from the case table (tests/monitoring/rule_cases.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.rule_cases import POD, Case, Expect

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "config" / "monitoring" / "alert-rules.yaml"
PROMETHEUS_RULE = ROOT / "config" / "monitoring" / "prometheusrule.yaml"
#: The Debian package that ships promtool and the Prometheus server (.ci/run installs it).
PACKAGE = "prometheus"
#: The only template the annotations may use, so the expected text can be rendered here.
_LABEL_TEMPLATE = re.compile(r"\{\{ \$labels\.([a-z_]+) \}\}")


def tool(name: str) -> str:
    """Path of ``name`` (promtool, prometheus), or skip with the reason printed."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(
            f"{name} not found: install the Debian package `{PACKAGE}` "
            f"(`apt-get install -y --no-install-recommends {PACKAGE}`; .ci/run does it as root)"
        )
    return found


def rules(path: Path = RULES) -> list[dict[str, Any]]:
    """Every rule of every group of a plain rules file."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [rule for group in data["groups"] for rule in group["rules"]]


def alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in rules() if "alert" in rule}


def render(template: str, labels: dict[str, str]) -> str:
    """What Prometheus makes of an annotation that uses only ``{{ $labels.x }}``."""
    return _LABEL_TEMPLATE.sub(lambda m: labels.get(m.group(1), ""), template)


def _expected(expect: Expect) -> list[dict[str, Any]]:
    if expect.fires is None:
        return []
    rule = alerts()[expect.alert]
    labels = {**POD, **rule.get("labels", {}), **expect.fires}
    annotations = {k: render(v, labels) for k, v in rule.get("annotations", {}).items()}
    return [{"exp_labels": labels, "exp_annotations": annotations}]


def _test(case: Case, expects: Iterable[Expect]) -> dict[str, Any]:
    return {
        "name": case.name,
        "interval": "1m",
        "input_series": case.input_series,
        "alert_rule_test": [
            {"eval_time": f"{e.minute}m", "alertname": e.alert, "exp_alerts": _expected(e)}
            for e in expects
        ],
    }


def unit_test_file(
    healthy: Case, minutes: Iterable[int], failures: Iterable[Case]
) -> dict[str, Any]:
    """The promtool unit-test file: the healthy day (every alert silent at every minute of
    ``minutes``) and each failure case as written."""
    silent = [Expect(m, alert) for m in minutes for alert in alerts()]
    return {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [_test(healthy, silent), *(_test(c, c.expect) for c in failures)],
    }


def run_promtool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("promtool"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
