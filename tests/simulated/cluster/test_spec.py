"""ClusterSpec: the validated edge of the simulated cluster, and instance arithmetic."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from simulator.cluster import ClusterSpec, InstanceType, NodePoolSpec
from simulator.cluster.nodepools import parse_duration
from simulator.cluster.spec import default_catalog


def test_bad_references_are_reported_with_what_and_where() -> None:
    with pytest.raises(ValidationError, match=r"nodepool gpu: unknown instance type 'p9.huge'"):
        ClusterSpec(
            instance_types=default_catalog(),
            nodepools=(NodePoolSpec(name="gpu", instance_types=("p9.huge",)),),
        )
    with pytest.raises(ValidationError, match=r"limits: unknown resource 'gpu'; allowed: cpu"):
        NodePoolSpec(name="gpu", limits={"gpu": 4})
    with pytest.raises(ValidationError, match=r"invalid quantity '16 GB'"):
        InstanceType(name="x", cpu=4, memory="16 GB", price=1.0)
    with pytest.raises(ValidationError, match=r"end 10.0 <= start 20.0"):
        ClusterSpec.model_validate(
            {
                "instance_types": default_catalog(),
                "ice_windows": [{"instance_type": "m5.large", "start": 20, "end": 10}],
            }
        )


def test_allocatable_follows_the_eks_reservation_formula() -> None:
    m5_xlarge = InstanceType(name="m5.xlarge", cpu=4, memory="16Gi", pods=58, price=0.192)
    alloc = m5_xlarge.allocatable(0.075)
    assert alloc.cpu == 4000 - 60 - 10 - 5 - 5  # 3920m
    assert alloc.memory == (15155 - (11 * 58 + 255) - 100) * (1 << 20)
    assert alloc.pods == 58


def test_the_default_spec_is_valid_and_round_trips() -> None:
    spec = ClusterSpec.default()
    again = ClusterSpec.model_validate(spec.model_dump())
    assert again == spec
    assert {p.name for p in spec.nodepools} == {"default", "gpu"}


def test_durations_parse_like_go() -> None:
    assert parse_duration("90s") == 90
    assert parse_duration("1h30m") == 5400
    assert parse_duration("Never") is None
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("5 minutes")
