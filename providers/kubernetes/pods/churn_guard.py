"""``doNotDisrupt: auto``: protect workflow placeholders only where a node holds one workflow
pod (docs/design.md#placeholder-pods).

Karpenter's single-node consolidation treats a placeholder like any pod. Where a node holds
one workflow pod (a GPU type with one GPU), a node holding only a warm placeholder is deleted
into the room a finished job just freed elsewhere: nothing is packed, the room the next job
would have used is taken, and its refill buys a node (the launches it cost on ice-failover:
docs/design.md#decisions). Where a node holds several, the same consolidation packs warm pairs
onto fewer nodes, and protecting them only costs node-hours (storm, wide-storm, burst in
docs/benchmarks-warm-pool.md#node-churn-issue-31). So ``auto`` protects exactly when no
instance type a NodePool hosting the workflow half allows holds two workflow pods:

- every hosting pool's known types hold one: protect (``"3600s"``, the duration form of
  :data:`AUTO_PROTECTION`);
- some allowed type holds two or more (CPU pools; a GPU pool that also allows a 4-GPU type):
  do not protect, Karpenter has something to pack and single-slot nodes are the exception;
- nothing known (no NodePool hosts the workflow half, or it lists no instance type this
  project knows, e.g. only ``karpenter.k8s.aws/instance-category``): protect. The churn
  doubles launches where it strikes and the protection's cost is bounded by its hour, so the
  unknown case takes the bounded cost. Without NodePools there is no Karpenter and the
  annotation is inert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Literal

from providers.kubernetes.placement.packing import pool_hosts, type_fits
from providers.kubernetes.pods.do_not_disrupt import annotation_value

#: What ``auto`` writes where it protects: the duration the ``1h`` setting writes, so an idle
#: warm node can still be consolidated or drifted an hour after its placeholder started.
AUTO_PROTECTION = 3600.0

DoNotDisruptSetting = bool | float | Literal["auto"]


def workflow_pods_per_node(
    pools: Iterable[Mapping[str, Any]],
    workflow_requests: Mapping[str, Decimal],
    workflow_selector: Mapping[str, str],
) -> int | None:
    """The most workflow pods one node of any type a hosting NodePool allows holds; None when
    no hosting pool allows a type this project knows that holds one."""
    most: int | None = None
    for pool in pools:
        if not pool_hosts(pool, workflow_selector):
            continue
        for fit in type_fits(pool, {}, workflow_requests):
            if fit.pairs > 0:
                most = max(most or 0, fit.pairs)
    return most


def protects(per_node: int | None) -> bool:
    """``auto``'s rule (module docstring): protect unless some type holds two or more."""
    return per_node is None or per_node < 2


def resolved_annotation(setting: DoNotDisruptSetting, per_node: int | None) -> str | None:
    """The ``karpenter.sh/do-not-disrupt`` value a workflow placeholder carries: ``auto``
    resolved with :func:`protects`, anything else as written (``annotation_value``)."""
    if isinstance(setting, str):  # the settings admit one string: "auto"
        return annotation_value(AUTO_PROTECTION) if protects(per_node) else None
    return annotation_value(setting)


__all__ = [
    "AUTO_PROTECTION",
    "DoNotDisruptSetting",
    "protects",
    "resolved_annotation",
    "workflow_pods_per_node",
]
