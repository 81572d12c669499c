"""``arc-capacity-listener tune``: replay your job history, sweep the dials, get a recommendation.

    arc-capacity-listener tune --history jobs.json --scenario my-clusters.yaml --p95 60s \\
        [--grid grid.yaml] [--seeds 1,2,3] [--workers N] [--out DIR] [--no-plot]

Writes ``DIR/sweep.json`` (every run's figures and the per-point aggregate),
``DIR/pareto.png`` and, when a point meets the target, ``DIR/recommendation.yaml``.
Skipped history records are listed on stderr (index, field, reason) and in sweep.json.
Exit codes: 0 a recommendation was written; 1 no capacity-aware point met the target (the
sweep and the plot are still written); 2 bad input (one message naming file, field, reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from reconciler.settings_types import SettingsError, duration_seconds
from simulator.measurement.optional import plots_or_note
from simulator.scenarios.scenario import ScenarioError, load_scenario, shipped
from simulator.scenarios.strategies import BASELINE
from simulator.workload.jobs import TraceError
from tuning.answer import frontier, plot, recommend, recommendation_yaml
from tuning.grid import GridError, expand, load_grid
from tuning.history import HistoryError, Problem, load_history
from tuning.replay import replayable, with_trace, write_trace
from tuning.sweep import Stopwatch, aggregate, plan, progress_bar, sweep

INPUT_ERRORS = (HistoryError, GridError, ScenarioError, SettingsError, TraceError)
#: Skipped records printed on stderr before "... and N more" (all are in sweep.json).
SHOWN_PROBLEMS = 20


#: Scenario names `--scenario` accepts without a path.
SHIPPED = tuple(p.stem for p in shipped())


class UsageError(ValueError):
    """A command-line value is invalid."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arc-capacity-listener tune",
        description="Replay a job history in the simulated world under stock ARC, a static "
        "warm pool and a grid of capacity-aware settings; recommend the cheapest block "
        "that meets a p95 queue-to-start target.",
        epilog="Try it without a history of your own: arc-capacity-listener tune "
        "--history sample-day --scenario ice-failover --p95 60s",
    )
    p.add_argument(
        "--history",
        required=True,
        help="GitHub workflow jobs JSON or CSV trace, or `sample-day` (a shipped day of jobs)",
    )
    p.add_argument(
        "--scenario",
        required=True,
        help=f"base scenario (your clusters): a file, or a shipped name ({', '.join(SHIPPED)})",
    )
    p.add_argument("--p95", default="60s", help="p95 queue-to-start target, e.g. 60s, 2m")
    p.add_argument("--grid", default=None, help="YAML grid of dials (default: 12 points)")
    p.add_argument("--seeds", default="1", help="comma-separated seeds (default: 1)")
    p.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    p.add_argument("--out", default="out/tune", help="output directory (default out/tune)")
    p.add_argument("--no-plot", action="store_true", help="skip pareto.png")
    return p


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds: expected integers like 1,2,3 (got {text!r})") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds: expected distinct integers like 1,2,3 (got {text!r})")
    return seeds


def _target(text: str) -> float:
    try:
        value = duration_seconds(text)
    except ValueError:
        raise UsageError(f"--p95: expected a duration like 60s or 2m (got {text!r})") from None
    if value <= 0:
        raise UsageError(f"--p95: must be > 0 (got {text!r})")
    return value


def report_problems(problems: Sequence[Problem], stream: IO[str]) -> None:
    if not problems:
        return
    stream.write(f"skipped {len(problems)} history record(s):\n")
    for problem in problems[:SHOWN_PROBLEMS]:
        stream.write(f"  {problem}\n")
    if len(problems) > SHOWN_PROBLEMS:
        stream.write(f"  ... and {len(problems) - SHOWN_PROBLEMS} more (see sweep.json)\n")


def tune(args: argparse.Namespace, stdout: IO[str], stderr: IO[str]) -> int:
    draw = plots_or_note(not args.no_plot, "tune", stderr, what="pareto.png")
    target = _target(args.p95)
    seeds = _seeds(args.seeds)
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be >= 1 (got {args.workers})")
    base = load_scenario(args.scenario)
    # Every grid point is validated before the history is read and before any run.
    grid, grid_source = load_grid(args.grid)
    points = expand(
        grid,
        base.strategies.capacity_aware,
        where=grid_source,
        sim=base.strategies.capacity_aware_sim,
    )
    history = load_history(args.history)
    jobs, unserved = replayable(base, history)
    problems = [*history.problems, *unserved]
    report_problems(problems, stderr)
    if not jobs:
        raise HistoryError(f"{args.history}: no job of the history is served by {base.name!r}")
    out = Path(args.out)
    scenario = with_trace(base, write_trace(jobs, out / "history-trace.csv"), jobs)
    runs = plan(points, seeds)
    pools = len({r.dials for r in runs if r.strategy == BASELINE})
    on_each = f" on each of {pools} NodePool settings" if pools > 1 else ""
    stderr.write(
        f"tune: {len(jobs)} jobs, {len(points)} points x {len(seeds)} seed(s) + stock ARC and "
        f"the static warm pool{on_each} = {len(runs)} runs, "
        f"{scenario.duration / 3600:g} h simulated each\n"
    )
    watch = Stopwatch()
    records = sweep(scenario, runs, workers=args.workers, progress=progress_bar(len(runs), stderr))
    stderr.write(f"tune: {len(runs)} runs in {watch.elapsed():.1f} s wall\n")
    rows = aggregate(records)
    sweep_doc = {
        "scenario": base.name,
        "history": {
            "source": history.source,
            "jobs_replayed": len(jobs),
            "skipped": [{"index": p.index, "field": p.field, "reason": p.reason} for p in problems],
        },
        "seeds": seeds,
        "target_p95_seconds": target,
        "grid": grid,
        "points": rows,
        "frontier_dollars": [r["point"] for r in frontier(rows, "dollars_per_day_mean")],
        "frontier_idle_cpu": [r["point"] for r in frontier(rows, "idle_cpu_hours_per_day_mean")],
        "runs": records,
    }
    (out / "sweep.json").write_text(json.dumps(sweep_doc, indent=2) + "\n", encoding="utf-8")
    if draw:
        plot(rows, out, target_p95=target, title=f"{base.name}: {len(jobs)} jobs replayed")
    _print_table(rows, stdout)
    best = recommend(rows, target)
    if best is None:
        stdout.write(f"\nno capacity-aware point meets p95 <= {target:g} s; see {out}/sweep.json\n")
        return 1
    text = recommendation_yaml(
        best, target_p95=target, context=f"{base.name}, {history.source}, seeds {seeds}"
    )
    (out / "recommendation.yaml").write_text(text, encoding="utf-8")
    stdout.write(f"\nrecommendation ({best['point']}): {out / 'recommendation.yaml'}\n{text}")
    return 0


def _print_table(rows: Sequence[dict[str, Any]], stream: IO[str]) -> None:
    width = max([14, *(len(r["point"]) for r in rows)])
    stream.write(f"{'point':<{width}} {'p95 s':>8} {'$/day':>10} {'idle CPU-h/d':>13}  dials\n")
    for r in rows:
        p95 = "never" if r["p95_worst_seconds"] is None else f"{r['p95_worst_seconds']:.1f}"
        stream.write(
            f"{r['point']:<{width}} {p95:>8} {r['dollars_per_day_mean']:>10,.2f} "
            f"{r['idle_cpu_hours_per_day_mean']:>13,.1f}  {json.dumps(r['dials'])}\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(list(argv) if argv is not None else None)
    try:
        return tune(args, sys.stdout, sys.stderr)
    except (*INPUT_ERRORS, UsageError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
