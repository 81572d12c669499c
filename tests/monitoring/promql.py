"""Which metrics and labels PromQL expressions use, and which the listener exports: enough
PromQL for the alert rules and the dashboard panels (no subqueries or @ modifiers there)."""

from __future__ import annotations

import json
import re

import yaml

from listener.observability.metrics import ARC_FAMILIES, CAPACITY_FAMILIES, Family
from listener.observability.metrics.families import PROMHTTP_ERRORS
from tests.monitoring.promtool import ROOT, alerts

DASHBOARD = ROOT / "config" / "grafana-dashboard.json"
PODMONITOR = ROOT / "config" / "monitoring" / "podmonitor.yaml"

_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "bool", "offset"}
_KEYWORDS |= {"group_left", "group_right", "inf", "nan"}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_NAME = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()")
_MATCHER_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")


def scrape_target_labels() -> tuple[str, ...]:
    """Labels the shipped PodMonitor's ``relabelings`` put on every series of a listener pod
    (``name`` / ``namespace`` from the pod's scale-set labels), so a panel may filter ARC's
    job series by them although the listener does not export them there."""
    monitor = yaml.safe_load(PODMONITOR.read_text(encoding="utf-8"))
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    return tuple(r["targetLabel"] for r in endpoint.get("relabelings", []))


def exported_series() -> dict[str, tuple[str, ...]]:
    """Every series name the listener's registry exports, with its label names (a histogram
    family is its ``_bucket`` / ``_sum`` / ``_count`` series; only ``_bucket`` has ``le``),
    plus the labels the PodMonitor adds at scrape time."""
    out: dict[str, tuple[str, ...]] = {PROMHTTP_ERRORS: ("cause",)}
    families: list[Family] = [*ARC_FAMILIES, *CAPACITY_FAMILIES]
    for family in families:
        if family.kind == "histogram":
            out[family.name + "_bucket"] = (*family.labels, "le")
            out[family.name + "_sum"] = family.labels
            out[family.name + "_count"] = family.labels
        else:
            out[family.name] = family.labels
    # Prometheus's own series of every scrape target (ArcCapacityListenerMissing reads it: a
    # listener that exits at start exports nothing else).
    out["up"] = ("job", "instance")
    added = scrape_target_labels()
    return {name: (*labels, *(a for a in added if a not in labels)) for name, labels in out.items()}


def used_metrics(expr: str) -> dict[str, set[str]]:
    """Metric names a PromQL expression selects, with the label names its matchers use
    (enough PromQL for our rules and panels: no subqueries or @ modifiers there)."""
    text = re.sub(r"\[[^\]]*\]", "", expr)  # range windows
    used: dict[str, set[str]] = {}
    for name, matchers in _SELECTOR.findall(_GROUPING.sub("", text)):
        used.setdefault(name, set()).update(_MATCHER_LABEL.findall(_STRING.sub('""', matchers)))
    bare = _SELECTOR.sub(r"\1", _GROUPING.sub("", _STRING.sub('""', text)))
    for name in _NAME.findall(bare):
        if name.lower() not in _KEYWORDS and not name.isdigit():
            used.setdefault(name, set())
    return used


def dashboard_exprs() -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "expr" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(DASHBOARD.read_text(encoding="utf-8")))
    return found


def rule_exprs() -> list[str]:
    return [rule["expr"] for rule in alerts().values()]
