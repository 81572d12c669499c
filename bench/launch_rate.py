"""Benchmark: node launches per minute under a burst (issue 13: the ramp honours its rate).

Runs a scenario (default ``storm``) under each strategy and prints, from the event log, the
largest number of NodeClaims created in any 60-second window, next to the capacity-aware
listener's configured ``nodeLaunchRate``, plus the time until 95% of the jobs were running.
Nothing is written to disk.

Run: ``.venv/bin/python bench/launch_rate.py [SCENARIO] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.scenarios.scenario import load_scenario
from simulator.scenarios.strategies import STRATEGIES

WINDOW = 60.0


def max_per_window(times: list[float], window: float = WINDOW) -> int:
    """The most events inside any half-open window of ``window`` seconds."""
    best, recent = 0, deque[float]()
    for t in sorted(times):
        recent.append(t)
        while recent[0] <= t - window:
            recent.popleft()
        best = max(best, len(recent))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="storm")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    scenario = load_scenario(args.scenario)
    rates = ", ".join(
        f"{ss.name} {scenario.capacity_aware_for(ss.name).node_launch_rate:g}"
        for ss in scenario.scale_sets
    )
    print(f"{scenario.name}: capacity-aware nodeLaunchRate (nodes/min per scale set) = {rates}")
    print(f"{'strategy':<15} {'NodeClaims':>10} {'max per 60 s':>13} {'95% running s':>14}")
    for strategy in STRATEGIES:
        world = World(scenario, strategy, seed=args.seed)
        results = world.run()
        created = [
            event["t"]
            for event in map(json.loads, world.log.lines())
            if event["type"] == "nodeclaim_created"
        ]
        t95 = results.get("time_to_95pct_running")
        print(
            f"{strategy:<15} {len(created):>10} {max_per_window(created):>13} "
            f"{'never' if t95 is None else f'{t95:,.1f}':>14}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
