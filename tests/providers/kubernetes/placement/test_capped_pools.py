"""Instance types under a NodePool limit: which the workflow placeholders prefer, how the term
reaches their pods, and when PlacementBounds hands it to the builder."""

from __future__ import annotations

import logging

import pytest

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.placement.capped_pools import (
    PREFERENCE_WEIGHT,
    capped_fits,
    preference_term,
    preferred_types,
)
from providers.kubernetes.placement.inputs import PlacementBounds
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import builder
from tests.providers.kubernetes.pods.test_placeholders import pair as pair_spec
from tests.providers.kubernetes.test_checks import TYPES, Pair, capped_pool, pair

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
BIG = ("c5.4xlarge", "m5.4xlarge")


def preferred(pools: list[dict], shape: Pair, max_runners: int = 150) -> tuple[str, ...]:  # type: ignore[type-arg]
    fits = capped_fits(
        pools,
        shape.workflow_requests,
        shape.runner_requests,
        shape.workflow_placement.get("nodeSelector") or {},
        shape.runner_placement.get("nodeSelector") or {},
        max_runners,
    )
    return preferred_types(fits)


@pytest.mark.parametrize(
    ("pools", "shape", "max_runners", "types"),
    [
        # 4 cpu / 8Gi under 160 vCPU: 8-vCPU nodes hold one (51-58%), 16-vCPU ones three.
        ([capped_pool(TYPES, {"cpu": "160"})], pair("4"), 150, BIG),
        # 35 pairs of 4.5 cpu ask for 157.5 vCPU: the limit never binds, Karpenter may size
        # nodes to what it sees (a lone job's pair on the cheapest node that fits).
        ([capped_pool(TYPES, {"cpu": "160"})], pair("4"), 35, ()),
        # ...but 36 ask for 162.
        ([capped_pool(TYPES, {"cpu": "160"})], pair("4"), 36, BIG),
        # Runner halves on another pool count against no limit here: 40 x 4 = 160 fits.
        ([capped_pool(TYPES, {"cpu": "160"})], pair("4", runner_elsewhere=True), 40, ()),
        ([capped_pool(TYPES, {"cpu": "160"})], pair("4", runner_elsewhere=True), 41, BIG),
        ([capped_pool(TYPES, None)], pair("4"), 150, ()),  # no limit
        ([capped_pool(TYPES, {"cpu": "160"})], pair("2"), 150, ()),  # every type fits well
        ([capped_pool(["c5.4xlarge"], {"cpu": "160"})], pair("4"), 150, ()),  # nothing to steer
        ([capped_pool(TYPES, {"cpu": "160"}, hosts="gpu")], pair("4"), 150, ()),  # not ours
        ([capped_pool(TYPES, {"nvidia.com/gpu": "8"})], pair("4"), 150, ()),  # other resource
    ],
    ids=[
        "capped",
        "limit-holds-max-runners",
        "limit-one-pair-short",
        "split-halves-fit",
        "split-halves-capped",
        "no-limit",
        "small-pods",
        "only-good-types",
        "other-pool",
        "other-limit",
    ],
)
def test_workflow_placeholders_prefer_the_well_fitting_types_only_where_a_limit_binds(
    pools: list[dict],  # type: ignore[type-arg]
    shape: Pair,
    max_runners: int,
    types: tuple[str, ...],
) -> None:
    """A preference where the limit never binds would buy a 16-vCPU node for a lone job's
    pair where Karpenter picks an 8-vCPU one (scale-to-zero paid 1.12x stock ARC's dollars
    when lone pairs were rounded up to node-sized groups)."""
    assert preferred(pools, shape, max_runners) == types


def test_the_preference_goes_on_the_workflow_half_after_the_templates_own_terms() -> None:
    template = o.runner_template()
    own = {
        "weight": 100,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    }
    template["affinity"] = {"nodeAffinity": {PREFERRED: [own]}}
    b = builder(template)
    b.prefer(BIG)
    runner, workflow = b.build(pair_spec())
    assert workflow["spec"]["affinity"]["nodeAffinity"][PREFERRED] == [
        own,
        {
            "weight": PREFERENCE_WEIGHT,
            "preference": {
                "matchExpressions": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": list(BIG),
                    }
                ]
            },
        },
    ]
    # The runner half fills what is left on any node: it keeps the template's terms only.
    assert runner["spec"]["affinity"]["nodeAffinity"][PREFERRED] == [own]
    b.prefer(())
    _, plain = b.build(pair_spec())
    assert plain["spec"]["affinity"]["nodeAffinity"][PREFERRED] == [own]


def test_prefer_fitting_types_false_builds_no_preference() -> None:
    b = builder(o.runner_template(), settings={"preferFittingTypes": False})
    b.prefer(BIG)
    _, workflow = b.build(pair_spec())
    assert "affinity" not in workflow["spec"]
    assert preference_term(BIG)["weight"] == PREFERENCE_WEIGHT


def bounds_world(max_runners: int, prefer: bool = True) -> tuple[PlacementBounds, object]:
    template = o.runner_template(nodeSelector={"pool": "ci"})
    settings = {"workflowResources": {"cpu": "4", "memory": "8Gi"}, "preferFittingTypes": prefer}
    b = builder(template, settings=settings)
    source = o.DictSource(
        o.ers(template=template),
        o.ars(max_runners=max_runners),
        capped_pool(TYPES, {"cpu": "160"}),
    )
    target = ScaleSetTarget(
        ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=1
    )
    return PlacementBounds(source, target, b), b


def test_placement_bounds_hand_the_builder_the_preference_from_the_live_max_runners(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The AutoscalingRunnerSet's maxRunners decides whether the limit binds (the listener
    config's value is 1 here and would say it never does)."""
    bounds, b = bounds_world(max_runners=150)
    with caplog.at_level(logging.INFO, logger="providers.kubernetes.placement.inputs"):
        bounds(o.T0)
    assert b.preferred_types == BIG  # type: ignore[attr-defined]
    (line,) = [r.getMessage() for r in caplog.records if "prefer" in r.getMessage()]
    assert line.startswith(
        "scale set " + o.ERS + ": workflow placeholders prefer instance types c5.4xlarge, "
        "m5.4xlarge: NodePool ci limits cpu 160 hold fewer than maxRunners pairs and allow "
        "m5.2xlarge, c5.2xlarge, where one m5.2xlarge holds 1 workflow pod(s) using 51%"
    )
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="providers.kubernetes.placement.inputs"):
        bounds(o.T0 + 11)
    assert caplog.records == []  # said once, not every refresh


def test_a_limit_that_holds_max_runners_pairs_leaves_placeholders_unsteered() -> None:
    """10 pairs of 4.5 cpu fit in 160 vCPU: Karpenter may size nodes to what it sees."""
    bounds, b = bounds_world(max_runners=10)
    bounds(o.T0)
    assert b.preferred_types == ()  # type: ignore[attr-defined]


def test_with_prefer_fitting_types_false_nothing_is_preferred_or_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The log line must not claim a preference the builder will not apply."""
    bounds, b = bounds_world(max_runners=150, prefer=False)
    with caplog.at_level(logging.INFO, logger="providers.kubernetes.placement.inputs"):
        bounds(o.T0)
    assert [r for r in caplog.records if "prefer" in r.getMessage()] == []
    assert bounds.preferred_types == () and b.preferred_types == ()  # type: ignore[attr-defined]
