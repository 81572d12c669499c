"""How to launch placeholder pairs so Karpenter packs them well, and how fast nodes come.

1. :func:`pairs_per_node`: for the NodePools that can host the pair (Karpenter could launch a
   node carrying the pair's nodeSelector labels: :func:`pool_hosts`), the instance types their
   requirements allow, minus those larger than the pool's remaining limits (Karpenter filters
   those too). For each type, how many whole pairs (runner + workflow half on one node) its
   allocatable holds; the best-fitting type is the one whose pairs use the largest share of it
   (dominant resource), ties to more pairs. Requesting pairs in groups of that size lets one
   Karpenter batch fill one such node instead of picking the smallest type for a lone pair
   (under a vCPU cap, small nodes waste the cap).
2. :func:`launch_facts`: NodeClaims created in the last minute (launch rate) and NodeClaims
   not initialized yet (nodes on their way), from the cluster itself.

Both only bound *how many pairs to request when*; the scheduler alone confirms capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from providers.kubernetes.observe.object_fields import metadata_of, parse_timestamp
from providers.kubernetes.placement.instance_types import shape
from providers.kubernetes.placement.resources import Resources, add_into, quantity
from providers.kubernetes.pods import labels as L
from reconciler.snapshot import LaunchFacts

LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
#: The launch rate is counted over this window.
RATE_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class Packing:
    #: Pairs per node of the best-fitting allowed type (the launch group size).
    pairs_per_node: int
    instance_type: str | None
    #: Pairs per node of the largest allowed type: what Karpenter fills when many pairs are
    #: pending at once (its scheduler grows each NodeClaim until no allowed type fits more).
    pairs_per_large_node: int = 1


def _template(pool: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pool.get("spec") or {}).get("template") or {}


def pool_hosts(pool: Mapping[str, Any], node_selector: Mapping[str, str]) -> bool:
    """Karpenter could launch a node of ``pool`` that carries every label of
    ``node_selector`` (its ``Compatible`` check of a pod's requirements against a NodePool's).

    Per selected label, in order: a template label must equal it; else every requirement on
    its key must allow it (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``);
    else it must be a well-known label, which the instance type or Karpenter sets on every
    node (``kubernetes.io/arch``, ``karpenter.sh/nodepool`` = the pool's name, ...). A custom
    label the pool neither sets nor requires is never on its nodes.
    """
    template = _template(pool)
    labels = dict(metadata_of(template).get("labels") or {})
    labels.setdefault(L.LABEL_NODEPOOL, str(metadata_of(pool).get("name", "")))
    requirements = (template.get("spec") or {}).get("requirements") or ()
    for key, value in node_selector.items():
        if key in labels:
            if labels[key] != value:
                return False
            continue
        on_key = [r for r in requirements if r.get("key") == key]
        if on_key:
            if not all(_allows(r, value) for r in on_key):
                return False
        elif key not in WELL_KNOWN_LABELS and not key.startswith(WELL_KNOWN_PREFIXES):
            return False
    return True


#: Labels every node Karpenter launches carries, set from its instance type and offering
#: (``v1.WellKnownLabels`` and the AWS provider's instance labels).
WELL_KNOWN_LABELS = frozenset(
    {
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "karpenter.sh/capacity-type",
    }
)
WELL_KNOWN_PREFIXES = ("karpenter.k8s.aws/",)


def _allows(requirement: Mapping[str, Any], value: str) -> bool:
    """One NodeSelectorRequirement admits a node labelled ``value`` under its key."""
    op = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or ()]
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return True
    if op in ("Gt", "Lt") and values:
        try:
            number, bound = int(value), int(values[0])
        except ValueError:
            return False
        return number > bound if op == "Gt" else number < bound
    return False  # DoesNotExist, or an operator Karpenter would reject


def allowed_types(pool: Mapping[str, Any]) -> tuple[str, ...]:
    for req in (_template(pool).get("spec") or {}).get("requirements") or ():
        if req.get("key") == LABEL_INSTANCE_TYPE and req.get("operator") == "In":
            return tuple(str(v) for v in req.get("values") or ())
    return ()


def _remaining(pool: Mapping[str, Any]) -> Resources:
    spec_limits = (pool.get("spec") or {}).get("limits") or {}
    used = (pool.get("status") or {}).get("resources") or {}
    name = metadata_of(pool).get("name", "?")
    return {
        r: quantity(v, where=f"nodepool {name} spec.limits.{r}")
        - quantity(used.get(r, 0), where=f"nodepool {name} status.resources.{r}")
        for r, v in spec_limits.items()
    }


def _pairs_on(allocatable: Mapping[str, Decimal], pair: Mapping[str, Decimal]) -> tuple[int, float]:
    """Whole pairs a node holds, and the dominant share of it they use."""
    fits = [
        int(allocatable.get(r, Decimal(0)) // amount) for r, amount in pair.items() if amount > 0
    ]
    n = min(fits) if fits else 0
    if n <= 0:
        return 0, 0.0
    share = max(float(n * amount / allocatable[r]) for r, amount in pair.items() if amount > 0)
    return n, share


def _pair(
    runner_requests: Mapping[str, Decimal], workflow_requests: Mapping[str, Decimal]
) -> Resources:
    pair: Resources = dict(runner_requests)
    add_into(pair, workflow_requests)
    pair["pods"] = pair.get("pods", Decimal(0)) + 2
    return pair


@dataclass(frozen=True, slots=True)
class TypeFit:
    """How one node of an instance type holds a scale set's pairs."""

    instance_type: str
    pairs: int
    #: The dominant share of the node those pairs use.
    share: float


def type_fits(
    pool: Mapping[str, Any],
    runner_requests: Mapping[str, Decimal],
    workflow_requests: Mapping[str, Decimal],
) -> list[TypeFit]:
    """Every instance type ``pool`` allows (and this module knows), with the pairs one node
    holds; pass no runner requests when the two halves may not share a node."""
    pair = _pair(runner_requests, workflow_requests)
    fits = []
    for name in allowed_types(pool):
        node = shape(name)
        if node is not None:
            fits.append(TypeFit(name, *_pairs_on(node.allocatable(), pair)))
    return fits


def pairs_per_node(
    pools: Iterable[Mapping[str, Any]],
    runner_requests: Mapping[str, Decimal],
    workflow_requests: Mapping[str, Decimal],
    node_selector: Mapping[str, str],
) -> Packing:
    pair = _pair(runner_requests, workflow_requests)
    best = Packing(1, None)
    best_key = (0.0, 0)
    largest = 1
    for pool in pools:
        if not pool_hosts(pool, node_selector):
            continue
        remaining = _remaining(pool)
        for name in allowed_types(pool):
            node = shape(name)
            if node is None:
                continue
            allocatable = node.allocatable()
            capacity = {"cpu": Decimal(node.vcpu), "nvidia.com/gpu": Decimal(node.gpu)}
            if any(r in remaining and capacity.get(r, 0) > remaining[r] for r in capacity):
                continue  # larger than what the pool may still add
            n, share = _pairs_on(allocatable, pair)
            largest = max(largest, n)
            if n and (share, n) > best_key:
                best_key, best = (share, n), Packing(n, name)
    return Packing(best.pairs_per_node, best.instance_type, max(largest, best.pairs_per_node))


def claim_facts(claim: Mapping[str, Any]) -> tuple[float | None, bool, bool, Decimal | None]:
    """(creation time, terminating, initialized, CPU it was sized for) of one NodeClaim."""
    meta = metadata_of(claim)
    conditions = (claim.get("status") or {}).get("conditions") or ()
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions
    )
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    try:
        cpu: Decimal | None = quantity(
            requests.get("cpu", 0), where="nodeclaim spec.resources.requests.cpu"
        )
    except ValueError:
        cpu = None
    created = parse_timestamp(meta.get("creationTimestamp"))
    return created, bool(meta.get("deletionTimestamp")), initialized, cpu


def launch_facts(
    claims: Iterable[Mapping[str, Any]],
    *,
    now: float,
    pair_cpu: Decimal = Decimal(0),
    facts: Callable[
        [Mapping[str, Any]], tuple[float | None, bool, bool, Decimal | None]
    ] = claim_facts,
) -> LaunchFacts:
    """NodeClaims created within :data:`RATE_WINDOW`, NodeClaims not initialized yet, and how
    many pairs those can hold: a NodeClaim's ``spec.resources.requests`` is what Karpenter
    sized it for (the pending pods it batched), so pending pairs within it are covered.
    ``facts``: :func:`claim_facts`, or a memo of it."""
    recent = launching = covered = 0
    for claim in claims:
        created, deleting, initialized, cpu = facts(claim)
        if created is not None and now - created < RATE_WINDOW:
            recent += 1
        if deleting:
            continue
        if not initialized:
            launching += 1
            if pair_cpu > 0 and cpu is not None:
                covered += int(cpu // pair_cpu)
    return LaunchFacts(launched_last_minute=recent, launching=launching, covered_pairs=covered)
