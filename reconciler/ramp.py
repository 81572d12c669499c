"""The launch ramp: how many QUEUED pairs decide may request this step
(docs/design.md#launch-ramp). Pure; read by decide's ``resize`` (mends) and ``launch``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from reconciler.decision import DecideInput
from reconciler.sizing import group_size
from state_machine.table import IN_FLIGHT


@dataclass(frozen=True, slots=True)
class LaunchBudget:
    pairs: int
    #: The tightest bound: "ramp" (node-launch rate), "nodepool" (fit estimate),
    #: "in-flight cap" or "per-step cap".
    limited_by: str


def launch_budget(inp: DecideInput, in_flight: int, unbound_in_flight: int) -> LaunchBudget:
    """How many QUEUED pairs may be requested now: the ramp (docs/design.md#launch-ramp).

    1. Safety valves: ``maxPairsInFlight`` minus pairs in flight, ``maxRequestsPerStep``.
    2. NodePool headroom: the fit estimate's new pairs (free allocatable + pool limits).
    3. Node-launch rate: pairs that fit free allocatable need no node; the rest need new
       nodes, which may come at ``nodeLaunchRate`` per minute minus the NodeClaims created in
       the last minute minus the nodes our pending pairs not covered by a launching NodeClaim
       will still cause. A big batch fills nodes of the largest allowed type (Karpenter grows
       each NodeClaim until nothing more fits), so that is the pairs-per-node of the rate.
    maxRunners headroom already bounds how many pairs exist (``desired_pairs``).
    """
    config, fit, launches = inp.config, inp.snapshot.fit, inp.snapshot.launches
    bounds = [
        (config.max_pairs_in_flight - in_flight, "in-flight cap"),
        (config.max_requests_per_step, "per-step cap"),
    ]
    if fit is not None:
        bounds.append((fit.new_pairs, "nodepool"))
    if fit is not None and launches is not None:
        per_node = max(group_size(inp.snapshot, config), fit.pairs_per_large_node)
        uncovered = max(0, unbound_in_flight - launches.covered_pairs)
        nodes = (
            math.floor(config.node_launch_rate)
            - launches.launched_last_minute
            - math.ceil(uncovered / per_node)
        )
        # Pending pairs will take free allocatable before new pairs do.
        on_existing = max(0, fit.on_existing_nodes - unbound_in_flight)
        bounds.append((on_existing + max(0, nodes) * per_node, "ramp"))
    pairs, limited_by = min(bounds)
    return LaunchBudget(max(0, pairs), limited_by)


def unbound_in_flight(inp: DecideInput) -> int:
    """Pairs in flight with a half still waiting for a node: each may still cause a launch."""
    count = 0
    for pair_id, pods in inp.snapshot.placeholders.items():
        record = inp.pairs.get(pair_id)
        if record is None or record.state not in IN_FLIGHT:
            continue
        if any(p.node_name is None and not p.lost for p in pods.present()):
            count += 1
    return count
