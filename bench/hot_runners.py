"""Benchmark: hot runners (``capacityAware.hotRunners``) against stock ARC and the warm pool.

On one scenario (default: the shipped merge-queue, ``config/scenarios/merge-queue.yaml``),
seeds 1..N, three runs on the same jobs:

- ``stock ARC`` (strategy ``baseline``),
- ``warm pool``: capacity-aware as the scenario sets it (its ``proactiveCapacity`` of warm
  pairs),
- ``hot N``: the same, with ``hotRunners: N`` (the same reserve budget, N slots of it hot, the
  rest warm pairs; default N = the whole reserve; ``--hot`` may be repeated),
- ``stock ARC minRunners N`` (with ``--min-runners N``, repeatable): stock ARC keeping N idle
  runners on top of the assigned jobs, as ARC's ``minRunners`` does since 0.8: the stock way
  to have idle runners, against which hot slots are compared.

``--broker`` picks the simulated Actions service's broker (the scenario's ``actions.broker``:
``capacity``, a scale set is assigned at most what it advertised; ``idle-runners``, the older
world where each idle runner is room on top; docs/semantics.md), so both worlds can be run.

Per run it prints, over the jobs of all seeds pooled (a job that failed or never started counts
as infinitely late, ``never``):

- ``on hot``: jobs taken by a runner that was registered and idle before the job was assigned
  (an idle runner took it: no pod start), their count and fair p50;
- ``quiet p50``: fair p50 of the jobs queued outside the scenario's burst windows, and its
  ratio to stock ARC's;
- ``p50 / p95``: fair, all jobs; ``failed``, ``stuck``, ``over-adv`` (slot-seconds, summed);
- ``$``, ``node-h``, ``nodes``: summed over seeds, with ``$`` as a ratio to stock ARC's.

Then the bars of issue 31 for the hot row (jobs on a hot slot <= 8 s p50, quiet-time p50 <=
0.5x stock ARC's, dollars <= 1.1x stock ARC's), each printed with its figure, one Markdown
row for the README's cost table, and for the hot and ``minRunners`` runs the idle-runner jobs'
wait step by step, those jobs split by whether the service assigned them the instant they
were queued or after they waited for room in the header (under the ``capacity`` broker a
runner registered while the header is full counts as idle for the job it later takes), the
hook read that saw each workflow pod Running, and the floor the simulated hook and kubelet
put under a hot-slot job (:mod:`simulator.measurement.hot_floor`).

Run: ``.venv/bin/python bench/hot_runners.py [--seeds 3] [--jobs 1] [--scenario FILE]
[--hot N ...] [--min-runners N ...] [--broker capacity|idle-runners]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.cluster.images import ALWAYS, default_pull_policy
from simulator.engine.world import World
from simulator.measurement.hot_floor import Delay, Uniform, UniformSum, hot_floor_quantile
from simulator.scenarios.scenario import Scenario, parse_scenario
from simulator.workload.container_hook import WORKFLOW_IMAGE
from simulator.workload.hook import poll_schedule
from simulator.workload.service_records import BROKER_CAPACITY, BROKERS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCENARIO = ROOT / "config" / "scenarios" / "merge-queue.yaml"
INF = math.inf


def load(path: Path) -> Scenario:
    return parse_scenario(yaml.safe_load(path.read_text()), where=str(path))


#: A run: (strategy, capacityAware block merged over the scenario's, minRunners or None for
#: the scenario's own).
Run = tuple[str, dict[str, Any], int | None]


def variants(scenario: Scenario, hot: list[int], min_runners: Sequence[int] = ()) -> dict[str, Run]:
    """Run name -> :data:`Run`. ``hot``: the hotRunners values to run (default: the whole
    reserve, ``auto`` under an auto pool); ``min_runners``: stock ARC runs with that many
    idle runners kept by ``minRunners``."""
    reserve = scenario.strategies.capacity_aware.proactive_capacity
    values: list[int | str] = list(hot) or [reserve if isinstance(reserve, int) else "auto"]
    runs: dict[str, Run] = {
        "stock ARC": ("baseline", {}, None),
        "warm pool": ("capacity-aware", {}, None),
    }
    for n in min_runners:
        runs[f"stock ARC minRunners {n}"] = ("baseline", {}, n)
    for value in values:
        runs[f"hot {value}"] = ("capacity-aware", {"hotRunners": value}, None)
    return runs


def adjusted(
    scenario: Scenario, block: dict[str, Any], min_runners: int | None, broker: str
) -> Scenario:
    """The scenario a run simulates: its capacityAware block, minRunners on every scale set
    and the Actions service's broker as the run asks."""
    if block:
        scenario = scenario.with_capacity_aware(block, where="--hot")
    if min_runners is not None:
        scale_sets = [
            ss.model_copy(update={"min_runners": min(min_runners, ss.max_runners)})
            for ss in scenario.scale_sets
        ]
        scenario = scenario.model_copy(update={"scale_sets": scale_sets})
    actions = scenario.actions.model_copy(update={"broker": broker})
    return scenario.model_copy(update={"actions": actions})


def run_one(task: tuple[str, int, str, str, dict[str, Any], int | None, str]) -> dict[str, Any]:
    path, seed, name, strategy, block, min_runners, broker = task
    scenario = adjusted(load(Path(path)), block, min_runners, broker)
    world = World(scenario, strategy, seed=seed)
    results = world.run()
    events = [json.loads(line) for line in world.log.lines()]
    registered = {e["runner"]: e["t"] for e in events if e["type"] == "runner_registered"}
    assigned = {e["job"]: e["t"] for e in events if e["type"] == "job_assigned"}
    on_idle = {
        e["job"]
        for e in events
        if e["type"] == "job_started"
        and e["job"] in assigned
        and registered.get(e["runner"], INF) < assigned[e["job"]]
    }
    steps = breakdown(events, on_idle)
    windows = [(b.at, b.at + b.over) for s in scenario.jobs for b in s.bursts]
    jobs = []
    for job in world.service.jobs:
        queued = job.queued_at - world.loop.start  # the scenario's times are from the start
        wait = (job.running_at - job.queued_at) if job.running_at is not None else INF
        quiet = not any(lo <= queued <= hi for lo, hi in windows)
        jobs.append((wait, job.request_id in on_idle, quiet))
    return {
        "name": name,
        "seed": seed,
        "jobs": jobs,
        "completed": results["jobs_completed"],
        "failed": results["jobs_failed"],
        "stuck": results["jobs_stuck"],
        "over_adv": results["over_advertised_slot_seconds"],
        "dollars": results["billed_cost_usd"],
        "node_hours": results["billed_node_hours"],
        "nodes": results["nodes_launched"],
        "steps": steps,
    }


#: The steps of a hot-slot job's wait, from the event log (the hook names the workflow pod
#: ``<runner pod>[:54]-workflow``; ARC names the runner pod after the runner).
STEPS = (
    "queued -> assigned (the service, the advertised capacity)",
    "assigned -> started (runner pickup)",
    "started -> workflow pod created (hook)",
    "created -> bound (preempts the placeholder)",
    "bound -> Running (kubelet start)",
    "Running -> job running (hook's next read)",
)


def breakdown(events: list[dict[str, Any]], jobs: set[int]) -> list[tuple[float, ...]]:
    """Per job of ``jobs`` that ran: the duration of each of :data:`STEPS`."""
    at: dict[tuple[str, Any], float] = {}
    for e in events:
        key = e.get("pod") if e["type"].startswith("pod_") else e.get("job")
        at.setdefault((e["type"], key), e["t"])
    runner_of = {e["job"]: e["runner"] for e in events if e["type"] == "job_started"}
    out = []
    for job in jobs:
        pod = runner_of[job][:54] + "-workflow"
        marks = [
            at.get(("job_queued", job)), at.get(("job_assigned", job)),
            at.get(("job_started", job)),
            at.get(("pod_created", pod)), at.get(("pod_bound", pod)),
            at.get(("pod_running", pod)), at.get(("job_running", job)),
        ]  # fmt: skip
        if all(m is not None for m in marks):
            out.append(tuple(b - a for a, b in itertools.pairwise(marks)))  # type: ignore[operator]
    return out


def by_assignment(steps: list[tuple[float, ...]]) -> str:
    """The idle-runner jobs split by whether the service assigned them the instant they were
    queued (the header already had room) or later (they waited for room in the header)."""
    at_once = [sum(s) for s in steps if s[0] < 1e-6]
    later = [s for s in steps if s[0] >= 1e-6]
    return (
        f"assigned the instant they were queued: {len(at_once)} jobs, p50 {show(p50(at_once))} s;"
        f" later (waited for room in the header): {len(later)} jobs, p50 "
        f"{show(p50([sum(s) for s in later]))} s, of it waiting for assignment p50 "
        f"{show(p50([s[0] for s in later]))} s"
    )


def by_hook_read(steps: list[tuple[float, ...]], reads: Sequence[float]) -> str:
    """How many jobs the hook saw Running at each of its reads after creating the workflow
    pod (``waitForPodPhases``: at once, then after each back-off sleep)."""
    counts = dict.fromkeys(reads, 0)
    for s in steps:
        seen = s[3] + s[4] + s[5]  # created -> the read that saw it Running
        read = min(reads, key=lambda r: abs(r - seen))
        counts[read] += 1
    total = max(1, len(steps))
    return ", ".join(
        f"{r:g} s: {n} ({100 * n / total:.0f}%)" for r, n in counts.items() if n or r <= 31
    )


def floor_p50(scenario: Scenario) -> float:
    """The hot-slot p50 the world allows when nothing before JobStarted takes time
    (:mod:`simulator.measurement.hot_floor`), from the scenario's hook delay, its first
    cluster's pod start latency (with the job image on the node: only the registry's round
    trip of an ``Always`` policy before it) and the prepare-job timeout."""
    arc = scenario.arc
    latencies = scenario.clusters[0].spec.latencies
    start: Delay = Uniform(*latencies.pod_start)
    if default_pull_policy(WORKFLOW_IMAGE) == ALWAYS:
        start = UniformSum(Uniform(*latencies.image_resolve), Uniform(*latencies.pod_start))
    return hot_floor_quantile(0.5, Uniform(*arc.hook_delay), start, timeout=arc.prepare_job_timeout)


def p50(waits: list[float]) -> float:
    if not waits:
        return math.nan
    ordered = sorted(waits)
    return ordered[(len(ordered) - 1) // 2] if len(ordered) % 2 else statistics.median(ordered)


def show(value: float) -> str:
    return "never" if value == INF else ("-" if math.isnan(value) else f"{value:.1f}")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = [j for r in runs for j in r["jobs"]]
    on_hot = [w for w, hot, _ in jobs if hot]
    return {
        "jobs": len(jobs),
        "on_hot": len(on_hot),
        "hot_p50": p50(on_hot),
        "quiet_p50": p50([w for w, _, quiet in jobs if quiet]),
        "p50": p50([w for w, _, _ in jobs]),
        "p95": sorted(w for w, _, _ in jobs)[int(0.95 * (len(jobs) - 1))] if jobs else math.nan,
        "completed": sum(r["completed"] for r in runs),
        "failed": sum(r["failed"] for r in runs),
        "stuck": sum(r["stuck"] for r in runs),
        "over_adv": sum(r["over_adv"] for r in runs),
        "dollars": sum(r["dollars"] for r in runs),
        "node_hours": sum(r["node_hours"] for r in runs),
        "nodes": sum(r["nodes"] for r in runs),
    }


def bars(
    name: str, hot: dict[str, Any], stock: dict[str, Any], value: object, scenario: str
) -> None:
    """Issue 31's bars for one hot row, each with its figure, and its row for the README's
    cost table (k-th ratios are not computed here: ``-``)."""
    quiet, dollars = hot["quiet_p50"] / stock["quiet_p50"], hot["dollars"] / stock["dollars"]
    checks = [
        ("jobs on a hot slot start at <= 8 s p50", hot["hot_p50"] <= 8.0, show(hot["hot_p50"])),
        ("quiet-time p50 <= 0.5x stock ARC's", quiet <= 0.5, f"{quiet:.2f}x"),
        ("dollars <= 1.1x stock ARC's", dollars <= 1.1, f"{dollars:.2f}x"),
        ("0 failed / 0 stuck / 0 over-advertised",
         hot["failed"] == hot["stuck"] == 0 and hot["over_adv"] == 0,
         f"{hot['failed']}/{hot['stuck']}/{hot['over_adv']:.1f}"),
    ]  # fmt: skip
    for text, met, figure in checks:
        print(f"{name}: {'met' if met else 'NOT met'}: {text} ({figure})")
    per_job = (hot["dollars"] / hot["completed"]) / (stock["dollars"] / stock["completed"])
    print(
        f"README cost-table row: | {scenario} with `hotRunners: {value}` | {hot['failed']} / "
        f"{hot['stuck']} / {hot['over_adv']:.0f} | "
        f"{hot['node_hours'] / stock['node_hours']:.2f} | {dollars:.2f} | {per_job:.2f} | "
        f"{dollars:.2f}x <= 1.1x: {'met' if dollars <= 1.1 else 'NOT met'} | "
        f"{hot['p50'] / stock['p50']:.2f} | - | {hot['nodes'] / stock['nodes']:.2f} |"
    )
    print(
        f"{name}: fair p50 {show(hot['p50'])} s, quiet p50 {show(hot['quiet_p50'])} s, on a "
        f"hot slot {show(hot['hot_p50'])} s ({hot['on_hot']} of {hot['jobs']} jobs)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    parser.add_argument(
        "--hot", type=int, action="append", default=[],
        help="a hotRunners value to run (repeatable; default: the whole reserve)",
    )  # fmt: skip
    parser.add_argument(
        "--min-runners", type=int, action="append", default=[],
        help="also run stock ARC with this minRunners (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--broker", choices=BROKERS, default=BROKER_CAPACITY,
        help="the simulated Actions service's broker (docs/semantics.md)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not args.scenario.exists():
        parser.error(f"{args.scenario} does not exist (merge-queue ships with issue 31)")
    scenario = load(args.scenario)
    runs = variants(scenario, args.hot, args.min_runners)
    tasks = [
        (str(args.scenario), seed, name, strategy, block, min_runners, args.broker)
        for seed in range(1, args.seeds + 1)
        for name, (strategy, block, min_runners) in runs.items()
    ]
    with Pool(max(1, args.jobs)) as pool:
        results = pool.map(run_one, tasks)
    table = {name: summarize([r for r in results if r["name"] == name]) for name in runs}
    stock = table["stock ARC"]
    print(
        f"{scenario.name}, seeds 1..{args.seeds}, broker {args.broker}; runs: "
        + "; ".join(
            f"{n} = {s} {b or ''}{'' if m is None else f' minRunners {m}'}".strip()
            for n, (s, b, m) in runs.items()
        )
    )
    header = (
        "run",
        "jobs",
        "on hot",
        "hot p50",
        "quiet p50",
        "x stock",
        "p50",
        "p95",
        "failed",
        "stuck",
        "over-adv",
        "$",
        "x stock",
        "node-h",
        "nodes",
    )
    print(" | ".join(header))
    for name, row in table.items():
        print(" | ".join((
            name, str(row["jobs"]), str(row["on_hot"]), show(row["hot_p50"]),
            show(row["quiet_p50"]), f"{row['quiet_p50'] / stock['quiet_p50']:.2f}",
            show(row["p50"]), show(row["p95"]), str(row["failed"]), str(row["stuck"]),
            f"{row['over_adv']:.1f}", f"{row['dollars']:.2f}",
            f"{row['dollars'] / stock['dollars']:.2f}", f"{row['node_hours']:.1f}",
            str(row["nodes"]),
        )))  # fmt: skip
    for name in (n for n in runs if n.startswith("hot ") or "minRunners" in n):
        if name.startswith("hot "):
            bars(name, table[name], stock, runs[name][1]["hotRunners"], scenario.name)
        steps = [s for r in results if r["name"] == name for s in r["steps"]]
        print(f"{name}: where a job on an idle runner waits, s, {len(steps)} jobs: median (mean)")
        for i, step in enumerate(STEPS):
            column = [s[i] for s in steps]
            print(
                f"  {step}: {statistics.median(column):.2f} ({statistics.fmean(column):.2f})"
                if steps
                else "  -"
            )
        if steps:
            print(f"{name}: {by_assignment(steps)}")
            reads = poll_schedule(scenario.arc.prepare_job_timeout).reads
            print(
                f"{name}: the hook's read that saw the workflow pod Running, s after creating it: "
                + by_hook_read(steps, reads)
            )
        print(
            f"{name}: the world's floor for a hot-slot job (nothing before JobStarted takes "
            f"time; hook delay, pod start and the hook's reads only): p50 "
            f"{floor_p50(scenario):.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
