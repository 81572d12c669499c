"""The capacity ledger (docs/design.md#capacity-ledger): what we may tell GitHub, from what the
scheduler confirmed.

Count halves, not pods:

    runner side   = real runner pods bound to a node and alive + counted runner placeholders
    workflow side = real workflow pods bound and alive          + counted workflow placeholders
    capacity      = min(runner side, workflow side, live maxRunners)   (0 when maxRunners is 0)

A runner Running on a cheap node is not a usable slot while no workflow half backs it, and a
placeholder counts only while Running, bound, not terminating, not a DisruptionTarget and on
a usable node (``PlaceholderPod.counts``). A Pending runner is not counted: the READY pair it
is about to take still is, so nothing is counted twice. In steady state the result equals
running jobs + READY pairs; READY pairs stay the unit the reconciler manages.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from reconciler.max_runners import clamp_max_runners
from reconciler.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class CapacityLedger:
    capacity: int
    runner_side: int
    workflow_side: int
    max_runners: int
    ready_pairs: int
    real_runners_bound: int
    real_workflows_bound: int
    runner_placeholders: int
    workflow_placeholders: int
    #: Bound runners whose workflow pod exists but is not bound: claimed jobs waiting for a node.
    starved_runners: int
    #: Registered runners without a job (minRunners' or hot slots'); the Actions service hands
    #: them jobs only within the advertised capacity (docs/semantics.md, Actions service).
    idle_runners: int
    #: Hot slots' workflow placeholders counted on the workflow side (a confirmed slot's, a
    #: taken one's until its job's workflow pod is bound: docs/design.md#hot-runners); their
    #: runners are on the runner side already.
    hot_workflow_halves: int = 0

    @property
    def headroom(self) -> int:
        """Slots we advertise beyond the jobs already holding resources."""
        return max(0, self.capacity - self.real_runners_bound)


def compute_ledger(
    snapshot: ClusterSnapshot,
    ready_pairs: int,
    *,
    releasing: AbstractSet[str] = frozenset(),
    released_pods: AbstractSet[str] = frozenset(),
    hot_workflow_halves: int = 0,
) -> CapacityLedger:
    """``releasing``: pairs this step is deleting or timing out; ``released_pods``: pods it is
    sweeping. They still show in the snapshot but must not be advertised even for one step.
    ``hot_workflow_halves``: the hot slots' placeholders that back a slot now
    (``HotKeeper.workflow_halves``: a confirmed slot's while its runner is idle, a taken one's
    until its job's workflow pod is bound; never a WARMING one)."""
    runner_placeholders = workflow_placeholders = 0
    for pair_id, pods in snapshot.placeholders.items():
        if pair_id in releasing:
            continue
        for pod in (pods.runner, pods.workflow):
            if pod is None or not pod.counts or pod.name in released_pods:
                continue
            if pod is pods.runner:
                runner_placeholders += 1
            else:
                workflow_placeholders += 1

    bound_runners = {p.name for p in snapshot.runner_pods if p.holds_slot}
    real_workflows_bound = sum(1 for w in snapshot.workflow_pods if w.holds_slot)
    starved = sum(
        1
        for w in snapshot.workflow_pods
        if w.runner_pod in bound_runners and w.node_name is None and not w.deleting
    )

    runner_side = len(bound_runners) + runner_placeholders
    workflow_side = real_workflows_bound + workflow_placeholders + hot_workflow_halves
    max_runners = clamp_max_runners(snapshot.max_runners)
    return CapacityLedger(
        capacity=min(runner_side, workflow_side, max_runners),
        runner_side=runner_side,
        workflow_side=workflow_side,
        max_runners=max_runners,
        ready_pairs=ready_pairs,
        real_runners_bound=len(bound_runners),
        real_workflows_bound=real_workflows_bound,
        runner_placeholders=runner_placeholders,
        workflow_placeholders=workflow_placeholders,
        starved_runners=starved,
        idle_runners=snapshot.idle_runners,
        hot_workflow_halves=hot_workflow_halves,
    )


def fail_closed_capacity(snapshot: ClusterSnapshot) -> int:
    """What may be advertised while the view of the cluster cannot be trusted (watches down).

    Zero. A stale view can show placeholders and even runner pods that died with a lost node,
    so nothing it shows may back a slot. Lowering the header never revokes jobs already
    assigned (docs/protocol.md#long-poll), so running jobs are untouched; GitHub simply assigns
    nothing new to this scale set (another one with room takes the backlog) until the watches
    recover. ``snapshot`` is taken so the policy can grow a safe refinement without changing
    callers.
    """
    del snapshot
    return 0
