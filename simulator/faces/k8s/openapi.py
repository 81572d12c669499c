"""OpenAPI v3 documents for the served kinds (what kubectl reads to validate and apply).

kubectl (1.27+) fetches the index ``/openapi/v3`` and then one document per group-version
(``/openapi/v3/apis/<group>/<version>``). Its field-validation check
(``resource.NewQueryParamVerifierV3`` in kubectl) looks in that document for a PATCH operation
tagged with the kind's ``x-kubernetes-group-version-kind`` that declares a ``fieldValidation``
query parameter; when it finds one it sends ``fieldValidation=Strict`` and leaves validation
to the server (:mod:`.schemas`). The schemas are served under ``components.schemas`` too.

OpenAPI v2 (``/openapi/v2``) is not served: kubectl only falls back to it when v3 is missing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from simulator.engine.store import KindInfo
from simulator.faces.k8s.schemas import schema_for

Doc = dict[str, Any]

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force")


def gv_path(info: KindInfo) -> str:
    """``api/v1`` or ``apis/<group>/<version>`` (keys of the v3 index)."""
    return f"apis/{info.group}/{info.version}" if info.group else f"api/{info.version}"


def schema_name(info: KindInfo) -> str:
    group = info.group or "core"
    return f"io.k8s.sim.{group}.{info.version}.{info.kind}"


def _gvk(info: KindInfo) -> dict[str, str]:
    return {"group": info.group, "version": info.version, "kind": info.kind}


def _operation(info: KindInfo, verb: str) -> Doc:
    ref = {"$ref": f"#/components/schemas/{schema_name(info)}"}
    params = [{"name": q, "in": "query", "schema": {"type": "string"}} for q in _QUERY]
    return {
        "operationId": f"{verb}{info.kind}",
        "parameters": params if verb in ("patch", "create", "replace") else [],
        "responses": {"200": {"content": {"application/json": {"schema": ref}}}},
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": _gvk(info),
    }


def _paths(info: KindInfo) -> Doc:
    base = "/" + gv_path(info)
    prefix = f"{base}/namespaces/{{namespace}}" if info.namespaced else base
    collection = f"{prefix}/{info.plural}"
    return {
        collection: {"get": _operation(info, "list"), "post": _operation(info, "create")},
        f"{collection}/{{name}}": {
            "get": _operation(info, "get"),
            "put": _operation(info, "replace"),
            "patch": _operation(info, "patch"),
            "delete": _operation(info, "delete"),
        },
    }


def group_version_doc(kinds: Iterable[KindInfo]) -> Doc:
    """The v3 document of one group-version."""
    paths: Doc = {}
    schemas: Doc = {}
    for info in sorted(kinds, key=lambda k: k.plural):
        paths.update(_paths(info))
        schemas[schema_name(info)] = schema_for(info.kind) | {
            "x-kubernetes-group-version-kind": [_gvk(info)]
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (arc-sim)", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def index(kinds: Iterable[KindInfo]) -> Doc:
    """``/openapi/v3``: each group-version's URL, with a content hash clients cache by."""
    by_gv: dict[str, list[KindInfo]] = {}
    for info in kinds:
        by_gv.setdefault(gv_path(info), []).append(info)
    paths: Doc = {}
    for gv, members in sorted(by_gv.items()):
        text = json.dumps(group_version_doc(members), sort_keys=True).encode()
        digest = hashlib.sha256(text).hexdigest()[:32].upper()
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}
