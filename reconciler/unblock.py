"""Unblock: give the room of a few half-placed pairs to the runner halves of the others.

kube-scheduler pops higher priority first, so when new nodes come up the workflow halves
(+10) of every waiting pair bind before any runner half (-10). Karpenter sized its
NodeClaims for whole pairs, but whole pairs are not what binds: the later pairs' workflow
halves take the room it meant for the earlier pairs' runner halves, and real runner and
workflow pods take more. What is left is many PARTIAL pairs, each holding a bound workflow
half, whose runner halves report ``Insufficient cpu`` (or memory) until Karpenter notices and
launches another node, a minute later. None of them backs a slot meanwhile.

Releasing the newest ``k`` of ``n`` such pairs frees ``k`` workflow halves of room, which holds
``k * (1 - share) / share`` runner halves (``share`` = the runner half's part of a pair,
:attr:`reconciler.snapshot.FitEstimate.runner_share`). The smallest ``k`` with room for the
other ``n - k`` is ``ceil(n * share)``: those ``n - k`` pairs become READY now instead of
after a node launch, and resize requests the ``k`` again, for the node Karpenter is
launching anyway (docs/design.md#unblocking-half-placed-pairs; figures in
docs/design.md#decisions).

Steps (``stuck_pairs`` then ``to_release``):

1. Stuck: REQUESTED or PARTIAL pairs whose workflow half is Running on a usable node and
   whose runner half is unbound, not lost, unschedulable for want of resources (the
   scheduler's message names an ``Insufficient`` resource; a selector or taint mismatch is
   not helped by room) and at least ``STUCK_AFTER`` old: room a finishing job frees comes
   within seconds, a node not before Karpenter's batch closes and the machine boots.
2. Release the newest ``ceil(n * share)`` of them, only when that leaves at least one pair
   to complete (``n >= 2``), and never without an estimate (``share`` 0: unknown sizes, or
   halves that may not share a node).

Decide holds its launches in the step that releases (``Decision.launch_limited_by``
"unblocking"): a new pair's workflow half would take the freed room first, for the same
reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from reconciler.snapshot import PairPods, PlaceholderPod
from state_machine.record import PairRecord
from state_machine.table import IN_FLIGHT

#: Seconds a runner half waits before it counts as stuck: Karpenter's longest batch window
#: (``BATCH_MAX_DURATION``, 10 s); past it the pod's room is a node launch away.
STUCK_AFTER = 10.0
#: kube-scheduler's filter message for a resource that does not fit ("3 Insufficient cpu").
_FOR_WANT_OF_ROOM = "Insufficient "


def stuck_pairs(
    records: Iterable[PairRecord], placeholders: Mapping[str, PairPods], now: float
) -> list[PairRecord]:
    """Pairs waiting with their workflow half bound and their runner half without room."""
    stuck = []
    for record in records:
        if record.state not in IN_FLIGHT:
            continue
        pods = placeholders.get(record.pair_id)
        if pods is not None and _bound(pods.workflow) and _waits_for_room(pods.runner, now):
            stuck.append(record)
    return stuck


def _bound(pod: PlaceholderPod | None) -> bool:
    return pod is not None and pod.counts


def _waits_for_room(pod: PlaceholderPod | None, now: float) -> bool:
    return (
        pod is not None
        and pod.node_name is None
        and not pod.lost
        and _FOR_WANT_OF_ROOM in (pod.unschedulable_message or "")
        and now - pod.created_at >= STUCK_AFTER
    )


def to_release(stuck: list[PairRecord], share: float) -> list[PairRecord]:
    """The newest ``ceil(n * share)`` stuck pairs, or none when that would leave none."""
    count = len(stuck)
    if count < 2 or not 0 < share < 1:
        return []
    release = math.ceil(count * share)
    if release >= count:
        return []
    newest = sorted(stuck, key=lambda r: (r.since, r.pair_id), reverse=True)
    return newest[:release]
