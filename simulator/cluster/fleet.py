"""The EC2 CreateFleet request Karpenter's AWS provider builds for one NodeClaim (pure).

karpenter-provider-aws ``pkg/providers/instance/instance.go``: ``Create`` filters the claim's
instance types down to offerings not in the unavailable-offerings cache, picks the capacity
type (``getCapacityType``: reserved, then spot, then on-demand - the first one some remaining
offering has) and sends *one* fleet request whose overrides are every remaining (instance
type, zone) of that capacity type. EC2 tries them by its allocation strategy (lowest price
for on-demand; we use price for spot too) and returns an instance from the first one with
capacity, plus an error for each override it could not fill.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from simulator.cluster.nodepools import Offering

#: Capacity types in Karpenter's preference order (we model no reservations).
CAPACITY_PREFERENCE = ("spot", "on-demand")


def fleet_overrides(
    candidates: Iterable[Offering], unavailable: Callable[[tuple[str, str, str]], bool]
) -> list[Offering]:
    """The overrides of the fleet call, in the order EC2 tries them (cheapest first).
    Empty when every candidate is in the unavailable-offerings cache."""
    available = [o for o in candidates if not unavailable(o.key)]
    for capacity_type in CAPACITY_PREFERENCE:
        chosen = [o for o in available if o.capacity_type == capacity_type]
        if chosen:
            return sorted(chosen, key=lambda o: (o.price, o.key))
    return []
