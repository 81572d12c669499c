"""``doNotDisrupt: auto``: which pool shapes make workflow placeholders carry
``karpenter.sh/do-not-disrupt`` (providers/kubernetes/pods/churn_guard.py), and how the verdict
reaches the pods through PlacementBounds."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.placement.inputs import PlacementBounds
from providers.kubernetes.pods.churn_guard import (
    AUTO_PROTECTION,
    protects,
    resolved_annotation,
    workflow_pods_per_node,
)
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import builder
from tests.providers.kubernetes.pods.test_placeholders import pair as pair_spec

KEY = "karpenter.sh/do-not-disrupt"
GPU_POD = {"cpu": Decimal(3), "memory": Decimal(12 * 2**30), "nvidia.com/gpu": Decimal(1)}
CPU_POD = {"cpu": Decimal(2), "memory": Decimal(4 * 2**30)}
BIG_CPU_POD = {"cpu": Decimal(4), "memory": Decimal(8 * 2**30)}


def pool(name: str, types: list[str] | None, labels: dict[str, str]) -> dict[str, Any]:
    """A NodePool whose nodes carry ``labels`` and whose types are ``types`` (None: chosen by
    category, no instance-type list)."""
    requirements: list[dict[str, Any]] = [
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}
    ]
    if types is not None:
        requirements = [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
        ]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {"metadata": {"labels": labels}, "spec": {"requirements": requirements}}
        },
    }


GPU = {"pool": "gpu"}
CI = {"pool": "ci"}


@pytest.mark.parametrize(
    ("pools", "workflow", "selector", "per_node", "annotation"),
    [
        # ice-failover: a g5.xlarge has one GPU, so a node holds one workflow pod.
        ([pool("gpu", ["g5.xlarge"], GPU)], GPU_POD, GPU, 1, "3600s"),
        # Two one-GPU types: still one per node whichever Karpenter buys.
        ([pool("gpu", ["g5.xlarge", "g5.2xlarge"], GPU)], GPU_POD, GPU, 1, "3600s"),
        # storm: 2 cpu / 4Gi on m5/c5 2xlarge..8xlarge: many per node, consolidation packs.
        (
            [pool("ci", ["m5.2xlarge", "m5.4xlarge", "m5.8xlarge", "c5.2xlarge"], CI)],
            CPU_POD,
            CI,
            15,
            None,
        ),
        # burst: 4 cpu / 8Gi; a c5.2xlarge holds one but a c5.4xlarge three: mixed types go
        # by the type that holds most, so no protection (burst's dollars, not its launches,
        # moved with protection).
        ([pool("ci", ["c5.2xlarge", "c5.4xlarge"], CI)], BIG_CPU_POD, CI, 3, None),
        # Only the 8-vCPU type: one 4-cpu workflow pod per node, the churn case on CPU.
        ([pool("ci", ["c5.2xlarge"], CI)], BIG_CPU_POD, CI, 1, "3600s"),
        # A GPU pool that also allows a 4-GPU type: several per node there.
        ([pool("gpu", ["g5.xlarge", "g5.12xlarge"], GPU)], GPU_POD, GPU, 4, None),
        # Two pools host the workflow half: the most any of them holds decides.
        (
            [pool("gpu-a", ["g5.xlarge"], GPU), pool("gpu-b", ["g5.12xlarge"], GPU)],
            GPU_POD,
            GPU,
            4,
            None,
        ),
        # A pool that does not host the workflow half (other labels) is not counted.
        (
            [pool("gpu", ["g5.xlarge"], GPU), pool("ci", ["m5.8xlarge"], CI)],
            GPU_POD,
            GPU,
            1,
            "3600s",
        ),
        # No NodePool at all: no Karpenter; unknown, so protected (the annotation is inert).
        ([], CPU_POD, CI, None, "3600s"),
        # Types chosen by category: unknown, protected (the bounded cost of the hour over the
        # unbounded churn where nodes hold one).
        ([pool("ci", None, CI)], CPU_POD, CI, None, "3600s"),
        # Types this project does not know: unknown, protected.
        ([pool("ci", ["x9z.huge"], CI)], CPU_POD, CI, None, "3600s"),
        # Only CPU types for a GPU pod: none holds one, unknown, protected.
        ([pool("gpu", ["m5.4xlarge"], GPU)], GPU_POD, GPU, None, "3600s"),
    ],
    ids=[
        "gpu-one-per-node",
        "gpu-two-one-gpu-types",
        "cpu-many-per-node",
        "cpu-mixed-one-and-three",
        "cpu-one-per-node",
        "gpu-mixed-one-and-four",
        "two-pools-most-decides",
        "other-pool-ignored",
        "no-nodepool",
        "types-by-category",
        "unknown-type",
        "no-type-holds-one",
    ],
)
def test_auto_protects_where_no_allowed_type_holds_two_workflow_pods(
    pools: list[dict[str, Any]],
    workflow: dict[str, Decimal],
    selector: dict[str, str],
    per_node: int | None,
    annotation: str | None,
) -> None:
    counted = workflow_pods_per_node(pools, workflow, selector)
    assert counted == per_node
    assert resolved_annotation("auto", counted) == annotation


@pytest.mark.parametrize(
    ("setting", "expected"),
    [(True, "true"), (False, None), (1800.0, "1800s"), (3600.0, "3600s")],
)
@pytest.mark.parametrize("per_node", [None, 1, 2, 15])
def test_true_false_and_durations_ignore_the_pool_shape(
    setting: bool | float, expected: str | None, per_node: int | None
) -> None:
    assert resolved_annotation(setting, per_node) == expected


def test_auto_protects_for_the_hour_of_the_1h_setting_and_stops_at_two() -> None:
    assert AUTO_PROTECTION == 3600.0
    assert [protects(n) for n in (None, 0, 1, 2, 3)] == [True, True, True, False, False]


def gpu_world(types: list[str], setting: object = "auto") -> tuple[PlacementBounds, Any]:
    template = o.runner_template(nodeSelector=GPU)
    settings = {
        "workflowResources": {"cpu": "3", "memory": "12Gi", "nvidia.com/gpu": "1"},
        "doNotDisrupt": setting,
    }
    b = builder(template, settings=settings)
    source = o.DictSource(o.ers(template=template), o.ars(max_runners=10), pool("gpu", types, GPU))
    target = ScaleSetTarget(
        ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=10
    )
    return PlacementBounds(source, target, b), b


def test_a_builder_no_bounds_have_told_anything_protects_under_auto() -> None:
    """Before the first fit refresh the shape is unknown: pairs built then carry the hour."""
    _, workflow = builder(o.runner_template()).build(pair_spec())
    assert workflow["metadata"]["annotations"][KEY] == "3600s"


@pytest.mark.parametrize(
    ("types", "annotation", "said"),
    [
        (
            ["g5.xlarge"],
            "3600s",
            "carry karpenter.sh/do-not-disrupt (doNotDisrupt: auto): one node "
            "of the allowed instance types holds at most 1 workflow pod(s)",
        ),
        (
            ["g5.xlarge", "g5.12xlarge"],
            None,
            "do not carry karpenter.sh/do-not-disrupt "
            "(doNotDisrupt: auto): one node of the allowed instance types holds at most 4",
        ),
    ],
    ids=["one-per-node", "four-per-node"],
)
def test_placement_bounds_hand_the_builder_auto_s_verdict_and_say_it_once(
    caplog: pytest.LogCaptureFixture, types: list[str], annotation: str | None, said: str
) -> None:
    """The verdict reaches pods built after the refresh; the log line names the count
    once, not on every refresh (it would repeat every 10 s)."""
    bounds, b = gpu_world(types)
    with caplog.at_level(logging.INFO, logger="providers.kubernetes.placement.inputs"):
        bounds(o.T0)
        bounds(o.T0 + 11)
    (line,) = [r.getMessage() for r in caplog.records if KEY in r.getMessage()]
    assert said in line
    _, workflow = b.build(pair_spec())
    assert workflow["metadata"]["annotations"].get(KEY) == annotation


def test_with_an_explicit_setting_bounds_leave_the_annotation_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``doNotDisrupt: false`` on a one-GPU pool writes nothing and logs nothing of auto."""
    bounds, b = gpu_world(["g5.xlarge"], setting=False)
    with caplog.at_level(logging.INFO, logger="providers.kubernetes.placement.inputs"):
        bounds(o.T0)
    assert [r for r in caplog.records if KEY in r.getMessage()] == []
    _, workflow = b.build(pair_spec())
    assert KEY not in workflow["metadata"]["annotations"]
