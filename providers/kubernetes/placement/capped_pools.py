"""Capped NodePools and the instance types that hold a scale set's workflow pods well
(docs/design.md#instance-types-under-a-nodepool-limit).

A NodePool whose ``spec.limits`` hold fewer than ``maxRunners`` pairs runs at its limit under
load, and there the jobs that run at once are the workflow pods its nodes hold. Karpenter buys
the cheapest type that fits the pods it sees in one batch, so a pair that comes alone gets a
type that may hold one workflow pod with room to spare: a 4-cpu / 8Gi workflow pod uses 58% of
a c5.2xlarge, where a c5.4xlarge holds three using 90%. The workflow half is the one that
fragments nodes; runner halves (ARC's 500m) fill what is left beside them on any node.

1. :func:`capped_fit`: for one pool, the limits that bind at ``maxRunners`` pairs and how each
   allowed type holds workflow pods: the best, the poor ones (:data:`POOR_FIT_MARGIN` or more
   below it) and the well-fitting rest. The start-up check ``nodepool-types`` names the poor.
2. :func:`preferred_types`: the well-fitting types of every capped pool hosting the workflow
   half that also allows poor ones; empty when there is nothing to steer.
3. :func:`preference_term`: the preferred node-affinity term the workflow placeholder carries
   for them. kube-scheduler scores matching nodes higher; Karpenter treats the heaviest
   preferred term as required and drops it only when no node or NodeClaim can satisfy it
   (``scheduling/preferences.go``), so a lone pair gets a well-fitting node while the limit
   has room for one, and the cheapest type after that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from providers.kubernetes.observe.object_fields import metadata_of
from providers.kubernetes.placement.packing import (
    LABEL_INSTANCE_TYPE,
    TypeFit,
    pool_hosts,
    type_fits,
)
from providers.kubernetes.placement.resources import QuantityError, Resources, add_into, quantity

#: An allowed type whose workflow pods use this much less of a node (dominant share) than
#: the best allowed type's is a poor fit: 4-cpu / 8Gi workflow pods use 58% of a c5.2xlarge
#: (one fits) and 90% of a c5.4xlarge (three).
POOR_FIT_MARGIN = 0.2

#: The weight of the placeholders' preferred term: the most a term may weigh, so Karpenter
#: tries it first (on a tie, a term of the runner template's, which comes first, wins).
PREFERENCE_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class CappedFit:
    """How a NodePool whose limits bind at maxRunners pairs holds workflow pods."""

    pool: str
    #: The limits ``maxRunners`` pairs exceed, as written (``{"cpu": "160"}``).
    limits: Mapping[str, Any]
    best: TypeFit
    #: Poor fits, worst first.
    poor: tuple[TypeFit, ...]
    #: Every other type that holds a workflow pod (the best among them), best first.
    good: tuple[TypeFit, ...]

    @property
    def limits_text(self) -> str:
        """The binding limits as messages name them: ``cpu 160``."""
        return ", ".join(f"{r} {v}" for r, v in sorted(self.limits.items()))


def capped_fit(
    pool: Mapping[str, Any],
    workflow: Mapping[str, Decimal],
    runner: Mapping[str, Decimal],
    max_runners: int,
) -> CappedFit | None:
    """``pool``'s fit for workflow pods when its limits bind before ``max_runners`` pairs
    (``runner``: the runner half's requests where it shares the pool, else empty); None when
    no limit binds or no allowed type this project knows holds a workflow pod."""
    per_pair: Resources = dict(workflow)
    add_into(per_pair, runner)
    limits = _binding_limits(pool, per_pair, max_runners)
    if not limits:
        return None
    fits = [f for f in type_fits(pool, {}, workflow) if f.pairs]
    if not fits:
        return None
    best = max(fits, key=lambda f: (f.share, f.pairs))
    floor = best.share - POOR_FIT_MARGIN
    poor = sorted((f for f in fits if f.share <= floor), key=lambda f: f.share)
    good = sorted((f for f in fits if f.share > floor), key=lambda f: (-f.share, -f.pairs))
    name = str(metadata_of(pool).get("name", "?"))
    return CappedFit(name, limits, best, tuple(poor), tuple(good))


def capped_fits(
    pools: Iterable[Mapping[str, Any]],
    workflow: Mapping[str, Decimal],
    runner: Mapping[str, Decimal],
    workflow_selector: Mapping[str, str],
    runner_selector: Mapping[str, str],
    max_runners: int,
) -> list[CappedFit]:
    """:func:`capped_fit` of every pool hosting the workflow half whose limit binds; the
    runner half counts against a pool's limits only where it may land there too."""
    out = []
    for pool in pools:
        if not pool_hosts(pool, workflow_selector):
            continue
        shares_pool = pool_hosts(pool, runner_selector)
        fit = capped_fit(pool, workflow, runner if shares_pool else {}, max_runners)
        if fit is not None:
            out.append(fit)
    return out


def preferred_types(fits: Iterable[CappedFit]) -> tuple[str, ...]:
    """The well-fitting types of the capped pools that allow poor ones, best first, each
    once; empty when every capped pool allows only well-fitting types (nothing to steer)."""
    out: list[str] = []
    for fit in fits:
        if fit.poor:
            out.extend(f.instance_type for f in fit.good if f.instance_type not in out)
    return tuple(out)


def preference_term(types: Iterable[str]) -> dict[str, Any]:
    """A ``preferredDuringSchedulingIgnoredDuringExecution`` entry for ``types``."""
    return {
        "weight": PREFERENCE_WEIGHT,
        "preference": {
            "matchExpressions": [
                {"key": LABEL_INSTANCE_TYPE, "operator": "In", "values": list(types)}
            ]
        },
    }


def _binding_limits(
    pool: Mapping[str, Any], per_pair: Mapping[str, Decimal], max_runners: int
) -> dict[str, Any]:
    """The pool's limits on resources a pair asks for that ``max_runners`` pairs exceed (a
    limit that does not parse is left to the fit estimate, which names it)."""
    spec_limits = (pool.get("spec") or {}).get("limits") or {}
    binding = {}
    for r, v in spec_limits.items():
        if r not in per_pair:
            continue
        try:
            limit = quantity(v, where=f"NodePool spec.limits.{r}")
        except QuantityError:
            continue
        if limit < per_pair[r] * max_runners:
            binding[r] = v
    return binding
