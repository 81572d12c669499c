"""Nodes the scale set's jobs already keep busy, which placeholders prefer.

kube-scheduler's default scoring (NodeResourcesFit, LeastAllocated) sends each pod to the
emptiest node that fits. For a placeholder that is the wrong node: the job that later takes
its room lands there, and a job's pods hold their node until they finish (ARC's runner pods
are commonly ``karpenter.sh/do-not-disrupt``, and evicting a running job is never cheap). So
a trickle of jobs over a fleet that is draining after a burst keeps every node alive, one job
each, instead of letting the emptiest nodes empty and be consolidated.

A placeholder therefore prefers (node affinity, one ``matchFields`` term on ``metadata.name``
per node) the nodes where this scale set's runner and workflow pods run: they stay anyway
while those jobs run. The preference never filters: where no such node has room the
scheduler scores as before. Karpenter ignores a ``matchFields``-only preference when it
launches (it cannot launch a node of a given name), so launches are unchanged.

Not for a hot slot's workflow placeholder: its job lands on its idle runner, already placed,
and packed those placeholders lengthened the hot pool's tail (docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from reconciler.snapshot import ClusterSnapshot

#: At most this many names over all terms (the busiest first): bounds the pod spec's size.
MAX_NAMES = 64
#: The weight of a node per job it runs, up to :data:`MAX_WEIGHT`. NodeAffinity normalizes
#: raw scores over the feasible nodes (100 for the busiest), so the busier of two nodes wins
#: unless the emptier one is far emptier; below ``capped_pools.PREFERENCE_WEIGHT`` (100),
#: which picks instance types where a NodePool limit binds.
WEIGHT_PER_JOB = 10
MAX_WEIGHT = 50


def busy_nodes(snapshot: ClusterSnapshot) -> tuple[tuple[str, int], ...]:
    """(node, pods) for nodes running this scale set's runner or workflow pods (bound, not
    ending), the busiest first, then by name; at most :data:`MAX_NAMES`."""
    count: Counter[str] = Counter(
        pod.node_name
        for pods in (snapshot.runner_pods, snapshot.workflow_pods)
        for pod in pods
        if pod.node_name is not None and pod.holds_slot
    )
    ranked = sorted(count.items(), key=lambda item: (-item[1], item[0]))
    return tuple(ranked[:MAX_NAMES])


def busy_terms(nodes: tuple[tuple[str, int], ...]) -> list[dict[str, Any]]:
    """``preferredDuringSchedulingIgnoredDuringExecution`` entries: one per node, weighted by
    the pods it runs (capped), heaviest first, then by name. One node a term: the API server
    rejects a ``matchFields`` requirement with ``In`` / ``NotIn`` and more than one value
    (kubernetes ``pkg/apis/core/validation`` ``ValidateNodeFieldSelectorRequirement``: "must
    be only one value ... for node field selector"), so a term naming several nodes made
    every such placeholder's create fail with 422 on a real cluster."""
    return [
        {
            "weight": min(MAX_WEIGHT, WEIGHT_PER_JOB * pods),
            "preference": {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]
            },
        }
        for name, pods in sorted(
            nodes, key=lambda item: (-min(MAX_WEIGHT, WEIGHT_PER_JOB * item[1]), item[0])
        )
    ]
