"""A node's free room, with kube-scheduler's arithmetic: allocatable minus the effective
requests of every pod bound to it that has not ended (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from providers.kubernetes.placement.resources import (
    QuantityError,
    Resources,
    effective_requests,
    quantity,
)


def free_room(
    node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], names: Iterable[str]
) -> Resources:
    """Free amount of each resource in ``names`` on ``node`` (never below zero)."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    free: Resources = {}
    for name in names:
        try:
            free[name] = quantity(allocatable.get(name, 0), where=f"allocatable {name}")
        except QuantityError:
            free[name] = Decimal(0)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        try:
            used = effective_requests(pod.get("spec") or {}, where="pod")
        except QuantityError:
            continue
        for name in free:
            free[name] -= used.get(name, Decimal(0))
    return {name: max(Decimal(0), amount) for name, amount in free.items()}
