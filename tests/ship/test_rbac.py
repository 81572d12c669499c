"""config/rbac.yaml grants exactly what the code calls: nothing missing, nothing extra.

What the code calls is derived from its source at test time (tests/ship/api_usage.py), so a
new API call without a matching rule, or a rule no code needs any more, fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ship.api_usage import Permission, scan

ROOT = Path(__file__).resolve().parents[2]
RBAC = [d for d in yaml.safe_load_all((ROOT / "config" / "rbac.yaml").read_text()) if d]

#: What ARC's controller already grants every listener (docs/protocol.md#rbac), in the runner
#: namespace.
ARC_GRANTS = {
    Permission("actions.github.com", "ephemeralrunnersets", "patch", "namespaced"),
    Permission("actions.github.com", "ephemeralrunners", "patch", "namespaced"),
    Permission("actions.github.com", "ephemeralrunners/status", "patch", "namespaced"),
}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}


def granted(kind: str) -> set[Permission]:
    scope = "cluster" if kind == "ClusterRole" else "namespaced"
    out: set[Permission] = set()
    for doc in RBAC:
        if doc["kind"] != kind:
            continue
        for rule in doc["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
            assert not rule.get("resourceNames"), "derivation below assumes no resourceNames"
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add(Permission(group, resource, verb, scope))
    return out


OURS = granted("ClusterRole") | granted("Role")
USAGE = scan()


def show(perms: set[Permission]) -> str:
    lines = []
    for perm in sorted(perms):
        where = ", ".join(USAGE.evidence.get(perm, ["(granted only)"])[:3])
        lines.append(f"  {perm}  <- {where}")
    return "\n".join(lines)


def test_the_scan_sees_the_provider() -> None:
    """Guard against a vacuous comparison: the placeholder writer and the cache are found."""
    assert not USAGE.unknown, f"WatchTarget kinds not in watch_targets.RESOURCES: {USAGE.unknown}"
    for verb in ("create", "delete", "list", "watch"):
        assert Permission("", "pods", verb, "namespaced") in USAGE.permissions, verb
    assert any(p.resource == "nodes" for p in USAGE.permissions)


def test_every_call_the_code_makes_is_granted() -> None:
    missing = USAGE.permissions - OURS - ARC_GRANTS
    assert not missing, f"the code needs permissions that no Role grants:\n{show(missing)}"


def test_nothing_is_granted_that_the_code_does_not_call() -> None:
    extra = OURS - USAGE.permissions
    assert not extra, f"config/rbac.yaml grants permissions no code uses:\n{show(extra)}"


def test_we_do_not_repeat_what_arc_already_grants() -> None:
    assert not (OURS & ARC_GRANTS)


def test_no_cluster_wide_writes_and_no_pods_outside_the_namespace() -> None:
    cluster = granted("ClusterRole")
    assert not [p for p in cluster if p.verb in WRITE_VERBS]
    assert not [p for p in cluster if p.resource in ("pods", "secrets", "configmaps")]
    namespaced_writes = {p for p in granted("Role") if p.verb in WRITE_VERBS}
    # Placeholder pods, and the one Lease that elects their owner.
    assert {p.resource for p in namespaced_writes} == {"pods", "leases"}


@pytest.mark.parametrize("kind", ["RoleBinding", "ClusterRoleBinding"])
def test_bindings_point_at_our_roles(kind: str) -> None:
    roles = {
        (d["kind"], d["metadata"]["name"]) for d in RBAC if d["kind"] in ("Role", "ClusterRole")
    }
    bindings: list[dict[str, Any]] = [d for d in RBAC if d["kind"] == kind]
    assert bindings
    for binding in bindings:
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in roles
        if kind == "RoleBinding":
            role = next(
                d for d in RBAC if d["kind"] == "Role" and d["metadata"]["name"] == ref["name"]
            )
            assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
