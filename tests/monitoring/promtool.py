"""Helpers of the alert-rule tests: the rules file, promtool, and the unit-test file built
from the case table (tests/monitoring/rule_cases.py)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.rule_cases import Case
from tools import alert_rules

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "config" / "monitoring" / "alert-rules.yaml"
PROMETHEUS_RULE = ROOT / "config" / "monitoring" / "prometheusrule.yaml"
#: The Debian package that ships promtool and the Prometheus server (.ci/run installs it).
PACKAGE = "prometheus"


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
    return alert_rules.render_annotation(template, labels)


def unit_test_file(
    healthy: Case, minutes: Iterable[int], failures: Iterable[Case]
) -> dict[str, Any]:
    """The promtool unit-test file over the rules file in the tree (absolute path), built
    like the shipped one (tools/alert_rules.py)."""
    return alert_rules.unit_test_file(
        RULES.read_text(encoding="utf-8"), str(RULES), healthy, minutes, failures
    )


def run_promtool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("promtool"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
