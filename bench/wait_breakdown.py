"""Benchmark: charge every job's queue-to-start wait to its cause (issue 13).

Runs each scenario (default: burst and shared-nodepool) for seeds 1..N under capacity-aware and
stock ARC, replays each event log through :func:`simulator.measurement.breakdown.attribute` and
prints, per scenario and strategy, the seconds charged to each cause: total over all seeds,
mean per job, share of all waiting. Causes and the rule that picks one are documented in
``simulator/measurement/breakdown.py``: HUD/statistics lag, ramp limit, NodePool full, pairs
waiting for nodes, READY-not-advertised, after assignment (runner start, hook, workflow pod).

Run: ``.venv/bin/python bench/wait_breakdown.py [--seeds 3] [--scenarios burst,shared-nodepool]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.measurement.breakdown import Breakdown, attribute, table
from simulator.scenarios.scenario import load_scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, STRATEGIES

DEFAULT_SCENARIOS = "burst,shared-nodepool"


def breakdown_of(scenario_name: str, strategy: str, seed: int) -> Breakdown:
    world = World(load_scenario(scenario_name), strategy, seed=seed)
    world.run()
    return attribute(json.loads(line) for line in world.log.lines())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    parser.add_argument("--scenarios", default=DEFAULT_SCENARIOS, help="comma-separated names")
    parser.add_argument(
        "--strategy",
        action="append",
        choices=STRATEGIES,
        help=f"repeatable (default: {CAPACITY_AWARE} and {BASELINE})",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    strategies = args.strategy or [CAPACITY_AWARE, BASELINE]
    for name in (n.strip() for n in args.scenarios.split(",") if n.strip()):
        blocks: dict[str, Breakdown] = {}
        for strategy in strategies:
            total = Breakdown()
            for seed in range(1, args.seeds + 1):
                total.add(breakdown_of(name, strategy, seed))
            blocks[f"{name} / {strategy} ({args.seeds} seeds)"] = total
        print(table(blocks))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
