"""Benchmark: every shipped scenario, N seeds, all strategies; fair figures and k-th job ratios.

For each scenario of config/scenarios/ (``chaos`` excluded: it tests promises under faults,
not throughput) and each seed 1..N, every strategy runs on the same jobs; runs go in parallel
over ``--jobs`` processes. Per scenario and strategy it prints:

- ``failed``, ``stuck``, ``never``: jobs summed over all seeds (never = no workflow pod Running
  by the end);
- ``over-adv``: over-advertised slot-seconds (realized), summed over all seeds;
- ``p50/p95/p99``: fair queue-to-start over the jobs of *all seeds pooled* (a failed or
  never-started job is infinitely late, printed ``never``);
- ``t50%/t95%``: median over seeds of the time from the run's start until 50% / 95% of all
  jobs were running (``never`` when the median seed never got there);
- ``nodes``, ``node-h``, ``$``, ``idle CPU-h``: mean per seed (node-hours and dollars billed
  from the launch request, on-demand list prices, see simulator/measurement/prices.py);
- over-advertised episodes (advertised > confirmed by pods): count, p50, p99, max over all seeds.

Then the **k-th job ratio** of capacity-aware against stock ARC (``baseline``) and against the
warm pool (``overprovision``), per seed and aggregated (max and median over seeds of the per-seed
maximum), in two views: whole run and burst windows only (definitions:
simulator/measurement/kth.py; ``>=`` marks a lower bound: capacity-aware had not got k jobs
running by the end of the run). A ratio <= 1.10 everywhere is issue 13's target.

Then **cost** (issue 24): capacity-aware's billed node-hours and dollars as ratios to stock
ARC's per seed, the price of its warm pool's idle reserved capacity, and whether dollars <=
1.1x stock ARC's + that price; **pair breaks by cause** read from each run's event log
(definitions: bench/cost_report.py, simulator/measurement/pair_breaks.py, reserve_cost.py);
then **jobs completed by every whole hour**, capacity-aware against stock ARC (issue 31's bar
where stock ARC fails jobs: its worst hour mark over seeds, how many marks were short and how
many seconds late it caught up; simulator/measurement/done_by_hour.py); and at the end one
summary row per scenario (failed / stuck / over-advertised, worst k-th ratio, fair p50, T95,
node-hours and dollars as ratios to stock ARC, dollars per completed job as a ratio (where stock
ARC fails jobs it also pays for fewer of them), done by hour, budget, breaks and mends per seed).

Run: ``.venv/bin/python bench/scenarios.py [--seeds 10] [--jobs 2] [--scenarios burst,drain]``
(``--set cutPollOnRise=true`` measures a variant of every scenario's shared capacityAware
block; ``--strategies baseline,capacity-aware`` runs a subset)
(``--json FILE`` also writes every per-run figure; ``--from-json FILE`` prints the tables from
such a file without simulating). Wall time: ice-failover dominates (about
a minute of CPU per capacity-aware seed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cost_report import (
    SUMMARY_HEADER,
    cost_lines,
    log_figures,
    pair_lines,
    summary_row,
)
from simulator.engine.world import World
from simulator.measurement.done_by_hour import HourlyGap, describe, hourly_gap, worst_of
from simulator.measurement.kth import (
    JobTimes,
    Ratio,
    Window,
    burst_ratio,
    format_ratio,
    job_times,
    whole_run_ratio,
)
from simulator.scenarios.scenario import Scenario, ScenarioError, load_scenario, shipped
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, OVERPROVISION, STRATEGIES
from simulator.workload.figures import episode_summary, fair_summary
from simulator.workload.service_records import JobState

EXCLUDED = ("chaos",)
TARGET_RATIO = 1.10


def build_world(task: tuple[str, int, str, dict[str, Any]]) -> World:
    """The world of one (scenario, seed, strategy, ``--set`` block) task, not run yet."""
    name, seed, strategy, block = task
    scenario = load_scenario(name)
    if block:
        scenario = scenario.with_capacity_aware(block, where="--set")
    return World(scenario, strategy, seed=seed)


def run_one(task: tuple[str, int, str, dict[str, Any]]) -> dict[str, Any]:
    """One strategy of one scenario and seed (in a worker process)."""
    name, seed, strategy, _block = task
    world = build_world(task)
    results = world.run()
    jobs = [
        (j.queued, j.running, list(j.labels))
        for j in job_times(world.service.jobs, world.loop.start)
    ]
    completed = sorted(
        j.finished_at - world.loop.start
        for j in world.service.jobs
        if j.state is JobState.SUCCEEDED and j.finished_at is not None
    )
    return {
        "scenario": name,
        "seed": seed,
        "strategy": strategy,
        "results": {k: v for k, v in results.items() if k != "scale_sets"},
        "jobs": jobs,
        "completed": completed,
        "episodes": world.accounting.episode_durations(),
        "log": log_figures(world),
    }


def burst_windows(scenario: Scenario) -> list[Window]:
    return [
        Window(b.at, b.at + b.over, tuple(stream.labels))
        for stream in scenario.jobs
        for b in stream.bursts
    ]


def _jobs(run: dict[str, Any]) -> list[JobTimes]:
    return [JobTimes(q, r, tuple(labels)) for q, r, labels in run["jobs"]]


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return "never"
    return f"{value:,.{digits}f}"


def _median_or_never(values: list[float | None]) -> float | None:
    finite = [math.inf if v is None else v for v in values]
    m = statistics.median(finite) if finite else None
    return None if m is None or math.isinf(m) else m


def strategy_row(runs: list[dict[str, Any]]) -> list[str]:
    res = [r["results"] for r in runs]
    n = len(runs)
    waits = [
        math.inf if running is None else running - queued
        for r in runs
        for queued, running, _ in r["jobs"]
    ]
    fair = fair_summary(waits)
    episodes = episode_summary(d for r in runs for d in r["episodes"])
    return [
        runs[0]["strategy"],
        f"{sum(x['jobs_failed'] for x in res):,}",
        f"{sum(x['jobs_stuck'] for x in res):,}",
        f"{sum(x['jobs_never_started'] for x in res):,}",
        _num(sum(x["over_advertised_slot_seconds"] for x in res)),
        _num(fair["p50"]),
        _num(fair["p95"]),
        _num(fair["p99"]),
        _num(_median_or_never([x["time_to_50pct_running"] for x in res])),
        _num(_median_or_never([x["time_to_95pct_running"] for x in res])),
        _num(sum(x["nodes_launched"] for x in res) / n),
        _num(sum(x["billed_node_hours"] for x in res) / n),
        _num(sum(x["billed_cost_usd"] for x in res) / n, 2),
        _num(sum(x["idle_reserved_cpu_hours"] for x in res) / n),
        f"{episodes['count']:,}",
        _num(episodes["p50"], 3) if episodes["count"] else "-",
        _num(episodes["p99"], 3) if episodes["count"] else "-",
        _num(episodes["max"], 3) if episodes["count"] else "-",
    ]


HEADER = [
    "strategy",
    "failed",
    "stuck",
    "never",
    "over-adv slot-s",
    "p50 s",
    "p95 s",
    "p99 s",
    "t50% s",
    "t95% s",
    "nodes",
    "node-h",
    "$",
    "idle CPU-h",
    "episodes",
    "ep p50 s",
    "ep p99 s",
    "ep max s",
]


def markdown_table(rows: list[list[str]]) -> str:
    """The same table as Markdown (for docs/benchmarks.md)."""
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _aggregate(ratios: list[Ratio]) -> str:
    values = [r.value for r in ratios if r.value is not None]
    if not values:
        return "-"
    worst = max(ratios, key=lambda r: -1.0 if r.value is None else r.value)
    median = statistics.median(values)
    flag = "meets" if worst.value is not None and worst.value <= TARGET_RATIO else "MISSES"
    med = "inf" if math.isinf(median) else f"{median:.2f}"
    return f"max {format_ratio(worst)}, median {med}  [{flag} <= {TARGET_RATIO}]"


def ratio_lines(scenario: Scenario, by_seed: dict[int, dict[str, dict[str, Any]]]) -> list[str]:
    windows = burst_windows(scenario)
    lines = []
    for reference in (BASELINE, OVERPROVISION):
        whole: list[Ratio] = []
        burst: list[Ratio] = []
        for seed in sorted(by_seed):
            runs = by_seed[seed]
            if CAPACITY_AWARE not in runs or reference not in runs:
                continue
            cand, ref = _jobs(runs[CAPACITY_AWARE]), _jobs(runs[reference])
            end = scenario.duration
            w = whole_run_ratio(cand, ref, end)
            b = burst_ratio(cand, ref, windows, end) if windows else Ratio(None, 0, 0)
            whole.append(w)
            burst.append(b)
            lines.append(
                f"  seed {seed:>2} vs {reference:<13} whole run {format_ratio(w)}; "
                f"bursts {format_ratio(b)}"
            )
        if whole:
            lines.append(f"  ALL     vs {reference:<13} whole run {_aggregate(whole)}")
            if windows:
                lines.append(f"  ALL     vs {reference:<13} bursts    {_aggregate(burst)}")
    return lines


def kth_worst(scenario: Scenario, by_seed: dict[int, dict[str, dict[str, Any]]]) -> str:
    """The worst whole-run k-th ratio of capacity-aware against stock ARC over seeds."""
    ratios = [
        whole_run_ratio(_jobs(runs[CAPACITY_AWARE]), _jobs(runs[BASELINE]), scenario.duration)
        for runs in by_seed.values()
        if CAPACITY_AWARE in runs and BASELINE in runs
    ]
    if not ratios:
        return "-"
    return format_ratio(max(ratios, key=lambda r: -1.0 if r.value is None else r.value))


def done_by_hour(scenario: Scenario, by_seed: dict[int, dict[str, dict[str, Any]]]) -> str:
    """Capacity-aware's worst whole hour of jobs completed against stock ARC over seeds
    (simulator/measurement/done_by_hour.py; ``-`` for runs saved without completions)."""
    gaps: list[HourlyGap] = [
        hourly_gap(
            runs[CAPACITY_AWARE]["completed"],
            runs[BASELINE]["completed"],
            scenario.duration,
            seed,
        )
        for seed, runs in sorted(by_seed.items())
        if CAPACITY_AWARE in runs
        and BASELINE in runs
        and "completed" in runs[BASELINE]
        and "completed" in runs[CAPACITY_AWARE]
    ]
    return describe(worst_of(gaps))


def chosen(
    parser: argparse.ArgumentParser, option: str, value: str, allowed: Sequence[str], noun: str
) -> list[str]:
    """The comma-separated names ``value`` gives for ``option``, each one of ``allowed``
    (every one of them when ``value`` is empty); one parser error names the others."""
    wanted = [n.strip() for n in value.split(",") if n.strip()]
    unknown = sorted(set(wanted) - set(allowed))
    if unknown:
        parser.error(
            f"{option}: unknown {noun} {', '.join(unknown)}; choose from {', '.join(allowed)}"
        )
    return wanted or list(allowed)


def set_block(parser: argparse.ArgumentParser, sets: list[str], names: list[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` options as one block, checked against every scenario up front."""
    block: dict[str, Any] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--set {item!r}: expected KEY=VALUE, e.g. cutPollOnRise=true")
        block[key.strip()] = yaml.safe_load(value)
    for name in names if block else ():
        try:
            load_scenario(name).with_capacity_aware(block, where="--set")
        except ScenarioError as exc:
            parser.error(f"scenario {name}: {exc}")
    return block


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--scenarios", default="", help="comma-separated names (default: all)")
    parser.add_argument("--json", type=Path, default=None, help="also write every run here")
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="print the tables from runs saved with --json instead of simulating",
    )
    parser.add_argument("--markdown", action="store_true", help="tables as Markdown")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a capacityAware key merged over every scenario's shared block (VALUE is YAML, "
        "e.g. --set cutPollOnRise=true): which setting moved a figure",
    )
    parser.add_argument(
        "--strategies", default="", help=f"comma-separated subset of {', '.join(STRATEGIES)}"
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    shipped_names = [p.stem for p in shipped() if p.stem not in EXCLUDED]
    names = chosen(parser, "--scenarios", args.scenarios, shipped_names, "scenario(s)")
    if args.from_json is not None:
        runs = json.loads(args.from_json.read_text(encoding="utf-8"))
        saved = {r["scenario"] for r in runs}
        seeds = max(r["seed"] for r in runs)
        report([n for n in names if n in saved], runs, seeds, markdown=args.markdown)
        return 0
    # Longest first so the pool is not left waiting on one ice-failover run at the end.
    block = set_block(parser, args.set, names)
    strategies = chosen(parser, "--strategies", args.strategies, STRATEGIES, "strategy(s)")
    tasks = [
        (name, seed, strategy, block)
        for name in sorted(names, key=lambda n: -load_scenario(n).duration)
        for seed in range(1, args.seeds + 1)
        for strategy in sorted(strategies, key=lambda s: s != CAPACITY_AWARE)
    ]
    started = time.perf_counter()
    with Pool(args.jobs) as pool:
        runs = []
        for n, run in enumerate(pool.imap_unordered(run_one, tasks), 1):
            runs.append(run)
            sys.stderr.write(f"\r{n}/{len(tasks)} runs, {time.perf_counter() - started:.0f} s wall")
        sys.stderr.write("\n")
    report(names, runs, args.seeds, markdown=args.markdown)
    wall = time.perf_counter() - started
    print(f"\n{len(tasks)} runs in {wall:.0f} s wall, {args.jobs} processes")
    if args.json is not None:
        args.json.write_text(json.dumps(runs), encoding="utf-8")
    return 0


def report(
    names: Sequence[str], runs: list[dict[str, Any]], seeds: int, *, markdown: bool = False
) -> None:
    summary = [SUMMARY_HEADER]
    for name in names:
        scenario = load_scenario(name)
        mine = [r for r in runs if r["scenario"] == name]
        jobs = sum(len(r["jobs"]) for r in mine if r["strategy"] == BASELINE)
        print(f"\n== {name}: {seeds} seeds, {jobs:,} jobs per strategy in all")
        rows = [HEADER]
        for strategy in STRATEGIES:
            of = sorted((r for r in mine if r["strategy"] == strategy), key=lambda r: r["seed"])
            if of:
                rows.append(strategy_row(of))
        print(markdown_table(rows) if markdown else render(rows))
        by_seed: dict[int, dict[str, dict[str, Any]]] = {}
        for r in mine:
            by_seed.setdefault(r["seed"], {})[r["strategy"]] = r
        print("k-th job ratio, capacity-aware / reference (t_k = time until k jobs running):")
        print("\n".join(ratio_lines(scenario, by_seed)))
        print("cost, capacity-aware / stock ARC (billed from the launch request, list prices):")
        print("\n".join(cost_lines(by_seed)))
        print("pair breaks (capacity-aware; simulator/measurement/pair_breaks.py):")
        print("\n".join(pair_lines(mine)))
        hourly = done_by_hour(scenario, by_seed)
        print(f"jobs completed by every whole hour, capacity-aware - stock ARC: {hourly}")
        row = summary_row(scenario, mine, kth_worst(scenario, by_seed), hourly)
        if row is not None:
            summary.append(row)
    if len(summary) > 1:
        print(
            "\n== summary: capacity-aware against stock ARC (ratios; failed/stuck/over-adv "
            "summed over seeds)"
        )
        print(markdown_table(summary) if markdown else render(summary))


if __name__ == "__main__":
    raise SystemExit(main())
