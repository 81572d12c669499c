"""bench/fleet_duplication.py: a strategy's summary line gives API writes per seed, and nothing
for runs saved before they were recorded."""

from __future__ import annotations

from typing import Any

import pytest

from bench.fleet_duplication import run_line


def run(seed: int, api_writes: int | None) -> dict[str, Any]:
    results: dict[str, Any] = {
        "jobs_failed": 0,
        "jobs_stuck": 0,
        "over_advertised_slot_seconds": 0.0,
        "nodes_launched": 10,
        "billed_cost_usd": 5.0,
    }
    if api_writes is not None:
        results["api_writes"] = api_writes
    return {
        "seed": seed,
        "strategy": "capacity-aware",
        "results": results,
        "waits": [10.0, 20.0],
        "clusters": [],
    }


@pytest.mark.parametrize(
    ("writes", "expected"),
    [
        ((100, 300), "API writes 200/seed"),
        ((1000, 2001), "API writes 1,500/seed"),
        ((None, None), None),
        # One older run without the figure: no mean over the seeds that have it.
        ((100, None), None),
    ],
)
def test_api_writes_are_a_mean_per_seed_when_every_run_recorded_them(
    writes: tuple[int | None, int | None], expected: str | None
) -> None:
    line = run_line([run(1, writes[0]), run(2, writes[1])], stock=[])
    if expected is None:
        assert "API writes" not in line
    else:
        assert line.endswith(expected)
