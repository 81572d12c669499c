"""Machine-hours and dollars are billed from the launch request, at list prices."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.cluster.spec import default_catalog
from simulator.measurement.prices import ON_DEMAND_USD_PER_HOUR, hourly_price
from simulator.workload.machines import LABEL_INSTANCE_TYPE, MachineBilling


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def claim(name: str, instance_type: str | None = None) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "runners"}
    if instance_type is not None:
        labels[LABEL_INSTANCE_TYPE] = instance_type
    return {"kind": "NodeClaim", "metadata": {"name": name, "labels": labels}}


def node(name: str, instance_type: str, *, owned: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {LABEL_INSTANCE_TYPE: instance_type}}
    if owned:
        meta["ownerReferences"] = [{"kind": "NodeClaim", "name": name}]
    return {"kind": "Node", "metadata": meta}


def test_a_machine_is_billed_from_its_launch_request_not_from_launched() -> None:
    clock = Clock()
    billing = MachineBilling(clock)
    billing.observe("c", "ADDED", claim("runners-1"))  # the request, at t = 0
    clock.t = 90.0
    billing.observe("c", "MODIFIED", claim("runners-1", "m5.2xlarge"))  # Launched
    billing.observe("c", "ADDED", node("runners-1", "m5.2xlarge", owned=True))
    clock.t = 3600.0
    billing.observe("c", "DELETED", node("runners-1", "m5.2xlarge", owned=True))
    billing.observe("c", "DELETED", claim("runners-1", "m5.2xlarge"))
    assert billing.results() == {
        "billed_node_hours": 1.0,  # the 90 s of launching included, the Node not twice
        "billed_cost_usd": 0.38,
        "billed_unpriced_types": [],
    }


def test_a_claim_that_never_launched_costs_nothing() -> None:
    clock = Clock()
    billing = MachineBilling(clock)
    billing.observe("c", "ADDED", claim("runners-1"))
    clock.t = 30.0  # ICE: failed, then deleted without ever getting an instance type
    billing.observe("c", "DELETED", claim("runners-1"))
    billing.finish(3600.0)
    assert billing.results()["billed_node_hours"] == 0.0


def test_static_nodes_are_billed_until_the_end_of_the_run() -> None:
    clock = Clock()
    billing = MachineBilling(clock)
    billing.observe("c", "ADDED", node("system-0", "m5.xlarge", owned=False))
    billing.finish(7200.0)
    assert billing.results()["billed_node_hours"] == 2.0
    assert billing.results()["billed_cost_usd"] == pytest.approx(0.38)


def test_an_unknown_instance_type_is_named_instead_of_costing_zero_silently() -> None:
    clock = Clock()
    billing = MachineBilling(clock)
    billing.observe("c", "ADDED", node("odd-0", "x9.huge", owned=False))
    billing.finish(3600.0)
    assert billing.results() == {
        "billed_node_hours": 1.0,
        "billed_cost_usd": 0.0,
        "billed_unpriced_types": ["x9.huge"],
    }


def test_the_price_table_covers_the_simulated_catalog_at_the_same_prices() -> None:
    # The catalog picks the cheapest offering with these prices; the cost figures use the
    # documented table. A drift between the two would make the dollars disagree with the choice.
    catalog = {it.name: it.price for it in default_catalog()}
    assert catalog == dict(ON_DEMAND_USD_PER_HOUR)
    assert hourly_price("m5.large") == 0.096
    assert hourly_price("nope.large") is None
