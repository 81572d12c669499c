"""config/rbac.yaml (for `kubectl apply`) and the rules the `rbac` command and the start-up
permission check use (providers/kubernetes/permissions.py) are the same rules."""

from __future__ import annotations

from pathlib import Path

import yaml

from providers.kubernetes.permissions import CLUSTER_RULES, NAMESPACED_RULES

ROOT = Path(__file__).resolve().parents[2]
DOCS = [d for d in yaml.safe_load_all((ROOT / "config" / "rbac.yaml").read_text()) if d]


def rules_of(kind: str) -> list[dict[str, list[str]]]:
    return [rule for doc in DOCS if doc["kind"] == kind for rule in doc["rules"]]


def test_cluster_rules_match_config_rbac_yaml() -> None:
    assert rules_of("ClusterRole") == [r.as_dict() for r in CLUSTER_RULES]


def test_namespaced_rules_match_config_rbac_yaml() -> None:
    assert rules_of("Role") == [r.as_dict() for r in NAMESPACED_RULES]
