"""Packing and launch facts: node-sized groups from NodePool instance types, NodeClaim rates."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.kubernetes.placement.instance_types import shape
from providers.kubernetes.placement.packing import launch_facts, pairs_per_node, pool_hosts

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


def with_requirements(*reqs: tuple[str, str, list[str]]) -> dict:  # type: ignore[type-arg]
    p = pool(["m5.2xlarge", "c5.2xlarge"])
    p["spec"]["template"]["spec"]["requirements"] += [
        {"key": key, "operator": op, "values": values} for key, op, values in reqs
    ]
    return p


ARCH = "kubernetes.io/arch"


@pytest.mark.parametrize(
    ("nodepool", "selector", "hosts"),
    [
        (pool(["m5.2xlarge"]), {"pool": "ci"}, True),  # a template label
        (pool(["m5.2xlarge"]), {"pool": "gpu"}, False),
        # Karpenter labels every node with its pool's name.
        (pool(["m5.2xlarge"]), {"karpenter.sh/nodepool": "ci"}, True),
        (pool(["m5.2xlarge"]), {"karpenter.sh/nodepool": "ci", "pool": "ci"}, True),
        (pool(["m5.2xlarge"]), {"karpenter.sh/nodepool": "gpu"}, False),
        (pool(["m5.2xlarge"]), {}, True),
        # Requirements: each on the key must admit the value.
        (with_requirements((ARCH, "In", ["amd64", "arm64"])), {ARCH: "amd64"}, True),
        (with_requirements((ARCH, "In", ["arm64"])), {ARCH: "amd64"}, False),
        (with_requirements((ARCH, "NotIn", ["arm64"])), {ARCH: "amd64"}, True),
        (with_requirements((ARCH, "NotIn", ["amd64"])), {ARCH: "amd64"}, False),
        (with_requirements(("team", "Exists", [])), {"team": "a"}, True),
        (with_requirements(("team", "DoesNotExist", [])), {"team": "a"}, False),
        (
            with_requirements(("karpenter.k8s.aws/instance-cpu", "Gt", ["8"])),
            {"karpenter.k8s.aws/instance-cpu": "16"},
            True,
        ),
        (
            with_requirements(("karpenter.k8s.aws/instance-cpu", "Gt", ["8"])),
            {"karpenter.k8s.aws/instance-cpu": "8"},
            False,
        ),
        (
            with_requirements(("karpenter.k8s.aws/instance-cpu", "Lt", ["9"])),
            {"karpenter.k8s.aws/instance-cpu": "x"},
            False,
        ),
        (pool(["m5.2xlarge"]), {"node.kubernetes.io/instance-type": "m5.2xlarge"}, True),
        (pool(["m5.2xlarge"]), {"node.kubernetes.io/instance-type": "c5.2xlarge"}, False),
        # Well-known labels the pool does not constrain come from the instance type.
        (pool(["m5.2xlarge"]), {"kubernetes.io/os": "linux", ARCH: "amd64"}, True),
        (pool(["m5.2xlarge"]), {"karpenter.k8s.aws/instance-family": "m5"}, True),
        # A custom label the pool neither sets nor requires is on none of its nodes.
        (pool(["m5.2xlarge"]), {"team": "a"}, False),
    ],
)
def test_a_nodepool_hosts_pods_whose_selector_karpenter_could_satisfy(
    nodepool: dict,  # type: ignore[type-arg]
    selector: dict[str, str],
    hosts: bool,
) -> None:
    """The fit estimate counts only the headroom of NodePools that host the pair. Selecting
    a pool by ``karpenter.sh/nodepool`` (Karpenter's documented way to pin pods to one), or
    by ``kubernetes.io/arch: amd64`` against ``In [amd64, arm64]``, counted no pool as a
    host: the estimate found no headroom and the listener requested no pair needing a node."""
    assert pool_hosts(nodepool, selector) is hosts


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
