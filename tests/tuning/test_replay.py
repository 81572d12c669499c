"""Putting an imported history into a base scenario: unknown labels reported, jobs kept exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.engine.world import build_jobs
from simulator.scenarios.scenario import load_scenario
from tuning.history import History, HistoryJob
from tuning.karpenter import KarpenterDialError
from tuning.replay import apply_dials, replayable, with_trace, write_trace

BASE = load_scenario("scale-to-zero")  # one scale set serving [linux-nightly]


def job(index: int, queued: float, labels: tuple[str, ...]) -> HistoryJob:
    return HistoryJob(index, queued, 300.0, labels, f"job-{index}", "acme/tools")


def test_jobs_with_labels_no_scale_set_serves_are_reported_by_index() -> None:
    history = History(
        "h.json",
        (
            job(0, 10.0, ("linux-nightly",)),
            job(1, 20.0, ("ubuntu-latest",)),
            job(2, 30.0, ("linux-nightly", "gpu")),
        ),
        (),
    )
    kept, problems = replayable(BASE, history)
    assert [j.index for j in kept] == [0]
    assert [(p.index, p.field) for p in problems] == [(1, "labels"), (2, "labels")]
    assert "its scale sets serve ['linux-nightly']" in problems[0].reason


def test_the_replayed_scenario_queues_exactly_the_history(tmp_path: Path) -> None:
    jobs = [job(0, 10.0, ("linux-nightly",)), job(1, 7_000.5, ("linux-nightly",))]
    scenario = with_trace(BASE, write_trace(jobs, tmp_path / "trace.csv"), jobs)
    assert scenario.duration == 3 * 3600.0  # the last job + an hour, in whole hours
    replayed = build_jobs(scenario, seed=1)
    assert [(j.at, j.labels, j.duration, j.name) for j in replayed] == [
        (10.0, ("linux-nightly",), 300.0, "job-0"),
        (7_000.5, ("linux-nightly",), 300.0, "job-1"),
    ]
    assert scenario.clusters == BASE.clusters  # the team's clusters are kept as they are


def test_dials_change_the_block_and_the_simulator_side_only() -> None:
    changed = apply_dials(
        BASE,
        {"proactiveCapacity": "auto", "warmPool.maxPairs": 3, "sim.fit_refresh": "30s"},
        where="t",
    )
    assert changed.strategies.capacity_aware.proactive_capacity == "auto"
    assert changed.strategies.capacity_aware.warm_pool.max_pairs == 3
    assert changed.strategies.capacity_aware.hud_fallback_queued_jobs == 1  # the base's value
    assert changed.strategies.capacity_aware_sim.fit_refresh == 30.0
    assert BASE.strategies.capacity_aware.proactive_capacity == 0


@pytest.mark.parametrize(
    ("dials", "expected"),
    [
        ({"karpenter.consolidateAfter": "15m"}, 900.0),
        ({"karpenter.consolidateAfter": 45}, 45.0),
        ({"karpenter.consolidateAfter": "0s"}, 0.0),
        ({"karpenter.consolidateAfter": "Never"}, None),
    ],
)
def test_a_nodepool_dial_sets_every_nodepool_of_every_cluster_and_nothing_else(
    dials: dict[str, object], expected: float | None
) -> None:
    base = load_scenario("ice-failover")  # two clusters, two NodePools each
    changed = apply_dials(base, dials, where="t")
    pools = [p for c in changed.clusters for p in c.spec.nodepools]
    assert len(pools) == 4
    assert {p.consolidate_after for p in pools} == {expected}
    assert changed.strategies == base.strategies
    assert {p.consolidate_after for c in base.clusters for p in c.spec.nodepools} == {300.0}


@pytest.mark.parametrize(
    ("dials", "message"),
    [
        ({"karpenter.consolidateAfter": "soon"}, "expected a duration like 30s, 5m, 1h"),
        ({"karpenter.consolidateAfter": -5}, "expected a duration"),
        ({"karpenter.consolidateAfter": True}, "expected a duration"),
        ({"karpenter.expireAfter": "1h"}, "karpenter.expireAfter: unknown; allowed"),
    ],
)
def test_a_bad_nodepool_dial_is_one_error_naming_the_key(
    dials: dict[str, object], message: str
) -> None:
    with pytest.raises(KarpenterDialError, match=message):
        apply_dials(BASE, dials, where="t")
