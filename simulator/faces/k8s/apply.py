"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``) for one field manager.

What is modelled (from the API server's ``fieldmanager`` package, as far as one manager
needs): the body is a YAML (or JSON) partial object; ``fieldManager`` is required (422 like
``ValidatePatchOptions``); applying to a missing object creates it; the fields the manager
applied before and omits now are removed, fields it sets are set, fields it never applied are
left alone; the manager's field set is recorded in ``metadata.managedFields`` as a FieldsV1
(``f:<name>`` keys) entry with ``operation: Apply``.

Not modelled: conflicts between managers (every apply behaves as ``force=true``), ownership
of fields written by updates, and list merge keys (lists are atomic: an applied list replaces
the whole list, as for ``x-kubernetes-list-type: atomic``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from simulator.faces.k8s.errors import ApiError, invalid

Obj = dict[str, Any]
#: Fields apply never owns (identity and server-managed metadata).
_SERVER_FIELDS = {
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
}


def parse_body(raw: bytes) -> Obj:
    try:
        body = yaml.safe_load(raw.decode("utf-8")) if raw else None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ApiError(400, "BadRequest", f"error decoding YAML: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "an apply patch must be an object")
    return body


def require_manager(manager: str | None) -> str:
    if not manager:
        raise invalid(
            "PatchOptions",
            "",
            [("fieldManager", "FieldValueRequired", "Required value: is required for apply patch")],
            "meta.k8s.io",
        )
    return manager


def field_set(config: Mapping[str, Any], top: bool = True) -> Obj:
    """FieldsV1 of an applied configuration: ``{"f:spec": {"f:x": {}}}`` (lists atomic)."""
    out: Obj = {}
    for key, value in config.items():
        if top and key in ("apiVersion", "kind"):
            continue
        if key in _SERVER_FIELDS:
            continue
        if isinstance(value, Mapping) and value:
            out[f"f:{key}"] = field_set(value, top=False)
        else:
            out[f"f:{key}"] = {}
    return out


def _prune(target: Obj, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Remove from ``target`` the fields in ``old`` (FieldsV1) that ``new`` no longer has."""
    for fkey, sub in old.items():
        key = fkey.removeprefix("f:")
        if fkey not in new:
            target.pop(key, None)
        elif sub and isinstance(target.get(key), dict):
            _prune(target[key], sub, new[fkey])


def _merge(target: Obj, config: Mapping[str, Any]) -> None:
    for key, value in config.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def managed_entry(manager: str, api_version: str, fields: Obj, time: str) -> Obj:
    return {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def applied(current: Obj | None, config: Obj, manager: str) -> tuple[Obj, Obj]:
    """(the object after applying ``config`` by ``manager``, the manager's new field set)."""
    config = {k: v for k, v in config.items()}
    meta_cfg = {k: v for k, v in (config.get("metadata") or {}).items() if k not in _SERVER_FIELDS}
    config["metadata"] = meta_cfg
    fields = field_set(config)
    if current is None:
        return copy.deepcopy(config), fields
    result = copy.deepcopy(current)
    previous: Obj = {}
    for entry in current["metadata"].get("managedFields") or ():
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            previous = entry.get("fieldsV1") or {}
    _prune(result, previous, fields)
    _merge(result, config)
    return result, fields


def with_managed(obj: Obj, manager: str, fields: Obj, time: str) -> None:
    """Record ``manager``'s Apply entry in ``obj``'s managedFields (replacing its old one)."""
    meta = obj.setdefault("metadata", {})
    kept = [
        e
        for e in meta.get("managedFields") or ()
        if not (e.get("manager") == manager and e.get("operation") == "Apply")
    ]
    meta["managedFields"] = [*kept, managed_entry(manager, obj.get("apiVersion", ""), fields, time)]
