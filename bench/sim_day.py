"""Benchmark: the 24 h simulated day of ``ice-failover`` (>= 5 000 jobs), per strategy.

Runs each strategy of the scenario once, end to end (world build, the whole day, results),
and prints the wall time and the CPU time of this process for each, plus the total. Target
(issue 3): <= 60 s wall time per run of the day on one core. Nothing is written to disk.

Run: ``.venv/bin/python bench/sim_day.py [SCENARIO] [--strategy NAME ...]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.scenarios.scenario import load_scenario
from simulator.scenarios.strategies import STRATEGIES

TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="ice-failover")
    parser.add_argument(
        "--strategy",
        action="append",
        choices=STRATEGIES,
        help="run only this strategy (repeatable)",
    )
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    rows = []
    for strategy in args.strategy or STRATEGIES:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        world = World(scenario, strategy)
        results = world.run()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        rows.append(
            {
                "strategy": strategy,
                "jobs": results["jobs_total"],
                "simulated_hours": scenario.duration / 3600,
                "events": len(world.log),
                "loop_steps": world.loop.steps,
                "reconcile_steps": results.get("reconcile_steps", 0),
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "within_target": wall <= TARGET_SECONDS,
            }
        )
        print(
            f"{strategy:<15} jobs={results['jobs_total']:>6}  events={len(world.log):>7}  "
            f"loop steps={world.loop.steps:>7}  wall={wall:6.1f} s  cpu={cpu:6.1f} s",
            flush=True,
        )
    total_wall = sum(r["wall_s"] for r in rows)
    total_cpu = sum(r["cpu_s"] for r in rows)
    print(
        f"{'total':<15} wall={total_wall:.1f} s  cpu={total_cpu:.1f} s  "
        f"(target {TARGET_SECONDS:.0f} s wall per run)"
    )
    print(
        json.dumps(
            {
                "scenario": scenario.name,
                "runs": rows,
                "total_wall_s": round(total_wall, 2),
                "total_cpu_s": round(total_cpu, 2),
            }
        )
    )
    return 0 if all(r["within_target"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
