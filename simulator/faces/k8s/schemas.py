"""Structural schemas of the kinds the face serves, for OpenAPI and server-side field validation.

Built-in kinds whose fields this project writes or applies (PriorityClass, RBAC, ServiceAccount,
Secret, ConfigMap, Lease) are described field by field, as in upstream's OpenAPI; the large
specs and statuses (Pod, Node, Event, ARC and Karpenter resources) are open objects
(``x-kubernetes-preserve-unknown-fields``), so unknown fields are only caught at the levels
that are described. :func:`unknown_fields` is what ``fieldValidation=Strict`` checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer", "format": "int32"}
BOOL: Schema = {"type": "boolean"}
ANY: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(props: Mapping[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    out: Schema = {"type": "object", "properties": dict(props)}
    if required:
        out["required"] = list(required)
    return out


def arr(item: Schema) -> Schema:
    return {"type": "array", "items": item}


def str_map() -> Schema:
    return {"type": "object", "additionalProperties": STR}


OBJECT_META = obj(
    {
        "name": STR,
        "generateName": STR,
        "namespace": STR,
        "uid": STR,
        "resourceVersion": STR,
        "generation": INT,
        "creationTimestamp": STR,
        "deletionTimestamp": STR,
        "deletionGracePeriodSeconds": INT,
        "labels": str_map(),
        "annotations": str_map(),
        "finalizers": arr(STR),
        "ownerReferences": arr(ANY),
        "managedFields": arr(ANY),
    }
)
_POLICY_RULE = obj(
    {
        "apiGroups": arr(STR),
        "resources": arr(STR),
        "verbs": arr(STR),
        "resourceNames": arr(STR),
        "nonResourceURLs": arr(STR),
    },
    ("verbs",),
)
_ROLE_REF = obj({"apiGroup": STR, "kind": STR, "name": STR}, ("apiGroup", "kind", "name"))
_SUBJECT = obj({"kind": STR, "apiGroup": STR, "name": STR, "namespace": STR}, ("kind", "name"))

#: Fields of each kind besides apiVersion, kind and metadata.
_BODIES: dict[str, Schema] = {
    "PriorityClass": obj(
        {"value": INT, "globalDefault": BOOL, "description": STR, "preemptionPolicy": STR},
        ("value",),
    ),
    "Role": obj({"rules": arr(_POLICY_RULE)}),
    "ClusterRole": obj({"rules": arr(_POLICY_RULE), "aggregationRule": ANY}),
    "RoleBinding": obj({"roleRef": _ROLE_REF, "subjects": arr(_SUBJECT)}, ("roleRef",)),
    "ClusterRoleBinding": obj({"roleRef": _ROLE_REF, "subjects": arr(_SUBJECT)}, ("roleRef",)),
    "ServiceAccount": obj(
        {"secrets": arr(ANY), "imagePullSecrets": arr(ANY), "automountServiceAccountToken": BOOL}
    ),
    "Secret": obj({"data": str_map(), "stringData": str_map(), "type": STR, "immutable": BOOL}),
    "ConfigMap": obj({"data": str_map(), "binaryData": str_map(), "immutable": BOOL}),
    "Lease": obj(
        {
            "spec": obj(
                {
                    "holderIdentity": STR,
                    "leaseDurationSeconds": INT,
                    "acquireTime": STR,
                    "renewTime": STR,
                    "leaseTransitions": INT,
                    "strategy": STR,
                    "preferredHolder": STR,
                }
            )
        }
    ),
}
# prometheus-operator's monitoring.coreos.com/v1 CRDs, the fields of the versions this project
# supports (a named `port` since the first release, `portNumber` since v0.79): enough for a
# dry run to refuse a misspelled field of config/monitoring/ the way the CRD's schema would.
_LABEL_SELECTOR = obj({"matchLabels": str_map(), "matchExpressions": arr(ANY)})
_RELABEL = obj(
    {
        "sourceLabels": arr(STR),
        "separator": STR,
        "targetLabel": STR,
        "regex": STR,
        "modulus": INT,
        "replacement": STR,
        "action": STR,
    }
)
_POD_METRICS_ENDPOINT = obj(
    {
        "port": STR,
        "portNumber": INT,
        "targetPort": ANY,
        "path": STR,
        "scheme": STR,
        "params": ANY,
        "interval": STR,
        "scrapeTimeout": STR,
        "honorLabels": BOOL,
        "honorTimestamps": BOOL,
        "relabelings": arr(_RELABEL),
        "metricRelabelings": arr(_RELABEL),
        "basicAuth": ANY,
        "authorization": ANY,
        "tlsConfig": ANY,
        "bearerTokenSecret": ANY,
        "oauth2": ANY,
        "proxyUrl": STR,
        "followRedirects": BOOL,
        "enableHttp2": BOOL,
        "filterRunning": BOOL,
        "trackTimestampsStaleness": BOOL,
    }
)
_RULE = obj(
    {"alert": STR, "record": STR, "expr": STR, "for": STR, "keep_firing_for": STR,
     "labels": str_map(), "annotations": str_map()},
    ("expr",),
)  # fmt: skip
_RULE_GROUP = obj(
    {
        "name": STR,
        "interval": STR,
        "limit": INT,
        "partial_response_strategy": STR,
        "query_offset": STR,
        "labels": str_map(),
        "rules": arr(_RULE),
    },
    ("name",),
)
_BODIES["PodMonitor"] = obj(
    {
        "spec": obj(
            {
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": obj({"any": BOOL, "matchNames": arr(STR)}),
                "podMetricsEndpoints": arr(_POD_METRICS_ENDPOINT),
                "jobLabel": STR,
                "podTargetLabels": arr(STR),
                "sampleLimit": INT,
                "targetLimit": INT,
                "attachMetadata": ANY,
            },
            ("selector",),
        )
    },
    ("spec",),
)
_BODIES["PrometheusRule"] = obj(
    {"spec": obj({"groups": arr(_RULE_GROUP)})},
    ("spec",),
)

#: Kinds whose top level holds more than spec/status (Event): open at the top.
_OPEN_TOP = {"Event"}


def schema_for(kind: str) -> Schema:
    """The structural schema of ``kind`` (open ``spec``/``status`` when not described)."""
    body = _BODIES.get(kind) or obj({"spec": ANY, "status": ANY})
    props = {"apiVersion": STR, "kind": STR, "metadata": OBJECT_META, **body["properties"]}
    out = obj(props, tuple(body.get("required", ())))
    if kind in _OPEN_TOP:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


_TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


def _check(value: Any, schema: Schema, path: str, out: list[str], bad: list[str]) -> None:
    kind = schema.get("type")
    if value is None:
        return
    want = _TYPES.get(kind or "")
    if want is not None and (
        not isinstance(value, want) or (want is int and isinstance(value, bool))
    ):
        bad.append(f"{path or '.'}: expected {kind}, got {type(value).__name__}")
        return
    if kind == "array":
        for i, item in enumerate(value):
            _check(item, schema.get("items", ANY), f"{path}[{i}]", out, bad)
    elif kind == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if props is not None and key in props:
                _check(item, props[key], sub, out, bad)
            elif extra is not None:
                _check(item, extra, sub, out, bad)
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                out.append(sub)


def check(body: Mapping[str, Any], kind: str) -> tuple[list[str], list[str]]:
    """(unknown field paths, type errors) of ``body`` against ``kind``'s schema."""
    unknown: list[str] = []
    bad: list[str] = []
    _check(dict(body), schema_for(kind), "", unknown, bad)
    return unknown, bad
