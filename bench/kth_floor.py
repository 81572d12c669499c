"""Benchmark: where the k-th job ratio's misses come from (the floors behind bench/scenarios.py).

    python bench/kth_floor.py [--seeds 10] [--jobs 2] [--scenarios scale-to-zero,shared-nodepool]

For each scenario and seed, stock ARC (``baseline``) and capacity-aware run on the same jobs in
three worlds, and the whole-run k-th job ratio (simulator/measurement/kth.py) is printed as the
maximum over ``k`` and seeds, with the ``k`` where it occurs:

1. **shipped**: the scenario as shipped.
2. **fixed boot**: every NodeClaim takes the *same* time to launch (the middle of the
   scenario's ``latencies.launch`` range) in both strategies. Boot times are drawn per NodeClaim
   in creation order, so two strategies that create different numbers of NodeClaims give their
   first job's node different draws (30-60 s by default). A miss at ``k = 1`` that vanishes here
   is that draw, not the listener.
3. **fixed boot, instant demand**: as 2, plus ``demand.statisticsRefresh: 1s`` (the smallest
   allowed): the listener learns of a queued job about as soon as it can. What remains is the
   design's own floor: a pair is confirmed (both placeholders Running) before GitHub hears of
   the slot, then the runner replaces the placeholder.

Nothing is asserted; the figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.engine.world import World  # noqa: E402
from simulator.measurement.kth import (  # noqa: E402
    JobTimes,
    Ratio,
    format_ratio,
    job_times,
    whole_run_ratio,
)
from simulator.scenarios.scenario import SCENARIO_DIR, parse_scenario  # noqa: E402

VARIANTS = ("shipped", "fixed boot", "fixed boot, instant demand")
DEFAULT_LAUNCH = (30.0, 60.0)  # simulator/cluster/spec.py Latencies.launch


def variant(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The scenario document of one world (see the module docstring)."""
    out = copy.deepcopy(data)
    if name == "shipped":
        return out
    for cluster in out["clusters"]:
        spec = cluster.setdefault("spec", {})
        latencies = spec.setdefault("latencies", {})
        low, high = latencies.get("launch", DEFAULT_LAUNCH)
        latencies["launch"] = [(low + high) / 2, (low + high) / 2]
    if name == "fixed boot, instant demand":
        block = out.setdefault("strategies", {}).setdefault("capacity_aware", {})
        block.setdefault("demand", {})["statisticsRefresh"] = "1s"
    return out


def run_one(task: tuple[str, str, int, str]) -> tuple[str, str, int, str, list[JobTimes]]:
    scenario_name, variant_name, seed, strategy = task
    data = yaml.safe_load((SCENARIO_DIR / f"{scenario_name}.yaml").read_text(encoding="utf-8"))
    doc = variant(data, variant_name)
    scenario = parse_scenario(doc, where=f"{scenario_name} ({variant_name})", base_dir=SCENARIO_DIR)
    world = World(scenario, strategy, seed=seed)
    world.run()
    return (
        scenario_name,
        variant_name,
        seed,
        strategy,
        job_times(world.service.jobs, world.loop.start),
    )


def worst(ratios: list[Ratio]) -> Ratio:
    known = [r for r in ratios if r.value is not None]
    return max(known, key=lambda r: r.value or 0.0) if known else Ratio(None, 0, 0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--scenarios", default="scale-to-zero,shared-nodepool")
    args = parser.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    tasks = [
        (name, v, seed, strategy)
        for name in names
        for v in VARIANTS
        for seed in range(1, args.seeds + 1)
        for strategy in ("baseline", "capacity-aware")
    ]
    with Pool(args.jobs) as pool:
        runs = {(n, v, s, st): jobs for n, v, s, st, jobs in pool.imap_unordered(run_one, tasks)}
    print("| scenario | world | worst k-th ratio (k) | median over seeds |")
    print("|---|---|---:|---:|")
    for name in names:
        for v in VARIANTS:
            ratios = [
                whole_run_ratio(
                    runs[(name, v, s, "capacity-aware")], runs[(name, v, s, "baseline")]
                )
                for s in range(1, args.seeds + 1)
            ]
            values = sorted(r.value for r in ratios if r.value is not None)
            median = values[len(values) // 2] if values else float("nan")
            print(f"| {name} | {v} | {format_ratio(worst(ratios))} | {median:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
