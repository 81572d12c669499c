"""The settings a scenario measures: shipped defaults, and each scale set's own block.

Every scale set has its own listener in a real install, so its own ``capacityAware`` block;
a scenario says what its scale sets share and what one scale set changes. And a shipped
scenario measures what a user gets: anything it moves off the listener's defaults beyond
what a user must set is named in its description.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.settings import CapacityAwareSettings
from simulator.engine.world import World
from simulator.scenarios.overrides import MUST_SET, non_default_keys, unexplained_settings
from simulator.scenarios.scenario import ScenarioError, load_scenario, parse_scenario, shipped
from tests.simulated.workload.builders import scale_set, scenario

SHARED = {
    "enabled": True,
    "proactiveCapacity": 2,
    "workflowResources": {"cpu": "2", "memory": "4Gi"},
    "demand": {"statisticsRefresh": "5s"},
}


def _two_sets(block_b: dict[str, Any] | None, shared: dict[str, Any] = SHARED) -> dict[str, Any]:
    b = scale_set("b", "east", gpu=False)
    if block_b is not None:
        b["capacity_aware"] = block_b
    return scenario(
        scale_sets=[scale_set("a", "east", gpu=False), b],
        jobs=[{"labels": ["linux"], "per_hour": 10, "duration": {"median": "5m"}}],
        strategies={"capacity_aware": shared},
    )


# --- shipped scenarios measure the shipped defaults ---------------------------------------


@pytest.mark.parametrize("path", shipped(), ids=lambda p: p.stem)
def test_a_shipped_scenario_names_every_setting_it_moves_off_the_defaults(path: Path) -> None:
    loaded = load_scenario(path)
    blocks = {ss.name: loaded.capacity_aware_for(ss.name) for ss in loaded.scale_sets}
    blocks["strategies.capacity_aware"] = loaded.strategies.capacity_aware
    assert unexplained_settings(loaded.description, blocks) == []


def test_a_tuned_setting_the_description_does_not_name_is_reported() -> None:
    tuned = CapacityAwareSettings(enabled=True, cut_poll_on_rise=True, proactive_capacity=4)
    blocks = {"ci": tuned}
    assert unexplained_settings("1 000 jobs in one minute", blocks) == ["ci: cutPollOnRise"]
    assert unexplained_settings("with cutPollOnRise on (default off)", blocks) == []


def test_the_defaults_come_from_the_settings_model_itself() -> None:
    assert non_default_keys(CapacityAwareSettings()) == []
    # A value written out equal to the default is not a deviation.
    assert non_default_keys(CapacityAwareSettings(cut_poll_on_drop=True)) == []
    changed = CapacityAwareSettings(enabled=True, survivor_window=60, do_not_disrupt=True)
    assert non_default_keys(changed) == ["enabled", "survivorWindow", "doNotDisrupt"]
    assert "enabled" in MUST_SET


# --- a scale set's own block --------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "expect"),
    [
        # a key set by the scale set replaces the shared value; the others are kept
        ({"proactiveCapacity": 5}, {"proactive_capacity": 5, "enabled": True}),
        # snake_case is accepted, as in the shared block
        ({"proactive_capacity": 0}, {"proactive_capacity": 0}),
        # workflowResources is one pod's requests: replaced whole, never merged key by key
        ({"workflowResources": {"cpu": "4"}}, {"workflow_resources": {"cpu": "4"}}),
        # a nested settings block merges key by key
        (
            {"demand": {"combine": "first"}},
            {"demand.combine": "first", "demand.statistics_refresh": 5.0},
        ),
    ],
    ids=["replaces-a-key", "snake-case", "resources-whole", "nested-merges"],
)
def test_a_scale_sets_block_is_merged_over_the_shared_block(
    block: dict[str, Any], expect: dict[str, Any]
) -> None:
    loaded = parse_scenario(_two_sets(block), where="s.yaml")
    mine = loaded.capacity_aware_for("b")
    for dotted, value in expect.items():
        got: Any = mine
        for part in dotted.split("."):
            got = getattr(got, part)
        assert got == value, dotted
    assert loaded.capacity_aware_for("a") == loaded.strategies.capacity_aware


@pytest.mark.parametrize(
    ("block", "shared", "line"),
    [
        (
            {"proactiveCapcity": 3},
            SHARED,
            "s.yaml: scale_sets[1].capacity_aware.proactiveCapcity: unknown field (check the "
            "spelling; fields: reconciler/settings.py, camelCase)",
        ),
        (
            {"demand": {"combyne": "first"}},
            SHARED,
            "s.yaml: scale_sets[1].capacity_aware.demand.combyne: unknown field (check the "
            "spelling; fields: reconciler/settings.py, camelCase)",
        ),
        (
            {"proactiveCapacity": -1},
            SHARED,
            "s.yaml: scale_sets[1].capacity_aware.proactiveCapacity: proactiveCapacity is a "
            "number of pairs from 0 to 10000, or 'auto' (got -1)",
        ),
        # a rule across fields is checked on the merged block (the shared 100 requests per
        # step against the scale set's own 50 pairs in flight)
        (
            {"maxPairsInFlight": 50},
            {**SHARED, "maxPairsInFlight": 400, "maxRequestsPerStep": 100},
            "s.yaml: scale_sets[1].capacity_aware: maxRequestsPerStep must be <= "
            "maxPairsInFlight (got 100 > 50)",
        ),
    ],
    ids=["unknown-key", "unknown-nested-key", "bad-value", "rule-after-merge"],
)
def test_a_bad_scale_set_block_is_one_error_with_the_path_of_the_bad_key(
    block: dict[str, Any], shared: dict[str, Any], line: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_two_sets(block, shared), where="s.yaml")
    assert str(caught.value).splitlines() == [line]


def test_an_unknown_scale_set_name_is_refused_with_the_known_names() -> None:
    loaded = parse_scenario(_two_sets(None), where="s.yaml")
    with pytest.raises(ScenarioError, match=r"no scale set 'c'; known: a, b"):
        loaded.capacity_aware_for("c")


def test_each_scale_sets_listener_runs_with_its_own_block(tmp_path: Path) -> None:
    data = _two_sets({"proactiveCapacity": 0, "workflowResources": {"cpu": "1"}})
    path = tmp_path / "two.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    world = World(load_scenario(path), "capacity-aware")
    by_set = {d.target.ers_name: d.settings for d in world.capacity_drivers()}
    assert by_set["a"].proactive_capacity == 2
    assert by_set["a"].workflow_resources == {"cpu": "2", "memory": "4Gi"}
    assert by_set["b"].proactive_capacity == 0
    assert by_set["b"].workflow_resources == {"cpu": "1"}


def test_a_bench_variant_merges_over_the_shared_block_and_keeps_each_scale_sets_own() -> None:
    loaded = parse_scenario(_two_sets({"proactiveCapacity": 0}), where="s.yaml")
    variant = loaded.with_capacity_aware({"cutPollOnRise": True}, where="--set")
    assert variant.capacity_aware_for("a").cut_poll_on_rise is True
    assert variant.capacity_aware_for("b").cut_poll_on_rise is True
    assert variant.capacity_aware_for("b").proactive_capacity == 0
    assert loaded.capacity_aware_for("a").cut_poll_on_rise is False  # the original is unchanged
    with pytest.raises(ScenarioError) as caught:
        loaded.with_capacity_aware({"cutPollOnRyse": True}, where="--set")
    assert str(caught.value).startswith("--set: strategies.capacity_aware.cutPollOnRyse: unknown")
