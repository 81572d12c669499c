"""Benchmark: the warm path, step by step, per batch (issue 31).

Runs one scenario (default: merge-queue) for seeds 1..N under stock ARC and capacity-aware
(``--strategies`` for others) on the same jobs, and splits every job's queue-to-start wait into
its steps (simulator/measurement/warm_path.py): queued -> assigned -> runner pod bound ->
runner Running -> registered -> job acquired -> workflow pod created -> bound -> Running ->
started (the hook read it Running). For capacity-aware it also charges the time before
assignment to its cause (simulator/measurement/breakdown.py: statistics lag, ramp, pairs
waiting for nodes, READY-not-advertised, assignment) and follows each pair: requested ->
both halves bound -> READY -> advertised.

Jobs are grouped by the scenario's bursts: the first batch (cold pool), later batches (the
previous batch's nodes still up) and the jobs between batches. It prints:

- the fair p50 per batch (a failed or never-started job is infinitely late) pooled over
  seeds, the ratio to stock ARC's, and the worst later batch (issue 31: <= 1.1x);
- per group, the mean seconds per step (they add up to the mean wait) and the p50 of each
  step, per strategy;
- capacity-aware's time before assignment by cause, and its pairs' steps, per group.

Run: ``.venv/bin/python bench/warm_path.py [--seeds 2] [--scenario merge-queue] [--jobs 2]
[--set KEY=VALUE]`` (``--set`` merges a capacityAware key over the scenario's block, as in
bench/scenarios.py, to measure a variant).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scenarios import set_block
from simulator.engine.world import World
from simulator.measurement.breakdown import CAUSES, attribute
from simulator.measurement.warm_path import (
    JOB_STEPS,
    PAIR_STEPS,
    JobPath,
    PairPath,
    Paths,
    batch_p50s,
    group_of,
    paths,
    summarize,
    summarize_pairs,
)
from simulator.scenarios.scenario import ScenarioError, load_scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, STRATEGIES

TARGET = 1.10
GROUPS = ("first batch", "later batches", "between batches")
BEFORE = tuple(c for c in CAUSES if c != "after_assignment")


def windows_of(name: str) -> list[tuple[float, float]]:
    scenario = load_scenario(name)
    spans = [(b.at, b.at + b.over) for stream in scenario.jobs for b in stream.bursts]
    return sorted(spans)


def group_name(queued: float, windows: Sequence[tuple[float, float]]) -> str:
    g = group_of(queued, windows)
    return "between batches" if g is None else "first batch" if g == 0 else "later batches"


def run_one(task: tuple[str, int, str, dict[str, Any]]) -> dict[str, Any]:
    """One strategy of one seed (in a worker process): its paths, as plain data."""
    name, seed, strategy, block = task
    scenario = load_scenario(name)
    if block:
        scenario = scenario.with_capacity_aware(block, where="--set")
    world = World(scenario, strategy, seed=seed)
    world.run()
    events = [json.loads(line) for line in world.log.lines()]
    found = paths(events)
    per_job: dict[Any, dict[str, float]] = {}
    attribute(events, per_job)
    return {
        "seed": seed,
        "strategy": strategy,
        "jobs": [(j.job, j.queued, list(j.steps)) for j in found.jobs],
        "unfinished": list(found.unfinished),
        "pairs": [(p.pair, p.requested, list(p.steps)) for p in found.pairs],
        "before": {str(job): causes for job, causes in per_job.items()},
    }


def _paths(run: dict[str, Any]) -> Paths:
    return Paths(
        tuple(JobPath(job, q, tuple(s)) for job, q, s in run["jobs"]),
        tuple(run["unfinished"]),
        tuple(PairPath(p, r, tuple(s)) for p, r, s in run["pairs"]),
    )


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isinf(value) else f"{value:,.{digits}f}"


def batch_lines(
    by_strategy: dict[str, list[dict[str, Any]]], windows: list[tuple[float, float]]
) -> list[str]:
    """Fair p50 per batch pooled over seeds, the ratio to stock ARC, the worst later batch."""
    pooled: dict[str, tuple[list[float | None], float | None]] = {}
    for strategy, runs in by_strategy.items():
        merged = Paths(
            tuple(j for r in runs for j in _paths(r).jobs),
            tuple(q for r in runs for q in r["unfinished"]),
            (),
        )
        pooled[strategy] = batch_p50s(merged, windows)
    names = list(by_strategy)
    lines = ["batch  at min  " + "  ".join(f"{n:>15}" for n in names) + "   x stock ARC"]
    worst: dict[str, tuple[float, int]] = {}
    for i, (start, _) in enumerate(windows):
        cells = [pooled[n][0][i] for n in names]
        ref = pooled.get(BASELINE, ([None] * len(windows), None))[0][i]
        ratios = []
        for n, v in zip(names, cells, strict=True):
            if n == BASELINE or ref is None or v is None:
                continue
            ratios.append(f"{n} {v / ref:.2f}")
            if i > 0 and v / ref > worst.get(n, (-1.0, 0))[0]:
                worst[n] = (v / ref, i + 1)
        row = f"{i + 1:>5}  {start / 60:>6.0f}  " + "  ".join(f"{_num(c):>15}" for c in cells)
        lines.append(row + "   " + ", ".join(ratios))
    between = [pooled[n][1] for n in names]
    lines.append("between        " + "  ".join(f"{_num(c):>15}" for c in between))
    for n, (ratio, batch) in worst.items():
        flag = "meets" if ratio <= TARGET else "MISSES"
        lines.append(f"worst later batch, {n}: {ratio:.2f}x (batch {batch})  [{flag} <= {TARGET}]")
    return lines


def step_lines(
    by_strategy: dict[str, list[dict[str, Any]]], windows: list[tuple[float, float]]
) -> list[str]:
    lines = []
    names = list(by_strategy)
    for group in GROUPS:
        summaries = {}
        for n in names:
            jobs = [
                j
                for r in by_strategy[n]
                for j in _paths(r).jobs
                if group_name(j.queued, windows) == group
            ]
            summaries[n] = summarize(jobs)
        if all(s is None for s in summaries.values()):
            continue
        counts = ", ".join(f"{n} {s.jobs if s else 0}" for n, s in summaries.items())
        lines.append(f"\n{group} (jobs: {counts}); mean s per step (p50 s):")
        lines.append(f"  {'step':<18}" + "".join(f"{n:>22}" for n in names))
        for i, step in enumerate(JOB_STEPS):
            cells = [
                "-" if s is None else f"{s.mean[i]:.1f} ({s.p50[i]:.1f})"
                for s in summaries.values()
            ]
            lines.append(f"  {step:<18}" + "".join(f"{c:>22}" for c in cells))
        cells = [
            "-" if s is None else f"{s.wait_mean:.1f} ({s.wait_p50:.1f})"
            for s in summaries.values()
        ]
        lines.append(f"  {'wait: mean (p50)':<18}" + "".join(f"{c:>22}" for c in cells))
    return lines


def before_lines(runs: list[dict[str, Any]], windows: list[tuple[float, float]]) -> list[str]:
    """Capacity-aware's queued -> assigned seconds by cause, mean per job of each group."""
    lines = ["\ncapacity-aware, queued -> assigned by cause (mean s per job):"]
    lines.append(f"  {'cause':<22}" + "".join(f"{g:>17}" for g in GROUPS))
    totals = {g: dict.fromkeys(BEFORE, 0.0) for g in GROUPS}
    counts = dict.fromkeys(GROUPS, 0)
    for r in runs:
        for job, queued, _ in r["jobs"]:
            g = group_name(queued, windows)
            counts[g] += 1
            for cause, seconds in r["before"].get(str(job), {}).items():
                if cause in totals[g]:
                    totals[g][cause] += seconds
    for cause in BEFORE:
        if not any(totals[g][cause] for g in GROUPS):
            continue
        cells = [totals[g][cause] / counts[g] if counts[g] else 0.0 for g in GROUPS]
        lines.append(f"  {cause:<22}" + "".join(f"{c:>17.2f}" for c in cells))
    return lines


def pair_lines(runs: list[dict[str, Any]], windows: list[tuple[float, float]]) -> list[str]:
    lines = ["\ncapacity-aware pairs by when requested: p50 s (mean s) per step, n reaching it:"]
    lines.append(f"  {'group':<16} {'pairs':>6}" + "".join(f"{s:>24}" for s in PAIR_STEPS))
    for group in GROUPS:
        pairs = [
            p for r in runs for p in _paths(r).pairs if group_name(p.requested, windows) == group
        ]
        if not pairs:
            continue
        s = summarize_pairs(pairs)
        cells = [
            f"{_num(s.p50[i], 2)} ({_num(s.mean[i], 2)}) n={s.reached[i]}"
            for i in range(len(PAIR_STEPS))
        ]
        lines.append(f"  {group:<16} {s.pairs:>6}" + "".join(f"{c:>24}" for c in cells))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N (default 2)")
    parser.add_argument("--scenario", default="merge-queue")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument(
        "--strategies",
        default=f"{BASELINE},{CAPACITY_AWARE}",
        help=f"comma-separated subset of {', '.join(STRATEGIES)}",
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not strategies or set(strategies) - set(STRATEGIES):
        parser.error(f"--strategies: choose from {', '.join(STRATEGIES)}")
    try:
        windows = windows_of(args.scenario)
    except ScenarioError as exc:
        parser.error(str(exc))
    block = set_block(parser, args.set, [args.scenario])
    tasks = [
        (args.scenario, seed, strategy, block)
        for seed in range(1, args.seeds + 1)
        for strategy in strategies
    ]
    with Pool(args.jobs) as pool:
        runs = pool.map(run_one, tasks)
    by_strategy = {s: [r for r in runs if r["strategy"] == s] for s in strategies}
    variant = f", --set {' '.join(args.set)}" if args.set else ""
    print(f"== {args.scenario}: {args.seeds} seeds{variant}; fair p50 per batch (s), pooled")
    print("\n".join(batch_lines(by_strategy, windows)))
    print("\n".join(step_lines(by_strategy, windows)))
    if CAPACITY_AWARE in by_strategy:
        print("\n".join(before_lines(by_strategy[CAPACITY_AWARE], windows)))
        print("\n".join(pair_lines(by_strategy[CAPACITY_AWARE], windows)))
    failed = {s: sum(len(r["unfinished"]) for r in rs) for s, rs in by_strategy.items()}
    print(f"\nfailed or never started (all seeds): {failed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
