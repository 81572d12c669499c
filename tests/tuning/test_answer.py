"""The answer of a sweep: Pareto frontier and the cheapest point meeting the p95 target."""

from __future__ import annotations

from typing import Any

import yaml

from reconciler.settings import parse_capacity_aware
from tuning.answer import block_dials, frontier, recommend, recommendation_yaml
from tuning.grid import DEFAULT_GRID, expand
from tuning.replay import dial_settings
from tuning.sweep import aggregate, fair_percentiles, plan


def row(
    point: str, p95: float | None, dollars: float, idle: float, strategy: str = "capacity-aware"
) -> dict[str, Any]:
    return {
        "point": point,
        "strategy": strategy,
        "dials": {},
        "seeds": [1],
        "p95_worst_seconds": p95,
        "dollars_per_day_mean": dollars,
        "idle_cpu_hours_per_day_mean": idle,
    }


ROWS = [
    row("baseline", 70.0, 100.0, 0.0, "baseline"),
    row("overprovision", 20.0, 180.0, 600.0, "overprovision"),
    row("p1", 40.0, 120.0, 100.0),
    row("p2", 25.0, 150.0, 300.0),
    row("p3", 30.0, 160.0, 200.0),  # beaten by p2 on dollars, not on idle CPU
    row("p4", None, 90.0, 0.0),  # a job never started: infinitely late
]


def test_frontier_keeps_only_points_nobody_beats_on_both_axes() -> None:
    assert [r["point"] for r in frontier(ROWS, "dollars_per_day_mean")] == [
        "baseline",
        "p1",
        "p2",
        "overprovision",
    ]
    assert [r["point"] for r in frontier(ROWS, "idle_cpu_hours_per_day_mean")] == [
        "baseline",
        "p1",
        "p3",
        "p2",
        "overprovision",
    ]


def test_recommend_picks_the_cheapest_capacity_aware_point_within_the_target() -> None:
    assert recommend(ROWS, 30.0)["point"] == "p2"  # type: ignore[index]
    assert recommend(ROWS, 45.0)["point"] == "p1"  # type: ignore[index]


def test_a_point_that_never_started_a_job_is_never_recommended() -> None:
    assert recommend([row("p4", None, 1.0, 0.0)], 3600.0) is None


def test_reference_strategies_are_never_recommended() -> None:
    assert recommend([ROWS[0], ROWS[1]], 1000.0) is None


def test_fair_percentiles_count_a_job_that_never_started_as_infinitely_late() -> None:
    waits = [10.0] * 94 + [float("inf")] * 6
    assert fair_percentiles(waits) == {"p50": 10.0, "p95": None, "p99": None}
    assert fair_percentiles([10.0] * 99 + [float("inf")])["p95"] == 10.0


def test_aggregate_takes_the_worst_seed_for_latency_and_the_mean_for_cost() -> None:
    def record(seed: int, p95: float | None, dollars: float) -> dict[str, Any]:
        figures = {
            "queue_to_start_fair_seconds": {"p95": p95},
            "failed": 0,
            "never_started": 0,
            "dollars_per_day": dollars,
            "idle_reserved_cpu_hours_per_day": 10.0,
        }
        return {
            "point": "p1",
            "strategy": "capacity-aware",
            "seed": seed,
            "dials": {},
            "figures": figures,
        }

    (agg,) = aggregate([record(1, 20.0, 100.0), record(2, 30.0, 200.0)])
    assert (agg["p95_worst_seconds"], agg["dollars_per_day_mean"]) == (30.0, 150.0)
    (inf,) = aggregate([record(1, 20.0, 100.0), record(2, None, 200.0)])
    assert inf["p95_worst_seconds"] is None


def test_default_grid_has_36_points_and_a_plan_adds_the_two_references_per_seed_and_nodepool() -> (
    None
):
    """12 listener points x 3 consolidateAfter values; stock ARC and the static pool run on
    each NodePool setting too, so every point has references on the same NodePools."""
    base = parse_capacity_aware({"enabled": True}, where="t")
    points = expand(DEFAULT_GRID, base, where="default grid")
    assert len(points) == 36
    runs = plan(points, [1, 2, 3])
    assert len(runs) == 3 * 36 + 3 * 2 * 3
    references = runs[:18]
    assert {r.strategy for r in references} == {"baseline", "overprovision"}
    assert {r.dials for r in references} == {
        (("karpenter.consolidateAfter", v),) for v in ("30s", "5m", "15m")
    }
    assert references[0].point == "baseline karpenter.consolidateAfter=30s"


def test_a_grid_without_nodepool_dials_keeps_one_reference_each_named_as_before() -> None:
    base = parse_capacity_aware({"enabled": True}, where="t")
    points = expand({"proactiveCapacity": [0, 2]}, base, where="g")
    runs = plan(points, [1])
    assert [(r.point, r.dials) for r in runs[:2]] == [("baseline", ()), ("overprovision", ())]
    assert len(runs) == 4


def test_a_recommended_consolidate_after_goes_on_the_nodepool_never_into_capacity_aware() -> None:
    base = parse_capacity_aware({"enabled": True}, where="t")
    (point,) = expand(
        {"proactiveCapacity": [1], "karpenter.consolidateAfter": ["15m"]}, base, where="g"
    )
    text = recommendation_yaml(
        {**row("p1", 25.0, 150.0, 300.0), "dials": point.dial_map()},
        target_p95=60.0,
        context="test",
    )
    doc = yaml.safe_load(text)
    assert doc["capacityAware"] == {"enabled": True, "proactiveCapacity": 1}
    parse_capacity_aware(doc["capacityAware"], where="recommendation.yaml")
    assert doc["karpenterNodePool"] == {"spec": {"disruption": {"consolidateAfter": "15m"}}}
    assert "Not a listener setting: set this on your Karpenter NodePools" in text


def test_recommendation_reads_back_through_the_listener_settings_model() -> None:
    base = parse_capacity_aware({"enabled": True, "survivorWindow": "3m"}, where="t")
    grid = {
        "proactiveCapacity": ["auto"],
        "warmPool.schedule": [[{"start": "07:00", "end": "19:00", "pairs": 4}]],
    }
    (point,) = expand(grid, base, where="g")
    text = recommendation_yaml(
        {**row("p1", 25.0, 150.0, 300.0), "dials": point.dial_map()},
        target_p95=60.0,
        context="test",
    )
    block = yaml.safe_load(text)["capacityAware"]
    settings = parse_capacity_aware(block, where="recommendation.yaml")
    assert settings.proactive_capacity == "auto"
    assert block["warmPool"]["schedule"] == [{"start": "07:00", "end": "19:00", "pairs": 4}]
    assert text.startswith("# arc-capacity-listener tune: test")


def test_recommendation_holds_only_the_tuned_dials_never_the_scenario_s_own_keys() -> None:
    """recommendation.yaml pasted the scenario's whole block, its GPU workflowResources
    included, under "paste under your listener's settings": pasted as told, it resized a
    user's placeholders to the simulated scale set's pods."""
    base = parse_capacity_aware(
        {
            "enabled": True,
            "survivorWindow": "3m",
            "workflowResources": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
        },
        where="t",
    )
    (point,) = expand({"proactiveCapacity": [2], "sim.fit_refresh": [30]}, base, where="g")
    text = recommendation_yaml(
        {**row("p1", 25.0, 1.0, 1.0), "dials": point.dial_map()}, target_p95=60.0, context="t"
    )
    assert yaml.safe_load(text)["capacityAware"] == {"enabled": True, "proactiveCapacity": 2}
    assert "workflowResources" not in text and "nvidia.com/gpu" not in text
    assert "survivorWindow" not in text
    # pasted over the listener's own block, the dials set and everything else is kept
    pasted = dial_settings(base, block_dials(yaml.safe_load(text)["capacityAware"]), where="t")
    assert pasted.proactive_capacity == 2 and pasted.survivor_window == 180.0
    assert pasted == point.settings


def test_recommendation_names_the_pool_size_even_at_its_default() -> None:
    base = parse_capacity_aware({"enabled": True}, where="t")
    (point,) = expand({"proactiveCapacity": [1]}, base, where="g")
    text = recommendation_yaml(
        {**row("p1", 25.0, 1.0, 1.0), "dials": point.dial_map()}, target_p95=60.0, context="t"
    )
    assert yaml.safe_load(text)["capacityAware"] == {"enabled": True, "proactiveCapacity": 1}
