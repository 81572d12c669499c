"""Server-side printing (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) of pods.

Columns and cell rules follow kube-apiserver's pod printer (``printPod`` in
``pkg/printers/internalversion``): NAME, READY (ready containers / containers), STATUS (the
phase, replaced by ``status.reason``, a container's waiting or terminated reason, and
``Terminating`` once deleted), RESTARTS, AGE; wide: IP, NODE, NOMINATED NODE, READINESS GATES.
Init containers' ``Init:`` statuses are not modelled. Other kinds are served as plain JSON, which
kubectl prints client-side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from simulator.engine.store import parse_iso

Obj = dict[str, Any]

_COLUMNS = (
    ("Name", "string", "name", 0),
    ("Ready", "string", "", 0),
    ("Status", "string", "", 0),
    ("Restarts", "string", "", 0),
    ("Age", "string", "", 0),
    ("IP", "string", "", 1),
    ("Node", "string", "", 1),
    ("Nominated Node", "string", "", 1),
    ("Readiness Gates", "string", "", 1),
)


def wants_table(accept: str) -> bool:
    """True when the client prefers a meta.k8s.io/v1 Table (kubectl get does)."""
    first = accept.split(",")[0].replace(" ", "")
    return "as=Table" in first and "v=v1" in first.split(";")


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def pod_status(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for cs in reversed(status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        waiting = (state.get("waiting") or {}).get("reason")
        terminated = state.get("terminated") or {}
        if waiting:
            reason = waiting
        elif terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            signal = terminated.get("signal")
            code = terminated.get("exitCode", 0)
            reason = f"Signal:{signal}" if signal else f"ExitCode:{code}"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def pod_cells(pod: Mapping[str, Any], now: float) -> list[Any]:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    # Like printPod: a container counts as ready only while it is ready and running.
    ready = sum(1 for cs in statuses if cs.get("ready") and (cs.get("state") or {}).get("running"))
    restarts = sum(int(cs.get("restartCount", 0)) for cs in statuses)
    created = meta.get("creationTimestamp")
    age = human_duration(now - parse_iso(created)) if created else "<unknown>"
    gates = spec.get("readinessGates") or []
    return [
        meta.get("name", ""),
        f"{ready}/{len(spec.get('containers') or [])}",
        pod_status(pod),
        restarts,
        age,
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}" if gates else "<none>",
    ]


def _row_object(obj: Mapping[str, Any], include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return dict(obj)
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def pod_table(pods: Iterable[Mapping[str, Any]], now: float, rv: str, include: str) -> Obj:
    """A Table of ``pods``; ``include`` is ``includeObject`` (None / Metadata / Object)."""
    rows: list[Obj] = []
    for pod in pods:
        row: Obj = {"cells": pod_cells(pod, now)}
        obj = _row_object(pod, include or "Metadata")
        if obj is not None:
            row["object"] = obj
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": n, "priority": p}
            for n, t, f, p in _COLUMNS
        ],
        "rows": rows,
    }
