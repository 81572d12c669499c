"""Virtual-time faults of the cluster: lost nodes, deleted placeholders, consolidation."""

from __future__ import annotations

import contextlib
import random
from typing import Any

from providers.kubernetes.pods import labels as L
from simulator.engine.store import Obj, ObjectStore, StoreError

# --- virtual-time hooks: the cluster ---------------------------------------------------------


def placeholder_pods(store: ObjectStore, scale_set: str) -> list[Obj]:
    return [
        p
        for p in store.list("Pod")
        if (p["metadata"].get("labels") or {}).get(L.LABEL_SCALE_SET) == scale_set
    ]


def _placeholder_nodes(store: ObjectStore, scale_set: str) -> list[str]:
    nodes = {(p.get("spec") or {}).get("nodeName") for p in placeholder_pods(store, scale_set)}
    return sorted(n for n in nodes if n)


def lose_placeholder_nodes(
    cluster: Any, store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """``count`` nodes hosting this scale set's placeholders vanish (their pods with them)."""
    nodes = _placeholder_nodes(store, scale_set)
    chosen = rng.sample(nodes, min(count, len(nodes)))
    for name in chosen:
        cluster.lose_node(name, reason="node_lost")
    return chosen


def delete_placeholders(
    store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """Someone (a human, a policy engine) deletes ``count`` placeholder pods directly."""
    pods = [
        p for p in placeholder_pods(store, scale_set) if not p["metadata"].get("deletionTimestamp")
    ]
    chosen = rng.sample(pods, min(count, len(pods)))
    names = []
    for pod in chosen:
        meta = pod["metadata"]
        with contextlib.suppress(StoreError):
            store.delete("Pod", meta["namespace"], meta["name"])
            names.append(meta["name"])
    return names


def consolidate_placeholder_nodes(
    cluster: Any, store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """Karpenter disrupts ``count`` Karpenter nodes hosting placeholders: disrupted taint, then
    eviction of every pod through the eviction API (DisruptionTarget, graceful delete).

    Uses the simulated Karpenter's own termination path (``cluster.lifecycle.termination``),
    which the cluster package keeps internal; static nodes are never consolidated.
    """
    lifecycle = cluster.lifecycle
    nodes = [n for n in _placeholder_nodes(store, scale_set) if n in lifecycle.claims]
    chosen = rng.sample(nodes, min(count, len(nodes)))
    for name in chosen:
        lifecycle.termination.add_disrupted_taint(name)
        lifecycle.termination.terminate(name, "consolidated")
    return chosen
