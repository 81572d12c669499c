"""What the cache keeps of each object (client-go transform style): pods are slimmed to the
fields the reconciler reads, with short strings interned; ``managedFields`` are dropped from
everything."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from providers.kubernetes.pods import labels as L
from providers.kubernetes.watch.targets import RESOURCES

Obj = dict[str, Any]

_POD_META = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_POD_SPEC = (
    "nodeName",
    "tolerations",
    "priorityClassName",
    "priority",
    "overhead",
    "resources",
    "schedulerName",
    "nodeSelector",
    "imagePullSecrets",
)
#: ``image``: the job images placeholders pre-pull (providers/kubernetes/pods/job_images.py).
_CONTAINER = ("name", "image", "resources", "restartPolicy")
_OWNER = ("kind", "name", "uid", "controller")
_CONDITION = ("type", "status", "reason", "message")
#: Only these pod conditions are read (translate: disruption, unschedulable message).
_KEPT_CONDITIONS = frozenset({"DisruptionTarget", "PodScheduled"})
_KEPT_ANNOTATION_PREFIXES = (L.PREFIX, L.ANNOTATION_DO_NOT_DISRUPT)
#: Strings up to this length are interned: label keys/values, phases, node names repeat
#: across thousands of pods, and JSON decoding gives every event its own copies.
_INTERN_MAX = 64


def _compact(value: Any) -> Any:
    """A copy with dict keys and short strings interned (shared across cached objects)."""
    if isinstance(value, str):
        return sys.intern(value) if len(value) <= _INTERN_MAX else value
    if isinstance(value, dict):
        return {sys.intern(k): _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _pick(obj: Mapping[str, Any], keys: Iterable[str]) -> Obj:
    return {k: _compact(obj[k]) for k in keys if k in obj}


def slim_pod(pod: Mapping[str, Any]) -> Obj:
    """Keep what translation, fit estimates and writes read; drop the rest (env, volumes...).

    Annotations are kept only for our prefix and ``karpenter.sh/do-not-disrupt`` (others,
    e.g. ``kubectl.kubernetes.io/last-applied-configuration``, can be large); conditions
    only ``DisruptionTarget`` and ``PodScheduled``; owner references only kind/name/uid.
    """
    meta = pod.get("metadata") or {}
    out_meta = _pick(meta, _POD_META)
    if "ownerReferences" in meta:
        out_meta["ownerReferences"] = [_pick(o, _OWNER) for o in meta["ownerReferences"] or ()]
    annotations = {
        sys.intern(k): v
        for k, v in (meta.get("annotations") or {}).items()
        if k.startswith(_KEPT_ANNOTATION_PREFIXES)
    }
    if annotations:
        out_meta["annotations"] = annotations
    spec = pod.get("spec") or {}
    out_spec = _pick(spec, _POD_SPEC)
    for field in ("containers", "initContainers"):
        if field in spec:
            out_spec[field] = [_pick(c, _CONTAINER) for c in spec[field] or ()]
    status = pod.get("status") or {}
    out_status: Obj = _pick(status, ("phase", "nominatedNodeName"))
    init_statuses = [_init_status(c) for c in status.get("initContainerStatuses") or ()]
    if init_statuses:
        out_status["initContainerStatuses"] = init_statuses
    conditions = [
        _pick(c, _CONDITION)
        for c in status.get("conditions") or ()
        if c.get("type") in _KEPT_CONDITIONS
    ]
    if conditions:
        out_status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": out_meta,
        "spec": out_spec,
        "status": out_status,
    }


def _init_status(status: Mapping[str, Any]) -> Obj:
    """An init container's name and what failed pre-pulls read of its state."""
    state = status.get("state") or {}
    kept: Obj = {}
    if "waiting" in state:
        kept["waiting"] = _pick(state["waiting"] or {}, ("reason",))
    if "terminated" in state:
        kept["terminated"] = _pick(state["terminated"] or {}, ("exitCode",))
    return {"name": _compact(status.get("name", "")), "state": kept}


def drop_managed_fields(obj: Mapping[str, Any], kind: str, api_version: str) -> Obj:
    out: Obj = {k: _compact(v) for k, v in obj.items() if k != "metadata"}
    out["metadata"] = {
        k: _compact(v) for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"
    }
    out.setdefault("kind", kind)
    out.setdefault("apiVersion", api_version)
    return out


def transform(kind: str, obj: Mapping[str, Any]) -> Obj:
    if kind == "Pod":
        return slim_pod(obj)
    res = RESOURCES[kind]
    api_version = f"{res.group}/{res.version}" if res.group else res.version
    return drop_managed_fields(obj, kind, api_version)
