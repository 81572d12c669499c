"""Packing and launch facts: node-sized groups from NodePool instance types, NodeClaim rates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.kubernetes.instance_types import shape
from providers.kubernetes.packing import launch_facts, pairs_per_node, pool_hosts

GiB = Decimal(1024**3)


def pool(types: list[str], *, labels: dict[str, str] | None = None, cpu_limit: str | None = None):  # type: ignore[no-untyped-def]
    spec = {
        "template": {
            "metadata": {"labels": labels or {"pool": "ci"}},
            "spec": {
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
                ]
            },
        },
    }
    if cpu_limit is not None:
        spec["limits"] = {"cpu": cpu_limit}
    return {"kind": "NodePool", "metadata": {"name": "ci"}, "spec": spec, "status": {}}


RUNNER = {"cpu": Decimal("0.5"), "memory": 1 * GiB}
WORKFLOW = {"cpu": Decimal(4), "memory": 8 * GiB}


def test_ec2_shapes_follow_the_family_and_size_and_unknown_names_are_none() -> None:
    m5 = shape("m5.4xlarge")
    assert m5 is not None and (m5.vcpu, m5.memory_gib, m5.gpu) == (16, 64, 0)
    g5 = shape("g5.12xlarge")
    assert g5 is not None and (g5.vcpu, g5.gpu) == (48, 4)
    assert shape("x1.unknown") is None and shape("not-a-type") is None
    # allocatable keeps the EKS kube-reserved formula: 16 vCPU -> 15.89
    assert m5.allocatable()["cpu"] == Decimal("15.89")


def test_best_fitting_type_holds_whole_pairs_with_the_least_waste() -> None:
    # 4.5 cpu + 9 GiB per pair: an 8-vCPU node holds 1 (43 % idle), a 16-vCPU m5 holds 3;
    # a 16-vCPU c5 (32 GiB) only 2 because of memory.
    packing = pairs_per_node(
        [pool(["m5.2xlarge", "m5.4xlarge", "c5.2xlarge", "c5.4xlarge"])],
        RUNNER,
        WORKFLOW,
        {"pool": "ci"},
    )
    assert (packing.pairs_per_node, packing.instance_type) == (3, "m5.4xlarge")
    assert packing.pairs_per_large_node == 3


def test_types_larger_than_the_remaining_limit_and_pools_that_cannot_host_are_skipped() -> None:
    capped = pool(["m5.2xlarge", "m5.4xlarge"], cpu_limit="10")
    assert pairs_per_node([capped], RUNNER, WORKFLOW, {"pool": "ci"}).instance_type == "m5.2xlarge"
    other = pool(["m5.4xlarge"], labels={"pool": "gpu"})
    assert not pool_hosts(other, {"pool": "ci"})
    assert pairs_per_node([other], RUNNER, WORKFLOW, {"pool": "ci"}).pairs_per_node == 1


@pytest.mark.parametrize(
    ("selector", "hosts"),
    [
        ({"pool": "ci"}, True),  # a template label
        ({"karpenter.sh/nodepool": "ci"}, True),  # Karpenter labels every node with its pool
        ({"karpenter.sh/nodepool": "ci", "pool": "ci"}, True),
        ({"karpenter.sh/nodepool": "gpu"}, False),
        ({"pool": "gpu"}, False),
        ({}, True),
    ],
    ids=str,
)
def test_a_nodepool_hosts_pods_that_select_its_labels_or_its_name(
    selector: dict[str, str], hosts: bool
) -> None:
    """Selecting a NodePool by ``karpenter.sh/nodepool`` (Karpenter's documented way to pin
    pods to one) counted no pool as a host: the fit estimate then found no headroom and the
    listener requested no pair that needed a new node."""
    assert pool_hosts(pool(["m5.2xlarge"]), selector) is hosts


def claim(created: str, *, initialized: bool, cpu: str = "30") -> dict:  # type: ignore[type-arg]
    status = "True" if initialized else "Unknown"
    return {
        "metadata": {"name": f"c-{created}", "creationTimestamp": created},
        "spec": {"resources": {"requests": {"cpu": cpu}}},
        "status": {"conditions": [{"type": "Initialized", "status": status}]},
    }


def test_launch_facts_count_recent_claims_and_the_pairs_launching_ones_cover() -> None:
    now = 1_700_000_100.0  # 2023-11-14T22:15:00Z
    claims = [
        claim("2023-11-14T22:14:10Z", initialized=False),  # 50 s ago, launching, 30 cpu
        claim("2023-11-14T22:13:50Z", initialized=True),  # 70 s ago: outside the window
        claim("2023-11-14T22:14:50Z", initialized=False, cpu="9"),
    ]
    facts = launch_facts(claims, now=now, pair_cpu=Decimal("4.5"))
    assert (facts.launched_last_minute, facts.launching, facts.covered_pairs) == (2, 2, 6 + 2)
