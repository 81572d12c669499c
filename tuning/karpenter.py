"""Karpenter's side of a sweep: NodePool dials (``karpenter.consolidateAfter``).

How long Karpenter keeps an emptied node (``spec.disruption.consolidateAfter`` of a NodePool)
trades the spare capacity a team pays for against how fast the next burst finds room, for
stock ARC and the capacity-aware listener alike. It is no key of the listener's settings: a
sweep sets it on every NodePool of every cluster of the replayed scenario, and the
recommendation says to set it on the NodePools.

Values are Karpenter's: a duration (``30s``, ``5m``, ``1h``, or seconds) or ``Never``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.settings_types import duration_seconds
from simulator.scenarios.scenario import Scenario

PREFIX = "karpenter."
#: NodePool dials a grid may name (after the prefix) -> the simulated NodePool's field.
NODEPOOL_FIELDS: Mapping[str, str] = {"consolidateAfter": "consolidate_after"}
NEVER = "Never"


class KarpenterDialError(ValueError):
    """A ``karpenter.*`` dial is unknown or its value is not Karpenter's; names point and key."""


def split(dials: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every other dial, the Karpenter dials without their prefix)."""
    rest = {k: v for k, v in dials.items() if not k.startswith(PREFIX)}
    mine = {k.removeprefix(PREFIX): v for k, v in dials.items() if k.startswith(PREFIX)}
    return rest, mine


def nodepool_fields(dials: Mapping[str, Any], *, where: str) -> dict[str, float | None]:
    """The simulated NodePool fields ``dials`` (prefix removed) set, validated."""
    out: dict[str, float | None] = {}
    for key, value in dials.items():
        field = NODEPOOL_FIELDS.get(key)
        if field is None:
            allowed = ", ".join(PREFIX + k for k in NODEPOOL_FIELDS)
            raise KarpenterDialError(f"{where}: {PREFIX}{key}: unknown; allowed: {allowed}")
        out[field] = _seconds(value, where=f"{where}: {PREFIX}{key}")
    return out


def _seconds(value: Any, *, where: str) -> float | None:
    if value == NEVER:
        return None
    try:
        seconds = duration_seconds(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or seconds < 0:
        raise KarpenterDialError(
            f"{where}: expected a duration like 30s, 5m, 1h or {NEVER!r} (got {value!r})"
        )
    return seconds


def with_nodepools(scenario: Scenario, fields: Mapping[str, float | None]) -> Scenario:
    """``scenario`` with ``fields`` set on every NodePool of every cluster."""
    if not fields:
        return scenario
    clusters = []
    for c in scenario.clusters:
        pools = tuple(p.model_copy(update=fields) for p in c.spec.nodepools)
        clusters.append(
            c.model_copy(update={"spec": c.spec.model_copy(update={"nodepools": pools})})
        )
    return scenario.model_copy(update={"clusters": clusters})


def nodepool_patch(dials: Mapping[str, Any]) -> dict[str, Any] | None:
    """The recommended Karpenter dials as the NodePool fields to set (None when none)."""
    mine = split(dials)[1]
    if not mine:
        return None
    return {"spec": {"disruption": dict(mine)}}
