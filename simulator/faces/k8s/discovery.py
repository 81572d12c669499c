"""Legacy discovery documents (``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}/{v}``).

Enough for kubectl to map ``pods``, ``po``, ``ephemeralrunnersets.actions.github.com``...
to REST paths. Aggregated discovery (``apidiscovery.k8s.io/v2``) is not offered: clients
fall back to these documents when the response is plain ``application/json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from simulator.engine.store import KindInfo

VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
SHORT_NAMES = {
    "pods": ["po"],
    "nodes": ["no"],
    "events": ["ev"],
    "priorityclasses": ["pc"],
    "ephemeralrunnersets": ["ers"],
    "ephemeralrunners": ["er"],
    "serviceaccounts": ["sa"],
    "configmaps": ["cm"],
}
STATUS_SUBRESOURCE = {
    "Pod",
    "Node",
    "EphemeralRunnerSet",
    "EphemeralRunner",
    "AutoscalingRunnerSet",
    "NodePool",
    "NodeClaim",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def api_group(group: str, version: str) -> dict[str, Any]:
    gv = _group_version(group, version)
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [gv],
        "preferredVersion": gv,
    }


def api_group_list(groups: Iterable[tuple[str, str]]) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [api_group(g, v) for g, v in sorted(set(groups))],
    }


def resource_list(group_version: str, kinds: Iterable[KindInfo]) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for info in sorted(kinds, key=lambda k: k.plural):
        resources.append(
            {
                "name": info.plural,
                "singularName": info.kind.lower(),
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": VERBS,
                "shortNames": SHORT_NAMES.get(info.plural, []),
                **({"categories": ["all"]} if info.kind == "Pod" else {}),
            }
        )
        if info.kind in STATUS_SUBRESOURCE:
            resources.append(
                {
                    "name": f"{info.plural}/status",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": info.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def access_review_list() -> dict[str, Any]:
    """``/apis/authorization.k8s.io/v1``: SelfSubjectAccessReview and SubjectAccessReview
    (create-only)."""
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "authorization.k8s.io/v1",
        "resources": [
            {
                "name": "selfsubjectaccessreviews",
                "singularName": "selfsubjectaccessreview",
                "namespaced": False,
                "kind": "SelfSubjectAccessReview",
                "verbs": ["create"],
            },
            {
                "name": "subjectaccessreviews",
                "singularName": "subjectaccessreview",
                "namespaced": False,
                "kind": "SubjectAccessReview",
                "verbs": ["create"],
            },
        ],
    }
