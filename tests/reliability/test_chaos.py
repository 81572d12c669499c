"""The chaos day: config/scenarios/chaos.yaml with every fault of chaos.faults.yaml, three seeds.

The world runs the production reconciler and subscribers; the invariant observer watches the
whole day (advertised capacity as the Actions service holds it, reservable capacity recomputed
from the cluster's own objects, leases, memory footprint).
"""

from __future__ import annotations

import pytest

from simulator.faults import FaultKind, plan_for_scenario
from simulator.scenarios.scenario import load_scenario, resolve
from tests.reliability.cases_world import CHAOS_SEEDS, ChaosResult

#: Kinds the virtual day applies. Not actions_* (they need HTTP) nor fleet_store_down (the
#: day's one cluster has no fleet store): the fault matrix cases cover those.
VIRTUAL = {
    k
    for k in FaultKind
    if not k.value.startswith("actions_") and k is not FaultKind.FLEET_STORE_DOWN
}


def test_the_chaos_plan_combines_every_virtual_time_fault_over_one_day() -> None:
    scenario = load_scenario("chaos")
    plan = plan_for_scenario(resolve("chaos"))
    assert scenario.duration == 24 * 3600
    assert plan.kinds == VIRTUAL
    assert all(f.start < scenario.duration for f in plan.faults)


@pytest.mark.parametrize("seed", CHAOS_SEEDS)
def test_every_invariant_holds_through_the_chaos_day(
    chaos_runs: dict[int, ChaosResult], seed: int
) -> None:
    run = chaos_runs[seed]
    assert run.report.ok, "\n".join(str(v) for v in run.report.violations)
    assert run.faults_skipped == ()
    assert run.faults_applied == len(plan_for_scenario(resolve("chaos")).faults)
    assert run.crashes == run.restarts == 3
    # The observer really looked: a check every 10 virtual seconds, footprint sampled.
    assert run.report.checks >= 24 * 360
    assert run.report.memory_samples >= 24 * 360
    assert run.jobs_total > 500 and run.jobs_stuck == 0


def test_every_placeholder_created_during_the_day_is_hardened(
    chaos_runs: dict[int, ChaosResult],
) -> None:
    for run in chaos_runs.values():
        assert run.placeholders_created > 100
        assert run.not_hardened == ()
