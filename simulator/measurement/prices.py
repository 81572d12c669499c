"""On-demand hourly prices of the instance types the shipped scenarios model (for cost figures).

Source: AWS EC2 On-Demand pricing, region us-east-1 (N. Virginia), Linux, shared tenancy,
USD per instance-hour, as published on https://aws.amazon.com/ec2/pricing/on-demand/. These
list prices have been stable since the families' launch; the table was written down on
2026-11-22 from the figures the simulator's default catalog
(``simulator.cluster.spec.default_catalog``) already used, and a test holds the two
together so a catalog change cannot silently change the dollars. They were not re-fetched
from AWS on that date (no network access beyond package registries), so treat them as list
prices of record, not a live quote.

Every machine is priced at its on-demand list price whatever its capacity type: a spot
machine's dollars are therefore an upper bound. An instance type missing from the table is
counted in node-hours but adds no dollars; the results name it (``billed_unpriced_types``)
so a missing price is visible instead of silently zero.

Only the standard library is used, so the independent checker may import this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: USD per hour, us-east-1, Linux on-demand.
ON_DEMAND_USD_PER_HOUR: Mapping[str, float] = MappingProxyType(
    {
        "m5.large": 0.096,
        "m5.xlarge": 0.192,
        "m5.2xlarge": 0.384,
        "m5.4xlarge": 0.768,
        "m5.8xlarge": 1.536,
        "c5.xlarge": 0.17,
        "c5.2xlarge": 0.34,
        "c5.4xlarge": 0.68,
        "g5.xlarge": 1.006,
        "g5.2xlarge": 1.212,
        "g5.4xlarge": 1.624,
        "g5.12xlarge": 5.672,
    }
)


def hourly_price(instance_type: str) -> float | None:
    """The on-demand list price per hour, or None when the table does not know the type."""
    return ON_DEMAND_USD_PER_HOUR.get(instance_type)
