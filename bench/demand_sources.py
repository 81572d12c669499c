"""Benchmark: the capacity-aware strategy with each demand source, on the shipped scenarios.

For every shipped scenario (config/scenarios, except the chaos day) and every demand source
of the simulated capacity-aware listener (``strategies.capacityAwareSim.demandSource``):
``statistics`` (the scale set's own statistics, the listener's zero-configuration default),
``hud`` (the HUD feed alone) and ``both`` (the larger known value), it runs the scenario once
with its own seed and prints one Markdown table row: completed / failed / stuck jobs,
queue-to-start p50 / p95 / p99, idle reserved CPU-hours and GPU-hours, placeholder pods
created. Deterministic: the same seed gives the same figures. Nothing is written to disk.

Run: ``.venv/bin/python bench/demand_sources.py [SCENARIO ...] [--source S ...]``
(the 24 h ``ice-failover`` day takes 30-60 s per source on one core).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.scenarios.scenario import Scenario, load_scenario

SCENARIOS = ("burst", "drain", "ice-failover", "scale-to-zero", "shared-nodepool", "storm")
SOURCES = ("statistics", "hud", "both")


#: The listener's ``demand.sources`` for each row ("both" combines by the larger answer).
SOURCE_LISTS = {"statistics": ["statistics"], "hud": ["hud"], "both": ["hud", "statistics"]}


def with_source(scenario: Scenario, source: str) -> Scenario:
    strategies = scenario.strategies
    settings = strategies.capacity_aware
    demand = settings.demand.model_copy(update={"sources": SOURCE_LISTS[source]})
    capacity_aware = settings.model_copy(update={"demand": demand})
    return scenario.model_copy(
        update={"strategies": strategies.model_copy(update={"capacity_aware": capacity_aware})}
    )


def row(scenario: str, source: str, results: dict[str, Any], wall: float) -> str:
    q = results["queue_to_start_seconds"]

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f}"

    return (
        f"| {scenario} | {source} | {results['jobs_completed']:,} | {results['jobs_failed']:,} "
        f"| {results['jobs_stuck']:,} | {fmt(q['p50'])} | {fmt(q['p95'])} | {fmt(q['p99'])} "
        f"| {results['idle_reserved_cpu_hours']:,.1f} | {results['idle_reserved_gpu_hours']:,.1f} "
        f"| {results['placeholder_pods_created']:,} | {wall:.0f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--source", action="append", choices=SOURCES)
    args = parser.parse_args()
    print(
        "| scenario | demand source | completed | failed | stuck | p50 s | p95 s | p99 s "
        "| idle CPU-h | idle GPU-h | placeholder pods | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scenario:
        base = load_scenario(name)
        for source in args.source or SOURCES:
            started = time.perf_counter()
            results = World(with_source(base, source), "capacity-aware").run()
            print(row(name, source, results, time.perf_counter() - started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
