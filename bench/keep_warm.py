"""Benchmark: what keeping warm capacity warm costs and buys (issue 13, "keep warm").

Runs a scenario (default ``ice-failover``) under stock ARC and the static warm pool once, and
under the capacity-aware listener once per variant of the keep-warm dials: Karpenter's
``do-not-disrupt`` on workflow placeholders (off, ``true``, or a duration after which the
protection ends), the survivor window, and the warm pool size. Prints per run: node launches
(and the ratio to stock ARC), node-hours, machine dollars, idle reserved CPU/GPU-hours,
failed/stuck jobs and fair queue-to-start p95/p99 (a failed or never-started job is infinitely
late: ``never``); machines are billed from the launch request. Runs in parallel over the
machine's cores; deterministic per seed. Nothing is written unless ``--json``.

Run: ``.venv/bin/python bench/keep_warm.py [--scenario ice-failover] [--seed N] [--jobs 2]
[--only 30m,1h]``
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.scenarios.scenario import load_scenario

#: (label, strategy, capacityAware overrides)
VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("stock ARC", "baseline", {}),
    ("static warm pool", "overprovision", {}),
    (
        "no do-not-disrupt, survivor 3m",
        "capacity-aware",
        {"doNotDisrupt": False, "survivorWindow": 180},
    ),
    (
        "do-not-disrupt, survivor 3m",
        "capacity-aware",
        {"doNotDisrupt": True, "survivorWindow": 180},
    ),
    (
        "do-not-disrupt, survivor 60s",
        "capacity-aware",
        {"doNotDisrupt": True, "survivorWindow": 60},
    ),
    (
        "do-not-disrupt, survivor 30s",
        "capacity-aware",
        {"doNotDisrupt": True, "survivorWindow": 30},
    ),
    (
        "do-not-disrupt 30m, survivor 60s",
        "capacity-aware",
        {"doNotDisrupt": 1800.0, "survivorWindow": 60},
    ),
    (
        "do-not-disrupt 1h, survivor 60s",
        "capacity-aware",
        {"doNotDisrupt": 3600.0, "survivorWindow": 60},
    ),
    (
        "do-not-disrupt, survivor 60s, 4 warm",
        "capacity-aware",
        {"doNotDisrupt": True, "survivorWindow": 60, "proactiveCapacity": 4},
    ),
]


def run(
    scenario_name: str, seed: int | None, label: str, strategy: str, overrides: dict[str, Any]
) -> dict[str, Any]:
    scenario = load_scenario(scenario_name)
    if overrides:
        block = scenario.strategies.capacity_aware.model_copy(
            update={_snake(k): v for k, v in overrides.items()}
        )
        strategies = scenario.strategies.model_copy(update={"capacity_aware": block})
        scenario = scenario.model_copy(update={"strategies": strategies})
    results = World(scenario, strategy, seed=seed).run()
    return {"variant": label, "strategy": strategy, **results}


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="ice-failover")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    parser.add_argument("--json", type=Path, help="also write every run's results here")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated substrings: run stock ARC plus the variants whose label has one",
    )
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    variants = [
        v for i, v in enumerate(VARIANTS) if i == 0 or not wanted or any(w in v[0] for w in wanted)
    ]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(run, args.scenario, args.seed, label, strategy, overrides)
            for label, strategy, overrides in variants
        ]
        rows = [f.result() for f in futures]
    stock = rows[0]["nodes_launched"] or 1
    header = (
        f"{'variant':<38} {'nodes':>6} {'x ARC':>6} {'node-h':>8} {'$':>8} {'idle CPU-h':>10} "
        f"{'idle GPU-h':>10} {'failed':>6} {'stuck':>5} {'p95 s':>7} {'p99 s':>7}"
    )
    print(f"{args.scenario} (seed {rows[0].get('seed', args.seed) or 'scenario'})")
    print(header)
    print("-" * len(header))
    for r in rows:
        q = r["queue_to_start_fair_seconds"]  # a failed or never-started job is infinitely late
        print(
            f"{r['variant']:<38} {r['nodes_launched']:>6} {r['nodes_launched'] / stock:>6.2f} "
            f"{r['billed_node_hours']:>8.1f} {r['billed_cost_usd']:>8.1f} "
            f"{r['idle_reserved_cpu_hours']:>10.1f} {r['idle_reserved_gpu_hours']:>10.1f} "
            f"{r['jobs_failed']:>6} {r['jobs_stuck']:>5} {_s(q['p95']):>7} {_s(q['p99']):>7}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, default=str))
    return 0


def _s(value: Any) -> str:
    return "never" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
