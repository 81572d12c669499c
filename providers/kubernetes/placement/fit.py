"""How many new placeholder pairs could schedule now: a Ray-style bin-packing bound.

Bounds attempts only; never reported as capacity. Reads an :class:`ObjectSource` like
:mod:`providers.kubernetes.observe.translate`; a :class:`FitMemo` reuses each pod's and node's parse
while its ``(uid, resourceVersion)`` is unchanged (see :mod:`providers.kubernetes.watch.memo`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from providers.kubernetes.observe.nodes import NodeState, matches_selector, node_state
from providers.kubernetes.observe.object_fields import metadata_of, pod_phase
from providers.kubernetes.observe.scale_set import ObjectSource, ScaleSetTarget
from providers.kubernetes.observe.signals import list_if_known
from providers.kubernetes.observe.translate import UNBOUNDED_PAIRS, Obj
from providers.kubernetes.placement.packing import pairs_per_node, pool_hosts
from providers.kubernetes.placement.resources import (
    Resources,
    add_into,
    effective_requests,
    quantity,
    resource_list,
)
from providers.kubernetes.pods import labels as L
from providers.kubernetes.watch.memo import ObjectMemo
from reconciler.snapshot import FitEstimate, PodPhase

# --- fit estimate ---------------------------------------------------------------------------


def _pair_fits(free: Resources, need: Mapping[str, Decimal]) -> bool:
    return all(free.get(r, Decimal(0)) >= v for r, v in need.items())


def _take(free: Resources, need: Mapping[str, Decimal]) -> None:
    for r, v in need.items():
        free[r] = free.get(r, Decimal(0)) - v


def _pod_holds_resources(pod: Obj) -> bool:
    return pod_phase(pod) in (PodPhase.PENDING, PodPhase.RUNNING, PodPhase.UNKNOWN)


#: (node name or None, effective requests, nodeSelector, the scale set of a placeholder or
#: None for any other pod).
PodUsage = tuple[str | None, Resources, Mapping[str, str], str | None]


def _pod_usage(pod: Obj) -> PodUsage | None:
    """A pod's :data:`PodUsage` when it holds resources; None if it holds none or its requests
    do not parse."""
    if not _pod_holds_resources(pod):
        return None
    spec = pod.get("spec") or {}
    try:
        req = effective_requests(spec)
    except ValueError:
        return None
    placeholder_of = (metadata_of(pod).get("labels") or {}).get(L.LABEL_SCALE_SET)
    return spec.get("nodeName") or None, req, spec.get("nodeSelector") or {}, placeholder_of


def _place_pending(
    pending: Sequence[tuple[Resources, Mapping[str, str]]],
    free_nodes: Sequence[tuple[Mapping[str, str], Resources]],
) -> Resources:
    """First-fit waiting pods into the free room their nodeSelector allows (the scheduler
    places them before any pod we create now); returns the requests of those that fit
    nowhere (they wait for a launch, within NodePool headroom)."""
    unplaced: Resources = {}
    for req, selector in pending:
        host = next(
            (
                free
                for labels, free in free_nodes
                if matches_selector(labels, selector) and _pair_fits(free, req)
            ),
            None,
        )
        if host is None:
            add_into(unplaced, req)
        else:
            _take(host, req)
    return unplaced


def _node_capacity(node: Obj) -> tuple[str, NodeState, Resources | None]:
    """(name, state, allocatable) of a node; allocatable None when it does not parse."""
    name = metadata_of(node).get("name", "")
    try:
        allocatable: Resources | None = _allocatable(node, name)
    except ValueError:
        allocatable = None
    return name, node_state(node), allocatable


def _allocatable(node: Obj, name: str) -> Resources:
    return resource_list((node.get("status") or {}).get("allocatable"), where=f"node {name}")


class FitMemo:
    """Parsed pods and nodes (and the last packing answer) reused across the fit estimates of
    one source; see :mod:`providers.kubernetes.watch.memo`."""

    def __init__(self) -> None:
        self.pods = ObjectMemo(_pod_usage)
        self.nodes = ObjectMemo(_node_capacity)
        self.packing: tuple[Any, Any] | None = None

    def age(self) -> None:
        self.pods.age()
        self.nodes.age()


def _versions(objs: Iterable[Obj]) -> tuple[tuple[Any, Any], ...] | None:
    """Every object's (uid, resourceVersion), or None when one lacks them."""
    out = []
    for obj in objs:
        meta = metadata_of(obj)
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not uid or version is None:
            return None
        out.append((uid, version))
    return tuple(out)


def fit_estimate(
    source: ObjectSource,
    target: ScaleSetTarget,
    runner_requests: Mapping[str, Decimal],
    workflow_requests: Mapping[str, Decimal],
    *,
    tolerations: Sequence[Mapping[str, Any]] = (),
    limit: int = UNBOUNDED_PAIRS,
    runner_selector: Mapping[str, str] | None = None,
    workflow_selector: Mapping[str, str] | None = None,
    memo: FitMemo | None = None,
) -> FitEstimate | None:
    """Ray-style estimate of how many new (runner, workflow) pairs could schedule now.

    1. Free allocatable per usable node (schedulable, Ready, no untolerated blocking taint):
       allocatable minus the requests of the pods bound to it, minus the waiting real pods
       (higher priority) and our own waiting placeholders that fit there (first fit, within
       their nodeSelector: the scheduler places them before any pod created now; counting
       that room as new made a listener of a full shared NodePool request pair after pair
       for one freed slot); new pairs are first-fit packed into the rest, each half
       independently (the two halves need not share a node). Other scale sets' waiting
       placeholders are not put ahead: at equal priority a new pair queues behind them,
       and leaving it out would starve this scale set.
    2. NodePool headroom: ``spec.limits - status.resources`` summed over NodePools, minus the
       requests of the waiting pods not placed in 1. (Karpenter provisions for them first);
       a resource no NodePool limits is unbounded. Pairs from headroom = the tightest
       resource's quotient.
    3. Result = pairs on existing nodes + pairs from headroom, capped at ``limit``; plus the
       launch group size (:func:`providers.kubernetes.placement.packing.pairs_per_node`).

    None when there are no NodePools (no Karpenter: no bound). With selectors given, only
    NodePools whose nodes carry a half's nodeSelector labels count for that headroom; without,
    every NodePool is assumed able to host the pair (over-estimates: safe, the scheduler stays
    the judge; this only bounds attempts).
    """
    all_pools = list(list_if_known(source, "NodePool"))
    if not all_pools:
        return None
    selectors = [s for s in (runner_selector, workflow_selector) if s is not None]
    pools = [p for p in all_pools if not selectors or any(pool_hosts(p, s) for s in selectors)]
    # 1. free allocatable on usable nodes.
    pod_usage = _pod_usage if memo is None else memo.pods
    node_capacity = _node_capacity if memo is None else memo.nodes
    nodes = {metadata_of(n).get("name", ""): n for n in source.list("Node")}
    used: dict[str, Resources] = {}
    ahead: list[tuple[Resources, Mapping[str, str]]] = []
    pending: Resources = {}
    for pod in source.list("Pod"):
        usage = pod_usage(pod)
        if usage is None:
            continue
        node_name, req, selector, placeholder_of = usage
        if node_name:
            add_into(used.setdefault(node_name, {}), req)
        elif placeholder_of is None or placeholder_of == target.ers_name:
            ahead.append((req, selector))
        else:
            # Another scale set's placeholder: same priority as ours, so a pair we create
            # now queues behind it rather than never queueing (that would starve us).
            add_into(pending, req)
    free_nodes: list[tuple[Mapping[str, str], Resources]] = []
    for node in nodes.values():
        name, state, allocatable = node_capacity(node)
        if state.blocks(tolerations):
            continue
        # A usable node whose allocatable does not parse: the parse error is the answer.
        free = dict(allocatable) if allocatable is not None else _allocatable(node, name)
        for r, v in used.get(name, {}).items():
            free[r] = free.get(r, Decimal(0)) - v
        free_nodes.append((metadata_of(node).get("labels") or {}, free))
    # Real pods and our own placeholders already waiting take free room first; what fits
    # nowhere waits for headroom (2.).
    add_into(pending, _place_pending(ahead, free_nodes))
    free_per_node = [free for _, free in free_nodes]
    on_nodes = 0
    while on_nodes < limit:
        placed = []
        for need in (runner_requests, workflow_requests):
            host = next((f for f in free_per_node if _pair_fits(f, need)), None)
            if host is None:
                break
            _take(host, need)
            placed.append((host, need))
        if len(placed) < 2:
            for host, need in placed:  # undo a half-placed pair
                for r, v in need.items():
                    host[r] += v
            break
        on_nodes += 1
    # 2. NodePool headroom.
    headroom: Resources = {}
    unlimited: set[str] = set()
    for pool in pools:
        limits = (pool.get("spec") or {}).get("limits") or {}
        used_by_pool = (pool.get("status") or {}).get("resources") or {}
        pool_name = metadata_of(pool).get("name", "?")
        for r in set(runner_requests) | set(workflow_requests):
            if r not in limits:
                unlimited.add(r)
                continue
            left = quantity(limits[r], where=f"nodepool {pool_name} spec.limits.{r}") - quantity(
                used_by_pool.get(r, 0), where=f"nodepool {pool_name} status.resources.{r}"
            )
            headroom[r] = headroom.get(r, Decimal(0)) + max(left, Decimal(0))
    pair = dict(runner_requests)
    add_into(pair, workflow_requests)
    from_pools = limit
    for r, amount in pair.items():
        if amount <= 0 or r in unlimited:
            continue
        left = headroom.get(r, Decimal(0)) - pending.get(r, Decimal(0))
        from_pools = min(from_pools, max(0, int(left // amount)))
    total = min(limit, on_nodes + from_pools)
    same_node = runner_selector == workflow_selector
    packing_args = (
        pools,
        runner_requests if same_node else {},
        workflow_requests,
        workflow_selector or {},
    )
    versions = None if memo is None else _versions(pools)
    if memo is None or versions is None:
        packing = pairs_per_node(*packing_args)
    else:
        key = (versions, *(tuple(sorted(a.items())) for a in packing_args[1:]))
        if memo.packing is None or memo.packing[0] != key:
            memo.packing = (key, pairs_per_node(*packing_args))
        packing = memo.packing[1]
    if memo is not None:
        memo.age()
    detail = (
        f"{on_nodes} on existing nodes + {from_pools} within NodePool limits; "
        f"{packing.pairs_per_node} per {packing.instance_type or 'node'}"
    )
    return FitEstimate(
        new_pairs=total,
        detail=detail,
        on_existing_nodes=min(on_nodes, total),
        pairs_per_node=packing.pairs_per_node,
        pairs_per_large_node=packing.pairs_per_large_node,
        runner_share=runner_share(runner_requests, pair) if same_node else 0.0,
    )


def runner_share(runner: Mapping[str, Decimal], pair: Mapping[str, Decimal]) -> float:
    """The largest fraction of any resource of ``pair`` that the runner half requests."""
    shares = [runner.get(r, Decimal(0)) / total for r, total in pair.items() if total > 0]
    return float(max(shares, default=Decimal(0)))
